#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Side-by-side benchmark: abuseguard against the Node.js peer
# (rate-limiter-flexible + ioredis), all on one private redis-server, under
# the same wrk load (POST /check-login, users and IPs drawn from a million
# each). RUNS rounds; in each, three contenders measured in turn, then the
# Redis ceiling:
#   abuseguard        the three default login policies (sliding logs)
#   abuseguard-fixed  the same three as fixed windows, the peer's algorithm
#   node peer         three fixed-window limiters
# The ratios (to the peer, and to the Redis ceiling for abuseguard's check
# code, redis-benchmark pipelined on the same Redis) are taken within each
# round and their medians printed: on a shared machine whose speed drifts,
# runs minutes apart are not comparable.
#
# Environment: DURATION (s per run, default 15), RUNS (rounds, default 2),
# CEILING_N (checks per ceiling measurement, default 100000),
# CONNS (default 64), SHARED_BENCH (the folder holding peer-node/ and
# wrk-login.lua; default ../shared/bench beside the repository),
# BASELINE_BIN (another abuseguard binary, say a build of the previous
# commit: measured in every round beside this one, with the same policies,
# so that a change's effect is a within-round ratio too).
# MODE=attack: the same rounds and ratios under a credential-guessing
# flood instead (wrk-attack.lua: 64 user and IP pairs, denied after their
# first few attempts), against the peer with its own local block cache
# (INMEM_BLOCK=1, rate-limiter-flexible's inMemoryBlockOnConsumed).
# Every run also reports the Redis commands it cost per check (INFO
# commandstats calls over the run / wrk's requests).
# A benchmark, not a test: nothing here gates CI.
set -euo pipefail
# times(1) and awk read decimals with a point.
export LC_ALL=C
cd "$(dirname "$0")/.."
root=$PWD
shared=${SHARED_BENCH:-$root/../shared/bench}
duration=${DURATION:-15}
runs=${RUNS:-2}
conns=${CONNS:-64}
mode=${MODE:-normal}
case $mode in
normal) wrk_script=wrk-login.lua peer_block=0 ;;
attack) wrk_script=wrk-attack.lua peer_block=1 ;;
*) echo "MODE must be normal or attack" >&2; exit 2 ;;
esac
out=$root/bench/out
mkdir -p "$out"

scripts/deps.sh
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null; }
command -v node >/dev/null || { apt-get install -y -qq nodejs npm >/dev/null; }

echo "== build (Release)" >&2
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null
bin=$root/build-bench/abuseguard

if [ ! -d "$out/peer-node/node_modules" ]; then
    echo "== npm install (peer)" >&2
    rm -rf "$out/peer-node"
    cp -r "$shared/peer-node" "$out/peer-node"
    chmod -R u+w "$out/peer-node"
    (cd "$out/peer-node" && npm install --no-audit --no-fund --silent)
fi

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

rport=$(port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$out" --logfile "$out/redis.log" &
pids+=($!)
rpid=$!
until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.05; done

work=$(mktemp -d)
head -c 32 /dev/urandom > "$work/secret"; chmod 600 "$work/secret"
# One service: the given policy file, its own database.
start_service() { # name policies.json [binary] -> sets port_<name>, pid_<name>
    mkdir "$work/$1"; cp "bench/$2" "$work/$1/"
    local p; p=$(port)
    "${3:-$bin}" --listen "127.0.0.1:$p" --redis "redis://127.0.0.1:$rport" \
        --db "$work/$1/policies.db" --secret-file "$work/secret" \
        --seed-dir "$work/$1" --log-level error 2> "$out/$1.log" &
    pids+=($!)
    eval "port_$1=$p pid_$1=$!"
}
start_service sliding policies.json
start_service fixed policies-fixed.json
aport=$port_sliding; apid=$pid_sliding; fport=$port_fixed
bport=
if [ -n "${BASELINE_BIN:-}" ]; then
    start_service base policies.json "$BASELINE_BIN"
    bport=$port_base
fi
pport=$(port)
(cd "$out/peer-node" && PORT=$pport REDIS_PORT=$rport WORKERS=2 \
    INMEM_BLOCK=$peer_block exec node server.js) > "$out/peer.log" 2>&1 &
pids+=($!)
for p in $aport $fport $pport $bport; do
    until curl -s -o /dev/null -X POST "127.0.0.1:$p/check-login" \
        -d '{"user":"warm@example.com","ip":"192.0.2.1"}'; do sleep 0.1; done
done

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
# CPU time a process has used, in clock ticks (user + system).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The same, as "user system".
ticks2() { awk '{print $14, $15}' "/proc/$1/stat"; }

# Every command Redis has run so far (INFO commandstats calls, summed).
redis_calls() {
    redis-cli -p "$rport" INFO commandstats |
        awk -F'[=,]' '/^cmdstat_/ {n += $2} END {print n + 0}'
}

# One wrk run: prints "rps p50_ms p99_ms non2xx ok|errors cmds_per_check".
measure() {
    local c0 c1
    c0=$(redis_calls)
    # wrk alone in a subshell, whose times(1) are then wrk's CPU time.
    (wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$shared/$wrk_script" \
        "http://127.0.0.1:$1" > "$out/wrk-$2.txt"
        times > "$out/wrk-$2.times")
    c1=$(redis_calls)
    python3 - "$out/wrk-$2.txt" "$((c1 - c0))" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def ms(v):
    n, unit = re.match(r"([\d.]+)(us|ms|s)", v).groups()
    return float(n) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
# The latency distribution lines, not a "+/- Stdev" column ending in 50%.
p50 = ms(re.search(r"^\s+50%\s+(\S+)", t, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", t, re.M).group(1))

non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
errs = re.search(r"Socket errors: (.*)", t)
requests = int(re.search(r"(\d+) requests in", t).group(1))
print("%.0f %.3f %.3f %s %s %.4f" % (rps, p50, p99,
      non2xx.group(1) if non2xx else 0, "errors" if errs else "ok",
      int(sys.argv[2]) / max(requests, 1)))
PY
}

# The Redis ceiling for abuseguard's check: pipelined FCALL of its function
# library (as the binary composes it: abuseguard lua library) with the
# benchmark's three policies on random
# users and IPs. Measured in every round, beside the runs it is compared
# with.
redis-cli -p "$rport" FUNCTION LOAD REPLACE "$("$bin" lua library)" >/dev/null
fcall=$("$bin" lua function)
ceiling() {
    redis-benchmark -p "$rport" -r 1000000 -n "${CEILING_N:-100000}" -c 32 \
        -P 16 -q FCALL "$fcall" 3 \
        "ag:login.ip:__rand_int__" "ag:login.user:__rand_int__" \
        "ag:login.user_ip:__rand_int__" \
        "bench-__rand_int__" check \
        "0 100 900000 0 1 0" "" "0 10 900000 0 1 0" "" "0 5 900000 0 1 0" "" \
        | tr '\r' '\n' \
        | awk '{for (i = 1; i <= NF; i++) if ($i == "requests") print $(i-1)}' \
        | tail -1
}

echo "== $mode: $runs rounds of ${duration}s runs, wrk -t2 -c$conns" \
    "-s $wrk_script" >&2
# Each round measures every contender once, then the ceiling; odd rounds
# run abuseguard first, even rounds the peer first, so a machine that
# speeds up or slows down during a round favours neither. Ratios are taken
# within a round, then their median.
declare -a ag_res fx_res peer_res rss_after cpu ceil_res base_res
rss_before=$(rss $apid)
run_ag() {
    local au as au1 as1
    read -r au as < <(ticks2 $apid); r0=$(ticks $rpid)
    ag_res+=("$(measure "$aport" "abuseguard-$i")")
    read -r au1 as1 < <(ticks2 $apid)
    # service user:system:Redis ticks, then wrk's seconds (its times line
    # "0m1.234s 0m0.567s").
    cpu+=("$((au1 - au)):$((as1 - as)):$(($(ticks $rpid) - r0)):$(
        awk 'NR == 2 {s = 0; for (i = 1; i <= 2; i++) {
            split($i, t, /[ms]/); s += t[1] * 60 + t[2] } print s}' \
            "$out/wrk-abuseguard-$i.times")")
    rss_after+=("$(rss $apid)")
    if [ -n "$bport" ]; then
        base_res+=("$(measure "$bport" "baseline-$i")")
    else
        base_res+=("0 0 0 0 ok 0")
    fi
}
for i in $(seq "$runs"); do
    if [ $((i % 2)) = 1 ]; then
        run_ag
        fx_res+=("$(measure "$fport" "abuseguard-fixed-$i")")
        peer_res+=("$(measure "$pport" "peer-$i")")
    else
        peer_res+=("$(measure "$pport" "peer-$i")")
        fx_res+=("$(measure "$fport" "abuseguard-fixed-$i")")
        run_ag
    fi
    ceil_res+=("$(ceiling)")
done

keys=$(redis-cli -p "$rport" DBSIZE)
used=$(redis-cli -p "$rport" INFO memory | awk -F: '/^used_memory:/ {print $2+0}')
sample=$(redis-cli -p "$rport" --scan --pattern 'ag:login.user:*' | head -200 \
    || true)
usage=0; n=0
for k in $sample; do
    usage=$((usage + $(redis-cli -p "$rport" MEMORY USAGE "$k" SAMPLES 0)))
    n=$((n + 1))
done

echo "mode: $mode ($wrk_script; peer INMEM_BLOCK=$peer_block)"
python3 - "${ceil_res[*]}" "$rss_before" "$keys" "$used" "$usage" "$n" \
    "$(getconf CLK_TCK)" "$duration" \
    "${ag_res[@]}" --- "${fx_res[@]}" --- "${peer_res[@]}" --- \
    "${rss_after[@]}" --- "${cpu[@]}" --- "${base_res[@]}" <<'PY'
import statistics, sys
args = sys.argv[1:]
ceilings, rss0, keys, used, usage, n, tck, dur = args[:8]
ceilings = [float(c) for c in ceilings.split()]
rest = args[8:]
i = rest.index("---"); ag = rest[:i]; rest = rest[i + 1:]
i = rest.index("---"); fx = rest[:i]; rest = rest[i + 1:]
i = rest.index("---"); peer = rest[:i]; rest = rest[i + 1:]
i = rest.index("---"); rss = rest[:i]; rest = rest[i + 1:]
i = rest.index("---"); cpu = rest[:i]; base = rest[i + 1:]
def parse(rows): return [list(map(float, r.split()[:3])) + r.split()[3:] for r in rows]
ag, fx, peer, base = parse(ag), parse(fx), parse(peer), parse(base)
have_base = base and base[0][0] > 0
def med(rows, k): return statistics.median(r[k] for r in rows)
print("machine: %s, %s cores" % (open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].split("\n")[0].strip(), __import__("os").cpu_count()))
print("%-12s %5s %12s %9s %9s %8s" % ("", "round", "checks/s", "p50 ms", "p99 ms", "non-2xx"))
for name, rows in (("abuseguard", ag), ("ag-fixed", fx), ("node peer", peer)) + ((("baseline", base),) if have_base else ()):
    for j, r in enumerate(rows):
        print("%-12s %5d %12.0f %9.3f %9.3f %8s" % (name, j + 1, r[0], r[1], r[2], r[3]))
# The ceiling: abuseguard's check code alone, pipelined (-P 16).
for j, c in enumerate(ceilings):
    print("%-12s %5d %12.0f %9s %9s %8s" % ("ceiling", j + 1, c, "-", "-", "-"))
rounds = range(len(ag))
print("per round: abuseguard/peer %s; abuseguard-fixed/peer %s; abuseguard/ceiling %s"
      % (" ".join("%.2fx" % (ag[j][0] / peer[j][0]) for j in rounds),
         " ".join("%.2fx" % (fx[j][0] / peer[j][0]) for j in rounds),
         " ".join("%.0f%%" % (100 * ag[j][0] / ceilings[j]) for j in rounds)))
print("median of rounds: abuseguard %.2fx the peer, abuseguard-fixed %.2fx, "
      "abuseguard at %.0f%% of the ceiling"
      % (statistics.median(ag[j][0] / peer[j][0] for j in rounds),
         statistics.median(fx[j][0] / peer[j][0] for j in rounds),
         statistics.median(100 * ag[j][0] / ceilings[j] for j in rounds)))
if have_base:
    print("per round: abuseguard/baseline %s; median %.2fx; baseline/peer median %.2fx"
          % (" ".join("%.2fx" % (ag[j][0] / base[j][0]) for j in rounds),
             statistics.median(ag[j][0] / base[j][0] for j in rounds),
             statistics.median(base[j][0] / peer[j][0] for j in rounds)))
print("median checks/s: abuseguard %.0f, abuseguard-fixed %.0f, peer %.0f, "
      "ceiling %.0f" % (med(ag, 0), med(fx, 0), med(peer, 0),
                        statistics.median(ceilings)))
print("median p99 ms:   abuseguard %.3f, abuseguard-fixed %.3f, peer %.3f"
      % (med(ag, 2), med(fx, 2), med(peer, 2)))
def cpc(rows): return " ".join("%.4f" % float(r[5]) for r in rows)
print("Redis commands per check, per round: abuseguard %s; abuseguard-fixed "
      "%s; peer %s" % (cpc(ag), cpc(fx), cpc(peer)))
print("abuseguard RSS kB: before %s, after each run %s" % (rss0, " ".join(rss)))
# CPU per check during the abuseguard runs: a steadier measure than
# checks/s on a shared machine, for comparing builds.
# With wrk's own, it is the budget of the two cores all three share.
def per_check(j, part):
    checks = ag[j][0] * float(dur)
    f = cpu[j].split(":")
    if part == "wrk":
        return float(f[3]) * 1e6 / checks
    ticks = {"user": int(f[0]), "sys": int(f[1]),
             "service": int(f[0]) + int(f[1]), "redis": int(f[2])}[part]
    return ticks * 1e6 / float(tck) / checks
def per_round(part):
    return " ".join("%.0f" % per_check(j, part) for j in range(len(cpu)))
print("CPU us per check (abuseguard runs): service %s (user %s, system %s), "
      "redis %s, wrk %s" % (per_round("service"), per_round("user"),
                            per_round("sys"), per_round("redis"),
                            per_round("wrk")))
print("redis: %s keys, used_memory %s bytes (%.0f B/key over all keys); "
      "login.user logs sampled: %.0f B/key (MEMORY USAGE, n=%s)"
      % (keys, used, float(used) / max(float(keys), 1), float(usage) / max(float(n), 1), n))
PY
