# SPDX-License-Identifier: Apache-2.0
"""One-time codes: sending and verifying are limited apart, and a new code
never resets the count of failed verifications (NIST SP 800-63B rev 4
3.1.3: "generating a new authentication secret SHALL NOT reset the failed
authentication count")."""
import os
import unittest

from harness import PolicyTest, policy, wait_until, make_secret
from test_resilience import metric

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


CONVERSION = policy("o.conversion", endpoint="otp", key=("phone_prefix",),
                    algorithm="conversion", limit=10, window_s=3600,
                    min_ratio=0.2, block_s=600)


class RateLimitFieldsTest(PolicyTest):
    """The IETF RateLimit fields beside X-RateLimit-*."""

    def test_fields_name_each_policy_and_a_denial_shows_r0(self):
        (svc,) = self.seeded([SEND, VERIFY])
        r = self.otp(svc, PHONE, "192.0.2.1")
        self.assertEqual(r.header("ratelimit-policy"), '"o.send";q=10;w=3600')
        self.assertEqual(r.header("ratelimit"), '"o.send";r=9;t=3600')
        self.assertIsNotNone(r.header("x-ratelimit-limit"))
        for _ in range(3):
            svc.post("/check-otp-verify", {"phone": PHONE, "ip": "192.0.2.1"})
        r = svc.post("/check-otp-verify", {"phone": PHONE, "ip": "192.0.2.1"})
        self.assertEqual(r.status, 429)
        name, r_param, t_param = r.header("ratelimit").split(";")
        self.assertEqual((name, r_param), ('"v.phone"', "r=0"))
        self.assertGreaterEqual(int(r.header("retry-after")),
                                int(t_param[2:]))


class ConversionTest(PolicyTest):
    """The SMS pumping shield: a number range whose codes are not verified
    is stopped after `limit` sends; one whose codes are is never."""

    def setUp(self):
        super().setUp()
        self.svcs = self.seeded([CONVERSION], count=2)

    def send(self, i, phone):
        return self.otp(self.svcs[i % 2], phone, "192.0.2.%d" % (i % 200 + 1))

    def report(self, i, phone, verified=True):
        return self.svcs[i % 2].post("/report-otp", {
            "phone": phone, "ip": "192.0.2.1", "verified": verified})

    def test_a_range_with_half_its_codes_verified_is_never_blocked(self):
        for i in range(40):
            phone = "+4479111%05d" % i
            r = self.send(i, phone)
            self.assertEqual(r.status, 200, (i, r.json))
            if i % 2 == 0:
                self.assertEqual(self.report(i + 1, phone).status, 204)

    def test_a_range_never_verified_gets_exactly_limit_sends(self):
        answers = [self.send(i, "+4479222%05d" % i) for i in range(14)]
        self.assertEqual([r.status for r in answers], [200] * 10 + [429] * 4)
        denied = answers[10].json
        self.assertEqual(denied["policy"], "o.conversion")
        # Blocked: its retry is when the block ends, or later when the
        # window it judged by still says no (at the latest its end).
        self.assertGreaterEqual(denied["retry_after"], 590)
        self.assertLessEqual(denied["retry_after"], CONVERSION["window_s"])
        # Other ranges keep sending, on both instances.
        for i in range(4):
            self.assertEqual(self.send(i, "+4479333%05d" % i).status, 200)
        # Unverified expiries change nothing; the figures say so.
        self.assertEqual(self.report(0, "+447922200001", False).status, 204)
        self.assertEqual(self.send(1, "+447922200099").status, 429)

    def test_verifications_are_counted_by_country(self):
        self.send(0, "+48600100200")
        self.assertEqual(self.report(1, "+48600100200").status, 204)
        self.assertEqual(metric(self.svcs[1], "abuseguard_otp_verified_total",
                                country="+48"), 1)

    def test_bad_reports_are_400s_naming_the_field(self):
        for body, field in (
                ({"phone": "+48600100200", "ip": "192.0.2.1"}, "verified"),
                ({"phone": "+48600100200", "ip": "192.0.2.1",
                  "verified": "yes"}, "verified"),
                ({"phone": "600", "ip": "192.0.2.1", "verified": True},
                 "phone"),
                ({"phone": "+48600100200", "verified": True}, "ip")):
            with self.subTest(body):
                r = self.svcs[0].post("/report-otp", body)
                self.assertEqual(r.status, 400, r.raw)
                self.assertEqual(r.json["field"], field)


class AllowedNumberTest(PolicyTest):
    def test_an_allow_listed_numbers_reports_do_not_raise_its_range(self):
        token = make_secret(self.workdir, ("tok-" + "a" * 40).encode(),
                            name="admin.token")
        (svc,) = self.seeded([CONVERSION],
                             extra=["--admin-token-file", token])
        r = svc.post("/admin/lists/allow",
                     {"kind": "phone", "value": "+447944400000"},
                     headers={"Authorization": "Bearer tok-" + "a" * 40})
        self.assertEqual(r.status, 201, r.raw)
        # The test number sends and verifies a hundred codes, uncharged.
        for _ in range(100):
            self.assertEqual(self.otp(svc, "+447944400000",
                                      "192.0.2.1").status, 200)
            svc.post("/report-otp", {"phone": "+447944400000",
                                     "ip": "192.0.2.1", "verified": True})
        # Pumping the rest of its range is still stopped after 10.
        answers = [self.otp(svc, "+4479444%05d" % (i + 1),
                            "192.0.2.%d" % (i + 2)).status
                   for i in range(12)]
        self.assertEqual(answers, [200] * 10 + [429] * 2)


REPORT_TOKEN = "tok-" + "r" * 40
REPORT_AUTH = {"Authorization": "Bearer " + REPORT_TOKEN}


class ConversionReportTest(PolicyTest):
    """GET /admin/otp/conversion: exact across instances, behind the
    token, and the only place a group appears in clear."""

    def setUp(self):
        super().setUp()
        token = make_secret(self.workdir, REPORT_TOKEN.encode(),
                            name="admin.token")
        self.svcs = self.seeded([SEND], count=2,
                                extra=["--admin-token-file", token])

    def report(self, by, **q):
        query = "&".join("%s=%s" % kv for kv in (("by", by), *q.items()))
        return self.svcs[0].request("GET", "/admin/otp/conversion?" + query,
                                    headers=REPORT_AUTH)

    def test_figures_are_exact_across_instances_and_need_the_token(self):
        sends = ["+447911100%03d" % i for i in range(6)] + \
                ["+48600100%03d" % i for i in range(3)]
        for i, phone in enumerate(sends):
            self.assertEqual(self.otp(self.svcs[i % 2], phone,
                                      "192.0.2.%d" % (i + 1)).status, 200)
        for i, phone in enumerate(sends[:3] + sends[6:7]):
            self.assertEqual(self.svcs[(i + 1) % 2].post("/report-otp", {
                "phone": phone, "ip": "192.0.2.1", "verified": True}).status,
                204)

        def groups(by):
            r = self.report(by)
            self.assertEqual(r.status, 200, r.raw)
            return r.json["groups"]
        # Counted without waiting: the figures settle within a moment. Each
        # grouping is its own background write (a send tallies its country,
        # then its prefix), so both must have settled, sends and
        # verifications, before either is judged.
        def settled(by):
            got = groups(by)
            return (sum(g["sent"] for g in got),
                    sum(g["verified"] for g in got)) == (9, 4)
        self.assertTrue(wait_until(lambda: settled("country") and
                                   settled("phone_prefix"), 10))
        got = groups("country")
        self.assertEqual([(g["group"], g["sent"], g["verified"]) for g in got],
                         [("+44", 6, 3), ("+48", 3, 1)])
        self.assertEqual(got[0]["ratio"], 0.5)
        self.assertAlmostEqual(got[1]["ratio"], 1 / 3, places=12)
        self.assertEqual([(g["group"], g["sent"], g["verified"])
                          for g in groups("phone_prefix")],
                         [("+4479111", 6, 3), ("+4860010", 3, 1)])
        self.assertEqual(self.report("country").json["window_s"], 86400)
        # The token is needed.
        r = self.svcs[1].request("GET", "/admin/otp/conversion?by=country")
        self.assertEqual(r.status, 401)
        # Redis holds no group in clear: not in keys, fields or values.
        blob = []
        for k in self.redis.keys():
            blob.append(k)
            if k.startswith("ag::conv:"):
                blob.extend(self.redis.cmd("HGETALL", k))
        text = " ".join(blob)
        self.assertIn("ag::conv:country:", text)
        for clear in ("+44", "+48", "4479111", "4860010"):
            self.assertNotIn(clear, text)

    def test_bad_queries_are_400s_naming_the_argument(self):
        for query, field in (("by=region", "by"), ("window_s=60", "by"),
                             ("by=country&window_s=0", "window_s"),
                             ("by=country&window_s=999999999", "window_s"),
                             ("by=country&window_s=x", "window_s")):
            with self.subTest(query):
                r = self.svcs[0].request("GET",
                                         "/admin/otp/conversion?" + query,
                                         headers=REPORT_AUTH)
                self.assertEqual(r.status, 400, r.raw)
                self.assertEqual(r.json["field"], field)


if __name__ == "__main__":
    unittest.main()
