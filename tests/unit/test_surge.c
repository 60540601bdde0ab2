/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_surge: a shield's state machine on a clock the test moves. Raised
 * above the floor and above factor x baseline; a baseline that learns the
 * typical window, little moved by a spike and not at all by windows under
 * attack; held while the attack's attempts go on after failures stop
 * (no flapping), lowered within the hold and two windows once it ends; the
 * operator's switch; empty windows; a clock that goes back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_surge.h"

#define W 60000u      /* window_ms */
#define T0 600000000u /* a window boundary */

static struct ag_surge_params params(uint64_t limit, uint64_t factor_milli,
                                     uint64_t baseline_windows,
                                     uint64_t block_ms)
{
    return (struct ag_surge_params){.window_ms = W,
                                    .baseline_ms = baseline_windows * W,
                                    .block_ms = block_ms,
                                    .limit = limit,
                                    .factor_milli = factor_milli};
}

/* Runs n windows from *t, each in four steps of a quarter of count and
 * attempts, at its 1st, 16th, 31st and 46th second; *t moves on to the
 * next window's start. Returns the bits every step returned, or'ed. */
static unsigned run(struct ag_surge_state *st, const struct ag_surge_params *p,
                    uint64_t *t, unsigned n, uint64_t count, uint64_t attempts)
{
    unsigned seen = 0;
    for (unsigned w = 0; w < n; w++) {
        for (unsigned q = 0; q < 4; q++)
            seen |= ag_surge_step(st, p, *t + 1000 + q * 15000, count / 4,
                                  attempts / 4);
        *t += W;
    }
    return seen;
}

static void raised_above_the_floor_once(void **state)
{
    (void)state;
    struct ag_surge_params p = params(100, 5000, 100, 600000);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    assert_int_equal(ag_surge_threshold(&st, &p), 100);
    assert_int_equal(ag_surge_step(&st, &p, T0 + 1000, 100, 300), 0);
    assert_false(st.raised);
    assert_int_equal(ag_surge_step(&st, &p, T0 + 2000, 1, 1), AG_SURGE_RAISED);
    assert_true(st.raised);
    assert_int_equal(st.since_ms, T0 + 2000);
    assert_int_equal(st.until_ms, T0 + 2000 + 600000);
    /* Still above: held, not raised again. */
    assert_int_equal(ag_surge_step(&st, &p, T0 + 3000, 5, 5), 0);
    assert_int_equal(st.until_ms, T0 + 3000 + 600000);
}

static void the_baseline_learns_the_typical_window(void **state)
{
    (void)state;
    struct ag_surge_params p = params(100, 5000, 10, 600000);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    uint64_t t = T0;
    assert_int_equal(run(&st, &p, &t, 20, 80, 400), 0);
    ag_surge_step(&st, &p, t + 1, 0, 0); /* roll the last window in */
    assert_int_equal(st.baseline_milli, 80000);
    assert_int_equal(st.attempt_baseline_milli, 400000);
    assert_int_equal(st.taught, 20);
    assert_int_equal(ag_surge_threshold(&st, &p), 400);
    /* 5 x 80 = 400 in a window is not above the threshold; 401 is. */
    assert_int_equal(ag_surge_step(&st, &p, t + 1000, 400, 400), 0);
    assert_int_equal(ag_surge_step(&st, &p, t + 2000, 1, 1), AG_SURGE_RAISED);
}

static void a_spike_below_the_threshold_moves_it_little(void **state)
{
    (void)state;
    struct ag_surge_params p = params(100, 5000, 10, 600000);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    uint64_t t = T0;
    run(&st, &p, &t, 20, 60, 200);
    ag_surge_step(&st, &p, t + 1, 0, 0);
    assert_int_equal(st.baseline_milli, 60000);
    /* 296 is under 5 x 60 but counts as max(limit, 2 x 60) = 120: the
     * average of ten windows moves a tenth of 60. */
    assert_int_equal(run(&st, &p, &t, 1, 296, 200), 0);
    ag_surge_step(&st, &p, t + 1, 0, 0);
    assert_int_equal(st.baseline_milli, 66000);
}

static void windows_under_attack_teach_nothing(void **state)
{
    (void)state;
    struct ag_surge_params p = params(100, 5000, 10, 120000);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    uint64_t t = T0;
    run(&st, &p, &t, 10, 40, 200);
    ag_surge_step(&st, &p, t + 1, 0, 0);
    uint64_t b = st.baseline_milli, ab = st.attempt_baseline_milli;
    uint64_t taught = st.taught;
    assert_true(run(&st, &p, &t, 5, 2000, 4000) & AG_SURGE_RAISED);
    assert_true(st.raised);
    ag_surge_step(&st, &p, t + 1, 0, 0);
    assert_int_equal(st.baseline_milli, b);
    assert_int_equal(st.attempt_baseline_milli, ab);
    assert_int_equal(st.taught, taught);
}

/* A shield raised by failures sees none once it challenges everyone; the
 * attack's attempts hold it, and it comes down once they stop. */
static void held_by_the_attack_attempts_then_lowered(void **state)
{
    (void)state;
    uint64_t block = 4 * W;
    struct ag_surge_params p = params(100, 5000, 20, block);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    uint64_t t = T0;
    run(&st, &p, &t, 20, 20, 400); /* background: 20 failures, 400 tries */
    /* The wave: 3000 more tries a window, most failing. */
    unsigned seen = run(&st, &p, &t, 2, 2800, 3400);
    assert_true(seen & AG_SURGE_RAISED);
    /* Challenged: failures stop, tries go on, for ten holds' worth. */
    seen = run(&st, &p, &t, 40, 0, 3400);
    assert_int_equal(seen, 0);
    assert_true(st.raised);
    /* The wave stops: lowered within the hold and two windows. */
    uint64_t stop = t;
    seen = 0;
    while (!(seen & AG_SURGE_LOWERED) && t < stop + block + 4 * W)
        seen |= run(&st, &p, &t, 1, 20, 400);
    assert_true(seen & AG_SURGE_LOWERED);
    assert_false(st.raised);
    assert_true(t <= stop + block + 2 * W + W);
    assert_true(st.until_ms <= stop + block + 2 * W);
    /* And the background alone does not raise it again. */
    assert_int_equal(run(&st, &p, &t, 30, 20, 400), 0);
}

/* Background noise after a raise whose peak was small does not hold a
 * shield forever: only an excess beyond three deviations holds it. */
static void noise_does_not_hold_a_manual_raise(void **state)
{
    (void)state;
    struct ag_surge_params p = params(100, 5000, 20, 2 * W);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    uint64_t t = T0;
    run(&st, &p, &t, 20, 20, 400);
    assert_int_equal(ag_surge_raise(&st, &p, t + 1000, 3 * W), AG_SURGE_RAISED);
    assert_int_equal(ag_surge_raise(&st, &p, t + 2000, 3 * W), 0);
    assert_int_equal(st.until_ms, t + 2000 + 3 * W);
    /* 440 tries a window is 2 deviations above 400: noise. */
    unsigned seen = run(&st, &p, &t, 5, 20, 440);
    assert_true(seen & AG_SURGE_LOWERED);
    assert_false(st.raised);
}

static void the_switch_lowers_at_once(void **state)
{
    (void)state;
    struct ag_surge_params p = params(10, 5000, 20, 10 * W);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    assert_int_equal(ag_surge_lower(&st), 0);
    assert_int_equal(ag_surge_step(&st, &p, T0 + 1000, 11, 11),
                     AG_SURGE_RAISED);
    assert_int_equal(ag_surge_lower(&st), AG_SURGE_LOWERED);
    assert_false(st.raised);
    assert_true(st.tainted);
    /* An attack still going raises it again at its next count. */
    assert_int_equal(ag_surge_step(&st, &p, T0 + 2000, 1, 1), AG_SURGE_RAISED);
}

static void empty_windows_teach_zeros(void **state)
{
    (void)state;
    struct ag_surge_params p = params(10, 5000, 4, W);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0);
    uint64_t t = T0;
    run(&st, &p, &t, 8, 8, 8);
    ag_surge_step(&st, &p, t + 1, 0, 0);
    assert_int_equal(st.baseline_milli, 8000);
    /* The window that just began saw nothing, nor the one after it:
     * 8 -> 6 -> 4.5, each a quarter of the way to 0. */
    t += 2 * W;
    ag_surge_step(&st, &p, t + 1, 0, 0);
    assert_int_equal(st.baseline_milli, 4500);
    assert_int_equal(st.prev_count, 0);
    /* More empty windows than the baseline holds teach at most that many. */
    uint64_t taught = st.taught;
    t += 1000 * W;
    ag_surge_step(&st, &p, t + 1, 0, 0);
    assert_int_equal(st.taught, taught + 1 + 4);
}

static void a_clock_that_goes_back_stays_in_the_window(void **state)
{
    (void)state;
    struct ag_surge_params p = params(100, 5000, 10, W);
    struct ag_surge_state st;
    ag_surge_init(&st, &p, T0 + W);
    ag_surge_step(&st, &p, T0 + W + 5000, 10, 10);
    ag_surge_step(&st, &p, T0 + 5000, 10, 10);
    assert_int_equal(st.window, (T0 + W) / W);
    assert_int_equal(st.count, 20);
    assert_int_equal(st.taught, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(raised_above_the_floor_once),
        cmocka_unit_test(the_baseline_learns_the_typical_window),
        cmocka_unit_test(a_spike_below_the_threshold_moves_it_little),
        cmocka_unit_test(windows_under_attack_teach_nothing),
        cmocka_unit_test(held_by_the_attack_attempts_then_lowered),
        cmocka_unit_test(noise_does_not_hold_a_manual_raise),
        cmocka_unit_test(the_switch_lowers_at_once),
        cmocka_unit_test(empty_windows_teach_zeros),
        cmocka_unit_test(a_clock_that_goes_back_stays_in_the_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
