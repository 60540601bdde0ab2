# SPDX-License-Identifier: Apache-2.0
"""Challenge passes (issue 36, item 9) against real processes and a real
redis-server: an answer that asks for a challenge carries a nonce, bound
to the check's subject and lane, that the next check brings back as
challenge_passed; it passes once (a second check with it is asked for a
challenge again), passes a raised shield once too, and passes nothing for
another user or lane. While Redis does not answer, a nonce passes once per
instance. --challenge-pass strict takes true for no pass; lenient takes
it as one; both count it and say so once a minute. (Before:
"challenge_passed": true waived every challenge, every shield included,
on every check that said it.)"""
import unittest

from harness import PolicyTest, make_secret, policy

TOKEN = "tok-" + "3" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
ANA, BO, IP = "ana@example.com", "bo@example.com", "192.0.2.10"

POLICIES = [
    policy("l.user_ip", key=("user", "ip"), limit=1, window_s=600,
           applies_to="untrusted", action="challenge"),
    policy("o.phone", endpoint="otp", key=("phone",), limit=1, window_s=600,
           action="challenge"),
    policy("s.site", key=("site",), algorithm="surge", limit=1000,
           window_s=60, block_s=600, baseline_s=3600, factor=5,
           counts="failures", applies_to="untrusted", action="challenge"),
]


def metric(svc, name, **labels):
    want = name + "{" + ",".join('%s="%s"' % kv for kv in labels.items()) + "}"
    for line in svc.request("GET", "/metrics").raw.decode().splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return None


class ChallengeTest(PolicyTest):
    def setUp(self):
        super().setUp()
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")

    def start(self, count=1, extra=()):
        return self.seeded(POLICIES, count=count,
                           extra=["--admin-token-file", self.token_file,
                                  *extra])

    def check(self, svc, user=ANA, **extra):
        return svc.post("/check-login", {"user": user, "ip": IP, **extra})

    def challenged(self, r, policy="l.user_ip"):
        """The nonce of r, a 429 of policy that asks for a challenge."""
        self.assertEqual(r.status, 429, r.raw)
        self.assertEqual((r.json["policy"], r.json["action"]),
                         (policy, "challenge"), r.raw)
        nonce = r.json["challenge_nonce"]
        self.assertRegex(nonce, r"^c1\.[A-Za-z0-9_-]{48}$")
        return nonce

    def decision(self, r, name):
        return next(d for d in r.json["decisions"] if d["policy"] == name)

    def nonce_of(self, svc, user=ANA):
        """A challenge asked of user (their second check) and its nonce."""
        self.assertEqual(self.check(svc, user).status, 200)
        return self.challenged(self.check(svc, user))

    def test_a_nonce_passes_its_challenge_once(self):
        (svc,) = self.start()
        nonce = self.nonce_of(svc)
        r = self.check(svc, challenge_passed=nonce)
        self.assertEqual(r.status, 200, r.raw)
        self.assertIs(self.decision(r, "l.user_ip").get("challenge_passed"),
                      True, r.raw)
        self.assertIs(self.decision(r, "challenge_pass")["allowed"], True)
        # Used: asked for a challenge again, with a new nonce, which passes.
        again = self.challenged(self.check(svc, challenge_passed=nonce),
                                "challenge_pass")
        self.assertNotEqual(again, nonce)
        self.assertEqual(self.check(svc, challenge_passed=again).status, 200)
        self.assertEqual(metric(svc, "abuseguard_challenge_passes_total",
                                kind="nonce", result="reused"), 1)
        self.assertEqual(metric(svc, "abuseguard_challenge_passes_total",
                                kind="nonce", result="accepted"), 3)
        # Nothing that names ana in Redis: the nonce's key is its id.
        keys = [k for k in self.redis.keys() if "challenge_pass" in k]
        self.assertEqual(len(keys), 2, keys)
        for k in keys:
            self.assertNotIn("ana", k)
            self.assertGreater(self.redis.cmd("PTTL", k), 0)

    def test_a_nonce_passes_nothing_for_another_user_or_lane(self):
        (svc,) = self.start()
        nonce = self.nonce_of(svc)
        self.assertEqual(self.check(svc, BO).status, 200)
        r = self.check(svc, BO, challenge_passed=nonce)
        self.challenged(r)
        self.assertEqual(metric(svc, "abuseguard_challenge_passes_total",
                                kind="nonce", result="forged"), 1)
        # ana on a trusted device: another lane, not passed (and l.user_ip
        # is untrusted-only, so the check is allowed anyway, the nonce
        # unspent).
        token = svc.post("/report-login", {"user": ANA, "ip": "198.51.100.1",
                                           "success": True}).json[
            "device_token"]
        r = self.check(svc, device_token=token, challenge_passed=nonce)
        self.assertEqual(r.status, 200, r.raw)
        self.assertNotIn("challenge_pass",
                         [d["policy"] for d in r.json["decisions"]])
        self.assertEqual(metric(svc, "abuseguard_challenge_passes_total",
                                kind="nonce", result="forged"), 2)
        # Still good for ana untrusted, once.
        self.assertEqual(self.check(svc, challenge_passed=nonce).status, 200)

    def test_a_raised_shield_is_passed_once_per_nonce(self):
        (svc,) = self.start()
        r = svc.request("POST", "/admin/shields/s.site", {"raise_for_s": 600},
                        headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        nonce = self.challenged(self.check(svc, BO), "s.site")
        r = self.check(svc, BO, challenge_passed=nonce)
        self.assertEqual(r.status, 200, r.raw)
        # The same nonce again: the shield is waived only for the store to
        # find it used; a true (lenient) would have passed every time.
        self.challenged(self.check(svc, BO, challenge_passed=nonce),
                        "challenge_pass")
        self.assertEqual(
            self.check(svc, BO, challenge_passed=True).status, 200)

    def test_otp_nonces_are_bound_to_the_user_or_else_the_phone(self):
        (svc,) = self.start()
        phone = {"phone": "+44 7911 123456", "ip": IP}
        self.assertEqual(svc.post("/check-otp", phone).status, 200)
        nonce = self.challenged(svc.post("/check-otp", phone), "o.phone")
        other = {"phone": "+44 7911 123457", "ip": IP}
        self.assertEqual(svc.post("/check-otp", other).status, 200)
        self.challenged(svc.post("/check-otp", dict(
            other, challenge_passed=nonce)), "o.phone")
        self.assertEqual(svc.post("/check-otp", dict(
            phone, challenge_passed=nonce)).status, 200)
        # With a user, the user: the same phone with another user's nonce
        # is no pass.
        with_user = dict(phone, user=ANA)
        nonce = self.challenged(svc.post("/check-otp", with_user), "o.phone")
        self.challenged(svc.post("/check-otp", dict(
            phone, user=BO, challenge_passed=nonce)), "o.phone")
        self.assertEqual(svc.post("/check-otp", dict(
            with_user, challenge_passed=nonce)).status, 200)
        # A login nonce is no OTP one.
        login = self.nonce_of(svc)
        self.challenged(svc.post("/check-otp", dict(
            with_user, challenge_passed=login)), "o.phone")

    def test_strict_takes_true_for_no_pass(self):
        """Strict: only a nonce passes. true passes nothing (the check is
        challenged as without it), never a 400 that an integration might
        let through; counted and said once a minute."""
        (svc,) = self.start(extra=["--challenge-pass", "strict"])
        nonce = self.nonce_of(svc)
        for _ in range(2):
            self.challenged(self.check(svc, challenge_passed=True))
        self.assertEqual(metric(svc, "abuseguard_challenge_passes_total",
                                kind="true", result="refused"), 2)
        self.assertEqual(metric(svc, "abuseguard_challenge_passes_total",
                                kind="true", result="accepted"), 0)
        lines = [line for line in svc.log_text().splitlines()
                 if "challenge_pass_refused" in line]
        self.assertEqual(len(lines), 1, lines)
        r = self.check(svc, challenge_passed="c1.nope")
        self.assertEqual((r.status, r.json["field"]),
                         (400, "challenge_passed"))
        self.assertEqual(self.check(svc, challenge_passed=nonce).status, 200)
        self.challenged(self.check(svc, challenge_passed=False))

    def test_lenient_takes_true_counts_it_and_says_so_once_a_minute(self):
        (svc,) = self.start()
        self.nonce_of(svc)
        for _ in range(3):
            r = self.check(svc, challenge_passed=True)
            self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(metric(svc, "abuseguard_challenge_passes_total",
                                kind="true", result="accepted"), 3)
        lines = [line for line in svc.log_text().splitlines()
                 if "challenge_pass_deprecated" in line]
        self.assertEqual(len(lines), 1, lines)

    def test_with_redis_down_a_nonce_passes_once_per_instance(self):
        a, b = self.start(count=2, extra=["--redis-timeout-ms", "200"])
        nonce = self.nonce_of(a)
        self.redis.stop()
        for svc in (a, b):
            r = self.check(svc, challenge_passed=nonce)
            self.assertEqual(r.status, 200, r.raw)
            self.assertIs(r.json.get("degraded"), True, r.raw)
            r = self.check(svc, challenge_passed=nonce)
            self.challenged(r, "challenge_pass")


if __name__ == "__main__":
    unittest.main()
