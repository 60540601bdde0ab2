#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stuffing wave against one abuseguard instance, watched until its
shields are raised: bench/run.sh's warm-up phase in MODE=stuffing.

Usage: shield_wave.py SERVICE_PORT REDIS_PORT SHIELDS WRK_OUT -- WRK...
SHIELDS names the surge policies, comma-separated. Runs the wrk command
(its output to WRK_OUT) and, while it runs, samples every 10 ms the
service's /metrics (its login checks, and the checks its shields
answered: challenges and denials of those policies) and Redis's INFO
commandstats (every command run so far). The first sample in which a
shield has answered a check ends the phase before the raise: every
check counted by the sample before it reached the store, none was
shielded. Prints one line, "raise_ms checks checks_per_s cmds_per_check":
when the raise was seen (ms after wrk started), and the checks of the
phase before it, their rate and the Redis commands they cost each (the
INFO calls of the sampling left out); "-" for what it could not tell
(no raise, or too few samples before it).
"""
import http.client
import re
import socket
import subprocess
import sys
import time


def redis_calls(sock, buf):
    """Every command Redis has run so far (INFO commandstats calls)."""
    sock.sendall(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
    while b"\r\n" not in buf[0]:
        buf[0] += sock.recv(65536)
    head, rest = buf[0].split(b"\r\n", 1)
    n = int(head[1:])
    while len(rest) < n + 2:
        rest += sock.recv(65536)
    body, buf[0] = rest[:n], rest[n + 2:]
    return sum(int(m) for m in re.findall(rb"calls=(\d+)", body))


def service_counts(conn, names):
    """(login checks answered, of them answered by the named shields)."""
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    checks = sum(int(v) for v in re.findall(
        r'^abuseguard_checks_total\{endpoint="login",[^}]*\} (\d+)$', text,
        re.M))
    shielded = 0
    for name, v in re.findall(
            r'^abuseguard_(?:challenges|denials)_total\{policy="([^"]+)"\} '
            r'(\d+)$', text, re.M):
        if name in names:
            shielded += int(v)
    return checks, shielded


def main():
    sport, rport, names, wrk_out = sys.argv[1:5]
    wrk = sys.argv[sys.argv.index("--") + 1:]
    names = set(names.split(","))
    conn = http.client.HTTPConnection("127.0.0.1", int(sport), timeout=10)
    sock = socket.create_connection(("127.0.0.1", int(rport)), timeout=10)
    buf = [b""]
    samples = []  # (seconds since wrk started, checks, shielded, calls)
    with open(wrk_out, "w") as out:
        start = time.monotonic()
        proc = subprocess.Popen(wrk, stdout=out)
        raised = None
        while proc.poll() is None and raised is None:
            checks, shielded = service_counts(conn, names)
            calls = redis_calls(sock, buf)
            samples.append((time.monotonic() - start, checks, shielded,
                            calls))
            if shielded > samples[0][2]:
                raised = len(samples) - 1
            time.sleep(0.01)
        proc.wait()
    if raised is None:
        print("- - - -")
        return
    t0, c0, _, r0 = samples[0]
    last = samples[raised - 1]
    # The rate from the first sample that saw a check (wrk connects first).
    first = next((s for s in samples[:raised] if s[1] > c0), last)
    checks = last[1] - c0
    rate = ("%.0f" % ((last[1] - first[1]) / (last[0] - first[0]))
            if last[0] > first[0] else "-")
    # Each sample's INFO is in the next sample's count.
    cmds = ("%.4f" % ((last[3] - r0 - (raised - 1)) / checks)
            if checks > 0 else "-")
    print("%.0f %d %s %s" % (1000 * samples[raised][0], checks, rate, cmds))


if __name__ == "__main__":
    main()
