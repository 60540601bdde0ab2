/*
 * The in-process store: the fallback a fail-open policy is evaluated in
 * while Redis cannot answer. Same algorithms, same semantics as lua/ (a
 * reader can hold this file beside the lua/ files), same all-or-nothing check,
 * but per instance and on this machine's monotonic clock.
 *
 * Memory is bounded: a table of AG_MEM_KEYS slots, found by hashing the key
 * and probing PROBE slots; an expired slot is free, and when a probe window
 * is full the slot closest to expiry is evicted. Sorted-set algorithms
 * (sliding_log, distinct) keep at most `limit` members per key and
 * AG_MEM_MEMBERS members in all; past that a key records nothing more
 * until something expires. One mutex guards the table: the fallback only
 * runs while Redis is down.
 */
#include "ag_store.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "ag_error.h"

#define PROBE 8

struct member {
    uint64_t id; /* sliding_log: unused; distinct: the subject's hash */
    uint64_t at; /* microseconds */
};

struct slot {
    char key[AG_STORE_KEY_MAX + 2];
    uint64_t expire; /* microseconds; 0 = free */
    /* fixed_window: count; sliding_window: window index, current and
     * previous counts; token_bucket: tokens and last update. */
    uint64_t count, idx, cur, prev, ts;
    double tokens;
    struct member *set; /* sliding_log and distinct */
    uint32_t n, cap;
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
};

static uint64_t monotonic_us(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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

/* The slot for key, created empty if absent (evicting the slot of the probe
 * window closest to expiry if none is free). */
static struct slot *claim(struct mem_store *s, const char *key, uint64_t now)
{
    struct slot *sl = find(s, key, now);
    if (sl)
        return sl;
    uint64_t h = hash_of(key);
    struct slot *victim = NULL;
    for (size_t i = 0; i < PROBE; i++) {
        struct slot *c = &s->slots[(h + i) % s->nslots];
        if (!c->expire) {
            victim = c;
            break;
        }
        if (!victim || c->expire < victim->expire)
            victim = c;
    }
    release(s, victim);
    snprintf(victim->key, sizeof victim->key, "%s", key);
    victim->expire = now + 1; /* the caller sets the real expiry */
    return victim;
}

/* What one policy of the plan is doing: the Lua driver's `p`. */
struct eval {
    const struct ag_limit_op *op;
    uint64_t limit, window, block; /* microseconds for the times */
    struct slot *sl;               /* NULL when the key is absent */
    uint64_t member;               /* distinct: the subject's hash */
    bool known;
    uint64_t window_end, idx, cc, pc;
    double est, tokens, rate;
    uint64_t count;
    int64_t blocked_us;
    struct ag_limit_result *res;
};

static uint64_t ms_ceil(double us)
{
    return us <= 0 ? 0 : (uint64_t)ceil(us / 1000.0);
}

static void trim_set(struct eval *e, uint64_t now)
{
    struct slot *sl = e->sl;
    if (!sl || !sl->n)
        return;
    uint32_t drop = 0;

    /* sliding_log members are in time order; distinct ones are scanned. */
    if (e->op->policy->algorithm == AG_ALG_SLIDING_LOG) {
        while (drop < sl->n && sl->set[drop].at + e->window <= now)
            drop++;
        if (sl->n - drop > e->limit)
            drop = sl->n - (uint32_t)e->limit;
        memmove(sl->set, sl->set + drop, (sl->n - drop) * sizeof *sl->set);
        sl->n -= drop;
        return;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < sl->n; i++)
        if (sl->set[i].at + e->window > now)
            sl->set[k++] = sl->set[i];
    sl->n = k;
    while (sl->n > e->limit) { /* drop the least recently seen */
        uint32_t oldest = 0;
        for (uint32_t i = 1; i < sl->n; i++)
            if (sl->set[i].at < sl->set[oldest].at)
                oldest = i;
        sl->set[oldest] = sl->set[--sl->n];
    }
}

static void set_bounds(const struct slot *sl, uint64_t *oldest,
                       uint64_t *newest)
{
    *oldest = UINT64_MAX;
    *newest = 0;
    for (uint32_t i = 0; i < sl->n; i++) {
        if (sl->set[i].at < *oldest)
            *oldest = sl->set[i].at;
        if (sl->set[i].at > *newest)
            *newest = sl->set[i].at;
    }
}

static void peek(struct eval *e, uint64_t now)
{
    struct ag_limit_result *r = e->res;
    struct slot *sl = e->sl;
    uint64_t w = e->window;
    switch (e->op->policy->algorithm) {
    case AG_ALG_SLIDING_LOG:
    case AG_ALG_DISTINCT: {
        trim_set(e, now);
        e->count = sl ? sl->n : 0;
        e->known = false;
        for (uint32_t i = 0; sl && i < sl->n; i++)
            if (e->op->policy->algorithm == AG_ALG_DISTINCT &&
                sl->set[i].id == e->member)
                e->known = true;
        uint64_t oldest = 0, newest = 0;
        if (e->count)
            set_bounds(sl, &oldest, &newest);
        r->reset_after_ms = e->count ? ms_ceil((double)(newest + w - now)) : 0;
        r->allowed = e->known || e->count < e->limit;
        r->remaining = r->allowed ? (uint32_t)(e->limit - e->count) : 0;
        r->retry_after_ms =
            r->allowed ? 0 : ms_ceil((double)(oldest + w - now));
        return;
    }
    case AG_ALG_FIXED_WINDOW:
        e->window_end = (now / w + 1) * w;
        e->count = sl ? sl->count : 0;
        r->reset_after_ms =
            e->count ? ms_ceil((double)(e->window_end - now)) : 0;
        r->allowed = e->count < e->limit;
        r->remaining = r->allowed ? (uint32_t)(e->limit - e->count) : 0;
        r->retry_after_ms =
            r->allowed ? 0 : ms_ceil((double)(e->window_end - now));
        return;
    case AG_ALG_SLIDING_WINDOW: {
        e->idx = now / w;
        e->cc = 0;
        e->pc = 0;
        if (sl && sl->idx == e->idx) {
            e->cc = sl->cur;
            e->pc = sl->prev;
        } else if (sl && sl->idx + 1 == e->idx) {
            e->pc = sl->cur;
        }
        double elapsed = (double)(now - e->idx * w);
        e->est = (double)e->pc * (1 - elapsed / (double)w) + (double)e->cc;
        r->reset_after_ms = e->cc   ? ms_ceil((double)((e->idx + 2) * w - now))
                            : e->pc ? ms_ceil((double)((e->idx + 1) * w - now))
                                    : 0;
        r->allowed = e->est + 1 <= (double)e->limit;
        r->remaining =
            r->allowed ? (uint32_t)floor((double)e->limit - e->est) : 0;
        if (r->allowed)
            r->retry_after_ms = 0;
        else if (e->cc + 1 <= e->limit)
            r->retry_after_ms =
                ms_ceil(fmax((double)w * (1 - (double)(e->limit - 1 - e->cc) /
                                                  (double)e->pc) -
                                 elapsed,
                             1));
        else
            r->retry_after_ms = ms_ceil(
                (double)w - elapsed +
                (double)w * (1 - (double)(e->limit - 1) / (double)e->cc));
        return;
    }
    case AG_ALG_TOKEN_BUCKET:
        e->rate = (double)e->limit / (double)w;
        e->tokens = sl ? fmin((double)e->limit,
                              sl->tokens + (double)(now - sl->ts) * e->rate)
                       : (double)e->limit;
        r->reset_after_ms = ms_ceil(((double)e->limit - e->tokens) / e->rate);
        r->allowed = e->tokens >= 1;
        r->remaining = r->allowed ? (uint32_t)floor(e->tokens) : 0;
        r->retry_after_ms = r->allowed ? 0 : ms_ceil((1 - e->tokens) / e->rate);
        return;
    case AG_ALG_COUNT:
        break;
    }
}

static void charge(struct mem_store *s, struct eval *e, uint64_t now)
{
    struct ag_limit_result *r = e->res;
    uint64_t w = e->window;
    struct slot *sl = claim(s, e->op->key, now);
    e->sl = sl;
    switch (e->op->policy->algorithm) {
    case AG_ALG_SLIDING_LOG:
    case AG_ALG_DISTINCT: {
        bool distinct = e->op->policy->algorithm == AG_ALG_DISTINCT;
        if (distinct && e->known) {
            for (uint32_t i = 0; i < sl->n; i++)
                if (sl->set[i].id == e->member)
                    sl->set[i].at = now;
        } else {
            if (sl->n == sl->cap) {
                uint32_t cap = sl->cap ? 2 * sl->cap : 4;
                if (cap > e->limit)
                    cap = (uint32_t)e->limit;
                /* The bound counts what is allocated, not what is used. */
                struct member *grown =
                    cap > sl->n &&
                            s->members + (cap - sl->cap) <= s->max_members
                        ? realloc(sl->set, cap * sizeof *grown)
                        : NULL;
                if (!grown)
                    return; /* over the memory bound: not recorded */
                s->members += cap - sl->cap;
                sl->set = grown;
                sl->cap = cap;
            }
            sl->set[sl->n].id = e->member;
            sl->set[sl->n++].at = now;
            e->count++;
        }
        sl->expire = now + w;
        r->remaining = (uint32_t)(e->limit - e->count);
        r->reset_after_ms = ms_ceil((double)w);
        return;
    }
    case AG_ALG_FIXED_WINDOW:
        sl->count = e->count + 1;
        sl->expire = e->window_end;
        r->remaining =
            sl->count < e->limit ? (uint32_t)(e->limit - sl->count) : 0;
        r->reset_after_ms = ms_ceil((double)(e->window_end - now));
        return;
    case AG_ALG_SLIDING_WINDOW:
        sl->idx = e->idx;
        sl->cur = e->cc + 1;
        sl->prev = e->pc;
        sl->expire = (e->idx + 2) * w;
        e->est += 1;
        r->remaining = e->est < (double)e->limit
                           ? (uint32_t)floor((double)e->limit - e->est)
                           : 0;
        r->reset_after_ms = ms_ceil((double)((e->idx + 2) * w - now));
        return;
    case AG_ALG_TOKEN_BUCKET:
        sl->tokens = e->tokens - 1;
        sl->ts = now;
        r->reset_after_ms = ms_ceil(((double)e->limit - sl->tokens) / e->rate);
        sl->expire =
            now + (uint64_t)(((double)e->limit - sl->tokens) / e->rate) + 1;
        r->remaining = (uint32_t)floor(sl->tokens);
        return;
    case AG_ALG_COUNT:
        break;
    }
}

static int mem_check(struct ag_store *base, const struct ag_plan *plan,
                     struct ag_limit_result *res)
{
    struct mem_store *s = (struct mem_store *)base;
    bool record = plan->kind == AG_PLAN_FAILURE;
    struct eval ev[AG_PLAN_MAX];
    bool denied = false;
    pthread_mutex_lock(&s->lock);
    uint64_t now = s->clock(s->clock_ctx);
    for (size_t i = 0; i < plan->n; i++) {
        struct eval *e = &ev[i];
        const struct ag_policy *p = plan->ops[i].policy;
        memset(e, 0, sizeof *e);
        e->op = &plan->ops[i];
        e->res = &res[i];
        e->limit = p->limit;
        e->window = (uint64_t)p->window_s * 1000000u;
        e->block = (uint64_t)p->block_s * 1000000u;
        e->member = e->op->member[0] ? hash_of(e->op->member) : 0;
        e->sl = find(s, e->op->key, now);
        peek(e, now);
        char bkey[AG_STORE_KEY_MAX + 2];
        snprintf(bkey, sizeof bkey, "%s:b", e->op->key);
        struct slot *b = e->block ? find(s, bkey, now) : NULL;
        if (b) {
            e->blocked_us = (int64_t)(b->expire - now);
            res[i].allowed = false;
            res[i].remaining = 0;
            uint64_t ms = ms_ceil((double)e->blocked_us);
            if (ms > res[i].retry_after_ms)
                res[i].retry_after_ms = ms;
        }
        if (!res[i].allowed && !e->op->shadow)
            denied = true;
    }
    for (size_t i = 0; i < plan->n; i++) {
        struct eval *e = &ev[i];
        if ((record || !denied) && e->op->charge && res[i].allowed) {
            charge(s, e, now);
        } else if (!record && !res[i].allowed && !e->op->shadow && e->block &&
                   !e->blocked_us) {
            char bkey[AG_STORE_KEY_MAX + 2];
            snprintf(bkey, sizeof bkey, "%s:b", e->op->key);
            claim(s, bkey, now)->expire = now + e->block;
            uint64_t ms = ms_ceil((double)e->block);
            if (ms > res[i].retry_after_ms)
                res[i].retry_after_ms = ms;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return AG_OK;
}

static int mem_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct mem_store *s = (struct mem_store *)base;
    pthread_mutex_lock(&s->lock);
    uint64_t now = s->clock(s->clock_ctx);
    for (size_t i = 0; i < plan->n; i++) {
        char bkey[AG_STORE_KEY_MAX + 2];
        snprintf(bkey, sizeof bkey, "%s:b", plan->ops[i].key);
        struct slot *sl = find(s, plan->ops[i].key, now);
        if (sl)
            release(s, sl);
        if ((sl = find(s, bkey, now)))
            release(s, sl);
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
    for (size_t i = 0; i < s->nslots; i++)
        free(s->slots[i].set);
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
    s->clock = clock ? clock : monotonic_us;
    s->clock_ctx = clock_ctx;
    pthread_mutex_init(&s->lock, NULL);
    s->base.ops = &mem_ops;
    return &s->base;
}
