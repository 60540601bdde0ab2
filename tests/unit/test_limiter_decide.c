/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_limiter: how per-policy results combine into one decision, over
 * hand-built plans: any enforcing denial denies, the longest wait is
 * reported, shadow and waived policies never deny, a deny outranks a
 * challenge, and waits round up to whole seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_limiter.h"
#include "ag_test_limiter.h"

struct fixture {
    struct ag_policy ps[4];
    struct ag_plan plan;
    struct ag_limit_result res[4];
};

/* n enforcing operations with the given limits, all allowed with
 * remaining = limit - 1 until a test changes them. */
static void fixture_init(struct fixture *f, size_t n, const uint32_t *limits)
{
    memset(f, 0, sizeof *f);
    assert_true(n <= 4);
    f->plan.n = n;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "login.p%zu", i);
        f->ps[i] = policy(name, "login", "[\"user\"]", limits[i], NULL);
        f->plan.ops[i].policy = &f->ps[i];
        f->plan.ops[i].charge = true;
        f->res[i].allowed = true;
        f->res[i].remaining = limits[i] - 1;
        f->res[i].reset_after_ms = 60000;
    }
}

static void deny(struct fixture *f, size_t i, uint64_t retry_ms)
{
    f->res[i].allowed = false;
    f->res[i].remaining = 0;
    f->res[i].retry_after_ms = retry_ms;
}

static void all_allowed_is_allowed_and_tightest_has_fewest_left(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    f.res[0].remaining = 5;
    f.res[1].remaining = 2;
    f.res[2].remaining = 7;
    struct ag_decision d;
    memset(&d, 0x5a, sizeof d);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    assert_int_equal(d.retry_after_s, 0);
    assert_int_equal(d.tightest, 1);
}

static void tightest_tie_goes_to_smaller_limit_then_plan_order(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 5});
    f.res[0].remaining = 3;
    f.res[1].remaining = 3;
    f.res[2].remaining = 3;
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_int_equal(d.tightest, 1);
}

static void one_denial_denies_and_is_reported(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    deny(&f, 2, 1500);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 2);
    assert_int_equal(d.retry_after_s, 2);
    assert_int_equal(d.tightest, 2);
}

static void two_denials_report_the_longer_retry(void **state)
{
    (void)state;
    struct fixture f;
    struct ag_decision d;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    deny(&f, 0, 5000);
    deny(&f, 2, 60000);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 2);
    assert_int_equal(d.retry_after_s, 60);
    assert_int_equal(d.tightest, 2);

    /* The longer wait wins whichever comes first in the plan. */
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    deny(&f, 0, 60000);
    deny(&f, 2, 5000);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_int_equal(d.denied_by, 0);
    assert_int_equal(d.retry_after_s, 60);
    assert_int_equal(d.tightest, 0);
}

static void shadow_denial_does_not_deny(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){2, 10});
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 30000);
    f.res[1].remaining = 4;
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    assert_int_equal(d.retry_after_s, 0);
    /* The headers describe an enforcing policy, not the shadow one. */
    assert_int_equal(d.tightest, 1);
}

static void shadow_denial_does_not_hide_an_enforcing_denial(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){2, 10});
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 90000);
    deny(&f, 1, 3000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 1);
    assert_int_equal(d.retry_after_s, 3);
}

static void only_shadow_policies_give_no_tightest(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 1, (const uint32_t[]){2});
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 1000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.tightest, -1);
}

static void tripped_challenge_is_reported_as_a_challenge(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){3, 10});
    f.ps[0].action = AG_ACTION_CHALLENGE;
    deny(&f, 0, 4000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 0);
    assert_int_equal(d.action, AG_ACTION_CHALLENGE);
    assert_int_equal(d.retry_after_s, 4);
}

static void deny_wins_over_a_challenge_with_a_longer_wait(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){3, 10, 4});
    f.ps[0].action = AG_ACTION_CHALLENGE;
    f.ps[2].action = AG_ACTION_CHALLENGE;
    deny(&f, 0, 900000);
    deny(&f, 1, 2000);
    deny(&f, 2, 800000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 1);
    assert_int_equal(d.action, AG_ACTION_DENY);
    assert_int_equal(d.retry_after_s, 2);
    /* Between challenges, the longer wait. */
    f.res[1].allowed = true;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_int_equal(d.denied_by, 0);
    assert_int_equal(d.action, AG_ACTION_CHALLENGE);
}

static void waived_challenge_does_not_deny(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){3, 10});
    f.ps[0].action = AG_ACTION_CHALLENGE;
    f.plan.ops[0].waived = true;
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 4000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    /* While a deny policy still denies. */
    deny(&f, 1, 1000);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 1);
    assert_int_equal(d.action, AG_ACTION_DENY);
}

static void empty_plan_is_allowed_without_tightest(void **state)
{
    (void)state;
    struct ag_plan plan = {.n = 0};
    struct ag_decision d;
    memset(&d, 0x5a, sizeof d);
    ag_limiter_decide(&plan, NULL, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    assert_int_equal(d.tightest, -1);
    assert_int_equal(d.retry_after_s, 0);
}

static void retry_after_rounds_up_and_is_at_least_one(void **state)
{
    (void)state;
    static const struct {
        uint64_t ms;
        uint32_t s;
    } cases[] = {{0, 1}, {1, 1}, {999, 1}, {1000, 1}, {1001, 2}, {59999, 60}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fixture f;
        fixture_init(&f, 1, (const uint32_t[]){5});
        deny(&f, 0, cases[i].ms);
        struct ag_decision d;
        ag_limiter_decide(&f.plan, f.res, &d);
        if (d.retry_after_s != cases[i].s)
            fail_msg("%llu ms: %u s, want %u", (unsigned long long)cases[i].ms,
                     d.retry_after_s, cases[i].s);
    }
}

static void seconds_round_up_clamp_and_are_at_least_one(void **state)
{
    (void)state;
    assert_int_equal(ag_limiter_seconds(0), 1);
    assert_int_equal(ag_limiter_seconds(1), 1);
    assert_int_equal(ag_limiter_seconds(999), 1);
    assert_int_equal(ag_limiter_seconds(1000), 1);
    assert_int_equal(ag_limiter_seconds(1001), 2);
    assert_int_equal(ag_limiter_seconds(1999), 2);
    assert_int_equal(ag_limiter_seconds(2000), 2);
    assert_int_equal(ag_limiter_seconds(86400000), 86400);
    assert_int_equal(ag_limiter_seconds((uint64_t)UINT32_MAX * 1000),
                     UINT32_MAX);
    assert_int_equal(ag_limiter_seconds((uint64_t)UINT32_MAX * 1000 + 1),
                     UINT32_MAX);
    assert_int_equal(ag_limiter_seconds((uint64_t)UINT32_MAX * 5000),
                     UINT32_MAX);
    assert_int_equal(ag_limiter_seconds(UINT64_MAX), UINT32_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_allowed_is_allowed_and_tightest_has_fewest_left),
        cmocka_unit_test(tightest_tie_goes_to_smaller_limit_then_plan_order),
        cmocka_unit_test(one_denial_denies_and_is_reported),
        cmocka_unit_test(two_denials_report_the_longer_retry),
        cmocka_unit_test(shadow_denial_does_not_deny),
        cmocka_unit_test(shadow_denial_does_not_hide_an_enforcing_denial),
        cmocka_unit_test(only_shadow_policies_give_no_tightest),
        cmocka_unit_test(tripped_challenge_is_reported_as_a_challenge),
        cmocka_unit_test(deny_wins_over_a_challenge_with_a_longer_wait),
        cmocka_unit_test(waived_challenge_does_not_deny),
        cmocka_unit_test(empty_plan_is_allowed_without_tightest),
        cmocka_unit_test(retry_after_rounds_up_and_is_at_least_one),
        cmocka_unit_test(seconds_round_up_clamp_and_are_at_least_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
