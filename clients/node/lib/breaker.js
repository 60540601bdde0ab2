// SPDX-License-Identifier: Apache-2.0
/**
 * The circuit breaker of clients/README.md: after `failures` calls in a
 * row that got no answer it opens for `openMs` on the injected clock,
 * then lets one call through (half-open). An answer closes it, no answer
 * opens it for another period.
 *
 * Its only time source is the clock it is given, so tests move time
 * instead of sleeping. Calls run concurrently in one event loop, so no
 * locking is needed: each method runs to completion.
 */
export class Breaker {
  #failures;
  #openMs;
  #clock;
  #inARow = 0;
  /** When it opened on the clock, or null while closed. */
  #openedAt = null;
  /** Counts the openings, so that a trial ticket knows whether the
   * opening it was let through to test is still the current one. */
  #opening = 0;
  /** True while the half-open trial call is in flight. */
  #trialOut = false;

  /**
   * @param {number} failures calls in a row without an answer that open it
   * @param {number} openMs how long it stays open, in clock milliseconds
   * @param {() => number} clock milliseconds, monotonic
   */
  constructor(failures, openMs, clock) {
    this.#failures = failures;
    this.#openMs = openMs;
    this.#clock = clock;
  }

  /**
   * Asks to make a call. Returns null when the breaker is open (the call
   * must not touch the network), else a ticket to settle with exactly one
   * of `answered`, `failed` or `abandoned` when the call ends.
   * @returns {{trial: boolean, opening: number}|null}
   */
  admit() {
    if (this.#openedAt === null) {
      return { trial: false, opening: this.#opening };
    }
    if (this.#trialOut || this.#clock() - this.#openedAt < this.#openMs) {
      return null;
    }
    this.#trialOut = true;
    return { trial: true, opening: this.#opening };
  }

  /** The call got an answer (any status the service gave, a usage error
   * too). Even a call begun before the breaker opened proves the service
   * answers again: it closes the breaker, and a trial still out is then
   * no longer a trial (its own end finds the breaker closed). */
  answered() {
    this.#inARow = 0;
    this.#openedAt = null;
    this.#trialOut = false;
  }

  /** The call got no answer (a timeout, an unavailable service). */
  failed(ticket) {
    if (this.#isCurrentTrial(ticket)) {
      this.#trialOut = false;
      this.#openedAt = this.#clock();
      return;
    }
    // A call that was already in flight when the breaker opened does not
    // push the reopening back: only the trial's failure starts a new
    // period. A trial that outlived its opening (another call's answer
    // closed the breaker meanwhile) is one failure like any other.
    this.#inARow += 1;
    if (this.#openedAt === null && this.#inARow >= this.#failures) {
      this.#openedAt = this.#clock();
      this.#opening += 1;
    }
  }

  /**
   * The caller gave up (its AbortSignal fired): the call says nothing
   * about the service, so it neither counts nor resets; a trial slot is
   * handed back so that the next call can try.
   */
  abandoned(ticket) {
    if (this.#isCurrentTrial(ticket)) {
      this.#trialOut = false;
    }
  }

  /** Whether the ticket is the trial of the opening still in force. */
  #isCurrentTrial(ticket) {
    return ticket.trial && this.#openedAt !== null && ticket.opening === this.#opening;
  }
}
