# SPDX-License-Identifier: Apache-2.0
"""Key kinds beyond single identifiers: ip_prefix, phone_prefix, distinct
subjects per IP; the otp_verify endpoint; and the shipped defaults for OTP
send intervals."""
import unittest

from harness import PolicyTest, ServiceTest, policy


class PrefixTest(PolicyTest):
    def test_ipv4_addresses_in_one_slash24_share_a_key(self):
        (svc,) = self.seeded([policy("p.net", key=("ip_prefix",), limit=3)])
        for i in (1, 2, 3):
            self.assertEqual(self.login(svc, "u%d@x.org" % i,
                                        "203.0.113.%d" % i).status, 200)
        r = self.login(svc, "u4@x.org", "203.0.113.200")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "p.net")
        self.assertEqual(self.login(svc, "u5@x.org", "203.0.114.1").status,
                         200)

    def test_ipv6_addresses_in_one_slash48_share_a_key(self):
        (svc,) = self.seeded([policy("p.net6", key=("ip_prefix",), limit=2)])
        self.assertEqual(self.login(svc, "a@x.org", "2001:db8:1:2::1")
                         .status, 200)
        self.assertEqual(self.login(svc, "b@x.org",
                                    "2001:db8:1:ffff:ffff:ffff:ffff:ffff")
                         .status, 200)
        self.assertEqual(self.login(svc, "c@x.org", "2001:db8:1:3::3")
                         .status, 429)
        self.assertEqual(self.login(svc, "d@x.org", "2001:db8:2::1")
                         .status, 200)

    def test_phone_prefix_groups_a_number_range(self):
        (svc,) = self.seeded(
            [policy("p.range", endpoint="otp", key=("phone_prefix",),
                    limit=2)], extra=["--phone-prefix-digits", "6"])

        self.assertEqual(self.otp(svc, "+44 7911 123456", "192.0.2.1")
                         .status, 200)
        self.assertEqual(self.otp(svc, "+44 7911 999999", "192.0.2.2")
                         .status, 200)
        r = self.otp(svc, "+44 7911 000001", "192.0.2.3")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "p.range")
        self.assertEqual(self.otp(svc, "+44 7912 000001", "192.0.2.3")
                         .status, 200)


class DistinctTest(PolicyTest):
    def test_distinct_users_per_ip(self):
        (svc,) = self.seeded([policy("d.users", algorithm="distinct",
                                     key=("ip",), limit=3)])
        for i, u in enumerate(("a", "b", "c")):
            r = self.login(svc, u + "@x.org", "192.0.2.7")
            self.assertEqual(r.status, 200)
            # Each new user takes one of the three places.
            self.assertEqual(self.decision(r, "d.users")["remaining"], 2 - i)
        # A seen user is allowed while the set is full, and takes nothing.
        r = self.login(svc, "a@x.org", "192.0.2.7")
        self.assertEqual(r.status, 200)
        self.assertEqual(self.decision(r, "d.users")["remaining"], 0)
        r = self.login(svc, "d@x.org", "192.0.2.7")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "d.users")
        # A user already seen from this IP is not a new one.
        self.assertEqual(self.login(svc, "B@x.org", "192.0.2.7").status, 200)
        # Another IP has its own count.
        self.assertEqual(self.login(svc, "d@x.org", "192.0.2.8").status, 200)

    def test_distinct_memory_is_bounded_by_the_limit(self):
        (svc,) = self.seeded([policy("d.users", algorithm="distinct",
                                     key=("ip",), limit=5)])
        for i in range(200):
            self.login(svc, "user%d@x.org" % i, "192.0.2.7")
        # Beside the policy's key: its lockout marker and the event stream.
        (key,) = [k for k in self.redis.keys()
                  if k != "ag::events" and not k.endswith(":e")]
        self.assertEqual(self.redis.cmd("ZCARD", key), 5)
        self.assertLess(self.redis.cmd("MEMORY", "USAGE", key), 1024)
        for member in self.redis.cmd("ZRANGE", key, 0, -1):
            self.assertRegex(member, "^[0-9a-f]{32}$")

    def test_distinct_phones_per_ip_on_otp(self):
        (svc,) = self.seeded([policy("d.phones", endpoint="otp",
                                     algorithm="distinct", key=("ip",),
                                     limit=2)])
        self.assertEqual(self.otp(svc, "+48600100201", "192.0.2.7").status,
                         200)
        self.assertEqual(self.otp(svc, "+48600100202", "192.0.2.7").status,
                         200)
        self.assertEqual(self.otp(svc, "+48600100203", "192.0.2.7").status,
                         429)


class OtpVerifyTest(PolicyTest):
    def test_verify_has_its_own_limits(self):
        (svc,) = self.seeded([
            policy("v.phone", endpoint="otp_verify", key=("phone",),
                   limit=2),
            policy("s.phone", endpoint="otp", key=("phone",), limit=1)])
        self.assertEqual(self.otp(svc, "+48600100200", "192.0.2.1").status,
                         200)
        for _ in range(2):
            r = svc.post("/check-otp-verify",
                         {"phone": "+48 600 100 200", "ip": "192.0.2.1"})
            self.assertEqual(r.status, 200)
            self.assertEqual([d["policy"] for d in r.json["decisions"]],
                             ["v.phone"])
        r = svc.post("/check-otp-verify",
                     {"phone": "+48600100200", "ip": "192.0.2.1"})
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "v.phone")
        r = svc.post("/check-otp-verify", {"phone": "12", "ip": "192.0.2.1"})
        self.assertEqual(r.status, 400)
        self.assertTrue(r.json["error"].startswith("phone"))


class DefaultsTest(ServiceTest):
    def test_second_send_within_30s_is_denied_by_the_interval(self):
        svc = self.service()
        self.assertEqual(self.otp(svc, "+48600100200", "192.0.2.1").status,
                         200)
        r = self.otp(svc, "+48600100200", "192.0.2.2")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "otp.phone_interval")
        self.assertTrue(25 <= r.json["retry_after"] <= 30, r.json)


if __name__ == "__main__":
    unittest.main()
