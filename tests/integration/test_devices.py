# SPDX-License-Identifier: Apache-2.0
"""Trusted devices, lanes and the challenge tier, over real processes:
device tokens from /report-login, tokens minted here by the documented
construction (so the format is checked independently of the C code),
policies that count in one lane only, and a challenge asked for, then
waived with challenge_passed while a deny policy still denies."""
import base64
import hashlib
import hmac
import os
import time
import unittest

from harness import PolicyTest, digest, make_secret, policy

USER = "ana@example.com"
TTL = 7776000


def mint(secret_path, user, issued, device_id=None):
    """A device token as service/engine/ag_device.h describes it."""
    with open(secret_path, "rb") as f:
        key = f.read()
    if len(key) > 64:
        key = hashlib.blake2b(key, digest_size=64).digest()
    device_key = hashlib.blake2b(b"abuseguard device token v1", key=key,
                                 digest_size=32).digest()
    body = issued.to_bytes(8, "big") + (device_id or os.urandom(16))
    user_digest = digest(secret_path, [("user", user)]).encode()
    mac = hmac.new(device_key, b"v1" + body + user_digest,
                   hashlib.sha512).digest()[:32]
    text = base64.urlsafe_b64encode(body + mac).decode().rstrip("=")
    return "v1." + text


class DeviceTest(PolicyTest):
    def report(self, svc, success, user=USER, ip="192.0.2.1", **extra):
        return svc.post("/report-login", {"user": user, "ip": ip,
                                          "success": success, **extra})

    def token(self, svc, user=USER, **extra):
        r = self.report(svc, True, user=user, **extra)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["expires_in"], TTL)
        return r.json["device_token"]

    def policies_of(self, resp):
        return sorted(d["policy"] for d in resp.json["decisions"])

    def test_success_issues_a_token_that_is_trusted_afterwards(self):
        (svc,) = self.seeded([
            policy("l.known", applies_to="trusted", limit=20),
            policy("l.unknown", applies_to="untrusted", limit=30)])
        token = self.token(svc)
        self.assertTrue(token.startswith("v1."), token)
        self.assertNotIn("ana", token)
        self.assertNotIn(digest(self.secret, [("user", USER)]), token)
        # The same user, spelt differently, from anywhere, with the token.
        r = self.login(svc, "ANA@example.com", "198.51.100.7",
                       device_token=token)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["device"], "trusted")
        self.assertEqual(self.policies_of(r), ["l.known"])
        r = self.login(svc, USER)
        self.assertEqual(r.json["device"], "untrusted")
        self.assertEqual(self.policies_of(r), ["l.unknown"])
        # Failures still answer 204, with no body.
        r = self.report(svc, False, device_token=token)
        self.assertEqual(r.status, 204)
        self.assertEqual(r.raw, b"")
        # Tokens minted here by the documented construction verify too.
        r = self.login(svc, USER, device_token=mint(self.secret, USER,
                                                    int(time.time())))
        self.assertEqual(r.json["device"], "trusted")

    def test_forged_expired_and_other_users_tokens_are_untrusted(self):
        (svc,) = self.seeded([policy("l.user", limit=100)])
        now = int(time.time())
        good = self.token(svc)
        tampered = good[:-5] + ("A" if good[-5] != "A" else "B") + good[-4:]
        bad = {
            "expired": mint(self.secret, USER, now - TTL - 5),
            "future": mint(self.secret, USER, now + 3600),
            "another user's": self.token(svc, user="bo@example.com"),
            "another secret's": mint(make_secret(self.workdir,
                                                 name="other.key"), USER, now),
            "zeros": "v1." + "A" * 75,
            "tampered": tampered,
            "garbage": "not a token",
            "empty": "",
            "oversized": "v1." + "A" * 4000,
            "a number": 42,
            "an object": {"token": good},
        }
        for what, token in bad.items():
            with self.subTest(token=what):
                r = self.login(svc, USER, device_token=token)
                self.assertEqual(r.status, 200, r.raw)
                self.assertEqual(r.json["device"], "untrusted")
        r = self.post_otp_verify(svc, good, user=None)
        self.assertEqual(r.json["device"], "untrusted")  # no user to bind
        r = self.post_otp_verify(svc, good, user="Ana@Example.com")
        self.assertEqual(r.json["device"], "trusted")
        self.assertEqual(self.login(svc, USER, device_token=good)
                         .json["device"], "trusted")

    def post_otp_verify(self, svc, token, user):
        body = {"phone": "+48600100200", "ip": "192.0.2.1",
                "device_token": token}
        if user:
            body["user"] = user
        r = svc.post("/check-otp-verify", body)
        self.assertEqual(r.status, 200, r.raw)
        return r

    def test_each_lane_counts_only_its_own_failures(self):
        (svc,) = self.seeded([
            policy("l.device_fail", key=("user", "device_token"), limit=2,
                   counts="failures", applies_to="trusted"),
            policy("l.user_fail", key=("user",), limit=3, counts="failures",
                   applies_to="untrusted")])
        laptop, phone = self.token(svc), self.token(svc)
        # An attacker's failures from many addresses, without a token.
        for i in range(5):
            self.report(svc, False, ip="203.0.113.%d" % (i + 1))
        r = self.login(svc, USER, "203.0.113.9")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "l.user_fail")
        self.assertEqual(r.json["device"], "untrusted")
        # The owner's devices are judged in their own lane: untouched.
        r = self.login(svc, USER, device_token=laptop)
        self.assertEqual(r.status, 200)
        self.assertEqual(self.decision(r, "l.device_fail")["remaining"], 2)
        # A device that keeps failing is locked alone.
        for _ in range(2):
            self.assertEqual(self.report(svc, False, device_token=laptop)
                             .status, 204)
        r = self.login(svc, USER, device_token=laptop)
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "l.device_fail")
        self.assertEqual(r.json["device"], "trusted")
        r = self.login(svc, USER, device_token=phone)
        self.assertEqual(r.status, 200)
        self.assertEqual(self.decision(r, "l.device_fail")["remaining"], 2)
        # The trusted failures charged nothing in the untrusted lane: its
        # log holds the attacker's five (three kept by the limit).
        u = digest(self.secret, [("user", USER)])
        self.assertEqual(self.redis.cmd("ZCARD", "ag:l.user_fail:" + u), 3)

    def test_challenge_is_asked_then_waived_while_a_deny_still_denies(self):
        (svc,) = self.seeded([
            policy("l.ask", key=("user",), limit=1, action="challenge"),
            policy("l.ip", key=("ip",), limit=3)])
        self.assertEqual(self.login(svc, USER).status, 200)
        r = self.login(svc, USER)
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "l.ask")
        self.assertEqual(r.json["action"], "challenge")
        self.assertEqual(self.decision(r, "l.ask")["action"], "challenge")
        # The challenge recorded nothing: l.ip still has 2 left after one.
        r = self.login(svc, USER, challenge_passed=True)
        self.assertEqual(r.status, 200, r.raw)
        d = self.decision(r, "l.ask")
        self.assertFalse(d["allowed"])
        self.assertTrue(d["challenge_passed"])
        self.assertEqual(self.decision(r, "l.ip")["remaining"], 1)
        # Charged as usual; the deny policy still denies a passed request.
        self.assertEqual(self.login(svc, USER, challenge_passed=True).status,
                         200)
        r = self.login(svc, USER, challenge_passed=True)
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "l.ip")
        self.assertEqual(r.json["action"], "deny")
        # challenge_passed must be a boolean.
        r = self.login(svc, USER, challenge_passed="yes")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["field"], "challenge_passed")
        metrics = svc.request("GET", "/metrics").raw.decode()
        self.assertIn('abuseguard_challenges_total{policy="l.ask"} 1\n',
                      metrics)
        self.assertIn(
            'abuseguard_challenges_passed_total{policy="l.ask"} 3\n',
            metrics)
        self.assertIn('abuseguard_denials_total{policy="l.ip"} 1\n', metrics)


if __name__ == "__main__":
    unittest.main()
