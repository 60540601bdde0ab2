# SPDX-License-Identifier: Apache-2.0
"""The client: the five calls and the range lookup, each bounded by one
deadline, retried only when the request cannot have been counted, and
guarded by the circuit breaker.

Thread-safety: a ``Client`` may be shared by all the threads of a
process (a WSGI server's, say); its pool and its breaker lock what they
share.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from typing import (Any, Callable, Dict, Literal, Optional, Tuple, TypeVar,
                    Union)
from urllib.parse import urlsplit

from . import _answers
from ._answers import Failed, Report, Verdict
from ._breaker import Breaker
from ._errors import ArgumentError, UsageError
from ._transport import Answer, Pool, TransportFailure
from ._version import __version__

Breached = Literal["breached", "clean", "unknown"]
"""What a range lookup found."""

BACKOFF = 0.020
"""Seconds: a retry waits up to this times 2 to the number of earlier
retries (full jitter), never past the call's deadline."""

MAX_REQUEST_BODY = 65536
"""Bytes: the service's body cap. A longer body is refused here, before
sending: the service would answer 413 and close while it is still being
written, which looks like an outage and would fail a login open."""

_T = TypeVar("_T")
_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json",
    "User-Agent": "abuseguard-python/" + __version__,
}
_RANGE_HEADERS = {
    # Random lines of count 0 up to some 1 000: the answer's size then says
    # little of the prefix to whoever sees the encrypted traffic.
    "Add-Padding": "true",
    "User-Agent": _HEADERS["User-Agent"],
}


class Client:
    """A client of one abuseguard service.

    ``base_url``: ``http://host:port``, with an optional path prefix (a
    reverse proxy's). All times are seconds, as in the standard library.

    ``timeout`` (0.5): one call's deadline, retries included: above the
    service's own degraded answer (``--redis-timeout-ms``, 50 ms), so that
    a hung Redis gives a degraded answer rather than a client timeout.
    ``fail_open_login`` (True): a login check that got no answer is
    allowed. ``fail_open_otp`` (False): an OTP check (send or verify) that
    got no answer is denied. ``breaker_failures`` (5) calls in a row
    without an answer open the breaker for ``breaker_open`` (10.0) seconds;
    then one call tries. ``retries`` (2): at most, and only for a request
    that cannot have been counted (refused, or the connection cap's 503).
    ``idle_timeout`` (5.0): a kept-alive connection idle this long is
    closed, not reused (below the service's ``--conn-timeout-s``).
    ``clock`` (``time.monotonic``): seconds, the breaker's and the idle
    timeout's time source, so that tests move it instead of sleeping. A
    call's own deadline (``timeout``) always runs on the real monotonic
    clock, whatever ``clock`` is given.

    Calls never raise for an outage: a check returns its fail mode with
    ``failed`` set, a report ``recorded=False``. A ``UsageError`` is raised
    for an answer that says the request was wrong (a 400 naming the
    field), and before sending for a body over ``MAX_REQUEST_BODY`` bytes
    (status 413, field ``"body"``) or a string that is no UTF-8 text (a
    lone surrogate: status 0, the field's wire name); neither counts for
    the breaker. ``close()`` (or ``with Client(...) as client:``) closes
    the idle connections.
    """

    def __init__(self, base_url: str, *, timeout: float = 0.5,
                 fail_open_login: bool = True, fail_open_otp: bool = False,
                 breaker_failures: int = 5, breaker_open: float = 10.0,
                 retries: int = 2, idle_timeout: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        host, port, self._prefix = _parse_base_url(base_url)
        _require(timeout > 0, "timeout", "timeout must be above 0")
        _require(_count(breaker_failures) and breaker_failures >= 1,
                 "breaker_failures",
                 "breaker_failures must be a whole number from 1")
        _require(breaker_open >= 0, "breaker_open",
                 "breaker_open must be 0 or more")
        _require(_count(retries), "retries",
                 "retries must be a whole number from 0")
        _require(idle_timeout >= 0, "idle_timeout",
                 "idle_timeout must be 0 or more")
        self._timeout = float(timeout)
        self._fail_open_login = bool(fail_open_login)
        self._fail_open_otp = bool(fail_open_otp)
        self._retries = retries
        self._breaker = Breaker(breaker_failures, breaker_open, clock)
        self._pool = Pool(host, port, idle_timeout, clock)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the idle connections; the client stays usable."""
        self._pool.close()

    def check_login(self, user: str, ip: str, *,
                    device: Optional[str] = None,
                    device_token: Optional[str] = None,
                    password_fp: Optional[str] = None,
                    password_breached: Optional[bool] = None,
                    challenge_passed: Union[str, bool, None] = None,
                    ref: Optional[str] = None) -> Verdict:
        """Asks whether a login attempt may go on, before the password is
        verified. ``device_token``: the user's cookie
        (``device_token_from_cookies``); ``password_fp``:
        ``password_fingerprint`` of the password tried;
        ``password_breached``: True when ``breached`` found it;
        ``challenge_passed``: the ``challenge_nonce`` of the answer that
        asked, once your server verified the challenge; ``ref``: your own
        reference (1-64 printable ASCII), echoed in the events caused."""
        return self._check("/check-login", self._fail_open_login, {
            "user": user, "ip": ip, "device": device,
            "device_token": device_token, "password_fp": password_fp,
            "password_breached": password_breached,
            "challenge_passed": challenge_passed, "ref": ref})

    def report_login(self, user: str, ip: str, success: bool, *,
                     reason: Optional[str] = None,
                     method: Optional[str] = None,
                     password_fp: Optional[str] = None,
                     password_breached: Optional[bool] = None,
                     device_token: Optional[str] = None,
                     challenge_passed: Optional[str] = None,
                     ref: Optional[str] = None) -> Report:
        """Tells how a password check went. On a failure ``reason`` is
        ``"bad_password"`` (the default), ``"unknown_user"`` or
        ``"second_factor_failed"``; on a success ``method`` may be
        ``"recovery"`` (your own account recovery went through),
        ``challenge_passed`` the ``challenge_nonce`` its check passed (it
        proves the login, which then teaches the user's usual places a
        new country), and the report's ``device_token`` is the one to keep
        (``device_cookie``)."""
        return self._report("/report-login", {
            "user": user, "ip": ip, "success": success, "reason": reason,
            "method": method, "password_fp": password_fp,
            "password_breached": password_breached,
            "device_token": device_token,
            "challenge_passed": challenge_passed if success else None,
            "ref": ref})

    def check_otp(self, phone: str, ip: str, *, user: Optional[str] = None,
                  device_token: Optional[str] = None,
                  challenge_passed: Union[str, bool, None] = None,
                  ref: Optional[str] = None) -> Verdict:
        """Asks whether a one-time code may be sent to ``phone`` (E.164).
        Without an answer it is denied unless ``fail_open_otp``: every
        code sent costs money, and SMS pumping is what this stops."""
        return self._check("/check-otp", self._fail_open_otp,
                           _otp_fields(phone, ip, user, device_token,
                                       challenge_passed, ref))

    def check_otp_verify(self, phone: str, ip: str, *,
                         user: Optional[str] = None,
                         device_token: Optional[str] = None,
                         challenge_passed: Union[str, bool, None] = None,
                         ref: Optional[str] = None) -> Verdict:
        """Asks whether a code the person typed may be checked (guesses
        are limited apart from sends). Fails as ``check_otp`` does."""
        return self._check("/check-otp-verify", self._fail_open_otp,
                           _otp_fields(phone, ip, user, device_token,
                                       challenge_passed, ref))

    def report_otp(self, phone: str, ip: str, verified: bool, *,
                   user: Optional[str] = None,
                   device_token: Optional[str] = None,
                   ref: Optional[str] = None) -> Report:
        """Tells that the code sent to ``phone`` was typed correctly
        (``verified=True``) or expired unused (False; changes nothing)."""
        fields = _otp_fields(phone, ip, user, device_token, None, ref)
        fields["verified"] = verified
        return self._report("/report-otp", fields)

    def breached(self, password: str, *,
                 timeout: Optional[float] = None) -> Breached:
        """Whether ``password`` is in the service's breach corpus:
        ``"breached"``, ``"clean"`` or ``"unknown"`` (no corpus loaded, no
        answer, the breaker open). Only the first 5 hex digits of its
        SHA-1 are sent; the password and its full hash stay here.
        ``timeout``: seconds, the client's by default. Never raises for
        the service's answer; a password that is no UTF-8 text (a lone
        surrogate) has no SHA-1 to look up and is ``"unknown"``."""
        try:
            utf8 = password.encode("utf-8")
        except UnicodeEncodeError:
            return "unknown"
        digest = hashlib.sha1(utf8).hexdigest().upper()
        prefix, suffix = digest[:5], digest[5:]

        def found(answer: Answer) -> Breached:
            return _range_lookup(answer, suffix)

        return self._call("GET", "/range/" + prefix, None, _RANGE_HEADERS,
                          self._timeout if timeout is None else timeout,
                          _answers.is_answer, found,
                          lambda reason, status: "unknown")

    def _check(self, path: str, fail_open: bool,
               fields: Dict[str, Any]) -> Verdict:
        def failed(reason: Failed, status: int) -> Verdict:
            return _answers.failed_verdict(reason, fail_open, status)

        return self._call("POST", path, _json(fields), _HEADERS,
                          self._timeout, _answers.is_check_answer,
                          _answers.verdict, failed)

    def _report(self, path: str, fields: Dict[str, Any]) -> Report:
        def failed(reason: Failed, status: int) -> Report:
            return Report(False, failed=reason, status=status)

        return self._call("POST", path, _json(fields), _HEADERS,
                          self._timeout, _answers.is_answer,
                          _answers.report, failed)

    def _call(self, method: str, path: str, body: Optional[bytes],
              headers: Dict[str, str], timeout: float,
              is_answer: Callable[[Answer], bool],
              on_answer: Callable[[Answer], _T],
              on_failure: Callable[[Failed, int], _T]) -> _T:
        """One call through the breaker: ``on_answer`` for what
        ``is_answer`` takes as abuseguard's answer (it may raise
        ``UsageError``), ``on_failure`` with the reason and the status (0
        without one) when there was none."""
        permit = self._breaker.admit()
        if permit is None:
            return on_failure("breaker_open", 0)
        answered = False
        try:
            try:
                answer = self._exchange(method, path, body, headers, timeout)
            except TransportFailure as failure:
                return on_failure(failure.reason, 0)
            if not is_answer(answer):
                return on_failure("unavailable", answer.status)
            answered = True
            return on_answer(answer)
        finally:
            # Whatever escapes unforeseen (a KeyboardInterrupt) is recorded
            # as no answer, so that a half-open trial never stays out.
            self._breaker.record(permit, answered)

    def _exchange(self, method: str, path: str, body: Optional[bytes],
                  headers: Dict[str, str], timeout: float) -> Answer:
        """The request, retried while nothing of it can have been counted
        and time and tries remain. Returns the last answer (the connection
        cap's 503 after the last try); raises ``TransportFailure``."""
        deadline = time.monotonic() + timeout
        tries = 0
        while True:
            try:
                answer = self._pool.request(method, self._prefix + path,
                                            body, headers, deadline)
                if not _answers.connection_cap(answer):
                    return answer
                last: Union[Answer, TransportFailure] = answer
            except TransportFailure as failure:
                if failure.sent or failure.reason == "timeout":
                    raise
                last = failure
            # Decided before sleeping: a pause that would end at or past
            # the deadline is not taken, and the call ends at once with
            # the failure it has (unavailable), as in the Go and Node.js
            # clients. A sleep that overran the deadline ends it the same
            # way: nothing was sent, and a connect attempted now would
            # only turn the refusal into a timeout of the client's own.
            pause = random.uniform(0, BACKOFF * 2 ** tries)
            if tries >= self._retries or time.monotonic() + pause >= deadline:
                return _stop(last)
            time.sleep(pause)
            if time.monotonic() >= deadline:
                return _stop(last)
            tries += 1


def _otp_fields(phone: str, ip: str, user: Optional[str],
                device_token: Optional[str],
                challenge_passed: Union[str, bool, None],
                ref: Optional[str]) -> Dict[str, Any]:
    return {"phone": phone, "ip": ip, "user": user,
            "device_token": device_token,
            "challenge_passed": challenge_passed, "ref": ref}


def _stop(last: Union[Answer, TransportFailure]) -> Answer:
    """The end of the retries: the last answer, or its failure raised."""
    if isinstance(last, TransportFailure):
        raise last
    return last


def _json(fields: Dict[str, Any]) -> bytes:
    """The request body: the fields the caller set. None is "not set"
    and never sent as null; a required field left None is then missing,
    and the service's 400 names it. Raises ``UsageError`` (nothing sent)
    for a string that is no UTF-8 text, naming its field, and for a body
    over ``MAX_REQUEST_BODY``."""
    sent = {k: v for k, v in fields.items() if v is not None}
    for name, value in sent.items():
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError(0, name, "%s is no UTF-8 text (it holds a "
                                 "lone surrogate)" % name) from None
    body = json.dumps(sent, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_REQUEST_BODY:
        raise UsageError(413, "body", "the body is %d bytes, over the "
                         "service's cap of %d" % (len(body),
                                                  MAX_REQUEST_BODY))
    return body


def _range_lookup(answer: Answer, suffix: str) -> Breached:
    """A range answer's verdict on the hash suffix: breached when a line
    holds it with a count above 0 (padding lines count 0)."""
    if answer.status != 200:
        return "unknown"  # 404: no corpus loaded
    try:
        text = answer.data.decode("ascii")
    except UnicodeDecodeError:
        return "unknown"
    for line in text.splitlines():
        hash_suffix, _, count = line.partition(":")
        if hash_suffix.strip().upper() == suffix:
            count = count.strip()
            seen = count.isascii() and count.isdigit() and int(count) > 0
            return "breached" if seen else "clean"
    return "clean"


def _parse_base_url(base_url: str) -> Tuple[str, int, str]:
    """``(host, port, path prefix)`` of an ``http://`` base URL."""
    try:
        parts = urlsplit(base_url)
        port = parts.port or 80
    except ValueError:
        raise ArgumentError("base_url %r is no URL" % base_url,
                            "base_url") from None
    host = parts.hostname
    if parts.scheme != "http" or not host:
        raise ArgumentError("base_url must be http://host[:port][/prefix]",
                            "base_url")
    _require(not parts.query and not parts.fragment and not parts.username,
             "base_url", "base_url must have no query, fragment or "
             "credentials")
    return host, port, parts.path.rstrip("/")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) \
        and value >= 0


def _require(ok: bool, argument: str, message: str) -> None:
    if not ok:
        raise ArgumentError(message, argument)
