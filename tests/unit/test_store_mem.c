/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_store_mem: the in-process fallback store. The shared algorithm
 * vectors (tests/vectors/algorithms.json, which the Redis store is held to
 * as well) on a fake clock, one test case each; then what only this store
 * has: each algorithm's own vectors, clearing, its default clock, and the
 * memory bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_error.h"
#include "ag_store.h"
#include "ag_vectors.h"

static uint64_t fake_now;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* Epoch-aligned start, so fixed and sliding windows begin at 0. */
#define BASE_US 1000000000000ull
#define S(x) ((uint64_t)((x)*1000000.0))

static struct ag_policy make(const char *name, enum ag_algorithm alg,
                             uint32_t limit, uint32_t window_s,
                             uint32_t block_s)
{
    struct ag_policy p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.endpoint = AG_EP_LOGIN;
    p.key[0] = AG_KEY_USER;
    p.nkeys = 1;
    p.algorithm = alg;
    p.limit = limit;
    p.window_s = window_s;
    p.block_s = block_s;
    p.enabled = true;
    return p;
}

static void one_op(struct ag_plan *plan, const struct ag_policy *p,
                   const char *key, const char *member)
{
    struct ag_limit_op *op = &plan->ops[plan->n++];
    memset(op, 0, sizeof *op);
    op->policy = p;
    snprintf(op->key, sizeof op->key, "%s", key);
    snprintf(op->member, sizeof op->member, "%s", member ? member : "");
    op->charge = true;
}

struct step {
    double at_s;        /* seconds after BASE_US */
    const char *member; /* distinct: the subject */
    bool allowed;
    uint32_t remaining; /* after the request */
    uint64_t retry_ms;  /* denied only */
};

static void run(const struct ag_policy *p, const struct step *steps, size_t n)
{
    struct ag_store *s = ag_store_mem_new(64, 1000, fake_clock, NULL);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        fake_now = BASE_US + S(steps[i].at_s);
        struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
        one_op(&plan, p, "ag:t:k", steps[i].member);
        struct ag_limit_result res;
        assert_int_equal(ag_store_check(s, &plan, &res), AG_OK);
        if (res.allowed != steps[i].allowed ||
            res.remaining != steps[i].remaining ||
            (!res.allowed && res.retry_after_ms != steps[i].retry_ms))
            fail_msg("%s step %zu at %.2fs: got allowed=%d remaining=%u "
                     "retry=%llu, want %d %u %llu",
                     ag_algorithm_name(p->algorithm), i, steps[i].at_s,
                     res.allowed, res.remaining,
                     (unsigned long long)res.retry_after_ms, steps[i].allowed,
                     steps[i].remaining, (unsigned long long)steps[i].retry_ms);
    }
    ag_store_destroy(s);
}

static void sliding_log_vectors(void **state)
{
    (void)state;
    struct ag_policy p = make("t", AG_ALG_SLIDING_LOG, 2, 10, 0);
    const struct step steps[] = {
        {0, NULL, true, 1, 0},       {1, NULL, true, 0, 0},
        {2, NULL, false, 0, 8000}, /* the first expires at 10 s */
        {10, NULL, true, 0, 0},    /* 0 s has left the window (0, 10] */
        {10.5, NULL, false, 0, 500},
    };
    run(&p, steps, sizeof steps / sizeof steps[0]);
}

static void fixed_window_vectors(void **state)
{
    (void)state;
    struct ag_policy p = make("t", AG_ALG_FIXED_WINDOW, 2, 10, 0);
    const struct step steps[] = {
        {0, NULL, true, 1, 0},      {9, NULL, true, 0, 0},
        {9.5, NULL, false, 0, 500}, /* until the window ends */
        {10, NULL, true, 1, 0},     /* a new window: twice the limit in 1 s */
        {10.1, NULL, true, 0, 0},
    };
    run(&p, steps, sizeof steps / sizeof steps[0]);
}

static void sliding_window_vectors(void **state)
{
    (void)state;
    struct ag_policy p = make("t", AG_ALG_SLIDING_WINDOW, 2, 10, 0);
    const struct step steps[] = {
        {0, NULL, true, 1, 0},
        {1, NULL, true, 0, 0},
        /* estimate 2: full; the next window admits once 2 * (1 - e/10) + 1
         * <= 2, i.e. e = 5 s into it: 8 + 5 s from now. */
        {2, NULL, false, 0, 13000},
        {15, NULL, true, 0, 0}, /* estimate 2 * 0.5 = 1 */
        /* 2 * (1 - 0.55) + 1: one more only at the window end, 4.5 s. */
        {15.5, NULL, false, 0, 4500},
    };
    run(&p, steps, sizeof steps / sizeof steps[0]);
}

static void token_bucket_vectors(void **state)
{
    (void)state;
    struct ag_policy p = make("t", AG_ALG_TOKEN_BUCKET, 2, 10, 0);
    const struct step steps[] = {
        {0, NULL, true, 1, 0},
        {0, NULL, true, 0, 0},
        {0, NULL, false, 0, 5000}, /* 0.2 tokens a second */
        {5, NULL, true, 0, 0},
        {20, NULL, true, 1, 0}, /* full again, never more than 2 */
    };
    run(&p, steps, sizeof steps / sizeof steps[0]);
}

static void distinct_vectors(void **state)
{
    (void)state;
    struct ag_policy p = make("t", AG_ALG_DISTINCT, 2, 10, 0);
    const struct step steps[] = {
        {0, "aaaa", true, 1, 0},
        {1, "bbbb", true, 0, 0},
        {2, "cccc", false, 0, 8000},
        {3, "aaaa", true, 0, 0},    /* already seen: not a new one */
        {11.5, "cccc", true, 0, 0}, /* b left at 11; a stays (seen at 3) */
    };
    run(&p, steps, sizeof steps / sizeof steps[0]);
}

static void block_outlasts_the_window(void **state)
{
    (void)state;
    struct ag_policy p = make("t", AG_ALG_SLIDING_LOG, 1, 1, 5);
    const struct step steps[] = {
        {0, NULL, true, 0, 0},
        {0.1, NULL, false, 0, 5000},
        {2, NULL, false, 0, 3100}, /* window empty, block not over */
        {5.2, NULL, true, 0, 0},
    };
    run(&p, steps, sizeof steps / sizeof steps[0]);
}

static void denied_check_records_in_no_policy(void **state)
{
    (void)state;
    struct ag_store *s = ag_store_mem_new(64, 1000, fake_clock, NULL);
    struct ag_policy tight = make("tight", AG_ALG_SLIDING_LOG, 1, 60, 0);
    struct ag_policy loose = make("loose", AG_ALG_FIXED_WINDOW, 5, 60, 0);
    struct ag_limit_result res[2];
    fake_now = BASE_US;
    for (int i = 0; i < 3; i++) {
        struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
        one_op(&plan, &tight, "ag:tight:k", NULL);
        one_op(&plan, &loose, "ag:loose:k", NULL);
        assert_int_equal(ag_store_check(s, &plan, res), AG_OK);
        assert_int_equal(res[0].allowed, i == 0);
        /* loose holds the one allowed attempt only. */
        assert_int_equal(res[1].remaining, 4);
    }
    ag_store_destroy(s);
}

static void failure_plans_record_each_policy_alone(void **state)
{
    (void)state;
    struct ag_store *s = ag_store_mem_new(64, 1000, fake_clock, NULL);
    struct ag_policy a = make("a", AG_ALG_SLIDING_LOG, 1, 60, 0);
    struct ag_policy b = make("b", AG_ALG_SLIDING_LOG, 3, 60, 0);
    struct ag_limit_result res[2];
    fake_now = BASE_US;
    for (int i = 0; i < 3; i++) {
        struct ag_plan plan = {.kind = AG_PLAN_FAILURE, .n = 0};
        one_op(&plan, &a, "ag:a:k", NULL);
        one_op(&plan, &b, "ag:b:k", NULL);
        assert_int_equal(ag_store_check(s, &plan, res), AG_OK);
    }
    /* a was full after one; b recorded all three regardless. */
    assert_int_equal(res[1].remaining, 0);
    struct ag_plan clear = {.kind = AG_PLAN_SUCCESS, .n = 0};
    one_op(&clear, &b, "ag:b:k", NULL);
    assert_int_equal(ag_store_clear(s, &clear), AG_OK);
    struct ag_plan check = {.kind = AG_PLAN_CHECK, .n = 0};
    one_op(&check, &b, "ag:b:k", NULL);
    check.ops[0].charge = false;
    assert_int_equal(ag_store_check(s, &check, res), AG_OK);
    assert_int_equal(res[0].remaining, 3);
    ag_store_destroy(s);
}

static void keys_and_members_are_bounded(void **state)
{
    (void)state;
    /* 16 slots and 20 members in all, under 1000 keys of limit 10. */
    struct ag_store *s = ag_store_mem_new(16, 20, fake_clock, NULL);
    struct ag_policy p = make("t", AG_ALG_SLIDING_LOG, 10, 60, 0);
    fake_now = BASE_US;
    for (int i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof key, "ag:t:%d", i % 100);
        struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
        one_op(&plan, &p, key, NULL);
        struct ag_limit_result res;
        assert_int_equal(ag_store_check(s, &plan, &res), AG_OK);
        /* Never more remaining than the limit, nor a crash or a leak
         * (the sanitizers watch) when a key is evicted or cannot grow. */
        assert_true(res.remaining <= 10);
        fake_now += 1000;
    }
    ag_store_destroy(s);
}

/* A full table: making room for one policy's new key (a block, here)
 * must not evict the slot of another policy of the same check, which the
 * check still reads (its reset). All eight keys share the one probe
 * window of an eight-slot table. */
static void room_for_a_key_never_evicts_a_slot_the_check_reads(void **state)
{
    (void)state;
    struct ag_store *s = ag_store_mem_new(8, 1000, fake_clock, NULL);
    assert_non_null(s);
    struct ag_policy a = make("a", AG_ALG_SLIDING_LOG, 1, 100, 50);
    struct ag_policy b = make("b", AG_ALG_SLIDING_LOG, 1, 10, 0);
    struct ag_policy filler = make("f", AG_ALG_SLIDING_LOG, 5, 100, 0);
    struct ag_limit_result res[2];
    fake_now = BASE_US;
    /* b expires first: the slot eviction would pick. */
    const char *keys[] = {"ag:b:k", "ag:a:k", "ag:f:1", "ag:f:2",
                          "ag:f:3", "ag:f:4", "ag:f:5", "ag:f:6"};
    for (size_t i = 0; i < 8; i++) {
        struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
        one_op(&plan, i == 0 ? &b : i == 1 ? &a : &filler, keys[i], NULL);
        assert_int_equal(ag_store_check(s, &plan, res), AG_OK);
        assert_true(res[0].allowed);
    }
    fake_now = BASE_US + S(1);
    struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
    one_op(&plan, &a, "ag:a:k", NULL); /* denies and blocks: a new key */
    one_op(&plan, &b, "ag:b:k", NULL); /* full too; its reset is read late */
    assert_int_equal(ag_store_check(s, &plan, res), AG_OK);
    assert_false(res[0].allowed);
    assert_int_equal(res[0].retry_after_ms,
                     99000); /* its log outlasts the block */
    assert_false(res[1].allowed);
    assert_int_equal(res[1].retry_after_ms, 9000);
    assert_int_equal(res[1].reset_after_ms, 9000);
    /* b's log is still there: at 5 s it still denies. */
    fake_now = BASE_US + S(5);
    plan.n = 0;
    one_op(&plan, &b, "ag:b:k", NULL);
    assert_int_equal(ag_store_check(s, &plan, res), AG_OK);
    assert_false(res[0].allowed);
    assert_int_equal(res[0].retry_after_ms, 5000);
    ag_store_destroy(s);
}

static void member_budget_counts_allocated_slots(void **state)
{
    (void)state;
    /* 20 member slots in all: two logs of limit 10 take them all, so a
     * third key can record nothing (and says so by not counting down). */
    struct ag_store *s = ag_store_mem_new(64, 20, fake_clock, NULL);
    struct ag_policy p = make("t", AG_ALG_SLIDING_LOG, 10, 60, 0);
    struct ag_limit_result res;
    fake_now = BASE_US;
    static const char *const keys[] = {"ag:t:a", "ag:t:b"};
    for (size_t k = 0; k < 2; k++)
        for (int i = 0; i < 10; i++) {
            struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
            one_op(&plan, &p, keys[k], NULL);
            assert_int_equal(ag_store_check(s, &plan, &res), AG_OK);
            assert_int_equal(res.remaining, 9 - i);
        }
    for (int i = 0; i < 2; i++) {
        struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
        one_op(&plan, &p, "ag:t:c", NULL);
        assert_int_equal(ag_store_check(s, &plan, &res), AG_OK);
        assert_true(res.allowed);
        assert_int_equal(res.remaining, 10);
    }
    ag_store_destroy(s);
}

static uint64_t realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Redis TIME is the Unix time: a fallback on the monotonic clock would put
 * its window edges elsewhere, and a policy would reset at another moment
 * the instant Redis went down. */
static void default_clock_aligns_windows_to_the_unix_epoch(void **state)
{
    (void)state;
    struct ag_store *s = ag_store_mem_new(64, 1000, NULL, NULL);
    struct ag_policy p = make("t", AG_ALG_FIXED_WINDOW, 5, 3600, 0);
    struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
    one_op(&plan, &p, "ag:t:k", NULL);
    struct ag_limit_result res;
    uint64_t w = 3600u * 1000000u;
    uint64_t before = realtime_us();
    assert_int_equal(ag_store_check(s, &plan, &res), AG_OK);
    uint64_t after = realtime_us();
    /* Until the next whole hour of Unix time, as seen either side. */
    uint64_t most = (w - before % w + 999) / 1000;
    uint64_t least = (w - after % w) / 1000;
    if (before / w != after / w) /* the hour turned during the check */
        least = 0;
    ag_store_destroy(s);
    assert_in_range(res.reset_after_ms, least, most);
}

static void set_fake_time(void *ctx, uint64_t t_us)
{
    (void)ctx;
    fake_now = t_us;
}

/* One shared vector (the test's state), on a store of its own. */
static void shared_vector_holds(void **state)
{
    struct ag_store *s = ag_store_mem_new(64, 1000, fake_clock, NULL);
    assert_non_null(s);
    char why[512];
    int rc =
        ag_vectors_run(*state, s, "v", set_fake_time, NULL, why, sizeof why);
    ag_store_destroy(s);
    if (rc)
        fail_msg("%s", why);
}

static int run_shared_vectors(void)
{
    json_t *root = ag_vectors_load();
    const json_t *list = json_object_get(root, "vectors");
    size_t n = json_array_size(list);
    struct CMUnitTest *tests = calloc(n, sizeof *tests);
    assert_non_null(tests);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(list, i);
        tests[i].name = json_string_value(json_object_get(v, "name"));
        tests[i].test_func = shared_vector_holds;
        tests[i].initial_state = v;
    }
    int failed =
        _cmocka_run_group_tests("shared_vectors", tests, n, NULL, NULL);
    free(tests);
    json_decref(root);
    return failed;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sliding_log_vectors),
        cmocka_unit_test(fixed_window_vectors),
        cmocka_unit_test(sliding_window_vectors),
        cmocka_unit_test(token_bucket_vectors),
        cmocka_unit_test(distinct_vectors),
        cmocka_unit_test(block_outlasts_the_window),
        cmocka_unit_test(denied_check_records_in_no_policy),
        cmocka_unit_test(failure_plans_record_each_policy_alone),
        cmocka_unit_test(keys_and_members_are_bounded),
        cmocka_unit_test(room_for_a_key_never_evicts_a_slot_the_check_reads),
        cmocka_unit_test(member_budget_counts_allocated_slots),
        cmocka_unit_test(default_clock_aligns_windows_to_the_unix_epoch),

    };
    int failed = run_shared_vectors();
    return failed + cmocka_run_group_tests(tests, NULL, NULL);
}
