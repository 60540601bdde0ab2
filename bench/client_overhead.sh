#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What each official client adds to a call over its language's own
# standard-library HTTP client, on one kept-alive connection over
# loopback: a Release abuseguard with the benchmark's three sliding-log
# policies and a private redis-server, then each language's program
# (bench/clients/) runs rounds of N raw calls and N client calls of
# /check-login, alternating which goes first. Prints, per language, the
# median over rounds of each round's median wall time a call, the
# within-round ratio, and CPU a call (the process's, which noise moves
# less). Usage: bench/client_overhead.sh [rounds] [calls a round]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-7}
calls=${2:-2000}
bench_setup
build-bench/abuseguard "${service_args[@]}" &
pids+=($!)
bench_ready 10 curl -sf "127.0.0.1:$sport/readyz"
url="http://127.0.0.1:$sport"

(cd bench/clients/go && GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off \
    go build -o "$work/bench_go" .)
{
    python3 bench/clients/bench_python.py "$url" "$rounds" "$calls"
    node bench/clients/bench_node.mjs "$url" "$rounds" "$calls"
    "$work/bench_go" "$url" "$rounds" "$calls"
} > "$work/results.jsonl"

python3 - "$work/results.jsonl" <<'PY'
import json, statistics, sys
model = open("/proc/cpuinfo").read().split("model name")[1]
print("machine: %d cores, %s" % (__import__("os").cpu_count(),
                                 model.split("\n")[0].strip(" \t:")))
print("| client | raw µs a call | client µs a call | added µs (median of rounds) "
      "| ratio (median of rounds) | raw CPU µs | client CPU µs | added CPU µs |")
print("|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    med = statistics.median
    added = med([c - w for c, w in zip(r["client_us"], r["raw_us"])])
    ratio = med([c / w for c, w in zip(r["client_us"], r["raw_us"])])
    cpu = med([c - w for c, w in zip(r["client_cpu_us"], r["raw_cpu_us"])])
    print("| %s | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f |" % (
        r["lang"], med(r["raw_us"]), med(r["client_us"]), added, ratio,
        med(r["raw_cpu_us"]), med(r["client_cpu_us"]), cpu))
PY
