/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-process store's algorithms: each one peek and one charge, in the
 * order and with the arithmetic of lua/ (common.lua's set bookkeeping,
 * then sliding_log.lua, fixed_window.lua, sliding_window.lua,
 * token_bucket.lua, distinct.lua, consecutive.lua, conversion.lua), and
 * the table of them that the check drives (ag_store_mem.c). Every sum is
 * the Lua's, in the same order, in doubles.
 */
#include "ag_store_mem_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x as Lua's tostring writes it (14 significant digits) and tonumber reads
 * it back: what Redis keeps of a fraction. */
static double lua_text(double x)
{
    char text[32];
    snprintf(text, sizeof text, "%.14g", x);
    return strtod(text, NULL);
}

static void answer(struct ag_mem_eval *e, bool allowed, double remaining,
                   double retry_us)
{
    e->res->allowed = allowed;
    e->res->remaining = (uint32_t)remaining;
    e->res->retry_after_ms = allowed ? 0 : ag_mem__ms(retry_us);
}

/* The set algorithms' bookkeeping (common.lua). */

/* set_count: the number of live members. Expired ones are removed, and
 * over a lowered limit the oldest. */
static double set_count(struct ag_mem_eval *e, double now)
{
    struct ag_mem_slot *sl = e->sl;
    if (!sl || !sl->n)
        return 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < sl->n; i++)
        if ((double)sl->set[i].at > now - e->window)
            sl->set[k++] = sl->set[i];
    sl->n = k;
    while (sl->n > e->limit) {
        uint32_t oldest = 0;
        for (uint32_t i = 1; i < sl->n; i++)
            if (sl->set[i].at < sl->set[oldest].at)
                oldest = i;
        memmove(sl->set + oldest, sl->set + oldest + 1,
                (sl->n - oldest - 1) * sizeof *sl->set);
        sl->n--;
    }
    return sl->n;
}

static double set_bound(const struct ag_mem_slot *sl, bool newest)
{
    uint64_t at = sl->set[0].at;
    for (uint32_t i = 1; i < sl->n; i++)
        if (newest ? sl->set[i].at > at : sl->set[i].at < at)
            at = sl->set[i].at;
    return (double)at;
}

/* set_answer: allowed, or denied until the oldest member leaves. */
static void set_answer(struct ag_mem_eval *e, double now, bool allowed)
{
    e->reset_known = e->count == 0;
    e->res->reset_after_ms = 0;
    if (allowed) {
        answer(e, true, e->limit - e->count, 0);
        return;
    }
    answer(e, false, 0, set_bound(e->sl, false) + e->window - now);
}

/* set_reset: until the newest member leaves. */
static uint64_t set_reset(const struct ag_mem_eval *e, double now)
{
    return ag_mem__ms(set_bound(e->sl, true) + e->window - now);
}

/* set_add: adds member at now (or refreshes a known one); the set lives
 * one window past it. False if the memory bound leaves no room. */
static bool set_add(struct ag_mem_store *s, struct ag_mem_eval *e, double now)
{
    struct ag_mem_slot *sl = ag_mem__claim(s, e->op->key, (uint64_t)now);
    e->sl = sl;
    sl->kind = AG_MEM_KIND_SET;
    uint32_t i = 0;
    while (e->known && i < sl->n && sl->set[i].id != e->member)
        i++;
    if (!e->known || i == sl->n) {
        if (sl->n == sl->cap) {
            uint32_t cap = sl->cap ? 2 * sl->cap : 4;
            if (cap > e->limit)
                cap = (uint32_t)e->limit;
            /* The bound counts what is allocated, not what is used. */
            struct ag_mem_member *grown =
                cap > sl->n && s->members + (cap - sl->cap) <= s->max_members
                    ? realloc(sl->set, cap * sizeof *grown)
                    : NULL;
            if (!grown) {
                if (!sl->n)
                    ag_mem__release(s, sl);
                return false;
            }
            s->members += cap - sl->cap;
            sl->set = grown;
            sl->cap = cap;
        }
        i = sl->n++;
        sl->set[i].id = e->member;
    }
    sl->set[i].at = (uint64_t)now;
    sl->expire = ag_mem__expiry_at(now + e->window);
    return true;
}

/* The claimed slot for a counter algorithm's fields (bit). */
static struct ag_mem_slot *hash_slot(struct ag_mem_store *s,
                                     struct ag_mem_eval *e, unsigned bit,
                                     double now)
{
    struct ag_mem_slot *sl = ag_mem__claim(s, e->op->key, (uint64_t)now);
    sl->kind = AG_MEM_KIND_HASH;
    sl->fields |= bit;
    return sl;
}

static bool has_fields(const struct ag_mem_eval *e, enum ag_algorithm a)
{
    return e->sl && (e->sl->fields & (1u << a));
}

/* sliding_log (lua/sliding_log.lua). */

static void sliding_log_peek(struct ag_mem_eval *e, double now)
{
    e->count = set_count(e, now);
    set_answer(e, now, e->count < e->limit);
}

static void sliding_log_charge(struct ag_mem_store *s, struct ag_mem_eval *e,
                               double now)
{
    if (!set_add(s, e, now))
        return; /* over the memory bound: not recorded */
    e->res->remaining = (uint32_t)(e->limit - e->count - 1);
    e->res->reset_after_ms = ag_mem__ms(e->window);
}

/* fixed_window (lua/fixed_window.lua). */

static void fixed_window_peek(struct ag_mem_eval *e, double now)
{
    e->idx = floor(now / e->window);
    e->count = 0;
    if (has_fields(e, AG_ALG_FIXED_WINDOW) && e->sl->fixed.i == e->idx)
        e->count = e->sl->fixed.n;
    double left_us = (e->idx + 1) * e->window - now;
    e->res->reset_after_ms = e->count > 0 ? ag_mem__ms(left_us) : 0;
    e->reset_known = true;
    if (e->count < e->limit)
        answer(e, true, e->limit - e->count, 0);
    else
        answer(e, false, 0, left_us);
}

static void fixed_window_charge(struct ag_mem_store *s, struct ag_mem_eval *e,
                                double now)
{
    struct ag_mem_slot *sl = hash_slot(s, e, 1u << AG_ALG_FIXED_WINDOW, now);
    double window_end = (e->idx + 1) * e->window;
    sl->fixed.i = e->idx;
    sl->fixed.n = e->count + 1;
    sl->expire = ag_mem__expiry_at(window_end);
    e->res->remaining = (uint32_t)fmax(e->limit - sl->fixed.n, 0);
    e->res->reset_after_ms = ag_mem__ms(window_end - now);
}

/* sliding_window (lua/sliding_window.lua). */

static void sliding_window_peek(struct ag_mem_eval *e, double now)
{
    double w = e->window;
    e->idx = floor(now / w);
    bool has = has_fields(e, AG_ALG_SLIDING_WINDOW);
    e->cc = has ? e->sl->sliding.c : 0;
    e->pc = has ? e->sl->sliding.p : 0;
    if (has && e->sl->sliding.w == e->idx - 1) {
        e->pc = e->cc;
        e->cc = 0;
    } else if (!has || e->sl->sliding.w != e->idx) {
        e->pc = 0;
        e->cc = 0;
    }
    double elapsed = now - e->idx * w;
    e->est = e->pc * (1 - elapsed / w) + e->cc;
    if (e->cc > 0)
        e->res->reset_after_ms = ag_mem__ms((e->idx + 2) * w - now);
    else if (e->pc > 0)
        e->res->reset_after_ms = ag_mem__ms((e->idx + 1) * w - now);
    else
        e->res->reset_after_ms = 0;
    e->reset_known = true;
    if (e->est + 1 <= e->limit) {
        answer(e, true, floor(e->limit - e->est), 0);
    } else if (e->cc + 1 <= e->limit) {
        /* This window: wait until the previous window's weight falls. */
        double need = w * (1 - (e->limit - 1 - e->cc) / e->pc);
        answer(e, false, 0, fmax(need - elapsed, 1));
    } else {
        /* Only the next window can admit it, once this one's weight
         * falls. */
        double need = w * (1 - (e->limit - 1) / e->cc);
        answer(e, false, 0, w - elapsed + need);
    }
}

static void sliding_window_charge(struct ag_mem_store *s, struct ag_mem_eval *e,
                                  double now)
{
    struct ag_mem_slot *sl = hash_slot(s, e, 1u << AG_ALG_SLIDING_WINDOW, now);
    double w = e->window;
    sl->sliding.w = e->idx;
    sl->sliding.c = e->cc + 1;
    sl->sliding.p = e->pc;
    sl->expire = ag_mem__expiry_at((e->idx + 2) * w);
    e->res->remaining = (uint32_t)fmax(floor(e->limit - (e->est + 1)), 0);
    e->res->reset_after_ms = ag_mem__ms((e->idx + 2) * w - now);
}

/* token_bucket (lua/token_bucket.lua). */

static void token_bucket_peek(struct ag_mem_eval *e, double now)
{
    double rate = e->limit / e->window; /* tokens per microsecond */
    const struct ag_mem_slot *sl = e->sl;
    if (!has_fields(e, AG_ALG_TOKEN_BUCKET) ||
        now >= sl->bucket.ts + (e->limit - sl->bucket.t) / rate)
        e->tokens = e->limit;
    else
        e->tokens =
            fmin(e->limit, sl->bucket.t + fmax(0, now - sl->bucket.ts) * rate);
    e->res->reset_after_ms = ag_mem__ms((e->limit - e->tokens) / rate);
    e->reset_known = true;
    if (e->tokens >= 1)
        answer(e, true, floor(e->tokens), 0);
    else
        answer(e, false, 0, (1 - e->tokens) / rate);
}

static void token_bucket_charge(struct ag_mem_store *s, struct ag_mem_eval *e,
                                double now)
{
    struct ag_mem_slot *sl = hash_slot(s, e, 1u << AG_ALG_TOKEN_BUCKET, now);
    double rate = e->limit / e->window;
    double tokens = e->tokens - 1;
    double full_us = (e->limit - tokens) / rate;
    /* Redis keeps tostring(tokens): the same digits here, so that the two
     * stores refill from the same number. */
    sl->bucket.t = lua_text(tokens);
    sl->bucket.ts = now;
    sl->expire = ag_mem__expiry_at(now + full_us);
    e->res->remaining = (uint32_t)floor(tokens);
    e->res->reset_after_ms = ag_mem__ms(full_us);
}

/* distinct (lua/distinct.lua). */

static void distinct_peek(struct ag_mem_eval *e, double now)
{
    e->count = set_count(e, now);
    e->known = false;
    for (uint32_t i = 0; e->sl && i < e->sl->n; i++)
        if (e->sl->set[i].id == e->member)
            e->known = true;
    set_answer(e, now, e->known || e->count < e->limit);
}

static void distinct_charge(struct ag_mem_store *s, struct ag_mem_eval *e,
                            double now)
{
    if (!set_add(s, e, now))
        return; /* over the memory bound: not recorded */
    if (!e->known)
        e->count++;
    e->res->remaining = (uint32_t)(e->limit - e->count);
    e->res->reset_after_ms = ag_mem__ms(e->window);
}

/* consecutive (lua/consecutive.lua). */

static void consecutive_peek(struct ag_mem_eval *e, double now)
{
    e->count = 0;
    e->res->reset_after_ms = 0;
    e->reset_known = true;
    if (!has_fields(e, AG_ALG_CONSECUTIVE) ||
        now >= e->sl->consecutive.l + e->window) {
        answer(e, true, e->limit, 0);
        return;
    }
    e->count = e->sl->consecutive.f;
    double left_us = e->sl->consecutive.l + e->window - now;
    e->res->reset_after_ms = ag_mem__ms(left_us);
    if (e->count < e->limit)
        answer(e, true, e->limit - e->count, 0);
    else
        answer(e, false, 0, left_us);
}

static void consecutive_charge(struct ag_mem_store *s, struct ag_mem_eval *e,
                               double now)
{
    struct ag_mem_slot *sl = hash_slot(s, e, 1u << AG_ALG_CONSECUTIVE, now);
    sl->consecutive.f = e->count + 1;
    sl->consecutive.l = now;
    sl->expire = ag_mem__expiry_at(now + e->window);
    e->res->remaining = (uint32_t)(e->limit - sl->consecutive.f);
    e->res->reset_after_ms = ag_mem__ms(e->window);
}

/* conversion (lua/conversion.lua). */

/* counts_at: one counter's current and previous counts at window idx. */
static void counts_at(double idx, bool has, double cw, double c, double p,
                      double *cur, double *prev)
{
    *cur = 0;
    *prev = 0;
    if (has && cw == idx - 1) {
        *prev = c;
    } else if (has && cw == idx) {
        *cur = c;
        *prev = p;
    }
}

/* Hands charge, as the Lua's peek does, the index, the current and
 * previous counts of the counter this plan charges (cc, pc) and S (est). */
static void conversion_peek(struct ag_mem_eval *e, double now)
{
    double w = e->window;
    e->idx = floor(now / w);
    bool has = has_fields(e, AG_ALG_CONVERSION);
    double cs = 0, ps = 0, cv = 0, pv = 0;
    if (has) {
        const struct ag_mem_slot *sl = e->sl;
        counts_at(e->idx, sl->conversion.has_s, sl->conversion.sw,
                  sl->conversion.s, sl->conversion.sp, &cs, &ps);
        counts_at(e->idx, sl->conversion.has_v, sl->conversion.vw,
                  sl->conversion.v, sl->conversion.vp, &cv, &pv);
    }
    double elapsed = now - e->idx * w;
    double weight = 1 - elapsed / w;
    double sends = ps * weight + cs;
    if (cs > 0 || cv > 0)
        e->res->reset_after_ms = ag_mem__ms((e->idx + 2) * w - now);
    else if (ps > 0 || pv > 0)
        e->res->reset_after_ms = ag_mem__ms((e->idx + 1) * w - now);
    else
        e->res->reset_after_ms = 0;
    e->reset_known = true;
    e->est = sends;
    e->cc = e->record ? cv : cs;
    e->pc = e->record ? pv : ps;
    double remaining = fmax(floor(e->limit - sends), 0);
    double ratio = (double)e->op->policy->min_ratio_ppm / AG_RATIO_ONE;
    if (e->record || sends + 1 <= e->limit ||
        (pv * weight + cv) / sends >= ratio)
        answer(e, true, remaining, 0);
    else
        answer(e, false, 0, (e->idx + 1) * w - now);
}

static void conversion_charge(struct ag_mem_store *s, struct ag_mem_eval *e,
                              double now)
{
    struct ag_mem_slot *sl = hash_slot(s, e, 1u << AG_ALG_CONVERSION, now);
    double w = e->window;
    if (e->record) {
        sl->conversion.has_v = true;
        sl->conversion.vw = e->idx;
        sl->conversion.v = e->cc + 1;
        sl->conversion.vp = e->pc;
        e->res->remaining = (uint32_t)fmax(floor(e->limit - e->est), 0);
    } else {
        sl->conversion.has_s = true;
        sl->conversion.sw = e->idx;
        sl->conversion.s = e->cc + 1;
        sl->conversion.sp = e->pc;
        e->res->remaining = (uint32_t)fmax(floor(e->limit - (e->est + 1)), 0);
    }
    sl->expire = ag_mem__expiry_at((e->idx + 2) * w);
    e->res->reset_after_ms = ag_mem__ms((e->idx + 2) * w - now);
}

/* The algorithms by enum ag_algorithm, as lua/common.lua's `algorithms`
 * by ARGV code. */
const struct ag_mem_algorithm ag_mem__algorithms[AG_ALG_STORE_COUNT] = {
    [AG_ALG_SLIDING_LOG] = {AG_MEM_KIND_SET, false, sliding_log_peek,
                            sliding_log_charge, set_reset},
    [AG_ALG_FIXED_WINDOW] = {AG_MEM_KIND_HASH, false, fixed_window_peek,
                             fixed_window_charge, NULL},
    [AG_ALG_SLIDING_WINDOW] = {AG_MEM_KIND_HASH, false, sliding_window_peek,
                               sliding_window_charge, NULL},
    [AG_ALG_TOKEN_BUCKET] = {AG_MEM_KIND_HASH, false, token_bucket_peek,
                             token_bucket_charge, NULL},
    [AG_ALG_DISTINCT] = {AG_MEM_KIND_SET, false, distinct_peek, distinct_charge,
                         set_reset},
    [AG_ALG_CONSECUTIVE] = {AG_MEM_KIND_HASH, false, consecutive_peek,
                            consecutive_charge, NULL},
    [AG_ALG_CONVERSION] = {AG_MEM_KIND_HASH, true, conversion_peek,
                           conversion_charge, NULL},
};
