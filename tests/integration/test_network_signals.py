# SPDX-License-Identifier: Apache-2.0
"""The signals the service computes from the address (issue 39) over
real processes: an ip_listed policy on a Tor list challenges the
untrusted lane while a trusted device passes; an ip_country policy
denies codes to a country; a policy that names a list or a database this
instance has not loaded is accepted, warned of by the admin API, logged
once, skipped in every answer that says so, and counted; the check's log
line, its events and the admin inspect carry what the files saw, never
the address."""
import json
import os
import re
import subprocess

from harness import BINARY, make_secret, wait_until
from test_network import ASN_POLICY, OPEN, NetworkFiles, metric

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "tok-" + "n" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
# 12.1.2.3 and 12.1.2.4 are on the Tor list (test_network.files), in
# FR and AS64502; 11.0.0.0/8 is DE, AS64501.
TOR_IP, CLEAN_IP, DE_IP = "12.1.2.3", "12.9.9.9", "11.9.9.9"
TOR = {"name": "net.tor", "endpoint": "login", "key": ["ip"],
       "algorithm": "signal", "signal": "ip_listed", "lists": ["tor"],
       "applies_to": "untrusted", "action": "challenge"}
NO_FR_CODES = {"name": "otp.country", "endpoint": "otp", "key": ["phone"],
               "algorithm": "signal", "signal": "ip_country",
               "countries": ["fr"], "action": "deny"}
DROP = {"name": "net.drop", "endpoint": "login", "key": ["ip"],
        "algorithm": "signal", "signal": "ip_listed", "lists": ["drop"],
        "action": "deny"}
PHONE = "+447911123456"


class NetworkSignalsTest(NetworkFiles):
    def setUp(self):
        super().setUp()
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")

    def start(self, policies, files=True):
        extra = ["--admin-token-file", self.token_file]
        (svc,) = self.seeded(policies,
                             extra=(self.files() if files else []) + extra)
        return svc

    def test_a_tor_exit_is_challenged_unless_the_device_is_trusted(self):
        svc = self.start([TOR, OPEN])
        r = self.login(svc, "ann@example.com", TOR_IP)
        self.assertEqual((r.status, r.json["policy"], r.json["action"]),
                         (429, "net.tor", "challenge"), r.raw)
        self.assertEqual(r.json["network"]["lists"], ["tor"])
        # An address no list holds is not; nor is a body that says it is
        # listed: the service computes the signal, never reads it.
        r = self.login(svc, "ann@example.com", CLEAN_IP, ip_listed=True)
        self.assertEqual(r.status, 200, r.raw)
        # The nonce of the challenge, once passed, lets the login on.
        r = self.login(svc, "ann@example.com", TOR_IP)
        r = self.login(svc, "ann@example.com", TOR_IP,
                       challenge_passed=r.json["challenge_nonce"])
        self.assertEqual(r.status, 200, r.raw)
        self.assertTrue(self.decision(r, "net.tor")["challenge_passed"])
        # A device that logged in before is in the trusted lane, which
        # the policy is not for.
        ok = svc.post("/report-login", {"user": "ann@example.com",
                                        "ip": CLEAN_IP, "success": True})
        token = ok.json["device_token"]
        r = self.login(svc, "ann@example.com", TOR_IP, device_token=token)
        self.assertEqual((r.status, r.json["device"]), (200, "trusted"), r.raw)

    def test_a_country_signal_denies_codes_on_the_otp_endpoint(self):
        svc = self.start([NO_FR_CODES])
        r = self.otp(svc, PHONE, CLEAN_IP)
        self.assertEqual((r.status, r.json["policy"], r.json["action"]),
                         (429, "otp.country", "deny"), r.raw)
        self.assertEqual(r.json["network"]["country"], "FR")
        self.assertEqual(self.otp(svc, PHONE, DE_IP).status, 200)
        # An address the database does not know is skipped (no country to
        # judge), counted, and the answer says so.
        r = self.otp(svc, PHONE, "13.0.0.1")
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["skipped"], [{"policy": "otp.country",
                                              "why": "address_unknown"}])
        self.assertEqual(metric(svc, "abuseguard_skipped_address_unknown_total",
                                policy="otp.country"), 1)
        # The record keeps the country as the database writes it.
        r = svc.request("GET", "/admin/policies/otp.country", headers=AUTH)
        self.assertEqual(r.json["policy"]["countries"], ["FR"])

    def test_a_policy_on_a_file_not_loaded_is_kept_warned_and_skipped(self):
        svc = self.start([OPEN])
        r = svc.request("PUT", "/admin/policies/net.drop", DROP, headers=AUTH)
        self.assertEqual(r.status, 201, r.raw)
        self.assertEqual(r.json["policy"]["lists"], ["drop"])
        self.assertEqual(len(r.json["warnings"]), 1)
        self.assertIn("--ip-list drop=PATH", r.json["warnings"][0])
        # A policy it lacks nothing for is no warning.
        r = svc.request("PUT", "/admin/policies/net.tor", TOR, headers=AUTH)
        self.assertNotIn("warnings", r.json)
        # Every answer says which policy was left out, and what loads it.
        for ip in (TOR_IP, CLEAN_IP):
            r = self.login(svc, "bo@example.com", ip)
            self.assertEqual(r.json["skipped"], [
                {"policy": "net.drop", "why": "not_loaded",
                 "flag": "--ip-list", "list": "drop"}], r.raw)
        self.assertEqual(metric(svc, "abuseguard_skipped_not_loaded_total",
                                policy="net.drop"), 2)
        # One log line when the policy came, however many reloads follow
        # (an edit of another policy reloads the set).
        svc.request("PUT", "/admin/policies/login.user",
                    dict(OPEN, limit=999), headers=AUTH)
        self.login(svc, "bo@example.com", CLEAN_IP)
        lines = [ln for ln in svc.log_text().splitlines()
                 if "names the IP list drop" in ln]
        self.assertEqual(len(lines), 1, svc.log_text())
        # The apply endpoint warns as the PUT does.
        r = svc.post("/admin/policies/apply",
                     {"policies": [OPEN, DROP, ASN_POLICY], "dry_run": True},
                     headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(len(r.json["warnings"]), 1, r.raw)

    def test_without_the_databases_network_policies_are_skipped_here(self):
        svc = self.start([OPEN, ASN_POLICY, NO_FR_CODES], files=False)
        r = self.otp(svc, PHONE, CLEAN_IP)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["skipped"], [
            {"policy": "otp.country", "why": "not_loaded",
             "flag": "--geoip-file"}])
        self.assertNotIn("network", r.json)
        r = self.login(svc, "cy@example.com", CLEAN_IP)
        self.assertEqual(r.json["skipped"], [
            {"policy": "login.asn_failures", "why": "not_loaded",
             "flag": "--asn-file"}])
        log = svc.log_text()
        self.assertIn("policy otp.country needs the country database", log)
        self.assertIn("policy login.asn_failures needs the ASN database", log)

    def test_log_lines_events_and_inspect_carry_the_network(self):
        svc = self.start([ASN_POLICY, OPEN])
        for i in range(5):
            ip = "12.%d.0.1" % (i + 10)
            self.login(svc, "u%d@example.com" % i, ip)
            svc.post("/report-login", {"user": "u%d@example.com" % i,
                                       "ip": ip, "success": False})
        r = self.login(svc, "dee@example.com", TOR_IP)
        self.assertEqual(r.status, 429, r.raw)
        # The denial's log line names what the files saw, not the address.
        self.assertTrue(
            re.search(r"policy=login\.asn_failures .* country=FR asn=64502 "
                      r"lists=tor", svc.log_text()), svc.log_text())
        self.assertNotIn(TOR_IP, svc.log_text())
        # Its lockout event too, raised once Redis took its marker (off
        # the check's path).
        def lockouts():
            events = svc.request("GET", "/admin/events", headers=AUTH).json
            return [e for e in events["events"] if e["type"] == "lockout"]
        self.assertTrue(wait_until(lambda: lockouts(), 10.0))
        events = svc.request("GET", "/admin/events", headers=AUTH).json
        lockouts = lockouts()
        self.assertEqual(len(lockouts), 1, events)
        self.assertEqual(lockouts[0]["network"],
                         {"country": "FR", "asn": 64502, "lists": ["tor"]})
        self.assertNotIn(TOR_IP, json.dumps(events))
        # The support desk's inspect shows them for an address.
        r = svc.request("POST", "/admin/inspect",
                        {"endpoint": "login", "user": "dee@example.com",
                         "ip": DE_IP}, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["network"], {"country": "DE", "asn": 64501})

    def test_the_optional_network_set_loads_and_does_what_it_says(self):
        w = self.workdir
        for name, text in (("hosting", "11.0.0.0/16\n"),
                           ("drop", '{"cidr":"11.1.0.0/16","sblid":"SBL1"}\n')):
            with open(os.path.join(w, name + ".txt"), "w") as f:
                f.write(text)
        (svc,) = self.seeded([OPEN], extra=self.files() + [
            "--admin-token-file", self.token_file,
            "--ip-list", "hosting=" + os.path.join(w, "hosting.txt"),
            "--ip-list", "drop=" + os.path.join(w, "drop.txt")])
        path = os.path.join(HERE, "..", "..", "policies", "optional",
                            "network.json")
        with open(path) as f:
            doc = json.load(f)
        r = svc.post("/admin/policies/apply",
                     {"policies": doc["policies"], "prune": False},
                     headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        # Every file it names is loaded here: no warning.
        self.assertNotIn("warnings", r.json)
        # Tor: a challenge; DROP: a denial; hosting: shadow, allowed.
        r = self.login(svc, "eve@example.com", TOR_IP)
        self.assertEqual((r.status, r.json["policy"], r.json["action"]),
                         (429, "net.tor", "challenge"), r.raw)
        r = self.login(svc, "eve@example.com", "11.1.2.3")
        self.assertEqual((r.status, r.json["policy"], r.json["action"]),
                         (429, "net.drop", "deny"), r.raw)
        r = self.login(svc, "eve@example.com", "11.0.2.3")
        self.assertEqual(r.status, 200, r.raw)
        self.assertTrue(self.decision(r, "net.hosting")["shadow"])
        self.assertEqual(self.otp(svc, PHONE, TOR_IP).json["policy"],
                         "otp.tor")
        # Without the files it names, it warns of each policy it skips.
        (bare,) = self.seeded([OPEN], extra=[
            "--admin-token-file", self.token_file])
        r = bare.post("/admin/policies/apply",
                      {"policies": doc["policies"], "dry_run": True,
                       "prune": False}, headers=AUTH)
        self.assertEqual(len(r.json["warnings"]), len(doc["policies"]), r.raw)
        # So does the CLI the docs name, on stderr.
        cli = subprocess.run(
            [BINARY, "policy", "diff", path, "--url",
             "http://127.0.0.1:%d" % bare.port, "--token-file",
             self.token_file], capture_output=True, text=True, timeout=30)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        warned = [ln for ln in cli.stderr.splitlines()
                  if ln.startswith("warning: policy ")]
        self.assertEqual(len(warned), len(doc["policies"]), cli.stderr)

    def test_an_as_lockout_is_reset_by_an_address_in_it(self):
        svc = self.start([ASN_POLICY, OPEN])
        for i in range(5):
            ip = "11.%d.0.1" % (i + 1)
            svc.post("/report-login", {"user": "r%d@example.com" % i,
                                       "ip": ip, "success": False})
        self.assertEqual(self.login(svc, "r@example.com", DE_IP).status, 429)
        # The support desk resets the AS by any address in it.
        r = svc.post("/admin/reset", {"policy": "login.asn_failures",
                                      "ip": "11.77.0.1"}, headers=AUTH)
        self.assertIn(r.status, (204, 202), r.raw)
        self.assertEqual(self.login(svc, "r@example.com", DE_IP).status, 200)
        # An address in no AS the database knows names the ip.
        r = svc.post("/admin/reset", {"policy": "login.asn_failures",
                                      "ip": "13.0.0.1"}, headers=AUTH)
        self.assertEqual((r.status, r.json["field"]), (400, "ip"), r.raw)
        r = svc.post("/admin/reset", {"policy": "login.asn_failures"},
                     headers=AUTH)
        self.assertEqual((r.status, r.json["field"]), (400, "ip"), r.raw)
