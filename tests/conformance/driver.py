#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python client's conformance driver (clients/README.md, "The
conformance driver"): one JSON request a line on stdin, one JSON answer a
line on stdout, so that tests/integration/test_conformance.py drives the
three clients from one scenario file and compares their answers.

The client is imported from clients/python of this checkout: nothing
needs installing. Times arrive in milliseconds (the protocol's unit) and
are handed to the client in seconds (its unit).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "clients", "python"))

import abuseguard  # noqa: E402  (after the path is set)

VERDICT_FIELDS = ("outcome", "allowed", "retry_after", "policy",
                  "challenge_nonce", "device", "degraded", "failed", "status")
REPORT_FIELDS = ("recorded", "device_token", "expires_in", "failed", "status")


class Driver:
    """The state across lines: the client of the last ``new_client`` and
    the offset its clock runs ahead of the monotonic clock."""

    def __init__(self):
        self.client = None
        self.offset = 0.0

    def clock(self):
        return time.monotonic() + self.offset

    def new_client(self, base_url, timeout_ms=None, fail_open_login=None,
                   fail_open_otp=None, breaker_failures=None,
                   breaker_open_ms=None, retries=None):
        options = {"timeout": _seconds(timeout_ms),
                   "fail_open_login": fail_open_login,
                   "fail_open_otp": fail_open_otp,
                   "breaker_failures": breaker_failures,
                   "breaker_open": _seconds(breaker_open_ms),
                   "retries": retries}
        if self.client is not None:
            self.client.close()
        self.client = abuseguard.Client(
            base_url, clock=self.clock,
            **{k: v for k, v in options.items() if v is not None})
        return None

    def advance_clock(self, ms):
        self.offset += ms / 1000.0
        return None

    def check_login(self, user, ip, **optional):
        return _fields(self.client.check_login(user, ip, **optional),
                       VERDICT_FIELDS)

    def check_otp(self, phone, ip, **optional):
        return _fields(self.client.check_otp(phone, ip, **optional),
                       VERDICT_FIELDS)

    def check_otp_verify(self, phone, ip, **optional):
        return _fields(self.client.check_otp_verify(phone, ip, **optional),
                       VERDICT_FIELDS)

    def report_login(self, user, ip, success, **optional):
        return _fields(self.client.report_login(user, ip, success,
                                                **optional), REPORT_FIELDS)

    def report_otp(self, phone, ip, verified, **optional):
        return _fields(self.client.report_otp(phone, ip, verified,
                                              **optional), REPORT_FIELDS)

    def breached(self, password, timeout_ms=None):
        return self.client.breached(password, timeout=_seconds(timeout_ms))

    @staticmethod
    def password_fingerprint(key_hex, password):
        try:
            return abuseguard.password_fingerprint(bytes.fromhex(key_hex),
                                                   password)
        except abuseguard.ArgumentError as e:
            # "key" for a key under 32 bytes, as the protocol says;
            # "password" for one that is no UTF-8 text (a lone surrogate).
            return {"error": e.argument}

    @staticmethod
    def client_ip(remote_addr, headers, trusted_proxies,
                  header="x-forwarded-for"):
        return abuseguard.client_ip(remote_addr, headers, trusted_proxies,
                                    header)

    @staticmethod
    def device_cookie(user_id, token, max_age, secure=True):
        name, header = abuseguard.device_cookie(user_id, token, max_age,
                                                secure)
        return {"name": name, "set_cookie": header}

    @staticmethod
    def device_cookie_name(user_id):
        return abuseguard.device_cookie_name(user_id)

    @staticmethod
    def device_token_from_cookies(cookie_header, user_id):
        return abuseguard.device_token_from_cookies(cookie_header, user_id)

    @staticmethod
    def verify_webhook(secret_hex, body, header, now, tolerance=None):
        extra = {} if tolerance is None else {"tolerance": tolerance}
        return abuseguard.verify_webhook(bytes.fromhex(secret_hex), body,
                                         header, now=now, **extra)


OPS = ("new_client", "advance_clock", "check_login", "check_otp",
       "check_otp_verify", "report_login", "report_otp", "breached",
       "password_fingerprint", "client_ip", "device_cookie",
       "device_cookie_name", "device_token_from_cookies", "verify_webhook")


def _seconds(ms):
    return None if ms is None else ms / 1000.0


def _fields(result, names):
    return {name: getattr(result, name) for name in names}


def answer(driver, line):
    """The answer object of one request line."""
    try:
        request = json.loads(line)
        reply = {"id": request.get("id")}
    except (ValueError, AttributeError):
        return {"id": None, "error": "not a JSON object"}
    op = request.get("op")
    if op not in OPS:
        reply["error"] = "unknown op %r" % (op,)
        return reply
    try:
        reply["result"] = getattr(driver, op)(**request.get("args", {}))
    except abuseguard.UsageError as e:
        reply["usage_error"] = {"status": e.status, "field": e.field}
    except Exception as e:  # a driver or client bug: say so, go on
        reply["error"] = "%s: %s" % (type(e).__name__, e)
    return reply


def main():
    driver = Driver()
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(answer(driver, line)) + "\n")
            sys.stdout.flush()
    if driver.client is not None:
        driver.client.close()


if __name__ == "__main__":
    main()
