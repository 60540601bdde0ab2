/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_service with the local deny cache (issue 20) in front of the fake
 * store of ag_test_service.h: a denial answered from it until a
 * millisecond short of the store's wait and at most the cap, with the
 * store's reset_after, dropped by a new ruleset wherever it lands and
 * kept by a reload of the same policies, and never a challenge where the
 * store would report a deny. A reset's invalidation is
 * test_service_admin.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include <sodium.h>

#include "ag_deny_cache.h"
#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_service.h"
#include "ag_test.h"
#include "ag_test_service.h"
#include "ag_verdict.h"

static void
a_denial_is_answered_from_the_cache_until_the_stores_wait(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_false(body_has(&r, "cached"));
    assert_int_equal(w->store.checks, 1);
    /* The store is asked no more, and the wait counts down. */
    cache_now += 2000000;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"cached\":true"));
    assert_true(body_has(&r, "\"retry_after\":3,"));
    assert_int_equal(r.retry_after, 3);
    assert_int_equal(w->store.checks, 1);
    /* A millisecond short of the store's 5 s wait: the last cached one. */
    cache_now += 2998999;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_int_equal(w->store.checks, 1);
    cache_now += 1;
    w->store.deny_ms = 0;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.checks, 2);
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

static void a_cached_denial_is_a_verdict_of_the_cached_policies(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    struct ag_check *c = NULL;
    struct ag_verdict v;
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &v),
                     AG_OK);
    assert_null(c);
    assert_int_equal(v.kind, AG_VERDICT_DECIDED);
    assert_true(v.cached);
    assert_int_equal(v.plan->n, 1);
    assert_false(v.decision.allowed);
    assert_int_equal(v.decision.retry_after_s, 5);
    ag_verdict_release(&v);
    assert_int_equal(w->store.checks, 1);
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

/* A copy of set with its first policy's limit raised: an edit. */
static struct ag_ruleset *raised_copy(const struct ag_ruleset *set)
{
    struct ag_policy ps[8];
    assert_true(set->count <= 8);
    memcpy(ps, set->policies, set->count * sizeof ps[0]);
    ps[0].limit++;
    return ag_ruleset_new(ps, set->count, set->version + 1);
}

static void a_new_ruleset_drops_every_cached_denial(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    run_check(w, LOGIN_BODY, &r);
    assert_int_equal(ag_deny_cache_entries(dc), 1);
    ag_service_set_ruleset(w->svc, raised_copy(w->set));
    assert_int_equal(ag_deny_cache_entries(dc), 0);
    run_check(w, LOGIN_BODY, &r);
    assert_false(body_has(&r, "cached"));
    assert_int_equal(w->store.checks, 2);
    ag_http_response_free(&r);
    ag_service_set_ruleset(w->svc, ag_ruleset_ref(w->set));
    world_free(w);
    ag_deny_cache_free(dc);
}

/* A reload that changed no policy (a list entry, an inspect's audit row)
 * keeps what the cache holds. */
static void a_reload_of_the_same_policies_keeps_the_cache(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    run_check(w, LOGIN_BODY, &r);
    assert_int_equal(ag_deny_cache_entries(dc), 1);
    ag_service_set_ruleset(
        w->svc,
        ag_ruleset_new(w->set->policies, w->set->count, w->set->version + 1));
    assert_int_equal(ag_deny_cache_entries(dc), 1);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"cached\":true"));
    assert_int_equal(w->store.checks, 1);
    ag_http_response_free(&r);
    ag_service_set_ruleset(w->svc, ag_ruleset_ref(w->set));
    world_free(w);
    ag_deny_cache_free(dc);
}

static void
a_long_denial_is_cached_for_the_cap_and_reports_its_wait(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    w->store.deny_ms = 3600000;
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    cache_now += AG_DENY_CACHE_MAX_HOLD_MS * 1000u - 1;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"cached\":true"));
    assert_true(body_has(&r, "\"retry_after\":3591,"));
    assert_int_equal(w->store.checks, 1);
    /* The cap has come: Redis is asked again (and still denies). */
    cache_now += 1;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_false(body_has(&r, "cached"));
    assert_int_equal(w->store.checks, 2);
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

static void a_cached_answer_reports_the_reset_after_the_store_gave(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"reset_after\":5,"));
    /* At once from the cache: the same whole seconds, not one more. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"cached\":true"));
    assert_true(body_has(&r, "\"reset_after\":5,"));
    cache_now += 2000000;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"reset_after\":3,"));
    assert_int_equal(w->store.checks, 1);
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

/* A ruleset swapped by the deny cache's clock on its swap_at-th reading
 * since armed: each reading of a check is a moment an admin's edit could
 * land between its plan and its store call. */
static struct world *swap_world;
static struct ag_ruleset *swap_to;
static int swap_at, swap_reads;

static uint64_t swapping_clock(void *ctx)
{
    (void)ctx;
    if (swap_to && ++swap_reads == swap_at) {
        struct ag_ruleset *set = swap_to;
        swap_to = NULL;
        ag_service_set_ruleset(swap_world->svc, set);
    }
    return cache_now;
}

static void a_denial_of_the_old_ruleset_is_not_cached_after_a_swap(void **state)
{
    (void)state;
    /* Each of a check's first three clock readings (before its plan, after
     * it, at the insert) in turn: wherever the edit lands, no denial the
     * old set computed may answer a check of the new one. */
    for (swap_at = 1; swap_at <= 3; swap_at++) {
        struct ag_deny_cache *dc;
        struct ag_deny_cache_opts o = {.entries = 64, .clock = swapping_clock};
        assert_int_equal(ag_deny_cache_new(&o, &dc), AG_OK);
        ag_deny_cache_set_live(dc, true);
        static const char *const ps[] = {OPEN};
        next_cache = dc;
        struct world *w = world_new(true, ps, 1);
        next_cache = NULL;
        swap_world = w;
        w->store.deny_ms = 3600000; /* the old policy denies for an hour */
        swap_reads = 0;
        swap_to = raised_copy(w->set);
        struct ag_http_response r;
        ag_http_response_init(&r);
        assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
        assert_null(swap_to); /* the swap did land within the check */
        /* The new set allows: no cached denial may stand. */
        w->store.deny_ms = 0;
        assert_int_equal(ag_deny_cache_entries(dc), 0);
        assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
        assert_int_equal(w->store.checks, 2);
        ag_http_response_free(&r);
        ag_service_set_ruleset(w->svc, ag_ruleset_ref(w->set));
        world_free(w);
        ag_deny_cache_free(dc);
    }
}

#define LOCK                                                                   \
    "{\"name\":\"login.lock\",\"endpoint\":\"login\",\"key\":[\"user\"],"      \
    "\"algorithm\":\"consecutive\",\"limit\":5,\"window_s\":900,"              \
    "\"counts\":\"failures\"}"

/* A challenge and a never-cached deny both deny: Redis reports the deny,
 * and so must every later answer (never the cached challenge alone). */
static void
a_cached_challenge_never_hides_a_deny_redis_would_report(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct ag_deny_cache_opts o = {.entries = 64, .clock = cache_clock};
    assert_int_equal(ag_deny_cache_new(&o, &dc), AG_OK);
    ag_deny_cache_set_live(dc, true);
    static const char *const ps[] = {ASK, LOCK};
    next_cache = dc;
    struct world *w = world_new(true, ps, 2);
    next_cache = NULL;
    w->store.deny_ms = 60000; /* both policies deny */
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"policy\":\"login.lock\",\"action\":\"deny\""));
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"policy\":\"login.lock\",\"action\":\"deny\""));
    assert_int_equal(w->store.checks, 2);
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

/* The default policies' shape: a challenge policy and a consecutive lock
 * in every login check. While the lock allows, the challenge's denial is
 * cached as any other; a flood must not reach Redis for it. */
static void
a_challenge_beside_an_allowing_lock_is_answered_from_the_cache(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct ag_deny_cache_opts o = {.entries = 64, .clock = cache_clock};
    assert_int_equal(ag_deny_cache_new(&o, &dc), AG_OK);
    ag_deny_cache_set_live(dc, true);
    static const char *const ps[] = {ASK, LOCK};
    next_cache = dc;
    struct world *w = world_new(true, ps, 2);
    next_cache = NULL;
    w->store.deny_ms = 60000;
    w->store.allow_ops = 1u << 1; /* login.lock (after login.ask) allows */
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
        assert_true(
            body_has(&r, "\"policy\":\"login.ask\",\"action\":\"challenge\""));
    }
    assert_int_equal(w->store.checks, 1);
    assert_true(body_has(&r, "\"cached\":true"));
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            a_denial_is_answered_from_the_cache_until_the_stores_wait),
        cmocka_unit_test(a_cached_denial_is_a_verdict_of_the_cached_policies),
        cmocka_unit_test(a_new_ruleset_drops_every_cached_denial),
        cmocka_unit_test(a_reload_of_the_same_policies_keeps_the_cache),
        cmocka_unit_test(
            a_long_denial_is_cached_for_the_cap_and_reports_its_wait),
        cmocka_unit_test(
            a_cached_answer_reports_the_reset_after_the_store_gave),
        cmocka_unit_test(
            a_denial_of_the_old_ruleset_is_not_cached_after_a_swap),
        cmocka_unit_test(
            a_cached_challenge_never_hides_a_deny_redis_would_report),
        cmocka_unit_test(
            a_challenge_beside_an_allowing_lock_is_answered_from_the_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
