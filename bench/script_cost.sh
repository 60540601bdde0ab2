#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a login check costs Redis, counted in instructions rather than time
# (which swings by a quarter between runs on a shared machine): runs
# redis-server under callgrind, sends N pipelined checks with the
# benchmark's three sliding-log policies on random users and IPs, and
# prints instructions per check for
#   function  the service's function library, called with FCALL (what it
#             runs on Redis 7 and later)
#   script    the script it composes for sliding logs, called with EVALSHA
#             (what it runs where FUNCTION is refused)
#   bare      a hand-written script issuing the same Redis commands (TIME,
#             then ZCARD, ZADD and PEXPIRE on three new sorted sets) and
#             nothing else: the floor any sliding-log script stands on
#   batch4, batch8, batch16, batch32
#             the same checks as FCALLs of 4 to 32 checks each, the library
#             with bench/batch.lua added: one call's fixed cost (reading
#             and dispatching the command, entering Lua, TIME) spread over
#             a batch (issue 20's experiment)
# With RATE=1, the same rows without valgrind, in checks per second
# (redis-benchmark's requests per second times the checks in each): the
# Redis ceiling of each, a time and so only comparable within one run.
# Environment: N (checks, default 10000; a batch row runs the largest
# multiple of its batch within it), RATE, ROWS (the rows, default all).
# Needs valgrind (installed if missing). A benchmark, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-10000}
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null
command -v redis-server >/dev/null || scripts/deps.sh

cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null
bin=build-bench/abuseguard

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The code exactly as the service composes it.
"$bin" lua script sliding_log > "$work/script.lua"
cat > "$work/bare.lua" <<'LUA'
local t = redis.call('TIME')
local now = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
local c1 = redis.call('ZCARD', KEYS[1])
local c2 = redis.call('ZCARD', KEYS[2])
local c3 = redis.call('ZCARD', KEYS[3])
redis.call('ZADD', KEYS[1], now, ARGV[1]); redis.call('PEXPIRE', KEYS[1], '900000')
redis.call('ZADD', KEYS[2], now, ARGV[1]); redis.call('PEXPIRE', KEYS[2], '900000')
redis.call('ZADD', KEYS[3], now, ARGV[1]); redis.call('PEXPIRE', KEYS[3], '900000')
return {1, 99 - c1, 0, 900000, 1, 9 - c2, 0, 900000, 1, 4 - c3, 0, 900000}
LUA

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
policies=("0 100 900000 0 1 0" "" "0 10 900000 0 1 0" "" "0 5 900000 0 1 0" "")
"$bin" lua library > "$work/function.lua"
fcall=$("$bin" lua function)
# The batch rows' library: the service's with the batch function added,
# which sees its locals. Only those rows load it: its strings and tables,
# which Redis's Lua collector walks, cost a single check about 700
# instructions more.
batch=bench_batch
{
    cat "$work/function.lua" bench/batch.lua
    echo "redis.register_function('$batch', check_batch)"
} > "$work/batch.lua"
# A batch of k login checks: the keys of each, then per check its key and
# argument counts and its arguments. redis-benchmark draws each
# __rand_int__ on its own, so every check has its own user, IP and nonce.
batch_args() {
    local k=$1 i
    printf '%s\n' "$((3 * k))"
    for ((i = 0; i < k; i++)); do
        printf '%s\n' "ag:login.ip:__rand_int__" "ag:login.user:__rand_int__" \
            "ag:login.user_ip:__rand_int__"
    done
    for ((i = 0; i < k; i++)); do
        printf '%s\n' 3 8 "bench-__rand_int__" check "${policies[@]}"
    done
}
rate=${RATE:-0}
for name in ${ROWS:-function script bare batch4 batch8 batch16 batch32}; do
    p=$(port)
    grind=(valgrind --tool=callgrind --instr-atstart=no
        --callgrind-out-file="$work/$name.cg")
    [ "$rate" = 1 ] && grind=()
    "${grind[@]}" redis-server --port "$p" --bind 127.0.0.1 --save '' \
        --appendonly no --logfile /dev/null >/dev/null 2>&1 &
    rpid=$!
    until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.2; done
    k=1
    lib=$work/$name.lua
    [ "${name#batch}" != "$name" ] && lib=$work/batch.lua
    if [ "$name" = function ] || [ "${name#batch}" != "$name" ]; then
        redis-cli -p "$p" FUNCTION LOAD "$(cat "$lib")" >/dev/null
        call=(FCALL "$fcall")
    else
        call=(EVALSHA "$(redis-cli -p "$p" SCRIPT LOAD "$(cat "$work/$name.lua")")")
    fi
    # Once outside the count, so compiling the script is not counted.
    redis-cli -p "$p" "${call[@]}" 3 a b c warm check "${policies[@]}" \
        >/dev/null
    if [ "${name#batch}" != "$name" ]; then
        k=${name#batch}
        mapfile -t args < <(batch_args "$k")
        call=(FCALL "$batch")
    else
        args=(3 "ag:login.ip:__rand_int__" "ag:login.user:__rand_int__"
            "ag:login.user_ip:__rand_int__" "bench-__rand_int__" check
            "${policies[@]}")
    fi
    checks=$((n / k * k))
    # 16 checks in flight on each connection, however many a call holds
    # (32 for batch32): a batch saves a call's costs, not system calls.
    pipe=$((k >= 16 ? 1 : 16 / k))
    if [ "$rate" = 1 ]; then
        rps=$(redis-benchmark -p "$p" -r 1000000 -n $((n / k)) -c 8 -P "$pipe" \
            -q "${call[@]}" "${args[@]}" 2>/dev/null | tr '\r' '\n' |
            sed -n 's/.* \([0-9.]*\) requests per second.*/\1/p' | tail -1)
        redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
        wait "$rpid" 2>/dev/null || true
        printf '%-8s %8.0f checks per second (redis-server, %d checks)\n' \
            "$name" "$(awk -v r="$rps" -v k="$k" 'BEGIN {print r * k}')" \
            "$checks"
        continue
    fi
    callgrind_control -i on "$rpid" >/dev/null 2>&1
    redis-benchmark -p "$p" -r 1000000 -n $((n / k)) -c 8 -P "$pipe" -q \
        "${call[@]}" "${args[@]}" >/dev/null 2>&1
    callgrind_control -i off "$rpid" >/dev/null 2>&1
    redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait "$rpid" 2>/dev/null || true
    total=$(callgrind_annotate --threshold=100 "$work/$name.cg" | awk '
        /file:function/ {on = 1; next}
        on && /^ *[0-9]/ {gsub(",", "", $1); s += $1}
        END {printf "%d", s}')
    printf '%-8s %8d instructions per check (redis-server, %d checks)\n' \
        "$name" $((total / checks)) "$checks"
done
