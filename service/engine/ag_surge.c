/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_surge.h"

#include <math.h>
#include <string.h>

static uint64_t max_u(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t min_u(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* a - b, or 0. */
static uint64_t minus(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

void ag_surge_params_of(const struct ag_policy *p, struct ag_surge_params *out)
{
    out->window_ms = (uint64_t)p->window_s * 1000;
    out->baseline_ms = (uint64_t)p->baseline_s * 1000;
    out->block_ms = (uint64_t)p->block_s * 1000;
    out->limit = p->limit;
    out->factor_milli = p->factor_milli;
    out->failures = p->counts == AG_COUNTS_FAILURES;
}

/* Windows in the baseline period; in the young phase; in an hour of it. */
static uint64_t periods(const struct ag_surge_params *p)
{
    return p->baseline_ms / p->window_ms;
}

static uint64_t learn(const struct ag_surge_params *p)
{
    return max_u(1,
                 min_u(p->baseline_ms, AG_SURGE_LEARN_MAX_MS) / p->window_ms);
}

static uint64_t young_div(const struct ag_surge_params *p)
{
    return max_u(1, learn(p) / AG_SURGE_LEARN_STEPS);
}

void ag_surge_init(struct ag_surge_state *st, const struct ag_surge_params *p,
                   uint64_t now_ms)
{
    memset(st, 0, sizeof *st);
    st->window = now_ms / p->window_ms;
    st->last_ms = now_ms;
}

uint64_t ag_surge_threshold(const struct ag_surge_state *st,
                            const struct ag_surge_params *p)
{
    /* baseline x factor / 10^6, split as lua/surge.lua splits it, so that
     * no product overflows. */
    uint64_t q = st->baseline_milli / 1000000, r = st->baseline_milli % 1000000;
    return max_u(p->limit, q * p->factor_milli + r * p->factor_milli / 1000000);
}

bool ag_surge_young(const struct ag_surge_state *st,
                    const struct ag_surge_params *p)
{
    return st->taught < learn(p);
}

/* The n-th window taught, of count x, into the average b (thousandths).
 * x is clipped to b + room, and to at least limit (but the first window,
 * clipped to first_milli), then b moves (x - b) / div toward it, the
 * division floored (toward minus infinity, as Lua's math.floor of the
 * quotient). Young, div is min(n, yd) and room b x div / yd, so b grows
 * by at most b / yd; mature, div is min(n, periods) and room b. */
static uint64_t teach(uint64_t b, uint64_t x, uint64_t n, uint64_t first_milli,
                      const struct ag_surge_params *p)
{
    uint64_t yd = young_div(p);
    bool young = n <= learn(p);
    uint64_t div = min_u(n, young ? yd : periods(p));
    uint64_t cap = first_milli;
    if (n > 1) {
        /* b x div / yd without the product: div <= yd <= 3600. */
        uint64_t room = young ? b / yd * div + b % yd * div / yd : b;
        cap = max_u(p->limit * 1000, b + room);
    }
    uint64_t xm = min_u(x * 1000, cap);
    if (xm >= b)
        return b + (xm - b) / div;
    return b - (b - xm + div - 1) / div;
}

/* Does a whole window of attempts a renew a raise by the counts? Its
 * excess over the attempt baseline passes (factor - 1) times that
 * baseline, and noise: three Poisson deviations of it, and one. */
static bool renews(const struct ag_surge_state *st,
                   const struct ag_surge_params *p, uint64_t a)
{
    double base = (double)st->attempt_baseline_milli / 1000.0;
    double excess = (double)a - base;
    double bar = (double)(p->factor_milli - 1000) / 1000.0 * base;
    double noise = 3.0 * sqrt(base) + 1.0;
    return excess > bar && excess > noise;
}

/* Moves st to the later window wi: the window left teaches what it may,
 * and a raise by the counts is judged on its attempts. */
static void roll(struct ag_surge_state *st, const struct ag_surge_params *p,
                 uint64_t wi, uint64_t now_ms)
{
    uint64_t gap = wi - st->window;
    if (st->raised && !st->by_operator && gap == 1 && st->attempts_taught &&
        renews(st, p, minus(st->attempts, st->passes)))
        st->until_ms = max_u(st->until_ms, now_ms + p->block_ms);
    bool young = ag_surge_young(st, p);
    bool signal = st->tainted == AG_SURGE_CLEAN ||
                  (st->tainted == AG_SURGE_BY_COUNTS && (p->failures || young));
    if (st->whole && signal) {
        st->taught++;
        st->baseline_milli = teach(st->baseline_milli, st->count, st->taught,
                                   p->limit * 1000, p);
    }
    if (st->whole && st->tainted == AG_SURGE_CLEAN) {
        st->attempts_taught++;
        st->attempt_baseline_milli =
            teach(st->attempt_baseline_milli, st->attempts, st->attempts_taught,
                  UINT64_MAX, p);
    }
    st->prev_count = gap == 1 ? st->count : 0;
    st->prev_attempts = gap == 1 ? st->attempts : 0;
    /* Nobody counted for longer than the young phase: what was learned is
     * a starting point, as one window's worth, learned again as fast as a
     * young shield learns (not a new one's first window, which would take
     * the floor for it). */
    if (gap - 1 > learn(p)) {
        st->taught = min_u(st->taught, 1);
        st->attempts_taught = min_u(st->attempts_taught, 1);
    }
    st->window = wi;
    st->count = 0;
    st->attempts = 0;
    st->passes = 0;
    st->whole = gap == 1;
    st->tainted = !st->raised       ? AG_SURGE_CLEAN
                  : st->by_operator ? AG_SURGE_BY_HAND
                                    : AG_SURGE_BY_COUNTS;
}

/* Brings st to now_ms before any call: a clock that went back moves
 * every time held back by as much (a raise holds as long as it would
 * have) and a window behind the current one starts over; a later window
 * rolls over. */
static void advance(struct ag_surge_state *st, const struct ag_surge_params *p,
                    uint64_t now_ms)
{
    if (now_ms < st->last_ms) {
        uint64_t back = st->last_ms - now_ms;
        st->since_ms = minus(st->since_ms, back);
        st->until_ms = minus(st->until_ms, back);
        st->quiet_until_ms = minus(st->quiet_until_ms, back);
        st->switch_ms = minus(st->switch_ms, back);
    }
    st->last_ms = now_ms;
    uint64_t wi = now_ms / p->window_ms;
    if (wi > st->window) {
        roll(st, p, wi, now_ms);
    } else if (wi < st->window) {
        st->window = wi;
        st->count = st->attempts = st->passes = 0;
        st->prev_count = st->prev_attempts = 0;
        st->whole = false;
    }
}

/* Raised now, by the counts (by_operator false) or the operator. */
static void raise_now(struct ag_surge_state *st, uint64_t now_ms,
                      bool by_operator)
{
    st->raised = true;
    st->since_ms = now_ms;
    st->by_operator = by_operator;
    st->long_said = false;
    uint8_t taint = by_operator ? AG_SURGE_BY_HAND : AG_SURGE_BY_COUNTS;
    if (st->tainted < taint)
        st->tainted = taint;
}

/* May resume be taken at now_ms? */
static bool resumes(const struct ag_surge_state *st,
                    const struct ag_surge_resume *resume, uint64_t now_ms)
{
    return resume && resume->for_ms && st->switch_version == resume->known &&
           st->switch_ms < resume->raised_at_ms && now_ms >= st->quiet_until_ms;
}

unsigned ag_surge_step(struct ag_surge_state *st,
                       const struct ag_surge_params *p, uint64_t now_ms,
                       const struct ag_surge_counts *c,
                       const struct ag_surge_resume *resume)
{
    advance(st, p, now_ms);
    st->count += c->count;
    st->attempts += c->attempts;
    st->passes += c->passes;
    uint64_t threshold = ag_surge_threshold(st, p);
    unsigned changed = 0;
    if (st->raised && st->count > threshold)
        st->until_ms = max_u(st->until_ms, now_ms + p->block_ms);
    if (resumes(st, resume, now_ms)) {
        if (!st->raised) {
            raise_now(st, now_ms, false);
            st->until_ms = now_ms;
            changed = AG_SURGE_RAISED | AG_SURGE_RESUMED;
        }
        st->until_ms = max_u(st->until_ms, now_ms + resume->for_ms);
    }
    if (st->raised && now_ms >= st->until_ms) {
        st->raised = false;
        st->by_operator = false;
        changed |= AG_SURGE_LOWERED;
    }
    if (!st->raised && st->count > threshold && now_ms >= st->quiet_until_ms) {
        raise_now(st, now_ms, false);
        st->until_ms = now_ms + p->block_ms;
        changed = (changed & ~AG_SURGE_LOWERED) | AG_SURGE_RAISED;
    }
    if (st->raised && !st->by_operator && !st->long_said &&
        now_ms - st->since_ms >= AG_SURGE_LONG_HOLDS * p->block_ms) {
        st->long_said = true;
        changed |= AG_SURGE_LONG;
    }
    return changed;
}

/* Counts a switch of the operator's at now_ms. */
static void switched(struct ag_surge_state *st, uint64_t now_ms)
{
    st->switch_version++;
    st->switch_ms = now_ms;
}

unsigned ag_surge_raise(struct ag_surge_state *st,
                        const struct ag_surge_params *p, uint64_t now_ms,
                        uint64_t for_ms)
{
    advance(st, p, now_ms);
    switched(st, now_ms);
    st->quiet_until_ms = 0;
    unsigned changed = 0;
    if (!st->raised)
        changed = AG_SURGE_RAISED;
    raise_now(st, st->raised ? st->since_ms : now_ms, true);
    st->until_ms = now_ms + for_ms;
    return changed;
}

unsigned ag_surge_lower(struct ag_surge_state *st,
                        const struct ag_surge_params *p, uint64_t now_ms,
                        uint64_t for_ms)
{
    advance(st, p, now_ms);
    switched(st, now_ms);
    st->quiet_until_ms = now_ms + for_ms;
    if (!st->raised)
        return 0;
    st->raised = false;
    st->by_operator = false;
    st->until_ms = 0;
    return AG_SURGE_LOWERED;
}

void ag_surge_follow(struct ag_surge_state *st, const struct ag_surge_params *p,
                     uint64_t now_ms, const struct ag_surge_state *shared,
                     uint64_t shared_now)
{
    advance(st, p, now_ms);
    st->switch_version = shared->switch_version;
    st->quiet_until_ms = now_ms + minus(shared->quiet_until_ms, shared_now);
    if (!shared->raised) {
        st->raised = false;
        st->by_operator = false;
        st->until_ms = 0;
        return;
    }
    /* Raised for at least what is left of the shared hold: this
     * instance's own attempts move it on from there. */
    uint64_t until = now_ms + max_u(1, minus(shared->until_ms, shared_now));
    if (!st->raised)
        raise_now(st, now_ms, shared->by_operator);
    st->by_operator = shared->by_operator;
    st->long_said = shared->long_said;
    if (st->until_ms < until || shared->by_operator)
        st->until_ms = until;
}
