# SPDX-License-Identifier: Apache-2.0
"""The example login services (examples/, one per client), end to end:
each runs against a real abuseguard and redis-server, and a browser-like
client of this test logs in, is brute-forced from one address behind a
trusted proxy, sends a hostile username, logs in with a breached
password, sends and verifies a one-time code, and then meets an
abuseguard that hangs: logins go on, codes stop. All three must behave
alike."""
import hashlib
import http.client
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import BINARY, ServiceTest, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FP_KEY = "42" * 32


class Example:
    """One example service process."""

    def __init__(self, argv, cwd, env, log):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=log)
        deadline = time.monotonic() + 120
        line = b""
        while time.monotonic() < deadline and b"listening" not in line:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    break
        if b"listening" not in line:
            self.stop()
            raise AssertionError("example did not start: %r" % line)
        self.port = int(env["PORT"])

    def post(self, path, body, headers=None, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)
        try:
            conn.request("POST", path, json.dumps(body),
                         dict({"Content-Type": "application/json"},
                              **(headers or {})))
            r = conn.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, (
                json.loads(data) if data else None)
        finally:
            conn.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


class ExamplesTest(ServiceTest):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ag-examples-")
        env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off",
                   GOSUMDB="off", GOTOOLCHAIN="local",
                   GOCACHE=os.environ.get("GOCACHE") or
                   os.path.join(cls.tmp, "gocache"))
        cls.go_bin = os.path.join(cls.tmp, "login_service")
        subprocess.run(["go", "build", "-o", cls.go_bin, "."],
                       cwd=os.path.join(ROOT, "examples", "go"), env=env,
                       check=True, timeout=600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        super().setUp()
        source = os.path.join(self.workdir, "sha1.txt")
        with open(source, "w") as f:
            # bob's demo password is a breached one.
            f.write("%s:1234\n" % hashlib.sha1(b"Tr0ub4dor&3").hexdigest()
                    .upper())
        corpus = os.path.join(self.workdir, "sha1.agp")
        subprocess.run([BINARY, "pwned", "import", "--mode", "sha1",
                        "--output", corpus, source], check=True,
                       capture_output=True, timeout=60)
        self.svc = self.service(extra=["--pwned-file", corpus,
                                       "--redis-timeout-ms", "500"])

    def example(self, lang):
        port = free_port()
        env = dict(os.environ, ABUSEGUARD_URL="http://127.0.0.1:%d" %
                   self.svc.port, PORT=str(port), FP_KEY_HEX=FP_KEY,
                   TRUSTED_PROXIES="127.0.0.1/32", COOKIE_SECURE="0")
        argv = {"python": ["python3", "login_service.py"],
                "node": ["node", "login_service.mjs"],
                "go": [self.go_bin]}[lang]
        log = open(os.path.join(self.workdir, "example-%s.log" % lang), "ab")
        self.addCleanup(log.close)
        ex = Example(argv, os.path.join(ROOT, "examples", lang), env, log)
        self.addCleanup(ex.stop)
        return ex

    def walk(self, ex):
        """The whole story against one example; returns what happened,
        which must be the same for every example."""
        seen = []
        ana = {"user": "ana@example.com",
               "password": "correct horse battery staple"}
        # A good login: a device cookie of ana's own.
        st, h, body = ex.post("/login", ana,
                              {"X-Forwarded-For": "192.0.2.10"})
        self.assertEqual((st, body), (200, {"ok": True, "breached": False}))
        cookie = h["set-cookie"]
        self.assertRegex(cookie, r"^ag_device_[0-9a-f]{16}=v1\.")
        self.assertIn("HttpOnly", cookie)
        self.assertIn("SameSite=Lax", cookie)
        self.assertNotIn("Secure", cookie)  # COOKIE_SECURE=0
        jar = cookie.split(";")[0]
        seen.append(("login", st))
        # Brute force of bob from one address behind the trusted proxy:
        # five wrong passwords, then 429 with Retry-After.
        # Each guess another password: a wrong one retyped counts once.
        wrong = [{"user": "bob@example.com", "password": "guess%d" % i}
                 for i in range(7)]
        attacker = {"X-Forwarded-For": "6.6.6.6, 203.0.113.66"}
        got = [ex.post("/login", wrong[i], attacker)[0] for i in range(5)]
        self.assertEqual(got, [401] * 5)
        st, h, body = ex.post("/login", wrong[5], attacker)
        self.assertEqual(st, 429, body)
        self.assertGreaterEqual(int(h["retry-after"]), 1)
        seen.append(("brute_force", got + [st]))
        # The spoofed leftmost address was not the one counted: the same
        # attacker claiming another one is still refused.
        st, _, _ = ex.post("/login", wrong[6],
                           {"X-Forwarded-For": "7.7.7.7, 203.0.113.66"})
        self.assertEqual(st, 429)
        # A hostile username is refused, never let through.
        st, _, body = ex.post("/login", {"user": "q\u0007@example.com",
                                         "password": "x"})
        self.assertEqual(st, 400, body)
        seen.append(("hostile", st))
        # bob's right password is a breached one: a second factor first,
        # then the login with the challenge's nonce.
        st, _, body = ex.post("/login", {"user": "bob@example.com",
                                         "password": "Tr0ub4dor&3"},
                              {"X-Forwarded-For": "198.51.100.20"})
        self.assertEqual(st, 401, body)
        self.assertTrue(body["challenge_nonce"], body)
        st, _, body = ex.post("/login", {
            "user": "bob@example.com", "password": "Tr0ub4dor&3",
            "challenge_passed": body["challenge_nonce"]},
            {"X-Forwarded-For": "198.51.100.20"})
        self.assertEqual((st, body), (200, {"ok": True, "breached": True}))
        seen.append(("breached", st))
        # A one-time code sent and verified; a wrong one refused.
        phone = {"phone": "+14155550100"}
        st, _, body = ex.post("/otp/send", phone,
                              {"X-Forwarded-For": "192.0.2.10"})
        self.assertEqual(st, 200, body)
        code = body["code"]
        st, _, _ = ex.post("/otp/verify", dict(phone, code="000000"
                                               if code != "000000"
                                               else "111111"))
        self.assertEqual(st, 401)
        st, _, body = ex.post("/otp/verify", dict(phone, code=code))
        self.assertEqual((st, body), (200, {"ok": True}))
        seen.append(("otp", st))
        # abuseguard hangs: ana still logs in with her cookie (the check
        # fails open, the report is lost), and codes stop (fail closed).
        os.kill(self.svc.proc.pid, signal.SIGSTOP)
        try:
            st, _, body = ex.post("/login", ana,
                                  {"X-Forwarded-For": "192.0.2.10",
                                   "Cookie": jar})
            self.assertEqual(st, 200, body)
            st, _, body = ex.post("/otp/send", {"phone": "+14155550101"})
            self.assertEqual(st, 429, body)
        finally:
            os.kill(self.svc.proc.pid, signal.SIGCONT)
        seen.append(("outage", st))
        return seen

    def test_each_example_walks_the_same_story(self):
        seen = {}
        for lang in ("python", "node", "go"):
            with self.subTest(example=lang):
                # Nothing of the last example's story left: Redis emptied,
                # and the service's cached denials with its process.
                self.redis.cmd("FLUSHALL")
                self.svc.restart()
                seen[lang] = self.walk(self.example(lang))
        self.assertEqual(seen["node"], seen["python"])
        self.assertEqual(seen["go"], seen["python"])


if __name__ == "__main__":
    unittest.main()
