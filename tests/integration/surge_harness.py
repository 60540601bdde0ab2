# SPDX-License-Identifier: Apache-2.0
"""What the site-wide shields' tests against real processes share
(test_surge.py, test_surge_learning.py): the shields' policies and
figures, traffic that records every check (a steady background, a wave
of distributed stuffing), the service's shield log lines read on Redis
TIME, and ShieldTest's helpers: start two instances, wait until a shield
has learned a window, run a wave until it has gone on past a raise, judge
what passed after it.

Time is Redis's: every elapsed time asserted is measured against Redis
TIME (brackets around the moments that matter, and the shields' own
figures, which are on Redis TIME), never against a sleep."""
import calendar
import json
import re
import threading
import time

from harness import PolicyTest, policy, wait_until

S = 1_000_000  # microseconds
W = 2  # every shield's window_s
HOLD = 4  # and block_s; baseline_s is 60
SYNC_S = 0.25  # AG_SHIELDS_SYNC_MS: each instance steps its shields so often
FLOOR = 10  # s.failures (and others): failures a window must exceed
UNKNOWN_FLOOR = 5  # s.unknown_users: unknown_user failures a window
# The background: one untrusted check every BG_PERIOD, to each instance in
# turn (8 a window), every BG_FAIL_EVERY-th allowed one reported failed,
# bad_password and unknown_user in turn: 2 failures a window, one of them
# an unknown user, a fifth of each floor.
BG_PERIOD = 0.25
BG_FAIL_EVERY = 4
# The wave: WAVE_RATE checks a second (50 a window) over both instances,
# each allowed one reported failed, two in three as an unknown user: 5
# times FLOOR, 6.6 times UNKNOWN_FLOOR.
WAVE_RATE = 25
WAVE_WORKERS = 8
WAVE_REASONS = ("unknown_user", "unknown_user", "bad_password")
# What a raise may take to reach the other instance: one sync period on a
# quiet machine; 1.5 s allows six of them for a loaded one.
REACH_S = 1.5
# The slack on the lowering as clients see it, beyond hold + two windows:
# the step that finds the hold over runs up to a sync period after it, the
# other instance reads it a sync period later, the background reaches each
# instance every 2 x BG_PERIOD; doubled for a loaded machine.
LOWER_SLACK_S = 2 * (2 * SYNC_S + 2 * BG_PERIOD)
# The longest a wave may run, waiting for what a test needs of it (a
# loaded machine's clients fall behind the schedule): past it the test
# fails, never hangs; and a wave sends WAVE_RATE x WAVE_LIMIT_S attempts
# at most.
WAVE_LIMIT_S = 120
MAX_PASS_SHARE = 0.05  # of attempts after a raise (the "Done when")
# --redis-timeout-ms where Redis is paused on purpose (test_resilience.py's
# reasoning): short enough to wait for.
PAUSE_TIMEOUT_MS = 500


def shield(name, limit=FLOOR, counts="failures", **extra):
    fields = dict(window_s=W, block_s=HOLD, baseline_s=60, factor=5)
    fields.update(extra)
    return policy(name, key=("site",), algorithm="surge", limit=limit,
                  counts=counts, applies_to="untrusted", action="challenge",
                  **fields)


def judge(resp, shields):
    """"passed", "challenged" (a 429 that names one of shields and asks a
    challenge), or what else it was (the test fails on it)."""
    if resp.status == 200:
        return "passed"
    j = resp.json or {}
    if resp.status == 429 and j.get("action") == "challenge" and \
            j.get("policy") in shields:
        return "challenged"
    return "unexpected %d %r" % (resp.status, resp.raw[:200])


class Attempt:
    """One check: the instance it went to, when it was sent and answered
    (time.monotonic) and what came of it."""

    def __init__(self, svc, t0, t1, outcome):
        self.svc, self.t0, self.t1, self.outcome = svc, t0, t1, outcome


class Traffic:
    """Checks sent from threads and recorded; stop() ends them."""

    def __init__(self, svcs, shields):
        self.svcs, self.shields = svcs, shields
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.results = []
        self.threads = []

    def run(self, n):
        for _ in range(n):
            t = threading.Thread(target=self.guarded, daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def guarded(self):
        try:
            self.work()
        except Exception as e:  # recorded: the test fails on it
            self.record(Attempt(-1, 0, 0, "unexpected %r" % e))

    def record(self, a):
        with self.lock:
            self.results.append(a)

    def stop(self, timeout=60):
        """Ends the threads: whether they all ended within timeout."""
        self.done.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)

    def snapshot(self):
        with self.lock:
            return list(self.results)

    def check(self, i, body, source=None):
        t0 = time.monotonic()
        r = self.svcs[i].post("/check-login", body, source=source)
        return r, Attempt(i, t0, time.monotonic(), judge(r, self.shields))

    def report(self, i, a, body, source=None):
        r = self.svcs[i].post("/report-login", body, source=source)
        if r.status != 204:
            a.outcome = "unexpected report %d %r" % (r.status, r.raw[:200])


class Wave(Traffic):
    """Distributed stuffing: attempt k is a fresh user from an address in a
    /16 of its own (and a loopback client address of its own), sent to
    instance k % 2 at its slot of a schedule of rate a second (a moment
    lost is made up, WAVE_WORKERS at a time); each allowed check is
    reported failed with reasons[k % len(reasons)] unless report is false.
    Bounded: at most limit attempts, and none once stopped."""

    def __init__(self, svcs, shields, tag, limit, reasons=WAVE_REASONS,
                 report=True, rate=WAVE_RATE):
        super().__init__(svcs, shields)
        self.tag, self.limit, self.reasons = tag, limit, reasons
        self.report_failures, self.rate = report, rate
        self.next = 0

    def start(self):
        self.t_start = time.monotonic()
        return self.run(WAVE_WORKERS)

    def work(self):
        while not self.done.is_set():
            with self.lock:
                k = self.next
                if k >= self.limit:
                    return
                self.next += 1
            left = self.t_start + k / self.rate - time.monotonic()
            if left > 0 and self.done.wait(left):
                return
            self.attempt(k)

    def attempt(self, k):
        i = k % 2
        body = {"user": "%s%d@stuffing.example" % (self.tag, k),
                "ip": "%d.%d.17.%d" % (11 + k // 256, k % 256, k % 250 + 1)}
        source = "127.%d.%d.%d" % (1 + k % 250, k // 250 % 250, 9)
        r, a = self.check(i, body, source)
        if a.outcome == "passed" and self.report_failures:
            self.report(i, a, {**body, "success": False,
                               "reason": self.reasons[k % len(self.reasons)]},
                        source)
        self.record(a)


class Steady(Traffic):
    """One check every period, to each instance in turn, from one thread,
    paced without catching up (a slow moment sends fewer, never a burst).
    Untrusted: users of a small pool, every BG_FAIL_EVERY-th allowed check
    reported failed, bad_password and unknown_user in turn. Trusted: each
    user with their device's token."""

    def __init__(self, svcs, shields, period, tokens=None):
        super().__init__(svcs, shields)
        self.period, self.tokens = period, tokens

    def work(self):
        k = 0
        next_at = time.monotonic()
        while not self.done.wait(max(0.0, next_at - time.monotonic())):
            next_at = max(next_at + self.period, time.monotonic())
            self.tick(k)
            k += 1

    def tick(self, k):
        i = k % 2
        if self.tokens:
            user, token = self.tokens[k % len(self.tokens)]
            body = {"user": user, "ip": "198.51.100.%d" % (k % 4 + 1),
                    "device_token": token}
            r, a = self.check(i, body)
            if a.outcome == "passed" and r.json.get("device") != "trusted":
                a.outcome = "unexpected: not trusted %r" % r.json
        else:
            body = {"user": "regular%d@example.com" % (k % 40),
                    "ip": "203.0.113.%d" % (k % 40 + 1)}
            r, a = self.check(i, body)
            if a.outcome == "passed" and k % BG_FAIL_EVERY == 0:
                reason = ("bad_password", "unknown_user")[
                    k // BG_FAIL_EVERY % 2]
                self.report(i, a, {**body, "success": False,
                                   "reason": reason})
        self.record(a)


def log_events(svcs, event):
    """The service log lines of event, oldest first, each a dict of its
    msg's key=value fields plus svc (the instance) and ts_us (its time, on
    CLOCK_REALTIME: the clock Redis TIME reads on this same host)."""
    out = []
    for i, svc in enumerate(svcs):
        for line in svc.log_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") != event:
                continue
            fields = dict(re.findall(r"(\w+)=(\S+)", rec.get("msg", "")))
            when, ms = rec["ts"].rstrip("Z").split(".")
            fields["ts_us"] = calendar.timegm(
                time.strptime(when, "%Y-%m-%dT%H:%M:%S")) * S + \
                int(ms) * 1000
            fields["svc"] = i
            out.append(fields)
    return sorted(out, key=lambda f: f["ts_us"])


class ShieldTest(PolicyTest):
    """The helpers of the shields' tests against real processes: two
    instances, traffic, the shields' log lines on Redis TIME."""

    def start(self, policies, extra=()):
        svcs = self.seeded(policies, count=2, extra=list(extra))
        self.sync_clocks()
        return svcs

    def taught(self, name):
        """The whole windows the shared state of shield name learned from
        (of each of its shapes, the least), read from its hash in Redis;
        0 until it has one."""
        keys = [k for k in self.redis.cmd("KEYS", "ag:%s:*" % name)
                if not k.endswith(":shapes")]
        return min((int(self.redis.cmd("HGET", k, "taught") or 0)
                    for k in keys), default=0)

    def wait_learned(self, names):
        """Waits until every shield of names has learned a whole window
        (the window it began in is not whole): its attempts, learned from
        a window it was not raised in, then hold a raise the failures
        stop renewing, as a running site's shield has learned them."""
        self.assertTrue(wait_until(
            lambda: all(self.taught(n) >= 1 for n in names), 4 * W + 30),
            [(n, self.taught(n)) for n in names])

    def sync_clocks(self):
        """The offset from time.monotonic to Redis TIME, from the tightest
        of a few brackets: the times of attempts are then read on Redis's
        clock (to within half that bracket, a millisecond or so)."""
        best = None
        for _ in range(5):
            m0 = time.monotonic()
            r = self.redis_time_us()
            m1 = time.monotonic()
            if best is None or m1 - m0 < best[0]:
                best = (m1 - m0, r - (m0 + m1) / 2 * S)
        self.offset_us = best[1]

    def on_redis(self, mono):
        return mono * S + self.offset_us

    def tokens(self, svcs, n=4):
        """n users, each with a trusted device: the token a successful
        login's report answers."""
        out = []
        for k in range(n):
            user = "trusted%d@example.com" % k
            r = svcs[k % 2].post("/report-login", {
                "user": user, "ip": "198.51.100.9", "success": True})
            self.assertEqual(r.status, 200, r.raw)
            out.append((user, r.json["device_token"]))
        return out

    def stop_all(self, *traffics):
        for t in traffics:
            self.assertTrue(t.stop(), "traffic did not stop")

    def assert_expected(self, attempts):
        odd = [a.outcome for a in attempts
               if a.outcome not in ("passed", "challenged")]
        self.assertEqual(odd, [])

    def raised(self, svcs, name):
        return [e for e in log_events(svcs, "shield_raised")
                if e["policy"] == name]

    def since_us(self, line):
        """When a raise was, on Redis TIME: its hold ends HOLD after."""
        return (int(line["until_ms"]) - HOLD * 1000) * 1000

    def first_challenged(self, attempts, i):
        for a in sorted(attempts, key=lambda a: a.t0):
            if a.svc == i and a.outcome == "challenged":
                return a
        return None

    def wave_past_raise(self, svcs, wave, names, after):
        """Runs wave until after of its attempts were sent since the first
        raise of the shields names (within WAVE_LIMIT_S), then stops it:
        a loaded machine that raises later sends as many after the raise.
        Returns the Redis TIME of its start and of its end."""
        def enough():
            lines = [e for e in log_events(svcs, "shield_raised")
                     if e["policy"] in names]
            since = min((self.since_us(e) for e in lines), default=None)
            return since is not None and sum(
                self.on_redis(a.t0) >= since for a in wave.snapshot()) >= after
        self.addCleanup(wave.stop)
        t_wave = self.redis_time_us()
        wave.start()
        self.assertTrue(wait_until(enough, WAVE_LIMIT_S, 0.1))
        self.assertTrue(wave.stop())
        return t_wave, self.redis_time_us()

    def assert_raised_within_two_windows(self, svcs, names, t_wave):
        """The raises of the shields names: each at most once (one that
        came down and went up again would flap), on the shared state, the
        first within two windows of the wave's start. Returns the names
        raised and when the first was, on Redis TIME. Once one is raised
        the wave's failures stop: another shield of the same wave may then
        never cross its floor."""
        lines = [e for e in log_events(svcs, "shield_raised")
                 if e["policy"] in names]
        raised = sorted(e["policy"] for e in lines)
        self.assertTrue(raised, "no shield raised")
        self.assertEqual(len(set(raised)), len(raised), lines)
        self.assertEqual({e["source"] for e in lines}, {"shared"}, lines)
        since = min(self.since_us(e) for e in lines)
        self.assertLessEqual(since - t_wave, 2 * W * S, lines)
        return raised, since

    def assert_shielded_after(self, wave, since, what):
        """Both instances challenge the wave within REACH_S of the raise at
        since; at most MAX_PASS_SHARE of the attempts sent after the raise
        pass (those that reached an instance before the raise did, and any
        that passed later, if the shield flapped), and none of those sent
        to an instance after it answered a challenge. Returns the
        figures."""
        attempts = sorted(wave.snapshot(), key=lambda a: a.t0)
        self.assert_expected(attempts)
        reach, leaked = [], []
        for i in (0, 1):
            first = self.first_challenged(attempts, i)
            self.assertIsNotNone(first, "instance %d never shielded" % i)
            reach.append((self.on_redis(first.t1) - since) / S)
            leaked += [a for a in attempts if a.svc == i and
                       a.t0 > first.t1 and a.outcome == "passed"]
        self.assertLessEqual(max(reach), REACH_S, reach)
        self.assertEqual(len(leaked), 0, "passed once shielded")
        later = [a for a in attempts if self.on_redis(a.t0) >= since]
        passed = sum(a.outcome == "passed" for a in later)
        self.assertGreaterEqual(len(later), 150, "too short a wave")
        self.assertLessEqual(passed, MAX_PASS_SHARE * len(later),
                             "%d of %d passed" % (passed, len(later)))
        figures = {"attempts": len(attempts), "after_raise": len(later),
                   "passed_after_raise": passed,
                   "reach_s": [round(r, 3) for r in reach]}
        print("\n%s: %s" % (what, figures), flush=True)
        return figures
