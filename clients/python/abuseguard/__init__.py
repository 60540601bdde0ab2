# SPDX-License-Identifier: Apache-2.0
"""abuseguard: the Python client of the abuseguard login and OTP
abuse-protection service, with nothing beyond the standard library.

    client = abuseguard.Client("http://127.0.0.1:8080")
    verdict = client.check_login(user, client_ip(...), password_fp=...)
    if not verdict.allowed: ...  # deny: 429; challenge: ask, then retry

The calls never raise for an outage: a check without an answer returns
its fail mode (logins allowed, OTP denied by default) with ``failed``
set. ``UsageError`` says the request itself was wrong. The helpers
(``password_fingerprint``, ``client_ip``, the device cookie,
``verify_webhook``) need no client. clients/README.md in the repository
states the rules every abuseguard client follows.
"""

from ._answers import Device, Failed, Outcome, Report, Verdict
from ._client import Breached, Client
from ._client_ip import client_ip
from ._errors import AbuseguardError, ArgumentError, UsageError
from ._helpers import (device_cookie, device_cookie_name,
                       device_token_from_cookies, password_fingerprint,
                       verify_webhook)
from ._version import __version__

__all__ = [
    "AbuseguardError", "ArgumentError", "Breached", "Client", "Device",
    "Failed", "Outcome", "Report", "UsageError", "Verdict", "__version__",
    "client_ip", "device_cookie", "device_cookie_name",
    "device_token_from_cookies", "password_fingerprint", "verify_webhook",
]
