/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A site-wide shield's state machine (the surge algorithm), without I/O:
 * the same steps lua/surge.lua takes on the state shared in Redis, here
 * for an instance's own state (its fallback while Redis is down) and the
 * in-process tests. tests/integration/test_redis_surge.c holds the two
 * to the same answers, call for call, field for field.
 *
 * A shield counts one signal per window of window_ms (attempts, or
 * failures of some reasons) and, beside it, every attempt of its lane
 * (a check that brings a passed challenge is no new attempt). It is
 * raised when the count in the current window exceeds the threshold,
 * max(limit, factor x baseline), where the baseline is the typical count
 * per window, learned from whole windows (observed from their start).
 *
 * Learning. Each whole window moves the baseline b toward its count x by
 * (x - b) / div, with x first clipped to b + room (and to at least
 * limit). A shield is young for its first `learn` windows taught
 * (min(baseline_ms, AG_SURGE_LEARN_MAX_MS) / window_ms): then div is
 * min(n, learn / 24) (n the windows taught, learn / 24 an hour's windows
 * when learn is a day) and room is b x div / (learn / 24), so that b
 * grows by at most b / (learn / 24) a window: e-fold an hour, never
 * faster, whatever an attacker sends, and any steady rate up to about
 * limit x e^23 is learned within learn windows. Its first window counts
 * at most limit. Mature, div is min(n, baseline_ms / window_ms) and room
 * is b: the clipped running average of issue 27, e-fold a baseline
 * period at most. The lane's attempts have a baseline of their own,
 * learned the same way from windows of their own count, but for the
 * first, taken whole.
 *
 * Which windows teach: a window in which the shield was never raised
 * teaches both baselines. A window raised by the counts teaches the
 * signal's baseline when the shield counts failures (what failed then
 * had passed the challenge: the site's own failures, not the attack's)
 * or while it is young (it cannot tell a busy site from a wave yet), and
 * never the attempts'. A window the operator raised teaches nothing, nor
 * does a window that was not observed from its start (the first, one
 * after a gap). A gap of more than `learn` windows makes the shield young
 * again. With nothing learned the threshold is the floor: a new shield
 * raised by a busy site's own rate is held one hold, while the windows
 * it was raised in teach it that rate.
 *
 * A raise by the counts holds until until_ms: block_ms after the raise,
 * moved on to block_ms after now whenever the count exceeds the
 * threshold, or when a whole window's attempts, less those a passed
 * challenge followed (the site's own users, who pass), exceed the attempt
 * baseline by more than (factor - 1) x that baseline and by more than
 * noise (three Poisson deviations, and one): the bar a raise clears,
 * put on attempts, since a shield that challenges everyone sees the
 * failures stop but not the attack's checks; a shield that has learned
 * no attempts yet (every window since it began was raised) is renewed by
 * its count alone. Nothing renewing it, it is lowered block_ms after its
 * last renewal. A raise by counts that has
 * lasted AG_SURGE_LONG_HOLDS holds is said once (AG_SURGE_LONG).
 *
 * The operator's switch is explicit and versioned: a raise lasts the
 * time asked (moved on only by the count over the threshold), a lower
 * keeps the counts from raising the shield for the time asked; each
 * bumps switch_version and sets switch_ms. A raise that an instance made
 * from its own counts while it could not reach the shared state goes
 * back to it with its next step (struct ag_surge_resume) only if no
 * switch was made meanwhile.
 *
 * A clock that goes back moves every time held back by as much, and a
 * window that is then behind the current one starts over (its counts
 * dropped, nothing taught).
 *
 * Integers only (counts, milliseconds, baselines in thousandths), with
 * floor division, so that Lua's doubles and C agree to the unit; the
 * attempts' bar is computed in doubles, operation for operation alike.
 *
 * Pure functions on caller-owned state; not thread-safe on one state.
 */
#ifndef AG_SURGE_H
#define AG_SURGE_H

#include <stdbool.h>
#include <stdint.h>

#include "ag_policy.h"

/* What a call changed, for the events: bits of its return value. */
#define AG_SURGE_RAISED 1u  /* the shield went up */
#define AG_SURGE_LOWERED 2u /* it came down */
#define AG_SURGE_LONG 4u    /* a raise by the counts passed LONG_HOLDS */
#define AG_SURGE_RESUMED 8u /* with RAISED: a step's resume raised it */

/* The young phase lasts at most a day of windows; in it the baseline
 * grows at most e-fold in AG_SURGE_LEARN_STEPS-th of it. */
#define AG_SURGE_LEARN_MAX_MS 86400000ull
#define AG_SURGE_LEARN_STEPS 24u
/* A raise by the counts that has lasted this many holds is a long one. */
#define AG_SURGE_LONG_HOLDS 6u

/* A shield's parameters, from its policy. */
struct ag_surge_params {
    uint64_t window_ms;
    uint64_t baseline_ms;
    uint64_t block_ms;
    uint64_t limit;        /* the floor of the threshold */
    uint64_t factor_milli; /* AG_FACTOR_ONE = 1 */
    bool failures;         /* it counts failures (else attempts) */
};

/* Who raised the shield at some moment of the current window. */
enum ag_surge_taint {
    AG_SURGE_CLEAN,     /* nobody: it was lowered throughout */
    AG_SURGE_BY_COUNTS, /* its counts */
    AG_SURGE_BY_HAND,   /* the operator (outranks the counts) */
};

struct ag_surge_state {
    uint64_t window;   /* the current window's index (now / window_ms) */
    uint64_t count;    /* the signal counted so far in the current window */
    uint64_t attempts; /* the lane's attempts so far in it */
    /* Its checks that brought a passed challenge so far in it: each the
     * second try of an attempt a challenge stopped, which a real user
     * makes and an attack does not. */
    uint64_t passes;
    /* The last whole window's: 0 if it was not the one just before. */
    uint64_t prev_count;
    uint64_t prev_attempts;
    uint64_t baseline_milli; /* the typical count per window, x 1000 */
    uint64_t attempt_baseline_milli;
    uint64_t taught;          /* windows the signal's baseline learned from */
    uint64_t attempts_taught; /* and the attempts' (unraised ones only) */
    bool raised;
    bool whole;       /* the current window was observed from its start */
    uint8_t tainted;  /* enum ag_surge_taint of the current window */
    bool by_operator; /* the raise in force is the operator's */
    bool long_said;   /* AG_SURGE_LONG was returned for it */
    uint64_t since_ms, until_ms; /* of the raise in force */
    /* The operator's switches: how many so far, the last one's time. */
    uint64_t switch_version, switch_ms;
    uint64_t quiet_until_ms; /* the counts may not raise it before */
    uint64_t last_ms;        /* the latest time it was called at */
};

void ag_surge_params_of(const struct ag_policy *p, struct ag_surge_params *out);

/* A new shield's state: lowered, nothing learned, windows from now. */
void ag_surge_init(struct ag_surge_state *st, const struct ag_surge_params *p,
                   uint64_t now_ms);

/* A raise an instance made from its own counts, at raised_at_ms, while
 * it could not reach this state, knowing switch_version known, to hold
 * for_ms more: taken only if no switch was made since (switch_version
 * == known and switch_ms < raised_at_ms) and no lower keeps the counts
 * out. */
struct ag_surge_resume {
    uint64_t for_ms; /* 0: none */
    uint64_t known;
    uint64_t raised_at_ms;
};

/* What one step adds: counted since the last. */
struct ag_surge_counts {
    uint64_t count;    /* the signal */
    uint64_t attempts; /* the lane's attempts (passed tries not among them) */
    uint64_t passes;   /* the lane's checks that brought a passed challenge */
};

/* Adds c to the window of now_ms (rolling windows over first: a whole
 * window teaches what it may), takes resume (NULL: none) as a renewal, or
 * as a raise by the counts if it was lowered (AG_SURGE_RAISED |
 * AG_SURGE_RESUMED), then raises, holds or lowers. Returns AG_SURGE_*
 * bits, or 0. */
unsigned ag_surge_step(struct ag_surge_state *st,
                       const struct ag_surge_params *p, uint64_t now_ms,
                       const struct ag_surge_counts *c,
                       const struct ag_surge_resume *resume);

/* The operator's switch. Raise: raised until now_ms + for_ms (a raise in
 * force gets that end, shorter or longer), as the operator's;
 * AG_SURGE_RAISED if it was lowered. Lower: lowered now, and the counts
 * may not raise it for for_ms; AG_SURGE_LOWERED if it was raised. Each
 * is a switch: switch_version goes up by one and switch_ms is now_ms. */
unsigned ag_surge_raise(struct ag_surge_state *st,
                        const struct ag_surge_params *p, uint64_t now_ms,
                        uint64_t for_ms);
unsigned ag_surge_lower(struct ag_surge_state *st,
                        const struct ag_surge_params *p, uint64_t now_ms,
                        uint64_t for_ms);

/* Makes st, an instance's own state, follow shared (another state, seen
 * at shared_now): raised or lowered as it is, for at least what is left
 * of its hold and its quiet, by the same hand, with its switch version.
 * st keeps what it learned. Changes nothing to announce. */
void ag_surge_follow(struct ag_surge_state *st, const struct ag_surge_params *p,
                     uint64_t now_ms, const struct ag_surge_state *shared,
                     uint64_t shared_now);

/* max(limit, factor x baseline): the count a window must exceed. */
uint64_t ag_surge_threshold(const struct ag_surge_state *st,
                            const struct ag_surge_params *p);
/* Is it still learning fast (young)? */
bool ag_surge_young(const struct ag_surge_state *st,
                    const struct ag_surge_params *p);

#endif
