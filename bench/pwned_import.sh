#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The import rate of `abuseguard pwned import`: generates N sorted
# HASH:COUNT lines shaped like the Pwned Passwords downloader's single
# file (random-looking upper-case hashes, mostly small counts, LF), times
# the import of that file with a Release build, and prints lines and
# bytes a second, the most RSS, and the time the whole corpus would take
# at that rate (1 000 000 000 lines, 38 GB). Generated files live in a
# temporary folder removed at exit, never in the tree.
#
#   bench/pwned_import.sh                 # N=50000000: about 2.2 GB
#   N=2000000 bench/pwned_import.sh       # a quick look
#   MODE=ntlm COLD=1 bench/pwned_import.sh
#
# MODE: sha1 (default) or ntlm. COLD=1 drops the page cache before the
# import (needs root), so the input comes from the disk, not from memory
# as it does right after it was written. TMPDIR: where the files go
# (input and output both: about 2.2 GB and 1.1 GB at N=50000000).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

N=${N:-50000000}
MODE=${MODE:-sha1}
case $MODE in
sha1) HEX=40 ;;
ntlm) HEX=32 ;;
*) echo "MODE must be sha1 or ntlm" >&2; exit 2 ;;
esac

cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF \
    >/dev/null
cmake --build build-bench -j"$(nproc)" --target abuseguard >/dev/null
bin=build-bench/abuseguard

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The generator (bench/pwned_gen.c), shared with bench/pwned_range.sh.
cc -O2 -o "$work/gen" bench/pwned_gen.c

echo "generating $N $MODE lines in $work ..." >&2
t0=$(date +%s.%N)
"$work/gen" "$N" "$HEX" >"$work/pwned.txt"
t1=$(date +%s.%N)
bytes=$(stat -c %s "$work/pwned.txt")
awk -v b="$bytes" -v a="$t0" -v z="$t1" \
    'BEGIN { printf "generated %.0f bytes in %.1f s\n", b, z - a }' >&2

if [ "${COLD:-0}" = 1 ]; then
    sync
    echo 3 >/proc/sys/vm/drop_caches
fi

# %e: wall seconds, %M: the most RSS in KiB, %U/%S: CPU seconds.
/usr/bin/time -f "%e %M %U %S" -o "$work/time" \
    "$bin" pwned import --mode "$MODE" --output "$work/corpus.agp" \
    "$work/pwned.txt" 2>"$work/import.log" || {
    cat "$work/import.log" >&2
    exit 1
}
read -r secs rss_kb user sys <"$work/time"
out=$(stat -c %s "$work/corpus.agp")

awk -v n="$N" -v b="$bytes" -v s="$secs" -v rss="$rss_kb" -v u="$user" \
    -v sy="$sys" -v o="$out" -v mode="$MODE" -v cold="${COLD:-0}" 'BEGIN {
    lps = n / s; bps = b / s
    printf "pwned import, %s, %d lines, %.1f MB (%s page cache)\n", mode, n,
        b / 1e6, cold == 1 ? "cold" : "warm"
    printf "  %.2f s wall (%.2f s user, %.2f s system)\n", s, u, sy
    printf "  %.2f M lines/s, %.0f MB/s of input\n", lps / 1e6, bps / 1e6
    printf "  max RSS %.1f MiB; corpus %.1f MB\n", rss / 1024, o / 1e6
    printf "  projection: 1 000 000 000 lines in %.0f s, 38 GB in %.0f s\n",
        1e9 / lps, 38e9 / bps
}'
cat "$work/import.log"
