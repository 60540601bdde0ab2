# SPDX-License-Identifier: Apache-2.0
"""The check contract end to end: decisions, denials, headers, what a
denied check records, the global count across instances, and what lands in
Redis."""
import concurrent.futures
import json
import unittest

from harness import PolicyTest, digest, policy, wait_until

# The core table of the contract; the shipped defaults add more policies,
# which test_keys and test_failures cover.
CORE = [
    policy("login.user", key=("user",), limit=10, window_s=900),
    policy("login.ip", key=("ip",), limit=100, window_s=900),
    policy("login.user_ip", key=("user", "ip"), limit=5, window_s=900),
    policy("otp.phone", endpoint="otp", key=("phone",), limit=3,
           window_s=900),
    policy("otp.phone_daily", endpoint="otp", key=("phone",), limit=10,
           window_s=86400),
    policy("otp.ip", endpoint="otp", key=("ip",), limit=20, window_s=3600),
]


class CheckTest(PolicyTest):
    def service(self, **kw):
        if "db" in kw:
            return super().service(**kw)
        (svc,) = self.seeded(CORE)
        return svc

    def test_defaults_apply_every_login_policy(self):
        svc = super().service()
        r = self.login(svc, "ana@example.com", "203.0.113.7")
        self.assertEqual(r.status, 200)
        self.assertEqual(
            sorted(d["policy"] for d in r.json["decisions"]),
            ["login.ip", "login.ip_prefix", "login.ip_users", "login.user",
             "login.user_consecutive", "login.user_fail", "login.user_ip",
             "login.user_ip_fail"])
        # The spray policy judges a check that carries the fingerprint.
        r = self.login(svc, "ana@example.com", "203.0.113.7",
                       password_fp="fp")
        self.assertEqual(r.status, 200)
        self.assertIn("login.password_spray",
                      [d["policy"] for d in r.json["decisions"]])
        # The breached password signal judges a check that says so.
        r = self.login(svc, "ana@example.com", "203.0.113.7",
                       password_breached=True)
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "login.breached_password")

    def test_allowed_login_reports_every_login_policy(self):
        svc = self.service()
        r = self.login(svc, "ana@example.com", "203.0.113.7")
        self.assertEqual(r.status, 200)
        self.assertIs(r.json["allowed"], True)
        got = {d["policy"]: (d["limit"], d["remaining"], d["reset_after"])
               for d in r.json["decisions"]}
        self.assertEqual(got, {"login.user": (10, 9, 900),
                               "login.ip": (100, 99, 900),
                               "login.user_ip": (5, 4, 900)})
        # The tightest limiter is the one with the fewest remaining.
        self.assertEqual(r.header("X-RateLimit-Limit"), "5")
        self.assertEqual(r.header("X-RateLimit-Remaining"), "4")
        self.assertEqual(r.header("X-RateLimit-Reset"), "900")

    def test_sixth_attempt_for_user_ip_is_denied_with_retry_after(self):
        svc = self.service()
        for i in range(5):
            r = self.login(svc, "ana@example.com", "203.0.113.7")
            self.assertEqual(r.status, 200, r.raw)
            self.assertEqual(self.decision(r, "login.user_ip")["remaining"],
                             4 - i)
        r = self.login(svc, "ana@example.com", "203.0.113.7")
        self.assertEqual(r.status, 429)
        self.assertIs(r.json["allowed"], False)
        self.assertEqual(r.json["policy"], "login.user_ip")
        retry = r.json["retry_after"]
        self.assertTrue(1 <= retry <= 900, retry)
        self.assertEqual(r.header("Retry-After"), str(retry))
        self.assertEqual(r.header("X-RateLimit-Limit"), "5")
        self.assertEqual(r.header("X-RateLimit-Remaining"), "0")
        self.assertEqual(r.header("X-RateLimit-Reset"), str(retry))
        self.assertIs(self.decision(r, "login.user_ip")["allowed"], False)

    def test_denied_check_is_recorded_in_no_policy(self):
        # Redis's own all-or-nothing: the deny cache would answer the
        # repeats without asking it (test_deny_cache.py).
        (svc,) = self.seeded(CORE, extra=["--deny-cache", "off"])
        for _ in range(5):
            self.assertEqual(
                self.login(svc, "ana@example.com", "203.0.113.7").status, 200)
        # Three denied attempts: login.user and login.ip must not move.
        for _ in range(3):
            r = self.login(svc, "ana@example.com", "203.0.113.7")
            self.assertEqual(r.status, 429)
            self.assertEqual(self.decision(r, "login.user")["remaining"], 5)
            self.assertEqual(self.decision(r, "login.ip")["remaining"], 95)
        # The next allowed attempt from another IP sees 5 recorded, not 8.
        r = self.login(svc, "ana@example.com", "198.51.100.1")
        self.assertEqual(r.status, 200)
        self.assertEqual(self.decision(r, "login.user")["remaining"], 4)
        key = "ag:login.user:" + digest(self.secret,
                                        [("user", "ana@example.com")])
        self.assertEqual(self.redis.cmd("ZCARD", key), 6)

    def test_longest_wait_is_reported_when_several_deny(self):
        svc = self.service()
        # Fill login.user_ip (5) and then login.user (10) from other IPs.
        for i in range(10):
            ip = "203.0.113.7" if i < 5 else "198.51.100.%d" % i
            self.assertEqual(self.login(svc, "bo@example.com", ip).status,
                             200)
        r = self.login(svc, "bo@example.com", "203.0.113.7")
        self.assertEqual(r.status, 429)
        denied = [d for d in r.json["decisions"] if not d["allowed"]]
        self.assertEqual({d["policy"] for d in denied},
                         {"login.user", "login.user_ip"})
        longest = max(denied, key=lambda d: d["retry_after"])
        self.assertEqual(r.json["policy"], longest["policy"])
        self.assertEqual(r.json["retry_after"], longest["retry_after"])

    def test_user_spellings_share_one_limit(self):
        svc = self.service()
        for user in ["Ana@Example.com", " ANA@EXAMPLE.COM", "ana@example.com "]:
            self.assertEqual(self.login(svc, user, "203.0.113.7").status, 200)
        r = self.login(svc, "ana@example.com", "203.0.113.7")
        self.assertEqual(self.decision(r, "login.user")["remaining"], 6)

    def test_ipv4_mapped_ipv6_is_the_ipv4_address(self):
        svc = self.service()
        self.login(svc, "a@example.com", "::ffff:203.0.113.9")
        r = self.login(svc, "b@example.com", "203.0.113.9")
        self.assertEqual(self.decision(r, "login.ip")["remaining"], 98)

    def test_phone_formats_share_one_limit_and_fourth_otp_is_denied(self):
        svc = self.service()
        for phone in ["+48 600 100 200", "+48-600-100-200", "+48(600)100.200"]:
            r = self.otp(svc, phone, "203.0.113.7")
            self.assertEqual(r.status, 200, r.raw)
        r = self.otp(svc, "+48600100200", "203.0.113.8")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "otp.phone")
        self.assertEqual(self.decision(r, "otp.phone_daily")["remaining"], 7)

    def test_three_instances_allow_exactly_twenty_of_48_concurrent(self):
        # With the shipped defaults, on one shared database.
        db = self.workdir + "/shared.db"
        instances = [super(CheckTest, self).service(db=db, name="i%d" % i)
                     for i in range(3)]
        user = "target@example.com"

        def attempt(i):
            svc = instances[i % 3]
            return self.login(svc, user, "198.51.100.%d" % (i + 1)).status

        with concurrent.futures.ThreadPoolExecutor(48) as pool:
            statuses = list(pool.map(attempt, range(48)))
        # login.user: 20 attempts per 15 minutes from untrusted devices.
        self.assertEqual(statuses.count(200), 20, statuses)
        self.assertEqual(statuses.count(429), 28, statuses)
        # One member per allowed attempt: none collided, none leaked in.
        key = "ag:login.user:" + digest(self.secret, [("user", user)])
        self.assertEqual(self.redis.cmd("ZCARD", key), 20)

    def test_sliding_logs_stay_bounded_and_every_key_expires(self):
        svc = self.service()
        for _ in range(30):
            self.login(svc, "flood@example.com", "203.0.113.50")
            self.otp(svc, "+14155550100", "203.0.113.50")
        limits = {"login.user": 10, "login.ip": 100, "login.user_ip": 5,
                  "otp.phone": 3, "otp.phone_daily": 10, "otp.ip": 20}
        windows = {"login.user": 900, "login.ip": 900, "login.user_ip": 900,
                   "otp.phone": 900, "otp.phone_daily": 86400, "otp.ip": 3600}
        # The policies' keys; the conversion figures' hourly hashes (two,
        # one per grouping) are bounded by hour and expire too.
        figures = [k for k in self.redis.keys() if k.startswith("ag::conv:")]
        self.assertEqual(len(figures), 2, figures)
        for key in figures:
            ttl = self.redis.cmd("PTTL", key)
            self.assertTrue(0 < ttl <= 8 * 86400 * 1000, (key, ttl))
        # The lockout markers (issue 19) live as long as the denial, the
        # event stream is capped by length (XADD MAXLEN ~).
        self.assertTrue(wait_until(lambda: self.redis.cmd(
            "XLEN", "ag::events") == 2, 5.0))
        markers = [k for k in self.redis.keys() if k.endswith(":e")]
        self.assertEqual(len(markers), 2, markers)
        for key in markers:
            ttl = self.redis.cmd("PTTL", key)
            policy = key.split(":")[1]
            self.assertTrue(0 < ttl <= windows[policy] * 1000, (key, ttl))
        keys = [k for k in self.redis.keys()
                if k not in figures + markers + ["ag::events"]]
        self.assertEqual(len(keys), 6, keys)
        for key in keys:
            policy = key.split(":")[1]
            self.assertLessEqual(self.redis.cmd("ZCARD", key), limits[policy])
            ttl = self.redis.cmd("PTTL", key)
            self.assertTrue(0 < ttl <= windows[policy] * 1000, (key, ttl))

    def test_no_plaintext_identifier_in_redis_or_logs(self):
        svc = self.service()
        user, ip, phone = "Secret.Person@Example.org", "192.0.2.77", \
            "+48 512 345 678"
        self.login(svc, user, ip, device="dev-1234")
        self.otp(svc, phone, ip, user=user)
        self.assertEqual(self.login(svc, "", ip).status, 400)
        # Every key of every type (the fleet's history too).
        dump = [self.redis.dump_text()]
        needles = ["secret.person", "Secret.Person", "192.0.2.77",
                   "48512345678", "512 345 678", "dev-1234"]
        text = "\n".join(dump) + "\n" + svc.log_text()
        for needle in needles:
            self.assertNotIn(needle, text)
        self.assertIn("ag:login.user:" + digest(
            self.secret, [("user", user.lower())]), text)


if __name__ == "__main__":
    unittest.main()
