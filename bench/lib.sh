# SPDX-License-Identifier: Apache-2.0
# What the benchmark scripts share, sourced from the repository's root:
# the benchmark's policy files (bench/run.sh too), and for the
# single-service cost scripts (service_cost.sh, service_kernel.sh) the
# Release build, a scratch folder removed at exit with every process
# started, a private redis-server, and the service's flags for the
# benchmark's three sliding-log policies.

export LC_ALL=C # times(1), perf and awk read decimals with a point

# Installs package $2 unless command $1 is there.
bench_need() {
    command -v "$1" >/dev/null || apt-get install -y -qq "$2" >/dev/null
}

# Writes to $3 the policy file bench/$1 with, if $2 is 1, the site-wide
# shields (the surge policies) of policies/default.json appended: the
# defaults' own numbers, read from the one file that holds them.
bench_policies() {
    python3 - "bench/$1" "$2" policies/default.json "$3" <<'PY'
import json, sys
src, shields, defaults, dst = sys.argv[1:]
doc = json.load(open(src))
if shields == "1":
    doc["policies"] += [p for p in json.load(open(defaults))["policies"]
                        if p.get("algorithm") == "surge"]
json.dump(doc, open(dst, "w"), indent=2)
PY
}

# Copies the Node.js peer from $1 (the shared bench folder's peer-node/)
# into $2/peer-node and npm installs it there, once.
bench_peer_install() {
    if [ ! -d "$2/peer-node/node_modules" ]; then
        echo "== npm install (peer)" >&2
        rm -rf "$2/peer-node"
        cp -r "$1/peer-node" "$2/peer-node"
        chmod -R u+w "$2/peer-node"
        (cd "$2/peer-node" && npm install --no-audit --no-fund --silent)
    fi
}

# CPU time process $1 has used, in clock ticks (user + system).
bench_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

bench_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits up to $1 seconds for the rest of the arguments, a command, to
# succeed.
bench_ready() {
    local until=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$until" ]; then
            echo "$(basename "$0"): not ready: $*" >&2
            return 1
        fi
        sleep 0.1
    done
}

# Builds build-bench/abuseguard, makes $work and starts redis-server on
# $rport; $pids holds what cleanup stops at exit. Also sets $sport (the
# service's port) and $service_args (its flags, an array). SHIELDS=1: the
# policies carry the default shields too (bench_policies).
bench_setup() {
    scripts/deps.sh
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF \
        >/dev/null
    cmake --build build-bench -j"$(nproc)" >/dev/null
    work=$(mktemp -d)
    pids=()
    trap bench_cleanup EXIT
    rport=$(bench_port)
    redis-server --port "$rport" --bind 127.0.0.1 --save '' \
        --appendonly no --dir "$work" --logfile /dev/null &
    pids+=($!)
    bench_ready 10 redis-cli -p "$rport" ping
    head -c 32 /dev/urandom > "$work/secret"
    chmod 600 "$work/secret"
    bench_policies policies.json "${SHIELDS:-0}" "$work/policies.json"
    sport=$(bench_port)
    service_args=(--listen "127.0.0.1:$sport"
        --redis "redis://127.0.0.1:$rport" --db "$work/policies.db"
        --secret-file "$work/secret" --seed-dir "$work" --log-level error)
}

bench_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# Waits up to $1 seconds for the service to answer a check; its log on
# failure.
bench_service_ready() {
    bench_ready "$1" curl -sf -o /dev/null -X POST \
        "127.0.0.1:$sport/check-login" \
        -d '{"user":"warm@example.com","ip":"192.0.2.1"}' ||
        { cat "$work/service.log" >&2; return 1; }
}
