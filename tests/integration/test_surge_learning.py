# SPDX-License-Identifier: Apache-2.0
"""Site-wide shields that learn a busy site, end their raises and survive
a rollout (issue 36, items 1, 3 and 4) against real processes: two
service instances, one redis-server, real HTTP, windows of 2 s.

- A busy site, its failures over the floor from the start (real users
  who pass the challenge and fail their password, as on any site), is
  shielded while the new shield learns it, then left alone. (Before:
  raised for the whole run, its baseline 0.)
- A trickle of challenged checks, fewer than the bar a raise clears, does
  not hold a raise. (Before: three deviations of the background held it.)
- Two instances that disagree on the window, during a rollout, each
  shield a wave on a state of their own, and say that they disagree.
  (Before: each call deleted the other's state, and no wave was shielded.)

Time is Redis's, read from the shields' own log lines; see
surge_harness.py."""
import time
import unittest

from harness import wait_until
from surge_harness import (BG_PERIOD, HOLD, MAX_PASS_SHARE, REACH_S, S,
                           UNKNOWN_FLOOR, W, WAVE_LIMIT_S, WAVE_RATE,
                           ShieldTest, Steady, Traffic, Wave, log_events,
                           shield)


class Busy(Traffic):
    """A busy site's failures: rate checks a second (paced, never a burst
    to catch up), to each instance in turn, from a pool of users. A check
    the shield challenges is sent again with its challenge_nonce, as a
    real user who passed the CAPTCHA; each check allowed either way is
    reported failed. Its outcome is the first answer's."""

    def __init__(self, svcs, shields, rate):
        super().__init__(svcs, shields)
        self.rate = rate

    def work(self):
        k = 0
        period = 1.0 / self.rate
        next_at = time.monotonic()
        while not self.done.wait(max(0.0, next_at - time.monotonic())):
            next_at = max(next_at + period, time.monotonic())
            self.tick(k)
            k += 1

    def tick(self, k):
        i = k % 2
        body = {"user": "busy%d@example.com" % (k % 500),
                "ip": "198.18.%d.%d" % (k % 500 // 250, k % 250 + 1)}
        r, a = self.check(i, body)
        allowed = a.outcome == "passed"
        if a.outcome == "challenged":
            again = self.svcs[i].post("/check-login", dict(
                body, challenge_passed=r.json["challenge_nonce"]))
            allowed = again.status == 200
            if not allowed:
                a.outcome = "unexpected: a passed challenge %d %r" % (
                    again.status, again.raw[:200])
        if allowed:
            self.report(i, a, dict(body, success=False))
        self.record(a)


class SurgeLearningTest(ShieldTest):
    def after_line(self, attempts, line):
        """The attempts sent once an instance could know of line (a shield
        log line): REACH_S after it, on Redis TIME."""
        return [a for a in attempts
                if self.on_redis(a.t0) > line["ts_us"] + REACH_S * S]

    def test_a_busy_site_is_learned_and_then_left_alone(self):
        name = "s.busy"
        # A floor of 2 failures a window; the site fails 16 a window.
        svcs = self.start([shield(name, limit=2)])
        t0 = self.redis_time_us()
        busy = Busy(svcs, (name,), 8).run(1)
        self.addCleanup(busy.stop)
        # The new shield, raised by the site's own failures over its
        # floor, learns them from the raised windows (what passed the
        # challenge) and lowers.
        self.assertTrue(wait_until(
            lambda: log_events(svcs, "shield_lowered"), 12 * W + 30),
            (log_events(svcs, "shield_raised"), self.taught(name)))
        raised = log_events(svcs, "shield_raised")
        lowered = log_events(svcs, "shield_lowered")
        self.assertEqual(len(raised), 1, raised)
        self.assertEqual(raised[0]["by"], "counts")
        held_s = (lowered[0]["ts_us"] - raised[0]["ts_us"]) / S
        self.assertLessEqual(held_s, HOLD + 4 * W, (raised, lowered))
        # Eight windows more of the same site: never raised again, nothing
        # challenged once both instances knew it was lowered.
        t_low = lowered[0]["ts_us"]
        self.wait_for_redis_time(t_low + 8 * W * S)
        self.assertTrue(busy.stop())
        attempts = busy.snapshot()
        self.assert_expected(attempts)
        later = self.after_line(attempts, lowered[0])
        self.assertGreaterEqual(len(later), 4 * W * 8 / 2,
                                "the site went quiet")
        self.assertEqual([a.outcome for a in later
                          if a.outcome != "passed"], [])
        self.assertEqual(len(log_events(svcs, "shield_raised")), 1)
        print("\nbusy: raised %.3f s after the site began, held %.3f s; "
              "%d checks after the lowering, none challenged"
              % ((raised[0]["ts_us"] - t0) / S, held_s, len(later)),
              flush=True)

    def test_a_trickle_of_challenged_checks_does_not_hold_a_raise(self):
        name = "s.unknown_users"
        svcs = self.start([shield(name, limit=UNKNOWN_FLOOR,
                                  reasons=["unknown_user"])])
        background = Steady(svcs, (name,), BG_PERIOD).run(1)
        self.addCleanup(self.stop_all, background)
        self.wait_learned((name,))
        # Two whole windows more of the background: its checks learned.
        self.wait_for_redis_time(self.redis_time_us() + 2 * W * S)
        # A burst of 12 unknown users raises it...
        burst = Wave(svcs, (name,), "u", limit=12, reasons=("unknown_user",),
                     rate=24)
        self.addCleanup(burst.stop)
        burst.start()
        self.assertTrue(wait_until(lambda: self.raised(svcs, name), 30))
        # ...and a trickle of 16 challenged checks a window goes on: the
        # background's 8 are learned, so a raise holds past 5 x 8 only.
        trickle = Wave(svcs, (name,), "t", limit=8 * WAVE_LIMIT_S,
                       report=False, rate=8)
        self.addCleanup(trickle.stop)
        trickle.start()
        line = self.raised(svcs, name)[0]
        self.assertTrue(wait_until(
            lambda: log_events(svcs, "shield_lowered"), HOLD + 4 * W + 30),
            "held by the trickle")
        lowered = log_events(svcs, "shield_lowered")[0]
        # Lowered at the hold's end: nothing renewed it.
        self.assertLessEqual(
            int(lowered["until_ms"]) * 1000 - self.since_us(line),
            (HOLD + W) * S, (line, lowered))
        # The trickle went on past it, and never raised it again.
        self.wait_for_redis_time(lowered["ts_us"] + 2 * W * S)
        sent = [a for a in trickle.snapshot()
                if self.on_redis(a.t0) > lowered["ts_us"]]
        self.stop_all(trickle, burst, background)
        self.assertGreaterEqual(len(sent), 8, "the trickle stopped")
        self.assertEqual(len(self.raised(svcs, name)), 1)
        print("\ntrickle: raised, then lowered %.3f s later with %d "
              "challenged checks a window still coming"
              % ((lowered["ts_us"] - line["ts_us"]) / S, 8 * W), flush=True)

    def test_instances_that_disagree_on_the_window_each_shield_a_wave(self):
        name = "s.failures"
        # A young shield of baseline_s 60 over 2 s windows takes a whole
        # window's excess into its baseline (learn/24 = 1): the wave's
        # first window, taught before the raise, could lift the renewal
        # bar over the wave, and the shield lowered at its hold's end
        # while the wave ran (11 of 62 later attempts passed, once in a
        # fresh clone). baseline_s 240 moves the baseline by a fifth of a
        # window's excess and factor 3 leaves the wave at several times
        # the bar, as test_surge's wave does since issue 37's note.
        two = shield(name, baseline_s=240, factor=3)
        four = shield(name, baseline_s=240, factor=3)
        four["window_s"] = 2 * W
        # Two hosts' own databases outside a fleet (--fleet off): in one,
        # the second would take the first's set at start (issue 37), and
        # they would disagree only for the moment an edit takes to travel.
        (a,) = self.seeded([two], extra=["--fleet", "off"])
        (b,) = self.seeded([four], extra=["--fleet", "off"])
        svcs = [a, b]
        self.sync_clocks()
        wave = Wave(svcs, (name,), "d", limit=WAVE_RATE * WAVE_LIMIT_S)
        self.addCleanup(wave.stop)
        # Both shapes raised, each by its own instance.
        wave.start()
        self.assertTrue(wait_until(lambda: sorted(
            {e["svc"] for e in self.raised(svcs, name)}) == [0, 1],
            WAVE_LIMIT_S), self.raised(svcs, name))
        # What each instance answered within its own first hold: its
        # shield raised by its own counts, before any renewal had to keep
        # it (renewal under a wave is test_surge's; on a loaded machine
        # the wave falls behind its schedule and a young shield's renewal
        # bar is then a matter of timing, which let 7 of 62 through here
        # once in a fresh clone). REACH_S after the raise, as elsewhere.
        lines = self.raised(svcs, name)
        holds = {}
        for i in (0, 1):
            first = min((e for e in lines if e["svc"] == i),
                        key=self.since_us)
            holds[i] = (self.since_us(first) + REACH_S * S,
                        int(first["until_ms"]) * 1000)
        end = max(h[1] for h in holds.values())
        self.assertTrue(wait_until(lambda: any(
            self.on_redis(x.t0) > end for x in wave.snapshot()),
            WAVE_LIMIT_S))
        self.assertTrue(wave.stop())
        later = [x for x in wave.snapshot() if x.svc in holds and
                 holds[x.svc][0] < self.on_redis(x.t0) and
                 self.on_redis(x.t1) < holds[x.svc][1]]
        self.assertGreaterEqual(len(later), 20, holds)
        self.assert_expected(later)
        passed = sum(x.outcome == "passed" for x in later)
        self.assertLessEqual(passed, MAX_PASS_SHARE * len(later),
                             "%d of %d passed" % (passed, len(later)))
        # Each says that another configuration is in use, and shows it.
        for i, svc in enumerate(svcs):
            lines = [e for e in log_events([svc], "shield_disagreement")
                     if e["policy"] == name]
            self.assertTrue(lines, "instance %d said nothing" % i)
            other = "login.untrusted.failures.all.w%d" % (W if i else 2 * W)
            self.assertEqual(lines[0]["other"], other)
            self.assertEqual(self.metric(
                svc, "abuseguard_shield_other_configurations", name), 1)
        print("\ndisagreeing windows: both shapes raised; %d of %d later "
              "attempts passed" % (passed, len(later)), flush=True)

    def metric(self, svc, family, policy):
        for line in svc.request("GET", "/metrics").raw.decode().splitlines():
            if line.startswith('%s{policy="%s"} ' % (family, policy)):
                return float(line.split()[-1])
        return None


if __name__ == "__main__":
    unittest.main()
