#!/usr/bin/env bash
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
# beside the repository). Needs valgrind and wrk (installed if missing).
# A benchmark, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
shared=${SHARED_BENCH:-$root/../shared/bench}
duration=${DURATION:-10}
top=${TOP:-25}
scripts/deps.sh
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null

cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

rport=$(port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --logfile /dev/null &
pids+=($!)
until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.05; done

head -c 32 /dev/urandom > "$work/secret"; chmod 600 "$work/secret"
cp bench/policies.json "$work/"
sport=$(port)
valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$work/service.cg" \
    build-bench/abuseguard --listen "127.0.0.1:$sport" \
    --redis "redis://127.0.0.1:$rport" --db "$work/policies.db" \
    --secret-file "$work/secret" --seed-dir "$work" --log-level error \
    2> "$work/service.log" &
spid=$!
pids+=($spid)
until curl -s -o /dev/null -X POST "127.0.0.1:$sport/check-login" \
    -d '{"user":"warm@example.com","ip":"192.0.2.1"}'; do sleep 0.3; done

callgrind_control -i on "$spid" >/dev/null 2>&1
wrk -t1 -c16 -d"${duration}s" -s "$shared/wrk-login.lua" \
    "http://127.0.0.1:$sport" > "$work/wrk.txt"
callgrind_control -i off "$spid" >/dev/null 2>&1
checks=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
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
