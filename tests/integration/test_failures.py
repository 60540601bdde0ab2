"""Login failure counting (/report-login), lockouts with block_s, and
clearing on success."""
import time
import unittest

from harness import PolicyTest, policy

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
        self.assertEqual(self.report(svc, "ANA@example.com", "192.0.2.1",
                                     True).status, 204)
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
