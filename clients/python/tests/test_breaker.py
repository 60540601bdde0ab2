# SPDX-License-Identifier: Apache-2.0
"""The circuit breaker, through the client against a fake service and on
its own, moved by an injected clock (no test sleeps)."""

import unittest

from abuseguard import Client, UsageError
from abuseguard._breaker import Breaker

from .fake_service import ALLOWED, FakeClock, FakeService, reply

FAILING = reply(500, {"error": "internal"})


class Switchable:
    """A handler whose answer the test switches."""

    def __init__(self, action):
        self.action = action

    def __call__(self, request):
        return self.action


class BreakerThroughTheClient(unittest.TestCase):

    def setUp(self):
        self.clock = FakeClock()
        self.handler = Switchable(FAILING)
        self.fake = FakeService(self.handler)
        self.client = Client(self.fake.url, breaker_failures=3,
                             breaker_open=10.0, clock=self.clock)
        self.addCleanup(self.fake.close)
        self.addCleanup(self.client.close)

    def login(self):
        return self.client.check_login("ana@example.com", "203.0.113.7")

    def open_it(self):
        for _ in range(3):
            self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(len(self.fake.requests), 3)

    def test_opens_after_n_failures_and_makes_no_call_while_open(self):
        self.open_it()
        self.clock.now += 9.999
        login = self.login()
        otp = self.client.check_otp("+14155550100", "203.0.113.7")
        report = self.client.report_login("ana@example.com", "203.0.113.7",
                                          False)
        breached = self.client.breached("hunter2")
        self.assertEqual((login.outcome, login.failed, login.status),
                         ("allow", "breaker_open", 0))
        self.assertEqual((otp.outcome, otp.failed), ("deny", "breaker_open"))
        self.assertEqual((report.recorded, report.failed),
                         (False, "breaker_open"))
        self.assertEqual(breached, "unknown")
        self.assertEqual(len(self.fake.requests), 3)

    def test_half_open_after_the_period_and_an_answer_closes_it(self):
        self.open_it()
        self.handler.action = reply(200, ALLOWED)
        self.clock.now += 10.0
        self.assertEqual(self.login().failed, None)
        self.assertEqual(len(self.fake.requests), 4)
        # Closed: calls go out again, and the count starts afresh.
        self.handler.action = FAILING
        for _ in range(2):
            self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(len(self.fake.requests), 6)

    def test_half_open_call_without_answer_opens_it_for_another_period(self):
        self.open_it()
        self.clock.now += 10.0
        self.assertEqual(self.login().failed, "unavailable")  # the probe
        self.assertEqual(self.login().failed, "breaker_open")
        self.clock.now += 9.0
        self.assertEqual(self.login().failed, "breaker_open")
        self.assertEqual(len(self.fake.requests), 4)
        self.clock.now += 1.0
        self.handler.action = reply(200, ALLOWED)
        self.assertEqual(self.login().failed, None)

    def test_any_answer_resets_the_count(self):
        for answer in (reply(400, {"error": "user is empty",
                                   "field": "user"}),
                       reply(503, {"degraded": True, "allowed": False,
                                   "policy": "p", "retry_after": 1}),
                       reply(200, dict(ALLOWED, degraded=True))):
            for _ in range(2):
                self.handler.action = FAILING
                self.assertEqual(self.login().failed, "unavailable")
            self.handler.action = answer
            try:
                self.login()
            except UsageError:
                pass
        # Two failures after each answer: never three in a row.
        self.handler.action = FAILING
        self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(self.login().failed, "breaker_open")


class BreakerAlone(unittest.TestCase):

    def test_lets_one_probe_through_while_half_open(self):
        clock = FakeClock()
        breaker = Breaker(1, 5.0, clock)
        self.assertTrue(breaker.allow())
        breaker.record(False)
        self.assertFalse(breaker.allow())
        clock.now += 5.0
        self.assertTrue(breaker.allow())   # the probe
        self.assertFalse(breaker.allow())  # another thread meanwhile
        breaker.record(True)
        self.assertTrue(breaker.allow())
        self.assertTrue(breaker.allow())


if __name__ == "__main__":
    unittest.main()
