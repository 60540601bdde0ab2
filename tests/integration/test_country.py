# SPDX-License-Identifier: Apache-2.0
"""The country key and country / number-range list entries (issue 17, the
SMS pumping shield's first part), on two instances sharing one Redis and
one database: every number of one calling code is one key; deny entries
answer 403 everywhere; bad values are 400s naming the field; no calling
code reaches Redis in clear."""
import os
import unittest

from harness import PolicyTest, digest, policy, wait_until, make_secret
from test_resilience import metric

TOKEN = "tok-" + "c" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
COUNTRY = policy("o.country", endpoint="otp", key=("country",), limit=3,
                 window_s=60)


class CountryTest(PolicyTest):
    def setUp(self):
        super().setUp()
        token = make_secret(self.workdir, TOKEN.encode(), name="admin.token")
        self.svcs = self.seeded([COUNTRY], count=2,
                                extra=["--admin-token-file", token])

    def send(self, i, phone, ip="192.0.2.1"):
        return self.otp(self.svcs[i % 2], phone, ip)

    def test_every_number_of_a_calling_code_is_one_key(self):
        uk = ["+447911%06d" % n for n in range(5)]
        answers = [self.send(i, p).status for i, p in enumerate(uk)]
        self.assertEqual(answers, [200, 200, 200, 429, 429])
        # Codes sent (allowed checks) are counted by calling code.
        self.assertEqual(sum(metric(s, "abuseguard_otp_sends_total",
                                    country="+44") for s in self.svcs), 3)
        # Another country has its own budget.
        self.assertEqual(self.send(0, "+48600100200").status, 200)
        r = self.send(1, "+48600100201")
        self.assertEqual(self.decision(r, "o.country")["remaining"], 1)
        # +1 is NANP: Canada and the US share a key.
        self.assertEqual([self.send(i, p).status for i, p in enumerate(
            ["+14165550100", "+12125550100", "+16045550100",
             "+13055550100"])], [200, 200, 200, 429])

    def test_a_number_under_no_calling_code_is_400_naming_phone(self):
        r = self.send(0, "+2801234567")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["field"], "phone")
        self.assertIn("calling code", r.json["error"])

    def test_country_and_range_deny_entries_answer_403_everywhere(self):
        svc = self.svcs[0]
        for body in ({"kind": "country", "value": "+44"},
                     {"kind": "phone_prefix", "value": "+4860"}):
            r = svc.request("POST", "/admin/lists/deny", body, headers=AUTH)
            self.assertEqual(r.status, 201, r.raw)
            self.assertEqual(r.json["entry"]["value"], body["value"])
        # Each entry awaited on its own: an instance may have taken the
        # first change and not yet the second.
        for i in range(2):
            for number in ("+447700900123", "+48600100200"):
                self.assertTrue(wait_until(
                    lambda: self.send(i, number).status == 403, 10), number)
            self.assertEqual(self.send(i, "+48500100200").status, 200)
        r = svc.request("GET", "/admin/lists/deny", headers=AUTH)
        self.assertEqual(sorted(e["value"] for e in r.json["entries"]),
                         ["+44", "+4860"])

    def test_bad_country_and_range_values_are_400_naming_value(self):
        svc = self.svcs[0]
        for body in ({"kind": "country", "value": "+4"},
                     {"kind": "country", "value": "44"},
                     {"kind": "country", "value": "+28"},
                     {"kind": "phone_prefix", "value": "+4"},
                     {"kind": "phone_prefix", "value": "4860"},
                     {"kind": "phone_prefix", "value": 4860}):
            with self.subTest(body):
                r = svc.request("POST", "/admin/lists/deny", body,
                                headers=AUTH)
                self.assertEqual(r.status, 400, r.raw)
                self.assertEqual(r.json["field"], "value")
        r = svc.request("POST", "/admin/lists/deny",
                        {"kind": "region", "value": "+44"}, headers=AUTH)
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["field"], "kind")

    def test_no_calling_code_reaches_redis_in_clear(self):
        for i, p in enumerate(["+447911123456", "+48600100200",
                               "+14165550100"]):
            self.send(i, p)
        keys = self.redis.keys()
        # Each calling code's key is its keyed digest, nothing in clear.
        want = sorted("ag:o.country:" + digest(self.secret, [("country", c)])
                      for c in ("+1", "+44", "+48"))
        self.assertEqual(sorted(k for k in keys
                                if k.startswith("ag:o.country:")), want)
        self.assertFalse([k for k in keys if "+" in k], keys)


if __name__ == "__main__":
    unittest.main()
