#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: installs missing packages, checks the formatting
# of the C sources and the tables of the Markdown files, builds a Release
# build that must compile warning-clean, builds with
# AddressSanitizer and UndefinedBehaviorSanitizer into build-test/, and runs
# every unit and integration test through ctest. Integration tests start
# their own redis-server processes on spare loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
# The browser tests' npm package (playwright-core, pinned by the lock
# file; it drives Debian's chromium and downloads no browser), installed
# again whenever the lock file changes. node and npm come with the machine.
lock=tests/browser/package-lock.json
stamp=tests/browser/node_modules/.installed-lock.json
if ! cmp -s "$lock" "$stamp"; then
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix tests/browser \
        --no-audit --no-fund
    cp "$lock" "$stamp"
fi

# Checks that need no build, first, so a slip fails in seconds: the C
# sources formatted as .clang-format says; every source file naming its
# licence, none past 750 lines, no layer including a higher one and no
# circle of includes (scripts/check_tree.py); no Markdown table or link
# broken.
clang-format --dry-run -Werror service/*.c service/*.h \
    service/*/*.c service/*/*.h tests/unit/*.c \
    tests/integration/*.c tests/integration/*.h tests/vectors/*.c \
    tests/tools/*.c \
    tests/vectors/*.h \
    tests/unit/*.h tests/fuzz/*.c
python3 scripts/check_tree.py --self-test
python3 scripts/check_tree.py
python3 scripts/check_markdown.py --self-test
python3 scripts/check_markdown.py README.md bench/README.md docs/*.md docs/*/*.md

# Release must build warning-clean too (-O2 warns of things -O0 does not
# see); scripts/dev.sh and the benchmark run it.
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=ON >/dev/null
cmake --build build-release -j"$(nproc)" >/dev/null
# The Debian packages of the container image, fetched into a local apt
# repository that tests/integration/test_image.py builds the image from
# offline; again only when the package's dependencies change. Fetched
# while the sanitizer build compiles, which it barely slows.
fetch_log=$(mktemp)
packaging/image.sh --fetch build-image-cache >"$fetch_log" 2>&1 &
fetch=$!
# A failed build stops the fetch too, rather than leave it to race the
# next run's.
trap 'kill "$fetch" 2>/dev/null || true; rm -f "$fetch_log"' EXIT

cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug \
    -DAG_SANITIZE=address,undefined -DAG_TESTS=ON
cmake --build build-test -j"$(nproc)"
if ! wait "$fetch"; then
    cat "$fetch_log" >&2
    echo "packaging/image.sh --fetch failed" >&2
    exit 1
fi
trap - EXIT
rm -f "$fetch_log"
cd build-test
# Refuse to pass on an empty suite (a missing test dependency).
ctest -N | grep -q "Total Tests: [1-9]" || { echo "no tests found" >&2; exit 1; }
ctest --output-on-failure --timeout 900 -j"$(nproc)" "$@"

