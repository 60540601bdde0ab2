#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python client's overhead over the bare standard library.

    python3 bench/clients/bench_python.py BASE_URL [ROUNDS=7] [CALLS=2000]

Each round makes CALLS checks with ``http.client`` alone (one kept-alive
connection, POST /check-login, the answer read and parsed as JSON) and
CALLS with ``Client.check_login`` (same body), the side that goes first
alternating by round. Every call has its own user,
"bench-<round>-<i>@example.com" (the client's calls numbered on from the
raw ones), and the address "10.1.<round>.<i % 250 + 1>". Prints one JSON
line: per round, the median wall time of a call and the process CPU time
per call, in microseconds. No assertions: the figures are for
bench/README.md.
"""

import http.client
import json
import os
import statistics
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "clients", "python"))

import abuseguard  # noqa: E402  (after the path is set)


def body(rnd, i):
    # Users and addresses of this language's own (10.1.<round>.x), each
    # address at most 16 calls a round: no policy trips.
    return {"user": "bench-python-%d-%d@example.com" % (rnd, i),
            "ip": "10.1.%d.%d" % (rnd, i % 250 + 1)}


def raw_calls(base_url, rnd, first, calls):
    """Per-call wall times (ns) and the CPU time (ns) of ``calls`` checks
    made with http.client alone."""
    url = urlsplit(base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80,
                                      timeout=5)
    headers = {"Content-Type": "application/json"}
    path = url.path.rstrip("/") + "/check-login"
    walls = []
    cpu = time.process_time_ns()
    for i in range(first, first + calls):
        started = time.perf_counter_ns()
        conn.request("POST", path, json.dumps(body(rnd, i), separators=(
            ",", ":")), headers)
        response = conn.getresponse()
        json.loads(response.read())
        walls.append(time.perf_counter_ns() - started)
    cpu = time.process_time_ns() - cpu
    conn.close()
    return walls, cpu


def client_calls(base_url, rnd, first, calls):
    """As ``raw_calls``, with the client's ``check_login``."""
    walls = []
    with abuseguard.Client(base_url) as client:
        cpu = time.process_time_ns()
        for i in range(first, first + calls):
            b = body(rnd, i)
            started = time.perf_counter_ns()
            client.check_login(b["user"], b["ip"])
            walls.append(time.perf_counter_ns() - started)
        cpu = time.process_time_ns() - cpu
    return walls, cpu


def main():
    base_url = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    out = {"lang": "python", "raw_us": [], "client_us": [],
           "raw_cpu_us": [], "client_cpu_us": []}
    for rnd in range(rounds):
        sides = [("raw", raw_calls), ("client", client_calls)]
        if rnd % 2:
            sides.reverse()
        for name, run in sides:
            first = 0 if name == "raw" else calls
            walls, cpu = run(base_url, rnd, first, calls)
            out[name + "_us"].append(
                round(statistics.median(walls) / 1000, 1))
            out[name + "_cpu_us"].append(round(cpu / calls / 1000, 1))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
