/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-process store: the fallback a fail-open policy is evaluated in
 * while Redis cannot answer. Same algorithms, same semantics as lua/, laid
 * out the same way: each algorithm is an entry of `algorithms` (peek,
 * charge, reset, as lua/common.lua describes them) in the order of the
 * Lua files, and mem_check is lua/check.lua. A reader can hold the two
 * side by side; tests/vectors/algorithms.json and a differential test
 * (tests/integration/test_store_redis.c) hold them to the same answers.
 *
 * Same answers by construction: every sum is the Lua's, in the same
 * order, in doubles (Lua's only number type; the times, microseconds
 * since the epoch, are exact in a double), and what Redis would keep as
 * text is rounded as the text would be. The time is CLOCK_REALTIME, as
 * Redis TIME is, so that windows align to the Unix epoch here too. State is
 * kept as Redis keeps it: the set algorithms share one member set per key
 * (a sorted set), the counter algorithms each their own fields of one hash
 * per key, and state of the other kind is dropped when read (the Lua's
 * WRONGTYPE rule). Expiry only frees state that no longer matters.
 *
 * Memory is bounded: a table of AG_MEM_KEYS slots, found by hashing the key
 * and probing PROBE slots; an expired slot is free, and when a probe window
 * is full the slot closest to expiry is evicted. Set algorithms keep at
 * most `limit` members per key and AG_MEM_MEMBERS members in all; past
 * that a key records nothing more until something expires. One mutex
 * guards the table: the fallback only runs while Redis is down.
 *
 * A peek (AG_PLAN_PEEK, the admin inspect) changes nothing a check would
 * read: each algorithm peeks at a copy of its key's slot (a set's peek
 * drops expired members and trims as it counts), a key of the other kind
 * is left in place, and no charge, block or level is written. All it may
 * free is a slot that had expired, which holds nothing any more.
 *
 * Where it differs from Redis, knowingly: it is per instance; a set over
 * a lowered limit drops, of members seen in the same microsecond, the one
 * first added (Redis: the least in byte order); a key past the memory bound
 * records nothing.
 */
#include "ag_store.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "ag_error.h"

#define PROBE 8

struct member {
    uint64_t id; /* distinct: the subject's hash; sliding_log: 0 */
    uint64_t at; /* microseconds: the sorted set's score */
};

/* A password fingerprint digest in a user's set, scored by when. */
struct fp {
    uint64_t at;
    char digest[AG_DIGEST_HEX + 1];
};

/* What a key holds, as a Redis key has a type. KIND_NONE: a block or a
 * block level, whose slot's fields say all. */
enum kind { KIND_NONE, KIND_SET, KIND_HASH, KIND_FPS };

struct slot {
    char key[AG_STORE_KEY_MAX];
    uint64_t expire; /* microseconds; 0 = free */
    enum kind kind;
    unsigned fields; /* KIND_HASH: bit a once algorithm a stored its own */
    /* The hash's fields, each algorithm's as lua/ names them; numbers as
     * Lua holds them. */
    struct {
        double i, n; /* window index, count */
    } fixed;
    struct {
        double w, c, p; /* window index, its count, the previous count */
    } sliding;
    struct {
        double t, ts; /* tokens (14 digits), time of the last update */
    } bucket;
    struct {
        double f, l; /* failures in a row, time of the last one */
    } consecutive;
    /* conversion's two counters, each a sliding window's: index, count,
     * previous count; has_* false while the field is absent (nil). */
    struct {
        double sw, s, sp, vw, v, vp;
        bool has_s, has_v;
    } conversion;
    struct {
        uint64_t n, end; /* blocks in a row, when the last one ends (us) */
    } level;
    struct member *set; /* KIND_SET */
    struct fp *fps;     /* KIND_FPS: AG_FP_KEEP of them */
    uint32_t n, cap;    /* members (or fps) used, allocated */
    uint64_t pin;       /* the check (mem_store.check) that holds it, if any */
};

struct mem_store {
    struct ag_store base;
    pthread_mutex_t lock;
    struct slot *slots;
    size_t nslots;
    size_t members; /* member slots allocated, in all sets */
    size_t max_members;
    ag_clock_fn clock;
    void *clock_ctx;
    /* The check under way (the lock holds it): its slots are pinned, so
     * that making room for one of its keys never evicts another's slot it
     * still reads. */
    uint64_t check;
    /* Where a key goes when every slot of its probe window is pinned: its
     * state lives for this check only (not recorded), and is emptied when
     * the check ends. */
    struct slot scratch;
};

static uint64_t realtime_us(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t hash_of(const char *s)
{
    unsigned char h[8];
    crypto_generichash(h, sizeof h, (const unsigned char *)s, strlen(s), NULL,
                       0);
    uint64_t v;
    memcpy(&v, h, sizeof v);
    return v;
}

static void release(struct mem_store *s, struct slot *sl)
{
    s->members -= sl->cap;
    free(sl->set);
    free(sl->fps);
    memset(sl, 0, sizeof *sl);
}

/* The live slot for key, or NULL. Expired slots met on the way are freed. */
static struct slot *find(struct mem_store *s, const char *key, uint64_t now)
{
    uint64_t h = hash_of(key);
    for (size_t i = 0; i < PROBE; i++) {
        struct slot *sl = &s->slots[(h + i) % s->nslots];
        if (sl->expire && sl->expire <= now)
            release(s, sl);
        if (sl->expire && strcmp(sl->key, key) == 0)
            return sl;
    }
    return NULL;
}

/* Marks sl as held by the check under way. */
static struct slot *pin(struct mem_store *s, struct slot *sl)
{
    if (sl)
        sl->pin = s->check;
    return sl;
}

/* The slot for key, created empty if absent (evicting the slot of the probe
 * window closest to expiry if none is free, never one the check under way
 * holds), pinned. */
static struct slot *claim(struct mem_store *s, const char *key, uint64_t now)
{
    struct slot *sl = find(s, key, now);
    if (sl)
        return pin(s, sl);
    uint64_t h = hash_of(key);
    struct slot *victim = NULL;
    for (size_t i = 0; i < PROBE; i++) {
        struct slot *c = &s->slots[(h + i) % s->nslots];
        if (!c->expire) {
            victim = c;
            break;
        }
        if (c->pin != s->check && (!victim || c->expire < victim->expire))
            victim = c;
    }
    if (!victim)
        victim = &s->scratch;
    release(s, victim);
    snprintf(victim->key, sizeof victim->key, "%s", key);
    victim->expire = now + 1; /* the caller sets the real expiry */
    return pin(s, victim);
}

/* The slot's expiry for PEXPIREAT at `at` microseconds: Redis rounds it up
 * to a millisecond and keeps the key through that millisecond. */
static uint64_t expiry_at(double at)
{
    return ((uint64_t)ceil(at / 1000) + 1) * 1000;
}

/* One policy of the plan between its peek and its charge: the Lua
 * driver's out[] (res) and kept[] (the values peek hands charge, named
 * here) for one policy. */
struct eval {
    const struct ag_limit_op *op;
    double limit, window; /* the window in microseconds */
    struct slot *sl;      /* NULL while the key holds nothing of ours */
    uint64_t member;      /* distinct: the subject's hash */
    double count, idx, cc, pc, est, tokens;
    bool record; /* the plan records reported events (check.lua's mode) */
    bool known;
    bool reset_known; /* false: the Lua's reset_ms false, left to reset */
    struct ag_limit_result *res;
};

/* Microseconds to whole milliseconds, rounded up (common.lua's ms); what
 * Redis makes of the Lua number, an integer. */
static uint64_t ms(double us)
{
    double m = ceil(us / 1000);
    return m > 0 ? (uint64_t)m : 0;
}

/* x as Lua's tostring writes it (14 significant digits) and tonumber reads
 * it back: what Redis keeps of a fraction. */
static double lua_text(double x)
{
    char text[32];
    snprintf(text, sizeof text, "%.14g", x);
    return strtod(text, NULL);
}

static void answer(struct eval *e, bool allowed, double remaining,
                   double retry_us)
{
    e->res->allowed = allowed;
    e->res->remaining = (uint32_t)remaining;
    e->res->retry_after_ms = allowed ? 0 : ms(retry_us);
}

/* The set algorithms' bookkeeping (common.lua). */

/* set_count: the number of live members. Expired ones are removed, and
 * over a lowered limit the oldest. */
static double set_count(struct eval *e, double now)
{
    struct slot *sl = e->sl;
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

static double set_bound(const struct slot *sl, bool newest)
{
    uint64_t at = sl->set[0].at;
    for (uint32_t i = 1; i < sl->n; i++)
        if (newest ? sl->set[i].at > at : sl->set[i].at < at)
            at = sl->set[i].at;
    return (double)at;
}

/* set_answer: allowed, or denied until the oldest member leaves. */
static void set_answer(struct eval *e, double now, bool allowed)
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
static uint64_t set_reset(const struct eval *e, double now)
{
    return ms(set_bound(e->sl, true) + e->window - now);
}

/* set_add: adds member at now (or refreshes a known one); the set lives
 * one window past it. False if the memory bound leaves no room. */
static bool set_add(struct mem_store *s, struct eval *e, double now)
{
    struct slot *sl = claim(s, e->op->key, (uint64_t)now);
    e->sl = sl;
    sl->kind = KIND_SET;
    uint32_t i = 0;
    while (e->known && i < sl->n && sl->set[i].id != e->member)
        i++;
    if (!e->known || i == sl->n) {
        if (sl->n == sl->cap) {
            uint32_t cap = sl->cap ? 2 * sl->cap : 4;
            if (cap > e->limit)
                cap = (uint32_t)e->limit;
            /* The bound counts what is allocated, not what is used. */
            struct member *grown =
                cap > sl->n && s->members + (cap - sl->cap) <= s->max_members
                    ? realloc(sl->set, cap * sizeof *grown)
                    : NULL;
            if (!grown) {
                if (!sl->n)
                    release(s, sl);
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
    sl->expire = expiry_at(now + e->window);
    return true;
}

/* The claimed slot for a counter algorithm's fields (bit). */
static struct slot *hash_slot(struct mem_store *s, struct eval *e, unsigned bit,
                              double now)
{
    struct slot *sl = claim(s, e->op->key, (uint64_t)now);
    sl->kind = KIND_HASH;
    sl->fields |= bit;
    return sl;
}

static bool has_fields(const struct eval *e, enum ag_algorithm a)
{
    return e->sl && (e->sl->fields & (1u << a));
}

/* sliding_log (lua/sliding_log.lua). */

static void sliding_log_peek(struct eval *e, double now)
{
    e->count = set_count(e, now);
    set_answer(e, now, e->count < e->limit);
}

static void sliding_log_charge(struct mem_store *s, struct eval *e, double now)
{
    if (!set_add(s, e, now))
        return; /* over the memory bound: not recorded */
    e->res->remaining = (uint32_t)(e->limit - e->count - 1);
    e->res->reset_after_ms = ms(e->window);
}

/* fixed_window (lua/fixed_window.lua). */

static void fixed_window_peek(struct eval *e, double now)
{
    e->idx = floor(now / e->window);
    e->count = 0;
    if (has_fields(e, AG_ALG_FIXED_WINDOW) && e->sl->fixed.i == e->idx)
        e->count = e->sl->fixed.n;
    double left_us = (e->idx + 1) * e->window - now;
    e->res->reset_after_ms = e->count > 0 ? ms(left_us) : 0;
    e->reset_known = true;
    if (e->count < e->limit)
        answer(e, true, e->limit - e->count, 0);
    else
        answer(e, false, 0, left_us);
}

static void fixed_window_charge(struct mem_store *s, struct eval *e, double now)
{
    struct slot *sl = hash_slot(s, e, 1u << AG_ALG_FIXED_WINDOW, now);
    double window_end = (e->idx + 1) * e->window;
    sl->fixed.i = e->idx;
    sl->fixed.n = e->count + 1;
    sl->expire = expiry_at(window_end);
    e->res->remaining = (uint32_t)fmax(e->limit - sl->fixed.n, 0);
    e->res->reset_after_ms = ms(window_end - now);
}

/* sliding_window (lua/sliding_window.lua). */

static void sliding_window_peek(struct eval *e, double now)
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
        e->res->reset_after_ms = ms((e->idx + 2) * w - now);
    else if (e->pc > 0)
        e->res->reset_after_ms = ms((e->idx + 1) * w - now);
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

static void sliding_window_charge(struct mem_store *s, struct eval *e,
                                  double now)
{
    struct slot *sl = hash_slot(s, e, 1u << AG_ALG_SLIDING_WINDOW, now);
    double w = e->window;
    sl->sliding.w = e->idx;
    sl->sliding.c = e->cc + 1;
    sl->sliding.p = e->pc;
    sl->expire = expiry_at((e->idx + 2) * w);
    e->res->remaining = (uint32_t)fmax(floor(e->limit - (e->est + 1)), 0);
    e->res->reset_after_ms = ms((e->idx + 2) * w - now);
}

/* token_bucket (lua/token_bucket.lua). */

static void token_bucket_peek(struct eval *e, double now)
{
    double rate = e->limit / e->window; /* tokens per microsecond */
    const struct slot *sl = e->sl;
    if (!has_fields(e, AG_ALG_TOKEN_BUCKET) ||
        now >= sl->bucket.ts + (e->limit - sl->bucket.t) / rate)
        e->tokens = e->limit;
    else
        e->tokens =
            fmin(e->limit, sl->bucket.t + fmax(0, now - sl->bucket.ts) * rate);
    e->res->reset_after_ms = ms((e->limit - e->tokens) / rate);
    e->reset_known = true;
    if (e->tokens >= 1)
        answer(e, true, floor(e->tokens), 0);
    else
        answer(e, false, 0, (1 - e->tokens) / rate);
}

static void token_bucket_charge(struct mem_store *s, struct eval *e, double now)
{
    struct slot *sl = hash_slot(s, e, 1u << AG_ALG_TOKEN_BUCKET, now);
    double rate = e->limit / e->window;
    double tokens = e->tokens - 1;
    double full_us = (e->limit - tokens) / rate;
    /* Redis keeps tostring(tokens): the same digits here, so that the two
     * stores refill from the same number. */
    sl->bucket.t = lua_text(tokens);
    sl->bucket.ts = now;
    sl->expire = expiry_at(now + full_us);
    e->res->remaining = (uint32_t)floor(tokens);
    e->res->reset_after_ms = ms(full_us);
}

/* distinct (lua/distinct.lua). */

static void distinct_peek(struct eval *e, double now)
{
    e->count = set_count(e, now);
    e->known = false;
    for (uint32_t i = 0; e->sl && i < e->sl->n; i++)
        if (e->sl->set[i].id == e->member)
            e->known = true;
    set_answer(e, now, e->known || e->count < e->limit);
}

static void distinct_charge(struct mem_store *s, struct eval *e, double now)
{
    if (!set_add(s, e, now))
        return; /* over the memory bound: not recorded */
    if (!e->known)
        e->count++;
    e->res->remaining = (uint32_t)(e->limit - e->count);
    e->res->reset_after_ms = ms(e->window);
}

/* consecutive (lua/consecutive.lua). */

static void consecutive_peek(struct eval *e, double now)
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
    e->res->reset_after_ms = ms(left_us);
    if (e->count < e->limit)
        answer(e, true, e->limit - e->count, 0);
    else
        answer(e, false, 0, left_us);
}

static void consecutive_charge(struct mem_store *s, struct eval *e, double now)
{
    struct slot *sl = hash_slot(s, e, 1u << AG_ALG_CONSECUTIVE, now);
    sl->consecutive.f = e->count + 1;
    sl->consecutive.l = now;
    sl->expire = expiry_at(now + e->window);
    e->res->remaining = (uint32_t)(e->limit - sl->consecutive.f);
    e->res->reset_after_ms = ms(e->window);
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
static void conversion_peek(struct eval *e, double now)
{
    double w = e->window;
    e->idx = floor(now / w);
    bool has = has_fields(e, AG_ALG_CONVERSION);
    double cs = 0, ps = 0, cv = 0, pv = 0;
    if (has) {
        const struct slot *sl = e->sl;
        counts_at(e->idx, sl->conversion.has_s, sl->conversion.sw,
                  sl->conversion.s, sl->conversion.sp, &cs, &ps);
        counts_at(e->idx, sl->conversion.has_v, sl->conversion.vw,
                  sl->conversion.v, sl->conversion.vp, &cv, &pv);
    }
    double elapsed = now - e->idx * w;
    double weight = 1 - elapsed / w;
    double sends = ps * weight + cs;
    if (cs > 0 || cv > 0)
        e->res->reset_after_ms = ms((e->idx + 2) * w - now);
    else if (ps > 0 || pv > 0)
        e->res->reset_after_ms = ms((e->idx + 1) * w - now);
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

static void conversion_charge(struct mem_store *s, struct eval *e, double now)
{
    struct slot *sl = hash_slot(s, e, 1u << AG_ALG_CONVERSION, now);
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
    sl->expire = expiry_at((e->idx + 2) * w);
    e->res->reset_after_ms = ms((e->idx + 2) * w - now);
}

/* The algorithms by enum ag_algorithm, as lua/common.lua's `algorithms`
 * by ARGV code. kind is the type of Redis key each keeps; reset is NULL
 * where peek always knows reset_ms; records_blocked as the Lua table's
 * flag (a failure plan records it even while its key is blocked). */
static const struct algorithm {
    enum kind kind;
    bool records_blocked;
    void (*peek)(struct eval *e, double now);
    void (*charge)(struct mem_store *s, struct eval *e, double now);
    uint64_t (*reset)(const struct eval *e, double now);
} algorithms[AG_ALG_COUNT] = {
    [AG_ALG_SLIDING_LOG] = {KIND_SET, false, sliding_log_peek,
                            sliding_log_charge, set_reset},
    [AG_ALG_FIXED_WINDOW] = {KIND_HASH, false, fixed_window_peek,
                             fixed_window_charge, NULL},
    [AG_ALG_SLIDING_WINDOW] = {KIND_HASH, false, sliding_window_peek,
                               sliding_window_charge, NULL},
    [AG_ALG_TOKEN_BUCKET] = {KIND_HASH, false, token_bucket_peek,
                             token_bucket_charge, NULL},
    [AG_ALG_DISTINCT] = {KIND_SET, false, distinct_peek, distinct_charge,
                         set_reset},
    [AG_ALG_CONSECUTIVE] = {KIND_HASH, false, consecutive_peek,
                            consecutive_charge, NULL},
    [AG_ALG_CONVERSION] = {KIND_HASH, true, conversion_peek, conversion_charge,
                           NULL},
};

#define LEVEL_US ((uint64_t)AG_BLOCK_LEVEL_S * 1000000u)

/* common.lua's block_level_of: the blocks in a row so far of op's key,
 * while the row goes on at now, else 0. */
static uint64_t block_level(struct mem_store *s, const struct ag_limit_op *op,
                            uint64_t now)
{
    char key[AG_STORE_KEY_MAX];
    ag_limiter_level_key(op, key);
    const struct slot *l = find(s, key, now);
    return l && now < l->level.end + LEVEL_US ? l->level.n : 0;
}

/* common.lua's block_for: blocks op's key from now, for block_s, or where
 * its blocks grow for block_s * growth^n of a row of n before it, at most
 * block_max_s; returns the block's milliseconds. The same integer steps
 * as the Lua's. */
static uint64_t block_for(struct mem_store *s, const struct ag_limit_op *op,
                          uint64_t now)
{
    const struct ag_policy *p = op->policy;
    bool grows = p->block_growth > 1;
    uint64_t d = (uint64_t)p->block_s * 1000;
    uint64_t n = 0;
    char key[AG_STORE_KEY_MAX];
    if (grows) {
        n = block_level(s, op, now);
        uint64_t max = (uint64_t)p->block_max_s * 1000;
        if (max < d)
            max = d;
        for (uint64_t i = 0; i < n && d < max; i++)
            d *= p->block_growth;
        if (d > max)
            d = max;
    }
    uint64_t until = now + d * 1000;
    ag_limiter_block_key(op, key);
    claim(s, key, now)->expire = until;
    if (grows) {
        ag_limiter_level_key(op, key);
        struct slot *l = claim(s, key, now);
        l->level.n = n + 1;
        l->level.end = until;
        l->expire = until + LEVEL_US;
    }
    return d;
}

/* Orders fingerprints as a Redis sorted set does: by score, then by
 * member's bytes. */
static bool fp_before(const struct fp *a, const struct fp *b)
{
    return a->at != b->at ? a->at < b->at : strcmp(a->digest, b->digest) < 0;
}

/* common.lua's fingerprint_seen, for a failure plan with a fingerprint:
 * whether it is one of the user's last AG_FP_KEEP within the window; it
 * is the newest from now on. Over the memory bound nothing is seen or
 * kept. */
static bool fingerprint_seen(struct mem_store *s, const struct ag_plan *plan,
                             uint64_t now)
{
    uint64_t window = (uint64_t)plan->fp_window_s * 1000000u;
    struct slot *sl = find(s, plan->fp_key, now);
    if (sl && sl->kind != KIND_FPS)
        release(s, sl);
    sl = claim(s, plan->fp_key, now);
    if (!sl->fps) {
        if (s->members + AG_FP_KEEP > s->max_members ||
            !(sl->fps = calloc(AG_FP_KEEP, sizeof *sl->fps))) {
            release(s, sl);
            return false;
        }
        sl->kind = KIND_FPS;
        sl->cap = AG_FP_KEEP;
        s->members += AG_FP_KEEP;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < sl->n; i++)
        if (sl->fps[i].at + window > now)
            sl->fps[k++] = sl->fps[i];
    sl->n = k;
    uint32_t i = 0;
    while (i < sl->n && strcmp(sl->fps[i].digest, plan->fp) != 0)
        i++;
    bool seen = i < sl->n;
    struct fp added = {.at = now};
    snprintf(added.digest, sizeof added.digest, "%s", plan->fp);
    if (!seen && sl->n == AG_FP_KEEP) {
        /* Full: of the three and the new one the oldest goes, which is the
         * new one only if three others came in the same microsecond and
         * sort before it (Redis: ZADD, then ZREMRANGEBYRANK). */
        i = 0;
        for (uint32_t j = 1; j < sl->n; j++)
            if (fp_before(&sl->fps[j], &sl->fps[i]))
                i = j;
        if (fp_before(&added, &sl->fps[i]))
            i = AG_FP_KEEP;
    } else if (!seen) {
        i = sl->n++;
    }
    if (i < AG_FP_KEEP)
        sl->fps[i] = added;
    sl->expire = now + window;
    return seen;
}

/* The slot of key if it holds state of kind; state of the other kind is
 * dropped, as common.lua's read drops a key of the wrong type. */
static struct slot *state_of(struct mem_store *s, const char *key,
                             enum kind kind, uint64_t now)
{
    struct slot *sl = find(s, key, now);
    if (sl && sl->kind != KIND_NONE && sl->kind != kind) {
        release(s, sl);
        return NULL;
    }
    return sl;
}

/* The slot of key for a peek: as state_of finds it, but state of the
 * other kind is left where it is (a peek drops nothing) and reads as
 * none. */
static struct slot *state_seen(struct mem_store *s, const char *key,
                               enum kind kind, uint64_t now)
{
    struct slot *sl = find(s, key, now);
    if (sl && sl->kind != KIND_NONE && sl->kind != kind)
        return NULL;
    return sl;
}

/* A peek's own copy of slot sl (NULL: none) in copy, which *out then
 * points to: the algorithms' peeks drop a set's expired members and trim
 * it to its limit as they count, which a peek must not do to the table.
 * Only the members are copied (a peek reads no fingerprints); the caller
 * frees copy->set. False when out of memory. */
static bool snapshot(const struct slot *sl, struct slot *copy,
                     struct slot **out)
{
    *out = NULL;
    if (!sl)
        return true;
    *copy = *sl;
    copy->fps = NULL;
    copy->set = NULL;
    if (sl->kind == KIND_SET && sl->n) {
        copy->set = malloc(sl->n * sizeof *copy->set);
        if (!copy->set)
            return false;
        memcpy(copy->set, sl->set, sl->n * sizeof *copy->set);
    }
    copy->cap = copy->n;
    *out = copy;
    return true;
}

/* lua/check.lua. */
static int mem_check(struct ag_store *base, const struct ag_plan *plan,
                     struct ag_limit_result *res)
{
    struct mem_store *s = (struct mem_store *)base;
    /* This store never shards a check: a reserve and its release are the
     * cluster store's. */
    if (plan->kind == AG_PLAN_RESERVE || plan->kind == AG_PLAN_RELEASE)
        return AG_EINVAL;
    bool record = plan->kind == AG_PLAN_FAILURE;
    bool peek = plan->kind == AG_PLAN_PEEK;
    int rc = AG_OK;
    struct eval ev[AG_PLAN_MAX];
    uint64_t blocked_ms[AG_PLAN_MAX];
    bool denied = false;
    pthread_mutex_lock(&s->lock);
    s->check++;
    uint64_t now = s->clock(s->clock_ctx);
    /* A failure with a repeated fingerprint charges nothing. */
    bool repeated = record && plan->fp[0] && fingerprint_seen(s, plan, now);
    for (size_t i = 0; i < plan->n; i++) {
        struct eval *e = &ev[i];
        const struct ag_limit_op *op = &plan->ops[i];
        const struct algorithm *a = &algorithms[op->policy->algorithm];
        memset(e, 0, sizeof *e);
        memset(&res[i], 0, sizeof res[i]);
        e->op = op;
        e->res = &res[i];
        e->limit = op->policy->limit;
        e->window = (double)op->policy->window_s * 1e6;
        e->member = op->member[0] ? hash_of(op->member) : 0;
        e->record = record;
        /* A block slot expires when the block ends: blocked while it
         * lives, to the microsecond (common.lua's blocked_ms_of). */
        blocked_ms[i] = 0;
        if (op->policy->block_s) {
            char bkey[AG_STORE_KEY_MAX];
            ag_limiter_block_key(op, bkey);
            struct slot *b = find(s, bkey, now);
            blocked_ms[i] = b ? ms((double)(b->expire - now)) : 0;
        }
        struct slot copy;
        if (!peek) {
            e->sl = pin(s, state_of(s, op->key, a->kind, now));
        } else if (!snapshot(state_seen(s, op->key, a->kind, now), &copy,
                             &e->sl)) {
            rc = AG_ENOMEM;
            break;
        }
        a->peek(e, (double)now);
        if (blocked_ms[i] > 0 && !(record && a->records_blocked)) {
            res[i].allowed = false;
            res[i].remaining = 0;
            if (blocked_ms[i] > res[i].retry_after_ms)
                res[i].retry_after_ms = blocked_ms[i];
        }
        if (!res[i].allowed && !op->shadow)
            denied = true;
        if (peek) {
            /* Everything a peek answers, while its copy lives. */
            res[i].blocked_ms = blocked_ms[i];
            if (op->policy->block_s && op->policy->block_growth > 1)
                res[i].block_level = (uint32_t)block_level(s, op, now);
            if (!e->reset_known)
                res[i].reset_after_ms = a->reset(e, (double)now);
            if (e->sl)
                free(copy.set);
            e->sl = NULL;
        }
    }
    /* A peek writes nothing: no charge, no block. */
    for (size_t i = 0; i < plan->n && !peek; i++) {
        struct eval *e = &ev[i];
        const struct ag_limit_op *op = &plan->ops[i];
        const struct algorithm *a = &algorithms[op->policy->algorithm];
        if ((record || !denied) && res[i].allowed && op->charge && !repeated) {
            a->charge(s, e, (double)now);
            e->reset_known = true;
        } else if (!record && !res[i].allowed && !op->shadow &&
                   op->policy->block_s && blocked_ms[i] == 0) {
            uint64_t block_ms = block_for(s, op, now);
            if (block_ms > res[i].retry_after_ms)
                res[i].retry_after_ms = block_ms;
        }
        if (!e->reset_known)
            res[i].reset_after_ms = a->reset(e, (double)now);
    }
    release(s, &s->scratch);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
static int mem_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct mem_store *s = (struct mem_store *)base;
    pthread_mutex_lock(&s->lock);
    uint64_t now = s->clock(s->clock_ctx);
    for (size_t i = 0; i < plan->n; i++) {
        char bkey[AG_STORE_KEY_MAX], lkey[AG_STORE_KEY_MAX];
        ag_limiter_block_key(&plan->ops[i], bkey);
        ag_limiter_level_key(&plan->ops[i], lkey);
        const char *keys[] = {plan->ops[i].key, bkey, lkey};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            struct slot *sl = find(s, keys[k], now);
            if (sl)
                release(s, sl);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return AG_OK;
}

static int mem_ping(struct ag_store *base)
{
    (void)base;
    return AG_OK;
}

static void mem_destroy(struct ag_store *base)
{
    struct mem_store *s = (struct mem_store *)base;
    for (size_t i = 0; i < s->nslots; i++) {
        free(s->slots[i].set);
        free(s->slots[i].fps);
    }
    free(s->scratch.set);
    free(s->scratch.fps);
    free(s->slots);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static const struct ag_store_ops mem_ops = {
    .name = "memory",
    .check = mem_check,
    .clear = mem_clear,
    .ping = mem_ping,
    .destroy = mem_destroy,
};

struct ag_store *ag_store_mem_new(size_t keys, size_t members,
                                  ag_clock_fn clock, void *clock_ctx)
{
    struct mem_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nslots = keys < PROBE ? PROBE : keys;
    s->slots = calloc(s->nslots, sizeof *s->slots);
    if (!s->slots) {
        free(s);
        return NULL;
    }
    s->max_members = members;
    s->clock = clock ? clock : realtime_us;
    s->clock_ctx = clock_ctx;
    pthread_mutex_init(&s->lock, NULL);
    s->base.ops = &mem_ops;
    return &s->base;
}
