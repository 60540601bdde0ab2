/*
 * ag_service: the check lifecycle over a fake store (one that answers,
 * fails, or answers later on demand) and the real in-process fallback:
 * fail closed against fail open, list precedence, login reports, an
 * abandoned check, the waiter's order, and resets during an outage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "ag_error.h"
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
    int checks, clears;
    char log[256];
    enum ag_plan_kind last_kind;
    size_t last_n;
    /* A pending asynchronous check. */
    ag_store_done_fn done;
    void *done_arg;
};

static void note(struct fake *f, const char *what)
{
    strncat(f->log, what, sizeof f->log - strlen(f->log) - 1);
}

static int fake_check(struct ag_store *s, const struct ag_plan *plan,
                      struct ag_limit_result *res)
{
    struct fake *f = (struct fake *)s;
    f->checks++;
    f->last_kind = plan->kind;
    f->last_n = plan->n;
    note(f, "check ");
    for (size_t i = 0; f->rc == AG_OK && i < plan->n; i++)
        res[i] = (struct ag_limit_result){.allowed = true,
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
    note(f, "clear ");
    return f->rc ? f->rc : f->clear_rc;
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
    .destroy = fake_destroy,
};

static const struct ag_store_ops async_ops = {
    .name = "fake-async",
    .check = fake_check,
    .check_async = fake_check_async,
    .clear = fake_clear,
    .ping = fake_ping,
    .destroy = fake_destroy,
};

static uint64_t fake_now = 1000000000000ull;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

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

/* Runs one check to its answer: begin, then (if it waited) the fake's
 * answer and finish. Returns the status. */
static int run_check(struct world *w, const char *body,
                     struct ag_http_response *r)
{
    struct ag_check *c = NULL;
    int rc = ag_service_check_begin(w->svc, AG_EP_LOGIN, body, strlen(body),
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
    assert_string_equal(w->store.log, "clear check ");
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
    assert_string_equal(w->store.log, "clear check ");
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
        cmocka_unit_test(reset_names_the_missing_identifier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
