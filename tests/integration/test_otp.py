"""One-time codes: sending and verifying are limited apart, and a new code
never resets the count of failed verifications (NIST SP 800-63B rev 4
3.1.3: "generating a new authentication secret SHALL NOT reset the failed
authentication count")."""
import unittest

from harness import PolicyTest, policy

SEND = policy("o.send", endpoint="otp", key=("phone",), limit=10,
              window_s=3600)
VERIFY = policy("v.phone", endpoint="otp_verify", key=("phone",), limit=3,
                window_s=3600)
PHONE = "+48600100200"


class OtpTest(PolicyTest):
    def setUp(self):
        super().setUp()
        (self.svc,) = self.seeded([SEND, VERIFY])

    def verify(self):
        return self.svc.post("/check-otp-verify",
                             {"phone": PHONE, "ip": "192.0.2.1"})

    def test_a_new_code_does_not_reset_the_verify_count(self):
        self.assertEqual(self.otp(self.svc, PHONE, "192.0.2.1").status, 200)
        self.assertEqual([self.verify().status for _ in range(4)],
                         [200, 200, 200, 429])
        # The user asks for a new code: sent, and still no more guesses.
        r = self.otp(self.svc, PHONE, "192.0.2.1")
        self.assertEqual(r.status, 200)
        r = self.verify()
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "v.phone")

    def test_verify_and_send_limits_are_counted_apart(self):
        for _ in range(3):
            self.verify()
        r = self.otp(self.svc, PHONE, "192.0.2.1")
        # The verify checks took nothing from the send budget, and the
        # send's decisions hold no verify policy.
        self.assertEqual(self.decision(r, "o.send")["remaining"],
                         SEND["limit"] - 1)
        self.assertEqual([d["policy"] for d in r.json["decisions"]],
                         ["o.send"])
        r = self.verify()
        self.assertEqual([d["policy"] for d in r.json["decisions"]],
                         ["v.phone"])


if __name__ == "__main__":
    unittest.main()
