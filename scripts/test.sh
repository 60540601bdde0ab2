#!/usr/bin/env bash
# The whole test suite: installs missing packages, builds with
# AddressSanitizer and UndefinedBehaviorSanitizer into build-test/, and runs
# every unit and integration test through ctest. Integration tests start
# their own redis-server processes on spare loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug \
    -DAG_SANITIZE=address,undefined -DAG_TESTS=ON
cmake --build build-test -j"$(nproc)"
cd build-test
# Refuse to pass on an empty suite (a missing test dependency).
ctest -N | grep -q "Total Tests: [1-9]" || { echo "no tests found" >&2; exit 1; }
ctest --output-on-failure --timeout 900 -j"$(nproc)" "$@"

