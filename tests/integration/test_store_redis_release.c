/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store's paths beside a check, on the test clock: reserve and
 * release (the cluster store's two halves of a check), each algorithm's
 * undo left as it was found, refused where Redis refuses functions or
 * without a nonce; a clear's keys; and a command sent beside the limits,
 * answered to its caller. The in-process store has none of them. Starts
 * its own redis-server (ag_test_redis.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <semaphore.h>
#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_redis_reply.h"
#include "ag_store.h"
#include "ag_test_redis.h"
#include "ag_vectors.h"

static void assert_same_answer(const struct ag_limit_result *got,
                               const struct ag_limit_result *want,
                               const char *what)
{
    if (got->allowed == want->allowed && got->remaining == want->remaining &&
        got->retry_after_ms == want->retry_after_ms &&
        got->reset_after_ms == want->reset_after_ms)
        return;
    char tg[128], tw[128];
    ag_vectors_result_text(got, tg, sizeof tg);
    ag_vectors_result_text(want, tw, sizeof tw);
    fail_msg("%s: released %s, never reserved %s", what, tg, tw);
}

static void
a_released_reserve_leaves_every_algorithm_as_it_found_it(void **state)
{
    (void)state;
    struct ag_policy p[AG_ALG_STORE_COUNT];
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++)
        ag_plan_policy(&p[a], (enum ag_algorithm)a, 4);
    /* A block on one: the reserve then has a block key, the release none. */
    p[AG_ALG_FIXED_WINDOW].block_s = 5;
    struct ag_plan mine, ref;
    ag_plan_history(p, "rel1", "", &mine);
    ag_plan_history(p, "rel1", ":ref", &ref);
    uint64_t t = AG_PLAN_BASE_US + 12 * AG_TEST_S_US + 500000;
    /* A subject neither has seen. */
    snprintf(mine.ops[AG_ALG_DISTINCT].member, sizeof mine.ops[0].member, "c");
    snprintf(ref.ops[AG_ALG_DISTINCT].member, sizeof ref.ops[0].member, "c");
    snprintf(mine.nonce, sizeof mine.nonce, "rel1-nonce");
    struct ag_limit_result reserved[AG_PLAN_MAX], again[AG_PLAN_MAX];
    memset(reserved, 0, sizeof reserved);
    ag_plan_run_at(t, &mine, AG_PLAN_RESERVE, reserved);
    /* Each algorithm's undo token. */
    uint64_t window_idx = t / (AG_PLAN_WINDOW_S * AG_TEST_S_US);
    uint64_t want_undo[AG_ALG_STORE_COUNT];
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++)
        want_undo[a] = 1;
    want_undo[AG_ALG_FIXED_WINDOW] = window_idx;
    want_undo[AG_ALG_SLIDING_WINDOW] = window_idx;
    want_undo[AG_ALG_CONVERSION] = window_idx;
    want_undo[AG_ALG_CONSECUTIVE] = 0; /* a check does not charge it */
    for (size_t i = 0; i < mine.n; i++) {
        assert_true(reserved[i].allowed);
        assert_int_equal(reserved[i].undo, want_undo[p[i].algorithm]);
    }
    const char *log_key = mine.ops[AG_ALG_SLIDING_LOG].key;
    const char *set_key = mine.ops[AG_ALG_DISTINCT].key;
    assert_int_equal(ag_env_int("ZCARD %s", log_key), 3);
    assert_int_equal(ag_env_int("ZCARD %s", set_key), 3);
    ag_plan_run_at(t, &mine, AG_PLAN_RELEASE, reserved);
    /* The release wrote nothing into the results it read. */
    for (size_t i = 0; i < mine.n; i++)
        assert_int_equal(reserved[i].undo, want_undo[p[i].algorithm]);
    assert_int_equal(ag_env_int("ZCARD %s", log_key), 2);
    assert_int_equal(ag_env_int("ZCARD %s", set_key), 2);
    assert_false(ag_env_has(set_key, "c"));
    /* The same check on both sets of keys, at the same time: the same
     * answers, as if the reserve had never been. */
    mine.nonce[0] = '\0';
    struct ag_limit_result want[AG_PLAN_MAX];
    ag_plan_run_at(t, &ref, AG_PLAN_CHECK, want);
    ag_plan_run_at(t, &mine, AG_PLAN_CHECK, again);
    for (size_t i = 0; i < mine.n; i++)
        assert_same_answer(&again[i], &want[i], p[i].name);
}

static void
a_reserve_whose_group_denies_charges_none_of_its_policies(void **state)
{
    (void)state;
    struct ag_policy p[AG_ALG_STORE_COUNT];
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++)
        ag_plan_policy(&p[a], (enum ag_algorithm)a, 4);
    struct ag_policy full;
    ag_plan_policy(&full, AG_ALG_FIXED_WINDOW, 1);
    snprintf(full.name, sizeof full.name, "full");
    uint64_t t = AG_PLAN_BASE_US + 4 * AG_TEST_S_US;
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result res[AG_PLAN_MAX];
    ag_plan_op(&plan, &full, "rel2", "", "");
    ag_plan_run_at(t, &plan, AG_PLAN_CHECK, res);
    assert_true(res[0].allowed);
    /* Now the full policy denies, and the group's others are allowed. */
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++)
        ag_plan_op(&plan, &p[a], "rel2", "", "s");
    snprintf(plan.nonce, sizeof plan.nonce, "rel2-nonce");
    memset(res, 0xff, sizeof res);
    ag_plan_run_at(t, &plan, AG_PLAN_RESERVE, res);
    assert_false(res[0].allowed);
    for (size_t i = 0; i < plan.n; i++) {
        assert_true(i == 0 || res[i].allowed);
        assert_int_equal(res[i].undo, 0);
    }
    /* Nothing of theirs was written: no key for any of them. */
    for (size_t i = 1; i < plan.n; i++)
        assert_int_equal(ag_env_int("EXISTS %s", plan.ops[i].key), 0);
    /* And the denying policy still holds its one count. */
    char n[32];
    ag_env_field(plan.ops[0].key, "n", n, sizeof n);
    assert_string_equal(n, "1");
}

static void releasing_a_known_subject_leaves_it_known(void **state)
{
    (void)state;
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_DISTINCT, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result res[AG_PLAN_MAX];
    ag_plan_op(&plan, &p, "rel3", "", "known");
    ag_plan_run_at(AG_PLAN_BASE_US + 1 * AG_TEST_S_US, &plan, AG_PLAN_CHECK,
                   res);
    snprintf(plan.nonce, sizeof plan.nonce, "rel3-nonce");
    ag_plan_run_at(AG_PLAN_BASE_US + 2 * AG_TEST_S_US, &plan, AG_PLAN_RESERVE,
                   res);
    assert_true(res[0].allowed);
    assert_int_equal(res[0].undo, 0);
    ag_plan_run_at(AG_PLAN_BASE_US + 2 * AG_TEST_S_US, &plan, AG_PLAN_RELEASE,
                   res);
    assert_true(ag_env_has(plan.ops[0].key, "known"));
    assert_int_equal(ag_env_int("ZCARD %s", plan.ops[0].key), 1);
}

static void
a_fixed_window_release_after_the_window_moved_on_keeps_the_new_one(void **state)
{
    (void)state;
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_FIXED_WINDOW, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX], res[AG_PLAN_MAX];
    ag_plan_op(&plan, &p, "rel4", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel4-nonce");
    ag_plan_run_at(AG_PLAN_BASE_US + 5 * AG_TEST_S_US, &plan, AG_PLAN_RESERVE,
                   reserved);
    assert_int_equal(reserved[0].undo,
                     AG_PLAN_BASE_US / (AG_PLAN_WINDOW_S * AG_TEST_S_US));
    /* The next window counts one check, then the late release comes. */
    ag_plan_run_at(AG_PLAN_BASE_US + 12 * AG_TEST_S_US, &plan, AG_PLAN_CHECK,
                   res);
    assert_int_equal(res[0].remaining, 2);
    ag_plan_run_at(AG_PLAN_BASE_US + 13 * AG_TEST_S_US, &plan, AG_PLAN_RELEASE,
                   reserved);
    char n[32];
    ag_env_field(plan.ops[0].key, "n", n, sizeof n);
    assert_string_equal(n, "1");
    ag_plan_run_at(AG_PLAN_BASE_US + 13 * AG_TEST_S_US, &plan, AG_PLAN_CHECK,
                   res);
    assert_int_equal(res[0].remaining, 1);
}

static void
a_sliding_window_release_a_window_later_takes_from_the_previous(void **state)
{
    (void)state;
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_SLIDING_WINDOW, 4);
    struct ag_plan plan = {.n = 0}, ref = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX], res[AG_PLAN_MAX];
    struct ag_limit_result want[AG_PLAN_MAX];
    ag_plan_op(&plan, &p, "rel9", "", "");
    ag_plan_op(&ref, &p, "rel9", ":ref", "");
    /* Both count one check in window 0. */
    ag_plan_run_at(AG_PLAN_BASE_US + 1 * AG_TEST_S_US, &plan, AG_PLAN_CHECK,
                   res);
    ag_plan_run_at(AG_PLAN_BASE_US + 1 * AG_TEST_S_US, &ref, AG_PLAN_CHECK,
                   res);
    snprintf(plan.nonce, sizeof plan.nonce, "rel9-nonce");
    ag_plan_run_at(AG_PLAN_BASE_US + 2 * AG_TEST_S_US, &plan, AG_PLAN_RESERVE,
                   reserved);
    plan.nonce[0] = '\0';
    /* A check in window 1 moves the hash on: the reserve's count is now
     * its previous window's. */
    ag_plan_run_at(AG_PLAN_BASE_US + 11 * AG_TEST_S_US, &plan, AG_PLAN_CHECK,
                   res);
    ag_plan_run_at(AG_PLAN_BASE_US + 11 * AG_TEST_S_US, &ref, AG_PLAN_CHECK,
                   res);
    char prev[32];
    ag_env_field(plan.ops[0].key, "p", prev, sizeof prev);
    assert_string_equal(prev, "2");
    snprintf(plan.nonce, sizeof plan.nonce, "rel9-nonce");
    ag_plan_run_at(AG_PLAN_BASE_US + 12 * AG_TEST_S_US, &plan, AG_PLAN_RELEASE,
                   reserved);
    plan.nonce[0] = '\0';
    ag_env_field(plan.ops[0].key, "p", prev, sizeof prev);
    assert_string_equal(prev, "1");
    ag_plan_run_at(AG_PLAN_BASE_US + 12 * AG_TEST_S_US, &ref, AG_PLAN_CHECK,
                   want);
    ag_plan_run_at(AG_PLAN_BASE_US + 12 * AG_TEST_S_US, &plan, AG_PLAN_CHECK,
                   res);
    assert_same_answer(&res[0], &want[0], "sliding_window");
}

static void a_token_bucket_release_never_fills_it_past_its_limit(void **state)
{
    (void)state;
    struct ag_policy p;
    /* Two tokens, one back every five seconds. */
    ag_plan_policy(&p, AG_ALG_TOKEN_BUCKET, 2);
    struct ag_plan plan = {.n = 0}, fresh = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX], res[AG_PLAN_MAX];
    struct ag_limit_result want[AG_PLAN_MAX];
    ag_plan_op(&plan, &p, "rel5", "", "");
    ag_plan_op(&fresh, &p, "rel5", ":fresh", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel5-nonce");
    uint64_t t = AG_PLAN_BASE_US + 1 * AG_TEST_S_US;
    ag_plan_run_at(t, &plan, AG_PLAN_RESERVE, reserved);
    assert_int_equal(reserved[0].undo, 1);
    assert_int_equal(reserved[0].remaining, 1);
    /* Four seconds on, 1.8 tokens: the one given back would make 2.8. */
    ag_plan_run_at(t + 4 * AG_TEST_S_US, &plan, AG_PLAN_RELEASE, reserved);
    char tokens[32];
    ag_env_field(plan.ops[0].key, "t", tokens, sizeof tokens);
    assert_string_equal(tokens, "2");
    /* So it answers as a full bucket does. */
    ag_plan_run_at(t + 4 * AG_TEST_S_US, &fresh, AG_PLAN_CHECK, want);
    ag_plan_run_at(t + 4 * AG_TEST_S_US, &plan, AG_PLAN_CHECK, res);
    assert_same_answer(&res[0], &want[0], "token_bucket");
}

static void a_release_with_a_nonce_not_in_the_log_removes_nothing(void **state)
{
    (void)state;
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX];
    ag_plan_op(&plan, &p, "rel6", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel6-reserved");
    ag_plan_run_at(AG_PLAN_BASE_US + 1 * AG_TEST_S_US, &plan, AG_PLAN_RESERVE,
                   reserved);
    assert_int_equal(reserved[0].undo, 1);
    snprintf(plan.nonce, sizeof plan.nonce, "rel6-other");
    ag_plan_run_at(AG_PLAN_BASE_US + 1 * AG_TEST_S_US, &plan, AG_PLAN_RELEASE,
                   reserved);
    assert_int_equal(ag_env_int("ZCARD %s", plan.ops[0].key), 1);
    assert_true(ag_env_has(plan.ops[0].key, "rel6-reserved"));
}

/* A peek leaves the library's `peeking` set; the release after it must
 * still tidy as a write does: a key of another type (an edited policy's
 * old algorithm) is deleted. */
static void a_release_after_a_peek_deletes_a_key_of_another_type(void **state)
{
    (void)state;
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result res[AG_PLAN_MAX];
    ag_plan_op(&plan, &p, "rel11", "", "");
    redisReply *r =
        redisCommand(ag_env.ctx, "SET %s old-type", plan.ops[0].key);
    assert_non_null(r);
    freeReplyObject(r);
    ag_plan_run_at(AG_PLAN_BASE_US + 1 * AG_TEST_S_US, &plan, AG_PLAN_PEEK,
                   res);
    assert_int_equal(ag_env_int("EXISTS %s", plan.ops[0].key), 1);
    snprintf(plan.nonce, sizeof plan.nonce, "rel11-nonce");
    res[0].undo = 1;
    ag_plan_run_at(AG_PLAN_BASE_US + 1 * AG_TEST_S_US, &plan, AG_PLAN_RELEASE,
                   res);
    assert_int_equal(ag_env_int("EXISTS %s", plan.ops[0].key), 0);
}

/* A clear (a successful login, an admin reset) deletes every key of each
 * policy: the state, its block and level, and its lockout marker, so that
 * the key's next lockout is an event again. Nothing else. */
static void a_clear_deletes_the_state_block_level_and_marker(void **state)
{
    (void)state;
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_FIXED_WINDOW, 3);
    struct ag_plan plan = {.kind = AG_PLAN_SUCCESS};
    ag_plan_op(&plan, &p, "clear1", "", "");
    const char *suffixes[] = {"", AG_BLOCK_SUFFIX, AG_LEVEL_SUFFIX,
                              AG_MARK_SUFFIX, ":other"};
    char keys[5][AG_STORE_KEY_MAX + 8];
    for (size_t i = 0; i < 5; i++) {
        snprintf(keys[i], sizeof keys[i], "%s%s", plan.ops[0].key, suffixes[i]);
        redisReply *r = redisCommand(ag_env.ctx, "SET %s 1", keys[i]);
        assert_non_null(r);
        freeReplyObject(r);
    }
    assert_int_equal(ag_store_clear(ag_env.store, &plan), AG_OK);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(ag_env_int("EXISTS %s", keys[i]), 0);
    assert_int_equal(ag_env_int("EXISTS %s", keys[4]), 1);
}

static void a_reserve_or_release_without_a_nonce_is_refused(void **state)
{
    (void)state;
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.kind = AG_PLAN_RESERVE};
    struct ag_limit_result res[AG_PLAN_MAX];
    memset(res, 0, sizeof res);
    ag_plan_op(&plan, &p, "rel7", "", "");
    ag_env_set_time(NULL, AG_PLAN_BASE_US);
    assert_int_equal(ag_store_check(ag_env.store, &plan, res), AG_EINVAL);
    res[0].undo = 1;
    plan.kind = AG_PLAN_RELEASE;
    assert_int_equal(ag_store_check(ag_env.store, &plan, res), AG_EINVAL);
    assert_int_equal(ag_env_int("EXISTS %s", plan.ops[0].key), 0);
}

/* A Redis user that may not use functions: the store runs checks as
 * scripts, and a reserve, which needs the library, is not sent at all. */
static void a_reserve_is_refused_where_redis_refuses_functions(void **state)
{
    (void)state;
    redisReply *r =
        redisCommand(ag_env.ctx, "ACL SETUSER nofunctions on >pw ~* &* +@all "
                                 "-fcall -fcall_ro -function");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    struct ag_redis_addr addr = {.kind = AG_REDIS_UNIX};
    snprintf(addr.path, sizeof addr.path, "%s", ag_env.sock);
    snprintf(addr.user, sizeof addr.user, "nofunctions");
    snprintf(addr.password, sizeof addr.password, "pw");
    struct ag_store *scripts = ag_env_store(&addr);
    assert_non_null(scripts);
    int ping = ag_store_ping(scripts);
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.kind = AG_PLAN_RESERVE};
    struct ag_limit_result res[AG_PLAN_MAX];
    memset(res, 0, sizeof res);
    ag_plan_op(&plan, &p, "rel10", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel10-nonce");
    int reserve = ag_store_check(scripts, &plan, res);
    res[0].undo = 1;
    plan.kind = AG_PLAN_RELEASE;
    int release = ag_store_check(scripts, &plan, res);
    ag_store_destroy(scripts);
    assert_int_equal(ping, AG_OK);
    assert_int_equal(reserve, AG_EINVAL);
    assert_int_equal(release, AG_EINVAL);
    assert_int_equal(ag_env_int("EXISTS %s", plan.ops[0].key), 0);
    /* The store that may use functions reserves on the same key. */
    plan.kind = AG_PLAN_RESERVE;
    ag_plan_run_at(AG_PLAN_BASE_US, &plan, AG_PLAN_RESERVE, res);
    assert_int_equal(res[0].undo, 1);
}

static void the_memory_store_refuses_a_reserve_and_a_release(void **state)
{
    (void)state;
    struct ag_store *mem = ag_store_mem_new(16, 16, ag_fake_clock, NULL);
    assert_non_null(mem);
    struct ag_policy p;
    ag_plan_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.kind = AG_PLAN_RESERVE};
    struct ag_limit_result res[AG_PLAN_MAX];
    memset(res, 0, sizeof res);
    ag_plan_op(&plan, &p, "rel8", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel8-nonce");
    int reserve = ag_store_check(mem, &plan, res);
    plan.kind = AG_PLAN_RELEASE;
    int release = ag_store_check(mem, &plan, res);
    plan.kind = AG_PLAN_CHECK;
    int check = ag_store_check(mem, &plan, res);
    ag_store_destroy(mem);
    assert_int_equal(reserve, AG_EINVAL);
    assert_int_equal(release, AG_EINVAL);
    assert_int_equal(check, AG_OK);
}

/* A command_async's answer, waited for by the test. */
struct answer {
    sem_t done;
    int rc;
    int type;
    char str[64];
};

static void answered(void *arg, int rc, const void *reply)
{
    struct answer *a = arg;
    const redisReply *r = reply;
    a->rc = rc;
    a->type = r ? r->type : -1;
    snprintf(a->str, sizeof a->str, "%s", r && r->str ? r->str : "");
    sem_post(&a->done);
}

static struct answer *send_cmd(int argc, const char **argv)
{
    static struct answer a;
    size_t lens[8];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    sem_init(&a.done, 0, 0);
    assert_int_equal(
        ag_store_command_async(ag_env.store, argc, argv, lens, 1, answered, &a),
        AG_OK);
    sem_wait(&a.done);
    sem_destroy(&a.done);
    return &a;
}

static void a_command_beside_the_limits_answers_its_caller(void **state)
{
    (void)state;
    const char *set[] = {"SET", "ag:cmd:m:e", "1", "NX", "PX", "60000"};
    struct answer *a = send_cmd(6, set);
    assert_int_equal(a->rc, AG_OK);
    assert_int_equal(a->type, REDIS_REPLY_STATUS);
    assert_string_equal(a->str, "OK");
    /* The marker is set: the second SET NX answers nil. */
    a = send_cmd(6, set);
    assert_int_equal(a->rc, AG_OK);
    assert_int_equal(a->type, REDIS_REPLY_NIL);
    /* An error reply is an answer too, for the caller to judge. */
    const char *bad[] = {"INCR", "ag:cmd:m:e", "x"};
    a = send_cmd(3, bad);
    assert_int_equal(a->rc, AG_OK);
    assert_int_equal(a->type, REDIS_REPLY_ERROR);
    /* Waiting: the reply is the caller's. */
    const char *xadd[] = {"XADD", "ag:cmd:s", "*", "event", "{}"};
    size_t xlens[] = {4, 8, 1, 5, 2};
    void *reply = NULL;
    assert_int_equal(ag_store_command(ag_env.store, 5, xadd, xlens, 1, &reply),
                     AG_OK);
    assert_int_equal(((redisReply *)reply)->type, REDIS_REPLY_STRING);
    ag_redis_reply_free(reply);
    /* A store without Redis has no commands. */
    struct ag_store *mem = ag_store_mem_new(16, 16, ag_fake_clock, NULL);
    assert_int_equal(
        ag_store_command_async(mem, 5, xadd, xlens, 1, answered, NULL),
        AG_EINVAL);
    assert_int_equal(ag_store_command(mem, 5, xadd, xlens, 1, &reply),
                     AG_EINVAL);
    ag_store_destroy(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            a_released_reserve_leaves_every_algorithm_as_it_found_it),
        cmocka_unit_test(
            a_reserve_whose_group_denies_charges_none_of_its_policies),
        cmocka_unit_test(releasing_a_known_subject_leaves_it_known),
        cmocka_unit_test(
            a_fixed_window_release_after_the_window_moved_on_keeps_the_new_one),
        cmocka_unit_test(
            a_sliding_window_release_a_window_later_takes_from_the_previous),
        cmocka_unit_test(a_token_bucket_release_never_fills_it_past_its_limit),
        cmocka_unit_test(a_release_with_a_nonce_not_in_the_log_removes_nothing),
        cmocka_unit_test(a_release_after_a_peek_deletes_a_key_of_another_type),
        cmocka_unit_test(a_clear_deletes_the_state_block_level_and_marker),
        cmocka_unit_test(a_reserve_or_release_without_a_nonce_is_refused),
        cmocka_unit_test(a_reserve_is_refused_where_redis_refuses_functions),
        cmocka_unit_test(the_memory_store_refuses_a_reserve_and_a_release),
        cmocka_unit_test(a_command_beside_the_limits_answers_its_caller),
    };
    return cmocka_run_group_tests(tests, ag_env_start, ag_env_stop);
}
