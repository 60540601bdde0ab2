/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_breaker, on a fake clock: it opens on the threshold's failure
 * in a row and not before, a success in between starts the count again, a
 * failed batch counts once however many commands it held, the probes come
 * 100 ms after opening and then 200, 400, 800 and 1000 ms apart (never
 * more), and a successful probe closes it with a fresh count and schedule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_error.h"
#include "ag_redis_breaker.h"

static uint64_t fake_clock(void *ctx)
{
    return *(const uint64_t *)ctx;
}

/* A breaker on the clock *now. */
static void init_at(struct ag_redis_breaker *b, uint64_t *now)
{
    ag_redis_breaker_init(b, fake_clock, now);
}

static void fail_times(struct ag_redis_breaker *b, int n)
{
    for (int i = 0; i < n; i++)
        ag_redis_breaker_record(b, AG_ESTORE, false);
}

static void opens_on_the_threshold_failure_and_not_before(void **state)
{
    (void)state;
    uint64_t now = 1000;
    struct ag_redis_breaker b;
    init_at(&b, &now);
    assert_false(ag_redis_breaker_is_open(&b));
    assert_int_equal(ag_redis_breaker_probe_in(&b), UINT64_MAX);
    fail_times(&b, AG_REDIS_BREAKER_THRESHOLD - 1);
    assert_false(ag_redis_breaker_is_open(&b));
    assert_true(ag_redis_breaker_record(&b, AG_ESTORE, false));
    assert_true(ag_redis_breaker_is_open(&b));
    /* Opening is reported once: the caller wakes its prober once. */
    assert_false(ag_redis_breaker_record(&b, AG_ESTORE, false));
    assert_true(ag_redis_breaker_is_open(&b));
    ag_redis_breaker_destroy(&b);
}

static void a_success_starts_the_count_again(void **state)
{
    (void)state;
    uint64_t now = 0;
    struct ag_redis_breaker b;
    init_at(&b, &now);
    for (int round = 0; round < 10; round++) {
        fail_times(&b, AG_REDIS_BREAKER_THRESHOLD - 1);
        assert_false(ag_redis_breaker_record(&b, AG_OK, false));
    }
    assert_false(ag_redis_breaker_is_open(&b));
    ag_redis_breaker_destroy(&b);
}

static void a_failed_batch_counts_once(void **state)
{
    (void)state;
    uint64_t now = 0;
    struct ag_redis_breaker b;
    init_at(&b, &now);
    /* Batches of 50 commands whose connection fails on the first reply:
     * one failure, 49 orphans each. */
    for (int batch = 0; batch < AG_REDIS_BREAKER_THRESHOLD; batch++) {
        assert_false(ag_redis_breaker_is_open(&b));
        bool opened = ag_redis_breaker_record(&b, AG_ESTORE, false);
        assert_int_equal(opened, batch == AG_REDIS_BREAKER_THRESHOLD - 1);
        for (int orphan = 0; orphan < 49; orphan++)
            assert_false(ag_redis_breaker_record(&b, AG_ESTORE, true));
    }
    assert_true(ag_redis_breaker_is_open(&b));
    ag_redis_breaker_destroy(&b);
}

static void probes_back_off_from_100_ms_doubling_to_1_s(void **state)
{
    (void)state;
    uint64_t now = 5000;
    struct ag_redis_breaker b;
    init_at(&b, &now);
    fail_times(&b, AG_REDIS_BREAKER_THRESHOLD);
    assert_true(ag_redis_breaker_is_open(&b));
    const uint64_t waits[] = {100, 200, 400, 800, 1000, 1000, 1000};
    for (size_t i = 0; i < sizeof waits / sizeof *waits; i++) {
        assert_int_equal(ag_redis_breaker_probe_in(&b), waits[i]);
        now += waits[i] - 1;
        assert_int_equal(ag_redis_breaker_probe_in(&b), 1);
        now += 1;
        assert_int_equal(ag_redis_breaker_probe_in(&b), 0);
        assert_false(ag_redis_breaker_probed(&b, false));
        assert_true(ag_redis_breaker_is_open(&b));
    }
    /* A late probe still waits its full wait from when it failed. */
    now += 5000;
    assert_int_equal(ag_redis_breaker_probe_in(&b), 0);
    assert_false(ag_redis_breaker_probed(&b, false));
    assert_int_equal(ag_redis_breaker_probe_in(&b), 1000);
    ag_redis_breaker_destroy(&b);
}

static void a_successful_probe_closes_with_a_fresh_schedule(void **state)
{
    (void)state;
    uint64_t now = 0;
    struct ag_redis_breaker b;
    init_at(&b, &now);
    fail_times(&b, AG_REDIS_BREAKER_THRESHOLD);
    for (int i = 0; i < 4; i++) {
        now += ag_redis_breaker_probe_in(&b);
        ag_redis_breaker_probed(&b, false);
    }
    now += ag_redis_breaker_probe_in(&b);
    assert_true(ag_redis_breaker_probed(&b, true));
    assert_false(ag_redis_breaker_is_open(&b));
    assert_int_equal(ag_redis_breaker_probe_in(&b), UINT64_MAX);
    /* Closing reported once; a late probe result changes nothing. */
    assert_false(ag_redis_breaker_probed(&b, true));
    assert_false(ag_redis_breaker_probed(&b, false));
    assert_false(ag_redis_breaker_is_open(&b));
    /* The count starts from nothing, and the next opening from 100 ms. */
    fail_times(&b, AG_REDIS_BREAKER_THRESHOLD - 1);
    assert_false(ag_redis_breaker_is_open(&b));
    fail_times(&b, 1);
    assert_true(ag_redis_breaker_is_open(&b));
    assert_int_equal(ag_redis_breaker_probe_in(&b), AG_REDIS_PROBE_MIN_MS);
    ag_redis_breaker_destroy(&b);
}

static void the_default_clock_schedules_the_first_probe_ahead(void **state)
{
    (void)state;
    struct ag_redis_breaker b;
    ag_redis_breaker_init(&b, NULL, NULL);
    fail_times(&b, AG_REDIS_BREAKER_THRESHOLD);
    uint64_t in = ag_redis_breaker_probe_in(&b);
    assert_true(in > 0 && in <= AG_REDIS_PROBE_MIN_MS);
    ag_redis_breaker_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opens_on_the_threshold_failure_and_not_before),
        cmocka_unit_test(a_success_starts_the_count_again),
        cmocka_unit_test(a_failed_batch_counts_once),
        cmocka_unit_test(probes_back_off_from_100_ms_doubling_to_1_s),
        cmocka_unit_test(a_successful_probe_closes_with_a_fresh_schedule),
        cmocka_unit_test(the_default_clock_schedules_the_first_probe_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
