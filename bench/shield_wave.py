#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stuffing wave against one abuseguard instance whose shields are
lowered, watched until they are raised: bench/run.sh's warm-up phase in
MODE=stuffing, which gives the figures before the raise.

Usage: shield_wave.py SERVICE_PORT REDIS_PORT SHIELDS KEYS WRK_OUT -- WRK...
SHIELDS names the surge policies and KEYS their state's Redis keys, each
comma-separated. Runs the wrk command (its output to WRK_OUT) and, while
it runs, reads the service's /metrics every 20 ms until one of the named
shields has answered a check (a challenge or a denial of that policy).
Then it reads Redis: INFO commandstats, and when the first shield was
raised (the since_ms of its state, on Redis's clock, which is this
machine's).

Before the raise every check reaches Redis as one FCALL, after it none
does (no check here is trusted or carries challenge_passed), so the
FCALLs counted from wrk's start are exactly the checks before the raise,
however late the raise is seen. Prints one line, "raise_ms checks
checks_per_s cmds_per_check": the raise in ms after wrk started, the
checks before it, their rate over that time and the Redis commands run
from wrk's start until the raise was seen, per check (the shields' own
steps, a few a second from each instance, included; this script's INFO
left out); "- - - -" if no shield was raised.
"""
import http.client
import re
import socket
import subprocess
import sys
import time


class Redis:
    """Just enough RESP for INFO and HMGET."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        head, self.buf = self.buf.split(b"\r\n", 1)
        return head

    def reply(self):
        head = self.line()
        if head[:1] == b"*":
            return [self.reply() for _ in range(int(head[1:]))]
        if head[:1] != b"$":
            raise RuntimeError(head.decode())
        n = int(head[1:])
        if n < 0:
            return None
        while len(self.buf) < n + 2:
            self.buf += self.sock.recv(65536)
        body, self.buf = self.buf[:n], self.buf[n + 2:]
        return body

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.reply()

    def calls(self):
        """Calls of every command so far, by command."""
        text = self.call("INFO", "commandstats").decode()
        return {m.group(1): int(m.group(2)) for m in re.finditer(
            r"^cmdstat_([^:]+):calls=(\d+)", text, re.M)}


def shielded(conn, names):
    """Checks the named shields have answered so far."""
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    return sum(int(v) for name, v in re.findall(
        r'^abuseguard_(?:challenges|denials)_total\{policy="([^"]+)"\} '
        r'(\d+)$', text, re.M) if name in names)


def main():
    sport, rport, names, keys, wrk_out = sys.argv[1:6]
    wrk = sys.argv[sys.argv.index("--") + 1:]
    names, keys = set(names.split(",")), keys.split(",")
    conn = http.client.HTTPConnection("127.0.0.1", int(sport), timeout=10)
    redis = Redis(int(rport))
    base = shielded(conn, names)
    c0 = redis.calls()
    with open(wrk_out, "w") as out:
        start_ms = time.time() * 1000
        proc = subprocess.Popen(wrk, stdout=out)
        seen = False
        while proc.poll() is None and not seen:
            time.sleep(0.02)
            seen = shielded(conn, names) > base
        c1 = redis.calls()
        since = [int(s) for k in keys
                 for raised, s in [redis.call("HMGET", k, "raised",
                                              "since_ms")]
                 if raised == b"1"]
        proc.wait()
    if not seen or not since:
        print("- - - -")
        return
    raise_ms = min(since) - start_ms
    checks = c1.get("fcall", 0) - c0.get("fcall", 0)
    cmds = sum(c1.values()) - sum(c0.values()) - 1  # the first INFO
    print("%.0f %d %s %s" % (
        raise_ms, checks,
        "%.0f" % (1000 * checks / raise_ms) if raise_ms > 0 else "-",
        "%.4f" % (cmds / checks) if checks else "-"))


if __name__ == "__main__":
    main()
