/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A site-wide shield's state machine (the surge algorithm), without I/O:
 * the same steps lua/surge.lua takes on the state shared in Redis, here
 * for an instance's own state (its fallback while Redis is down) and the
 * in-process tests. tests/integration/test_redis_surge.c holds the two
 * to the same answers, call for call, field for field.
 *
 * A shield counts one signal per window of window_ms (attempts, or
 * failures of some reasons) and, beside it, every attempt of its lane.
 * It is raised when the count in the current window exceeds the
 * threshold, max(limit, factor x baseline), where the baseline is the
 * typical count per window: an average over about baseline_ms (each full
 * window adds (x - baseline) / min(windows taught, baseline_ms /
 * window_ms)), where x is clipped to max(limit, 2 x baseline) so that a
 * spike below the threshold moves it little (but for the first window
 * taught, which is all there is to go by). Windows in which the shield
 * was raised at any moment teach nothing. The lane's attempts have a
 * baseline of their own, learned the same way.
 *
 * Raised, it holds until until_ms: block_ms after the raise, moved on to
 * block_ms after now whenever the count still exceeds the threshold, or a
 * full window's attempts still carry at least half the excess of the
 * busiest full window since the raise over the attempt baseline (and more
 * than three Poisson deviations of it, plus one). The second rule is what
 * keeps a shield raised by failures from flapping: once it challenges
 * everyone, failures stop, but the attack's attempts do not. Once the
 * attack stops, its attempts fall back to the baseline, nothing moves the
 * hold on, and the shield is lowered within block_ms and about two
 * windows.
 *
 * Integers only (counts, milliseconds, baselines in thousandths), with
 * floor division, so that Lua's doubles and C agree to the unit; the one
 * square root is correctly rounded in both.
 *
 * Pure functions on caller-owned state; not thread-safe on one state.
 */
#ifndef AG_SURGE_H
#define AG_SURGE_H

#include <stdbool.h>
#include <stdint.h>

#include "ag_policy.h"

/* What a step changed, for the events: bits of its return value. */
#define AG_SURGE_RAISED 1u  /* the shield went up */
#define AG_SURGE_LOWERED 2u /* it came down */

/* A shield's parameters, from its policy. */
struct ag_surge_params {
    uint64_t window_ms;
    uint64_t baseline_ms;
    uint64_t block_ms;
    uint64_t limit;        /* the floor of the threshold */
    uint64_t factor_milli; /* AG_FACTOR_ONE = 1 */
};

struct ag_surge_state {
    uint64_t window;   /* the current window's index (now / window_ms) */
    uint64_t count;    /* the signal counted so far in the current window */
    uint64_t attempts; /* the lane's attempts so far in it */
    /* The last full window's: 0 if it was not the one just before. */
    uint64_t prev_count;
    uint64_t prev_attempts;
    uint64_t baseline_milli; /* the typical count per window, x 1000 */
    uint64_t attempt_baseline_milli;
    uint64_t taught; /* full windows the baselines learned from */
    bool raised;
    bool tainted; /* raised at some moment of the current window */
    uint64_t since_ms, until_ms; /* of the raise in force */
    uint64_t peak_attempts;      /* busiest window's attempts since it */
};

void ag_surge_params_of(const struct ag_policy *p, struct ag_surge_params *out);

/* A new shield's state: lowered, nothing learned, windows from now. */
void ag_surge_init(struct ag_surge_state *st, const struct ag_surge_params *p,
                   uint64_t now_ms);

/* Adds count and attempts, counted since the last step, to the window of
 * now_ms (rolling windows over first: a full window teaches the baselines
 * unless tainted, and empty ones between teach zeros), then raises,
 * holds or lowers. Returns AG_SURGE_RAISED and/or AG_SURGE_LOWERED, or
 * 0. A clock that went back stays in the current window. */
unsigned ag_surge_step(struct ag_surge_state *st,
                       const struct ag_surge_params *p, uint64_t now_ms,
                       uint64_t count, uint64_t attempts);

/* The operator's switch: raised until now_ms + for_ms (a raise in force
 * gets that end, shorter or longer); AG_SURGE_RAISED if it was lowered. */
unsigned ag_surge_raise(struct ag_surge_state *st,
                        const struct ag_surge_params *p, uint64_t now_ms,
                        uint64_t for_ms);
/* Lowered now; AG_SURGE_LOWERED if it was raised. The window stays
 * tainted: it teaches nothing. */
unsigned ag_surge_lower(struct ag_surge_state *st);

/* max(limit, factor x baseline): the count a window must exceed. */
uint64_t ag_surge_threshold(const struct ag_surge_state *st,
                            const struct ag_surge_params *p);

#endif
