#!/usr/bin/env bash
# Prints the lua/ function library as the service composes it
# (service/ag_store_redis.c, compose_library): common.lua, every algorithm,
# and check.lua as the body of the function it registers, here named
# $1 (default ag_bench_check) in library abuseguard_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-ag_bench_check}
echo '#!lua name=abuseguard_bench'
cat lua/common.lua lua/sliding_log.lua lua/fixed_window.lua \
    lua/sliding_window.lua lua/token_bucket.lua lua/distinct.lua
echo 'local function check(KEYS, ARGV)'
cat lua/check.lua
echo 'end'
echo "redis.register_function('$name', check)"
