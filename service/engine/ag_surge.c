/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_surge.h"

#include <math.h>
#include <string.h>

/* At most this many empty windows are taught on one roll-over: after a
 * baseline period of them the average has forgotten what came before. */
#define EMPTY_TEACH_MAX(p) ((p)->baseline_ms / (p)->window_ms)

static uint64_t max_u(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t min_u(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

void ag_surge_params_of(const struct ag_policy *p, struct ag_surge_params *out)
{
    out->window_ms = (uint64_t)p->window_s * 1000;
    out->baseline_ms = (uint64_t)p->baseline_s * 1000;
    out->block_ms = (uint64_t)p->block_s * 1000;
    out->limit = p->limit;
    out->factor_milli = p->factor_milli;
}

void ag_surge_init(struct ag_surge_state *st, const struct ag_surge_params *p,
                   uint64_t now_ms)
{
    memset(st, 0, sizeof *st);
    st->window = now_ms / p->window_ms;
}

uint64_t ag_surge_threshold(const struct ag_surge_state *st,
                            const struct ag_surge_params *p)
{
    return max_u(p->limit, st->baseline_milli * p->factor_milli / 1000000);
}

/* One full window of x into the average b (thousandths), the n-th taught:
 * x clipped to max(limit, 2b) (but the first, which is all there is to
 * go by), then b moves (x - b) / min(n, periods) toward it, the division
 * floored (toward minus infinity, as Lua's math.floor of the quotient). */
static uint64_t teach(uint64_t b, uint64_t x, uint64_t n,
                      const struct ag_surge_params *p)
{
    uint64_t periods = p->baseline_ms / p->window_ms;
    uint64_t div = n < periods ? n : periods;
    uint64_t xm = x * 1000;
    if (n > 1)
        xm = min_u(xm, max_u(p->limit * 1000, 2 * b));
    if (xm >= b)
        return b + (xm - b) / div;
    return b - (b - xm + div - 1) / div;
}

/* Does a full window of attempts a still carry the attack that raised
 * the shield? At least half the peak's excess over the attempt baseline,
 * and more than noise: three Poisson deviations of the baseline, and
 * one. */
static bool holds(const struct ag_surge_state *st, uint64_t a)
{
    double base = (double)st->attempt_baseline_milli / 1000.0;
    double excess = (double)a - base;
    double peak_excess = (double)st->peak_attempts - base;
    double noise = 3.0 * sqrt(base) + 1.0;
    return excess >= peak_excess / 2.0 && excess >= noise;
}

/* Moves st to window wi, the full window teaching the baselines. */
static void roll(struct ag_surge_state *st, const struct ag_surge_params *p,
                 uint64_t wi, uint64_t now_ms)
{
    uint64_t gap = wi - st->window;
    if (!st->tainted) {
        st->taught++;
        st->baseline_milli =
            teach(st->baseline_milli, st->count, st->taught, p);
        st->attempt_baseline_milli =
            teach(st->attempt_baseline_milli, st->attempts, st->taught, p);
    }
    /* Windows nobody counted in saw nothing: zeros, unless the shield was
     * raised across them. */
    uint64_t empty = min_u(gap - 1, EMPTY_TEACH_MAX(p));
    for (uint64_t i = 0; i < empty && !st->raised; i++) {
        st->taught++;
        st->baseline_milli = teach(st->baseline_milli, 0, st->taught, p);
        st->attempt_baseline_milli =
            teach(st->attempt_baseline_milli, 0, st->taught, p);
    }
    st->prev_count = gap == 1 ? st->count : 0;
    st->prev_attempts = gap == 1 ? st->attempts : 0;
    if (st->raised) {
        st->peak_attempts = max_u(st->peak_attempts, st->prev_attempts);
        if (holds(st, st->prev_attempts))
            st->until_ms = max_u(st->until_ms, now_ms + p->block_ms);
    }
    st->window = wi;
    st->count = 0;
    st->attempts = 0;
    st->tainted = st->raised;
}

unsigned ag_surge_step(struct ag_surge_state *st,
                       const struct ag_surge_params *p, uint64_t now_ms,
                       uint64_t count, uint64_t attempts)
{
    uint64_t wi = now_ms / p->window_ms;
    if (wi > st->window)
        roll(st, p, wi, now_ms);
    st->count += count;
    st->attempts += attempts;
    uint64_t threshold = ag_surge_threshold(st, p);
    unsigned changed = 0;
    if (st->raised && st->count > threshold)
        st->until_ms = max_u(st->until_ms, now_ms + p->block_ms);
    if (st->raised && now_ms >= st->until_ms) {
        st->raised = false;
        changed |= AG_SURGE_LOWERED;
    }
    if (!st->raised && st->count > threshold) {
        st->raised = true;
        st->tainted = true;
        st->since_ms = now_ms;
        st->until_ms = now_ms + p->block_ms;
        st->peak_attempts = max_u(st->attempts, st->prev_attempts);
        changed = (changed & ~AG_SURGE_LOWERED) | AG_SURGE_RAISED;
    }
    return changed;
}

unsigned ag_surge_raise(struct ag_surge_state *st,
                        const struct ag_surge_params *p, uint64_t now_ms,
                        uint64_t for_ms)
{
    uint64_t wi = now_ms / p->window_ms;
    if (wi > st->window)
        roll(st, p, wi, now_ms);
    unsigned changed = 0;
    if (!st->raised) {
        st->raised = true;
        st->since_ms = now_ms;
        /* No attack's attempts to hold on: the baseline is the peak, so
         * only attempts beyond noise move the end on. */
        st->peak_attempts = st->attempt_baseline_milli / 1000;
        changed = AG_SURGE_RAISED;
    }
    st->tainted = true;
    st->until_ms = now_ms + for_ms;
    return changed;
}

unsigned ag_surge_lower(struct ag_surge_state *st)
{
    if (!st->raised)
        return 0;
    st->raised = false;
    st->until_ms = 0;
    return AG_SURGE_LOWERED;
}
