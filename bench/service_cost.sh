#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a login check costs the service, counted in instructions rather than
# time (steadier on a shared machine): builds the Release binary, runs it
# under callgrind against a private redis-server with the benchmark's three
# sliding-log policies, drives it with wrk (wrk-login.lua, one thread, 16
# connections) for DURATION seconds and prints instructions per check, then
# the named functions that cost the most, inclusive of what they call.
#
# Under valgrind the threads run one at a time, so lock contention is not
# in the count: this measures work, not waiting. About a third of the
# count is libmicrohttpd zeroing each connection's memory pool between
# requests, which a rep stosb counts byte by byte and the CPU does not.
#
# Environment: DURATION (default 10), TOP (functions listed, default 25),
# SHARED_BENCH (the folder holding wrk-login.lua; default ../shared/bench
# beside the repository), SHIELDS (1: the default site-wide shields too),
# EXTRA_ARGS (more flags for the service, split on spaces). Also prints
# Redis's time per FCALL, from INFO commandstats.
# Needs valgrind and wrk (installed if missing).
# A benchmark, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
shared=${SHARED_BENCH:-$root/../shared/bench}
duration=${DURATION:-10}
top=${TOP:-25}
. bench/lib.sh
bench_need wrk wrk
bench_need valgrind valgrind
bench_setup
valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$work/service.cg" \
    build-bench/abuseguard "${service_args[@]}" ${EXTRA_ARGS:-} \
    2> "$work/service.log" &
spid=$!
pids+=($spid)
bench_service_ready 120 # valgrind starts slowly

callgrind_control -i on "$spid" >/dev/null 2>&1
wrk -t1 -c16 -d"${duration}s" -s "$shared/wrk-login.lua" \
    "http://127.0.0.1:$sport" > "$work/wrk.txt"
callgrind_control -i off "$spid" >/dev/null 2>&1
checks=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
# Redis's own time per check: the top-level FCALL (its nested commands
# inside), unaffected by valgrind slowing the service.
redis-cli -p "$rport" info commandstats | tr -d '\r' |
    awk -F'[:,=]' '/^cmdstat_fcall:/ {
        printf "redis %.2f usec per FCALL (%d calls)\n", $7, $3}'
kill -TERM "$spid"
wait "$spid" 2>/dev/null || true

callgrind_annotate --inclusive=yes --threshold=100 "$work/service.cg" \
    > "$work/annotate.txt"
awk -v n="$checks" '
    /PROGRAM TOTALS/ {gsub(",", "", $1)
        printf "service %d instructions per check (%d checks)\n", $1 / n, n}
    /file:function/ {on = 1; getline; next}
    on && /^ *[0-9]/ && shown < top {
        gsub(",", "", $1); name = $NF == "" ? $(NF - 1) : $0
        sub(/^ *[0-9]+ *\([^)]*\) */, "", name); sub(/ \[.*/, "", name)
        sub(/.*:/, "", name)
        if (name ~ /^0x/) next
        printf "  %8d  %s\n", $1 / n, name; shown++}
' top="$top" "$work/annotate.txt"
