# SPDX-License-Identifier: Apache-2.0
"""Login failure counting (/report-login), lockouts with block_s, and
clearing on success."""
import unittest

from harness import PolicyTest, digest, policy, wait_until

# The lockouts that must outlast their window: every attempt of the window
# must fall in it (3 s, time enough on a loaded machine), and the check
# after the window must come before the block ends (5 s later). Every wait
# is on Redis's clock, and every wait the service reports is judged
# against the Redis times around the checks.
WINDOW_S, BLOCK_S = 3, 8
S = 1_000_000  # microseconds

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

    def timed_login(self, svc, user, ip):
        """A check, and the Redis times just before and just after it."""
        before = self.redis_time_us()
        r = self.login(svc, user, ip)
        return r, before, self.redis_time_us()

    def assert_block_outlasts_the_window(self, svc, user, ip):
        """The check after a full window locks user out for BLOCK_S; once
        the window has emptied the block still denies, for what is left of
        it; once the block has ended, the next check is allowed."""
        r, before, after = self.timed_login(svc, user, ip)
        self.assertEqual(r.status, 429)
        # The block is longer than the window's wait: it is the wait.
        self.assertEqual(r.json["retry_after"], BLOCK_S)
        # Every attempt of the window came before the lockout.
        self.wait_for_redis_time(after + WINDOW_S * S)
        r, t0, t1 = self.timed_login(svc, user, ip)
        self.assertEqual(r.status, 429, "the block ended with the window")
        # The block runs BLOCK_S from the lockout, somewhere between before
        # and after; this check ran between t0 and t1.
        self.assertIn(r.json["retry_after"],
                      range(-(-(before + BLOCK_S * S - t1) // S),
                            -(-(after + BLOCK_S * S - t0) // S) + 1), r.json)
        self.wait_for_redis_time(after + BLOCK_S * S)
        self.assertEqual(self.login(svc, user, ip).status, 200)

    def test_block_s_keeps_denying_after_the_window(self):
        (svc,) = self.seeded([policy("f.block", key=("user", "ip"), limit=2,
                                     window_s=WINDOW_S, block_s=BLOCK_S,
                                     counts="failures")])
        for _ in range(2):
            self.report(svc, "bo@example.com", "192.0.2.9", False)
        self.assert_block_outlasts_the_window(svc, "bo@example.com",
                                              "192.0.2.9")

    def test_block_s_applies_to_attempt_counting_too(self):
        (svc,) = self.seeded([policy("a.block", key=("user",), limit=1,
                                     window_s=WINDOW_S, block_s=BLOCK_S)])
        self.assertEqual(self.login(svc, "c@example.com", "192.0.2.9")
                         .status, 200)
        self.assert_block_outlasts_the_window(svc, "c@example.com",
                                              "192.0.2.9")

    def test_a_blocking_policy_between_others_keeps_each_key_its_own(self):
        # The script is passed a block key only for a policy with block_s,
        # so the middle policy's keys shift the last one's: each must still
        # land on its own key, and only the blocking policy gets a block key.
        # Windows and a block long enough that nothing lapses on a loaded
        # machine while the test looks.
        (svc,) = self.seeded([
            policy("m.a", key=("user",), limit=3),
            policy("m.b", key=("user", "ip"), limit=1, window_s=30,
                   block_s=60),
            policy("m.c", key=("ip",), limit=4)])
        user, ip = "mix@example.com", "192.0.2.77"
        self.assertEqual(self.login(svc, user, ip).status, 200)
        r, before, _ = self.timed_login(svc, user, ip)
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "m.b")
        self.assertEqual(r.json["retry_after"], 60)
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
        # The block key lives the block's 60 s from the lockout, which
        # came after before.
        pttl = self.redis.cmd("PTTL", b + ":b")
        waited_ms = (self.redis_time_us() - before) // 1000
        self.assertTrue(60000 - waited_ms - 1 <= pttl <= 60000,
                        (pttl, waited_ms))

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
