# SPDX-License-Identifier: Apache-2.0
"""The circuit breaker: after ``failures`` calls in a row that got no
answer, calls return at once for ``open_s`` seconds of the client's clock,
then one call tries (half-open). An answer closes it; no answer opens it
for another period.

Thread-safety: one breaker serves every thread of a client; all its
state changes under one lock. While half-open exactly one call is let
through; the others are refused until that call's outcome is recorded.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional


class Breaker:
    """Counts calls without an answer and decides whether the next may
    go out. The clock is its only time source (seconds), so a test moves
    it instead of sleeping."""

    def __init__(self, failures: int, open_s: float,
                 clock: Callable[[], float]) -> None:
        self._failures = failures
        self._open_s = open_s
        self._clock = clock
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._opened_at: Optional[float] = None  # None while closed
        self._probing = False  # the one half-open call is out

    def allow(self) -> bool:
        """Whether a call may go out now. A True while open makes this
        call the half-open probe: its ``record`` must follow."""
        with self._lock:
            if self._opened_at is None:
                return True
            if self._probing or (self._clock() - self._opened_at
                                 < self._open_s):
                return False
            self._probing = True
            return True

    def record(self, answered: bool) -> None:
        """Records a call's outcome: any answer (a usage error or a
        degraded one too) closes the breaker and resets the count."""
        with self._lock:
            if answered:
                self._in_a_row = 0
                self._opened_at = None
                self._probing = False
                return
            self._in_a_row += 1
            if self._probing or self._in_a_row >= self._failures:
                self._opened_at = self._clock()
                self._probing = False
