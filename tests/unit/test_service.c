/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_service: the check lifecycle over a fake store (one that answers,
 * fails, or answers later on demand) and the real in-process fallback:
 * fail closed against fail open, list precedence, login reports, an
 * abandoned check, the waiter's order, resets during an outage, device
 * tokens and their lanes, the challenge tier, and the deny cache (a
 * denial answered from it until a millisecond short of the store's wait
 * and at most the cap, with the store's reset_after, dropped by a reset,
 * which is published, and by a new ruleset wherever it lands, and never
 * a challenge where the store would report a deny).
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

#include <jansson.h>
#include <sodium.h>

#include "ag_deny_cache.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_lists.h"
#include "ag_metrics.h"
#include "ag_service.h"
#include "ag_store.h"
#include "ag_test.h"

/* A store whose answers the test sets: every check allowed with
 * `remaining`, or failed with `rc`; asynchronous when `async` (the answer
 * then waits for fake_answer). It keeps a log of what it was asked. */
struct fake {
    struct ag_store base;
    int rc;
    int clear_rc; /* what clear answers while rc is AG_OK (default AG_OK) */
    bool async;
    uint32_t remaining;
    uint64_t deny_ms;   /* not 0: every check denied, retry after this */
    unsigned allow_ops; /* bit i: plan op i allowed even so */
    int checks, clears, publishes;
    /* A cluster's partial clear: while set, a clear whose plan holds a key
     * with this prefix fails (AG_ESTORE, that node is down) after the
     * other keys were cleared (their nodes are up), as cluster_clear does;
     * user_clears counts the clears of "ag:login.user:" keys done. */
    const char *down_prefix;
    int user_clears;
    char log[256];
    enum ag_plan_kind last_kind;
    size_t last_n;
    char last_names[256]; /* the last plan's policies, space-separated */
    /* A pending asynchronous check. */
    ag_store_done_fn done;
    void *done_arg;
};

static void note(struct fake *f, const char *what)
{
    strncat(f->log, what, sizeof f->log - strlen(f->log) - 1);
}

static void note_names(struct fake *f, const struct ag_plan *plan)
{
    f->last_names[0] = '\0';
    for (size_t i = 0; i < plan->n; i++) {
        size_t n = strlen(f->last_names);
        snprintf(f->last_names + n, sizeof f->last_names - n, "%s%s",
                 i ? " " : "", plan->ops[i].policy->name);
    }
}

static int fake_check(struct ag_store *s, const struct ag_plan *plan,
                      struct ag_limit_result *res)
{
    struct fake *f = (struct fake *)s;
    f->checks++;
    f->last_kind = plan->kind;
    f->last_n = plan->n;
    note_names(f, plan);
    note(f, "check ");
    for (size_t i = 0; f->rc == AG_OK && i < plan->n; i++)
        res[i] = f->deny_ms && !(f->allow_ops & (1u << i))
                     ? (struct ag_limit_result){.allowed = false,
                                                .retry_after_ms = f->deny_ms,
                                                .reset_after_ms = f->deny_ms}
                     : (struct ag_limit_result){.allowed = true,
                                                .remaining = f->remaining};
    return f->rc;
}

static int fake_check_async(struct ag_store *s, const struct ag_plan *plan,
                            struct ag_limit_result *res, ag_store_done_fn done,
                            void *arg)
{
    struct fake *f = (struct fake *)s;
    if (f->rc != AG_OK)
        return f->rc; /* not started: the callback never comes */
    fake_check(s, plan, res);
    note(f, "started ");
    f->done = done;
    f->done_arg = arg;
    return AG_OK;
}

static void fake_answer(struct fake *f)
{
    assert_non_null(f->done);
    ag_store_done_fn done = f->done;
    f->done = NULL;
    done(f->done_arg, AG_OK);
}

static int fake_clear(struct ag_store *s, const struct ag_plan *plan)
{
    struct fake *f = (struct fake *)s;
    f->clears++;
    f->last_kind = plan->kind;
    f->last_n = plan->n;
    note_names(f, plan);
    note(f, "clear ");
    if (f->rc)
        return f->rc;
    bool down = false;
    for (size_t i = 0; i < plan->n; i++) {
        if (f->down_prefix && strncmp(plan->ops[i].key, f->down_prefix,
                                      strlen(f->down_prefix)) == 0)
            down = true;
        else if (strncmp(plan->ops[i].key, "ag:login.user:", 14) == 0)
            f->user_clears++;
    }
    return down ? AG_ESTORE : f->clear_rc;
}

static void fake_publish(struct ag_store *s, const char *channel,
                         const char *message)
{
    struct fake *f = (struct fake *)s;
    assert_string_equal(channel, AG_DENY_CACHE_CHANNEL);
    assert_int_equal(strncmp(message, "ag:", 3), 0);
    f->publishes++;
    note(f, "publish ");
}

static int marker_dels; /* DELs the fake was sent: the store's clear's job */

static int fake_command_async(struct ag_store *s, int argc, const char **argv,
                              const size_t *lens, int key_at,
                              ag_store_reply_fn done, void *arg)
{
    (void)lens;
    (void)key_at;
    struct fake *f = (struct fake *)s;
    if (f->rc != AG_OK)
        return AG_ESTORE; /* as the Redis store while its breaker is open */
    if (argc >= 1 && strcmp(argv[0], "DEL") == 0) {
        marker_dels++;
        note(f, "del ");
    }
    (void)done;
    (void)arg;
    return AG_ESTORE; /* nothing else (an XADD) is taken */
}

static int fake_ping(struct ag_store *s)
{
    return ((struct fake *)s)->rc;
}

static void fake_destroy(struct ag_store *s)
{
    (void)s;
}

static const struct ag_store_ops sync_ops = {
    .name = "fake",
    .check = fake_check,
    .clear = fake_clear,
    .ping = fake_ping,
    .publish = fake_publish,
    .destroy = fake_destroy,
};

static const struct ag_store_ops events_ops = {
    .name = "fake-events",
    .check = fake_check,
    .clear = fake_clear,
    .ping = fake_ping,
    .command_async = fake_command_async,
    .publish = fake_publish,
    .destroy = fake_destroy,
};

static const struct ag_store_ops async_ops = {
    .name = "fake-async",
    .check = fake_check,
    .check_async = fake_check_async,
    .clear = fake_clear,
    .ping = fake_ping,
    .publish = fake_publish,
    .destroy = fake_destroy,
};

static uint64_t fake_now = 1000000000000ull;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* The deny cache's clock, microseconds, and the cache world_new gives
 * the next service (NULL: none). */
static uint64_t cache_now = 5000000;

static uint64_t cache_clock(void *ctx)
{
    (void)ctx;
    return cache_now;
}

static struct ag_deny_cache *next_cache;
static struct ag_events *next_events; /* the next service's, or NULL */

/* What the waiter saw, in order. */
static char waiter_log[128];

static void w_suspend(void *arg)
{
    (void)arg;
    strcat(waiter_log, "suspend ");
}

static void w_resume(void *arg)
{
    (void)arg;
    strcat(waiter_log, "resume ");
}

static const struct ag_check_waiter waiter = {w_suspend, w_resume, NULL};

struct world {
    struct fake store;
    struct ag_store *fallback;
    struct ag_metrics *metrics;
    struct ag_hasher hasher;
    struct ag_service *svc;
    struct ag_ruleset *set; /* a reference the test keeps */
};

static struct world *world_new(bool async, const char *const *policies,
                               size_t n)
{
    struct world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->store.base.ops = async ? &async_ops : &sync_ops;
    w->store.remaining = 7;
    w->fallback = ag_store_mem_new(1024, 4096, fake_clock, NULL);
    assert_non_null(w->fallback);
    w->metrics = ag_metrics_new();
    assert_non_null(w->metrics);
    unsigned char secret[32] = {1};
    ag_hasher_init(&w->hasher, secret, sizeof secret);
    struct ag_service_opts o = {
        .hasher = &w->hasher,
        .store = &w->store.base,
        .fallback = w->fallback,
        .metrics = w->metrics,
        .deny_cache = next_cache,
        .events = next_events,
    };
    assert_int_equal(ag_service_new(&o, &w->svc), AG_OK);
    struct ag_policy ps[8];
    for (size_t i = 0; i < n; i++)
        ps[i] = ag_test_policy(policies[i]);
    w->set = ag_ruleset_new(ps, n, 1);
    assert_non_null(w->set);
    ag_service_set_ruleset(w->svc, ag_ruleset_ref(w->set));
    waiter_log[0] = '\0';
    return w;
}

static void world_free(struct world *w)
{
    ag_service_free(w->svc);
    /* The service's reference is gone: only the test's is left. */
    assert_int_equal(atomic_load(&w->set->refs), 1);
    ag_ruleset_unref(w->set);
    ag_store_destroy(w->fallback);
    ag_metrics_free(w->metrics);
    free(w);
}

static void add_list(struct world *w, enum ag_list list, const char *json)
{
    json_t *o = json_loads(json, 0, NULL);
    assert_non_null(o);
    struct ag_list_entry *e = calloc(2, sizeof *e);
    size_t n = w->set->nlists;
    if (n) /* keep the entries already there */
        memcpy(e, w->set->lists, n * sizeof *e);
    struct ag_error err;
    assert_int_equal(ag_list_entry_from_json(o, list, &w->hasher, &e[n], &err),
                     AG_OK);
    e[n].id = (int64_t)n + 1;
    json_decref(o);
    /* A new set with the same policies and these lists. */
    struct ag_ruleset *set =
        ag_ruleset_new(w->set->policies, w->set->count, w->set->version + 1);
    ag_ruleset_adopt_lists(set, e, n + 1);
    ag_ruleset_unref(w->set);
    w->set = set;
    ag_service_set_ruleset(w->svc, ag_ruleset_ref(set));
}

static const char *const LOGIN_BODY =
    "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\"}";

#define OPEN                                                                   \
    "{\"name\":\"login.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"      \
    "\"algorithm\":\"sliding_log\",\"limit\":2,\"window_s\":60}"
#define CLOSED                                                                 \
    "{\"name\":\"login.ip\",\"endpoint\":\"login\",\"key\":[\"ip\"],"          \
    "\"algorithm\":\"sliding_log\",\"limit\":5,\"window_s\":60,"               \
    "\"fail\":\"closed\"}"
#define FAILURES                                                               \
    "{\"name\":\"login.user_ip_fail\",\"endpoint\":\"login\","                 \
    "\"key\":[\"user\",\"ip\"],\"algorithm\":\"sliding_log\",\"limit\":3,"     \
    "\"window_s\":60,\"counts\":\"failures\"}"

/* Runs one check of endpoint to its answer: begin, then (if it waited)
 * the fake's answer and finish. Returns the status. */
static int run_check_of(struct world *w, enum ag_endpoint endpoint,
                        const char *body, struct ag_http_response *r)
{
    waiter_log[0] = '\0'; /* each check's own order */
    struct ag_check *c = NULL;
    int rc = ag_service_check_begin(w->svc, endpoint, body, strlen(body),
                                    &waiter, &c, r);
    if (rc == AG_EPENDING) {
        assert_non_null(c);
        if (w->store.done)
            fake_answer(&w->store);
        rc = ag_service_check_finish(c, r);
    } else {
        assert_null(c);
    }
    assert_int_equal(rc, AG_OK);
    return r->status;
}

static int run_check(struct world *w, const char *body,
                     struct ag_http_response *r)
{
    return run_check_of(w, AG_EP_LOGIN, body, r);
}

static bool body_has(const struct ag_http_response *r, const char *s)
{
    return r->body.p && strstr(r->body.p, s);
}

static void allowed_check_carries_the_stores_answer(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(true, ps, 1);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_true(body_has(&r, "\"remaining\":7"));
    assert_false(body_has(&r, "degraded"));
    assert_int_equal(w->store.checks, 1);
    ag_http_response_free(&r);
    world_free(w);
}

static void
waiter_is_suspended_before_the_store_starts_and_resumed_once(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(true, ps, 1);
    struct ag_http_response r;
    ag_http_response_init(&r);
    struct ag_check *c = NULL;
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &r),
                     AG_EPENDING);
    /* Started and waiting: suspended, not yet resumed. */
    assert_string_equal(waiter_log, "suspend ");
    assert_int_equal(ag_service_waiting(w->svc), 1);
    fake_answer(&w->store);
    assert_string_equal(waiter_log, "suspend resume ");
    assert_int_equal(ag_service_waiting(w->svc), 0);
    assert_int_equal(ag_service_check_finish(c, &r), AG_OK);
    assert_int_equal(r.status, 200);
    ag_http_response_free(&r);
    world_free(w);
}

static void
store_that_cannot_start_resumes_at_once_into_the_fallback(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(true, ps, 1);
    w->store.rc = AG_ESTORE; /* the breaker is open, say */
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_string_equal(waiter_log, "suspend resume ");
    assert_true(body_has(&r, "\"degraded\":true"));
    ag_http_response_free(&r);
    world_free(w);
}

static void fail_open_policies_are_limited_by_the_fallback(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    w->store.rc = AG_ESTORE;
    int statuses[3];
    for (int i = 0; i < 3; i++) {
        struct ag_http_response r;
        ag_http_response_init(&r);
        statuses[i] = run_check(w, LOGIN_BODY, &r);
        assert_true(body_has(&r, "\"degraded\":true"));
        ag_http_response_free(&r);
    }
    /* limit 2: the fallback allows two, then denies. */
    assert_int_equal(statuses[0], 200);
    assert_int_equal(statuses[1], 200);
    assert_int_equal(statuses[2], 429);
    world_free(w);
}

static void
a_fail_closed_policy_denies_the_check_and_charges_nothing(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, CLOSED};
    struct world *w = world_new(false, ps, 2);
    w->store.rc = AG_ESTORE;
    for (int i = 0; i < 3; i++) {
        struct ag_http_response r;
        ag_http_response_init(&r);
        assert_int_equal(run_check(w, LOGIN_BODY, &r), 503);
        assert_true(body_has(&r, "store_unavailable"));
        assert_true(body_has(&r, "login.ip"));
        ag_http_response_free(&r);
    }
    /* Nothing went to the fallback: with Redis still down but the closed
     * policy gone, the open one allows its whole limit. */
    static const char *const open_only[] = {OPEN};
    struct ag_policy p = ag_test_policy(open_only[0]);
    ag_service_set_ruleset(w->svc, ag_ruleset_new(&p, 1, 2));
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_true(body_has(&r, "\"remaining\":1"));
    ag_http_response_free(&r);
    world_free(w);
}

static void deny_list_wins_over_allow_and_the_store_is_not_asked(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    add_list(w, AG_LIST_ALLOW, "{\"kind\":\"ip\",\"value\":\"192.0.2.0/24\"}");
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_true(body_has(&r, "\"list\":\"allow\""));
    add_list(w, AG_LIST_DENY,
             "{\"kind\":\"user\",\"value\":\"ANA@example.com\"}");
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 403);
    assert_true(body_has(&r, "\"list\":\"deny\""));
    assert_int_equal(w->store.checks, 0);
    ag_http_response_free(&r);
    world_free(w);
}

static void
a_refused_body_names_its_field_and_never_reaches_the_store(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(true, ps, 1);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, "{\"user\":\"ana\"}", &r), 400);
    assert_true(body_has(&r, "\"field\":\"ip\""));
    assert_int_equal(w->store.checks, 0);
    assert_string_equal(waiter_log, "");
    ag_http_response_free(&r);
    world_free(w);
}

static void report_failure_charges_the_failure_policies(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILURES};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    const char *fail = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                       "\"success\":false}";
    assert_int_equal(ag_service_report_login(w->svc, fail, strlen(fail), &r),
                     AG_OK);
    assert_int_equal(r.status, 204);
    assert_int_equal(w->store.checks, 1);
    assert_int_equal(w->store.last_kind, AG_PLAN_FAILURE);
    assert_int_equal(w->store.last_n, 1); /* the failure policy alone */
    const char *ok = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                     "\"success\":true}";
    assert_int_equal(ag_service_report_login(w->svc, ok, strlen(ok), &r),
                     AG_OK);
    assert_int_equal(w->store.clears, 1);
    assert_int_equal(w->store.last_kind, AG_PLAN_SUCCESS);
    ag_http_response_free(&r);
    world_free(w);
}

static void report_during_an_outage_is_recorded_in_the_fallback(void **state)
{
    (void)state;
    static const char *const ps[] = {FAILURES};
    struct world *w = world_new(false, ps, 1);
    w->store.rc = AG_ESTORE;
    const char *fail = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                       "\"success\":false}";
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 3; i++)
        assert_int_equal(
            ag_service_report_login(w->svc, fail, strlen(fail), &r), AG_OK);
    /* Three failures fill the fallback's log: the next check is denied. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "login.user_ip_fail"));
    ag_http_response_free(&r);
    world_free(w);
}

static void repeated_password_fingerprint_is_charged_once(void **state)
{
    (void)state;
    static const char *const ps[] = {FAILURES};
    struct world *w = world_new(false, ps, 1);
    /* The fallback, a real store, judges: the fake one is down. */
    w->store.rc = AG_ESTORE;
    struct ag_http_response r;
    ag_http_response_init(&r);
    static const char *const fps[] = {"stale", "stale", "stale",
                                      "stale", "stale", "other"};
    char fail[160];
    for (size_t i = 0; i < sizeof fps / sizeof fps[0]; i++) {
        snprintf(fail, sizeof fail,
                 "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                 "\"success\":false,\"password_fp\":\"%s\"}",
                 fps[i]);
        assert_int_equal(
            ag_service_report_login(w->svc, fail, strlen(fail), &r), AG_OK);
    }
    /* Six failures, two passwords: two charged of the limit of three. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    const char *third = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                        "\"success\":false}";
    assert_int_equal(ag_service_report_login(w->svc, third, strlen(third), &r),
                     AG_OK);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    ag_http_response_free(&r);
    world_free(w);
}

static void abandoned_check_releases_its_ruleset(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(true, ps, 1);
    struct ag_http_response r;
    ag_http_response_init(&r);
    struct ag_check *c = NULL;
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &r),
                     AG_EPENDING);
    /* The test's, the service's and the check's. */
    assert_int_equal(atomic_load(&w->set->refs), 3);
    fake_answer(&w->store);
    ag_service_check_abandon(c);
    assert_int_equal(atomic_load(&w->set->refs), 2);
    ag_http_response_free(&r);
    world_free(w);
}

static void
reset_during_an_outage_clears_the_fallback_and_later_the_store(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(OPEN);
    w->store.rc = AG_ESTORE;
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 2; i++)
        run_check(w, LOGIN_BODY, &r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429); /* fallback full */
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EPENDING);
    assert_int_equal(strncmp(key, "ag:login.user:", 14), 0);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200); /* fallback clear */
    /* Redis answers again: the queued clear goes before the next check. */
    w->store.rc = AG_OK;
    w->store.log[0] = '\0';
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    /* Cleared, then published for the other instances' deny caches. */
    assert_string_equal(w->store.log, "clear publish check ");
    w->store.log[0] = '\0';
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_string_equal(w->store.log, "check "); /* sent once */
    ag_http_response_free(&r);
    world_free(w);
}

static void reset_the_store_may_have_done_is_not_sent_again(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    /* Sent, never answered: the fallback is cleared, the caller told. */
    w->store.clear_rc = AG_EUNKNOWN;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EUNKNOWN);
    /* Queued while the store is down, then sent once and unanswered: it
     * counts as done and is not sent again. */
    w->store.rc = AG_ESTORE;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EPENDING);
    w->store.rc = AG_OK;
    w->store.log[0] = '\0';
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    /* It may have been done: published like a clear that was. */
    assert_string_equal(w->store.log, "clear publish check ");
    w->store.log[0] = '\0';
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_string_equal(w->store.log, "check ");
    ag_http_response_free(&r);
    world_free(w);
}

static void reset_names_the_missing_identifier(void **state)
{
    (void)state;
    static const char *const ps[] = {FAILURES};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(FAILURES);
    const char *body = "{\"user\":\"ana@example.com\"}";
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    assert_int_equal(
        ag_service_reset(w->svc, &p, body, strlen(body), key, &err), AG_EINVAL);
    assert_string_equal(err.field, "ip");
    assert_int_equal(w->store.clears, 0);
    world_free(w);
}

/* Device tokens and lanes. */

#define ANA "ana@example.com"
#define TTL AG_DEVICE_TTL_DEFAULT_S

/* A token for user minted as the service would at issued_s. */
static void mint(struct world *w, const char *user, uint64_t issued_s,
                 char *token)
{
    struct ag_device_key k;
    ag_device_key_init(&k, &w->hasher);
    char digest[AG_DIGEST_HEX + 1];
    ag_identity_digest(&w->hasher, AG_KEY_USER, user, digest);
    ag_device_issue(&k, digest, NULL, issued_s, token);
}

static uint64_t now_s(void)
{
    return (uint64_t)time(NULL);
}

/* A login body for ANA carrying token as its device_token (raw JSON). */
static const char *with_token(const char *token_json, const char *extra)
{
    static char body[1024];
    snprintf(body, sizeof body,
             "{\"user\":\"ANA@example.com\",\"ip\":\"192.0.2.1\","
             "\"device_token\":%s%s}",
             token_json, extra ? extra : "");
    return body;
}

static const char *quoted(const char *token)
{
    static char q[AG_DEVICE_TOKEN_TEXT_MAX + 8];
    snprintf(q, sizeof q, "\"%s\"", token);
    return q;
}

/* The device_token of a 200 /report-login answer; fails otherwise. */
static void token_of(const struct ag_http_response *r, char *token)
{
    assert_int_equal(r->status, 200);
    json_t *b = json_loadb(r->body.p, r->body.len, 0, NULL);
    assert_non_null(b);
    const char *t = json_string_value(json_object_get(b, "device_token"));
    assert_non_null(t);
    assert_int_equal(strlen(t), AG_DEVICE_TOKEN_LEN);
    strcpy(token, t);
    assert_int_equal(json_integer_value(json_object_get(b, "expires_in")), TTL);
    json_decref(b);
}

#define KNOWN                                                                  \
    "{\"name\":\"login.known\",\"endpoint\":\"login\",\"key\":[\"user\"],"     \
    "\"algorithm\":\"sliding_log\",\"limit\":20,\"window_s\":60,"              \
    "\"applies_to\":\"trusted\"}"
#define UNKNOWN                                                                \
    "{\"name\":\"login.unknown\",\"endpoint\":\"login\",\"key\":[\"user\"],"   \
    "\"algorithm\":\"sliding_log\",\"limit\":30,\"window_s\":60,"              \
    "\"applies_to\":\"untrusted\"}"
#define KNOWN_FAIL                                                             \
    "{\"name\":\"login.known_fail\",\"endpoint\":\"login\","                   \
    "\"key\":[\"user\",\"device_token\"],\"algorithm\":\"sliding_log\","       \
    "\"limit\":20,\"window_s\":60,\"counts\":\"failures\","                    \
    "\"applies_to\":\"trusted\"}"
#define UNKNOWN_FAIL                                                           \
    "{\"name\":\"login.unknown_fail\",\"endpoint\":\"login\","                 \
    "\"key\":[\"user\",\"ip\"],\"algorithm\":\"sliding_log\",\"limit\":5,"     \
    "\"window_s\":60,\"counts\":\"failures\",\"applies_to\":\"untrusted\"}"

static void successful_login_gets_a_token_that_is_trusted_after(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, KNOWN, UNKNOWN};
    struct world *w = world_new(false, ps, 3);
    struct ag_http_response r;
    ag_http_response_init(&r);
    const char *ok = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                     "\"success\":true}";
    assert_int_equal(ag_service_report_login(w->svc, ok, strlen(ok), &r),
                     AG_OK);
    char token[AG_DEVICE_TOKEN_LEN + 1];
    token_of(&r, token);
    /* The user, spelt differently, on its device: the trusted lane. */
    assert_int_equal(run_check(w, with_token(quoted(token), NULL), &r), 200);
    assert_true(body_has(&r, "\"device\":\"trusted\""));
    assert_string_equal(w->store.last_names, "login.known login.user");
    /* Without it: the untrusted lane. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_true(body_has(&r, "\"device\":\"untrusted\""));
    assert_string_equal(w->store.last_names, "login.unknown login.user");
    /* A failure report is still a 204 and hands out nothing. */
    const char *fail = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                       "\"success\":false}";
    assert_int_equal(ag_service_report_login(w->svc, fail, strlen(fail), &r),
                     AG_OK);
    assert_int_equal(r.status, 204);
    assert_int_equal(r.body.len, 0);
    ag_http_response_free(&r);
    world_free(w);
}

static void any_token_but_a_live_one_of_the_user_is_untrusted(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, KNOWN};
    struct world *w = world_new(false, ps, 2);
    char expired[AG_DEVICE_TOKEN_LEN + 1], future[AG_DEVICE_TOKEN_LEN + 1],
        bos[AG_DEVICE_TOKEN_LEN + 1], tampered[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s() - TTL - 1, expired);
    mint(w, ANA, now_s() + AG_DEVICE_SKEW_S + 600, future);
    mint(w, "bo@example.com", now_s(), bos);
    mint(w, ANA, now_s(), tampered);
    tampered[20] = tampered[20] == 'x' ? 'y' : 'x';
    static char oversized[700];
    memset(oversized, 'A', sizeof oversized - 1);
    memcpy(oversized, "v1.", 3);
    char expired_q[96], future_q[96], bos_q[96], tampered_q[96],
        oversized_q[720];
    snprintf(expired_q, sizeof expired_q, "\"%s\"", expired);
    snprintf(future_q, sizeof future_q, "\"%s\"", future);
    snprintf(bos_q, sizeof bos_q, "\"%s\"", bos);
    snprintf(tampered_q, sizeof tampered_q, "\"%s\"", tampered);
    snprintf(oversized_q, sizeof oversized_q, "\"%s\"", oversized);
    const char *const bad[] = {
        expired_q, future_q, bos_q,  tampered_q, oversized_q, "\"garbage\"",
        "\"\"",    "42",     "true", "null",     "[\"v1.\"]", "{}",
    };
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (run_check(w, with_token(bad[i], NULL), &r) != 200 ||
            !body_has(&r, "\"device\":\"untrusted\""))
            fail_msg("token %s: %d %s", bad[i], r.status, r.body.p);
        assert_string_equal(w->store.last_names, "login.user");
    }
    /* And the same token, live and the user's, is trusted. */
    char good[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s(), good);
    assert_int_equal(run_check(w, with_token(quoted(good), NULL), &r), 200);
    assert_true(body_has(&r, "\"device\":\"trusted\""));
    ag_http_response_free(&r);
    world_free(w);
}

#define OTP_KNOWN                                                              \
    "{\"name\":\"otp.known\",\"endpoint\":\"otp\",\"key\":[\"phone\"],"        \
    "\"algorithm\":\"sliding_log\",\"limit\":5,\"window_s\":60,"               \
    "\"applies_to\":\"trusted\"}"

static void otp_token_is_trusted_only_with_its_user(void **state)
{
    (void)state;
    static const char *const ps[] = {OTP_KNOWN};
    struct world *w = world_new(false, ps, 1);
    char token[AG_DEVICE_TOKEN_LEN + 1], body[256];
    mint(w, ANA, now_s(), token);
    struct ag_http_response r;
    ag_http_response_init(&r);
    snprintf(body, sizeof body,
             "{\"phone\":\"+48600100200\",\"ip\":\"192.0.2.1\","
             "\"user\":\"ana@example.com\",\"device_token\":\"%s\"}",
             token);
    assert_int_equal(run_check_of(w, AG_EP_OTP, body, &r), 200);
    assert_true(body_has(&r, "\"device\":\"trusted\""));
    assert_true(body_has(&r, "otp.known"));
    assert_int_equal(run_check_of(w, AG_EP_OTP_VERIFY, body, &r), 200);
    assert_true(body_has(&r, "\"device\":\"trusted\""));
    /* No user: nothing to bind the token to. */
    snprintf(body, sizeof body,
             "{\"phone\":\"+48600100200\",\"ip\":\"192.0.2.1\","
             "\"device_token\":\"%s\"}",
             token);
    assert_int_equal(run_check_of(w, AG_EP_OTP, body, &r), 200);
    assert_true(body_has(&r, "\"device\":\"untrusted\""));
    assert_false(body_has(&r, "otp.known"));
    ag_http_response_free(&r);
    world_free(w);
}

static void reports_are_laned_by_the_token_they_carry(void **state)
{
    (void)state;
    static const char *const ps[] = {KNOWN_FAIL, UNKNOWN_FAIL};
    struct world *w = world_new(false, ps, 2);
    char token[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s(), token);
    struct ag_http_response r;
    ag_http_response_init(&r);
    const char *fail = with_token(quoted(token), ",\"success\":false");
    assert_int_equal(ag_service_report_login(w->svc, fail, strlen(fail), &r),
                     AG_OK);
    assert_int_equal(r.status, 204);
    assert_int_equal(w->store.last_kind, AG_PLAN_FAILURE);
    assert_string_equal(w->store.last_names, "login.known_fail");
    fail = with_token("\"forged\"", ",\"success\":false");
    assert_int_equal(ag_service_report_login(w->svc, fail, strlen(fail), &r),
                     AG_OK);
    assert_string_equal(w->store.last_names, "login.unknown_fail");
    /* A success from the untrusted lane clears only that lane's. */
    const char *ok = with_token("\"forged\"", ",\"success\":true");
    assert_int_equal(ag_service_report_login(w->svc, ok, strlen(ok), &r),
                     AG_OK);
    assert_int_equal(w->store.last_kind, AG_PLAN_SUCCESS);
    assert_string_equal(w->store.last_names, "login.unknown_fail");
    ag_http_response_free(&r);
    world_free(w);
}

static void success_with_a_trusted_token_renews_the_same_device(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    char token[AG_DEVICE_TOKEN_LEN + 1], renewed[AG_DEVICE_TOKEN_LEN + 1],
        fresh[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s() - 1000, token);
    struct ag_http_response r;
    ag_http_response_init(&r);
    const char *ok = with_token(quoted(token), ",\"success\":true");
    assert_int_equal(ag_service_report_login(w->svc, ok, strlen(ok), &r),
                     AG_OK);
    token_of(&r, renewed);
    ok = with_token("\"stale\"", ",\"success\":true");
    assert_int_equal(ag_service_report_login(w->svc, ok, strlen(ok), &r),
                     AG_OK);
    token_of(&r, fresh);
    struct ag_device_key k;
    ag_device_key_init(&k, &w->hasher);
    char digest[AG_DIGEST_HEX + 1];
    ag_identity_digest(&w->hasher, AG_KEY_USER, ANA, digest);
    unsigned char id[AG_DEVICE_ID_BYTES], id2[AG_DEVICE_ID_BYTES],
        id3[AG_DEVICE_ID_BYTES];
    assert_int_equal(
        ag_device_verify(&k, token, strlen(token), digest, now_s(), TTL, id),
        AG_DEVICE_TRUSTED);
    assert_int_equal(ag_device_verify(&k, renewed, strlen(renewed), digest,
                                      now_s(), TTL, id2),
                     AG_DEVICE_TRUSTED);
    assert_int_equal(
        ag_device_verify(&k, fresh, strlen(fresh), digest, now_s(), TTL, id3),
        AG_DEVICE_TRUSTED);
    assert_string_not_equal(renewed, token);
    assert_memory_equal(id, id2, sizeof id);
    assert_memory_not_equal(id, id3, sizeof id);
    ag_http_response_free(&r);
    world_free(w);
}

#define PER_DEVICE                                                             \
    "{\"name\":\"login.per_device\",\"endpoint\":\"login\","                   \
    "\"key\":[\"user\",\"device_token\"],\"algorithm\":\"sliding_log\","       \
    "\"limit\":5,\"window_s\":60}"

static void reset_of_a_device_key_needs_a_live_token(void **state)
{
    (void)state;
    static const char *const ps[] = {PER_DEVICE};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(PER_DEVICE);
    char key[AG_STORE_KEY_MAX], token[AG_DEVICE_TOKEN_LEN + 1];
    struct ag_error err;
    const char *body = with_token("\"forged\"", NULL);
    assert_int_equal(
        ag_service_reset(w->svc, &p, body, strlen(body), key, &err), AG_EINVAL);
    assert_string_equal(err.field, "device_token");
    assert_int_equal(w->store.clears, 0);
    mint(w, ANA, now_s(), token);
    body = with_token(quoted(token), NULL);
    assert_int_equal(
        ag_service_reset(w->svc, &p, body, strlen(body), key, &err), AG_OK);
    assert_int_equal(w->store.clears, 1);
    /* The key the checks of that device use. */
    struct ag_http_response r;
    ag_http_response_init(&r);
    w->store.rc = AG_ESTORE; /* judged in the fallback, which reports keys */
    assert_int_equal(run_check(w, body, &r), 200);
    assert_true(body_has(&r, "login.per_device"));
    ag_http_response_free(&r);
    world_free(w);
}

/* The challenge tier, judged by the real in-process store (the fake one
 * fails, so every check goes to the fallback). */

#define ASK                                                                    \
    "{\"name\":\"login.ask\",\"endpoint\":\"login\",\"key\":[\"user\"],"       \
    "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60,"               \
    "\"action\":\"challenge\"}"
#define DENY_IP                                                                \
    "{\"name\":\"login.deny_ip\",\"endpoint\":\"login\",\"key\":[\"ip\"],"     \
    "\"algorithm\":\"sliding_log\",\"limit\":3,\"window_s\":60}"

static const char *const PASSED =
    "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
    "\"challenge_passed\":true}";

static void
challenge_is_asked_then_waived_while_a_deny_still_denies(void **state)
{
    (void)state;
    static const char *const ps[] = {ASK, DENY_IP};
    struct world *w = world_new(false, ps, 2);
    w->store.rc = AG_ESTORE;
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    /* The second attempt trips the challenge. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"policy\":\"login.ask\",\"action\":"
                             "\"challenge\""));
    /* It recorded nothing: the deny policy still has 2 of 3 left. */
    assert_int_equal(run_check(w, PASSED, &r), 200);
    assert_true(body_has(&r, "\"action\":\"challenge\","
                             "\"challenge_passed\":true"));
    assert_true(body_has(&r, "\"policy\":\"login.deny_ip\",\"allowed\":true,"
                             "\"limit\":3,\"remaining\":1"));
    /* Passed challenges are still charged; the deny policy denies. */
    assert_int_equal(run_check(w, PASSED, &r), 200);
    assert_int_equal(run_check(w, PASSED, &r), 429);
    assert_true(body_has(&r, "\"policy\":\"login.deny_ip\",\"action\":"
                             "\"deny\""));
    /* Both trip without the pass: the deny is reported. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "\"policy\":\"login.deny_ip\",\"action\":"
                             "\"deny\""));
    struct ag_buf b;
    ag_buf_init(&b, 1 << 20);
    assert_int_equal(ag_metrics_render(w->metrics, &b), AG_OK);
    assert_non_null(
        strstr(b.p, "abuseguard_challenges_total{policy=\"login.ask\"} 2\n"));
    assert_non_null(strstr(
        b.p, "abuseguard_challenges_passed_total{policy=\"login.ask\"} 3\n"));
    assert_non_null(
        strstr(b.p, "abuseguard_denials_total{policy=\"login.ask\"} 0\n"));
    assert_non_null(
        strstr(b.p, "abuseguard_denials_total{policy=\"login.deny_ip\"} 2\n"));
    ag_buf_free(&b);
    ag_http_response_free(&r);
    world_free(w);
}

static void listed_answer_says_the_lane_too(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    add_list(w, AG_LIST_ALLOW, "{\"kind\":\"ip\",\"value\":\"192.0.2.0/24\"}");
    char token[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s(), token);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, with_token(quoted(token), NULL), &r), 200);
    assert_true(body_has(&r, "\"list\":\"allow\",\"device\":\"trusted\""));
    ag_http_response_free(&r);
    world_free(w);
}

/* A world whose service has a live deny cache on cache_clock. */
static struct world *cached_world(struct ag_deny_cache **dc)
{
    struct ag_deny_cache_opts o = {.entries = 64, .clock = cache_clock};
    assert_int_equal(ag_deny_cache_new(&o, dc), AG_OK);
    ag_deny_cache_set_live(*dc, true);
    static const char *const ps[] = {OPEN};
    next_cache = *dc;
    struct world *w = world_new(true, ps, 1);
    next_cache = NULL;
    w->store.deny_ms = 5000;
    return w;
}

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

static void a_reset_drops_the_cached_denial_and_is_published(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    run_check(w, LOGIN_BODY, &r);
    run_check(w, LOGIN_BODY, &r);
    assert_true(body_has(&r, "cached"));
    struct ag_policy p = ag_test_policy(OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_OK);
    assert_int_equal(w->store.publishes, 1);
    assert_int_equal(ag_deny_cache_entries(dc), 0);
    w->store.deny_ms = 0;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.checks, 2);
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

#define IP_OPEN                                                                \
    "{\"name\":\"login.ip_open\",\"endpoint\":\"login\",\"key\":[\"ip\"],"     \
    "\"algorithm\":\"sliding_log\",\"limit\":50,\"window_s\":60}"

/* Two resets queued during an outage, their keys on two cluster nodes:
 * once one node is back and the other not, the clear of the pair fails
 * (AG_ESTORE) though the first key was cleared. That key must not be
 * cleared again before every check (each would forgive what was counted
 * since: a limit that never trips while the other node is down). */
static void a_partly_done_queued_clear_is_not_sent_again(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, IP_OPEN};
    struct world *w = world_new(false, ps, 2);
    struct ag_policy user = ag_test_policy(OPEN);
    struct ag_policy ip = ag_test_policy(IP_OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    w->store.rc = AG_ESTORE; /* every node down */
    assert_int_equal(ag_service_reset(w->svc, &user, LOGIN_BODY,
                                      strlen(LOGIN_BODY), key, &err),
                     AG_EPENDING);
    assert_int_equal(ag_service_reset(w->svc, &ip, LOGIN_BODY,
                                      strlen(LOGIN_BODY), key, &err),
                     AG_EPENDING);
    /* The user's node is back, the address's is not. */
    w->store.rc = AG_OK;
    w->store.down_prefix = "ag:login.ip_open:";
    w->store.user_clears = 0;
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 3; i++)
        run_check(w, LOGIN_BODY, &r);
    /* Cleared once, not before each of the three checks. */
    assert_int_equal(w->store.user_clears, 1);
    ag_http_response_free(&r);
    world_free(w);
}

/* A reset queued during an outage drops the key's lockout marker once the
 * store takes it: a marker left in Redis for the rest of its denial's wait
 * hides the key's next lockout from the events. The store's clear deletes
 * the marker with the key (ag_store_redis, test_store_redis), so the
 * service sends no DEL of its own, which an open breaker would refuse
 * while the queued clear waits; the local stand-in is forgotten at once. */
static void a_queued_reset_drops_the_lockout_marker_once_sent(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct ag_events *ev = NULL;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){0}, &ev), AG_OK);
    next_events = ev;
    struct world *w = world_new(false, ps, 1);
    next_events = NULL;
    w->store.base.ops = &events_ops;
    ag_events_attach(ev, &w->store.base);
    struct ag_policy p = ag_test_policy(OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    marker_dels = 0;
    /* Up: the reset is one clear. */
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_OK);
    assert_int_equal(w->store.clears, 1);
    /* Down: refused, and queued. */
    w->store.rc = AG_ESTORE;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EPENDING);
    assert_int_equal(w->store.clears, 2);
    /* Up again: the queued clear goes before the next check, and the
     * marker with it. */
    w->store.rc = AG_OK;
    w->store.log[0] = '\0';
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.clears, 3);
    assert_string_equal(w->store.log, "clear publish check ");
    assert_int_equal(marker_dels, 0);
    ag_http_response_free(&r);
    ag_events_attach(ev, NULL);
    world_free(w);
    ag_events_free(ev);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allowed_check_carries_the_stores_answer),
        cmocka_unit_test(
            waiter_is_suspended_before_the_store_starts_and_resumed_once),
        cmocka_unit_test(
            store_that_cannot_start_resumes_at_once_into_the_fallback),
        cmocka_unit_test(fail_open_policies_are_limited_by_the_fallback),
        cmocka_unit_test(
            a_fail_closed_policy_denies_the_check_and_charges_nothing),
        cmocka_unit_test(deny_list_wins_over_allow_and_the_store_is_not_asked),
        cmocka_unit_test(
            a_refused_body_names_its_field_and_never_reaches_the_store),
        cmocka_unit_test(report_failure_charges_the_failure_policies),
        cmocka_unit_test(report_during_an_outage_is_recorded_in_the_fallback),
        cmocka_unit_test(repeated_password_fingerprint_is_charged_once),
        cmocka_unit_test(abandoned_check_releases_its_ruleset),
        cmocka_unit_test(
            reset_during_an_outage_clears_the_fallback_and_later_the_store),
        cmocka_unit_test(reset_the_store_may_have_done_is_not_sent_again),
        cmocka_unit_test(a_partly_done_queued_clear_is_not_sent_again),

        cmocka_unit_test(a_queued_reset_drops_the_lockout_marker_once_sent),
        cmocka_unit_test(reset_names_the_missing_identifier),
        cmocka_unit_test(successful_login_gets_a_token_that_is_trusted_after),
        cmocka_unit_test(any_token_but_a_live_one_of_the_user_is_untrusted),
        cmocka_unit_test(otp_token_is_trusted_only_with_its_user),
        cmocka_unit_test(reports_are_laned_by_the_token_they_carry),
        cmocka_unit_test(success_with_a_trusted_token_renews_the_same_device),
        cmocka_unit_test(reset_of_a_device_key_needs_a_live_token),
        cmocka_unit_test(
            challenge_is_asked_then_waived_while_a_deny_still_denies),
        cmocka_unit_test(listed_answer_says_the_lane_too),
        cmocka_unit_test(
            a_denial_is_answered_from_the_cache_until_the_stores_wait),
        cmocka_unit_test(a_reset_drops_the_cached_denial_and_is_published),
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
