# SPDX-License-Identifier: Apache-2.0
"""Test harness: a private redis-server and real abuseguard processes.

Every test process gets its own temporary directory, a redis-server on a
spare loopback port, and as many service instances as it asks for. All
traffic stays on 127.0.0.1. The binary comes from $AG_BINARY (ctest sets
it); the service runs as built (with sanitizers in the test build), and a
clean exit on SIGTERM is asserted, so a leak or sanitizer report fails the
test that caused it.
"""
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

BINARY = os.environ.get("AG_BINARY") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
    "abuseguard")
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
# The fleet's keys (ag::fleet:{<name>}:head, :log, :base, :members).
FLEET_KEYS = "ag::fleet:"


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A loopback port nothing listens on, drawn from outside the kernel's
    ephemeral range: a port the kernel picked for us (bind to 0) is one it
    may hand out again as the local port of any outgoing connection before
    our server binds it, which made starts fail with "Address already in
    use" under parallel tests. 20000-39999 is the cluster nodes' (and
    their bus ports'), harness_topology.cluster_port."""
    lo, hi = _ephemeral_range()
    candidates = [p for p in range(10000, 20000) if not lo <= p <= hi]
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.choice(candidates)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port")


# Seconds an instance may take to follow a policy edit made elsewhere
# (ServiceTest.assert_follows).
FOLLOW_S = 5


def wait_until(pred, timeout=10.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def _tcp_table():
    """The host's IPv4 TCP sockets from /proc/net/tcp, as {(local, remote):
    (tx_queue, rx_queue)}, each address an (ip, port) pair."""
    def addr(text):
        ip, port = text.split(":")
        return (socket.inet_ntoa(int(ip, 16).to_bytes(4, "little")),
                int(port, 16))
    table = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            tx, rx = (int(q, 16) for q in fields[4].split(":"))
            table[addr(fields[1]), addr(fields[2])] = (tx, rx)
    return table


def read_by_server(sock):
    """Whether the server end of sock, a client's TCP connection on
    loopback, has taken and read every byte the client sent: none
    unacknowledged on the client's side, none unread on the server's. Once
    a request is sent, this is the sure sign that the server has it in
    hand (a sleep is only a guess on a loaded machine)."""
    local, remote = sock.getsockname(), sock.getpeername()
    table = _tcp_table()
    mine, theirs = table.get((local, remote)), table.get((remote, local))
    return mine is not None and theirs is not None and \
        mine[0] == 0 and theirs[1] == 0


class Redis:
    """A private redis-server and a minimal RESP client for assertions."""

    def __init__(self, workdir, extra=()):
        self.workdir = workdir
        self.extra = list(extra)  # more redis-server arguments
        self.port = free_port()
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.workdir,
             # DEBUG SLEEP stalls Redis in tests of timeouts.
             "--enable-debug-command", "local",

             "--logfile", os.path.join(self.workdir, "redis.log")]
            + self.extra,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_until(self._pings):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def _pings(self):
        try:
            return self.cmd("PING") == "PONG"
        except OSError:
            return False

    def cmd(self, *args):
        with socket.create_connection(("127.0.0.1", self.port), 2) as s:
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)
            return _read_reply(s.makefile("rb"))

    def keys(self):
        """The keys the checks wrote: every key but the fleet's history
        (ag::fleet:{<name>}:..., test_fleet*.py's subject), which every
        instance writes at start."""
        return sorted(k for k in self.cmd("KEYS", "*")
                      if not k.startswith(FLEET_KEYS))

    def all_keys(self):
        return sorted(self.cmd("KEYS", "*"))

    def dump_text(self):
        """Every key and every value it holds, whatever its type, as text:
        what a no-plaintext test searches."""
        out = []
        for key in self.all_keys():
            out.append(key)
            kind = self.cmd("TYPE", key)
            if kind == "string":
                out.append(self.cmd("GET", key))
            elif kind == "hash":
                out.extend(self.cmd("HGETALL", key))
            elif kind == "list":
                out.extend(self.cmd("LRANGE", key, 0, -1))
            elif kind == "set":
                out.extend(self.cmd("SMEMBERS", key))
            elif kind == "zset":
                out.extend(self.cmd("ZRANGE", key, 0, -1, "WITHSCORES"))
            elif kind == "stream":
                out.append(json.dumps(self.cmd("XRANGE", key, "-", "+")))
            else:
                raise AssertionError("key %s of type %s" % (key, kind))
        return "\n".join(str(x) for x in out)

    def command_stats(self):
        """INFO commandstats as {command: {"calls": n, "failed_calls": n,
        ...}}; a command never run is absent."""
        stats = {}
        for line in self.cmd("INFO", "commandstats").splitlines():
            if line.startswith("cmdstat_"):
                name, fields = line[len("cmdstat_"):].split(":", 1)
                stats[name] = {k: float(v) for k, v in
                               (f.split("=") for f in fields.split(","))}
        return stats


def _read_reply(f):
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode("utf-8", "replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RuntimeError("bad reply %r" % line)


class Gate:
    """A TCP relay on loopback in front of one redis-server, which the test
    can cut: for one instance to lose Redis while the others keep it.
    While cut, every relayed connection is closed and new ones are closed
    as soon as they are accepted; opened again, it relays anew."""

    def __init__(self, port):
        self.target = port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.socks = []
        self.is_cut = False
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def _accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.is_cut or self.closed:
                    c.close()
                    continue
                try:
                    u = socket.create_connection(("127.0.0.1", self.target),
                                                 2)
                except OSError:
                    c.close()
                    continue
                self.socks += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b),
                                 daemon=True).start()

    def _pump(self, a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            self.is_cut = True
            socks, self.socks = self.socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def restore(self):
        with self.lock:
            self.is_cut = False

    def close(self):
        with self.lock:
            self.closed = True
        self.cut()
        self.listener.close()


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.raw = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def header(self, name):
        return self.headers.get(name.lower())

    @classmethod
    def read_from(cls, sock):
        """The response that arrives on sock, a connection whose request
        was sent by hand (Service.send)."""
        r = http.client.HTTPResponse(sock)
        try:
            r.begin()
            return cls(r.status, {k.lower(): v for k, v in r.getheaders()},
                       r.read())
        finally:
            r.close()


class Service:
    """One abuseguard process."""

    def __init__(self, workdir, redis_url, db=None, secret=None, extra=(),
                 name="svc"):
        self.workdir = workdir
        self.port = free_port()
        self.db = db or os.path.join(workdir, "policies.db")
        self.secret = secret
        self.log_path = os.path.join(workdir, "%s-%d.log" % (name, self.port))
        self.args = [BINARY, "--listen", "127.0.0.1:%d" % self.port,
                     "--redis", redis_url, "--db", self.db,
                     "--secret-file", secret, "--redis-timeout-ms", "2000",
                     *extra]
        self.log = open(self.log_path, "wb")
        self._spawn()

    def _spawn(self):
        self.proc = subprocess.Popen(self.args, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        if not wait_until(self._healthy):
            self.proc.kill()
            self.proc.wait()
            self.log.close()
            raise RuntimeError("service did not start: " + self.log_text())

    def restart(self):
        """The same process again (same flags, port, database and log),
        after stop or a kill."""
        if self.proc.poll() is None:
            self.stop()
        self.proc.wait()
        if not self.log.closed:
            self.log.close()
        self.log = open(self.log_path, "ab")
        self._spawn()

    def _healthy(self):
        if self.proc.poll() is not None:
            return False
        try:
            return self.request("GET", "/healthz").status == 200
        except OSError:
            return False

    def request(self, method, path, body=None, headers=None, timeout=10,
                source=None):
        """One request on a new connection; source (such as "127.0.0.2")
        is the client's address, any loopback one on Linux."""
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=timeout,
            source_address=(source, 0) if source else None)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            return Response(r.status, hdrs, data)
        finally:
            conn.close()

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def send(self, path, body, source=None, timeout=10):
        """POSTs body (a dict, as JSON) on a new connection and returns
        the connection once the service has read the whole request
        (read_by_server), for a test that acts while the request is being
        handled; Response.read_from reads the answer. The caller closes
        the connection."""
        data = json.dumps(body).encode()
        sock = socket.create_connection(
            ("127.0.0.1", self.port), timeout,
            source_address=(source, 0) if source else None)
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s"
                     % (path.encode(), len(data), data))
        if not wait_until(lambda: read_by_server(sock), timeout):
            sock.close()
            raise RuntimeError("the service never read the request")
        return sock

    def stop(self):
        """SIGTERM; returns the exit status (0 after a clean drain)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def make_secret(workdir, content=None, mode=0o600, name="secret.key"):
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(content if content is not None else os.urandom(32))
    os.chmod(path, mode)
    return path


def digest(secret_path, parts):
    """The service's key digest, computed independently: keyed BLAKE2b-128
    over length-prefixed (kind, value) pairs."""
    with open(secret_path, "rb") as f:
        key = f.read()
    if len(key) > 64:
        key = hashlib.blake2b(key, digest_size=64).digest()
    h = hashlib.blake2b(key=key, digest_size=16)
    for kind, value in parts:
        for s in (kind.encode(), value.encode()):
            h.update(len(s).to_bytes(4, "big") + s)
    return h.hexdigest()


class ServiceTest(unittest.TestCase):
    """Base class: a temp dir, a redis-server and a secret per test."""

    def setUp(self):
        # Cleanups run even when setUp fails half way, so no redis-server
        # outlives a test.
        self.workdir = tempfile.mkdtemp(prefix="ag-test-")
        self.addCleanup(shutil.rmtree, self.workdir, ignore_errors=True)
        self.redis = Redis(self.workdir)
        self.addCleanup(self.redis.stop)
        self.secret = make_secret(self.workdir)
        self.services = []

    def tearDown(self):
        failures = []
        for s in self.services:
            rc = s.stop()
            if rc != 0:
                failures.append("service exited %s:\n%s" % (rc, s.log_text()))
        if failures:
            self.fail("\n".join(failures))

    def service(self, **kw):
        kw.setdefault("secret", self.secret)
        s = Service(self.workdir, self.redis.url(), **kw)
        self.services.append(s)
        return s

    def login(self, svc, user, ip="192.0.2.1", **extra):
        return svc.post("/check-login", {"user": user, "ip": ip, **extra})

    def otp(self, svc, phone, ip, **extra):
        return svc.post("/check-otp", {"phone": phone, "ip": ip, **extra})

    def open_every_connection(self, svc):
        """Concurrent checks (of users no test uses), so that every Redis
        dispatcher connection of svc is open and loaded with the scripts
        before a test times or counts anything. First one check must be
        answered by Redis: on a loaded machine a new connection's code load
        can outlast a short --redis-timeout-ms, and the warm-up would then
        only have opened the breaker."""
        self.assertTrue(wait_until(
            lambda: "degraded" not in self.login(svc, "w-ready@x.org").json,
            10.0, 0.05), "the service never reached Redis")
        # Each check loop makes its own Redis connection (its lane) off the
        # loop, its first checks going by a dispatcher meanwhile: rounds
        # of concurrent checks until every loop's lane is up, so that the
        # checks after run on the lanes, their connections loaded.
        def lanes_up():
            values = {}
            for line in svc.request("GET", "/metrics").raw.decode(
                    ).splitlines():
                if line.startswith(("abuseguard_check_loops ",
                                    "abuseguard_redis_lanes ")):
                    name, value = line.split()
                    values[name] = float(value)
            return (values.get("abuseguard_redis_lanes", 0)
                    >= values.get("abuseguard_check_loops", 1))

        def round_of_checks():
            warm = [threading.Thread(target=self.login,
                                     args=(svc, "w%d@x.org" % i))
                    for i in range(16)]
            for t in warm:
                t.start()
            for t in warm:
                t.join()
            return lanes_up()

        self.assertTrue(wait_until(round_of_checks, 20.0, 0.05),
                        "the check loops' Redis connections never came up")

    def assert_follows(self, svc, name, user):
        """Checks of user on svc until one is decided by policy name too:
        an edit made elsewhere (another instance, the CLI) reaches a
        running instance by its database poll, every 200 ms: within a
        second on a quiet machine, a few seconds on a loaded one (FOLLOW_S
        at most), never if the poll is broken."""
        deadline = time.monotonic() + FOLLOW_S
        while True:
            r = self.login(svc, user, "192.0.2.1")
            if name in [d["policy"] for d in r.json["decisions"]]:
                return
            self.assertLess(time.monotonic(), deadline,
                            "%s did not reach the instance within %d s"
                            % (name, FOLLOW_S))
            time.sleep(0.02)

    def decision(self, resp, policy):
        for d in resp.json["decisions"]:
            if d["policy"] == policy:
                return d
        self.fail("no decision for %s in %r" % (policy, resp.json))


def policy(name, endpoint="login", key=("user",), algorithm="sliding_log",
           limit=5, window_s=60, **extra):
    return {"name": name, "endpoint": endpoint, "key": list(key),
            "algorithm": algorithm, "limit": limit, "window_s": window_s,
            **extra}


class PolicyTest(ServiceTest):
    """A ServiceTest whose instances start from the policies it names
    (seeded into a fresh database through --seed-dir)."""

    def seeded(self, policies, count=1, extra=()):
        seed = tempfile.mkdtemp(prefix="seed-", dir=self.workdir)
        with open(os.path.join(seed, "p.json"), "w") as f:
            json.dump({"policies": policies}, f)
        db = os.path.join(seed, "policies.db")
        return [self.service(db=db, name="s%d" % i,
                             extra=["--seed-dir", seed, *extra])
                for i in range(count)]

    def redis_time_us(self):
        sec, usec = self.redis.cmd("TIME")
        return int(sec) * 1_000_000 + int(usec)

    def wait_for_redis_time(self, t_us):
        """Sleeps until Redis TIME reaches t_us: a wait for something
        Redis's clock decides (a window's end, a block's) that no loaded
        machine can cut short."""
        while True:
            left = t_us - self.redis_time_us()
            if left <= 0:
                return
            time.sleep(min(left / 1e6, 0.5))
