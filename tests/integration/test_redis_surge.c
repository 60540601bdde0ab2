/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shield's shared state, ag_redis_surge (lua/surge.lua), against a real
 * redis-server, differential against ag_surge in C: scripted scenarios
 * (a background, a wave, a hold on attempts alone, the wave's end, the
 * operator's switch, empty windows, a clock that goes back, a change of
 * window) and seeded random sequences run through both at times the test
 * chooses, and after every call every field of the state, changed and the
 * threshold must be equal. AG_SURGE_SEED replays a random run (default:
 * the time). Then what the hash holds and its expiry, Redis TIME as the
 * clock of a call without one, a script Redis forgot, a key of another
 * type, the refusals, and a killed Redis. Starts its own redis-servers
 * (ag_test_redis.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_redis_surge.h"
#include "ag_store_redis.h"
#include "ag_test_redis.h"

#define W 60000ull                      /* the scenarios' window_ms */
#define T0 (AG_TEST_EPOCH_S * 1000 + 7) /* just after a window's start */
#define SEQUENCES 150                   /* random sequences in a run */
#define CALLS 200                       /* calls in each */

/* The calls of one shield, made in C and in Redis alike. */
struct twin {
    char key[96];
    struct ag_surge_params p;
    struct ag_surge_state st;
    uint64_t made_ms; /* the window_ms st was made with; 0: not yet */
};

/* What runs, for a failure's message: a scenario's name or a seed. */
static char running[96];
static unsigned ncalls;

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

static void twin_new(struct twin *t, const char *name, struct ag_surge_params p)
{
    memset(t, 0, sizeof *t);
    snprintf(t->key, sizeof t->key, "ag:{surge-test}:%s", name);
    snprintf(running, sizeof running, "%s", name);
    t->p = p;
    ncalls = 0;
}

/* Compares each of what C and Redis gave; false and printed if any
 * differs. */
static bool agree(const struct twin *t, const struct ag_redis_surge_answer *a,
                  unsigned changed, uint64_t now)
{
    const struct ag_surge_state *c = &t->st, *r = &a->state;
    struct {
        const char *name;
        uint64_t c, r;
    } f[] = {
        {"window", c->window, r->window},
        {"count", c->count, r->count},
        {"attempts", c->attempts, r->attempts},
        {"prev_count", c->prev_count, r->prev_count},
        {"prev_attempts", c->prev_attempts, r->prev_attempts},
        {"baseline_milli", c->baseline_milli, r->baseline_milli},
        {"attempt_baseline_milli", c->attempt_baseline_milli,
         r->attempt_baseline_milli},
        {"taught", c->taught, r->taught},
        {"raised", c->raised, r->raised},
        {"tainted", c->tainted, r->tainted},
        {"since_ms", c->since_ms, r->since_ms},
        {"until_ms", c->until_ms, r->until_ms},
        {"peak_attempts", c->peak_attempts, r->peak_attempts},
        {"changed", changed, a->changed},
        {"now_ms", now, a->now_ms},
        {"threshold", ag_surge_threshold(c, &t->p), a->threshold},
    };
    bool same = true;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].c == f[i].r)
            continue;
        print_error("%s, call %u: %s is %llu in C, %llu in Redis\n", running,
                    ncalls, f[i].name, (unsigned long long)f[i].c,
                    (unsigned long long)f[i].r);
        same = false;
    }
    return same;
}

/* Runs op at now in C and in Redis, and fails unless they agree. A twin
 * made with another window_ms starts over, as the hash does. Returns
 * what the call changed. */
static unsigned twin_do(struct twin *t, enum ag_redis_surge_op op, uint64_t now,
                        uint64_t count, uint64_t attempts, uint64_t for_ms)
{
    if (t->made_ms != t->p.window_ms) {
        ag_surge_init(&t->st, &t->p, now);
        t->made_ms = t->p.window_ms;
    }
    unsigned changed = 0;
    if (op == AG_SURGE_OP_STEP)
        changed = ag_surge_step(&t->st, &t->p, now, count, attempts);
    else if (op == AG_SURGE_OP_RAISE)
        changed = ag_surge_raise(&t->st, &t->p, now, for_ms);
    else
        changed = ag_surge_lower(&t->st);
    struct ag_redis_surge_call call = {.op = op,
                                       .count = count,
                                       .attempts = attempts,
                                       .for_ms = for_ms,
                                       .now_ms = now};
    struct ag_redis_surge_answer a;
    int rc = ag_redis_surge(ag_env.store, t->key, &t->p, &call, &a);
    if (rc != AG_OK)
        fail_msg("%s, call %u: ag_redis_surge returned %d", running, ncalls,
                 rc);
    if (!agree(t, &a, changed, now))
        fail_msg("%s, call %u (op %d at %llu, %llu and %llu): C and Redis "
                 "differ",
                 running, ncalls, (int)op, (unsigned long long)now,
                 (unsigned long long)count, (unsigned long long)attempts);
    ncalls++;
    return changed;
}

static unsigned step(struct twin *t, uint64_t now, uint64_t count,
                     uint64_t attempts)
{
    return twin_do(t, AG_SURGE_OP_STEP, now, count, attempts, 0);
}

/* n windows from *t0, each in four steps of a quarter of count and
 * attempts (test_surge.c's run); *t0 moves on by n windows. The bits
 * every step returned, or'ed. */
static unsigned run(struct twin *t, uint64_t *t0, unsigned n, uint64_t count,
                    uint64_t attempts)
{
    unsigned seen = 0;
    for (unsigned w = 0; w < n; w++) {
        for (unsigned q = 0; q < 4; q++)
            seen |= step(t, *t0 + 1000 + q * 15000, count / 4, attempts / 4);
        *t0 += t->p.window_ms;
    }
    return seen;
}

static void a_background_never_raises_and_a_wave_does(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "wave", params(100, 5000, 10, 600000));
    uint64_t now = T0;
    assert_int_equal(run(&t, &now, 30, 80, 400), 0);
    assert_int_equal(t.st.baseline_milli, 80000);
    /* A spike under the threshold, clipped, then the background again. */
    assert_int_equal(run(&t, &now, 1, 396, 800), 0);
    assert_int_equal(run(&t, &now, 3, 80, 400), 0);
    assert_true(run(&t, &now, 2, 4000, 9000) & AG_SURGE_RAISED);
    assert_true(t.st.raised);
}

/* Ten billion a window: the threshold's product, baseline_milli x
 * factor_milli, passes 2^53, and this baseline and factor are one whose
 * product a double rounds up across a multiple of 10^6, which would make
 * the threshold one too high. The script splits the product. */
static void a_threshold_past_2_53_is_exact(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "large", params(50000000000ull, 12003, 10, W));
    uint64_t now = T0;
    const uint64_t windows[] = {10000000000ull, 10000000001ull, 10000000003ull};
    for (size_t i = 0; i < 3; i++, now += W)
        assert_int_equal(step(&t, now + 1000, windows[i], 2 * windows[i]), 0);
    assert_int_equal(step(&t, now + 1, 0, 0), 0);
    assert_int_equal(t.st.baseline_milli, 10000000001333ull);
    uint64_t threshold = ag_surge_threshold(&t.st, &t.p);
    assert_int_equal(threshold, 120030000015ull);
    assert_int_equal((uint64_t)((double)t.st.baseline_milli * 12003 / 1e6),
                     threshold + 1);
    assert_int_equal(step(&t, now + 2, threshold, threshold), 0);
    assert_int_equal(step(&t, now + 3, 1, 1), AG_SURGE_RAISED);
}

/* Raised by failures, held by the attack's attempts once challenged, and
 * lowered within the hold and two windows once it stops. */
static void the_hold_on_attempts_and_the_end_agree(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "hold", params(100, 5000, 20, 4 * W));
    uint64_t now = T0;
    run(&t, &now, 20, 20, 400);
    assert_true(run(&t, &now, 2, 2800, 3400) & AG_SURGE_RAISED);
    assert_int_equal(run(&t, &now, 40, 0, 3400), 0);
    assert_true(t.st.raised);
    unsigned seen = 0;
    for (unsigned i = 0; i < 8 && !(seen & AG_SURGE_LOWERED); i++)
        seen |= run(&t, &now, 1, 20, 400);
    assert_true(seen & AG_SURGE_LOWERED);
    assert_int_equal(run(&t, &now, 30, 20, 400), 0);
}

static void the_operator_switch_agrees(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "switch", params(100, 5000, 20, 2 * W));
    uint64_t now = T0;
    run(&t, &now, 20, 20, 400);
    assert_int_equal(twin_do(&t, AG_SURGE_OP_LOWER, now + 1, 0, 0, 0), 0);
    assert_int_equal(twin_do(&t, AG_SURGE_OP_RAISE, now + 1000, 0, 0, 3 * W),
                     AG_SURGE_RAISED);
    assert_int_equal(twin_do(&t, AG_SURGE_OP_RAISE, now + 2000, 0, 0, W), 0);
    /* Noise does not hold a manual raise: lowered by a later step. */
    assert_true(run(&t, &now, 5, 20, 440) & AG_SURGE_LOWERED);
    /* Raised by a wave, lowered by hand, raised again by the wave. */
    run(&t, &now, 1, 4000, 9000);
    assert_int_equal(twin_do(&t, AG_SURGE_OP_LOWER, now - 100, 0, 0, 0),
                     AG_SURGE_LOWERED);
    assert_int_equal(step(&t, now - 100, 1, 1), AG_SURGE_RAISED);
    /* A raise in a later window rolls the windows over first. */
    twin_do(&t, AG_SURGE_OP_RAISE, now + 5 * W, 0, 0, 0);
}

/* A full window's attempts a at *now's window, then a step in the next:
 * whether the hold moved the end on. */
static bool holds_after(struct twin *t, uint64_t *now, uint64_t a)
{
    step(t, *now + 2, 0, a);
    *now += t->p.window_ms;
    step(t, *now + 1000, 0, 0);
    return t->st.raised;
}

/* The hold's two rules at their edges, where a rounding or a comparison
 * that differs would show: an attempt baseline of exactly 400, whose
 * noise is 3 x 20 + 1 = 61, and half of a peak's excess exactly. */
static void the_hold_agrees_at_its_edges(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "edges", params(100, 5000, 20, W));
    uint64_t now = T0;
    run(&t, &now, 20, 20, 400);
    assert_int_equal(t.st.attempt_baseline_milli, 400000);
    /* A manual raise's peak is the baseline: noise decides. */
    twin_do(&t, AG_SURGE_OP_RAISE, now + 1, 0, 0, W);
    assert_true(holds_after(&t, &now, 461));
    now += W;
    twin_do(&t, AG_SURGE_OP_RAISE, now + 1, 0, 0, W);
    assert_false(holds_after(&t, &now, 460));
    now += W;
    /* A wave of 1400 tries: 900 is half its excess over 400. */
    assert_int_equal(step(&t, now + 1000, 4000, 1400), AG_SURGE_RAISED);
    now += W;
    assert_true(holds_after(&t, &now, 900));
    assert_int_equal(t.st.peak_attempts, 1400);
    assert_false(holds_after(&t, &now, 899));
    assert_int_equal(t.st.attempt_baseline_milli, 400000);
}

static void empty_windows_and_long_gaps_agree(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "gaps", params(10, 5000, 4, W));
    uint64_t now = T0;
    run(&t, &now, 8, 8, 8);
    now += 2 * W;
    step(&t, now + 1, 0, 0);
    assert_int_equal(t.st.baseline_milli, 4500);
    now += 1000 * W;
    step(&t, now + 1, 3, 3);
    /* Raised across a gap: the empty windows teach nothing. */
    run(&t, &now, 1, 400, 400);
    assert_true(t.st.raised);
    uint64_t taught = t.st.taught;
    now += 7 * W;
    step(&t, now, 1, 1);
    assert_int_equal(t.st.taught, taught);
    /* Gaps once a whole baseline period has been taught: the script
     * takes their zeros band by band, C one by one. */
    twin_new(&t, "steady", params(100000, 5000, 100, W));
    now = T0;
    run(&t, &now, 104, 40000, 80000);
    assert_true(t.st.taught >= 100);
    now += 37 * W;
    step(&t, now + 1, 0, 0);
    now += 250 * W;
    step(&t, now + 1, 1, 1);
    /* A baseline of 7 days in windows of a minute, and a week's gap. */
    twin_new(&t, "week", params(100, 5000, 10080, 600000));
    now = T0;
    run(&t, &now, 30, 50, 90);
    now += 10080 * W + 17;
    step(&t, now, 1, 1);
}

static void a_clock_that_goes_back_agrees(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "back", params(100, 5000, 10, W));
    step(&t, T0 + W + 5000, 10, 10);
    step(&t, T0 + 5000, 10, 10);
    step(&t, T0 + 1, 10, 10);
    assert_int_equal(t.st.window, (T0 + W) / W);
    assert_int_equal(t.st.count, 30);
    step(&t, T0 + 2 * W, 1, 1);
}

static void a_change_of_window_starts_over(void **state)
{
    (void)state;
    struct twin t;
    twin_new(&t, "rewindow", params(100, 5000, 10, W));
    uint64_t now = T0;
    run(&t, &now, 12, 30, 60);
    assert_true(t.st.taught > 0);
    /* The other figures may change: the state stays. */
    t.p.limit = 50;
    t.p.factor_milli = 2500;
    t.p.baseline_ms = 20 * W;
    step(&t, now + 1, 1, 1);
    assert_true(t.st.taught > 0);
    t.p.window_ms = W / 2;
    step(&t, now + 2, 1, 1);
    assert_int_equal(t.st.taught, 0);
    assert_int_equal(t.st.count, 1);
    t.p.window_ms = W;
    step(&t, now + 3, 1, 1);
    assert_int_equal(t.st.window, (now + 3) / W);
}

static uint64_t rng;

static uint64_t next(void)
{
    /* xorshift64*: a seed replays the same sequences on any machine. */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static uint64_t below(uint64_t n)
{
    return n ? next() % n : 0;
}

/* A policy's figures: windows of a second, two, a minute or anything up
 * to 100 s; a baseline of one to 40 windows and a part; a small floor;
 * factors near the low end more often. */
static void random_window(struct ag_surge_params *p)
{
    static const uint64_t windows[] = {1000, 2000, W};
    p->window_ms = below(4) ? windows[below(3)] : 1 + below(100000);
    p->baseline_ms = p->window_ms * (1 + below(40)) + below(p->window_ms);
}

static void random_figures(struct ag_surge_params *p)
{
    p->block_ms = 1 + below(5 * p->window_ms);
    p->limit = below(200);
    p->factor_milli =
        AG_FACTOR_MIN + below(below(2) ? 8500 : AG_FACTOR_MAX - AG_FACTOR_MIN);
}

/* Moves *now on as instances step: mostly within a window, sometimes a
 * window or several on, rarely a long gap or back. */
static void random_time(const struct twin *t, uint64_t *now)
{
    uint64_t w = t->p.window_ms, periods = t->p.baseline_ms / w;
    uint64_t r = below(100);
    if (r < 70)
        *now += below(w / 4 + 1);
    else if (r < 88)
        *now += w / 2 + below(w);
    else if (r < 95)
        *now += w * (2 + below(periods + 3)) + below(w);
    else if (r < 97)
        *now += w * below(3 * periods + 3) + below(w);
    else
        *now -= below(*now - T0 < w ? *now - T0 : w);
}

static uint64_t seed;

/* One random sequence; returns the bits its steps (not the switch)
 * returned, or'ed. */
static unsigned random_sequence(unsigned s)
{
    struct twin t;
    char name[32];
    snprintf(name, sizeof name, "random:%u", s);
    struct ag_surge_params p;
    random_window(&p);
    random_figures(&p);
    twin_new(&t, name, p);
    snprintf(running, sizeof running, "AG_SURGE_SEED=%llu, sequence %u",
             (unsigned long long)seed, s);
    uint64_t now = T0 + below(1000000000);
    /* A background per step, and a wave ten times over, or more. */
    uint64_t rate = below(80), tries = rate + below(4 * rate + 10);
    bool wave = false;
    unsigned seen = 0;
    for (unsigned i = 0; i < CALLS; i++) {
        uint64_t r = below(1000);
        if (r < 25) {
            twin_do(&t, AG_SURGE_OP_RAISE, now, 0, 0, below(3 * p.window_ms));
            continue;
        }
        if (r < 40) {
            twin_do(&t, AG_SURGE_OP_LOWER, now, 0, 0, 0);
            continue;
        }
        if (r < 45)
            random_window(&t.p);
        if (r < 55)
            random_figures(&t.p);
        if (r < 80)
            wave = !wave;
        random_time(&t, &now);
        uint64_t count = below(2 * rate + 1), attempts = below(2 * tries + 1);
        if (wave) {
            attempts += 10 * tries + below(800);
            /* Challenged, a wave's failures mostly stop. */
            count = t.st.raised && below(4) ? 0 : attempts / 2 + count;
        }
        seen |= step(&t, now, count, attempts);
    }
    return seen;
}

static void random_sequences_agree(void **state)
{
    (void)state;
    const char *env = getenv("AG_SURGE_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    if (!seed)
        seed = 1;
    rng = seed;
    print_message("AG_SURGE_SEED=%llu\n", (unsigned long long)seed);
    unsigned raised = 0, lowered = 0;
    for (unsigned s = 0; s < SEQUENCES; s++) {
        unsigned seen = random_sequence(s);
        raised += (seen & AG_SURGE_RAISED) != 0;
        lowered += (seen & AG_SURGE_LOWERED) != 0;
    }
    print_message("%u sequences of %u calls agree; %u raised a shield, %u "
                  "lowered one by a step\n",
                  SEQUENCES, CALLS, raised, lowered);
    /* The sequences reach what they are there to compare. */
    assert_true(raised > SEQUENCES / 4);
    assert_true(lowered > SEQUENCES / 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_background_never_raises_and_a_wave_does),
        cmocka_unit_test(a_threshold_past_2_53_is_exact),
        cmocka_unit_test(the_hold_on_attempts_and_the_end_agree),
        cmocka_unit_test(the_operator_switch_agrees),
        cmocka_unit_test(the_hold_agrees_at_its_edges),
        cmocka_unit_test(empty_windows_and_long_gaps_agree),
        cmocka_unit_test(a_clock_that_goes_back_agrees),
        cmocka_unit_test(a_change_of_window_starts_over),
        cmocka_unit_test(random_sequences_agree),
    };
    return cmocka_run_group_tests(tests, ag_env_start, ag_env_stop);
}
