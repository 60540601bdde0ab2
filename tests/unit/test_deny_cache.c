/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_deny_cache: an entry holds until its deadline and not a microsecond
 * longer, a full bucket gives up its nearest expiry, invalidation drops a
 * key's every member, a clear drops everything, inserts that raced an
 * invalidation or came while not live are refused, no entry is held past
 * the cap, and many threads at once keep the count and its gauge
 * straight.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>

#include <sodium.h>

#include "ag_deny_cache.h"
#include "ag_error.h"
#include "ag_metrics.h"

static uint64_t fake_now;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static struct ag_deny_cache *cache(size_t entries, struct ag_metrics *m)
{
    struct ag_deny_cache_opts o = {
        .entries = entries, .clock = fake_clock, .metrics = m};
    struct ag_deny_cache *c;
    assert_int_equal(ag_deny_cache_new(&o, &c), AG_OK);
    ag_deny_cache_set_live(c, true);
    return c;
}

static void an_entry_holds_until_its_deadline_and_not_after(void **state)
{
    (void)state;
    fake_now = 1000000;
    struct ag_deny_cache *c = cache(64, NULL);
    uint64_t e = ag_deny_cache_epoch(c);
    assert_int_equal(
        ag_deny_cache_insert(c, e, "ag:p:aa", "", 1500000, 2000000), AG_OK);
    uint64_t until = 0, reset = 0;
    assert_true(ag_deny_cache_lookup(c, "ag:p:aa", "", &until, &reset));
    assert_int_equal(until, 1500000);
    assert_int_equal(reset, 2000000);
    fake_now = 1499999;
    assert_true(ag_deny_cache_lookup(c, "ag:p:aa", "", NULL, NULL));
    fake_now = 1500000; /* the moment Redis would allow */
    assert_false(ag_deny_cache_lookup(c, "ag:p:aa", "", NULL, NULL));
    assert_int_equal(ag_deny_cache_entries(c), 0);
    ag_deny_cache_free(c);
}

static void an_entry_is_held_at_most_the_cap(void **state)
{
    (void)state;
    fake_now = 1000000;
    struct ag_deny_cache *c = cache(64, NULL);
    uint64_t hour = 3600000000u, cap = AG_DENY_CACHE_MAX_HOLD_MS * 1000u;
    assert_int_equal(ag_deny_cache_insert(c, ag_deny_cache_epoch(c), "ag:p:aa",
                                          "", fake_now + hour, fake_now + hour),
                     AG_OK);
    uint64_t until = 0, reset = 0;
    assert_true(ag_deny_cache_lookup(c, "ag:p:aa", "", &until, &reset));
    /* What Redis said, still: only the holding is cut short. */
    assert_int_equal(until, 1000000 + hour);
    assert_int_equal(reset, 1000000 + hour);
    fake_now = 1000000 + cap - 1;
    assert_true(ag_deny_cache_lookup(c, "ag:p:aa", "", NULL, NULL));
    fake_now = 1000000 + cap; /* then Redis is asked again */
    assert_false(ag_deny_cache_lookup(c, "ag:p:aa", "", NULL, NULL));
    ag_deny_cache_free(c);
}

static void a_deadline_already_past_is_not_taken(void **state)
{
    (void)state;
    fake_now = 5000;
    struct ag_deny_cache *c = cache(64, NULL);
    assert_int_equal(
        ag_deny_cache_insert(c, ag_deny_cache_epoch(c), "ag:p:aa", "", 5000, 0),
        AG_EPENDING);
    assert_int_equal(ag_deny_cache_entries(c), 0);
    ag_deny_cache_free(c);
}

static void members_of_one_key_are_apart(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_deny_cache *c = cache(64, NULL);
    uint64_t e = ag_deny_cache_epoch(c);
    ag_deny_cache_insert(c, e, "ag:ips:aa", "m1", 100, 0);
    assert_true(ag_deny_cache_lookup(c, "ag:ips:aa", "m1", NULL, NULL));
    assert_false(ag_deny_cache_lookup(c, "ag:ips:aa", "m2", NULL, NULL));
    assert_false(ag_deny_cache_lookup(c, "ag:ips:aa", "", NULL, NULL));
    assert_false(ag_deny_cache_lookup(c, "ag:ips:ab", "m1", NULL, NULL));
    ag_deny_cache_free(c);
}

static void a_full_cache_evicts_the_nearest_expiry(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_metrics *m = ag_metrics_new();
    /* One bucket: the whole cache is full after AG_DENY_CACHE_WAYS. */
    struct ag_deny_cache *c = cache(AG_DENY_CACHE_WAYS, m);
    uint64_t e = ag_deny_cache_epoch(c);
    char key[32];
    for (int i = 0; i < AG_DENY_CACHE_WAYS; i++) {
        snprintf(key, sizeof key, "ag:p:%d", i);
        /* Key 3 expires first. */
        uint64_t until = i == 3 ? 50 : 1000 + (uint64_t)i;
        assert_int_equal(ag_deny_cache_insert(c, e, key, "", until, 0), AG_OK);
    }
    assert_int_equal(ag_deny_cache_entries(c), AG_DENY_CACHE_WAYS);
    assert_int_equal(ag_metrics_get(m, AG_M_DENY_CACHE_EVICTIONS), 0);
    assert_int_equal(ag_deny_cache_insert(c, e, "ag:p:new", "", 2000, 0),
                     AG_OK);
    assert_int_equal(ag_metrics_get(m, AG_M_DENY_CACHE_EVICTIONS), 1);
    assert_int_equal(ag_deny_cache_entries(c), AG_DENY_CACHE_WAYS);
    assert_false(ag_deny_cache_lookup(c, "ag:p:3", "", NULL, NULL));
    assert_true(ag_deny_cache_lookup(c, "ag:p:new", "", NULL, NULL));
    for (int i = 0; i < AG_DENY_CACHE_WAYS; i++) {
        snprintf(key, sizeof key, "ag:p:%d", i);
        if (i != 3)
            assert_true(ag_deny_cache_lookup(c, key, "", NULL, NULL));
    }
    assert_int_equal(ag_metrics_get(m, AG_M_DENY_CACHE_ENTRIES),
                     AG_DENY_CACHE_WAYS);
    ag_deny_cache_free(c);
    ag_metrics_free(m);
}

static void an_expired_slot_is_reused_before_evicting(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_deny_cache *c = cache(AG_DENY_CACHE_WAYS, m);
    uint64_t e = ag_deny_cache_epoch(c);
    char key[32];
    for (int i = 0; i < AG_DENY_CACHE_WAYS; i++) {
        snprintf(key, sizeof key, "ag:p:%d", i);
        ag_deny_cache_insert(c, e, key, "", i == 5 ? 10 : 1000, 0);
    }
    fake_now = 10;
    assert_int_equal(ag_deny_cache_insert(c, e, "ag:p:new", "", 2000, 0),
                     AG_OK);
    assert_int_equal(ag_metrics_get(m, AG_M_DENY_CACHE_EVICTIONS), 0);
    assert_true(ag_deny_cache_lookup(c, "ag:p:0", "", NULL, NULL));
    ag_deny_cache_free(c);
    ag_metrics_free(m);
}

static void invalidating_a_key_drops_its_every_member(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_deny_cache *c = cache(1024, m);
    uint64_t e = ag_deny_cache_epoch(c);
    ag_deny_cache_insert(c, e, "ag:ips:aa", "m1", 100, 0);
    ag_deny_cache_insert(c, e, "ag:ips:aa", "m2", 100, 0);
    ag_deny_cache_insert(c, e, "ag:user:bb", "", 100, 0);
    ag_deny_cache_invalidate(c, "ag:ips:aa");
    assert_false(ag_deny_cache_lookup(c, "ag:ips:aa", "m1", NULL, NULL));
    assert_false(ag_deny_cache_lookup(c, "ag:ips:aa", "m2", NULL, NULL));
    assert_true(ag_deny_cache_lookup(c, "ag:user:bb", "", NULL, NULL));
    assert_int_equal(ag_deny_cache_entries(c), 1);
    assert_int_equal(ag_metrics_get(m, AG_M_DENY_CACHE_INVALIDATIONS), 1);
    ag_deny_cache_free(c);
    ag_metrics_free(m);
}

static void an_insert_that_raced_an_invalidation_is_dropped(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_deny_cache *c = cache(1024, NULL);
    /* Read before the Redis call; an invalidation of any key comes while
     * it is out. */
    uint64_t e = ag_deny_cache_epoch(c);
    ag_deny_cache_invalidate(c, "ag:p:aa");
    assert_int_equal(ag_deny_cache_insert(c, e, "ag:p:aa", "", 100, 0),
                     AG_EPENDING);
    assert_false(ag_deny_cache_lookup(c, "ag:p:aa", "", NULL, NULL));
    uint64_t e2 = ag_deny_cache_epoch(c);
    ag_deny_cache_clear(c);
    assert_int_equal(ag_deny_cache_insert(c, e2, "ag:p:aa", "", 100, 0),
                     AG_EPENDING);
    ag_deny_cache_free(c);
}

/* An invalidation drops only the inserts of its own lock stripe: one of
 * a key's, and about 1 in 64 of the others. With one epoch for the whole
 * cache, every insert that raced any key's invalidation was dropped, and
 * a fleet's successful logins publish invalidations all the time. */
static void an_invalidation_drops_only_inserts_of_its_stripe(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_deny_cache *c = cache(1024, NULL);
    uint64_t e = ag_deny_cache_epoch(c);
    ag_deny_cache_invalidate(c, "ag:p:aa");
    int taken = 0;
    char key[32];
    for (int i = 0; i < 16; i++) {
        snprintf(key, sizeof key, "ag:p:other%d", i);
        taken += ag_deny_cache_insert(c, e, key, "", 100, 0) == AG_OK;
    }
    /* All 16 in the invalidated key's stripe: 1 in 64^16. */
    assert_true(taken > 0);
    /* The invalidated key's own insert is still dropped. */
    assert_int_equal(ag_deny_cache_insert(c, e, "ag:p:aa", "", 100, 0),
                     AG_EPENDING);
    /* An epoch read after the invalidation is not. */
    assert_int_equal(
        ag_deny_cache_insert(c, ag_deny_cache_epoch(c), "ag:p:aa", "", 100, 0),
        AG_OK);
    ag_deny_cache_free(c);
}

static void a_clear_drops_every_entry(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_deny_cache *c = cache(1024, NULL);
    uint64_t e = ag_deny_cache_epoch(c);
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "ag:p:%d", i);
        ag_deny_cache_insert(c, e, key, "", 100, 0);
    }
    assert_true(ag_deny_cache_entries(c) > 50);
    ag_deny_cache_clear(c);
    assert_int_equal(ag_deny_cache_entries(c), 0);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "ag:p:%d", i);
        assert_false(ag_deny_cache_lookup(c, key, "", NULL, NULL));
    }
    ag_deny_cache_free(c);
}

static void a_cache_that_is_not_live_holds_and_answers_nothing(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_deny_cache *c = cache(64, NULL);
    uint64_t e = ag_deny_cache_epoch(c);
    ag_deny_cache_insert(c, e, "ag:p:aa", "", 100, 0);
    ag_deny_cache_set_live(c, false); /* the subscription dropped */
    assert_false(ag_deny_cache_live(c));
    assert_int_equal(ag_deny_cache_entries(c), 0);
    assert_int_equal(
        ag_deny_cache_insert(c, ag_deny_cache_epoch(c), "ag:p:aa", "", 100, 0),
        AG_EPENDING);
    assert_false(ag_deny_cache_lookup(c, "ag:p:aa", "", NULL, NULL));
    ag_deny_cache_set_live(c, true);
    assert_int_equal(
        ag_deny_cache_insert(c, ag_deny_cache_epoch(c), "ag:p:aa", "", 100, 0),
        AG_OK);
    ag_deny_cache_free(c);
}

struct worker {
    struct ag_deny_cache *c;
    int id;
    int hits;
};

static void *hammer(void *arg)
{
    struct worker *w = arg;
    char key[32];
    for (int round = 0; round < 20000; round++) {
        snprintf(key, sizeof key, "ag:p:%d:%d", w->id, round % 300);
        ag_deny_cache_insert(w->c, ag_deny_cache_epoch(w->c), key, "",
                             UINT64_MAX, 0);
        w->hits += ag_deny_cache_lookup(w->c, key, "", NULL, NULL);
        if (round % 97 == 0)
            ag_deny_cache_invalidate(w->c, key);
        if (w->id == 0 && round % 500 == 0)
            ag_deny_cache_clear(w->c);
    }
    return NULL;
}

static void many_threads_at_once_keep_the_count_straight(void **state)
{
    (void)state;
    fake_now = 0;
    struct ag_metrics *m = ag_metrics_new();
    assert_non_null(m);
    struct ag_deny_cache *c = cache(4096, m);
    pthread_t t[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.c = c, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int hits = 0;
    for (int i = 0; i < 4; i++)
        hits += w[i].hits;
    assert_true(hits > 0);
    /* Every entry counted is a slot that holds one. */
    size_t held = 0;
    char key[32];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 300; k++) {
            snprintf(key, sizeof key, "ag:p:%d:%d", i, k);
            held += ag_deny_cache_lookup(c, key, "", NULL, NULL);
        }
    assert_int_equal(ag_deny_cache_entries(c), held);
    /* And the gauge says the same, whatever order the threads ran in. */
    assert_int_equal(ag_metrics_get(m, AG_M_DENY_CACHE_ENTRIES), held);
    ag_deny_cache_clear(c);
    assert_int_equal(ag_deny_cache_entries(c), 0);
    assert_int_equal(ag_metrics_get(m, AG_M_DENY_CACHE_ENTRIES), 0);
    ag_deny_cache_free(c);
    ag_metrics_free(m);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_entry_holds_until_its_deadline_and_not_after),
        cmocka_unit_test(an_entry_is_held_at_most_the_cap),
        cmocka_unit_test(a_deadline_already_past_is_not_taken),
        cmocka_unit_test(members_of_one_key_are_apart),
        cmocka_unit_test(a_full_cache_evicts_the_nearest_expiry),
        cmocka_unit_test(an_expired_slot_is_reused_before_evicting),
        cmocka_unit_test(invalidating_a_key_drops_its_every_member),
        cmocka_unit_test(an_insert_that_raced_an_invalidation_is_dropped),
        cmocka_unit_test(an_invalidation_drops_only_inserts_of_its_stripe),
        cmocka_unit_test(a_clear_drops_every_entry),
        cmocka_unit_test(a_cache_that_is_not_live_holds_and_answers_nothing),
        cmocka_unit_test(many_threads_at_once_keep_the_count_straight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
