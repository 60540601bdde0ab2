# SPDX-License-Identifier: Apache-2.0
"""The client against a scripted fake service: how each answer becomes a
verdict or a report, retries, fail modes, what is sent, and the
kept-alive connections. The breaker's tests are in test_breaker.py."""

import hashlib
import os
import select
import socket
import threading
import time
import unittest
from unittest import mock

import abuseguard
from abuseguard import ArgumentError, Client, UsageError

from .fake_service import (ALLOWED, DROP, HANG, FakeClock, FakeService,
                           answering, reply, trickle)

NONCE = "c1." + "A" * 48
CAP_503 = {"error": "too many connections from this address"}


def closed_port():
    """A loopback port nothing listens on: connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def socket_readable_within(sock, seconds):
    """Waits for an event (the peer's FIN), not for time to pass."""
    ready, _, _ = select.select([sock], [], [], seconds)
    return bool(ready)


class Verdicts(unittest.TestCase):
    """Each status of a check's answer, as clients/README.md says."""

    def check(self, *actions, **options):
        with FakeService(answering(*actions)) as fake:
            with Client(fake.url, **options) as client:
                return client.check_login("ana@example.com", "203.0.113.7")

    def test_200_is_allow_with_the_lane(self):
        v = self.check(reply(200, dict(ALLOWED, device="trusted")))
        self.assertEqual((v.outcome, v.allowed, v.device, v.degraded,
                          v.failed, v.status, v.retry_after),
                         ("allow", True, "trusted", False, None, 200, 0))

    def test_degraded_200_is_allow_marked_degraded(self):
        v = self.check(reply(200, dict(ALLOWED, degraded=True)))
        self.assertEqual((v.outcome, v.degraded, v.failed),
                         ("allow", True, None))

    def test_429_challenge_carries_its_nonce(self):
        v = self.check(reply(429, {
            "allowed": False, "policy": "login.user_ip",
            "action": "challenge", "retry_after": 900,
            "challenge_nonce": NONCE, "device": "untrusted",
            "decisions": []}, headers={"Retry-After": "900"}))
        self.assertEqual((v.outcome, v.allowed, v.policy, v.retry_after,
                          v.challenge_nonce, v.status),
                         ("challenge", False, "login.user_ip", 900, NONCE,
                          429))

    def test_429_deny_has_no_nonce(self):
        v = self.check(reply(429, {
            "allowed": False, "policy": "login.ip", "action": "deny",
            "retry_after": 60, "device": "untrusted", "decisions": []}))
        self.assertEqual((v.outcome, v.policy, v.retry_after,
                          v.challenge_nonce), ("deny", "login.ip", 60, None))

    def test_429_without_retry_after_in_the_body_takes_the_header(self):
        v = self.check(reply(429, {"action": "deny"},
                             headers={"Retry-After": "7"}))
        self.assertEqual((v.outcome, v.retry_after), ("deny", 7))

    def test_403_deny_listed_is_deny(self):
        v = self.check(reply(403, {
            "allowed": False, "list": "deny", "device": "untrusted",
            "decisions": [{"list": "deny", "id": 7, "kind": "ip",
                           "allowed": False}]}))
        self.assertEqual((v.outcome, v.policy, v.retry_after, v.device,
                          v.status), ("deny", None, 0, "untrusted", 403))

    def test_503_degraded_is_deny_degraded(self):
        v = self.check(reply(503, {
            "allowed": False, "reason": "store_unavailable",
            "policy": "login.user_ip_closed", "retry_after": 1,
            "device": "untrusted", "degraded": True}))
        self.assertEqual((v.outcome, v.degraded, v.policy, v.retry_after,
                          v.failed, v.status),
                         ("deny", True, "login.user_ip_closed", 1, None, 503))

    def test_unknown_fields_are_ignored_and_kept_in_body(self):
        v = self.check(reply(429, {
            "allowed": False, "policy": "p", "action": "challenge",
            "retry_after": 5, "challenge_nonce": NONCE, "device": "trusted",
            "decisions": [], "future": {"x": [1, 2]}, "risk": 0.7}))
        self.assertEqual((v.outcome, v.device), ("challenge", "trusted"))
        self.assertEqual(v.body["future"], {"x": [1, 2]})

    def test_400_raises_usage_error_with_its_field(self):
        with self.assertRaises(UsageError) as caught:
            self.check(reply(400, {"error": "user is empty",
                                   "field": "user"}))
        e = caught.exception
        self.assertEqual((e.status, e.field, e.error),
                         (400, "user", "user is empty"))
        self.assertIsInstance(e, abuseguard.AbuseguardError)

    def test_other_4xx_raise_usage_errors_even_without_json(self):
        with self.assertRaises(UsageError) as caught:
            self.check(reply(431, raw=b"<html>too large</html>"))
        self.assertEqual((caught.exception.status, caught.exception.field),
                         (431, None))

    def test_a_200_that_is_no_json_object_is_unavailable_never_allow(self):
        # A proxy's or a captive portal's page, or a JSON array: not
        # abuseguard's allow. OTP fails closed, logins open (the default).
        for raw in (b"<html>welcome</html>", b"[1]", b"", b"null",
                    b'"allow"', b"{", b"\xff"):
            with self.subTest(raw=raw):
                with FakeService(answering(reply(200, raw=raw))) as fake:
                    with Client(fake.url) as client:
                        otp = client.check_otp("+14155550100", "203.0.113.7")
                        login = client.check_login("ana@example.com",
                                                   "203.0.113.7")
                self.assertEqual((otp.outcome, otp.failed, otp.status,
                                  otp.device, otp.degraded),
                                 ("deny", "unavailable", 200, None, False))
                self.assertEqual((login.outcome, login.failed, login.status),
                                 ("allow", "unavailable", 200))

    def test_a_redirect_or_an_unexpected_2xx_raises_without_a_field(self):
        # Not abuseguard's answer (the base URL leads elsewhere): loud,
        # with the status kept, and no field even if its body names one.
        for status in (301, 302, 307, 201, 204):
            with self.subTest(status=status):
                with self.assertRaises(UsageError) as caught:
                    self.check(reply(status, {"error": "moved",
                                              "field": "user"},
                                     headers={"Location": "/elsewhere"}))
                self.assertEqual((caught.exception.status,
                                  caught.exception.field,
                                  caught.exception.error is None),
                                 (status, None, False))

    def test_500_is_unavailable_and_the_fail_mode(self):
        v = self.check(reply(500, {"error": "internal"}))
        self.assertEqual((v.outcome, v.failed, v.status, v.policy, v.device),
                         ("allow", "unavailable", 500, None, None))


class Requests(unittest.TestCase):
    """What goes on the wire."""

    def test_unset_fields_are_left_out_never_null(self):
        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                client.check_login("ana@example.com", "203.0.113.7",
                                   password_fp="ab", password_breached=False)
                client.check_otp("+14155550100", "203.0.113.7",
                                 challenge_passed=NONCE, ref="r-1")
                client.report_login("ana@example.com", "203.0.113.7", True,
                                    device_token=None)
        login, otp, report = (r.json() for r in fake.requests)
        self.assertEqual(login, {"user": "ana@example.com",
                                 "ip": "203.0.113.7", "password_fp": "ab",
                                 "password_breached": False})
        self.assertEqual(otp, {"phone": "+14155550100", "ip": "203.0.113.7",
                               "challenge_passed": NONCE, "ref": "r-1"})
        self.assertEqual(report, {"user": "ana@example.com",
                                  "ip": "203.0.113.7", "success": True})
        self.assertEqual([r.path for r in fake.requests],
                         ["/check-login", "/check-otp", "/report-login"])
        self.assertEqual(fake.requests[0].headers["content-type"],
                         "application/json")

    def test_a_success_brings_back_the_nonce_its_check_passed(self):
        # Issue 40: it proves the login to the user's usual places; a
        # failure has no use for it and leaves it out.
        with FakeService(answering(reply(204, None))) as fake:
            with Client(fake.url) as client:
                client.report_login("ana@example.com", "203.0.113.7", True,
                                    challenge_passed=NONCE)
                client.report_login("ana@example.com", "203.0.113.7", False,
                                    challenge_passed=NONCE)
        success, failure = (r.json() for r in fake.requests)
        self.assertEqual(success["challenge_passed"], NONCE)
        self.assertNotIn("challenge_passed", failure)

    def test_a_required_field_left_none_is_the_services_400(self):
        def handler(request):
            self.assertNotIn("user", request.json())
            return reply(400, {"error": "user is required", "field": "user"})
        with FakeService(handler) as fake, Client(fake.url) as client:
            with self.assertRaises(UsageError) as caught:
                client.check_login(None, "203.0.113.7")
        self.assertEqual(caught.exception.field, "user")

    def test_a_body_over_64_kib_is_refused_before_sending(self):
        head = len('{"user":"","ip":"203.0.113.7"}')
        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                # The service's cap is 65536 bytes: that many still go.
                at_cap = "a" * (65536 - head)
                self.assertTrue(client.check_login(at_cap,
                                                   "203.0.113.7").allowed)
                self.assertEqual(len(fake.requests[0].body), 65536)
                for call in (
                        lambda: client.check_login(at_cap + "a",
                                                   "203.0.113.7"),
                        lambda: client.check_login("a" * 8_000_000,
                                                   "203.0.113.7"),
                        # UTF-8 bytes count, not characters: 2 each.
                        lambda: client.check_otp("+14155550100",
                                                 "203.0.113.7",
                                                 user="\u00e5" * 40000),
                        lambda: client.report_login("ana@example.com",
                                                    "203.0.113.7", False,
                                                    password_fp="f" * 70000)):
                    with self.assertRaises(UsageError) as caught:
                        call()
                    self.assertEqual((caught.exception.status,
                                      caught.exception.field), (413, "body"))
        self.assertEqual(len(fake.requests), 1)

    def test_a_lone_surrogate_is_refused_before_sending(self):
        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                for field, call in (
                        ("user", lambda: client.check_login(
                            "\ud800", "203.0.113.7")),
                        ("ref", lambda: client.check_otp(
                            "+14155550100", "203.0.113.7", ref="r\udfff")),
                        ("challenge_passed", lambda: client.check_otp_verify(
                            "+14155550100", "203.0.113.7",
                            challenge_passed="\udc80")),
                        ("device_token", lambda: client.report_login(
                            "ana@example.com", "203.0.113.7", True,
                            device_token="v1.\ud800")),
                        ("phone", lambda: client.report_otp(
                            "+1\ud800", "203.0.113.7", True))):
                    with self.subTest(field=field):
                        with self.assertRaises(UsageError) as caught:
                            call()
                        self.assertEqual((caught.exception.status,
                                          caught.exception.field),
                                         (0, field))
        self.assertEqual(fake.requests, [])

    def test_each_call_has_its_path_and_fields(self):
        with FakeService(answering(reply(204), reply(200, ALLOWED))) as fake:
            with Client(fake.url + "/ag/") as client:
                client.report_otp("+14155550100", "203.0.113.7", True,
                                  user="ana@example.com")
                client.check_otp_verify("+14155550100", "203.0.113.7")
        self.assertEqual([r.path for r in fake.requests],
                         ["/ag/report-otp", "/ag/check-otp-verify"])
        self.assertEqual(fake.requests[0].json(), {
            "phone": "+14155550100", "ip": "203.0.113.7",
            "user": "ana@example.com", "verified": True})


class Reports(unittest.TestCase):

    def report(self, *actions, **options):
        with FakeService(answering(*actions)) as fake:
            with Client(fake.url, **options) as client:
                return client.report_login("ana@example.com", "203.0.113.7",
                                           True)

    def test_a_success_answers_the_device_token(self):
        r = self.report(reply(200, {"device_token": "v1.abc",
                                    "expires_in": 7776000}))
        self.assertEqual((r.recorded, r.device_token, r.expires_in, r.failed,
                          r.status), (True, "v1.abc", 7776000, None, 200))

    def test_204_is_recorded_without_token(self):
        r = self.report(reply(204))
        self.assertEqual((r.recorded, r.device_token, r.expires_in),
                         (True, None, 0))

    def test_an_outage_is_not_recorded_and_does_not_raise(self):
        r = self.report(reply(502, raw=b"bad gateway"))
        self.assertEqual((r.recorded, r.failed, r.status),
                         (False, "unavailable", 502))
        r = self.report(HANG, timeout=0.1)
        self.assertEqual((r.recorded, r.failed, r.status),
                         (False, "timeout", 0))

    def test_a_400_raises(self):
        with self.assertRaises(UsageError) as caught:
            self.report(reply(400, {"error": "reason is only for a failure",
                                    "field": "reason"}))
        self.assertEqual(caught.exception.field, "reason")


class Failures(unittest.TestCase):
    """No answer: the fail modes, and which failures are retried."""

    def test_timeout_fails_open_for_login_and_closed_for_otp(self):
        with FakeService(answering(HANG)) as fake:
            with Client(fake.url, timeout=0.1) as client:
                login = client.check_login("ana@example.com", "203.0.113.7")
                otp = client.check_otp("+14155550100", "203.0.113.7")
                verify = client.check_otp_verify("+14155550100",
                                                 "203.0.113.7")
        self.assertEqual((login.outcome, login.allowed, login.failed,
                          login.status), ("allow", True, "timeout", 0))
        self.assertEqual((otp.outcome, otp.failed), ("deny", "timeout"))
        self.assertEqual((verify.outcome, verify.failed), ("deny", "timeout"))
        # A timeout is never retried: the request may have been counted.
        self.assertEqual(len(fake.requests), 3)

    def test_fail_modes_can_be_switched(self):
        with FakeService(answering(HANG)) as fake:
            with Client(fake.url, timeout=0.1, fail_open_login=False,
                        fail_open_otp=True) as client:
                login = client.check_login("ana@example.com", "203.0.113.7")
                otp = client.check_otp("+14155550100", "203.0.113.7")
        self.assertEqual((login.outcome, otp.outcome), ("deny", "allow"))

    def test_the_deadline_bounds_an_answer_trickled_byte_by_byte(self):
        body = b'{"allowed": true, "device": "untrusted", "decisions": []}'
        with FakeService(answering(trickle(200, body, 0.02))) as fake:
            with Client(fake.url, timeout=0.3) as client:
                started = time.monotonic()
                v = client.check_login("ana@example.com", "203.0.113.7")
                took = time.monotonic() - started
        # Each byte comes within 20 ms; the whole answer would take 1.1 s.
        self.assertEqual(v.failed, "timeout")
        self.assertLess(took, 1.0)

    def test_refused_connection_is_unavailable(self):
        with Client("http://127.0.0.1:%d" % closed_port()) as client:
            login = client.check_login("ana@example.com", "203.0.113.7")
            otp = client.check_otp("+14155550100", "203.0.113.7")
            report = client.report_otp("+14155550100", "203.0.113.7", True)
        self.assertEqual((login.outcome, login.failed, login.status),
                         ("allow", "unavailable", 0))
        self.assertEqual((otp.outcome, otp.failed), ("deny", "unavailable"))
        self.assertEqual((report.recorded, report.failed),
                         (False, "unavailable"))

    def test_refused_connection_is_retried(self):
        real = socket.create_connection
        calls = []

        def refuse_twice(*args, **kwargs):
            calls.append(args)
            if len(calls) <= 2:
                raise ConnectionRefusedError(111, "refused")
            return real(*args, **kwargs)

        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with mock.patch.object(socket, "create_connection",
                                   refuse_twice), Client(fake.url) as client:
                v = client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual((v.outcome, v.failed, len(calls)), ("allow", None, 3))

    def test_refused_more_often_than_the_retries_is_unavailable(self):
        calls = []

        def refuse(*args, **kwargs):
            calls.append(args)
            raise ConnectionRefusedError(111, "refused")

        with mock.patch.object(socket, "create_connection", refuse):
            with Client("http://127.0.0.1:9", retries=1) as client:
                v = client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual((v.failed, len(calls)), ("unavailable", 2))

    def test_connection_cap_503_is_retried_then_succeeds(self):
        with FakeService(answering(reply(503, CAP_503, close=True),
                                   reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                v = client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual((v.outcome, v.failed, v.status), ("allow", None, 200))
        self.assertEqual(len(fake.requests), 2)

    def test_a_draining_instances_503_is_retried(self):
        with FakeService(answering(reply(503, {"error": "shutting down"}),
                                   reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                v = client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual((v.outcome, v.failed, v.status), ("allow", None,
                                                           200))
        self.assertEqual(len(fake.requests), 2)

    def test_connection_cap_503_after_the_last_try_is_unavailable(self):
        cap = reply(503, {"error": "too many connections; try again"},
                    close=True)
        with FakeService(answering(cap)) as fake:
            with Client(fake.url, retries=2) as client:
                otp = client.check_otp("+14155550100", "203.0.113.7")
                report = client.report_otp("+14155550100", "203.0.113.7",
                                           True)
        self.assertEqual((otp.outcome, otp.failed, otp.status),
                         ("deny", "unavailable", 503))
        self.assertEqual((report.recorded, report.failed), (False,
                                                            "unavailable"))
        self.assertEqual(len(fake.requests), 6)

    def test_other_503s_are_not_retried(self):
        with FakeService(answering(reply(503, {"error": "policies are not "
                                                        "loaded yet"}),
                                   reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                v = client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual((v.failed, v.status), ("unavailable", 503))
        self.assertEqual(len(fake.requests), 1)

    def test_a_connection_closed_without_answer_is_not_retried(self):
        with FakeService(answering(DROP, reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                v = client.check_otp("+14155550100", "203.0.113.7")
        self.assertEqual((v.outcome, v.failed), ("deny", "unavailable"))
        self.assertEqual(len(fake.requests), 1)

    def refused_with_fake_time(self, overrun=0.0, **options):
        """A check against a refusing address, the deadline's clock (the
        real monotonic one in the client) replaced by a fake that only
        ``sleep`` moves, by the pause plus ``overrun``: the outcome then
        never depends on the scheduler. Returns the verdict, the fake
        seconds spent, and the connects tried."""
        fake_time = FakeTime()
        calls = []

        def refuse(*args, **kwargs):
            calls.append(fake_time.now)
            raise ConnectionRefusedError(111, "refused")
        fake_time.overrun = overrun
        with mock.patch.object(socket, "create_connection", refuse), \
                mock.patch("abuseguard._client.time", fake_time), \
                mock.patch("abuseguard._transport.time", fake_time):
            with Client("http://127.0.0.1:9", **options) as client:
                started = fake_time.now
                v = client.check_login("ana@example.com", "203.0.113.7")
        return v, fake_time.now - started, calls

    def test_retries_never_pass_the_deadline(self):
        v, spent, calls = self.refused_with_fake_time(timeout=0.05,
                                                      retries=1000)
        self.assertEqual(v.failed, "unavailable")
        self.assertLess(spent, 0.05)
        self.assertGreater(len(calls), 1)

    def test_a_backoff_that_would_end_past_the_deadline_is_not_slept(self):
        # 20 ms times 2 to the try: some pause soon exceeds what is left
        # of 0.05 s, and the call ends then, unavailable, without it.
        with mock.patch("random.uniform", lambda low, high: high):
            v, spent, calls = self.refused_with_fake_time(timeout=0.05,
                                                          retries=1000)
        self.assertEqual((v.failed, calls), ("unavailable", [0.0, 0.02]))
        self.assertEqual(spent, 0.02)  # 0.02 + 0.04 would pass 0.05

    def test_a_sleep_that_overran_the_deadline_is_still_unavailable(self):
        # The scheduler woke the client late, past the deadline: nothing
        # was sent, and the refusal, not a timeout, is why.
        v, spent, calls = self.refused_with_fake_time(overrun=1.0,
                                                      timeout=0.05,
                                                      retries=1000)
        self.assertEqual((v.failed, len(calls)), ("unavailable", 1))


class FakeTime:
    """Stands in for the ``time`` module of the client and transport:
    ``monotonic`` moves only when the client sleeps."""

    def __init__(self):
        self.now = 0.0
        self.overrun = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds + self.overrun


class Connections(unittest.TestCase):
    """The pool of kept-alive connections."""

    def test_calls_reuse_one_kept_alive_connection(self):
        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                for _ in range(5):
                    client.check_login("ana@example.com", "203.0.113.7")
                client.report_login("ana@example.com", "203.0.113.7", False)
        self.assertEqual(len(fake.requests), 6)
        self.assertEqual({r.connection for r in fake.requests}, {0})

    def test_idle_connection_past_the_idle_timeout_is_closed_not_reused(self):
        clock = FakeClock()
        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with Client(fake.url, idle_timeout=5.0, clock=clock) as client:
                client.check_login("ana@example.com", "203.0.113.7")
                clock.now += 4.9
                client.check_login("ana@example.com", "203.0.113.7")
                clock.now += 5.0
                client.check_login("ana@example.com", "203.0.113.7")
                fake.wait_until(lambda: fake.connections[0].closed_by_client)
        self.assertEqual([r.connection for r in fake.requests], [0, 0, 1])

    def test_idle_connection_the_server_closed_is_discarded(self):
        with FakeService(answering(reply(200, ALLOWED, then_close=True),
                                   reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                client.check_login("ana@example.com", "203.0.113.7")
                # Wait until the server's FIN has reached the idle socket.
                idle = client._pool._idle[0].sock
                self.assertEqual(socket_readable_within(idle, 5.0), True)
                v = client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual((v.outcome, v.failed), ("allow", None))
        self.assertEqual([r.connection for r in fake.requests], [0, 1])

    def test_a_forked_child_never_reuses_the_parents_connections(self):
        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                client.check_login("ana@example.com", "203.0.113.7")
                with mock.patch("os.getpid", return_value=os.getpid() + 1):
                    client.check_login("ana@example.com", "203.0.113.7")
                    client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual([r.connection for r in fake.requests], [0, 1, 1])

    def test_connection_close_answers_are_not_kept(self):
        with FakeService(answering(reply(200, ALLOWED, close=True))) as fake:
            with Client(fake.url) as client:
                client.check_login("ana@example.com", "203.0.113.7")
                client.check_login("ana@example.com", "203.0.113.7")
        self.assertEqual([r.connection for r in fake.requests], [0, 1])

    def test_threads_share_one_client(self):
        with FakeService(answering(reply(200, ALLOWED))) as fake:
            with Client(fake.url) as client:
                verdicts = []

                def work():
                    for _ in range(20):
                        verdicts.append(client.check_login(
                            "ana@example.com", "203.0.113.7"))
                threads = [threading.Thread(target=work) for _ in range(8)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        self.assertEqual(len(verdicts), 160)
        self.assertTrue(all(v.allowed and v.failed is None
                            for v in verdicts))
        self.assertLessEqual(len(fake.connections), 8)


class Breached(unittest.TestCase):
    """The range lookup's tri-state."""

    PASSWORD = "correct horse battery staple"
    SHA1 = hashlib.sha1(PASSWORD.encode()).hexdigest().upper()

    def lookup(self, *actions, **kwargs):
        with FakeService(answering(*actions)) as fake:
            with Client(fake.url) as client:
                result = client.breached(self.PASSWORD, **kwargs)
        return result, fake.requests

    def range_body(self, count):
        lines = ["0018A45C4D1DEF81644B54AB7F969B88D65:1",
                 self.SHA1[5:] + ":%d" % count,
                 "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:0"]
        return "\r\n".join(lines).encode()

    def test_a_suffix_with_a_count_is_breached(self):
        result, requests = self.lookup(reply(200, raw=self.range_body(42)))
        self.assertEqual(result, "breached")
        # Only the prefix leaves; padding is asked for.
        self.assertEqual(requests[0].path, "/range/" + self.SHA1[:5])
        self.assertEqual(requests[0].method, "GET")
        self.assertEqual(requests[0].headers["add-padding"], "true")
        self.assertNotIn(self.SHA1[5:].encode(), requests[0].body)

    def test_a_padding_line_with_count_0_is_clean(self):
        result, _ = self.lookup(reply(200, raw=self.range_body(0)))
        self.assertEqual(result, "clean")

    def test_a_range_without_the_suffix_is_clean(self):
        result, _ = self.lookup(reply(200, raw=b"0018A45C4D1DEF81644B54AB7F9"
                                               b"69B88D65:3\r\nABC:0"))
        self.assertEqual(result, "clean")
        result, _ = self.lookup(reply(200, raw=b""))
        self.assertEqual(result, "clean")

    def test_404_no_corpus_is_unknown(self):
        result, _ = self.lookup(reply(404, {"error": "mode sha1: no SHA-1 "
                                                     "corpus is loaded",
                                            "field": "mode"}))
        self.assertEqual(result, "unknown")

    def test_a_lone_surrogate_password_is_unknown_and_sends_nothing(self):
        with FakeService(answering(reply(200, raw=b""))) as fake:
            with Client(fake.url) as client:
                self.assertEqual(client.breached("pw\ud800"), "unknown")
        self.assertEqual(fake.requests, [])

    def test_no_answer_is_unknown(self):
        result, _ = self.lookup(HANG, timeout=0.1)
        self.assertEqual(result, "unknown")
        result, _ = self.lookup(reply(500, {"error": "x"}))
        self.assertEqual(result, "unknown")


class Options(unittest.TestCase):

    def test_bad_options_raise_argument_errors(self):
        for url, options in [
                ("https://127.0.0.1:8080", {}),
                ("127.0.0.1:8080", {}),
                ("http://127.0.0.1:99999", {}),
                ("http://127.0.0.1:8080?x=1", {}),
                ("http://127.0.0.1:8080", {"timeout": 0}),
                ("http://127.0.0.1:8080", {"breaker_failures": 0}),
                ("http://127.0.0.1:8080", {"retries": -1}),
                ("http://127.0.0.1:8080", {"retries": 1.5}),
                ("http://127.0.0.1:8080", {"idle_timeout": -1})]:
            with self.subTest(url=url, options=options):
                with self.assertRaises(ArgumentError):
                    Client(url, **options)

    def test_argument_errors_are_value_errors(self):
        self.assertTrue(issubclass(ArgumentError, ValueError))


if __name__ == "__main__":
    unittest.main()
