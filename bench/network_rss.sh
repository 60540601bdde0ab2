#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the network files (issue 39) cost the service in memory: in each
# of ROUNDS rounds, starts the Release service without network files and
# with GEO as both --geoip-file and --asn-file and LIST as --ip-list
# (without first in odd rounds, second in even ones), each on an emptied
# Redis and policy database, drives each with the same load (wrk, two
# threads, 64 connections, DURATION s of login checks from addresses
# drawn over all of IPv4 and 2000::/4, so lookups walk the databases),
# then reads VmRSS, RssAnon, RssFile and RssShmem from /proc/PID/status
# and the database copies' mappings from /proc/PID/smaps. Prints each
# round and the medians of: the growth, its shmem (the pages of the
# private memfd copies the lookups touched, out of the copies' whole
# size, which stays in memory whether touched or not), the list's tables
# as the service logs them, and the remainder (growth minus shmem minus
# tables).
#
#   bench/network_rss.sh GEO.mmdb LIST   # bench/network_cost.sh runs it
#
# Environment: ROUNDS (default 3), DURATION (s of load, default 5),
# SHIELDS. Needs wrk (installed if missing). A benchmark, not a test.
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 GEO.mmdb LIST" >&2; exit 2; }
geo=$(realpath "$1") list=$(realpath "$2")
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
duration=${DURATION:-5}
. bench/lib.sh
bench_need wrk wrk
bench_setup
files=(--geoip-file "$geo" --asn-file "$geo" --ip-list "bench=$list")

cat > "$work/rss.lua" <<'EOF'
local n = 0
function setup(thread) n = n + 1; thread:set("id", n) end
function init() math.randomseed(id * 7919) end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function request()
  local r, ip = math.random, nil
  if r(2) == 1 then
    ip = string.format("%d.%d.%d.%d", r(1, 223), r(0, 255), r(0, 255), r(1, 254))
  else
    ip = string.format("2%03x:%x:%x::%x", r(0, 4095), r(0, 65535), r(0, 65535), r(1, 65535))
  end
  return wrk.format(nil, "/check-login", nil, string.format(
    '{"user":"user%d@example.com","ip":"%s"}', r(1, 1000000), ip))
end
EOF

# Starts the service with the rest of the arguments (every start seeds
# the same way), loads it, and writes to $work/$1: checks, VmRSS,
# RssAnon, RssFile, RssShmem and the copies' mapped size in kB, and the
# list's tables in KiB as the service logs them.
measure() {
    local out=$work/$1
    shift
    redis-cli -p "$rport" flushall >/dev/null
    rm -f "$work"/policies.db*
    build-bench/abuseguard "${service_args[@]}" --log-level info "$@" \
        2> "$work/service.log" &
    spid=$!
    pids+=("$spid")
    bench_service_ready 30
    wrk -t2 -c64 -d"${duration}s" -s "$work/rss.lua" \
        "http://127.0.0.1:$sport" > "$work/wrk.txt"
    sleep 1
    { awk '/requests in/ {printf "%s ", $1}' "$work/wrk.txt"
      awk '/^(VmRSS|RssAnon|RssFile|RssShmem):/ {printf "%s ", $2}' \
          "/proc/$spid/status"
      awk '/^[0-9a-f]+-/ {on = /ag-geo/} on && /^Size:/ {s += $2}
           END {printf "%d ", s}' "/proc/$spid/smaps"
      sed -n 's/.*entries, \([0-9]*\) KiB.*/\1/p' "$work/service.log"
      echo; } > "$out"
    kill "$spid"
    wait "$spid" 2>/dev/null || true
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "databases: 2 x $(stat -c %s "$geo") bytes; list: $(wc -l < "$list") lines"
for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
        measure without
        measure with "${files[@]}"
    else
        measure with "${files[@]}"
        measure without
    fi
    read -r c0 rss0 anon0 file0 shm0 _ < "$work/without"
    read -r c1 rss1 anon1 file1 shm1 copies tables < "$work/with"
    echo "round $r: without $rss0 kB (anon $anon0, file $file0, shmem $shm0;" \
        "$c0 checks), with $rss1 kB (anon $anon1, file $file1, shmem $shm1;" \
        "$c1 checks)"
    echo "$((rss1 - rss0)) $shm1 $copies $tables $((anon1 - anon0))" \
        "$((file1 - file0)) $((rss1 - rss0 - shm1 - tables))" >> "$work/rounds"
done
i=0
for name in growth shmem copies tables anon file remainder; do
    i=$((i + 1))
    printf '%-9s kB: median %s (rounds %s)\n' "$name" \
        "$(cut -d' ' -f$i "$work/rounds" | median)" \
        "$(cut -d' ' -f$i "$work/rounds" | paste -sd' ')"
done
