#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GET /range/{prefix} under load: generates N sorted SHA-1 lines
# (bench/pwned_gen.c, as bench/pwned_import.sh does), imports them into a
# corpus, serves it with the Release service and drives it with wrk at
# random prefixes, without and then with Add-Padding: true. Prints the
# answers a second, p50 and p99, the bytes of an answer, and the service's
# RSS before and after each run, split into anonymous memory (what the
# service allocates) and file pages (the corpus's pages it touched).
#
#   bench/pwned_range.sh                       # N=50000000, 15 s a run
#   N=2000000 DURATION=10 bench/pwned_range.sh # a quick look
#
# N: hashes in the corpus. DURATION: seconds a run. CONNS (default 32)
# and THREADS (wrk's, default 2). TMPDIR: where the input and the corpus
# go (about 2.2 GB and 1.1 GB at N=50000000; the input is removed once
# imported). Needs wrk.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

N=${N:-50000000}
DURATION=${DURATION:-15}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
bench_need wrk wrk
bench_setup
bin=build-bench/abuseguard

cc -O2 -o "$work/gen" bench/pwned_gen.c
echo "generating and importing $N SHA-1 lines in $work ..." >&2
"$work/gen" "$N" 40 >"$work/pwned.txt"
"$bin" pwned import --mode sha1 --output "$work/sha1.agp" \
    "$work/pwned.txt" >&2
rm -f "$work/pwned.txt"
corpus_mb=$(stat -c %s "$work/sha1.agp" | awk '{ printf "%.1f", $1 / 1e6 }')

"$bin" "${service_args[@]}" --pwned-file "$work/sha1.agp" \
    2>"$work/service.log" &
spid=$!
pids+=("$spid")
base="http://127.0.0.1:$sport"
bench_ready 30 curl -sf "$base/healthz"
# One range checked before the load: 5 hex digits, suffixes of 35.
curl -sf "$base/range/ABCDE" | head -1 | grep -Eq '^[0-9A-F]{35}:[0-9]+' || {
    echo "range ABCDE is not a range" >&2
    exit 1
}

# Random prefixes, each thread its own sequence.
cat >"$work/range.lua" <<'EOF'
local counter = 0
function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
end
function init(args)
    math.randomseed(id * 7919 + os.time())
    headers = {}
    if os.getenv("PADDED") == "1" then
        headers["Add-Padding"] = "true"
    end
end
function request()
    return wrk.format("GET", string.format("/range/%05X",
                                           math.random(0, 0xFFFFF)), headers)
end
EOF

# VmRSS, RssAnon and RssFile of the service, in MiB.
rss() {
    awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s %.1f  ", $1, $2 / 1024 }' \
        "/proc/$spid/status"
}

run() { # $1: 0 or 1, padded
    local before after
    before=$(rss)
    PADDED=$1 wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency \
        -s "$work/range.lua" "$base" >"$work/wrk.txt"
    after=$(rss)
    awk -v padded="$1" -v before="$before" -v after="$after" '
        /Requests\/sec/ { rps = $2 }
        /Transfer\/sec/ { t = $2; u = t; sub(/[0-9.]+/, "", u); t += 0
                          if (u == "KB") t *= 1024; if (u == "MB") t *= 1048576
                          if (u == "GB") t *= 1073741824 }
        /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
        /Non-2xx/ { bad = $NF }
        END {
            printf "%s: %.0f answers/s, p50 %s, p99 %s, %.0f bytes an answer%s\n",
                padded == "1" ? "padded  " : "unpadded", rps, p50, p99,
                rps ? t / rps : 0, bad ? ", NON-2XX " bad : ""
            printf "  RSS before: %s\n  RSS after:  %s\n", before, after
        }' "$work/wrk.txt"
}

echo "pwned range, $N SHA-1 hashes (corpus $corpus_mb MB), wrk -t$THREADS" \
    "-c$CONNS, ${DURATION} s a run, $(nproc) cores, load $(cut -d' ' -f1-3 \
    /proc/loadavg)"
run 0
run 1
grep -c '"level":"error"' "$work/service.log" >/dev/null &&
    { echo "service errors:" >&2; grep '"level":"error"' "$work/service.log" >&2; }
true
