#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a login check costs Redis, in time, beside the Node.js peer: the
# top-level script command's time per check from INFO commandstats (FCALL
# for abuseguard, EVALSHA for the peer; a script's time includes its
# nested commands, and excludes reading and parsing the request), and
# Redis's process CPU per check (user + system, /proc), under the normal
# mix at full load (wrk -t2 -c64, wrk-login.lua). Contenders:
#   peer     rate-limiter-flexible, three fixed windows, three EVALSHA
#   ag3      abuseguard, the peer's three limits as exact sliding logs
#            (bench/policies.json)
#   agdef    abuseguard, every policy of policies/default.json for the
#            login endpoint, shields included (their syncs are FCALLs too,
#            and counted: they are what this set costs Redis)
#   base3, basedef   the same two with BASELINE_BIN, another build (say
#            main before a change), in the same rounds
# Only the contender being measured runs: each is started for its run and
# stopped after it, so no other instance's shield syncs or fleet reads
# reach Redis meanwhile, on a Redis flushed before it (the fleet's policy
# set lives in Redis: the first instance would give its set to every
# later one), so every run starts from no keys. The order rotates each round; every ratio is
# within a round, and the summary gives medians.
# With GRIND=1, each run's Redis runs under callgrind instead, and the
# last column is the instructions inside the script command per check
# (the part commandstats times), which do not drift with the machine's
# load: the same mix, far slower (use CONNS=8); the times are then
# valgrind's, not Redis's.
# Environment: ROUNDS (default 3), DURATION (s a run, default 8), CONNS
# (default 64), SHARED_BENCH, BIN (the build measured as ag3 and agdef;
# default this tree's Release build), BASELINE_BIN, CONTENDERS (a subset of the
# names, in order), GRIND, SHOW_STATS (1: each run's commandstats, on
# stderr). Needs valgrind with GRIND (installed if missing).
# A benchmark, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
shared=${SHARED_BENCH:-$root/../shared/bench}
rounds=${ROUNDS:-3}
duration=${DURATION:-8}
conns=${CONNS:-64}
out=$root/bench/out
mkdir -p "$out"
. bench/lib.sh
bench_need wrk wrk
bench_need node nodejs
grind=${GRIND:-0}
slow=
if [ "$grind" = 1 ]; then
    bench_need valgrind valgrind
    # Redis under valgrind answers in milliseconds, not microseconds.
    slow="--redis-timeout-ms 5000"
fi
bench_setup
bin=${BIN:-$root/build-bench/abuseguard}
bench_peer_install "$shared" "$out"
rpid=${pids[0]}

# The policy files: the three limits, and the default login set.
mkdir -p "$work/three" "$work/default"
cp bench/policies.json "$work/three/policies.json"
python3 - policies/default.json "$work/default/policies.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["policies"] = [p for p in doc["policies"] if p.get("endpoint") == "login"]
json.dump(doc, open(sys.argv[2], "w"), indent=2)
PY

contenders=(peer ag3 agdef)
[ -z "${BASELINE_BIN:-}" ] || contenders+=(base3 basedef)
[ -z "${CONTENDERS:-}" ] || contenders=($CONTENDERS)

# Starts contender $1 on $sport; sets $cpid.
start() {
    sport=$(bench_port)
    case $1 in
    peer)
        (cd "$out/peer-node" && PORT=$sport REDIS_PORT=$rport WORKERS=2 \
            exec node server.js) > "$work/peer.log" 2>&1 &
        ;;
    *)
        local b=$bin set=three
        case $1 in base*) b=$BASELINE_BIN ;; esac
        case $1 in *def) set=default ;; esac
        rm -rf "$work/db-$1"
        mkdir "$work/db-$1"
        "$b" --listen "127.0.0.1:$sport" --redis "redis://127.0.0.1:$rport" \
            --db "$work/db-$1/policies.db" --secret-file "$work/secret" \
            --seed-dir "$work/$set" --log-level error $slow \
            2> "$work/$1.log" &
        ;;
    esac
    cpid=$!
    bench_ready 30 curl -sf -o /dev/null -X POST \
        "127.0.0.1:$sport/check-login" \
        -d '{"user":"warm@example.com","ip":"192.0.2.1"}'
}

stop() {
    kill -TERM "$cpid" 2>/dev/null || true
    wait "$cpid" 2>/dev/null || true
}

hz=$(getconf CLK_TCK)

# One run of contender $1 in round $2: a line "name round checks/s
# script_us_per_check script_calls_per_check nested_per_check
# redis_cpu_us_per_check" on stdout.
run() {
    # A fresh Redis for every run: the fleet's policy set lives there, and
    # the first instance to start would otherwise give its set to all.
    if [ "$grind" = 1 ]; then
        rport=$(bench_port)
        valgrind --tool=callgrind --instr-atstart=no \
            --callgrind-out-file="$work/redis.cg" redis-server \
            --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
            --logfile /dev/null >/dev/null 2>&1 &
        rpid=$!
        bench_ready 60 redis-cli -p "$rport" ping
    else
        redis-cli -p "$rport" FLUSHALL >/dev/null
    fi
    start "$1"
    sleep 1 # the start's own Redis work (loading, first syncs) settles
    redis-cli -p "$rport" CONFIG RESETSTAT >/dev/null
    local t0 t1 instr=0
    t0=$(bench_ticks "$rpid")
    [ "$grind" = 0 ] || callgrind_control -i on "$rpid" >/dev/null
    wrk -t2 -c"$conns" -d"${duration}s" -s "$shared/wrk-login.lua" \
        "http://127.0.0.1:$sport" > "$work/wrk.txt"
    [ "$grind" = 0 ] || callgrind_control -i off "$rpid" >/dev/null
    t1=$(bench_ticks "$rpid")
    redis-cli -p "$rport" INFO commandstats | tr -d '\r' > "$work/stats.txt"
    [ -z "${SHOW_STATS:-}" ] || cat "$work/stats.txt" >&2
    stop
    if [ "$grind" = 1 ]; then
        redis-cli -p "$rport" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
        wait "$rpid" 2>/dev/null || true
        instr=$(callgrind_annotate --inclusive=yes --threshold=100 \
            "$work/redis.cg" | awk '/:(fcallCommand|evalShaCommand) / && !n++ {
                gsub(",", "", $1); print $1}')
    fi
    python3 - "$1" "$2" "$work/wrk.txt" "$work/stats.txt" \
        "$((t1 - t0))" "$hz" "${instr:-0}" <<'PY'
import re, sys
name, rnd, wrk, stats, ticks, hz, instr = sys.argv[1:]
t = open(wrk).read()
checks = int(re.search(r"(\d+) requests in", t).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
if bad:
    sys.exit("%s: %s answers not 2xx" % (name, bad.group(1)))
script = "evalsha" if name == "peer" else "fcall"
calls = usec = nested = 0
for line in open(stats):
    m = re.match(r"cmdstat_(\w+(?:\|\w+)?):calls=(\d+),usec=(\d+)", line)
    if not m:
        continue
    if m.group(1) == script:
        calls, usec = int(m.group(2)), int(m.group(3))
    elif m.group(1) not in ("info", "config|resetstat", "ping"):
        nested += int(m.group(2))
print("%s %s %.0f %.2f %.3f %.2f %.2f %.0f" % (
    name, rnd, rps, usec / checks, calls / checks, nested / checks,
    int(ticks) * 1e6 / int(hz) / checks, int(instr) / checks))
PY
}

echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "# name round checks/s script_us/check script_calls/check" \
    "nested_cmds/check redis_cpu_us/check script_instructions/check"
n=${#contenders[@]}
for r in $(seq "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
        run "${contenders[$(((i + r - 1) % n))]}" "$r"
    done
done | tee "$work/runs.txt"

python3 - "$work/runs.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, rnd, rps, us, calls, nested, cpu, instr = line.split()
    runs.setdefault(name, {})[rnd] = (float(rps), float(us), float(cpu),
                                      float(instr))
med = statistics.median
print("\nmedians over rounds, and within-round ratios to the peer (median)")
print("%-8s %9s %9s %9s %9s %9s %9s %9s %9s" % ("name", "checks/s",
      "script_us", "cpu_us", "instr", "x_rps", "x_script", "x_cpu", "x_instr"))
peer = runs.get("peer", {})
for name, by in runs.items():
    rounds = sorted(set(by) & set(peer))
    ratio = lambda k: med(by[r][k] / peer[r][k] if peer[r][k] else 0
                          for r in rounds) if rounds else 0
    print("%-8s %9.0f %9.2f %9.2f %9.0f %9.2f %9.2f %9.2f %9.2f" % (
        name, med(v[0] for v in by.values()), med(v[1] for v in by.values()),
        med(v[2] for v in by.values()), med(v[3] for v in by.values()),
        ratio(0), ratio(1), ratio(2), ratio(3)))
for a, b in (("ag3", "base3"), ("agdef", "basedef")):
    if a in runs and b in runs:
        rounds = sorted(set(runs[a]) & set(runs[b]))
        line = ("%s/%s within rounds: script %.3f, redis cpu %.3f, "
                "checks/s %.3f"
                % (a, b, med(runs[a][r][1] / runs[b][r][1] for r in rounds),
                   med(runs[a][r][2] / runs[b][r][2] for r in rounds),
                   med(runs[a][r][0] / runs[b][r][0] for r in rounds)))
        if all(runs[b][r][3] for r in rounds):
            line += ", script instructions %.3f" % med(
                runs[a][r][3] / runs[b][r][3] for r in rounds)
        print(line)
PY
