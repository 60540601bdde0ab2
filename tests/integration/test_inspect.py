# SPDX-License-Identifier: Apache-2.0
"""POST /admin/inspect: the support desk's "why can't this customer log
in?", answered in a check's shape from Redis (or the fallback) without
charging anything."""
import json
import os

from harness import PolicyTest, digest, policy, wait_until, make_secret

TOKEN = "tok-" + "5" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
USER, IP = "ana@example.com", "192.0.2.10"

POLICIES = [
    policy("l.user", key=("user",), limit=10, window_s=60,
           applies_to="untrusted"),
    policy("l.user_ip", key=("user", "ip"), limit=3, window_s=60,
           applies_to="untrusted", action="challenge"),
    policy("l.ip", key=("ip",), limit=4, window_s=60, block_s=120,
           block_growth=2, block_max_s=3600, applies_to="untrusted"),
    policy("l.shadow", key=("user",), algorithm="fixed_window", limit=1,
           window_s=60, mode="shadow"),
    policy("l.known", key=("user", "device_token"), limit=7, window_s=60,
           applies_to="trusted"),
    policy("o.phone", endpoint="otp", key=("phone",), limit=3, window_s=60),
]


class InspectTest(PolicyTest):
    def setUp(self):
        super().setUp()
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")

    def start(self, policies=POLICIES):
        (svc,) = self.seeded(policies,
                             extra=["--admin-token-file", self.token_file])
        return svc

    def inspect(self, svc, endpoint="login", headers=AUTH, **ids):
        return svc.request("POST", "/admin/inspect",
                           {"endpoint": endpoint, **ids}, headers=headers)

    def inspect_ok(self, svc, endpoint="login", **ids):
        r = self.inspect(svc, endpoint, **ids)
        self.assertEqual(r.status, 200, r.raw)
        self.assertIs(r.json["inspected"], True)
        # An admin answer, not a check's: no quota headers to forward.
        for h in ("Retry-After", "X-RateLimit-Remaining", "RateLimit"):
            self.assertIsNone(r.header(h), h)
        return r

    def redis_state(self):
        """Every key's DUMP and expiry time (but the fleet's, where the
        inspection's audit row travels and the heartbeats beat)."""
        keys = self.redis.keys()
        return {k: (self.redis.cmd("DUMP", k),
                    self.redis.cmd("PEXPIRETIME", k)) for k in keys}

    def test_inspecting_a_fresh_subject_shows_every_limit_whole(self):
        svc = self.start()
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertIs(r.json["allowed"], True)
        self.assertEqual(r.json["device"], "untrusted")
        self.assertNotIn("degraded", r.json)
        for name, limit in (("l.user", 10), ("l.user_ip", 3), ("l.ip", 4),
                            ("l.shadow", 1)):
            d = self.decision(r, name)
            self.assertIs(d["allowed"], True, d)
            self.assertEqual(d["limit"], limit)
            self.assertEqual(d["remaining"], limit, d)
            self.assertEqual(d["reset_after"], 0, d)
        # Only l.ip's blocks grow: only it shows a level.
        self.assertEqual(self.decision(r, "l.ip")["block_level"], 0)
        self.assertNotIn("block_level", self.decision(r, "l.user"))
        # Nothing was written for the subject.
        self.assertEqual(self.redis.keys(), [])

    def test_any_number_of_inspects_leave_redis_and_the_next_check_as_they_were(
            self):
        svc = self.start()
        for _ in range(2):
            self.assertEqual(self.login(svc, USER, IP).status, 200)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertEqual(self.decision(r, "l.user_ip")["remaining"], 1)
        self.assertEqual(self.decision(r, "l.user")["remaining"], 8)
        self.assertEqual(self.decision(r, "l.ip")["remaining"], 2)
        # The shadow policy would deny now, as checks list it.
        shadow = self.decision(r, "l.shadow")
        self.assertIs(shadow["allowed"], False)
        self.assertIs(shadow["shadow"], True)
        self.assertIs(r.json["allowed"], True)
        before = self.redis_state()
        self.assertNotEqual(before, {})
        for _ in range(20):
            again = self.inspect_ok(svc, user=USER, ip=IP)
            self.assertEqual(self.decision(again, "l.user_ip")["remaining"],
                             1)
        self.assertEqual(self.redis_state(), before)
        # The third check is counted as the third, not the twenty-third.
        r = self.login(svc, USER, IP)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.decision(r, "l.user_ip")["remaining"], 0)
        self.assertEqual(self.decision(r, "l.user")["remaining"], 7)

    def test_a_locked_subject_shows_the_denying_policy_and_its_wait(self):
        svc = self.start()
        for _ in range(3):
            self.login(svc, USER, IP)
        self.assertEqual(self.login(svc, USER, IP).status, 429)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertIs(r.json["allowed"], False)
        self.assertEqual(r.json["policy"], "l.user_ip")
        self.assertEqual(r.json["action"], "challenge")
        self.assertGreater(r.json["retry_after"], 0)
        self.assertLessEqual(r.json["retry_after"], 60)
        d = self.decision(r, "l.user_ip")
        self.assertIs(d["allowed"], False)
        self.assertEqual(d["remaining"], 0)
        self.assertEqual(d["retry_after"], r.json["retry_after"])
        # The same user from another address is not locked.
        r = self.inspect_ok(svc, user=USER, ip="192.0.2.99")
        self.assertIs(r.json["allowed"], True)

    def test_a_running_block_shows_with_its_wait_and_level(self):
        svc = self.start()
        for i in range(4):
            self.login(svc, "u%d@example.com" % i, IP)
        # The fifth attempt from the address is denied and blocks it.
        r = self.login(svc, "u4@example.com", IP)
        self.assertEqual(r.json["policy"], "l.ip", r.raw)
        r = self.inspect_ok(svc, user="someone@example.com", ip=IP)
        self.assertIs(r.json["allowed"], False)
        self.assertEqual(r.json["policy"], "l.ip")
        d = self.decision(r, "l.ip")
        self.assertGreater(d["blocked_for"], 110)
        self.assertLessEqual(d["blocked_for"], 120)
        self.assertEqual(d["retry_after"], d["blocked_for"])
        self.assertEqual(d["block_level"], 1)
        self.assertGreaterEqual(r.json["retry_after"], d["blocked_for"])
        # Nothing is blocked for another address.
        r = self.inspect_ok(svc, user="someone@example.com",
                            ip="192.0.2.11")
        self.assertNotIn("blocked_for", self.decision(r, "l.ip"))

    def test_after_a_reset_the_inspect_shows_the_subject_unlocked(self):
        svc = self.start()
        for _ in range(4):
            self.login(svc, USER, IP)
        self.assertIs(self.inspect_ok(svc, user=USER, ip=IP)
                      .json["allowed"], False)
        r = svc.request("POST", "/admin/reset",
                        {"policy": "l.user_ip", "user": USER, "ip": IP},
                        headers=AUTH)
        self.assertEqual(r.status, 204, r.raw)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertIs(r.json["allowed"], True)
        self.assertEqual(self.decision(r, "l.user_ip")["remaining"], 3)
        # Only that policy was reset.
        self.assertEqual(self.decision(r, "l.user")["remaining"], 7)

    def test_bad_bodies_are_400_naming_the_field(self):
        svc = self.start()
        cases = [
            ({"endpoint": "login", "user": USER}, "ip"),
            ({"endpoint": "login", "ip": IP}, "user"),
            ({"endpoint": "otp", "ip": IP}, "phone"),
            ({"endpoint": "otp_verify", "phone": "+48600111222"}, "ip"),
            ({"endpoint": "login", "user": USER, "ip": "999.1.1.1"}, "ip"),
            ({"endpoint": "logn", "user": USER, "ip": IP}, "endpoint"),
            ({"endpoint": 7, "user": USER, "ip": IP}, "endpoint"),
            ({"user": USER, "ip": IP}, "endpoint"),
        ]
        for body, field in cases:
            r = svc.request("POST", "/admin/inspect", body, headers=AUTH)
            self.assertEqual(r.status, 400, (body, r.raw))
            self.assertEqual(r.json["field"], field, (body, r.raw))
        r = svc.request("POST", "/admin/inspect", "{not json", headers=AUTH)
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["field"], "body")
        # Not an object: the body is at fault, as on the check routes.
        for body in ([], [{"endpoint": "login"}], "7", '"login"'):
            r = svc.request("POST", "/admin/inspect", body, headers=AUTH)
            self.assertEqual(r.status, 400, (body, r.raw))
            self.assertEqual(r.json["field"], "body", (body, r.raw))
            c = svc.request("POST", "/check-login", body)
            self.assertEqual(c.json["field"], "body", (body, c.raw))
        r = svc.request("GET", "/admin/inspect", headers=AUTH)
        self.assertEqual(r.status, 405)
        self.assertEqual(r.header("Allow"), "POST")

    def test_without_the_token_inspect_is_401(self):
        svc = self.start()
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            r = self.inspect(svc, headers=headers, user=USER, ip=IP)
            self.assertEqual(r.status, 401)
            self.assertTrue(
                r.header("WWW-Authenticate").startswith("Bearer"))

    def test_the_audit_log_gets_an_inspect_entry_with_hashes_only(self):
        svc = self.start()
        self.inspect_ok(svc, user=USER, ip=IP, phone="+48600111222")
        audit = svc.request("GET", "/admin/audit?limit=1", headers=AUTH).json
        entry = audit["entries"][0]
        self.assertEqual(entry["action"], "inspect")
        self.assertEqual(entry["name"], "login")
        self.assertEqual(entry["actor"], "admin-api")
        self.assertEqual(entry["after"]["endpoint"], "login")
        keys = entry["after"]["keys"]
        self.assertIn("ag:l.user_ip:" + digest(
            self.secret, [("user", USER), ("ip", IP)]), keys)
        self.assertIn("ag:l.user:" + digest(self.secret, [("user", USER)]),
                      keys)
        text = json.dumps(audit)
        for plain in (USER, IP, "600111222"):
            self.assertNotIn(plain, text)
        # Neither are they in the service's log.
        self.assertNotIn(USER, svc.log_text())

    def test_with_redis_down_the_inspect_answers_from_the_fallback(self):
        svc = self.start()
        self.login(svc, USER, IP)
        self.redis.stop()
        # Checks meanwhile count in the fallback, which starts empty.
        for _ in range(2):
            self.assertIs(self.login(svc, USER, IP).json["degraded"], True)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertIs(r.json["degraded"], True)
        self.assertIs(r.json["allowed"], True)
        self.assertEqual(self.decision(r, "l.user_ip")["remaining"], 1)
        self.assertNotIn("unknown", self.decision(r, "l.user_ip"))
        # And the inspect charged the fallback nothing either.
        r = self.login(svc, USER, IP)
        self.assertEqual(self.decision(r, "l.user_ip")["remaining"], 0)

    def test_fail_closed_policies_are_unknown_while_redis_is_down(self):
        svc = self.start([
            policy("l.open", key=("user",), limit=5, window_s=60),
            policy("l.closed", key=("user", "ip"), limit=5, window_s=60,
                   fail="closed"),
            policy("l.closed_shadow", key=("ip",), limit=5, window_s=60,
                   fail="closed", mode="shadow")])
        self.redis.stop()
        check = self.login(svc, USER, IP)
        self.assertEqual(check.status, 503)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        # What the check is answered, said in full.
        for field in ("allowed", "reason", "policy", "retry_after",
                      "device", "degraded"):
            self.assertEqual(r.json[field], check.json[field], field)
        self.assertEqual(self.decision(r, "l.closed"),
                         {"policy": "l.closed", "allowed": False,
                          "limit": 5, "unknown": True})
        # A fail-open policy, and a shadow one that cannot deny, are read
        # from the fallback.
        self.assertEqual(self.decision(r, "l.open")["remaining"], 5)
        self.assertEqual(self.decision(r, "l.closed_shadow")["remaining"], 5)

    def test_a_trusted_device_token_puts_the_inspect_in_the_trusted_lane(
            self):
        svc = self.start()
        r = svc.post("/report-login", {"user": USER, "ip": IP,
                                       "success": True})
        token = r.json["device_token"]
        self.login(svc, USER, "198.51.100.4", device_token=token)
        r = self.inspect_ok(svc, user=USER, ip=IP, device_token=token)
        self.assertEqual(r.json["device"], "trusted")
        names = sorted(d["policy"] for d in r.json["decisions"])
        self.assertEqual(names, ["l.known", "l.shadow"])
        self.assertEqual(self.decision(r, "l.known")["remaining"], 6)
        # Any other token is simply untrusted, as for a check.
        r = self.inspect_ok(svc, user=USER, ip=IP, device_token="v1.nope")
        self.assertEqual(r.json["device"], "untrusted")
        self.assertIn("l.user_ip",
                      [d["policy"] for d in r.json["decisions"]])

    def test_lists_show_as_checks_show_them(self):
        svc = self.start()
        r = svc.request("POST", "/admin/lists/deny",
                        {"kind": "ip", "value": "192.0.2.0/24"},
                        headers=AUTH)
        self.assertEqual(r.status, 201, r.raw)
        check = self.login(svc, USER, IP)
        self.assertEqual(check.status, 403)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertEqual(r.json["list"], "deny")
        self.assertIs(r.json["allowed"], False)
        self.assertEqual(r.json["decisions"], check.json["decisions"])

    def test_an_otp_inspect_counts_no_send(self):
        svc = self.start()
        phone = "+48600111222"
        self.assertEqual(self.otp(svc, phone, IP).status, 200)
        for _ in range(3):
            r = self.inspect_ok(svc, "otp", phone=phone, ip=IP, user=USER)
            self.assertEqual(self.decision(r, "o.phone")["remaining"], 2)
        r = self.otp(svc, phone, IP)
        self.assertEqual(self.decision(r, "o.phone")["remaining"], 1)
        # The conversion figures count the two sends, not the inspects
        # between them (the figures are written without waiting, in
        # order: any an inspect wrote would be there by the second).
        self.assertTrue(wait_until(lambda: self.sent(svc) >= 2), "no sends")
        self.assertEqual(self.sent(svc), 2)

    def test_a_raised_shield_shows_as_a_check_meets_it(self):
        """Issue 36, item 7: during a raise a check is challenged by the
        shield; the inspect says so, naming it, with its wait, and reads
        nothing of the store, as the check. (Before: "allowed": true.)"""
        svc = self.start(POLICIES + [
            policy("l.site", key=("site",), algorithm="surge", limit=100,
                   window_s=60, block_s=600, counts="failures",
                   applies_to="untrusted", action="challenge")])
        r = svc.request("POST", "/admin/shields/l.site", {"raise_for_s": 900},
                        headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        check = self.login(svc, USER, IP)
        self.assertEqual((check.status, check.json["policy"]),
                         (429, "l.site"), check.raw)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertIs(r.json["allowed"], False)
        self.assertEqual((r.json["policy"], r.json["action"]),
                         ("l.site", "challenge"))
        self.assertGreater(r.json["retry_after"], 800)
        self.assertLessEqual(r.json["retry_after"], 900)
        self.assertEqual([d["policy"] for d in r.json["decisions"]],
                         ["l.site"])
        self.assertNotIn("challenge_nonce", r.json)
        # A trusted device is not judged by an untrusted shield, in either.
        token = svc.post("/report-login", {"user": USER, "ip": IP,
                                           "success": True}).json[
            "device_token"]
        r = self.inspect_ok(svc, user=USER, ip=IP, device_token=token)
        self.assertIs(r.json["allowed"], True)
        # Lowered, the policies answer again.
        svc.request("POST", "/admin/shields/l.site", {"lower": True},
                    headers=AUTH)
        r = self.inspect_ok(svc, user=USER, ip=IP)
        self.assertIs(r.json["allowed"], True)
        self.assertIn("l.user_ip", [d["policy"] for d in r.json["decisions"]])

    def sent(self, svc):
        groups = svc.request("GET", "/admin/otp/conversion?by=country",
                             headers=AUTH).json["groups"]
        return sum(g["sent"] for g in groups)


if __name__ == "__main__":
    import unittest
    unittest.main()
