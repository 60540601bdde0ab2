/*
 * ag_events without Redis: the JSON shape of each event, its time, the
 * level key and key digest parsers, once-per-lockout in the local table
 * that stands in for Redis, markers cleared by a reset, and the admin
 * read's refusals.
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

#include "ag_error.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_metrics.h"
#include "ag_test.h"

#define DIGEST "0123456789abcdef0123456789abcdef"

static json_t *parsed(const struct ag_event *e)
{
    char *text = ag_event_json(e);
    assert_non_null(text);
    json_t *o = json_loads(text, 0, NULL);
    free(text);
    assert_true(json_is_object(o));
    return o;
}

static void lockout_json_carries_what_applies(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_LOCKOUT);
    snprintf(e.id, sizeof e.id, "abcd-1");
    e.time_ms = 1700000000123u;
    snprintf(e.policy, sizeof e.policy, "login.user_ip");
    e.endpoint = AG_EP_LOGIN;
    snprintf(e.key, sizeof e.key, DIGEST);
    snprintf(e.action, sizeof e.action, "deny");
    e.retry_after_s = 900;
    e.level = 2;
    json_t *o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "id")), "abcd-1");
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "lockout");
    assert_string_equal(json_string_value(json_object_get(o, "time")),
                        "2023-11-14T22:13:20.123Z");
    assert_string_equal(json_string_value(json_object_get(o, "endpoint")),
                        "login");
    assert_string_equal(json_string_value(json_object_get(o, "key")), DIGEST);
    assert_int_equal(json_integer_value(json_object_get(o, "retry_after")),
                     900);
    assert_int_equal(json_integer_value(json_object_get(o, "level")), 2);
    assert_int_equal(json_object_size(o), 9);
    json_decref(o);
}

static void breaker_json_has_only_id_type_and_time(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_BREAKER_OPEN);
    json_t *o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "breaker_open");
    assert_int_equal(json_object_size(o), 3);
    json_decref(o);
    ag_event_init(&e, AG_EV_LIST_CHANGED);
    snprintf(e.list, sizeof e.list, "deny");
    snprintf(e.change, sizeof e.change, "add");
    e.entry = 42;
    o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "list")), "deny");
    assert_int_equal(json_integer_value(json_object_get(o, "entry")), 42);
    assert_null(json_object_get(o, "policy"));
    assert_null(json_object_get(o, "retry_after"));
    json_decref(o);
}

static void every_type_has_its_name(void **state)
{
    (void)state;
    const char *want[AG_EV_COUNT] = {
        "lockout",      "block_escalated", "conversion_block",
        "reset",        "policy_changed",  "list_changed",
        "breaker_open", "breaker_closed",
    };
    for (int t = 0; t < AG_EV_COUNT; t++)
        assert_string_equal(ag_event_type_name((enum ag_event_type)t), want[t]);
    assert_string_equal(ag_event_type_name(AG_EV_COUNT), "unknown");
}

static void level_is_read_from_the_level_key(void **state)
{
    (void)state;
    assert_int_equal(ag_event_level_parse("3 1700000000000000", 18), 3);
    assert_int_equal(ag_event_level_parse("1 5", 3), 1);
    assert_int_equal(ag_event_level_parse("3", 1), 0);
    assert_int_equal(ag_event_level_parse("x 5", 3), 0);
    assert_int_equal(ag_event_level_parse("", 0), 0);
}

static void key_digest_comes_from_plain_and_tagged_keys(void **state)
{
    (void)state;
    char d[AG_DIGEST_HEX + 1];
    ag_event_key_digest("ag:login.user:" DIGEST, d);
    assert_string_equal(d, DIGEST);
    ag_event_key_digest("ag:login.user:{" DIGEST "}", d);
    assert_string_equal(d, DIGEST);
    ag_event_key_digest("ag::probe", d);
    assert_string_equal(d, "");
    ag_event_key_digest("nokey", d);
    assert_string_equal(d, "");
}

/* A one-op plan of p on key digest, and its result. */
static void one_op(struct ag_plan *plan, const struct ag_policy *p,
                   const char *digest, bool shadow)
{
    memset(plan, 0, sizeof *plan);
    plan->kind = AG_PLAN_CHECK;
    plan->n = 1;
    plan->ops[0].policy = p;
    plan->ops[0].shadow = shadow;
    snprintf(plan->ops[0].key, sizeof plan->ops[0].key, "ag:%s:%s", p->name,
             digest);
}

static int64_t lockouts(struct ag_metrics *m)
{
    struct ag_buf b;
    ag_buf_init(&b, 1 << 20);
    assert_int_equal(ag_metrics_render(m, &b), AG_OK);
    const char *at = strstr(b.p, "abuseguard_events_total{type=\"lockout\"} ");
    assert_non_null(at);
    long long n = atoll(strchr(at, '}') + 2);
    ag_buf_free(&b);
    return n;
}

static void without_redis_a_lockout_is_raised_once_per_key(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){.metrics = m}, &ev),
                     AG_OK);
    struct ag_policy p = ag_test_policy(
        "{\"name\":\"t.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60}");
    struct ag_plan plan;
    struct ag_limit_result res = {.allowed = false, .retry_after_ms = 60000};
    one_op(&plan, &p, DIGEST, false);
    for (int i = 0; i < 5; i++)
        ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 1);
    /* Another key is its own lockout. */
    one_op(&plan, &p, "f123456789abcdef0123456789abcdef", false);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 2);
    /* A reset clears the marker: the next denial is a lockout again. */
    ag_events_cleared(ev, &plan);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 3);
    /* Allowed results and shadow policies are no lockout. */
    one_op(&plan, &p, "e123456789abcdef0123456789abcdef", true);
    ag_events_denied(ev, &plan, &res, true);
    res.allowed = true;
    one_op(&plan, &p, "d123456789abcdef0123456789abcdef", false);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 3);
    ag_events_free(ev);
    ag_metrics_free(m);
}

static void a_marker_lapses_with_the_denial(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){.metrics = m}, &ev),
                     AG_OK);
    struct ag_policy p = ag_test_policy(
        "{\"name\":\"t.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60}");
    struct ag_plan plan;
    /* At least a second, whatever the wait. */
    struct ag_limit_result res = {.allowed = false, .retry_after_ms = 1};
    one_op(&plan, &p, DIGEST, false);
    ag_events_denied(ev, &plan, &res, true);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 1);
    struct timespec ts = {1, 100000000};
    nanosleep(&ts, NULL);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 2);
    ag_events_free(ev);
    ag_metrics_free(m);
}

static void reading_refuses_a_bad_after_or_limit_and_needs_redis(void **state)
{
    (void)state;
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){0}, &ev), AG_OK);
    struct ag_error err;
    json_t *out = NULL;
    const char *bad[] = {"x", "1", "1-", "-1", "1-2-3", "1-x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(ag_events_read(ev, bad[i], 10, &out, &err), AG_EINVAL);
        assert_string_equal(err.field, "after");
    }
    assert_int_equal(ag_events_read(ev, NULL, 0, &out, &err), AG_EINVAL);
    assert_string_equal(err.field, "limit");
    assert_int_equal(
        ag_events_read(ev, "1-0", AG_EVENTS_PAGE_MAX + 1, &out, &err),
        AG_EINVAL);
    assert_int_equal(ag_events_read(ev, "1700000000000-3", 10, &out, &err),
                     AG_ESTORE);
    assert_null(out);
    /* Raised without a store: kept in the backlog, freed with ev. */
    struct ag_event e;
    ag_event_init(&e, AG_EV_RESET);
    ag_events_raise(ev, &e);
    assert_non_null(strchr(e.id, '-'));
    assert_true(e.time_ms > 1700000000000u);
    ag_events_free(ev);
    ag_events_raise(NULL, &e);
    ag_events_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lockout_json_carries_what_applies),
        cmocka_unit_test(breaker_json_has_only_id_type_and_time),
        cmocka_unit_test(every_type_has_its_name),
        cmocka_unit_test(level_is_read_from_the_level_key),
        cmocka_unit_test(key_digest_comes_from_plain_and_tagged_keys),
        cmocka_unit_test(without_redis_a_lockout_is_raised_once_per_key),
        cmocka_unit_test(a_marker_lapses_with_the_denial),
        cmocka_unit_test(reading_refuses_a_bad_after_or_limit_and_needs_redis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
