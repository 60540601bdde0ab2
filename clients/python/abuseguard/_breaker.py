# SPDX-License-Identifier: Apache-2.0
"""The circuit breaker: after ``failures`` calls in a row that got no
answer, calls return at once for ``open_s`` seconds of the client's clock,
then one call tries (half-open). An answer closes it; no answer opens it
for another period.

Each call the breaker lets through carries a ``Pass`` saying whether it
is the half-open trial, and hands it back with its outcome: only the
trial's own outcome decides the half-open breaker. A call let through
while closed may end after the breaker opened (it was slower than the
failures that opened it); its failure then changes nothing: the open
period already runs from when it opened, and the trial decides. Its
answer still closes the breaker, as any answer does: the service
answers again.

Thread-safety: one breaker serves every thread of a client; all its
state changes under one lock. While half-open exactly one call is let
through; the others are refused until that call's outcome is recorded.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Optional

_CLOSED, _OPEN, _TRYING = "closed", "open", "trying"


@dataclass(frozen=True)
class Pass:
    """What ``admit`` lets through: ``trial`` when the call is the
    half-open trial whose outcome decides the breaker."""

    trial: bool


_CALL = Pass(trial=False)
_TRIAL = Pass(trial=True)


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
        self._in_a_row = 0  # calls in a row without an answer, while closed
        self._state = _CLOSED
        self._opened_at = 0.0  # when it last opened (open or trying)

    def admit(self) -> Optional[Pass]:
        """A ``Pass`` when a call may go out now, its ``record`` to
        follow whatever happens; None while open (or while the trial is
        out)."""
        with self._lock:
            if self._state == _CLOSED:
                return _CALL
            if self._state == _OPEN and (self._clock() - self._opened_at
                                         >= self._open_s):
                self._state = _TRYING
                return _TRIAL
            return None

    def record(self, permit: Pass, answered: bool) -> None:
        """Records the outcome of a call ``admit`` let through: any
        answer (a usage error or a degraded one too) closes the breaker
        and resets the count."""
        with self._lock:
            if answered:
                self._state, self._in_a_row = _CLOSED, 0
            elif permit.trial and self._state == _TRYING:
                self._state, self._opened_at = _OPEN, self._clock()
            elif self._state == _CLOSED:
                self._in_a_row += 1
                if self._in_a_row >= self._failures:
                    self._state, self._opened_at = _OPEN, self._clock()
            # Otherwise a call begun before the breaker opened failed
            # while it is open or trying: the period already runs, and
            # the trial decides.
