#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Redis Cluster against one Redis, side by side: abuseguard with the
# benchmark's login policies (bench/policies.json) on a standalone
# redis-server and on a 3-master cluster (no replicas) on this machine,
# under the same wrk load (wrk-login.lua), RUNS rounds alternating which
# goes first. Reports per round and as medians: checks/s, p99, the CPU
# that Redis (all its processes) and the service spend per check, how
# often a cluster check's reserves were released (a slot group denied
# while another charged) and the share of checks denied on each, whose
# difference bounds the checks the cluster denied that one Redis would
# have allowed. On two cores a cluster cannot be faster: the figure to
# watch is the work per check per node.
# Environment: DURATION (s per run, default 10), RUNS (default 3), CONNS
# (default 64), WRK_SCRIPT (wrk-login.lua, or wrk-attack.lua), SHARED_BENCH
# (as bench/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
shared=${SHARED_BENCH:-$root/../shared/bench}
duration=${DURATION:-10}
runs=${RUNS:-3}
conns=${CONNS:-64}
script=${WRK_SCRIPT:-wrk-login.lua} # or wrk-attack.lua: a flood of denied keys
out=$root/bench/out/cluster
mkdir -p "$out"

scripts/deps.sh
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null; }

echo "== build (Release)" >&2
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null
bin=$root/build-bench/abuseguard

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
work=$(mktemp -d)

# The standalone Redis.
sport=$(port)
redis-server --port "$sport" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --logfile "$out/standalone.log" &
pids+=($!); spid=$!

# Three cluster masters, on ports whose bus port (+10000) is free too.
cports=(); cpids=()
for n in 1 2 3; do
    while :; do
        p=$((20000 + RANDOM % 9000))
        python3 -c "import socket,sys
for q in ($p, $p + 10000):
    s = socket.socket(); s.bind(('127.0.0.1', q)); s.close()" 2>/dev/null && break
    done
    mkdir -p "$work/n$p"
    (cd "$work/n$p" && exec redis-server --port "$p" --bind 127.0.0.1 \
        --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout 2000 --save '' --appendonly no \
        --logfile "$out/node-$p.log") &
    pids+=($!); cpids+=($!); cports+=("$p")
done
for p in "$sport" "${cports[@]}"; do
    until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.05; done
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${cports[@]}") \
    --cluster-yes >/dev/null
until [ "$(redis-cli -p "${cports[0]}" cluster info | tr -d '\r' |
        awk -F: '/cluster_state/ {print $2}')" = ok ]; do sleep 0.1; done

head -c 32 /dev/urandom > "$work/secret"; chmod 600 "$work/secret"
start_service() { # name redis-url -> port_<name>, pid_<name>
    mkdir "$work/$1"; cp bench/policies.json "$work/$1/"
    local p; p=$(port)
    "$bin" --listen "127.0.0.1:$p" --redis "$2" \
        --db "$work/$1/policies.db" --secret-file "$work/secret" \
        --seed-dir "$work/$1" --log-level error 2> "$out/$1.log" &
    pids+=($!)
    eval "port_$1=$p pid_$1=$!"
}
start_service one "redis://127.0.0.1:$sport"
start_service cluster "redis+cluster://127.0.0.1:${cports[0]},127.0.0.1:${cports[1]}"
for p in $port_one $port_cluster; do
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$p/readyz")" = 200 ]; do
        sleep 0.1
    done
done

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sum_ticks() { local t=0; for p in "$@"; do t=$((t + $(ticks "$p"))); done; echo $t; }
metric() { curl -s "127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
checks() { # port outcome
    curl -s "127.0.0.1:$1/metrics" |
        awk -v o="$2" -F'[{}" ]+' '/^abuseguard_checks_total/ && $0 ~ "outcome=\"" o "\"" {s += $NF} END {print s + 0}'
}

# One run: "rps p99_ms redis_ticks service_ticks allowed denied releases"
measure() { # name port service_pid redis_pids...
    local name=$1 port=$2 spid=$3; shift 3
    local r0 s0 a0 d0 l0
    r0=$(sum_ticks "$@"); s0=$(ticks "$spid")
    a0=$(checks "$port" allowed); d0=$(checks "$port" denied)
    l0=$(metric "$port" abuseguard_cluster_releases_total)
    wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$shared/$script" \
        "http://127.0.0.1:$port" > "$out/wrk-$name.txt"
    local rps p99
    rps=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$name.txt")
    p99=$(awk '$1 == "99%" {print $2}' "$out/wrk-$name.txt")
    echo "$rps $p99 $(($(sum_ticks "$@") - r0)) $(($(ticks "$spid") - s0))" \
        "$(($(checks "$port" allowed) - a0)) $(($(checks "$port" denied) - d0))" \
        "$(( $(metric "$port" abuseguard_cluster_releases_total) - ${l0:-0} ))"
}

echo "== $runs rounds of ${duration}s runs, wrk -t2 -c$conns" >&2
one=(); clu=()
for i in $(seq "$runs"); do
    if [ $((i % 2)) = 1 ]; then
        one+=("$(measure one-$i "$port_one" "$pid_one" "$spid")")
        clu+=("$(measure cluster-$i "$port_cluster" "$pid_cluster" "${cpids[@]}")")
    else
        clu+=("$(measure cluster-$i "$port_cluster" "$pid_cluster" "${cpids[@]}")")
        one+=("$(measure one-$i "$port_one" "$pid_one" "$spid")")
    fi
done
keys=$(for p in "${cports[@]}"; do redis-cli -p "$p" DBSIZE; done | tr '\n' ' ')

python3 - "$(getconf CLK_TCK)" "$keys" "${one[@]}" --- "${clu[@]}" <<'PY'
import os, statistics, sys
tck = float(sys.argv[1]); keys = sys.argv[2]
rest = sys.argv[3:]; i = rest.index("---")
def parse(rows):
    out = []
    for r in rows:
        rps, p99, rt, st, al, de, rel = r.split()
        n = int(al) + int(de)
        out.append(dict(rps=float(rps), p99=p99, redis=int(rt) * 1e6 / tck / max(n, 1),
                        svc=int(st) * 1e6 / tck / max(n, 1), n=n,
                        denied=int(de) / max(n, 1), released=int(rel) / max(n, 1)))
    return out
one, clu = parse(rest[:i]), parse(rest[i + 1:])
model = open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].split("\n")[0].strip()
print("machine: %s, %d cores; cluster: 3 masters on the same machine" % (model, os.cpu_count()))
print("%-10s %5s %10s %9s %12s %12s %9s %9s" % ("", "round", "checks/s", "p99", "redis us/ck",
                                              "svc us/ck", "denied", "released"))
for name, rows in (("one redis", one), ("cluster", clu)):
    for j, r in enumerate(rows):
        print("%-10s %5d %10.0f %9s %12.1f %12.1f %8.2f%% %8.2f%%" % (
            name, j + 1, r["rps"], r["p99"], r["redis"], r["svc"],
            100 * r["denied"], 100 * r["released"]))
rounds = range(len(one))
med = lambda xs: statistics.median(xs)
print("per round cluster/one checks/s: %s; median %.2fx" % (
    " ".join("%.2fx" % (clu[j]["rps"] / one[j]["rps"]) for j in rounds),
    med(clu[j]["rps"] / one[j]["rps"] for j in rounds)))
print("median Redis CPU per check: one %.1f us, cluster %.1f us in all (%.1f us per node)" % (
    med(r["redis"] for r in one), med(r["redis"] for r in clu),
    med(r["redis"] for r in clu) / 3))
print("median released: %.3f%% of cluster checks; denied: one %.3f%%, cluster %.3f%% "
      "(difference %.3f points: at most that share of checks was denied by the "
      "cluster where one Redis would have allowed it)" % (
          100 * med(r["released"] for r in clu), 100 * med(r["denied"] for r in one),
          100 * med(r["denied"] for r in clu),
          100 * (med(r["denied"] for r in clu) - med(r["denied"] for r in one))))
print("keys per master: %s" % keys)
PY
