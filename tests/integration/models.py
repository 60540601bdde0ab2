# SPDX-License-Identifier: Apache-2.0
"""Reference models of the limiter algorithms, written from their
definitions (docs/policies.md, "Algorithms") rather than from the Lua, in
the same double-precision arithmetic. Times are microseconds of Redis TIME. Each
model answers decide(t) -> (allowed, remaining) without changing state, and
record(t) to charge one request."""
import math


class SlidingLog:
    def __init__(self, limit, window_s):
        self.limit, self.w = limit, window_s * 1_000_000
        self.times = []

    def _live(self, t):
        return [x for x in self.times if x > t - self.w][-self.limit:]

    def decide(self, t):
        n = len(self._live(t))
        return (n < self.limit, max(self.limit - n, 0))

    def record(self, t):
        self.times = self._live(t) + [t]


class FixedWindow:
    def __init__(self, limit, window_s):
        self.limit, self.w = limit, window_s * 1_000_000
        self.counts = {}

    def decide(self, t):
        n = self.counts.get(math.floor(t / self.w), 0)
        return (n < self.limit, max(self.limit - n, 0))

    def record(self, t):
        i = math.floor(t / self.w)
        self.counts[i] = self.counts.get(i, 0) + 1


class SlidingWindow:
    """estimate = previous * (1 - elapsed/window) + current; allowed when
    estimate + 1 <= limit."""

    def __init__(self, limit, window_s):
        self.limit, self.w = limit, window_s * 1_000_000
        self.counts = {}

    def _estimate(self, t):
        i = math.floor(t / self.w)
        elapsed = t - i * self.w
        prev, cur = self.counts.get(i - 1, 0), self.counts.get(i, 0)
        return prev * (1 - elapsed / self.w) + cur

    def decide(self, t):
        est = self._estimate(t)
        ok = est + 1 <= self.limit
        return (ok, math.floor(self.limit - est) if ok else 0)

    def record(self, t):
        i = math.floor(t / self.w)
        self.counts[i] = self.counts.get(i, 0) + 1


class TokenBucket:
    """Capacity limit, refilled at limit/window per second; a request takes
    one token."""

    def __init__(self, limit, window_s):
        self.limit, self.w = limit, window_s * 1_000_000
        self.tokens, self.ts = float(limit), None

    def _tokens(self, t):
        if self.ts is None:
            return float(self.limit)
        rate = self.limit / self.w
        return min(self.limit, self.tokens + max(0, t - self.ts) * rate)

    def decide(self, t):
        tok = self._tokens(t)
        return (tok >= 1, math.floor(tok) if tok >= 1 else 0)

    def record(self, t):
        self.tokens, self.ts = self._tokens(t) - 1, t


class Distinct:
    """At most limit different subjects per key within the window; a subject
    already seen is always allowed."""

    def __init__(self, limit, window_s):
        self.limit, self.w = limit, window_s * 1_000_000
        self.seen = {}

    def _live(self, t):
        live = {s: x for s, x in self.seen.items() if x > t - self.w}
        keep = sorted(live.items(), key=lambda kv: kv[1])[-self.limit:]
        return dict(keep)

    def decide(self, t, subject):
        live = self._live(t)
        ok = subject in live or len(live) < self.limit
        return (ok, self.limit - len(live) if ok else 0)

    def record(self, t, subject):
        self.seen = self._live(t)
        self.seen[subject] = t


MODELS = {"sliding_log": SlidingLog, "fixed_window": FixedWindow,
          "sliding_window": SlidingWindow, "token_bucket": TokenBucket,
          "distinct": Distinct}
