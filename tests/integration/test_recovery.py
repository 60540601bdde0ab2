# SPDX-License-Identifier: Apache-2.0
"""The NIST cap's way back (issue 29, item 4), over real processes: once
an attacker's failures have closed the untrusted lane at 100
(login.user_consecutive), the real user on a new device gets back in
through the application's own account recovery: a success reported with
"method": "recovery" clears what any success clears, answers a device
token, and raises account_recovered with the user's digest (never the
user). "method" is "password" (the default) or "recovery", and recovery
is for successes only; anything else is a 400 naming method that
changes nothing."""
import json
import unittest

from harness import ServiceTest, digest, wait_until

USER = "ana@example.com"
HOME = "192.0.2.10"
CAP = 100  # login.user_consecutive


def attacker_ip(i):
    return "198.51.%d.%d" % (100 + i // 250, 1 + i % 250)


class RecoveryTest(ServiceTest):
    def setUp(self):
        super().setUp()
        self.svc = self.service()

    def report(self, success, ip=HOME, **extra):
        return self.svc.post("/report-login", {"user": USER, "ip": ip,
                                               "success": success, **extra})

    def new_device(self):
        """A check from a device without a token that passed its
        challenge: only a deny policy can turn it away."""
        return self.svc.post("/check-login", {"user": USER, "ip": HOME,
                                              "challenge_passed": True})

    def close_the_lane(self):
        for i in range(CAP):
            self.assertEqual(self.report(False, ip=attacker_ip(i)).status,
                             204)
        r = self.new_device()
        self.assertEqual(r.status, 429, r.raw)
        self.assertEqual((r.json["policy"], r.json["action"]),
                         ("login.user_consecutive", "deny"), r.raw)

    def events(self, type_):
        out = []
        for _, fields in self.redis.cmd("XRANGE", "ag::events", "-", "+"):
            e = json.loads(dict(zip(fields[::2], fields[1::2]))["event"])
            if e["type"] == type_:
                out.append(e)
        return out

    def test_a_recovery_reopens_the_cap_and_trusts_the_device(self):
        self.close_the_lane()
        r = self.report(True, method="recovery")
        self.assertEqual(r.status, 200, r.raw)
        token = r.json["device_token"]
        self.assertGreater(r.json["expires_in"], 0)
        # The device that recovered is trusted from now on ...
        r = self.login(self.svc, USER, HOME, device_token=token)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["device"], "trusted")
        # ... and the untrusted lane is open again, its count at zero.
        r = self.new_device()
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(
            self.decision(r, "login.user_consecutive")["remaining"], CAP)
        # One event, naming the user by its keyed digest only.
        self.assertTrue(wait_until(
            lambda: self.events("account_recovered"), 10.0))
        (e,) = self.events("account_recovered")
        self.assertEqual(e["key"], digest(self.secret, [("user", USER)]))
        self.assertEqual(e["endpoint"], "login")
        raw = json.dumps(self.redis.cmd("XRANGE", "ag::events", "-", "+"))
        for text in (raw, self.svc.log_text()):
            self.assertNotIn(USER, text)
            self.assertNotIn("ana@", text)
        self.assertIn("account_recovered", self.svc.log_text())

    def test_a_password_success_is_no_recovery(self):
        for method in ({}, {"method": "password"}, {"method": None}):
            r = self.report(True, **method)
            self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.report(False, method="password").status, 204)
        # A recovery afterwards is the first event of its kind: the
        # password successes before it raised none.
        self.assertEqual(self.report(True, method="recovery").status, 200)
        self.assertTrue(wait_until(
            lambda: self.events("account_recovered"), 10.0))
        self.assertEqual(len(self.events("account_recovered")), 1)

    def test_method_is_password_or_recovery_and_recovery_only_succeeds(self):
        self.close_the_lane()
        bad = [(True, "email_link"), (True, "Recovery"), (True, ""),
               (True, 1), (True, ["recovery"]), (False, "recovery")]
        for success, method in bad:
            r = self.report(success, method=method)
            self.assertEqual((r.status, r.json and r.json.get("field")),
                             (400, "method"), (success, method, r.raw))
        self.assertIn("recovery", self.report(False, method="recovery")
                      .json["error"])
        # Refused, each changed nothing: the lane is still closed, and no
        # recovery was told.
        r = self.new_device()
        self.assertEqual(r.status, 429, r.raw)
        self.assertEqual(r.json["policy"], "login.user_consecutive")
        self.assertEqual(self.events("account_recovered"), [])


if __name__ == "__main__":
    unittest.main()
