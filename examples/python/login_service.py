#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A demo login service guarded by abuseguard, on the standard library's
HTTP server: POST /login {"user", "password"}, POST /otp/send {"phone"},
POST /otp/verify {"phone", "code"}. Users: ana@example.com ("correct
horse battery staple", +14155550100), bob@example.com ("Tr0ub4dor&3",
+14155550101).

    ABUSEGUARD_URL=http://127.0.0.1:8080 PORT=8000 \\
    FP_KEY_HEX=$(openssl rand -hex 32) python3 examples/python/login_service.py

Also TRUSTED_PROXIES (comma-separated CIDRs; empty: the TCP peer is the
client) and COOKIE_SECURE ("0": no Secure cookie, for plain-HTTP demos).
"""

import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    import abuseguard
except ImportError:  # run from a checkout: use clients/python as it is
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "clients", "python"))
    import abuseguard

CLIENT = abuseguard.Client(os.environ["ABUSEGUARD_URL"])  # for all threads
FP_KEY = bytes.fromhex(os.environ["FP_KEY_HEX"])
PROXIES = [p for p in os.environ.get("TRUSTED_PROXIES", "").split(",") if p]
SECURE = os.environ.get("COOKIE_SECURE", "1") != "0"
abuseguard.password_fingerprint(FP_KEY, "")  # a short key fails now
abuseguard.client_ip("127.0.0.1", {}, PROXIES)  # and so does a bad CIDR


def slow_hash(password, salt):
    # scrypt at its paper's interactive-login cost; a real service tunes
    # the cost (or uses argon2) and keeps the hashes in its database.
    return hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)


def hashed(password):
    salt = secrets.token_bytes(16)
    return salt, slow_hash(password, salt)


USERS = {"ana@example.com": hashed("correct horse battery staple"),
         "bob@example.com": hashed("Tr0ub4dor&3")}
NOBODY = hashed("")  # an unknown user costs a hash too: timing tells nothing
CODES = {}  # phone -> the code sent (a demo: a real service expires them)
CODES_LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        route = {"/login": self.login, "/otp/send": self.otp_send,
                 "/otp/verify": self.otp_verify}.get(self.path)
        try:  # the body is read whatever the path: the connection is kept
            size = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(size) if 0 <= size <= 65536 else None
        except ValueError:
            body = None
        if body is None:
            self.close_connection = True
            return self.send(400, {"error": "invalid request"})
        if route is None:
            return self.not_found()
        try:
            fields = json.loads(body)
            ip = abuseguard.client_ip(self.client_address[0], self.headers,
                                      PROXIES, "x-forwarded-for")
            route(fields, ip)
        except (ValueError, abuseguard.UsageError):  # bad JSON, bad user...
            self.send(400, {"error": "invalid request"})

    def not_found(self):
        self.send(404, {"error": "not found"})

    def login(self, fields, ip):
        user, password = strings(fields, "user", "password")
        fp = abuseguard.password_fingerprint(FP_KEY, password)
        breached = CLIENT.breached(password) == "breached"
        token = abuseguard.device_token_from_cookies(
            self.headers.get("Cookie"), user)
        # Only a nonce is passed on, never a "true" from the browser: that
        # would pass every challenge for the price of typing it.
        nonce = fields.get("challenge_passed")
        verdict = CLIENT.check_login(
            user, ip, device_token=token, password_fp=fp,
            password_breached=breached or None,
            challenge_passed=nonce if isinstance(nonce, str) else None)
        if verdict.outcome == "deny":
            return self.too_many(verdict, "too many attempts")
        if verdict.outcome == "challenge":  # a real service asks for a 2FA
            return self.send(401, {"error": "second factor required",
                                   "challenge_nonce": verdict.challenge_nonce})
        salt, stored = USERS.get(user, NOBODY)
        right = hmac.compare_digest(slow_hash(password, salt), stored)
        if user not in USERS or not right:
            reason = "bad_password" if user in USERS else "unknown_user"
            CLIENT.report_login(user, ip, False, reason=reason, password_fp=fp,
                                device_token=token)
            return self.send(401, {"error": "wrong user or password"})
        report = CLIENT.report_login(user, ip, True, password_fp=fp,
                                     password_breached=breached or None,
                                     device_token=token)
        headers = {}
        if report.device_token:
            _, headers["Set-Cookie"] = abuseguard.device_cookie(
                user, report.device_token, report.expires_in, SECURE)
        self.send(200, {"ok": True, "breached": breached}, headers)

    def otp_send(self, fields, ip):
        (phone,) = strings(fields, "phone")
        verdict = CLIENT.check_otp(phone, ip)  # no answer: denied
        if not verdict.allowed:
            return self.too_many(verdict, "try later")
        code = "%06d" % secrets.randbelow(10**6)
        with CODES_LOCK:
            CODES[phone] = code
        # A demo: a real service sends the code by SMS and never shows it.
        self.send(200, {"sent": True, "code": code})

    def otp_verify(self, fields, ip):
        phone, code = strings(fields, "phone", "code")
        verdict = CLIENT.check_otp_verify(phone, ip)
        if not verdict.allowed:
            return self.too_many(verdict, "try later")
        with CODES_LOCK:
            right = phone in CODES and hmac.compare_digest(
                CODES[phone].encode(), code.encode())
            if right:
                del CODES[phone]  # a code is good once
        if not right:
            return self.send(401, {"error": "wrong code"})
        CLIENT.report_otp(phone, ip, True)
        self.send(200, {"ok": True})

    def too_many(self, verdict, message):
        wait = max(1, verdict.retry_after)
        self.send(429, {"error": message, "retry_after": wait},
                  {"Retry-After": str(wait)})

    def send(self, status, doc, headers=None):
        data = json.dumps(doc).encode()
        self.send_response(status)
        headers = dict(headers or {}, **{"Content-Type": "application/json",
                                         "Content-Length": str(len(data))})
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass  # quiet: a line per request would drown the demo's output


def strings(fields, *names):
    """The named fields of a JSON object, each a string; else ValueError,
    answered 400."""
    if not isinstance(fields, dict) or not all(
            isinstance(fields.get(name), str) for name in names):
        raise ValueError("%s must be strings" % ", ".join(names))
    return [fields[name] for name in names]


for method in ("GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"):
    setattr(Handler, "do_" + method, Handler.not_found)

if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])),
                                 Handler)
    print("listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()
