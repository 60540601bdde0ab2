# SPDX-License-Identifier: Apache-2.0
"""The exceptions abuseguard raises, all from one base class.

An outage never raises: a check that got no answer returns its fail mode
and a report returns ``recorded=False``. What raises is a mistake of the
caller's, which retrying or failing open would only hide.
"""

from __future__ import annotations

from typing import Optional


class AbuseguardError(Exception):
    """The base class of every exception this package raises."""


class ArgumentError(AbuseguardError, ValueError):
    """An argument refused before anything was sent: a fingerprint key
    under 32 bytes, a trusted proxy that is no CIDR, a client option out of
    range, a string a helper cannot encode as UTF-8. Also a
    ``ValueError``, as the standard library would raise."""

    argument: str
    """The parameter at fault, as the function names it (``"key"``,
    ``"password"``, ``"trusted_proxies"``, ``"timeout"``, ...)."""

    def __init__(self, message: str, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class UsageError(AbuseguardError):
    """abuseguard refused the request as the caller's mistake: a 4xx other
    than a verdict's 403 and 429 (400 bad input, 404 wrong path, 413, ...),
    or a status no abuseguard sends to the call (a 1xx, a redirect, an
    unexpected 2xx: the base URL leads elsewhere). Also raised before
    anything is sent, with ``status`` 0 and the field that cannot be
    encoded (a lone surrogate), or 413 and ``"body"`` for a body over the
    service's 64 KiB cap, which it would refuse mid-write.

    Never turned into a fail open: an attacker can provoke a 400 at will
    (a user name of 300 bytes, say), and a 400 that allowed the login
    would be a way past every policy.
    """

    status: int
    """The HTTP status; 0 when refused before sending."""
    field: Optional[str]
    """The request field at fault, as the answer's ``field`` names it
    (``"body"`` for the body as a whole); None when the answer names none."""
    error: Optional[str]
    """The answer's ``error`` sentence; None when it has none."""

    def __init__(self, status: int, field: Optional[str],
                 error: Optional[str]) -> None:
        super().__init__(
            "abuseguard refused the request (HTTP %d%s): %s"
            % (status, ", field " + field if field else "",
               error or "no reason given"))
        self.status = status
        self.field = field
        self.error = error
