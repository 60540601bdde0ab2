/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store's algorithms on the test clock: the shared algorithm
 * vectors; one seeded random trace through it and the in-process store
 * (checks, failure plans with and without password fingerprints, clears,
 * shadow and uncharged policies, blocks and their growth, lowered limits,
 * times on window edges and a day after a block, the admin inspect's
 * peeks), on which the two implementations of each algorithm must give
 * the same answer at every step; and a peek that leaves Redis byte for
 * byte as it found it. Starts its own redis-server (ag_test_redis.h).
 * AG_DIFF_SEED picks the trace's seed (default: the time), to replay one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ag_error.h"
#include "ag_store.h"
#include "ag_test_redis.h"
#include "ag_vectors.h"

static void every_vector_holds_on_redis(void **state)
{
    (void)state;
    json_t *vectors = ag_vectors_load();
    size_t i;
    const json_t *v;
    int failed = 0;
    json_array_foreach(json_object_get(vectors, "vectors"), i, v)
    {
        char prefix[32], why[512];
        snprintf(prefix, sizeof prefix, "v%zu", i);
        if (ag_vectors_run(v, ag_env.store, prefix, ag_env_set_time, NULL, why,
                           sizeof why)) {
            print_error("%s\n", why);
            failed++;
        } else {
            print_message("[       OK ] %s\n",
                          json_string_value(json_object_get(v, "name")));
        }
    }
    json_decref(vectors);
    assert_int_equal(failed, 0);
}

static uint64_t rng;

static uint64_t next(void)
{
    /* xorshift64*: a seed replays the same trace on any machine. */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static uint64_t below(uint64_t n)
{
    return next() % n;
}

#define DIFF_POLICIES 12 /* every algorithm twice */
#define DIFF_FPS 5       /* fingerprints a trace's user tries */
/* The trace runs for DIFF_SECONDS and DIFF_STEPS_MIN steps at least,
 * however slow the machine, and DIFF_STEPS at most. */
#define DIFF_STEPS 20000
#define DIFF_STEPS_MIN 500
#define DIFF_SECONDS 3.0
#define AG_TEST_EPOCH_S 4102444800ull /* 2100-01-01: see next_time */

/* The next time of the trace after t. Mostly steps that land on the edges
 * where implementations part: the microseconds around a whole second (every
 * window here is whole seconds, aligned to the epoch), the same microsecond
 * again, a millisecond; sometimes a long gap. */
static uint64_t next_time(uint64_t t)
{
    uint64_t second = (t / 1000000 + 1) * 1000000;
    /* Rarely, about a day on: where a block level is forgotten. */
    if (below(64) == 0)
        return t + (uint64_t)AG_BLOCK_LEVEL_S * 1000000 - 2000000 +
               below(4000000);
    switch (below(8)) {
    case 0:
        return t;
    case 1:
        return t + 1 + below(1000);
    case 2:
        return t + 1000;
    case 3:
        return second - 1 + below(3);
    case 4:
        return second + 999 + below(3);
    case 5:
        return t + below(4000000);
    default:
        return t + below(400000);
    }
}

static void random_policy(struct ag_policy *p, int i)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "p%d", i);
    p->endpoint = AG_EP_LOGIN;
    p->key[0] = AG_KEY_USER;
    p->nkeys = 1;
    /* Every algorithm, twice at least. */
    p->algorithm = (enum ag_algorithm)(i < 2 * AG_ALG_STORE_COUNT
                                           ? i % AG_ALG_STORE_COUNT
                                           : (int)below(AG_ALG_STORE_COUNT));
    p->limit = 1 + (uint32_t)below(6);
    p->window_s = 1 + (uint32_t)below(3);
    p->block_s = below(4) == 0 ? 1 + (uint32_t)below(2) : 0;
    p->block_growth = p->block_s && below(2) ? 2 + (uint32_t)below(2) : 1;
    p->block_max_s = p->block_s + (uint32_t)below(6);
    /* A failure plan of the trace records its verifications. */
    if (p->algorithm == AG_ALG_CONVERSION)
        p->min_ratio_ppm = 1 + (uint32_t)below(AG_RATIO_ONE);
    p->enabled = true;
}

static void say_plan(const struct ag_plan *plan, const struct ag_policy *p)
{
    for (size_t k = 0; k < plan->n; k++) {
        const struct ag_policy *q = plan->ops[k].policy;
        print_error("  op %zu: %s %s limit %u window_s %u block_s %u "
                    "growth %u max %u member '%s' charge %d shadow %d%s\n",
                    k, q->name, ag_algorithm_name(q->algorithm), q->limit,
                    q->window_s, q->block_s, q->block_growth, q->block_max_s,
                    plan->ops[k].member, plan->ops[k].charge,
                    plan->ops[k].shadow,
                    plan->kind == AG_PLAN_FAILURE ? " (failure plan)"
                    : plan->kind == AG_PLAN_PEEK  ? " (peek)"
                                                  : "");
    }
    if (plan->kind == AG_PLAN_FAILURE && plan->fp[0])
        print_error("  fingerprint %s\n", plan->fp);
    (void)p;
}

static void both_stores_agree_on_a_random_trace(void **state)
{
    (void)state;
    const char *env_seed = getenv("AG_DIFF_SEED");
    uint64_t seed = env_seed ? strtoull(env_seed, NULL, 10)
                             : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    rng = seed ? seed : 1;
    print_message("differential seed %llu (AG_DIFF_SEED replays it)\n",
                  (unsigned long long)seed);
    struct ag_store *mem = ag_store_mem_new(1024, 100000, ag_fake_clock, NULL);
    assert_non_null(mem);
    ag_env.mem = mem; /* ag_env_stop frees it, even after a failure */
    struct ag_policy p[DIFF_POLICIES];
    for (int i = 0; i < DIFF_POLICIES; i++)
        random_policy(&p[i], i);
    uint64_t t = AG_TEST_EPOCH_S * 1000000 + below(1000000000000ull);
    /* One window for the trace's fingerprints: Redis's expiry of their set
     * runs on its own clock, far behind the trace's, so a shorter window
     * after a longer one would part the stores on when it is freed. */
    uint32_t fp_window_s = 1 + (uint32_t)below(3);
    double until = ag_env_mono_s() + DIFF_SECONDS;
    size_t step;
    for (step = 0; step < DIFF_STEPS &&
                   (step < DIFF_STEPS_MIN || ag_env_mono_s() < until);
         step++) {
        t = next_time(t);
        /* Now and then an admin lowers a limit. Not a distinct one: Redis
         * trims subjects seen in the same microsecond by their hash's
         * order, the fallback by its own (a documented difference). */
        if (below(200) == 0) {
            struct ag_policy *q = &p[below(DIFF_POLICIES)];
            if (q->algorithm != AG_ALG_DISTINCT && q->limit > 1)
                q->limit = 1 + (uint32_t)below(q->limit - 1);
        }
        /* Now and then the admin inspect's peek, which both stores must
         * answer alike and which must leave Redis as it was. */
        enum ag_plan_kind kind = AG_PLAN_CHECK;
        if (below(5) == 0)
            kind = AG_PLAN_FAILURE;
        else if (below(6) == 0)
            kind = AG_PLAN_PEEK;
        struct ag_plan plan = {.kind = kind};
        for (int i = 0; i < DIFF_POLICIES; i++) {
            if (below(3) == 0)
                continue;
            struct ag_limit_op *op = &plan.ops[plan.n++];
            op->policy = &p[i];
            snprintf(op->key, sizeof op->key, "ag:diff%llu:p%d",
                     (unsigned long long)seed, i);
            if (p[i].algorithm == AG_ALG_DISTINCT)
                snprintf(op->member, sizeof op->member, "subject%d",
                         (int)below(5));
            op->charge = below(10) != 0;
            op->shadow = below(10) == 0;
        }
        if (plan.n == 0)
            continue;
        if (plan.kind == AG_PLAN_FAILURE && below(2)) {
            snprintf(plan.fp, sizeof plan.fp, "fp%d", (int)below(DIFF_FPS));
            snprintf(plan.fp_key, sizeof plan.fp_key, "%sdiff%llu",
                     AG_FP_KEY_PREFIX, (unsigned long long)seed);
            plan.fp_window_s = fp_window_s;
        }
        /* Now and then a successful login clears its policies' keys. */
        if (below(50) == 0) {
            plan.kind = AG_PLAN_SUCCESS;
            assert_int_equal(ag_store_clear(mem, &plan), AG_OK);
            assert_int_equal(ag_store_clear(ag_env.store, &plan), AG_OK);
            continue;
        }
        struct ag_limit_result a[AG_PLAN_MAX], b[AG_PLAN_MAX];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        ag_fake_now = t;
        ag_env_set_time(NULL, t);
        char pattern[64];
        snprintf(pattern, sizeof pattern, "ag:diff%llu:*",
                 (unsigned long long)seed);
        struct ag_snapshot before = {0};
        if (kind == AG_PLAN_PEEK)
            ag_snapshot_take(&before, pattern);
        assert_int_equal(ag_store_check(mem, &plan, a), AG_OK);
        assert_int_equal(ag_store_check(ag_env.store, &plan, b), AG_OK);
        if (kind == AG_PLAN_PEEK) {
            bool held = ag_snapshot_holds(&before, pattern);
            ag_snapshot_free(&before);
            if (!held) {
                print_error("seed %llu step %zu: a peek changed Redis\n",
                            (unsigned long long)seed, step);
                say_plan(&plan, p);
                fail();
            }
        }
        for (size_t k = 0; k < plan.n; k++) {
            if (a[k].allowed == b[k].allowed &&
                a[k].remaining == b[k].remaining &&
                a[k].retry_after_ms == b[k].retry_after_ms &&
                a[k].reset_after_ms == b[k].reset_after_ms &&
                a[k].blocked_ms == b[k].blocked_ms &&
                a[k].block_level == b[k].block_level)
                continue;
            char ta[128], tb[128];
            ag_vectors_result_text(&a[k], ta, sizeof ta);
            ag_vectors_result_text(&b[k], tb, sizeof tb);
            print_error("seed %llu step %zu t_us %llu policy %s: memory %s, "
                        "redis %s\n",
                        (unsigned long long)seed, step, (unsigned long long)t,
                        plan.ops[k].policy->name, ta, tb);
            say_plan(&plan, p);
            fail();
        }
    }
    print_message("%zu steps agree\n", step);
    /* The trace must have run long enough to mean something. */
    assert_true(step >= DIFF_STEPS_MIN);
}

/* The admin inspect's peek on every kind of state a check leaves or
 * tidies: each algorithm's, a set with expired members and one over a
 * lowered limit, a running block and its level, a key of another type.
 * Every key's DUMP and expiry are the same after as before, however often
 * and whenever it peeks, while the peek still reads that state (the block
 * shows). */
static void a_peek_leaves_redis_byte_for_byte_as_it_found_it(void **state)
{
    (void)state;
    struct ag_policy p[AG_ALG_STORE_COUNT];
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++)
        ag_plan_policy(&p[a], (enum ag_algorithm)a, 4);
    struct ag_plan hist;
    ag_plan_history(p, "peek1", "", &hist);
    struct ag_limit_result res[AG_PLAN_MAX];
    /* A third member of the log and the set, in the window after. */
    snprintf(hist.ops[AG_ALG_DISTINCT].member, sizeof hist.ops[0].member, "c");
    ag_plan_run_at(AG_PLAN_BASE_US + 12 * AG_TEST_S_US, &hist, AG_PLAN_CHECK,
                   res);
    /* A policy with growing blocks, full and then blocked. */
    struct ag_policy blocking;
    ag_plan_policy(&blocking, AG_ALG_FIXED_WINDOW, 1);
    snprintf(blocking.name, sizeof blocking.name, "blocking");
    blocking.block_s = 15;
    blocking.block_growth = 2;
    blocking.block_max_s = 60;
    struct ag_plan block = {.kind = AG_PLAN_CHECK};
    ag_plan_op(&block, &blocking, "peek1", "", "");
    ag_plan_run_at(AG_PLAN_BASE_US + 12 * AG_TEST_S_US, &block, AG_PLAN_CHECK,
                   res);
    ag_plan_run_at(AG_PLAN_BASE_US + 12 * AG_TEST_S_US + 1, &block,
                   AG_PLAN_CHECK, res);
    assert_false(res[0].allowed);
    /* The peek: every policy, the log and the set again at a lowered
     * limit (their oldest members trimmed, if a check saw them), and a
     * fixed window on the log's key, a key of another type. */
    struct ag_policy low_log, low_set, other;
    ag_plan_policy(&low_log, AG_ALG_SLIDING_LOG, 1);
    ag_plan_policy(&low_set, AG_ALG_DISTINCT, 1);
    ag_plan_policy(&other, AG_ALG_FIXED_WINDOW, 4);
    struct ag_plan peek = hist;
    peek.ops[peek.n++] = block.ops[0];
    struct ag_limit_op *op = ag_plan_op(&peek, &low_log, "peek1", "", "");
    op = ag_plan_op(&peek, &low_set, "peek1", "", "a");
    op = ag_plan_op(&peek, &other, "peek1", "", "");
    snprintf(op->key, sizeof op->key, "%s", hist.ops[AG_ALG_SLIDING_LOG].key);
    struct ag_snapshot before = {0};
    ag_snapshot_take(&before, "ag:peek1:*");
    assert_true(before.keys->elements >= AG_ALG_STORE_COUNT + 2);
    /* While the block runs (from 12 s and 1 us, for 15 s), as the window
     * moves on (the members of 3 s leave it at 13 s), and once all but
     * the level has ended. */
    const uint64_t at[] = {AG_PLAN_BASE_US + 14 * AG_TEST_S_US,
                           AG_PLAN_BASE_US + 14 * AG_TEST_S_US,
                           AG_PLAN_BASE_US + 23 * AG_TEST_S_US + 500000,
                           AG_PLAN_BASE_US + 40 * AG_TEST_S_US};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        memset(res, 0, sizeof res);
        ag_plan_run_at(at[i], &peek, AG_PLAN_PEEK, res);
        assert_true(ag_snapshot_holds(&before, "ag:peek1:*"));
        if (i == 0) {
            assert_false(res[hist.n].allowed);
            /* 13 s and 1 us left, rounded up. */
            assert_int_equal(res[hist.n].blocked_ms, 13001);
            assert_int_equal(res[hist.n].block_level, 1);
        }
    }
    ag_snapshot_free(&before);
    /* And a check after the peeks is as a check without them: the one
     * blocked goes on to the second of its row, 2 x 15 s. */
    ag_plan_run_at(AG_PLAN_BASE_US + 40 * AG_TEST_S_US, &block, AG_PLAN_CHECK,
                   res);
    assert_true(res[0].allowed);
    ag_plan_run_at(AG_PLAN_BASE_US + 40 * AG_TEST_S_US + 1, &block,
                   AG_PLAN_CHECK, res);
    assert_false(res[0].allowed);
    assert_int_equal(res[0].retry_after_ms, 30000);
}

/* Issue 41: a distinct set that holds no one live asks Redis for no
 * subject (set_count removed every expired member: the set is empty). */
static void an_empty_distinct_set_asks_for_no_subject(void **state)
{
    (void)state;
    struct ag_policy set;
    ag_plan_policy(&set, AG_ALG_DISTINCT, 5);
    struct ag_plan plan = {.kind = AG_PLAN_CHECK};
    ag_plan_op(&plan, &set, "cost1", "", "a");
    struct ag_limit_result res[AG_PLAN_MAX];
    const uint64_t t0 = AG_PLAN_BASE_US, s = AG_TEST_S_US;
    long long scores = ag_env_calls("zscore");
    ag_plan_run_at(t0 + 1, &plan, AG_PLAN_CHECK, res);
    assert_int_equal(res[0].remaining, 4);
    assert_int_equal(ag_env_calls("zscore"), scores); /* a new set */
    ag_plan_run_at(t0 + 2 * s, &plan, AG_PLAN_CHECK, res);
    assert_int_equal(res[0].remaining, 4); /* a is known */
    assert_int_equal(ag_env_calls("zscore"), scores + 1);
    /* A window later a has expired: set_count removes it, and the set it
     * leaves is empty; a counts anew. */
    ag_plan_run_at(t0 + 12 * s + 1, &plan, AG_PLAN_CHECK, res);
    assert_int_equal(res[0].remaining, 4);
    assert_int_equal(ag_env_calls("zscore"), scores + 1);
    assert_int_equal(ag_env_int("ZCARD %s", plan.ops[0].key), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_vector_holds_on_redis),
        cmocka_unit_test(both_stores_agree_on_a_random_trace),
        cmocka_unit_test(a_peek_leaves_redis_byte_for_byte_as_it_found_it),
        cmocka_unit_test(an_empty_distinct_set_asks_for_no_subject),
    };
    return cmocka_run_group_tests(tests, ag_env_start, ag_env_stop);
}
