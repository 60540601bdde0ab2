# SPDX-License-Identifier: Apache-2.0
"""abuseguard healthcheck: a container platform's probe, with no curl in
the image (issue 42). It finds the service from the service's own flags
and environment, asks /healthz (alive) or with --ready /readyz (policies
loaded, Redis answering) and says so by its exit status."""
import http.server
import os
import socket
import socketserver
import subprocess
import threading
import time

from harness import BINARY, ServiceTest, free_port


def healthcheck(*args, env=None):
    return subprocess.run([BINARY, "healthcheck", *args],
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, **(env or {})})


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _Probe(http.server.BaseHTTPRequestHandler):
    """/healthz 200, /readyz 503: a listener on a unix socket."""

    def do_GET(self):
        code = 200 if self.path == "/healthz" else 503
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.server.paths.append(self.path)

    def address_string(self):
        return "unix"

    def log_message(self, *args):
        pass


class HealthcheckTest(ServiceTest):
    def test_alive_and_ready_while_redis_answers(self):
        svc = self.service()
        listen = "127.0.0.1:%d" % svc.port
        for args in ((), ("--ready",)):
            r = healthcheck("--listen", listen, *args)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")
        # From the environment, as the unit and the image give it. An
        # address bound to every interface is asked on loopback (Linux
        # would take 0.0.0.0 as a destination too; other systems do not).
        r = healthcheck("--ready",
                        env={"ABUSEGUARD_LISTEN": "0.0.0.0:%d" % svc.port})
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_alive_but_not_ready_without_redis(self):
        svc = self.service()
        listen = "127.0.0.1:%d" % svc.port
        self.redis.stop()
        r = healthcheck("--listen", listen, "--ready")
        self.assertEqual(r.returncode, 1)
        self.assertIn("http://127.0.0.1:%d/readyz answered 503" % svc.port,
                      r.stderr)
        r = healthcheck("--listen", listen)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_nothing_listening_is_unhealthy_and_said(self):
        port = free_port()
        started = time.monotonic()
        r = healthcheck("--listen", "127.0.0.1:%d" % port)
        self.assertEqual(r.returncode, 1)
        self.assertIn("http://127.0.0.1:%d/healthz" % port, r.stderr)
        self.assertLess(time.monotonic() - started, 10)

    def test_a_bad_flag_is_bad_usage_naming_it(self):
        r = healthcheck("--listen", "nowhere")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--listen", r.stderr)
        self.assertIn("usage: abuseguard healthcheck", r.stderr)
        r = healthcheck("--no-such-flag")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--no-such-flag", r.stderr)

    def test_a_unix_socket_listener_is_asked_through_its_socket(self):
        path = os.path.join(self.workdir, "probe.sock")
        server = _UnixServer(path, _Probe)
        server.paths = []
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            r = healthcheck("--listen", "unix://" + path)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = healthcheck("--listen", "unix://" + path, "--ready")
            self.assertEqual(r.returncode, 1)
            self.assertIn("answered 503", r.stderr)
            self.assertEqual(server.paths, ["/healthz", "/readyz"])
        finally:
            server.shutdown()
            server.server_close()

    def test_no_proxy_is_used(self):
        svc = self.service()
        # A proxy that does not exist: asked, it would fail the probe.
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        proxy = "http://127.0.0.1:%d" % dead.getsockname()[1]
        try:
            r = healthcheck("--listen", "127.0.0.1:%d" % svc.port,
                            env={"http_proxy": proxy, "HTTP_PROXY": proxy,
                                 "ALL_PROXY": proxy})
        finally:
            dead.close()
        self.assertEqual(r.returncode, 0, r.stderr)
