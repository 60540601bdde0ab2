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
#             nothing else
#   floor     the fewest commands that answer three new sorted sets
#             exactly (TIME, one EXISTS over the three keys, then ZADD and
#             PEXPIRE on each), with the function's arguments and reply:
#             what any exact sliding-log check stands on (issue 41)
#   call      no command at all, the function's arguments and reply only:
#             what entering and leaving a script costs
#   peer      the Node.js peer's check (bench/README.md): its library's
#             fixed-window script (rate-limiter-flexible's
#             RateLimiterRedis, ISC), called with EVALSHA three times a
#             check, once per limit
#   batch4, batch8, batch16, batch32
#             the same checks as FCALLs of 4 to 32 checks each, the library
#             with bench/batch.lua added: one call's fixed cost (reading
#             and dispatching the command, entering Lua, TIME) spread over
#             a batch (issue 20's experiment)
# Each row also prints the instructions inside the script command (FCALL or
# EVALSHA, with its nested commands), the part INFO commandstats times:
# reading and parsing the request is outside it.
# With RATE=1, the same rows without valgrind, in checks per second
# (redis-benchmark's requests per second times the checks in each): the
# Redis ceiling of each, a time and so only comparable within one run; and
# the script command's time per check from INFO commandstats.
# Environment: N (checks, default 10000; a batch row runs the largest
# multiple of its batch within it), RATE, ROWS (the rows, default all),
# ROUNDS (default 1: with RATE, the rows that many times, reversed in
# even rounds, then each row's median and its median ratio to the peer).
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
# A script on three new sorted sets: TIME, the reads given ($1, Lua
# leaving c1, c2 and c3), then ZADD and PEXPIRE on each, and the reply.
three_sets() {
    cat <<LUA
local t = redis.call('TIME')
local now = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
$1
redis.call('ZADD', KEYS[1], now, ARGV[1]); redis.call('PEXPIRE', KEYS[1], '900000')
redis.call('ZADD', KEYS[2], now, ARGV[1]); redis.call('PEXPIRE', KEYS[2], '900000')
redis.call('ZADD', KEYS[3], now, ARGV[1]); redis.call('PEXPIRE', KEYS[3], '900000')
return {1, 99 - c1, 0, 900000, 1, 9 - c2, 0, 900000, 1, 4 - c3, 0, 900000}
LUA
}
three_sets "local c1 = redis.call('ZCARD', KEYS[1])
local c2 = redis.call('ZCARD', KEYS[2])
local c3 = redis.call('ZCARD', KEYS[3])" > "$work/bare.lua"
three_sets "local c1 = redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3])
local c2, c3 = c1, c1" > "$work/floor.lua"
cat > "$work/call.lua" <<'LUA'
return {1, 99, 0, 900000, 1, 9, 0, 900000, 1, 4, 0, 900000}
LUA
# rate-limiter-flexible's RateLimiterRedis script (ISC licence), as the
# peer sends it for each of its three limits.
cat > "$work/peer.lua" <<'LUA'
redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return {consumed, ttl}
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
rows=(${ROWS:-function script bare floor call peer batch4 batch8 batch16 batch32})
# The rows of round $1: in order, reversed in even rounds.
order() {
    local i
    if (($1 % 2)); then
        printf '%s\n' "${rows[@]}"
    else
        for ((i = ${#rows[@]} - 1; i >= 0; i--)); do echo "${rows[i]}"; done
    fi
}
for round in $(seq "${ROUNDS:-1}"); do
for name in $(order "$round"); do
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
    # The peer makes three calls a check, one key each.
    per=1
    if [ "$name" = peer ]; then
        per=3
        args=(1 "peer:__rand_int__" 1 900)
    elif [ "${name#batch}" != "$name" ]; then
        k=${name#batch}
        mapfile -t args < <(batch_args "$k")
        call=(FCALL "$batch")
    else
        args=(3 "ag:login.ip:__rand_int__" "ag:login.user:__rand_int__"
            "ag:login.user_ip:__rand_int__" "bench-__rand_int__" check
            "${policies[@]}")
    fi
    checks=$((n / k * k))
    redis-cli -p "$p" CONFIG RESETSTAT >/dev/null
    # 16 checks in flight on each connection, however many a call holds
    # (32 for batch32): a batch saves a call's costs, not system calls.
    pipe=$((k >= 16 ? 1 : 16 / k))
    if [ "$rate" = 1 ]; then
        rps=$(redis-benchmark -p "$p" -r 1000000 -n $((n / k * per)) -c 8 \
            -P "$pipe" -q "${call[@]}" "${args[@]}" 2>/dev/null |
            tr '\r' '\n' |
            sed -n 's/.* \([0-9.]*\) requests per second.*/\1/p' | tail -1)
        usec=$(redis-cli -p "$p" INFO commandstats | tr -d '\r' |
            awk -F'[:,=]' '/^cmdstat_(fcall|evalsha):/ {print $5}')
        redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
        wait "$rpid" 2>/dev/null || true
        printf '%-8s %8.0f checks per second, %5.2f usec a check in the script command (redis-server, %d checks, round %d)\n' \
            "$name" "$(awk -v r="$rps" -v k="$k" -v per="$per" \
                'BEGIN {print r * k / per}')" \
            "$(awk -v u="$usec" -v c="$checks" 'BEGIN {print u / c}')" "$checks" \
            "$round"
        continue
    fi
    callgrind_control -i on "$rpid" >/dev/null 2>&1
    redis-benchmark -p "$p" -r 1000000 -n $((n / k * per)) -c 8 -P "$pipe" \
        -q "${call[@]}" "${args[@]}" >/dev/null 2>&1
    callgrind_control -i off "$rpid" >/dev/null 2>&1
    redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait "$rpid" 2>/dev/null || true
    total=$(callgrind_annotate --threshold=100 "$work/$name.cg" | awk '
        /file:function/ {on = 1; next}
        on && /^ *[0-9]/ {gsub(",", "", $1); s += $1}
        END {printf "%d", s}')
    inside=$(callgrind_annotate --inclusive=yes --threshold=100 \
        "$work/$name.cg" | awk '/:(fcallCommand|evalShaCommand) / && !n++ {
            gsub(",", "", $1); print $1}')
    printf '%-8s %8d instructions per check, %8d in the script command (redis-server, %d checks)\n' \
        "$name" $((total / checks)) $((inside / checks)) "$checks"
done
done | tee "$work/rows.txt"
# With RATE=1 and rounds: each row's median time a check, and its median
# ratio to the peer's within a round.
if [ "$rate" = 1 ] && [ "${ROUNDS:-1}" -gt 1 ]; then
    awk '{t[$1, $NF] = $6; rows[$1] = 1; rounds[$NF] = 1}
        function median(a, n,   i, j, x) {
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END {
            for (r in rows) {
                n = 0; m = 0; delete u; delete q
                for (k in rounds) {
                    u[++n] = t[r, k]
                    if ((r, k) in t && ("peer", k) in t) q[++m] = t[r, k] / t["peer", k]
                }
                printf "%-8s median %5.2f usec a check in the script command", r, median(u, n)
                if (m) printf ", %.2fx the peer (median of the rounds)", median(q, m)
                printf "\n"
            }
        }' "$work/rows.txt"
fi
