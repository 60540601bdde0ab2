# SPDX-License-Identifier: Apache-2.0
"""Allow and deny entries of kinds asn and ip_country (issue 39) over real
processes: the MMDB files of test_network (written by MaxMind's own
writer) given to a real abuseguard, entries added through the admin API.
A denied country is shut out of every endpoint and both lanes, an
allowed AS (a corporate VPN's) passes checks a policy would deny, an
address no database knows matches no such entry, and the entries
survive a restart and travel to every instance of a fleet, as records
and in the snapshot a new instance takes."""
import json
import unittest

import test_network
from fleet_harness import FleetTest, keys, pairs
from harness import PolicyTest, make_secret

TOKEN = "tok-" + "5" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
# test_network's databases: 11.0.0.0/8 is DE and AS64501, 12.0.0.0/8 FR
# and AS64502, 13.0.0.0/8 in neither.
DE, FR, UNKNOWN = "11.1.2.3", "12.1.2.3", "13.0.0.1"
PHONE = "+48600100200"
OPEN = [{"name": "login.user", "endpoint": "login", "key": ["user"],
         "algorithm": "sliding_log", "limit": 1000, "window_s": 60},
        {"name": "otp.phone", "endpoint": "otp", "key": ["phone"],
         "algorithm": "sliding_log", "limit": 1000, "window_s": 60}]
# One login a minute per user: the second is denied.
STRICT = [{"name": "login.user_once", "endpoint": "login", "key": ["user"],
           "algorithm": "sliding_log", "limit": 1, "window_s": 60,
           "action": "deny"}]


class NetworkListsTest(PolicyTest):
    # test_network's helpers, borrowed rather than inherited: inheriting
    # its class would run its tests again here.
    write_mmdb = test_network.NetworkTest.write_mmdb
    files = test_network.NetworkTest.files

    def start(self, policies):
        token = make_secret(self.workdir, (TOKEN + "\n").encode(),
                            name="admin.token")
        (svc,) = self.seeded(policies, extra=self.files() + [
            "--admin-token-file", token])
        return svc

    def add(self, svc, which, entry):
        r = svc.request("POST", "/admin/lists/" + which, entry, headers=AUTH)
        self.assertEqual(r.status, 201, r.raw)
        return r.json["entry"]

    def entries(self, svc, which):
        r = svc.request("GET", "/admin/lists/" + which, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        return r.json["entries"]

    def assert_listed(self, r, which, kind):
        self.assertEqual(r.status, 403 if which == "deny" else 200, r.raw)
        self.assertEqual(r.json["list"], which, r.raw)
        self.assertEqual(r.json["decisions"][0]["kind"], kind, r.raw)

    def test_a_denied_country_is_shut_out_of_every_endpoint_and_lane(self):
        svc = self.start(OPEN)
        entry = self.add(svc, "deny", {"kind": "ip_country", "value": "fr",
                                       "note": "a wave from FR"})
        self.assertEqual((entry["kind"], entry["value"], entry["endpoint"]),
                         ("ip_country", "FR", "*"))
        self.assert_listed(self.login(svc, "ana@example.com", FR), "deny",
                           "ip_country")
        self.assert_listed(self.otp(svc, PHONE, FR), "deny", "ip_country")
        self.assert_listed(svc.post("/check-otp-verify",
                                    {"phone": PHONE, "ip": FR}),
                           "deny", "ip_country")
        # The trusted lane too: a device token from a success report does
        # not carry a user past a denied country.
        r = svc.post("/report-login", {"user": "ana@example.com",
                                       "ip": DE, "success": True})
        self.assertEqual(r.status, 200, r.raw)
        token = r.json["device_token"]
        r = self.login(svc, "ana@example.com", FR, device_token=token)
        self.assert_listed(r, "deny", "ip_country")
        self.assertEqual(r.json["device"], "trusted")
        r = self.otp(svc, PHONE, FR, user="ana@example.com",
                     device_token=token)
        self.assert_listed(r, "deny", "ip_country")
        self.assertEqual(r.json["device"], "trusted")
        # Germany passes, in both lanes, and no list is named.
        for extra in ({}, {"device_token": token}):
            r = self.login(svc, "ana@example.com", DE, **extra)
            self.assertEqual(r.status, 200, r.raw)
            self.assertNotIn("list", r.json)
            r = self.otp(svc, PHONE, DE, user="ana@example.com", **extra)
            self.assertEqual(r.status, 200, r.raw)
            self.assertNotIn("list", r.json)

    def test_an_allowed_asn_passes_checks_a_policy_would_deny(self):
        svc = self.start(STRICT)
        self.assertEqual(self.login(svc, "bo@example.com", FR).status, 200)
        self.assertEqual(self.login(svc, "bo@example.com", FR).status, 429)
        # "AS64501" as IPinfo writes it, kept as the number; no "force".
        entry = self.add(svc, "allow", {"kind": "asn", "value": "AS64501",
                                        "note": "the corporate VPN"})
        self.assertEqual(entry["value"], "64501")
        self.assertNotIn("force", entry)
        for _ in range(3):
            self.assert_listed(self.login(svc, "bo@example.com", DE),
                               "allow", "asn")
        # Another AS still meets the policy.
        self.assertEqual(self.login(svc, "bo@example.com", FR).status, 429)
        # Deny wins over allow: a denied country of the allowed AS.
        self.add(svc, "deny", {"kind": "ip_country", "value": "DE",
                               "endpoint": "login"})
        self.assert_listed(self.login(svc, "bo@example.com", DE), "deny",
                           "ip_country")

    def test_an_address_no_database_knows_matches_no_such_entry(self):
        svc = self.start(OPEN)
        self.add(svc, "deny", {"kind": "ip_country", "value": "FR"})
        self.add(svc, "deny", {"kind": "asn", "value": "64501"})
        self.add(svc, "allow", {"kind": "asn", "value": "64502"})
        r = self.login(svc, "cy@example.com", UNKNOWN)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["network"], {})
        self.assertNotIn("list", r.json)
        self.assert_listed(self.login(svc, "cy@example.com", DE), "deny",
                           "asn")
        # An ip_country entry is the address's country, never the phone's
        # calling code: a French number from an unknown address passes.
        r = self.otp(svc, "+33612345678", UNKNOWN)
        self.assertEqual(r.status, 200, r.raw)
        self.assertNotIn("list", r.json)

    def test_values_that_are_no_as_or_country_are_refused(self):
        svc = self.start(OPEN)
        for kind, value in (("asn", "AS0"), ("asn", "4294967296"),
                            ("asn", "AS 174"), ("asn", 174),
                            ("ip_country", "FRA"), ("ip_country", "+33")):
            with self.subTest(kind=kind, value=value):
                r = svc.request("POST", "/admin/lists/deny",
                                {"kind": kind, "value": value}, headers=AUTH)
                self.assertEqual(r.status, 400, r.raw)
                self.assertEqual(r.json["field"], "value")
        # One number, one entry: another spelling of it is the same.
        self.add(svc, "deny", {"kind": "asn", "value": "AS174"})
        r = svc.request("POST", "/admin/lists/deny",
                        {"kind": "asn", "value": "174"}, headers=AUTH)
        self.assertEqual(r.status, 409, r.raw)

    def test_entries_survive_a_restart(self):
        svc = self.start(STRICT)
        denied = self.add(svc, "deny", {"kind": "ip_country", "value": "FR"})
        allowed = self.add(svc, "allow", {"kind": "asn", "value": "64501",
                                          "endpoint": "login"})
        svc.restart()
        self.assertEqual(self.entries(svc, "deny"), [denied])
        self.assertEqual(self.entries(svc, "allow"), [allowed])
        self.assert_listed(self.login(svc, "di@example.com", FR), "deny",
                           "ip_country")
        for _ in range(2):
            self.assert_listed(self.login(svc, "di@example.com", DE),
                               "allow", "asn")


class NetworkListsFleetTest(FleetTest):
    write_mmdb = test_network.NetworkTest.write_mmdb
    files = test_network.NetworkTest.files

    def test_entries_travel_to_every_instance_of_a_fleet(self):
        files = self.files()
        a, b = self.fleet(2, extra=files)
        for which, entry in (("allow", {"kind": "asn", "value": "AS64501"}),
                             ("deny", {"kind": "ip_country", "value": "fr",
                                       "endpoint": "login"})):
            r = self.admin(a, "POST", "/lists/" + which, entry)
            self.assertEqual(r.status, 201, r.raw)
        # As records, through the channel.
        self.until_all([b], lambda s: self.login(
            s, "fe@example.com", FR).status == 403, "the deny")
        # In the snapshot a new instance takes when it joins.
        (c,) = self.fleet(1, extra=files)
        self.wait_versions_equal([a, b, c])
        for which in ("allow", "deny"):
            self.assertEqual(self.entries(b, which), self.entries(a, which))
            self.assertEqual(self.entries(c, which), self.entries(a, which))
        self.assertEqual(self.entries(c, "allow")[0]["value"], "64501")
        for s in (b, c):
            r = self.login(s, "fe@example.com", FR)
            self.assertEqual((r.status, r.json["list"]), (403, "deny"))
            r = self.login(s, "fe@example.com", DE)
            self.assertEqual((r.status, r.json["list"]), (200, "allow"))

    def test_signal_policies_travel_with_their_lists_and_countries(self):
        files = self.files()
        a, b = self.fleet(2, extra=files)
        tor = {"endpoint": "login", "key": ["ip"], "algorithm": "signal",
               "signal": "ip_listed", "lists": ["tor"],
               "applies_to": "untrusted", "action": "challenge"}
        fr = {"endpoint": "otp", "key": ["phone"], "algorithm": "signal",
              "signal": "ip_country", "countries": ["fr", "KP"]}
        for name, rec in (("net.tor", tor), ("otp.fr", fr)):
            r = self.admin(a, "PUT", "/policies/" + name, rec)
            self.assertEqual(r.status, 201, r.raw)
        self.until_all([b], lambda s: self.login(
            s, "ft@example.com", "12.1.2.3").status == 429, "net.tor")
        (c,) = self.fleet(1, extra=files)
        self.wait_versions_equal([a, b, c])
        for name in ("net.tor", "otp.fr"):
            want = self.admin(a, "GET", "/policies/" + name).json["policy"]
            for s in (b, c):
                self.assertEqual(
                    self.admin(s, "GET", "/policies/" + name).json["policy"],
                    want)
        self.assertEqual(want["countries"], ["FR", "KP"])
        # Written as schema 2, which a binary from before them holds on
        # (naming the upgrade) instead of refusing a field it lacks; a
        # record without them stays schema 1.
        def last_schema():
            log = self.redis.cmd("XREVRANGE", keys()["log"], "+", "-",
                                 "COUNT", "1")
            return pairs(log[0][1])["s"]
        for name, rec, schema in (
                ("net.tor2", tor, "2"),
                ("login.plain", {"endpoint": "login", "key": ["user"],
                                 "algorithm": "sliding_log", "limit": 9,
                                 "window_s": 60}, "1")):
            r = self.admin(a, "PUT", "/policies/" + name, rec)
            self.assertEqual(r.status, 201, r.raw)
            self.assertEqual(last_schema(), schema, name)
        r = c.post("/check-otp", {"phone": "+447911123456",
                                  "ip": "12.9.9.9"})
        self.assertEqual((r.status, r.json["policy"]), (429, "otp.fr"), r.raw)

    def test_a_member_that_cannot_read_them_refuses_their_write(self):
        (a,) = self.fleet(1, extra=self.files())
        # A member of the version before: its heartbeat names no schema.
        t = self.redis.cmd("TIME")
        now_ms = int(t[0]) * 1000 + int(t[1]) // 1000
        old = "0123456789abcdef"
        self.redis.cmd("HSET", keys()["members"], old,
                       "%d %s" % (now_ms, json.dumps(
                           {"host": "old-host", "binary": "0.0.9"})))
        tor = {"endpoint": "login", "key": ["ip"], "algorithm": "signal",
               "signal": "ip_listed", "lists": ["tor"]}
        r = self.admin(a, "PUT", "/policies/net.tor", tor)
        self.assertEqual(r.status, 409, r.raw)
        self.assertIn(old, r.json["error"])
        self.assertIn("upgrade it first", r.json["error"])
        self.assertEqual(self.admin(a, "GET", "/policies/net.tor").status,
                         404)
        # What the old member reads still goes through.
        r = self.admin(a, "PUT", "/policies/login.plain",
                       {"endpoint": "login", "key": ["user"],
                        "algorithm": "sliding_log", "limit": 9,
                        "window_s": 60})
        self.assertEqual(r.status, 201, r.raw)
        # Upgraded (its heartbeat gone, or naming schema 2): written.
        self.redis.cmd("HDEL", keys()["members"], old)
        r = self.admin(a, "PUT", "/policies/net.tor", tor)
        self.assertEqual(r.status, 201, r.raw)
        # Every member's heartbeat names the schema it applies: 3, issue
        # 40's.
        beats = pairs(self.redis.cmd("HGETALL", keys()["members"]))
        for text in beats.values():
            self.assertEqual(json.loads(text.split(" ", 1)[1])["schema"], 3)
        # A member of issue 39's version (schema 2) reads the network
        # fields but not a risky scope or a history signal.
        self.redis.cmd("HSET", keys()["members"], old,
                       "%d %s" % (now_ms, json.dumps(
                           {"host": "old-host", "binary": "0.0.10",
                            "schema": 2})))
        for name, rec in (
                ("login.shield", {"endpoint": "login", "key": ["site"],
                                  "algorithm": "surge", "limit": 100,
                                  "window_s": 60, "block_s": 600,
                                  "counts": "failures", "scope": "risky",
                                  "action": "challenge"}),
                ("login.travel", {"endpoint": "login", "key": ["user"],
                                  "algorithm": "signal",
                                  "signal": "impossible_travel",
                                  "action": "challenge"})):
            r = self.admin(a, "PUT", "/policies/" + name, rec)
            self.assertEqual(r.status, 409, r.raw)
            self.assertIn("schema 2", r.json["error"])
        r = self.admin(a, "PUT", "/policies/net.tor3", tor)
        self.assertEqual(r.status, 201, r.raw)


if __name__ == "__main__":
    unittest.main()
