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

    def test_a_redirect_or_unexpected_2xx_is_an_answer_that_resets_it(self):
        for answer in (reply(302, raw=b"", headers={"Location": "/x"}),
                       reply(201, ALLOWED)):
            for _ in range(2):
                self.handler.action = FAILING
                self.assertEqual(self.login().failed, "unavailable")
            self.handler.action = answer
            with self.assertRaises(UsageError) as caught:
                self.login()
            self.assertIsNone(caught.exception.field)
        self.handler.action = FAILING
        for _ in range(2):
            self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(self.login().failed, "breaker_open")

    def test_a_200_that_is_no_json_object_counts_as_no_answer(self):
        self.handler.action = reply(200, raw=b"<html>portal</html>")
        for _ in range(3):
            self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(self.login().failed, "breaker_open")
        self.assertEqual(len(self.fake.requests), 3)

    def test_what_is_refused_before_sending_does_not_count(self):
        for _ in range(2):
            self.assertEqual(self.login().failed, "unavailable")
        for user in ("a" * 70000, "\ud800"):
            with self.assertRaises(UsageError):
                self.client.check_login(user, "203.0.113.7")
        self.assertEqual(self.client.breached("\ud800"), "unknown")
        # Neither reset the count nor added to it: one more failure opens.
        self.assertEqual(self.login().failed, "unavailable")
        self.assertEqual(self.login().failed, "breaker_open")
        # Open or not, such a call is still the caller's mistake.
        with self.assertRaises(UsageError) as caught:
            self.client.check_login("a" * 70000, "203.0.113.7")
        self.assertEqual(caught.exception.status, 413)
        self.assertEqual(len(self.fake.requests), 3)


class BreakerAlone(unittest.TestCase):
    """The breaker object driven directly: calls interleaved by hand (a
    pass taken, its outcome recorded later), time moved by the clock."""

    def setUp(self):
        self.clock = FakeClock()

    def test_lets_one_trial_through_while_half_open(self):
        breaker = Breaker(1, 5.0, self.clock)
        breaker.record(breaker.admit(), False)
        self.assertIsNone(breaker.admit())
        self.clock.now += 5.0
        trial = breaker.admit()
        self.assertTrue(trial.trial)
        self.assertIsNone(breaker.admit())  # another thread meanwhile
        breaker.record(trial, True)
        self.assertFalse(breaker.admit().trial)
        self.assertIsNotNone(breaker.admit())

    def test_a_late_failure_while_open_does_not_push_the_period_back(self):
        breaker = Breaker(2, 10.0, self.clock)
        first, second, slow = (breaker.admit() for _ in range(3))
        breaker.record(first, False)
        breaker.record(second, False)  # opens at 1000.0
        self.assertIsNone(breaker.admit())
        self.clock.now += 5.0
        breaker.record(slow, False)  # in flight since before it opened
        self.clock.now += 4.999
        self.assertIsNone(breaker.admit())
        self.clock.now += 0.001  # 10 s after it opened, not after `slow`
        self.assertTrue(breaker.admit().trial)

    def test_a_late_failure_while_half_open_starts_no_second_trial(self):
        breaker = Breaker(1, 10.0, self.clock)
        first, slow = breaker.admit(), breaker.admit()
        breaker.record(first, False)
        self.clock.now += 10.0
        trial = breaker.admit()
        self.assertTrue(trial.trial)
        breaker.record(slow, False)  # not the trial: decides nothing
        self.assertIsNone(breaker.admit())
        self.clock.now += 10.0  # a period later, the trial is still out
        self.assertIsNone(breaker.admit())
        breaker.record(trial, True)  # the trial's own outcome decides
        self.assertFalse(breaker.admit().trial)

    def test_the_trials_failure_opens_it_for_a_new_period(self):
        breaker = Breaker(1, 10.0, self.clock)
        breaker.record(breaker.admit(), False)
        self.clock.now += 10.0
        trial = breaker.admit()
        self.clock.now += 3.0
        breaker.record(trial, False)  # a new period from now, 1013.0
        self.clock.now += 9.999
        self.assertIsNone(breaker.admit())
        self.clock.now += 0.001
        self.assertTrue(breaker.admit().trial)

    def test_a_late_answer_closes_it_and_the_trial_then_counts_as_a_call(self):
        breaker = Breaker(2, 10.0, self.clock)
        first, second, slow = (breaker.admit() for _ in range(3))
        breaker.record(first, False)
        breaker.record(second, False)
        self.clock.now += 10.0
        trial = breaker.admit()
        breaker.record(slow, True)  # the service answers again
        self.assertFalse(breaker.admit().trial)
        breaker.record(trial, False)  # one failure in a row, of two
        self.assertIsNotNone(breaker.admit())
        breaker.record(breaker.admit(), False)
        self.assertIsNone(breaker.admit())


if __name__ == "__main__":
    unittest.main()
