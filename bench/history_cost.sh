#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What reading the user's history (issue 40) costs a login check: the
# service's instructions per check under callgrind (bench/service_cost.sh)
# and Redis's time per FCALL, with a City database placing every address
# wrk-login.lua sends (10.0.0.0/8) and an ASN for it, --history-days 0
# (nothing read) against 90 (the history key passed to the check's FCALL,
# one nested GET, its answer judged), ROUNDS times alternately in one
# run. wrk-login.lua's users are drawn from a million, so nearly every
# GET finds no history (no_history): the read and the judgement are
# paid, a parse of a stored history is not (ag_history's unit tests time
# nothing; it is a few hundred instructions).
# A benchmark, not a test. Environment: ROUNDS (default 3), DURATION
# (service_cost's, default 8), SHARED_BENCH.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/spec.json" <<'JSON'
{"ip_version": 6, "ipv4_aliases": true, "database_type": "Bench-City",
 "networks": [{"cidr": "10.0.0.0/8", "country": "FR", "asn": 3215,
               "latitude": 48.86, "longitude": 2.35, "accuracy_radius": 20}]}
JSON
perl tests/tools/mmdb_write.pl --spec "$dir/spec.json" "$dir/city.mmdb"
files="--geoip-file $dir/city.mmdb --asn-file $dir/city.mmdb"
for r in $(seq "$rounds"); do
    for days in 0 90; do
        echo "== round $r, --history-days $days"
        EXTRA_ARGS="$files --history-days $days" \
            DURATION=${DURATION:-8} TOP=0 bench/service_cost.sh 2>/dev/null |
            grep -E "per check|per FCALL" || true
    done
done
