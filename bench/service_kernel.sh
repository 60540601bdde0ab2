#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where the service's CPU time goes at full speed, which service_cost.sh
# (instructions under callgrind, user space only) cannot show: the system
# calls a login check makes and the kernel's share. Builds the Release
# binary, runs it against a private redis-server with the benchmark's three
# sliding-log policies, drives it with wrk as bench/run.sh does (wrk-login.lua,
# two threads, 64 connections), and while wrk runs:
#
#   1. counts the service's system calls and context switches with
#      perf stat (raw_syscalls:sys_enter), per check, and the calls by name
#      (one syscalls:sys_enter_* tracepoint each, at full speed), and its
#      CPU time per check (user and system, from /proc over the same
#      window);
#   2. samples it with perf record and prints the shares of the kernel,
#      each library and the system calls that cost most;
#   3. with STRACE=1, breaks the system calls down by name (strace -c -f,
#      which slows the service several times over: counts, not times).
#
# Environment: DURATION (s each step samples, default 4), SHARED_BENCH
# (default ../shared/bench beside the repository), STRACE, SHIELDS (1: the
# default site-wide shields too), BIN (another abuseguard binary to
# measure, say an earlier commit's Release build, in place of this tree's). Needs perf, wrk and, with STRACE=1,
# strace (installed if missing). A benchmark, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
shared=${SHARED_BENCH:-$root/../shared/bench}
duration=${DURATION:-4}
. bench/lib.sh
bench_need wrk wrk
bench_need perf linux-perf
[ "${STRACE:-}" != 1 ] || bench_need strace strace
bench_setup
"${BIN:-build-bench/abuseguard}" "${service_args[@]}" 2> "$work/service.log" &
spid=$!
pids+=($spid)
bench_service_ready 10

# Runs "$@" while wrk loads the service (from a second in, to past its
# end); prints wrk's checks/s on the last line of $work/wrk.txt.
under_load() {
    wrk -t2 -c64 -d"$((duration + 3))s" -s "$shared/wrk-login.lua" \
        "http://127.0.0.1:$sport" > "$work/wrk.txt" &
    local w=$!
    sleep 1
    "$@"
    wait "$w"
}
rps() { awk '/Requests\/sec/ {print $2}' "$work/wrk.txt"; }

under_load perf stat -x, -o "$work/stat.csv" \
    -e raw_syscalls:sys_enter,context-switches -p "$spid" -- sleep "$duration"
awk -F, -v rps="$(rps)" -v d="$duration" '
    /raw_syscalls/ {printf "system calls per check     %.2f\n", $1 / (rps * d)}
    /context-switches/ {printf "context switches per check %.2f\n", $1 / (rps * d)}
' "$work/stat.csv"
echo "(at $(rps) checks/s)"

# The calls by name, and the CPU time over the same window.
calls="epoll_wait epoll_ctl recvfrom sendmsg sendto read write futex poll"
events=$(printf 'syscalls:sys_enter_%s,' $calls)
ticks() { awk '{print $14, $15}' "/proc/$spid/stat"; }
cpu_window() {
    local before after
    before=$(ticks)
    perf stat -x, -o "$work/names.csv" -e "${events%,}" -p "$spid" \
        -- sleep "$duration"
    after=$(ticks)
    echo "$before $after" > "$work/ticks.txt"
}
under_load cpu_window
awk -F, -v rps="$(rps)" -v d="$duration" '
    /sys_enter_/ {n = $3; sub(/.*sys_enter_/, "", n)
        if ($1 / (rps * d) >= 0.005)
            printf "  %-12s %5.2f a check\n", n, $1 / (rps * d)}
' "$work/names.csv"
read -r u0 s0 u1 s1 < "$work/ticks.txt"
awk -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v hz="$(getconf CLK_TCK)" \
    -v rps="$(rps)" -v d="$duration" 'BEGIN {
    n = rps * d
    printf "CPU per check: %.1f us (user %.1f, system %.1f) at %s checks/s\n",
        (u + s) / hz / n * 1e6, u / hz / n * 1e6, s / hz / n * 1e6, rps}'

under_load perf record -q -o "$work/perf.data" -F 2000 -g -p "$spid" \
    -- sleep "$duration" 2>/dev/null
echo "-- the service's CPU time, by where it ran (perf record)"
perf report -i "$work/perf.data" --no-children --sort dso -g none --stdio \
    2>/dev/null | awk '/^ +[0-9.]+%/ && $1 + 0 >= 0.5 {print "  " $0}'
echo "-- system calls, inclusive of the kernel work they do"
perf report -i "$work/perf.data" --children --sort sym -g none --stdio \
    2>/dev/null | awk '/\[k\] (__x64_sys_|ksys_|__sys_sendmsg$)/ &&
        $1 + 0 >= 0.5 && $NF != "__x64_sys_sendmsg" {print "  " $1, $NF}' |
    sort -k1 -rn | head -12

if [ "${STRACE:-}" = 1 ]; then
    echo "-- system calls by name (strace -c -f; the service runs slower)"
    under_load timeout "$duration" strace -c -f -o "$work/strace.txt" \
        -p "$spid" 2>/dev/null || true
    requests=$(awk '$NF == "sendmsg" {print $4}' "$work/strace.txt")
    awk -v n="${requests:-0}" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ &&
        n > 0 && $4 / n >= 0.005 {
        printf "  %-14s %5.2f a check%s\n", $NF, $4 / n,
            $5 ~ /^[0-9]+$/ ? sprintf(" (%.2f failed)", $5 / n) : ""}' \
        "$work/strace.txt"
    echo "  (per response sent: one sendmsg each)"
fi
