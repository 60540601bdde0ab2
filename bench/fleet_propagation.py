#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How long a change made through one instance of a fleet takes to be
enforced by the others (issue 37): three instances on one redis-server,
each on its own database, the poll a minute (only the channel can bring a
change this soon). Each round adds a deny entry for a fresh address
through instance A's admin API; as soon as A answers, B and C are asked
checks from that address back to back until each answers 403. The time
from A's answer to each 403 is one sample: what an operator waits for,
end to end (record, publish, apply with its audit row, reload, enforce).

Usage: fleet_propagation.py BINARY [ROUNDS]   (default 200)
Prints the p50, p90, p99 and max over every sample (two a round), in ms,
and the rounds' A answer time (the change recorded and applied on A).
Starts and stops its own redis-server and instances under a temp dir;
loopback only."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

TOKEN = "bench-fleet-token-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(pred, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if pred():
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


class Client:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def post(self, path, body, auth=False):
        h = {"Content-Type": "application/json"}
        if auth:
            h["Authorization"] = "Bearer " + TOKEN
        self.c.request("POST", path, json.dumps(body), h)
        r = self.c.getresponse()
        r.read()
        return r.status


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main():
    binary = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    work = tempfile.mkdtemp(prefix="fleet-bench-")
    procs = []
    try:
        rport = free_port()
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, cwd=work))
        secret = os.path.join(work, "secret")
        token = os.path.join(work, "token")
        for path, data in ((secret, os.urandom(32)), (token, TOKEN.encode())):
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o600)
        ports = []
        for i in range(3):
            port = free_port()
            ports.append(port)
            procs.append(subprocess.Popen(
                [binary, "--listen", "127.0.0.1:%d" % port, "--redis",
                 "redis://127.0.0.1:%d" % rport, "--db",
                 os.path.join(work, "h%d.db" % i), "--secret-file", secret,
                 "--admin-token-file", token, "--fleet-poll-ms", "60000",
                 "--log-level", "warn"],
                stderr=open(os.path.join(work, "h%d.log" % i), "wb")))
        for port in ports:
            assert wait(lambda: Client(port).post(
                "/check-login", {"user": "w@x.org", "ip": "192.0.2.1"})
                == 200), "instance did not start"
        time.sleep(1)  # every instance joined and subscribed
        a, others = Client(ports[0]), [Client(p) for p in ports[1:]]
        samples, recorded = [], []
        for n in range(rounds):
            ip = "10.77.%d.%d" % (n // 250, n % 250 + 1)
            t0 = time.perf_counter()
            assert a.post("/admin/lists/deny", {"kind": "ip", "value": ip},
                          auth=True) == 201
            t1 = time.perf_counter()
            recorded.append((t1 - t0) * 1000)
            for c in others:
                while c.post("/check-login", {"user": "b@x.org",
                                              "ip": ip}) != 403:
                    if time.perf_counter() - t1 > 10:
                        raise SystemExit("round %d: not enforced in 10 s" % n)
                samples.append((time.perf_counter() - t1) * 1000)
        print("rounds %d, samples %d" % (rounds, len(samples)))
        print("enforced elsewhere, ms: p50 %.2f p90 %.2f p99 %.2f max %.2f"
              % (pct(samples, 50), pct(samples, 90), pct(samples, 99),
                 max(samples)))
        print("recorded and applied on A, ms: p50 %.2f p99 %.2f"
              % (pct(recorded, 50), pct(recorded, 99)))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
