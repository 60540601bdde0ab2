/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_events without Redis: the JSON shape of each event, its time, the
 * level key and key digest parsers, once-per-lockout in the local table
 * that stands in for Redis, markers cleared by a reset, the admin read's
 * refusals, the backlog's backoff, and which policies are password spray
 * ones. What happens over a store is in test_events_store.c.
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
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <pthread.h>

#include "ag_error.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_metrics.h"
#include "ag_redis_reply.h"
#include "ag_store.h"
#include "ag_test.h"
#include "ag_test_events.h"

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

static void shield_events_carry_their_figures_and_who_did_it(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_SHIELD_RAISED);
    snprintf(e.id, sizeof e.id, "abcd-2");
    e.time_ms = 1700000000123u;
    snprintf(e.policy, sizeof e.policy, "login.site_failures");
    e.endpoint = AG_EP_LOGIN;
    snprintf(e.action, sizeof e.action, "challenge");
    e.shield = (struct ag_event_shield){
        .rate = 40,
        .current = 512,
        .baseline_milli = 20500,
        .threshold = 102,
        .since_ms = 1700000000000u,
        .until_ms = 1700000600000u,
        .local = false,
        .by_operator = false,
    };
    json_t *o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "shield_raised");
    assert_int_equal(json_integer_value(json_object_get(o, "rate")), 40);
    assert_int_equal(json_integer_value(json_object_get(o, "current")), 512);
    assert_true(json_real_value(json_object_get(o, "baseline")) == 20.5);
    assert_int_equal(json_integer_value(json_object_get(o, "threshold")), 102);
    assert_string_equal(json_string_value(json_object_get(o, "since")),
                        "2023-11-14T22:13:20.000Z");
    assert_string_equal(json_string_value(json_object_get(o, "until")),
                        "2023-11-14T22:23:20.000Z");
    assert_string_equal(json_string_value(json_object_get(o, "source")),
                        "shared");
    assert_true(json_is_false(json_object_get(o, "operator")));
    assert_string_equal(json_string_value(json_object_get(o, "action")),
                        "challenge");
    assert_null(json_object_get(o, "key"));
    /* id, type, time, policy, endpoint, action and the eight figures. */
    assert_int_equal(json_object_size(o), 14);
    json_decref(o);
    e.type = AG_EV_SHIELD_LOWERED;
    e.shield.local = true;
    e.shield.by_operator = true;
    o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "shield_lowered");
    assert_string_equal(json_string_value(json_object_get(o, "source")),
                        "local");
    assert_true(json_is_true(json_object_get(o, "operator")));
    json_decref(o);
    /* Another type never carries a shield's figures. */
    e.type = AG_EV_BREAKER_OPEN;
    o = parsed(&e);
    assert_null(json_object_get(o, "rate"));
    assert_null(json_object_get(o, "operator"));
    json_decref(o);
}

/* A login with a breached password names the user's digest and the
 * lane, nothing of the user or the password. */
static void breached_login_json_names_the_users_digest_and_lane(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_BREACHED_PASSWORD_LOGIN);
    snprintf(e.id, sizeof e.id, "abcd-3");
    e.time_ms = 1700000000123u;
    e.endpoint = AG_EP_LOGIN;
    snprintf(e.key, sizeof e.key, DIGEST);
    snprintf(e.lane, sizeof e.lane, "untrusted");
    json_t *o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "breached_password_login");
    assert_string_equal(json_string_value(json_object_get(o, "endpoint")),
                        "login");
    assert_string_equal(json_string_value(json_object_get(o, "key")), DIGEST);
    assert_string_equal(json_string_value(json_object_get(o, "lane")),
                        "untrusted");
    /* id, type, time, endpoint, key, lane. */
    assert_int_equal(json_object_size(o), 6);
    json_decref(o);
    /* No other event carries a lane. */
    ag_event_init(&e, AG_EV_LOCKOUT);
    o = parsed(&e);
    assert_null(json_object_get(o, "lane"));
    json_decref(o);
}

static void an_event_says_what_the_network_files_saw(void **state)
{
    (void)state;
    static const char *const names[] = {"hosting", "tor", "vpn"};
    static const struct ag_net_avail avail = {
        .country = true, .asn = true, .lists = names, .nlists = 3};
    struct ag_request_net n = {.avail = &avail,
                               .looked = true,
                               .country = "DE",
                               .asn = "3320",
                               .lists = 1u << 0 | 1u << 2,
                               .lists_special = 1u << 1};
    struct ag_event e;
    ag_event_init(&e, AG_EV_LOCKOUT);
    ag_event_network(&e, &n);
    json_t *o = parsed(&e);
    char *net = json_dumps(json_object_get(o, "network"), JSON_COMPACT);
    /* The AS number is a number; a list that holds the address only in a
     * private or CGNAT range is none of its lists. */
    assert_string_equal(net, "{\"country\":\"DE\",\"asn\":3320,"
                             "\"lists\":[\"hosting\",\"vpn\"]}");
    free(net);
    json_decref(o);
    /* Only what is known; nothing at all without a lookup. */
    n.country[0] = '\0';
    n.lists = 0;
    ag_event_init(&e, AG_EV_LOCKOUT);
    ag_event_network(&e, &n);
    o = parsed(&e);
    net = json_dumps(json_object_get(o, "network"), JSON_COMPACT);
    assert_string_equal(net, "{\"asn\":3320}");
    free(net);
    json_decref(o);
    n.looked = false;
    ag_event_init(&e, AG_EV_LOCKOUT);
    ag_event_network(&e, &n);
    o = parsed(&e);
    assert_null(json_object_get(o, "network"));
    json_decref(o);
}

/* Issue 40: the new-place events carry two countries, and a journey's
 * distance and speed (null for no time at all); nothing else of it. */
static void travel_events_carry_countries_and_speed(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_NEW_COUNTRY_LOGIN);
    memcpy(e.travel.from, "FR", 3);
    memcpy(e.travel.to, "US", 3);
    e.travel.km = 5837;
    char *text = ag_event_json(&e);
    json_t *o = json_loads(text, 0, NULL);
    json_t *t = json_object_get(o, "travel");
    assert_string_equal(json_string_value(json_object_get(t, "from")), "FR");
    assert_string_equal(json_string_value(json_object_get(t, "to")), "US");
    assert_null(json_object_get(t, "km"));
    json_decref(o);
    free(text);
    e.type = AG_EV_IMPOSSIBLE_TRAVEL;
    e.travel.kmh = 2890;
    text = ag_event_json(&e);
    o = json_loads(text, 0, NULL);
    t = json_object_get(o, "travel");
    assert_int_equal(json_integer_value(json_object_get(t, "km")), 5837);
    assert_int_equal(json_integer_value(json_object_get(t, "kmh")), 2890);
    json_decref(o);
    free(text);
    e.travel.instant = true;
    text = ag_event_json(&e);
    o = json_loads(text, 0, NULL);
    assert_true(
        json_is_null(json_object_get(json_object_get(o, "travel"), "kmh")));
    json_decref(o);
    free(text);
    /* Another event has none. */
    e.type = AG_EV_LOCKOUT;
    text = ag_event_json(&e);
    assert_null(strstr(text, "travel"));
    free(text);
}

static void every_type_has_its_name(void **state)
{
    (void)state;
    const char *want[AG_EV_COUNT] = {
        "lockout",
        "block_escalated",
        "conversion_block",
        "password_spray",
        "reset",
        "policy_changed",
        "list_changed",
        "breaker_open",
        "breaker_closed",
        "shield_raised",
        "shield_lowered",
        "account_recovered",
        "breached_password_login",
        "shield_long",
        "fleet_lagging",
        "fleet_record_refused",
        "fleet_diverged",
        "fleet_held",
        "new_country_login",
        "impossible_travel",
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

/* The events of type the metrics counted. */
static int64_t event_count(struct ag_metrics *m, const char *type)
{
    struct ag_buf b;
    ag_buf_init(&b, 1 << 20);
    assert_int_equal(ag_metrics_render(m, &b), AG_OK);
    char want[96];
    snprintf(want, sizeof want, "abuseguard_events_total{type=\"%s\"} ", type);
    const char *at = strstr(b.p, want);
    assert_non_null(at);
    long long n = atoll(strchr(at, '}') + 2);
    ag_buf_free(&b);
    return n;
}

static int64_t lockouts(struct ag_metrics *m)
{
    return event_count(m, "lockout");
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

/* A signal policy's trip holds nothing (the next check without the
 * signal passes): no lockout begins, and no marker is asked of Redis. */
static void a_signal_policy_raises_no_lockout(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){.metrics = m}, &ev),
                     AG_OK);
    struct ag_policy p = ag_test_policy(
        "{\"name\":\"t.breached\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"signal\",\"signal\":\"password_breached\","
        "\"action\":\"challenge\"}");
    struct ag_plan plan;
    struct ag_limit_result res = {.allowed = false};
    one_op(&plan, &p, DIGEST, false);
    ag_events_denied(ev, &plan, &res, true);
    ag_events_denied(ev, &plan, &res, false);
    assert_int_equal(lockouts(m), 0);
    /* The same denial by a counting policy is one. */
    struct ag_policy q = ag_test_policy(
        "{\"name\":\"t.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60}");
    one_op(&plan, &q, DIGEST, false);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 1);
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

static void retries_back_off_from_a_fifth_of_a_second_up_to_five(void **state)
{
    (void)state;
    assert_int_equal(ag_events_retry_ms(1), AG_EVENTS_RETRY_MIN_MS);
    assert_int_equal(ag_events_retry_ms(2), 400);
    assert_int_equal(ag_events_retry_ms(5), 3200);
    assert_int_equal(ag_events_retry_ms(6), AG_EVENTS_RETRY_MAX_MS);
    assert_int_equal(ag_events_retry_ms(1000), AG_EVENTS_RETRY_MAX_MS);
}

/* A spray policy is a distinct one keyed on password_fp, alone or with
 * other kinds; no other policy is. */
static void a_spray_policy_is_distinct_on_password_fp(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        bool spray;
    } cases[] = {
        {"{\"name\":\"t.s\",\"endpoint\":\"login\","
         "\"key\":[\"password_fp\"],\"algorithm\":\"distinct\","
         "\"limit\":10,\"window_s\":3600,\"counts\":\"failures\"}",
         true},
        {"{\"name\":\"t.s\",\"endpoint\":\"login\","
         "\"key\":[\"ip_prefix\",\"password_fp\"],"
         "\"algorithm\":\"distinct\",\"limit\":10,\"window_s\":3600}",
         true},
        {"{\"name\":\"t.s\",\"endpoint\":\"login\","
         "\"key\":[\"password_fp\"],\"algorithm\":\"sliding_log\","
         "\"limit\":10,\"window_s\":3600}",
         false},
        {"{\"name\":\"t.s\",\"endpoint\":\"login\",\"key\":[\"ip\"],"
         "\"algorithm\":\"distinct\",\"limit\":10,\"window_s\":3600}",
         false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct ag_policy p = ag_test_policy(cases[i].json);
        assert_int_equal(ag_event_spray_policy(&p), cases[i].spray);
    }
}

/* Without Redis the local table stands in, with the same window: a
 * spray's denial that ends within a second is still the one spray a
 * second later, where a lockout's marker would have lapsed
 * (a_marker_lapses_with_the_denial). */
static void without_redis_a_spray_is_still_one_event_a_window(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){.metrics = m}, &ev),
                     AG_OK);
    struct ag_policy p = ag_test_policy(
        "{\"name\":\"t.spray\",\"endpoint\":\"login\","
        "\"key\":[\"password_fp\"],\"algorithm\":\"distinct\","
        "\"limit\":10,\"window_s\":3600,\"counts\":\"failures\"}");
    struct ag_plan plan;
    struct ag_limit_result res = {.allowed = false, .retry_after_ms = 1};
    one_op(&plan, &p, DIGEST, false);
    ag_events_denied(ev, &plan, &res, true);
    struct timespec ts = {1, 100000000};
    nanosleep(&ts, NULL);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(event_count(m, "password_spray"), 1);
    assert_int_equal(event_count(m, "lockout"), 0);
    ag_events_free(ev);
    ag_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lockout_json_carries_what_applies),
        cmocka_unit_test(breaker_json_has_only_id_type_and_time),
        cmocka_unit_test(shield_events_carry_their_figures_and_who_did_it),
        cmocka_unit_test(breached_login_json_names_the_users_digest_and_lane),
        cmocka_unit_test(an_event_says_what_the_network_files_saw),
        cmocka_unit_test(every_type_has_its_name),
        cmocka_unit_test(travel_events_carry_countries_and_speed),
        cmocka_unit_test(level_is_read_from_the_level_key),
        cmocka_unit_test(key_digest_comes_from_plain_and_tagged_keys),
        cmocka_unit_test(without_redis_a_lockout_is_raised_once_per_key),
        cmocka_unit_test(a_marker_lapses_with_the_denial),
        cmocka_unit_test(reading_refuses_a_bad_after_or_limit_and_needs_redis),
        cmocka_unit_test(retries_back_off_from_a_fifth_of_a_second_up_to_five),
        cmocka_unit_test(a_spray_policy_is_distinct_on_password_fp),
        cmocka_unit_test(a_signal_policy_raises_no_lockout),
        cmocka_unit_test(without_redis_a_spray_is_still_one_event_a_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
