/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-process store: the fallback a fail-open policy is evaluated in
 * while Redis cannot answer. Same algorithms, same semantics as lua/, laid
 * out the same way: each algorithm is an entry of `ag_mem__algorithms`
 * (peek, charge, reset, as lua/common.lua describes them) in the order of
 * the Lua files (ag_store_mem_algs.c), the keys live in a table that
 * behaves as Redis's keyspace does (ag_store_mem_table.c), and mem_check,
 * here, is lua/check.lua. A reader can hold the two
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
 * and probing AG_MEM_PROBE slots; an expired slot is free, and when a probe
 * window is full the slot closest to expiry is evicted. Set algorithms keep at
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

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_error.h"
#include "ag_store_mem_impl.h"

static uint64_t realtime_us(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#define LEVEL_US ((uint64_t)AG_BLOCK_LEVEL_S * 1000000u)

/* common.lua's block_level_of: the blocks in a row so far of op's key,
 * while the row goes on at now, else 0. */
static uint64_t block_level(struct ag_mem_store *s,
                            const struct ag_limit_op *op, uint64_t now)
{
    char key[AG_STORE_KEY_MAX];
    ag_limiter_level_key(op, key);
    const struct ag_mem_slot *l = ag_mem__find(s, key, now);
    return l && now < l->level.end + LEVEL_US ? l->level.n : 0;
}

/* common.lua's block_for: blocks op's key from now, for block_s, or where
 * its blocks grow for block_s * growth^n of a row of n before it, at most
 * block_max_s; returns the block's milliseconds. The same integer steps
 * as the Lua's. */
static uint64_t block_for(struct ag_mem_store *s, const struct ag_limit_op *op,
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
    ag_mem__claim(s, key, now)->expire = until;
    if (grows) {
        ag_limiter_level_key(op, key);
        struct ag_mem_slot *l = ag_mem__claim(s, key, now);
        l->level.n = n + 1;
        l->level.end = until;
        l->expire = until + LEVEL_US;
    }
    return d;
}

/* Orders fingerprints as a Redis sorted set does: by score, then by
 * member's bytes. */
static bool fp_before(const struct ag_mem_fp *a, const struct ag_mem_fp *b)
{
    return a->at != b->at ? a->at < b->at : strcmp(a->digest, b->digest) < 0;
}

/* common.lua's fingerprint_seen, for a failure plan with a fingerprint:
 * whether it is one of the user's last AG_FP_KEEP within the window; it
 * is the newest from now on. Over the memory bound nothing is seen or
 * kept. */
static bool fingerprint_seen(struct ag_mem_store *s, const struct ag_plan *plan,
                             uint64_t now)
{
    uint64_t window = (uint64_t)plan->fp_window_s * 1000000u;
    struct ag_mem_slot *sl = ag_mem__find(s, plan->fp_key, now);
    if (sl && sl->kind != AG_MEM_KIND_FPS)
        ag_mem__release(s, sl);
    sl = ag_mem__claim(s, plan->fp_key, now);
    if (!sl->fps) {
        if (s->members + AG_FP_KEEP > s->max_members ||
            !(sl->fps = calloc(AG_FP_KEEP, sizeof *sl->fps))) {
            ag_mem__release(s, sl);
            return false;
        }
        sl->kind = AG_MEM_KIND_FPS;
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
    struct ag_mem_fp added = {.at = now};
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

/* lua/check.lua. */
static int mem_check(struct ag_store *base, const struct ag_plan *plan,
                     struct ag_limit_result *res)
{
    struct ag_mem_store *s = (struct ag_mem_store *)base;
    /* This store never shards a check: a reserve and its release are the
     * cluster store's. */
    if (plan->kind == AG_PLAN_RESERVE || plan->kind == AG_PLAN_RELEASE)
        return AG_EINVAL;
    bool record = plan->kind == AG_PLAN_FAILURE;
    bool peek = plan->kind == AG_PLAN_PEEK;
    int rc = AG_OK;
    struct ag_mem_eval ev[AG_PLAN_OPS];
    uint64_t blocked_ms[AG_PLAN_OPS];
    bool denied = false;
    pthread_mutex_lock(&s->lock);
    s->check++;
    uint64_t now = s->clock(s->clock_ctx);
    /* A failure with a repeated fingerprint charges nothing. */
    bool repeated = record && plan->fp[0] && fingerprint_seen(s, plan, now);
    for (size_t i = 0; i < plan->n; i++) {
        struct ag_mem_eval *e = &ev[i];
        const struct ag_limit_op *op = &plan->ops[i];
        const struct ag_mem_algorithm *a =
            &ag_mem__algorithms[op->policy->algorithm];
        memset(e, 0, sizeof *e);
        memset(&res[i], 0, sizeof res[i]);
        e->op = op;
        e->res = &res[i];
        e->limit = op->policy->limit;
        e->window = (double)op->policy->window_s * 1e6;
        e->member = op->member[0] ? ag_mem__hash(op->member) : 0;
        e->record = record;
        /* A block slot expires when the block ends: blocked while it
         * lives, to the microsecond (common.lua's blocked_ms_of). */
        blocked_ms[i] = 0;
        if (op->policy->block_s) {
            char bkey[AG_STORE_KEY_MAX];
            ag_limiter_block_key(op, bkey);
            struct ag_mem_slot *b = ag_mem__find(s, bkey, now);
            blocked_ms[i] = b ? ag_mem__ms((double)(b->expire - now)) : 0;
        }
        struct ag_mem_slot copy;
        if (!peek) {
            e->sl = ag_mem__pin(s, ag_mem__state_of(s, op->key, a->kind, now));
        } else if (!ag_mem__snapshot(
                       ag_mem__state_seen(s, op->key, a->kind, now), &copy,
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
        struct ag_mem_eval *e = &ev[i];
        const struct ag_limit_op *op = &plan->ops[i];
        const struct ag_mem_algorithm *a =
            &ag_mem__algorithms[op->policy->algorithm];
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
    ag_mem__release(s, &s->scratch);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
static int mem_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct ag_mem_store *s = (struct ag_mem_store *)base;
    pthread_mutex_lock(&s->lock);
    uint64_t now = s->clock(s->clock_ctx);
    for (size_t i = 0; i < plan->n; i++) {
        char bkey[AG_STORE_KEY_MAX], lkey[AG_STORE_KEY_MAX];
        ag_limiter_block_key(&plan->ops[i], bkey);
        ag_limiter_level_key(&plan->ops[i], lkey);
        const char *keys[] = {plan->ops[i].key, bkey, lkey};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            struct ag_mem_slot *sl = ag_mem__find(s, keys[k], now);
            if (sl)
                ag_mem__release(s, sl);
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
    struct ag_mem_store *s = (struct ag_mem_store *)base;
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
    struct ag_mem_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nslots = keys < AG_MEM_PROBE ? AG_MEM_PROBE : keys;
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
