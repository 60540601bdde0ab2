# SPDX-License-Identifier: Apache-2.0
"""The network files (issue 39) over real processes: MMDB country and
ASN databases written by MaxMind's own writer (tests/tools/mmdb_write.pl,
Debian's libmaxmind-db-writer-perl) and a named IP list, given to a real
abuseguard. A policy keyed on the ASN stops a botnet that rotates
addresses over many /16s of one autonomous system; the answer says what
was seen; the files are replaced by rename while checks run, a damaged
replacement is kept out, and a file rewritten in place crashes
nothing."""
import json
import os
import subprocess
import threading
import unittest

from harness import BINARY, PolicyTest, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.join(HERE, "..", "tools", "mmdb_write.pl")
# AS64501 holds 11.0.0.0/8 (each /16 a different network to a per-address
# or per-prefix policy), AS64502 12.0.0.0/8; 13.0.0.0/8 is in no
# database.
COUNTRIES = [{"cidr": "11.0.0.0/8", "country": "DE"},
             {"cidr": "12.0.0.0/8", "country": "FR"},
             {"cidr": "2001:db8::/32", "country": "NL"}]
ASNS = [{"cidr": "11.0.0.0/8", "asn": 64501},
        {"cidr": "12.0.0.0/8", "asn": 64502},
        {"cidr": "2001:db8::/32", "asn": 64503}]
ASN_POLICY = {"name": "login.asn_failures", "endpoint": "login",
              "key": ["asn"], "algorithm": "sliding_window",
              "counts": "failures", "limit": 5, "window_s": 3600,
              "action": "deny"}
OPEN = {"name": "login.user", "endpoint": "login", "key": ["user"],
        "algorithm": "sliding_log", "limit": 1000, "window_s": 60}


def metric(svc, name, **labels):
    text = svc.request("GET", "/metrics").raw.decode()
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(name + ("{" + want + "}" if want else " ")):
            return float(line.split()[-1])
    return None


class NetworkFiles(PolicyTest):
    """A test's country and ASN databases and its Tor list (no tests of
    its own: other files' classes build on it)."""

    def write_mmdb(self, path, kind, networks, ip_version=6):
        spec = {"ip_version": ip_version, "ipv4_aliases": True,
                "database_type": ("Test-Country" if kind == "country"
                                  else "Test-ASN"),
                "networks": networks}
        tmp = path + ".spec.json"
        with open(tmp, "w") as f:
            json.dump(spec, f)
        subprocess.run(["perl", WRITER, "--spec", tmp, path], check=True,
                       capture_output=True, timeout=120)

    def files(self):
        w = self.workdir
        self.geo, self.asn = os.path.join(w, "geo.mmdb"), os.path.join(
            w, "asn.mmdb")
        self.write_mmdb(self.geo, "country", COUNTRIES)
        self.write_mmdb(self.asn, "asn", ASNS)
        self.tor = os.path.join(w, "tor.txt")
        with open(self.tor, "w") as f:
            f.write("# a Tor bulk exit list\n12.1.2.3\n12.1.2.4\n")
        return ["--geoip-file", self.geo, "--asn-file", self.asn,
                "--ip-list", "tor=" + self.tor]

    def start(self, policies):
        (svc,) = self.seeded(policies, extra=self.files())
        return svc


class NetworkTest(NetworkFiles):
    def test_an_asn_policy_stops_addresses_rotating_over_one_asn(self):
        svc = self.start([ASN_POLICY, OPEN])
        # Six failures, each from a new /16 of AS64501 and for a new user:
        # no per-address or per-prefix count would see them together.
        for i in range(5):
            ip = "11.%d.0.1" % (i + 1)
            r = self.login(svc, "u%d@example.com" % i, ip)
            self.assertEqual(r.status, 200, r.raw)
            svc.post("/report-login", {"user": "u%d@example.com" % i,
                                       "ip": ip, "success": False})
        r = self.login(svc, "u9@example.com", "11.200.0.1")
        self.assertEqual((r.status, r.json["policy"]),
                         (429, "login.asn_failures"), r.raw)
        # Another ASN is its own count; an address no database knows
        # skips the policy (never one shared "unknown" key).
        r = self.login(svc, "u9@example.com", "12.200.0.1")
        self.assertEqual(r.status, 200, r.raw)
        r = self.login(svc, "u9@example.com", "13.0.0.1")
        self.assertEqual(r.status, 200, r.raw)
        self.assertNotIn("login.asn_failures",
                         [d.get("policy") for d in r.json["decisions"]])
        # The Redis key holds the ASN's keyed digest, never the number.
        self.assertNotIn("64501", " ".join(self.redis.keys()))

    def test_the_answer_says_what_was_seen_and_nothing_more(self):
        svc = self.start([OPEN])
        r = self.login(svc, "a@example.com", "12.1.2.3")
        self.assertEqual(r.json["network"],
                         {"country": "FR", "asn": 64502, "lists": ["tor"]})
        r = self.login(svc, "a@example.com", "11.9.9.9")
        self.assertEqual(r.json["network"], {"country": "DE", "asn": 64501})
        r = self.login(svc, "a@example.com", "2001:db8::5")
        self.assertEqual(r.json["network"], {"country": "NL", "asn": 64503})
        r = self.login(svc, "a@example.com", "13.0.0.1")
        self.assertEqual(r.json["network"], {})
        # OTP answers too.
        r = self.otp(svc, "+447911123456", "11.9.9.9")
        self.assertEqual(r.json["network"], {"country": "DE", "asn": 64501})
        # The description names every field the answers carry.
        with open(os.path.join(HERE, "..", "..", "api", "openapi.json")) as f:
            schemas = json.load(f)["components"]["schemas"]
        for name in ("CheckAllowed", "CheckDenied", "InspectAllowed"):
            self.assertEqual(schemas[name]["properties"]["network"],
                             {"$ref": "#/components/schemas/Network"})
        self.assertEqual(set(schemas["Network"]["properties"]),
                         {"country", "asn", "lists"})
        self.assertGreaterEqual(
            metric(svc, "abuseguard_network_lookups_total",
                   database="asn"), 5)

    def test_without_files_no_answer_has_network(self):
        (svc,) = self.seeded([OPEN])
        r = self.login(svc, "a@example.com", "11.9.9.9")
        self.assertEqual(r.status, 200)
        self.assertNotIn("network", r.json)

    def test_a_renamed_file_is_taken_and_a_damaged_one_kept_out(self):
        svc = self.start([OPEN])
        errors = []
        stop = threading.Event()

        def load():
            # Checks all along (each its own user, under the policy's
            # limit): none may fail while files change.
            n = 0
            while not stop.is_set():
                n += 1
                r = self.login(svc, "load%d@example.com" % n, "11.1.1.1")
                if r.status != 200 or "network" not in r.json:
                    errors.append(r.raw[:300])
        t = threading.Thread(target=load)
        t.start()
        try:
            new = self.asn + ".new"
            self.write_mmdb(new, "asn", [{"cidr": "11.0.0.0/8",
                                          "asn": 65001}])
            os.rename(new, self.asn)
            self.assertTrue(wait_until(lambda: self.login(
                svc, "a@example.com", "11.1.1.1").json["network"].get(
                    "asn") == 65001, 10.0))
            bad = self.asn + ".bad"
            with open(bad, "w") as f:
                f.write("not a database\n")
            os.rename(bad, self.asn)
            self.assertTrue(wait_until(lambda: metric(
                svc, "abuseguard_network_reload_failures_total",
                file="asn") == 1, 10.0), svc.log_text())
            r = self.login(svc, "a@example.com", "11.1.1.1")
            self.assertEqual(r.json["network"]["asn"], 65001)
            # Rewritten in place (an operator's cp over the path): the
            # service read a private copy, and takes the new bytes whole.
            self.write_mmdb(new, "asn", [{"cidr": "11.0.0.0/8",
                                          "asn": 65002}])
            with open(new, "rb") as src, open(self.asn, "r+b") as dst:
                dst.truncate(0)
                dst.write(src.read())
            self.assertTrue(wait_until(lambda: self.login(
                svc, "a@example.com", "11.1.1.1").json["network"].get(
                    "asn") == 65002, 10.0))
        finally:
            stop.set()
            t.join()
        self.assertEqual(errors, [])
        self.assertIsNone(svc.proc.poll())

    def test_a_damaged_file_at_start_is_exit_2_naming_it(self):
        self.files()
        bad = os.path.join(self.workdir, "bad.mmdb")
        with open(bad, "w") as f:
            f.write("not a database\n")
        for flags, name in ((["--geoip-file", bad], "geoip-file"),
                            (["--asn-file", self.geo], "asn-file"),
                            (["--ip-list", "x=" + bad], "ip-list"),
                            (["--ip-list", "Bad Name=" + self.tor],
                             "ip-list")):
            with self.subTest(flag=name):
                p = subprocess.run(
                    [BINARY, "--listen", "127.0.0.1:1", "--redis",
                     self.redis.url(), "--db",
                     os.path.join(self.workdir, "p.db"), "--secret-file",
                     self.secret, *flags], capture_output=True, timeout=60)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(name, p.stderr.decode())


if __name__ == "__main__":
    unittest.main()
