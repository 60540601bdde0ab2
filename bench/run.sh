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
# commit: measured in every round right beside this one, before it in
# even rounds and after it in odd ones, with the same policies, so that a
# change's effect is a within-round ratio too).
# SHIELDS=1: abuseguard's policies carry the default site-wide shields too
# (the surge policies of policies/default.json; default 1 in
# MODE=stuffing, else 0). BASELINE_SHIELDS: the baseline's (default
# SHIELDS); set alone, the baseline is this build, so that
# SHIELDS=1 BASELINE_SHIELDS=0 measures what the shields cost.
# MODE=attack: the same rounds and ratios under a credential-guessing
# flood instead (wrk-attack.lua: 64 user and IP pairs, denied after their
# first few attempts), against the peer with its own local block cache
# (INMEM_BLOCK=1, rate-limiter-flexible's inMemoryBlockOnConsumed).
# MODE=stuffing: distributed credential stuffing (wrk-stuffing.lua: every
# check a new user and address, a failure report after each allowed
# one), abuseguard with its shields. Before its measured run each
# contender gets a wave of WARMUP s (default 2) with the same script;
# abuseguard's shields are lowered before it (their shared state deleted
# in Redis) and bench/shield_wave.py watches it until they are raised,
# so the wave gives the figures before the raise and the measured run
# those after. Checks/s are the script's own count of checks, not wrk's
# requests, which include the reports.
# PEER_BLOCK: the peer's INMEM_BLOCK (default 1 in MODE=attack, else 0).
# Every run also reports the Redis commands it cost per check (INFO
# commandstats calls over the run / its checks).
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
warmup=${WARMUP:-2}
case $mode in
normal) wrk_script=wrk-login.lua peer_block=0 shields=0 ;;
attack) wrk_script=wrk-attack.lua peer_block=1 shields=0 ;;
stuffing) wrk_script=wrk-stuffing.lua peer_block=0 shields=1 ;;
*) echo "MODE must be normal, attack or stuffing" >&2; exit 2 ;;
esac
peer_block=${PEER_BLOCK:-$peer_block}
shields=${SHIELDS:-$shields}
base_shields=${BASELINE_SHIELDS:-$shields}
baseline_bin=${BASELINE_BIN:-}
out=$root/bench/out
mkdir -p "$out"

scripts/deps.sh
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null; }
command -v node >/dev/null || { apt-get install -y -qq nodejs npm >/dev/null; }

echo "== build (Release)" >&2
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DAG_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null
bin=$root/build-bench/abuseguard
. bench/lib.sh # bench_policies
[ -z "${BASELINE_SHIELDS:-}" ] || baseline_bin=${baseline_bin:-$bin}

bench_peer_install "$shared" "$out"

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
# Under stuffing the log says when a shield is raised (a warning).
log_level=error
[ "$mode" != stuffing ] || log_level=warn
# One service: the given policy file (with the shields if $3 is 1), its
# own database.
start_service() { # name policies.json shields [binary] -> port_, pid_<name>
    mkdir "$work/$1"
    bench_policies "$2" "$3" "$work/$1/policies.json"
    local p; p=$(port)
    "${4:-$bin}" --listen "127.0.0.1:$p" --redis "redis://127.0.0.1:$rport" \
        --db "$work/$1/policies.db" --secret-file "$work/secret" \
        --seed-dir "$work/$1" --log-level "$log_level" 2> "$out/$1.log" &
    pids+=($!)
    eval "port_$1=$p pid_$1=$!"
}
start_service sliding policies.json "$shields"
start_service fixed policies-fixed.json "$shields"
aport=$port_sliding; apid=$pid_sliding; fport=$port_fixed; fpid=$pid_fixed
bport= bpid=
if [ -n "$baseline_bin" ]; then
    start_service base policies.json "$base_shields" "$baseline_bin"
    bport=$port_base bpid=$pid_base
fi
pport=$(port)
(cd "$out/peer-node" && PORT=$pport REDIS_PORT=$rport WORKERS=2 \
    INMEM_BLOCK=$peer_block exec node server.js) > "$out/peer.log" 2>&1 &
pids+=($!)
for p in $aport $fport $pport $bport; do
    until curl -s -o /dev/null -X POST "127.0.0.1:$p/check-login" \
        -d '{"user":"warm@example.com","ip":"192.0.2.1"}'; do sleep 0.1; done
done

# The shields' names, and the keys of their state shared in Redis, which
# the first step of their sync writes (the same for every instance: one
# secret, one name and one configuration each; the shield's registry of
# configurations, "...:shapes", beside it is left alone).
shield_names=$(python3 -c 'import json, sys
print(",".join(p["name"] for p in json.load(open(sys.argv[1]))["policies"]
               if p.get("algorithm") == "surge"))' "$work/sliding/policies.json")
shield_keys=()
if [ -n "$shield_names" ]; then
    for name in ${shield_names//,/ }; do
        key=
        for _ in $(seq 100); do
            key=$(redis-cli -p "$rport" --scan --pattern "ag:$name:*" |
                grep -v ':shapes$' || true)
            [ -z "$key" ] || break
            sleep 0.1
        done
        [ -n "$key" ] || { echo "no shared state for shield $name" >&2; exit 1; }
        shield_keys+=("$key")
    done
fi

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
# CPU time a process has used, in clock ticks, as "user system".
ticks2() { awk '{print $14, $15}' "/proc/$1/stat"; }

# Every command Redis has run so far (INFO commandstats calls, summed).
redis_calls() {
    redis-cli -p "$rport" INFO commandstats |
        awk -F'[=,]' '/^cmdstat_/ {n += $2} END {print n + 0}'
}

# One wrk run: prints "checks_per_s p50_ms p99_ms non2xx ok|errors
# cmds_per_check checks allowed". Checks are wrk's requests, or under
# stuffing the script's count of checks (its requests include the
# reports), and allowed the checks it saw allowed ("-" in other modes).
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
requests = int(re.search(r"(\d+) requests in", t).group(1))
stuffing = re.search(r"^stuffing: (\d+) checks \((\d+)/s\), (\d+) allowed",
                     t, re.M)
allowed = "-"
if stuffing:
    requests, rps = int(stuffing.group(1)), float(stuffing.group(2))
    allowed = stuffing.group(3)
# The latency distribution lines, not a "+/- Stdev" column ending in 50%.
p50 = ms(re.search(r"^\s+50%\s+(\S+)", t, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", t, re.M).group(1))

non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
errs = re.search(r"Socket errors: (.*)", t)
print("%.0f %.3f %.3f %s %s %.4f %d %s" % (rps, p50, p99,
      non2xx.group(1) if non2xx else 0, "errors" if errs else "ok",
      int(sys.argv[2]) / max(requests, 1), requests, allowed))
PY
}

# Under stuffing, before each measured run: a wave of WARMUP s with the
# same script. For an abuseguard instance ($3 = 1) its shields are lowered
# first (their shared state deleted: the next sync starts it over,
# lowered, with nothing learned, as on a first start), and the wave is
# watched until they are raised (bench/shield_wave.py); prints the raise's
# time and "checks checks_per_s cmds_per_check" before it, or "-"s.
wave() { # port name watched
    if [ "$mode" != stuffing ]; then
        echo "- - - -"
        return
    fi
    local cmd=(wrk -t2 -c"$conns" -d"${warmup}s" -s "$shared/$wrk_script"
        "http://127.0.0.1:$1")
    if [ "$3" != 1 ] || [ ${#shield_keys[@]} = 0 ]; then
        "${cmd[@]}" > "$out/wave-$2.txt"
        echo "- - - -"
        return
    fi
    redis-cli -p "$rport" DEL "${shield_keys[@]}" >/dev/null
    # Lowered once a new user from an address of this round is let
    # through (no other limit of the benchmark's can deny it).
    local n=0 body
    while :; do
        body="{\"user\":\"lowered-$2-$n@example.com\","
        body+="\"ip\":\"198.51.$((i % 256)).$((n % 254 + 1))\"}"
        [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "$body" \
            "127.0.0.1:$1/check-login")" != 200 ] || break
        n=$((n + 1))
        [ "$n" -lt 100 ] || { echo "$2: the shields stay raised" >&2; exit 1; }
        sleep 0.05
    done
    local keys="${shield_keys[*]}"
    python3 bench/shield_wave.py "$1" "$rport" "$shield_names" \
        "${keys// /,}" "$out/wave-$2.txt" -- "${cmd[@]}"
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
declare -a ceil_res rss_after
declare -a res_ag res_fx res_peer res_base cpu_ag cpu_fx cpu_base wave_ag \
    wave_fx wave_base
rss_before=$(rss $apid)
# One contender: its wave (under stuffing), then its measured run, with
# the CPU time its service ($5, if any) and Redis used during that run.
# Appends to res_$1, wave_$1 and cpu_$1.
run_one() { # key port name watched pid
    local u s u1 s1 r0 w
    w=$(wave "$2" "$3-$i" "$4")
    eval "wave_$1+=(\"\$w\")"
    if [ -n "$5" ]; then
        read -r u s < <(ticks2 "$5")
        r0=$(bench_ticks $rpid)
    fi
    w=$(measure "$2" "$3-$i")
    eval "res_$1+=(\"\$w\")"
    [ -n "$5" ] || return 0
    read -r u1 s1 < <(ticks2 "$5")
    # service user:system:Redis ticks, then wrk's seconds (its times line
    # "0m1.234s 0m0.567s").
    w="$((u1 - u)):$((s1 - s)):$(($(bench_ticks $rpid) - r0)):$(
        awk 'NR == 2 {s = 0; for (i = 1; i <= 2; i++) {
            split($i, t, /[ms]/); s += t[1] * 60 + t[2] } print s}' \
            "$out/wrk-$3-$i.times")"
    eval "cpu_$1+=(\"\$w\")"
}
# abuseguard and, right beside it, the baseline: abuseguard first in odd
# rounds, the baseline first in even ones.
run_ag() {
    local order="ag base"
    [ $((i % 2)) = 1 ] || order="base ag"
    for c in $order; do
        if [ "$c" = ag ]; then
            run_one ag "$aport" abuseguard "$shields" "$apid"
            rss_after+=("$(rss $apid)")
        elif [ -n "$bport" ]; then
            run_one base "$bport" baseline "$base_shields" "$bpid"
        else
            res_base+=("0 0 0 0 ok 0 0 -"); cpu_base+=(0:0:0:0)
            wave_base+=("- - - -")
        fi
    done
}
for i in $(seq "$runs"); do
    if [ $((i % 2)) = 1 ]; then
        run_ag
        run_one fx "$fport" abuseguard-fixed "$shields" "$fpid"
        run_one peer "$pport" peer 0 ""
    else
        run_one peer "$pport" peer 0 ""
        run_one fx "$fport" abuseguard-fixed "$shields" "$fpid"
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

echo "mode: $mode ($wrk_script; peer INMEM_BLOCK=$peer_block;" \
    "shields: abuseguard $shields${bport:+, baseline $base_shields})"
python3 - "${ceil_res[*]}" "$rss_before" "$keys" "$used" "$usage" "$n" \
    "$(getconf CLK_TCK)" \
    "${res_ag[@]}" --- "${res_fx[@]}" --- "${res_peer[@]}" --- \
    "${res_base[@]}" --- "${rss_after[@]}" --- "${cpu_ag[@]}" --- \
    "${cpu_fx[@]}" --- "${cpu_base[@]}" --- "${wave_ag[@]}" --- \
    "${wave_fx[@]}" <<'PY'
import statistics, sys
args = sys.argv[1:]
ceilings, rss0, keys, used, usage, n, tck = args[:7]
ceilings = [float(c) for c in ceilings.split()]
rest, groups = args[7:], []
while "---" in rest:
    i = rest.index("---"); groups.append(rest[:i]); rest = rest[i + 1:]
groups.append(rest)
ag, fx, peer, base, rss, cpu_ag, cpu_fx, cpu_base, wave_ag, wave_fx = groups
# checks/s, p50, p99, non-2xx, ok|errors, commands per check, checks
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
    print("per round: abuseguard/baseline %s; median %.3fx; baseline/peer median %.2fx"
          % (" ".join("%.3fx" % (ag[j][0] / base[j][0]) for j in rounds),
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
# Under stuffing: the checks let through in each measured run (after the
# raise), and each abuseguard wave until its shields were raised.
if ag and ag[0][7] != "-":
    print("checks allowed, per round: abuseguard %s; abuseguard-fixed %s; "
          "peer %s" % tuple(" ".join("%s of %s" % (r[7], r[6]) for r in rows)
                            for rows in (ag, fx, peer)))
for name, waves in (("abuseguard", wave_ag), ("abuseguard-fixed", wave_fx)):
    if waves and any(w.split()[0] != "-" for w in waves):
        print("%s before the raise, per round (raised after ms; checks; "
              "checks/s; Redis commands per check): %s"
              % (name, ", ".join("; ".join(w.split()) for w in waves)))
print("abuseguard RSS kB: before %s, after each run %s" % (rss0, " ".join(rss)))
# CPU per check during each abuseguard instance's runs: a steadier
# measure than checks/s on a shared machine, for comparing builds.
# With wrk's own, it is the budget of the two cores all three share.
def per_check(rows, cpu, j, part):
    checks = float(rows[j][6])
    f = cpu[j].split(":")
    if part == "wrk":
        return float(f[3]) * 1e6 / checks
    ticks = {"user": int(f[0]), "sys": int(f[1]),
             "service": int(f[0]) + int(f[1]), "redis": int(f[2])}[part]
    return ticks * 1e6 / float(tck) / checks
def per_round(rows, cpu, part):
    return " ".join("%.1f" % per_check(rows, cpu, j, part)
                    for j in range(len(cpu)))
for name, rows, cpu in (("abuseguard", ag, cpu_ag),
                        ("abuseguard-fixed", fx, cpu_fx)) + \
        ((("baseline", base, cpu_base),) if have_base else ()):
    print("CPU us per check (%s runs): service %s (user %s, system %s), "
          "redis %s, wrk %s" % (name, per_round(rows, cpu, "service"),
                                per_round(rows, cpu, "user"),
                                per_round(rows, cpu, "sys"),
                                per_round(rows, cpu, "redis"),
                                per_round(rows, cpu, "wrk")))
# The service's CPU per check against Redis's for the same checks, in
# the same run (issue 30's measure: a ratio, as the machine's speed
# drifts); left out when a mode spares Redis nearly every call.
for name, rows, cpu in (("abuseguard", ag, cpu_ag),
                        ("abuseguard-fixed", fx, cpu_fx)):
    ratios = [per_check(rows, cpu, j, "service") /
              per_check(rows, cpu, j, "redis")
              for j in range(len(cpu)) if per_check(rows, cpu, j, "redis") >= 1]
    if ratios:
        print("service/redis CPU per check (%s), per round: %s; median %.2f"
              % (name, " ".join("%.2f" % r for r in ratios),
                 sorted(ratios)[len(ratios) // 2]))
if have_base:
    print("service CPU per check, abuseguard/baseline per round: %s"
          % " ".join("%.3f" % (per_check(ag, cpu_ag, j, "service")
                               / per_check(base, cpu_base, j, "service"))
                     for j in rounds))
print("redis: %s keys, used_memory %s bytes (%.0f B/key over all keys); "
      "login.user logs sampled: %.0f B/key (MEMORY USAGE, n=%s)"
      % (keys, used, float(used) / max(float(keys), 1), float(usage) / max(float(n), 1), n))
PY
