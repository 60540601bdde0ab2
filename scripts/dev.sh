#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start: builds abuseguard (Release) and runs it on 127.0.0.1:8080
# (PORT to change) with a private redis-server on a unix socket and a local
# SQLite file, all under var/. Creates var/secret.key (32 random bytes, mode
# 0600) and var/admin.token on first run. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

mkdir -p var
chmod 700 var
umask 077
[ -s var/secret.key ] || head -c 32 /dev/urandom > var/secret.key
[ -s var/admin.token ] || head -c 24 /dev/urandom | base64 > var/admin.token

sock="$PWD/var/redis.sock"
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 \
    --save '' --appendonly no --dir "$PWD/var" \
    --logfile "$PWD/var/redis.log" &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done

echo "abuseguard on http://127.0.0.1:${PORT:-8080} (admin token in" \
     "var/admin.token); Ctrl-C stops it" >&2
build/abuseguard --listen "127.0.0.1:${PORT:-8080}" \
    --redis "unix://$sock" --db var/policies.db \
    --secret-file var/secret.key --admin-token-file var/admin.token "$@" &
svc_pid=$!
trap 'kill "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null;
      kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null' EXIT
wait "$svc_pid"
