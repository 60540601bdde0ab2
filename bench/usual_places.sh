#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 40's simulator at length (tests/integration/usual_places_sim.py:
# two real instances, one redis-server, MMDB files written by MaxMind's
# writer): real users' new-device logins challenged and attack attempts
# passing while the default login shield is raised, with its scope
# "untrusted" and "risky", side by side, SEEDS times. Prints the table
# bench/README.md holds.
# A benchmark, not a test. Environment: USERS (default 1000), DAYS (5),
# ATTACKS (2000), SEEDS (default "40 41 42"), AG_BINARY (default
# build-release/abuseguard, brought up to date first).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
binary=${AG_BINARY:-$root/build-release/abuseguard}
if [ -z "${AG_BINARY:-}" ]; then
    cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build-release -j"$(nproc)" --target abuseguard >/dev/null
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for seed in ${SEEDS:-40 41 42}; do
    (cd tests/integration &&
        AG_BINARY=$binary AG_SIM_SEED=$seed AG_SIM_USERS=${USERS:-1000} \
        AG_SIM_DAYS=${DAYS:-5} AG_SIM_ATTACKS=${ATTACKS:-2000} \
        python3 -m unittest test_usual_places_sim 2>&1) |
        sed -n 's/^SIM //p' >> "$out"
done
python3 - "$out" <<'PY'
import json, sys
sys.path.insert(0, "tests/integration")
import usual_places_sim as sim
runs = [json.loads(l) for l in open(sys.argv[1])]
print(sim.table(sorted(runs, key=lambda r: r["scope"])))
PY
