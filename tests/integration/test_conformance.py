# SPDX-License-Identifier: Apache-2.0
"""The clients' one conformance suite (issue 38): the Python, Node.js and
Go clients (clients/) each run every scenario of
tests/conformance/scenarios.json through their driver
(clients/README.md, "The conformance driver") against a real abuseguard
and redis-server, fresh for each client and scenario. Each step's
`expect` must hold, and the three clients' results must be identical.
Then the helpers: the password fingerprint's vectors (recomputed here
with openssl), client addresses behind proxies, device cookies and
webhook signatures, the same in all three.

Needs node (18 or later) and go (Debian's golang-go); scripts/test.sh
installs them. Without them the test fails: it does not skip."""
import hashlib
import hmac
import http.client
import json
import os
import select
import shutil
import signal
import subprocess
import time
import unittest

from harness import BINARY, ServiceTest, _tcp_table, make_secret, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CONF = os.path.join(ROOT, "tests", "conformance")
TOKEN = "tok-" + "c" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
# The breached-password corpus: SHA-1 of "password", and a neighbour.
CORPUS = ("5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n"
          "5BAA6FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:2\n")
CLIENTS = ("python", "node", "go")
CALL_TIMEOUT_S = 60  # a driver that answers nothing in this long is hung


def load(name):
    with open(os.path.join(CONF, name), encoding="utf-8") as f:
        return json.load(f)


class Driver:
    """One client's driver process, spoken to a JSON line at a time."""

    def __init__(self, argv, cwd, log):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log)
        self.n = 0

    def call(self, op, args):
        self.n += 1
        line = json.dumps({"id": self.n, "op": op, "args": args})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [],
                                    CALL_TIMEOUT_S)
        if not ready:
            raise AssertionError("driver hung on %s" % line)
        out = self.proc.stdout.readline()
        if not out:
            raise AssertionError("driver exited on %s" % line)
        reply = json.loads(out)
        if reply.get("id") != self.n:
            raise AssertionError("reply %r to %s" % (reply, line))
        return reply

    def close(self):
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def shape(value):
    """A nonce's or a token's value compared as present or absent: two
    clients never receive the same one."""
    return None if value is None else "<set>"


class ConformanceTest(ServiceTest):
    @classmethod
    def setUpClass(cls):
        cls.build_dir = None
        go = shutil.which("go")
        if not go:
            raise AssertionError("go is missing (apt-get install golang-go)")
        if not shutil.which("node"):
            raise AssertionError("node is missing")
        # The Go driver, built once, offline: it has no dependency beyond
        # the standard library and the client (a replace in its go.mod).
        import tempfile
        cls.build_dir = tempfile.mkdtemp(prefix="ag-conformance-")
        env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off",
                   GOSUMDB="off", GOTOOLCHAIN="local",
                   GOCACHE=os.environ.get("GOCACHE") or
                   os.path.join(cls.build_dir, "gocache"))
        cls.go_driver = os.path.join(cls.build_dir, "driver")
        subprocess.run([go, "build", "-o", cls.go_driver, "."],
                       cwd=os.path.join(CONF, "go"), env=env, check=True,
                       timeout=600)

    @classmethod
    def tearDownClass(cls):
        if cls.build_dir:
            shutil.rmtree(cls.build_dir, ignore_errors=True)

    def driver(self, client):
        argv = {"python": ["python3", os.path.join(CONF, "driver.py")],
                "node": ["node", os.path.join(CONF, "driver.mjs")],
                "go": [self.go_driver]}[client]
        log = open(os.path.join(self.workdir, "driver-%s.log" % client),
                   "ab")
        self.addCleanup(log.close)
        d = Driver(argv, ROOT, log)
        self.addCleanup(d.close)
        return d

    # ---- the service of a scenario

    def start(self, spec):
        """A fresh redis-server's keys and abuseguard for one run of a
        scenario: its service, and the variables its steps may use."""
        self.redis.cmd("FLUSHALL")
        extra = ["--admin-token-file", self.token_file]
        if spec.get("corpus"):
            extra += ["--pwned-file", self.corpus]
        if spec.get("max_conns_per_ip"):
            extra += ["--max-conns-per-ip", str(spec["max_conns_per_ip"])]
        if spec.get("default_redis_timeout"):
            # The harness's 2 s is for loaded machines; this scenario
            # judges the service's own default against the client's.
            extra += ["--redis-timeout-ms", "50"]
        # A database of its own: nothing of another run's policies.
        self.runs += 1
        svc = self.service(extra=extra, name="conf", db=os.path.join(
            self.workdir, "policies-%d.db" % self.runs))
        if spec.get("closed_policy"):
            # A policy that fails closed; the fleet takes edits once it
            # has settled after the start (503 until then).
            put = []

            def added():
                put.append(svc.request(
                    "PUT", "/admin/policies/login.closed",
                    {"endpoint": "login", "key": ["ip"],
                     "algorithm": "fixed_window", "limit": 1000000,
                     "window_s": 60, "fail": "closed",
                     "applies_to": "untrusted"}, headers=AUTH))
                return put[-1].status != 503
            self.assertTrue(wait_until(added, 30.0), put[-1].raw)
            self.assertIn(put[-1].status, (200, 201), put[-1].raw)
            # Applied here once the reload took it.
            self.assertTrue(wait_until(lambda: any(
                d.get("policy") == "login.closed" for d in svc.post(
                    "/check-login", {"user": "probe@example.com",
                                     "ip": "192.0.2.251"}).json.get(
                    "decisions", [])), 10.0))
        # A username of 70 000 bytes: over the service's 64 KiB body cap.
        variables = {"base_url": "http://127.0.0.1:%d" % svc.port,
                     "huge": "x" * 70000 + "@example.com"}
        if spec.get("corpus"):
            bare = self.service(name="bare")
            variables["bare_url"] = "http://127.0.0.1:%d" % bare.port
        return svc, variables

    def stop_all(self):
        for s in self.services:
            if s.proc.poll() is None:
                os.kill(s.proc.pid, signal.SIGCONT)
            rc = s.stop()
            self.assertEqual(rc, 0, s.log_text())
        self.services = []

    def control(self, step, svc, held):
        what = step["control"]
        if what == "stop_redis":
            os.kill(self.redis.proc.pid, signal.SIGSTOP)
        elif what == "cont_redis":
            os.kill(self.redis.proc.pid, signal.SIGCONT)
        elif what == "stop_service":
            os.kill(svc.proc.pid, signal.SIGSTOP)
        elif what == "cont_service":
            os.kill(svc.proc.pid, signal.SIGCONT)
        elif what == "raise_shield":
            path = "/admin/shields/" + step["policy"]
            r = svc.request("POST", path, {"raise_for_s": 600},
                            headers=AUTH)
            self.assertEqual(r.status, 200, r.raw)
            probe = {"user": "probe@example.com", "ip": "192.0.2.250"}
            self.assertTrue(wait_until(
                lambda: svc.post("/check-login", probe).json.get("policy")
                == step["policy"], 5.0))
        elif what == "hold_cap":
            # The cap's worth of kept-alive connections from the drivers'
            # own address, each answered once so that the service counts
            # it; first, the service has closed every connection of the
            # harness's own (its start's probes), which would count too.
            def server_side():
                return [k for k in _tcp_table()
                        if k[0] == ("127.0.0.1", svc.port) and k[1][1]]
            self.assertTrue(wait_until(lambda: not server_side(), 10.0),
                            server_side())
            for _ in range(4):
                conn = http.client.HTTPConnection("127.0.0.1", svc.port,
                                                  timeout=10)
                conn.request("GET", "/healthz")
                self.assertEqual(conn.getresponse().status, 200)
                held.append(conn)
        elif what == "release_cap":
            for conn in held:
                conn.close()
            held.clear()
            self.assertTrue(wait_until(
                lambda: svc.request("GET", "/healthz").status == 200, 5.0))
        else:
            raise AssertionError("unknown control %r" % what)

    # ---- running a scenario

    def flat(self, steps):
        for step in steps:
            if "repeat" in step:
                for _ in range(step["repeat"]):
                    yield from self.flat(step["steps"])
            else:
                yield step

    def substitute(self, args, variables):
        out = {}
        for k, v in args.items():
            if isinstance(v, str) and v.startswith("$"):
                self.assertIn(v[1:], variables, "no %s saved yet" % v)
                v = variables[v[1:]]
            out[k] = v
        return out

    def judge(self, where, step, reply):
        """Checks reply against the step's expectation; returns what the
        three clients must agree on."""
        if "expect_usage_error" in step:
            self.assertIn("usage_error", reply, where)
            self.assertEqual(reply["usage_error"]["status"],
                             step["expect_usage_error"]["status"], where)
            self.assertEqual(reply["usage_error"].get("field"),
                             step["expect_usage_error"]["field"], where)
            return {"usage_error": reply["usage_error"]["status"],
                    "field": reply["usage_error"].get("field")}
        self.assertNotIn("usage_error", reply, where)
        result = reply["result"]
        want = step.get("expect")
        if isinstance(result, dict):
            result = dict(result)
            for k in ("challenge_nonce", "device_token"):
                if k in result:
                    result[k] = shape(result[k])
            for k in step.get("mask", ()):
                result.pop(k, None)
            self.assertIsInstance(want or {}, dict, where)
            for k, v in (want or {}).items():
                self.assertEqual(result.get(k, "<missing>"), v,
                                 "%s: %s in %r" % (where, k, result))
            # A countdown read a second apart differs by one: compared
            # across clients as there or not.
            if "retry_after" in result:
                result["retry_after"] = result["retry_after"] > 0
        elif want is not None:
            self.assertEqual(result, want, where)
        return result

    def run_scenario(self, client, sc):
        svc, variables = self.start(sc.get("service", {}))
        d = self.driver(client)
        held = []
        self.addCleanup(lambda: [c.close() for c in held])
        try:
            opts = dict(sc.get("client", {}), base_url=variables["base_url"])
            self.assertIsNone(d.call("new_client", opts).get("result"))
            results = []
            for i, step in enumerate(self.flat(sc["steps"])):
                where = "%s/%s step %d (%s)" % (
                    client, sc["name"], i, step.get("op", step.get("control")))
                if "control" in step:
                    self.control(step, svc, held)
                    continue
                args = self.substitute(step.get("args", {}), variables)
                reply = d.call(step["op"], args)
                results.append(self.judge(where, step, reply))
                for name, field in step.get("save", {}).items():
                    variables[name] = reply["result"][field]
            return results
        finally:
            os.kill(self.redis.proc.pid, signal.SIGCONT)
            d.close()
            self.stop_all()

    def setUp(self):
        super().setUp()
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")
        source = os.path.join(self.workdir, "sha1.txt")
        with open(source, "w") as f:
            f.write(CORPUS)
        self.corpus = os.path.join(self.workdir, "sha1.agp")
        self.runs = 0
        subprocess.run([BINARY, "pwned", "import", "--mode", "sha1",
                        "--output", self.corpus, source], check=True,
                       capture_output=True, timeout=60)

    def test_every_scenario_gives_every_client_the_same_verdicts(self):
        scenarios = load("scenarios.json")["scenarios"]
        self.assertGreaterEqual(len(scenarios), 10)
        for sc in scenarios:
            with self.subTest(scenario=sc["name"]):
                seen = {c: self.run_scenario(c, sc) for c in CLIENTS}
                for c in CLIENTS[1:]:
                    self.assertEqual(seen[c], seen[CLIENTS[0]],
                                     "%s: %s differs from %s" % (
                                         sc["name"], c, CLIENTS[0]))

    # ---- the helpers, no service needed

    def helper_results(self, calls):
        """Each client's results of calls (op, args): asserted equal, and
        returned once."""
        seen = {}
        for c in CLIENTS:
            d = self.driver(c)
            seen[c] = [d.call(op, args) for op, args in calls]
            d.close()
        for c in CLIENTS[1:]:
            self.assertEqual(seen[c], seen[CLIENTS[0]], c)
        return [r.get("result", r) for r in seen[CLIENTS[0]]]

    def test_password_fingerprints_match_the_vectors_and_openssl(self):
        doc = load("vectors.json")
        vectors = doc["password_fingerprint"]
        for v in vectors:
            # The vectors themselves, by another implementation.
            out = subprocess.run(
                ["openssl", "dgst", "-sha256", "-mac", "HMAC", "-macopt",
                 "hexkey:" + v["key_hex"]], input=v["password"].encode(),
                capture_output=True, check=True).stdout.decode()
            self.assertEqual(out.split()[-1], v["fp"], v)
        calls = [("password_fingerprint", {"key_hex": v["key_hex"],
                                           "password": v["password"]})
                 for v in vectors]
        calls += [("password_fingerprint", {"key_hex": k, "password": "x"})
                  for k in doc["short_keys"]]
        got = self.helper_results(calls)
        self.assertEqual(got[:len(vectors)], [v["fp"] for v in vectors])
        self.assertEqual(got[len(vectors):],
                         [{"error": "key"}] * len(doc["short_keys"]))
        # No normalisation: the NFC and NFD spellings differ.
        nfc, nfd = (v["fp"] for v in vectors
                    if v["password"].startswith("P") and "w" in v["password"])
        self.assertNotEqual(nfc, nfd)

    def test_client_addresses_behind_trusted_proxies(self):
        cases = load("helpers.json")["client_ip"]
        got = self.helper_results([("client_ip", c["args"]) for c in cases])
        for c, g in zip(cases, got):
            self.assertEqual(g, c["want"], c["why"])

    def test_device_cookies_one_per_account(self):
        got = self.helper_results([
            ("device_cookie_name", {"user_id": "ana@example.com"}),
            ("device_cookie_name", {"user_id": "bob@example.com"}),
            ("device_cookie", {"user_id": "ana@example.com", "token": "v1.t",
                               "max_age": 2592000, "secure": True}),
            ("device_cookie", {"user_id": "ana@example.com", "token": "v1.t",
                               "max_age": 60, "secure": False}),
            ("device_token_from_cookies", {
                "cookie_header": "a=1; %s=v1.bob; x=y" % self.cookie_name(
                    "bob@example.com"), "user_id": "bob@example.com"}),
            ("device_token_from_cookies", {
                "cookie_header": "%s=v1.bob" % self.cookie_name(
                    "bob@example.com"), "user_id": "ana@example.com"}),
        ])
        ana, bob = self.cookie_name("ana@example.com"), self.cookie_name(
            "bob@example.com")
        self.assertEqual(got[:2], [ana, bob])
        self.assertEqual(got[2], {"name": ana, "set_cookie": (
            "%s=v1.t; Max-Age=2592000; Path=/; HttpOnly; SameSite=Lax; "
            "Secure" % ana)})
        self.assertEqual(got[3]["set_cookie"],
                         "%s=v1.t; Max-Age=60; Path=/; HttpOnly; "
                         "SameSite=Lax" % ana)
        self.assertEqual(got[4:], ["v1.bob", None])

    @staticmethod
    def cookie_name(user_id):
        digest = hashlib.sha256(("abuseguard-device:" + user_id).encode())
        return "ag_device_" + digest.hexdigest()[:16]

    def test_webhook_signatures(self):
        secret = bytes(range(32))
        body = '{"id":"1-1","type":"lockout"}'
        now = 1_800_000_000

        def sig(t, b=body, key=secret):
            mac = hmac.new(key, ("%d." % t).encode() + b.encode(),
                           hashlib.sha256).hexdigest()
            return "t=%d,v1=%s" % (t, mac)

        base = {"secret_hex": secret.hex(), "body": body, "now": now}
        cases = [
            (sig(now), True, "signed now"),
            (sig(now - 299), True, "within the 5 minutes"),
            (sig(now - 301), False, "too old: a replay"),
            (sig(now + 301), False, "too far ahead"),
            (sig(now, body + " "), False, "another body"),
            (sig(now, key=bytes(32)), False, "another key"),
            ("t=%d" % now, False, "no v1"),
            ("v1=" + "0" * 64, False, "no t"),
            ("garbage", False, "not the format"),
            ("t=x,v1=" + "0" * 64, False, "t not a number"),
        ]
        got = self.helper_results([("verify_webhook", dict(base, header=h))
                                   for h, _, _ in cases])
        for (h, want, why), g in zip(cases, got):
            self.assertEqual(g, want, why)
        got = self.helper_results([("verify_webhook", dict(
            base, header=sig(now - 500), tolerance=600))])
        self.assertEqual(got, [True])


if __name__ == "__main__":
    unittest.main()
