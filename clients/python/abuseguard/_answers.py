# SPDX-License-Identifier: Apache-2.0
"""What abuseguard's answers mean: the ``Verdict`` of a check, the
``Report`` of a report, and the rules that turn an HTTP status and body
into them (clients/README.md, "Answers to verdicts").

No I/O here: the functions take an answer already read, or the reason
there was none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Literal, Optional

from ._errors import UsageError
from ._transport import Answer

Outcome = Literal["allow", "challenge", "deny"]
"""A verdict's outcome."""
Failed = Literal["timeout", "unavailable", "breaker_open"]
"""Why the client decided alone."""
Device = Literal["trusted", "untrusted"]
"""The lane abuseguard judged a check in."""

CONNECTION_CAP_ERRORS = frozenset((
    "too many connections from this address",
    "too many connections; try again",
    "shutting down",
))
"""The ``error`` of the 503s sent before a byte of the request was read
(the connection cap's, and a draining instance's on a kept-alive
connection): the only 503s retried."""


@dataclass(frozen=True)
class Verdict:
    """The answer to a check (``check_login``, ``check_otp``,
    ``check_otp_verify``)."""

    outcome: Outcome
    """``"allow"``, ``"challenge"`` (ask for a CAPTCHA or second factor,
    then check again with ``challenge_passed=challenge_nonce``) or
    ``"deny"``. Without an answer: the client's fail mode."""
    retry_after: int = 0
    """Whole seconds to wait; 0 when allowed or unknown."""
    policy: Optional[str] = None
    """The policy that denied or challenged; None otherwise."""
    challenge_nonce: Optional[str] = None
    """A challenge's nonce: bring it back as ``challenge_passed`` once the
    person passed the challenge. None otherwise."""
    device: Optional[Device] = None
    """``"trusted"`` or ``"untrusted"``: the lane abuseguard judged the
    check in; None without an answer."""
    degraded: bool = False
    """abuseguard answered without Redis (from its fallback store)."""
    failed: Optional[Failed] = None
    """None when abuseguard answered; else why the client decided alone:
    ``"timeout"``, ``"unavailable"`` or ``"breaker_open"``."""
    status: int = 0
    """The HTTP status; 0 without one."""
    body: Optional[Dict[str, Any]] = field(default=None, repr=False)
    """The answer's JSON body as parsed, unknown fields included; None
    without one."""

    @property
    def allowed(self) -> bool:
        """Whether the outcome is ``"allow"``."""
        return self.outcome == "allow"


@dataclass(frozen=True)
class Report:
    """The answer to a report (``report_login``, ``report_otp``)."""

    recorded: bool
    """abuseguard answered 200 or 204."""
    device_token: Optional[str] = None
    """A login success's device token: keep it in a cookie
    (``device_cookie``) and send it with the user's later calls. None
    otherwise."""
    expires_in: int = 0
    """Seconds the device token lives; 0 without one."""
    failed: Optional[Failed] = None
    """As ``Verdict.failed``."""
    status: int = 0
    """The HTTP status; 0 without one."""


def parse_object(data: bytes) -> Optional[Dict[str, Any]]:
    """The body as a JSON object; None when it is not one."""
    try:
        doc = json.loads(data)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
        return None
    return doc if isinstance(doc, dict) else None


def connection_cap(answer: Answer) -> bool:
    """Whether the answer is the connection cap's 503, which said the
    request was never read."""
    if answer.status != 503:
        return False
    doc = parse_object(answer.data)
    return doc is not None and doc.get("error") in CONNECTION_CAP_ERRORS


def _degraded_refusal(status: int, doc: Optional[Dict[str, Any]]) -> bool:
    # The 503 of a fail-closed policy while Redis is down: an answer.
    return status == 503 and doc is not None and doc.get("degraded") is True


def is_answer(answer: Answer) -> bool:
    """Whether abuseguard answered (the breaker closes and its count
    resets): any status below 500, and a degraded 503. Any other 5xx is
    no answer, like a timeout."""
    return answer.status < 500 or _degraded_refusal(
        answer.status, parse_object(answer.data))


def is_check_answer(answer: Answer) -> bool:
    """``is_answer`` for a check, where a 200 must also carry a JSON
    object: a 200 of anything else (a proxy's or a captive portal's HTML
    page, ``[1]``) is no allow of abuseguard's, and is no answer."""
    if answer.status == 200:
        return parse_object(answer.data) is not None
    return is_answer(answer)


def usage_error(answer: Answer) -> UsageError:
    """The exception for an answer that is the caller's mistake: a 4xx
    with the body's ``field`` and ``error``, or a status abuseguard never
    sends to the call (1xx, 3xx, an unexpected 2xx) with neither, since
    whatever answered is not abuseguard."""
    if not 400 <= answer.status < 500:
        return UsageError(answer.status, None,
                          "HTTP %d is no abuseguard answer: does the base "
                          "URL lead elsewhere?" % answer.status)
    doc = parse_object(answer.data) or {}
    return UsageError(answer.status, _string(doc.get("field")),
                      _string(doc.get("error")))


def failed_verdict(reason: Failed, fail_open: bool,
                   status: int = 0) -> Verdict:
    """The verdict of a check that got no answer: the fail mode."""
    return Verdict("allow" if fail_open else "deny", failed=reason,
                   status=status)


def verdict(answer: Answer) -> Verdict:
    """The verdict of an answer (``is_check_answer`` true, so a 200
    holds a JSON object). Raises ``UsageError`` for any status but 200,
    403, 429 and a degraded 503: a 4xx, or a status no abuseguard sends
    (the base URL leads elsewhere)."""
    doc = parse_object(answer.data)
    status = answer.status
    if status == 200 and doc is not None:
        return Verdict("allow", device=_device(doc),
                       degraded=doc.get("degraded") is True,
                       status=status, body=doc)
    if status not in (403, 429) and not _degraded_refusal(status, doc):
        raise usage_error(answer)
    body = doc or {}
    challenge = status == 429 and body.get("action") == "challenge"
    return Verdict(
        "challenge" if challenge else "deny",
        retry_after=_retry_after(body, answer.retry_after),
        policy=_string(body.get("policy")),
        challenge_nonce=(_string(body.get("challenge_nonce"))
                         if challenge else None),
        device=_device(body),
        degraded=body.get("degraded") is True,
        status=status, body=doc)


def report(answer: Answer) -> Report:
    """The report of an answer (``is_answer`` true). Raises
    ``UsageError`` for any status below 500 but 200 and 204."""
    if answer.status == 204:
        return Report(True, status=204)
    if answer.status >= 500:  # a degraded 503, which a report never gets
        return Report(False, failed="unavailable", status=answer.status)
    if answer.status != 200:
        raise usage_error(answer)
    body = parse_object(answer.data) or {}
    token = _string(body.get("device_token"))
    expires_in = _seconds(body.get("expires_in"))
    return Report(True, device_token=token,
                  expires_in=expires_in if token and expires_in else 0,
                  status=200)


def _string(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _seconds(value: Any) -> Optional[int]:
    # bool is an int in Python, and true is no number of seconds.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _device(body: Dict[str, Any]) -> Optional[Device]:
    value = body.get("device")
    return value if value in ("trusted", "untrusted") else None


def _retry_after(body: Dict[str, Any], header: Optional[str]) -> int:
    seconds = _seconds(body.get("retry_after"))
    if seconds is not None:
        return seconds
    # The header carries the same seconds; an HTTP-date form is not
    # abuseguard's and is taken as unknown.
    header = (header or "").strip()
    if header.isascii() and header.isdigit():
        return int(header)
    return 0
