# SPDX-License-Identifier: Apache-2.0
"""Bad input: every malformed request is a 4xx naming the field, never a
5xx, a crash or a hang; and it changes nothing in Redis."""
import http.client
import json
import os
import socket
import unittest

from harness import ServiceTest, make_secret


LOGIN_CASES = [
    # (body, status, field the error must name)
    ('{"user": "a@example.com"}', 400, "ip"),
    ('{"ip": "203.0.113.7"}', 400, "user"),
    ('{"user": 5, "ip": "203.0.113.7"}', 400, "user"),
    ('{"user": "a@example.com", "ip": ["203.0.113.7"]}', 400, "ip"),
    ('{"user": "   ", "ip": "203.0.113.7"}', 400, "user"),
    ('{"user": "%s", "ip": "203.0.113.7"}' % ("u" * 257), 400, "user"),
    ('{"user": "a\\u0007b", "ip": "203.0.113.7"}', 400, "user"),
    ('{"user": "a@example.com", "ip": "203.0.113.256"}', 400, "ip"),
    ('{"user": "a@example.com", "ip": "fe80::1%eth0"}', 400, "ip"),
    ('{"user": "a@example.com", "ip": "example.com"}', 400, "ip"),
    ('{"user": "a@example.com", "ip": "203.0.113.7", "device": 1}', 400,
     "device"),
    ('{"user": "a", "user": "b", "ip": "203.0.113.7"}', 400, "body"),
    ('{"user": "a@example.com", "ip": "203.0.113.7"', 400, "body"),
    ('[1, 2]', 400, "body"),
    ('"just a string"', 400, "body"),
    ('', 400, "body"),
    ('\xff\xfe{}', 400, "body"),
]

OTP_CASES = [
    ('{"ip": "203.0.113.7"}', 400, "phone"),
    ('{"phone": "600100200", "ip": "203.0.113.7"}', 400, "phone"),
    ('{"phone": "+48 600", "ip": "203.0.113.7"}', 400, "phone"),
    ('{"phone": "+1234567890123456", "ip": "203.0.113.7"}', 400, "phone"),
    ('{"phone": "+48 600 ABC 200", "ip": "203.0.113.7"}', 400, "phone"),
    ('{"phone": "+48600100200"}', 400, "ip"),
    ('{"phone": "+48600100200", "ip": "1.2.3.4", "user": ""}', 400, "user"),
]


class InputTest(ServiceTest):
    def setUp(self):
        super().setUp()
        self.svc = self.service()

    def check_cases(self, path, cases):
        for body, status, field in cases:
            with self.subTest(body=body[:60]):
                r = self.svc.post(path, body.encode("latin-1"),
                                  headers={"Content-Type":
                                           "application/json"})
                self.assertEqual(r.status, status, r.raw)
                self.assertIsNotNone(r.json, r.raw)
                self.assertTrue(r.json["error"].startswith(field),
                                r.json["error"])
        self.assertEqual(self.redis.keys(), [])

    def test_bad_login_bodies_are_400_naming_the_field(self):
        self.check_cases("/check-login", LOGIN_CASES)

    def test_bad_otp_bodies_are_400_naming_the_field(self):
        self.check_cases("/check-otp", OTP_CASES)

    def test_malformed_json_error_gives_line_and_column(self):
        r = self.svc.post("/check-login", '{"user": "a",\n "ip": }')
        self.assertEqual(r.status, 400)
        self.assertIn("line 2", r.json["error"])
        self.assertIn("column", r.json["error"])

    def test_unknown_fields_are_ignored(self):
        r = self.login(self.svc, "a@example.com", "203.0.113.7",
                       client_version="9.9")
        self.assertEqual(r.status, 200)

    def test_user_of_256_bytes_is_accepted(self):
        r = self.login(self.svc, "u" * 256, "203.0.113.7")
        self.assertEqual(r.status, 200)

    def test_body_over_64k_is_413(self):
        body = '{"user": "%s", "ip": "203.0.113.7"}' % ("u" * 70000)
        r = self.svc.post("/check-login", body)
        self.assertEqual(r.status, 413)
        self.assertIn("body", r.json["error"])

    def test_chunked_body_over_64k_is_413(self):
        # http.client sends an iterable body with chunked encoding.
        chunks = (b"x" * 8192 for _ in range(10))
        r = self.svc.post("/check-login", chunks)
        self.assertEqual(r.status, 413)

    def test_unknown_path_is_404_and_wrong_method_405(self):
        self.assertEqual(self.svc.request("GET", "/nope").status, 404)
        r = self.svc.request("GET", "/check-login")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.header("Allow"), "POST")
        r = self.svc.request("POST", "/healthz", "{}")
        self.assertEqual(r.status, 405)
        self.assertIn("GET", r.header("Allow"))

    def test_get_and_early_answers_keep_the_connection_open(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.svc.port,
                                          timeout=5)
        self.addCleanup(conn.close)
        big = '{"user": "%s", "ip": "203.0.113.7"}' % ("u" * 70000)
        steps = [("GET", "/healthz", None, 200),
                 ("GET", "/readyz", None, 200),
                 ("GET", "/metrics", None, 200),
                 ("HEAD", "/healthz", None, 200),
                 ("GET", "/nope", None, 404),
                 ("POST", "/nope", "{}", 404),
                 ("POST", "/healthz", "{}", 405),
                 ("POST", "/check-login", big, 413),
                 ("GET", "/healthz", None, 200)]
        sock = None
        for method, path, body, status in steps:
            with self.subTest(method=method, path=path):
                conn.request(method, path, body=body)
                r = conn.getresponse()
                r.read()
                self.assertEqual(r.status, status)
                self.assertNotEqual(
                    (r.getheader("Connection") or "").lower(), "close")
                # http.client opens a new socket silently when the server
                # closed the last one.
                if sock is None:
                    sock = conn.sock
                self.assertIs(conn.sock, sock)

    def test_request_pipelined_after_a_get_is_answered(self):
        with socket.create_connection(("127.0.0.1", self.svc.port), 5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
            f = s.makefile("rb")
            statuses = []
            for _ in range(2):
                line = f.readline()
                self.assertTrue(line, "closed after answers %r" % statuses)
                statuses.append(int(line.split(b" ")[1]))
                length = 0
                while True:
                    line = f.readline()
                    if line in (b"\r\n", b""):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                f.read(length)
            f.close()
        self.assertEqual(statuses, [200, 404])

    def test_oversized_headers_are_refused_with_4xx(self):
        # Raw socket: the server may answer and close before the client
        # has sent all of the headers, which http.client reports as a
        # broken pipe rather than the answer.
        with socket.create_connection(("127.0.0.1", self.svc.port), 5) as s:
            try:
                s.sendall(b"POST /check-login HTTP/1.1\r\nHost: x\r\n"
                          b"X-Big: " + b"a" * 40000 + b"\r\n"
                          b"Content-Length: 2\r\n\r\n{}")
            except OSError:
                pass
            s.settimeout(5)
            status = int(s.recv(4096).split(b" ")[1])
        self.assertEqual(status, 431)

        # The service still works afterwards.
        self.assertEqual(
            self.login(self.svc, "a@example.com", "203.0.113.7").status, 200)

    def test_garbage_on_the_socket_does_not_hurt_the_service(self):
        # (libmicrohttpd itself answers an unknown HTTP version with 505;
        # that answer is the protocol's, not ours, and is left as it is.)
        for junk in [b"\x00\x01\x02\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n",
                     b"POST /check-login HTTP/1.1\r\nContent-Length: -5\r\n"
                     b"\r\n"]:
            with socket.create_connection(("127.0.0.1", self.svc.port), 5) \
                    as s:
                s.sendall(junk)
                s.settimeout(5)
                try:
                    data = s.recv(4096)
                except socket.timeout:
                    data = b""
                if data:
                    status = int(data.split(b" ")[1])
                    self.assertTrue(400 <= status < 500, data[:80])
        self.assertEqual(self.svc.request("GET", "/healthz").status, 200)


ADMIN_TOKEN = "tok-" + "7" * 40
ADMIN_AUTH = {"Authorization": "Bearer " + ADMIN_TOKEN}


class AdminOnTest(ServiceTest):
    """A service with the admin API on (ADMIN_TOKEN)."""

    def setUp(self):
        super().setUp()
        token = make_secret(self.workdir, ADMIN_TOKEN.encode(),
                            name="admin.token")
        self.svc = self.service(extra=["--admin-token-file", token])


class DeclaredTooLargeTest(AdminOnTest):
    """A body declared past 1 MiB is answered 413 at once on every route,
    not only on the checks': the rest read it to its end first, and a
    client that never sent it waited out the connection's timeout with
    no answer at all."""

    def test_every_route_answers_a_huge_declared_body_at_once(self):
        for method, path in [("POST", "/check-login"), ("POST", "/nope"),
                             ("GET", "/healthz"), ("POST", "/healthz"),
                             ("POST", "/admin/reset"),
                             ("GET", "/admin/policies"),
                             ("GET", "/admin/ui/")]:
            with self.subTest(method=method, path=path):
                raw = ("%s %s HTTP/1.1\r\nHost: x\r\n"
                       "Content-Length: 5000000\r\n\r\n"
                       % (method, path)).encode() + b"x" * 100000
                # exchange reads for 2 s: well inside the 10 s timeout.
                status, _, body, _ = exchange(self.svc.port, raw)
                self.assertEqual(status, 413, body)
        self.assertEqual(
            self.login(self.svc, "a@example.com", "203.0.113.7").status, 200)


class NulInPathTest(AdminOnTest):
    """A %00 would cut the decoded path short where C strings end."""

    def assert_nul_refused(self, r):
        self.assertEqual(r.status, 400, r.raw)
        self.assertEqual(r.json["field"], "path")
        self.assertTrue(r.json["error"].startswith("path"), r.json)

    def test_encoded_nul_in_a_probe_path_is_400_not_the_probe(self):
        self.assert_nul_refused(self.svc.request("GET", "/healthz%00abc"))
        self.assert_nul_refused(self.svc.request("GET", "/metrics%00"))

    def test_encoded_nul_in_a_policy_name_creates_nothing(self):
        policy = {"endpoint": "login", "key": ["user"],
                  "algorithm": "fixed_window", "limit": 2, "window_s": 60}
        for path in ["/admin/policies/a%00b", "/admin/policies/login.user%00x"]:
            with self.subTest(path=path):
                r = self.svc.request("PUT", path, json.dumps(policy),
                                     headers=ADMIN_AUTH)
                self.assert_nul_refused(r)
        self.assertEqual(self.svc.request("GET", "/admin/policies/a",
                                          headers=ADMIN_AUTH).status, 404)
        r = self.svc.request("GET", "/admin/policies/login.user",
                             headers=ADMIN_AUTH)
        self.assertEqual(r.status, 200)
        self.assertNotEqual(r.json.get("algorithm"), "fixed_window", r.json)

    def test_encoded_nul_in_a_query_argument_is_not_cut_short(self):
        r = self.svc.request("GET", "/admin/audit?limit=1%002",
                             headers=ADMIN_AUTH)
        self.assertEqual(r.status, 400, r.raw)
        self.assertEqual(r.json["field"], "limit")

    def test_encoded_percent_before_zeros_is_not_a_nul(self):
        # %2500 decodes to the text "%00", which is no NUL: an unknown path.
        self.assertEqual(self.svc.request("GET", "/healthz%2500").status, 404)


BODY = b'{"user": "a@example.com", "ip": "203.0.113.7"}'
CL = b"Content-Length: %d\r\n" % len(BODY)
LOGIN = b"POST /check-login HTTP/1.1\r\nHost: x\r\n"

CHUNKED_LOGIN = LOGIN + b"Transfer-Encoding: chunked\r\n\r\n"

FRAMING_CASES = [
    # (name, raw request, status, field the error must name)
    ("two Content-Length", LOGIN + CL + CL + b"\r\n" + BODY, 400, "framing"),
    ("two differing Content-Length",
     LOGIN + CL + b"Content-Length: 2\r\n\r\n" + BODY, 400, "framing"),
    ("Content-Length with Transfer-Encoding",
     LOGIN + CL + b"Transfer-Encoding: chunked\r\n\r\n" +
     b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY), 400, "framing"),
    ("Transfer-Encoding other than chunked",
     LOGIN + b"Transfer-Encoding: gzip, chunked\r\n\r\n", 501,
     "Transfer-Encoding"),
    ("bare LF line ends",
     LOGIN.replace(b"\r\n", b"\n") + CL.replace(b"\r\n", b"\n") + b"\n" +
     BODY, 400, "framing"),
    ("one bare LF", LOGIN + b"X-A: 1\n" + CL + b"\r\n" + BODY, 400,
     "framing"),
    ("obs-fold", LOGIN + b"X-A: 1\r\n  2\r\n" + CL + b"\r\n" + BODY, 400,
     "framing"),
    ("white space before a colon",
     LOGIN + b"Content-Length : %d\r\n\r\n" % len(BODY) + BODY, 400,
     "framing"),
    ("NUL in the request target",
     b"GET /healthz\0abc HTTP/1.1\r\nHost: x\r\n\r\n", 400, "framing"),
    ("NUL in a header", LOGIN + b"X-A: a\0b\r\n" + CL + b"\r\n" + BODY, 400,
     "framing"),
    # Issue 29: chunk lines and trailers, lines ended by CR alone (which
    # libmicrohttpd waits on for ever), two Host, two Transfer-Encoding.
    ("bare LF after a chunk size",
     CHUNKED_LOGIN + b"%x\n%s\r\n0\r\n\r\n" % (len(BODY), BODY), 400,
     "framing"),
    ("bare LF after chunk data",
     CHUNKED_LOGIN + b"%x\r\n%s\n0\r\n\r\n" % (len(BODY), BODY), 400,
     "framing"),
    ("bare LF after the last chunk",
     CHUNKED_LOGIN + b"%x\r\n%s\r\n0\n\r\n" % (len(BODY), BODY), 400,
     "framing"),
    ("bare LF after a trailer",
     CHUNKED_LOGIN + b"%x\r\n%s\r\n0\r\nX-T: 1\n\r\n" % (len(BODY), BODY),
     400, "framing"),
    ("bare LF ending the trailers",
     CHUNKED_LOGIN + b"%x\r\n%s\r\n0\r\n\n" % (len(BODY), BODY), 400,
     "framing"),
    ("chunk data longer than its size",
     CHUNKED_LOGIN + b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY) - 1, BODY), 400,
     "framing"),
    ("every line ended by CR alone",
     b"GET /healthz HTTP/1.1\rHost: x\r\r", 400, "framing"),
    ("CR alone ending a body's head",
     LOGIN + CL + b"\r" + BODY, 400, "framing"),
    ("two Host headers", LOGIN + b"Host: y\r\n" + CL + b"\r\n" + BODY, 400,
     "framing"),
    ("two equal Host headers on a GET",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n", 400,
     "framing"),
    ("Transfer-Encoding: chunked twice",
     CHUNKED_LOGIN.replace(b"\r\n\r\n", b"\r\n") +
     b"Transfer-Encoding: chunked\r\n\r\n" +
     b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY), 400, "framing"),
]


def exchange(port, raw):
    """Sends raw on a new connection; returns (status, headers, body, closed)
    where closed says whether the server ended the connection after its
    answer."""
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(raw)
        s.settimeout(2)
        data = b""
        closed = False
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    closed = True
                    break
                data += chunk
        except socket.timeout:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines[0] else 0
    headers = {k.lower(): v.strip() for k, _, v in
               (line.partition(":") for line in lines[1:])}
    return status, headers, body, closed


class FramingTest(ServiceTest):
    """Requests a proxy in front could read differently: each is refused
    before anything is served, and the connection closed."""

    def setUp(self):
        super().setUp()
        self.svc = self.service()
        # exchange() waits 2 s for an answer: a check must not pay for
        # the first Redis connection's script load on a loaded machine.
        self.open_every_connection(self.svc)

    def test_each_ambiguous_framing_is_refused_and_closes(self):
        for name, raw, status, field in FRAMING_CASES:
            with self.subTest(name):
                got, headers, body, closed = exchange(self.svc.port, raw)
                self.assertEqual(got, status, body)
                self.assertEqual(json.loads(body)["field"], field)
                self.assertEqual(headers.get("connection"), "close")
                self.assertTrue(closed)
        # Nothing was counted: no request above reached a check.
        r = self.login(self.svc, "a@example.com", "203.0.113.7")
        self.assertEqual(r.status, 200)
        d = [d for d in r.json["decisions"] if d["policy"] == "login.user_ip"]
        self.assertEqual(d[0]["remaining"], 4, r.json)

    def test_the_same_requests_well_framed_are_served(self):
        good = [LOGIN + CL + b"\r\n" + BODY,
                LOGIN + b"Transfer-Encoding: chunked\r\n\r\n" +
                b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY),
                # Two chunks, an extension and a trailer, all CRLF.
                CHUNKED_LOGIN + b"5;x=1\r\n%s\r\n%x\r\n%s\r\n"
                b"0\r\nX-Trailer: 1\r\n\r\n"
                % (BODY[:5], len(BODY) - 5, BODY[5:]),
                b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"]
        for raw in good:
            with self.subTest(raw[:40]):
                status, headers, body, _ = exchange(self.svc.port, raw)
                self.assertEqual(status, 200, body)

    def test_http_1_1_without_host_is_400(self):
        status, _, _, closed = exchange(self.svc.port,
                                        b"GET /healthz HTTP/1.1\r\n\r\n")
        self.assertEqual(status, 400)
        self.assertTrue(closed)
        status, _, _, _ = exchange(self.svc.port,
                                   b"GET /healthz HTTP/1.0\r\n\r\n")
        self.assertEqual(status, 200)

    def test_a_chunked_request_ends_its_connection(self):
        raw = (LOGIN + b"Transfer-Encoding: chunked\r\n\r\n" +
               b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY) +
               b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, body, closed = exchange(self.svc.port, raw)
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("connection"), "close")
        self.assertNotIn(b"HTTP/1.1", body)  # the pipelined GET is not served
        self.assertTrue(closed)


if __name__ == "__main__":
    unittest.main()
