# SPDX-License-Identifier: Apache-2.0
"""Login failure counting (/report-login), lockouts with block_s, and
clearing on success."""
import time
import unittest

from harness import PolicyTest, digest, policy, wait_until

FAIL_POLICIES = [
    policy("f.user_ip", key=("user", "ip"), limit=3, window_s=60,
           counts="failures"),
    policy("f.user", key=("user",), limit=5, window_s=60, counts="failures"),
]


class FailureTest(PolicyTest):
    def report(self, svc, user, ip, success):
        return svc.post("/report-login",
                        {"user": user, "ip": ip, "success": success})

    def test_checks_do_not_charge_failure_policies(self):
        (svc,) = self.seeded(FAIL_POLICIES)
        for _ in range(10):
            r = self.login(svc, "ana@example.com", "192.0.2.1")
            self.assertEqual(r.status, 200)
        self.assertEqual(self.decision(r, "f.user_ip")["remaining"], 3)
        self.assertEqual(self.redis.keys(), [])

    def test_failures_lock_the_user_on_that_ip(self):
        (svc,) = self.seeded(FAIL_POLICIES)
        for _ in range(3):
            self.assertEqual(self.login(svc, "ana@example.com",
                                        "192.0.2.1").status, 200)
            self.assertEqual(self.report(svc, "ana@example.com", "192.0.2.1",
                                         False).status, 204)
        r = self.login(svc, "ana@example.com", "192.0.2.1")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "f.user_ip")
        self.assertTrue(55 <= r.json["retry_after"] <= 60, r.json)
        # The same user from elsewhere is still allowed (2 failures left
        # on the global failure log).
        r = self.login(svc, "ana@example.com", "198.51.100.1")
        self.assertEqual(r.status, 200)
        self.assertEqual(self.decision(r, "f.user")["remaining"], 2)

    def test_success_clears_user_ip_failures_but_not_the_users(self):
        (svc,) = self.seeded(FAIL_POLICIES)
        for _ in range(3):
            self.report(svc, "ana@example.com", "192.0.2.1", False)
        self.assertEqual(self.login(svc, "ana@example.com",
                                    "192.0.2.1").status, 429)
        # A success answers with a device token (test_devices.py).
        self.assertEqual(self.report(svc, "ANA@example.com", "192.0.2.1",
                                     True).status, 200)
        r = self.login(svc, "ana@example.com", "192.0.2.1")
        self.assertEqual(r.status, 200)
        self.assertEqual(self.decision(r, "f.user_ip")["remaining"], 3)
        self.assertEqual(self.decision(r, "f.user")["remaining"], 2)

    def test_block_s_keeps_denying_after_the_window(self):
        (svc,) = self.seeded([policy("f.block", key=("user", "ip"), limit=2,
                                     window_s=1, block_s=3,
                                     counts="failures")])
        for _ in range(2):
            self.report(svc, "bo@example.com", "192.0.2.9", False)
        r = self.login(svc, "bo@example.com", "192.0.2.9")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["retry_after"], 3)
        time.sleep(1.5)  # the window has emptied; the block has not
        r = self.login(svc, "bo@example.com", "192.0.2.9")
        self.assertEqual(r.status, 429)
        self.assertTrue(1 <= r.json["retry_after"] <= 2, r.json)
        time.sleep(2)
        self.assertEqual(self.login(svc, "bo@example.com",
                                    "192.0.2.9").status, 200)

    def test_block_s_applies_to_attempt_counting_too(self):
        (svc,) = self.seeded([policy("a.block", key=("user",), limit=1,
                                     window_s=1, block_s=2)])
        self.assertEqual(self.login(svc, "c@example.com", "192.0.2.9")
                         .status, 200)
        r = self.login(svc, "c@example.com", "192.0.2.9")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["retry_after"], 2)
        time.sleep(1.2)
        self.assertEqual(self.login(svc, "c@example.com", "192.0.2.9")
                         .status, 429)

    def test_a_blocking_policy_between_others_keeps_each_key_its_own(self):
        # The script is passed a block key only for a policy with block_s,
        # so the middle policy's keys shift the last one's: each must still
        # land on its own key, and only the blocking policy gets a block key.
        (svc,) = self.seeded([
            policy("m.a", key=("user",), limit=3),
            policy("m.b", key=("user", "ip"), limit=1, window_s=2, block_s=5),
            policy("m.c", key=("ip",), limit=4)])
        user, ip = "mix@example.com", "192.0.2.77"
        self.assertEqual(self.login(svc, user, ip).status, 200)
        r = self.login(svc, user, ip)
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "m.b")
        self.assertEqual(r.json["retry_after"], 5)
        # The denied check charged no one: one attempt each.
        self.assertEqual(self.decision(r, "m.a")["remaining"], 2)
        self.assertEqual(self.decision(r, "m.c")["remaining"], 3)
        u, i = ("user", user), ("ip", ip)
        a = "ag:m.a:" + digest(self.secret, [u])
        b = "ag:m.b:" + digest(self.secret, [u, i])
        c = "ag:m.c:" + digest(self.secret, [i])
        # The denial's lockout marker (issue 19) beside m.b's own keys, and
        # the event stream.
        self.assertTrue(wait_until(lambda: self.redis.cmd(
            "XLEN", "ag::events") == 1, 5.0))
        self.assertEqual(self.redis.keys(),
                         sorted([a, b, b + ":b", b + ":e", c, "ag::events"]))
        for key in (a, b, c):
            self.assertEqual(self.redis.cmd("ZCARD", key), 1, key)
        self.assertTrue(4000 < self.redis.cmd("PTTL", b + ":b") <= 5000)

    def test_report_validation_names_the_field(self):
        (svc,) = self.seeded(FAIL_POLICIES)
        for body, field in [
                ({"user": "a@example.com", "ip": "192.0.2.1"}, "success"),
                ({"user": "a@example.com", "ip": "192.0.2.1",
                  "success": "no"}, "success"),
                ({"ip": "192.0.2.1", "success": False}, "user"),
                ({"user": "a@example.com", "ip": "x", "success": False},
                 "ip")]:
            with self.subTest(body=body):
                r = svc.post("/report-login", body)
                self.assertEqual(r.status, 400)
                self.assertTrue(r.json["error"].startswith(field),
                                r.json)
        self.assertEqual(self.redis.keys(), [])


if __name__ == "__main__":
    unittest.main()
