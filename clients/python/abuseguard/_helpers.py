# SPDX-License-Identifier: Apache-2.0
"""Helpers that need no client: the password fingerprint, the device
cookie, and the webhook signature. Pure functions, safe from any thread.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from typing import Optional, Tuple, Union

from ._errors import ArgumentError

MIN_FINGERPRINT_KEY = 32
"""Bytes: the shortest key ``password_fingerprint`` takes (HMAC-SHA-256's
output size; a shorter key is easier to guess than the digest)."""

WEBHOOK_TOLERANCE = 300
"""Seconds a webhook's signed time may be away from the receiver's
clock: the service's own 5 minutes."""

# RFC 6265's cookie-octet: what a cookie value may hold unquoted. A token
# with anything else (a ';' or a line break) would inject attributes or
# headers into Set-Cookie.
_COOKIE_VALUE = re.compile(r"[!#-+\--:<-\[\]-~]+")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def password_fingerprint(key: bytes, password: str) -> str:
    """The ``password_fp`` of a password: lower-case hex HMAC-SHA-256
    keyed by ``key`` over the password's UTF-8 bytes exactly as typed.

    ``key`` is a secret of your own, at least 32 bytes, the same for every
    user (the same password must give the same fingerprint for everyone,
    or a spray is not seen) and never the service's secret. No Unicode
    normalisation: the password is matched as typed, as your own password
    check matches it. Raises ``ArgumentError`` for a shorter key, or a
    password that is no UTF-8 text (a lone surrogate).
    """
    if not isinstance(key, (bytes, bytearray)) \
            or len(key) < MIN_FINGERPRINT_KEY:
        raise ArgumentError("the fingerprint key must be at least %d bytes"
                            % MIN_FINGERPRINT_KEY, "key")
    return hmac.new(bytes(key), _utf8(password, "password"),
                    hashlib.sha256).hexdigest()


def device_cookie_name(user_id: str) -> str:
    """The device cookie's name for one account: ``"ag_device_"`` and the
    first 16 hex digits of SHA-256 of ``"abuseguard-device:" + user_id``.
    One cookie per account, so that two accounts used in one browser do
    not overwrite each other's token. Raises ``ArgumentError`` for a
    ``user_id`` that is no UTF-8 text (a lone surrogate)."""
    digest = hashlib.sha256(_utf8("abuseguard-device:" + user_id, "user_id"))
    return "ag_device_" + digest.hexdigest()[:16]


def device_cookie(user_id: str, token: str, max_age: int,
                  secure: bool = True) -> Tuple[str, str]:
    """The device cookie for a login success's token: ``(name, value)``,
    the value being the whole ``Set-Cookie`` header value
    (``<name>=<token>; Max-Age=<max_age>; Path=/; HttpOnly; SameSite=Lax``
    and ``; Secure`` unless ``secure`` is False, for plain-HTTP demos).
    ``max_age`` is the report's ``expires_in``. Raises ``ArgumentError``
    for a token that is no cookie value or a negative ``max_age``."""
    if not _COOKIE_VALUE.fullmatch(token):
        raise ArgumentError("the device token is not a cookie value",
                            "token")
    if isinstance(max_age, bool) or not isinstance(max_age, int) \
            or max_age < 0:
        raise ArgumentError("max_age must be a whole number of seconds",
                            "max_age")
    name = device_cookie_name(user_id)
    header = "%s=%s; Max-Age=%d; Path=/; HttpOnly; SameSite=Lax" % (
        name, token, max_age)
    return name, header + ("; Secure" if secure else "")


def device_token_from_cookies(cookie_header: Optional[str],
                              user_id: str) -> Optional[str]:
    """The account's device token in a ``Cookie`` header; None when the
    header is absent or holds no (non-empty) cookie of that account."""
    if not cookie_header:
        return None
    name = device_cookie_name(user_id)
    for pair in cookie_header.split(";"):
        key, eq, value = pair.partition("=")
        value = value.strip()
        if eq and key.strip() == name:
            # RFC 6265 lets a cookie value be quoted.
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            if value:
                return value
    return None


def verify_webhook(secret: bytes, body: Union[bytes, str], header: str,
                   now: Optional[float] = None,
                   tolerance: int = WEBHOOK_TOLERANCE) -> bool:
    """Whether a webhook delivery is abuseguard's and recent.

    ``header`` is the ``X-Abuseguard-Signature`` value,
    ``t=<unix seconds>,v1=<hex>``: the HMAC-SHA-256 of ``"<t>.<body>"``
    keyed by the webhook secret file's bytes, compared in constant time,
    and ``t`` within ``tolerance`` seconds of ``now`` (default: the system
    clock). ``body`` is the raw body as received (a ``str`` is taken as its
    UTF-8 bytes). Verify before parsing the body. A malformed delivery is
    False, never an exception (a ``secret`` that is not bytes is a
    ``TypeError``: a mistake of the receiver's). Dedupe on the event's
    ``id`` too: a delivery may be replayed within the tolerance.
    """
    if isinstance(body, str):
        try:
            body = body.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no signed body has one
            return False
    if not isinstance(header, str) or not isinstance(body, bytes):
        return False
    signed_at = None
    macs = []
    # Exactly as the service writes it: no space around the commas or the
    # equals signs, as the Go and Node.js clients read it too.
    for part in header.split(","):
        key, eq, value = part.partition("=")
        if not eq:
            return False
        if key == "t":
            if signed_at is not None or not (value.isascii()
                                             and value.isdigit()):
                return False
            signed_at = value
        elif key == "v1":
            if not _HEX64.fullmatch(value):
                return False
            macs.append(value.lower())
        # Other keys are other schemes, for receivers that know them.
    if signed_at is None or not macs:
        return False
    if now is None:
        now = time.time()
    if abs(now - int(signed_at)) > tolerance:
        return False
    want = hmac.new(secret, signed_at.encode("ascii") + b"." + body,
                    hashlib.sha256).hexdigest()
    # Any v1 may match, as with Stripe's scheme: a sender rotating its
    # secret signs with the old and the new one. All are compared, so the
    # time taken does not say which matched.
    matches = [hmac.compare_digest(want, mac) for mac in macs]
    return any(matches)


def _utf8(text: str, argument: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (which a str may hold, and
    which no UTF-8 has) is the caller's ``ArgumentError``."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ArgumentError("%s is no UTF-8 text (it holds a lone surrogate)"
                            % argument, argument) from None
