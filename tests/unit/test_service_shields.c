/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_service with site-wide shields (ag_shields), on a store that has no
 * Redis (each shield is this instance's own): failures and checks counted
 * in the shields of their lane and reason; a raised shield answers a
 * check without the store, and a challenge passed goes on to it; trusted
 * devices and listed requests are never judged by an untrusted shield; a
 * shadow shield only notes; a deny shield is reported before a challenge
 * one; the switch, whose lower keeps the counts out for its time; a check
 * that brings a passed challenge is no new attempt; a new ruleset keeps
 * a raised shield raised; each step shows in the metrics' gauges and the
 * overview, and a shield that leaves the set leaves the metrics. The
 * shields run on the test's clock (shields_learn teaches them a whole
 * window, as a running service's have learned).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_clock.h"
#include "ag_overview.h"
#include "ag_shields.h"
#include "ag_test_service.h"

#define SURGE(name, extra)                                                     \
    "{\"name\":\"" name "\",\"endpoint\":\"login\",\"key\":[\"site\"],"        \
    "\"algorithm\":\"surge\",\"limit\":2,\"window_s\":60,\"block_s\":600,"     \
    "\"applies_to\":\"untrusted\",\"action\":\"challenge\"" extra "}"
#define FAILS SURGE("login.site_failures", ",\"counts\":\"failures\"")
#define UNKNOWN                                                                \
    SURGE("login.site_unknown", ",\"counts\":\"failures\","                    \
                                "\"reasons\":[\"unknown_user\"]")

static const char *const FAIL_BODY =
    "{\"user\":\"u@example.com\",\"ip\":\"198.51.100.7\",\"success\":false}";

static void fail_n(struct world *w, int n, const char *body)
{
    for (int i = 0; i < n; i++) {
        struct ag_http_response r;
        ag_http_response_init(&r);
        assert_int_equal(report_login(w, body, &r), AG_OK);
        assert_int_equal(r.status, 204);
        ag_http_response_free(&r);
    }
}

static int check(struct world *w, const char *body, struct ag_http_response *r)
{
    ag_http_response_free(r);
    ag_http_response_init(r);
    return run_check(w, body, r);
}

static bool raised(struct world *w, const char *name)
{
    struct ag_shield_view *v;
    size_t n;
    assert_int_equal(ag_shields_views(ag_service_shields(w->svc), &v, &n),
                     AG_OK);
    bool up = false, found = false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0) {
            found = true;
            up = v[i].state.raised;
        }
    free(v);
    if (!found)
        fail_msg("no shield %s", name);
    return up;
}

static void
failures_raise_the_shield_which_answers_without_the_store(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    shields_learn(w);
    /* The floor is 2: two failures in the window do not raise it. */
    fail_n(w, 2, FAIL_BODY);
    ag_shields_sync(sh);
    assert_false(raised(w, "login.site_failures"));
    assert_int_equal(check(w, LOGIN_BODY, &r), 200);
    int checks = w->store.checks;
    fail_n(w, 1, FAIL_BODY);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_failures"));
    /* Raised: answered at once, the store not asked. */
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "login.site_failures"));
    assert_true(body_has(&r, "challenge"));
    assert_int_equal(w->store.checks, checks + 1);
    /* A challenge passed goes on to the store, and is allowed. */
    assert_int_equal(check(w,
                           "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                           "\"challenge_passed\":true}",
                           &r),
                     200);
    assert_int_equal(w->store.checks, checks + 2);
    /* The switch lowers it: the store decides again, and for its hold
     * the counts do not raise it. */
    uint32_t quiet_s = 0;
    assert_int_equal(ag_shields_lower(sh, "login.site_failures",
                                      AG_SHIELDS_LOWER_HOLD, &quiet_s),
                     AG_OK);
    assert_int_equal(quiet_s, 600);
    assert_int_equal(check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.checks, checks + 3);
    fail_n(w, 5, FAIL_BODY);
    ag_shields_sync(sh);
    assert_false(raised(w, "login.site_failures"));
    /* Lowered for no time: the next step may raise it. */
    assert_int_equal(ag_shields_lower(sh, "login.site_failures", 0, NULL),
                     AG_OK);
    fail_n(w, 1, FAIL_BODY);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_failures"));
    assert_int_equal(ag_shields_lower(sh, "login.nope", 0, NULL), AG_ENOTFOUND);
    assert_int_equal(ag_shields_raise(sh, "login.user", 60), AG_ENOTFOUND);
    ag_http_response_free(&r);
    world_free(w);
}

static void only_the_reasons_it_counts_raise_it(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, UNKNOWN};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    shields_learn(w);
    fail_n(w, 5, FAIL_BODY); /* bad_password, the default */
    fail_n(w, 5,
           "{\"user\":\"u@example.com\",\"ip\":\"198.51.100.7\","
           "\"success\":false,\"reason\":\"second_factor_failed\"}");
    ag_shields_sync(sh);
    assert_false(raised(w, "login.site_unknown"));
    fail_n(w, 3,
           "{\"user\":\"u@example.com\",\"ip\":\"198.51.100.7\","
           "\"success\":false,\"reason\":\"unknown_user\"}");
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_unknown"));
    world_free(w);
}

static void trusted_devices_and_listed_requests_are_not_judged(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    assert_int_equal(ag_shields_raise(sh, "login.site_failures", 600), AG_OK);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    char token[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s(), token);
    assert_int_equal(check(w, with_token(quoted(token), NULL), &r), 200);
    assert_true(body_has(&r, "\"trusted\""));
    /* Trusted failures do not count in an untrusted shield either. */
    assert_int_equal(ag_shields_lower(sh, "login.site_failures", 0, NULL),
                     AG_OK);
    shields_learn(w);
    char body[1024];
    snprintf(body, sizeof body,
             "{\"user\":\"ANA@example.com\",\"ip\":\"192.0.2.1\","
             "\"device_token\":\"%s\",\"success\":false}",
             token);
    fail_n(w, 10, body);
    ag_shields_sync(sh);
    assert_false(raised(w, "login.site_failures"));
    /* An allow-listed address is settled before any shield. */
    assert_int_equal(ag_shields_raise(sh, "login.site_failures", 600), AG_OK);
    add_list(w, AG_LIST_ALLOW, "{\"kind\":\"ip\",\"value\":\"192.0.2.1\"}");
    assert_int_equal(check(w, LOGIN_BODY, &r), 200);
    ag_http_response_free(&r);
    world_free(w);
}

static void a_shadow_shield_only_notes(void **state)
{
    (void)state;
    static const char *const ps[] = {
        OPEN, SURGE("login.site_shadow",
                    ",\"counts\":\"failures\",\"mode\":\"shadow\"")};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    shields_learn(w);
    fail_n(w, 3, FAIL_BODY);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_shadow"));
    struct ag_http_response r;
    ag_http_response_init(&r);
    int checks = w->store.checks;
    assert_int_equal(check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.checks, checks + 1);
    ag_http_response_free(&r);
    world_free(w);
}

static void a_deny_shield_is_reported_before_a_challenge(void **state)
{
    (void)state;
    static const char *const ps2[] = {
        OPEN, FAILS,
        "{\"name\":\"login.site_attempts\",\"endpoint\":\"login\","
        "\"key\":[\"site\"],\"algorithm\":\"surge\",\"limit\":2,"
        "\"window_s\":60,\"block_s\":30,\"applies_to\":\"all\"}"};
    struct world *w = world_new(true, ps2, 3);
    struct ag_shields *sh = ag_service_shields(w->svc);
    assert_int_equal(ag_shields_raise(sh, "login.site_failures", 600), AG_OK);
    assert_int_equal(ag_shields_raise(sh, "login.site_attempts", 30), AG_OK);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    assert_true(body_has(&r, "login.site_attempts"));
    assert_false(body_has(&r, "challenge"));
    /* Its wait is the deny shield's own hold, in whole seconds. */
    assert_true(body_has(&r, "\"retry_after\":30") ||
                body_has(&r, "\"retry_after\":29"));
    ag_http_response_free(&r);
    world_free(w);
}

static void attempts_raise_an_attempts_shield(void **state)
{
    (void)state;
    static const char *const ps[] = {
        OPEN, "{\"name\":\"login.site_attempts\",\"endpoint\":\"login\","
              "\"key\":[\"site\"],\"algorithm\":\"surge\",\"limit\":3,"
              "\"window_s\":60,\"block_s\":30}"};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    shields_learn(w);
    for (int i = 0; i < 3; i++)
        assert_int_equal(check(w, LOGIN_BODY, &r), 200);
    /* A check that brings a passed challenge is the one it was asked
     * for again: no new attempt. */
    assert_int_equal(check(w,
                           "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                           "\"challenge_passed\":true}",
                           &r),
                     200);
    ag_shields_sync(sh);
    assert_false(raised(w, "login.site_attempts"));
    assert_int_equal(check(w, LOGIN_BODY, &r), 200);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_attempts"));
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    ag_http_response_free(&r);
    world_free(w);
}

static void a_new_ruleset_keeps_a_raised_shield(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    shields_learn(w);
    fail_n(w, 3, FAIL_BODY);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_failures"));
    /* A list edit publishes a new set of the same policies. */
    add_list(w, AG_LIST_DENY, "{\"kind\":\"ip\",\"value\":\"203.0.113.9\"}");
    assert_true(raised(w, "login.site_failures"));
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_failures"));
    ag_http_response_free(&r);
    world_free(w);
}

/* A switch made between a new table's making and its publishing (a
 * reload, which any audited admin action starts) stands: the new table
 * takes the state as it is when it replaces the old one. Before, it took
 * it when made, and a lower made meanwhile came undone. */
static void a_switch_while_a_table_is_made_stands(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    shields_learn(w);
    assert_int_equal(ag_shields_raise(sh, "login.site_failures", 600), AG_OK);
    assert_true(raised(w, "login.site_failures"));
    struct ag_policy p[2] = {ag_test_policy(OPEN), ag_test_policy(FAILS)};
    struct ag_ruleset *set = ag_ruleset_new(p, 2, 2);
    struct ag_shield_table *t = ag_shields_table_new(sh, set);
    assert_non_null(t);
    assert_int_equal(ag_shields_lower(sh, "login.site_failures", 0, NULL),
                     AG_OK);
    ag_shields_publish(sh, t);
    assert_false(raised(w, "login.site_failures"));
    uint64_t retry_ms = 0;
    assert_null(ag_shields_judge(t, AG_EP_LOGIN, false, &retry_ms));
    /* And the other way: a raise made meanwhile stands too. */
    struct ag_shield_table *t2 = ag_shields_table_new(sh, set);
    assert_int_equal(ag_shields_raise(sh, "login.site_failures", 600), AG_OK);
    ag_shields_publish(sh, t2);
    assert_true(raised(w, "login.site_failures"));
    assert_non_null(ag_shields_judge(t2, AG_EP_LOGIN, false, &retry_ms));
    ag_shield_table_unref(t);
    ag_shield_table_unref(t2);
    ag_ruleset_unref(set);
    world_free(w);
}

/* The review's edit: a window edit during a raise gives the shield a new
 * shape, whose state starts anew; the raise goes on in it for what is
 * left of its hold, and checks are still challenged. */
static void a_window_edit_keeps_a_raised_shield(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    shields_learn(w);
    fail_n(w, 3, FAIL_BODY);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_failures"));
    struct ag_policy p[2] = {
        ag_test_policy(OPEN),
        ag_test_policy(
            "{\"name\":\"login.site_failures\",\"endpoint\":\"login\","
            "\"key\":[\"site\"],\"algorithm\":\"surge\",\"limit\":2,"
            "\"window_s\":30,\"block_s\":600,\"applies_to\":\"untrusted\","
            "\"action\":\"challenge\",\"counts\":\"failures\"}"),
    };
    ag_service_set_ruleset(w->svc, ag_ruleset_new(p, 2, 2));
    assert_true(raised(w, "login.site_failures"));
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    ag_shields_sync(sh);
    assert_true(raised(w, "login.site_failures"));
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    ag_http_response_free(&r);
    world_free(w);
}

static bool metrics_have(struct world *w, const char *s)
{
    struct ag_buf b;
    ag_buf_init(&b, 1 << 20);
    assert_int_equal(ag_metrics_render(w->metrics, &b), AG_OK);
    bool has = strstr(b.p, s) != NULL;
    ag_buf_free(&b);
    return has;
}

static void each_step_shows_in_the_gauges_and_the_overview(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_shields *sh = ag_service_shields(w->svc);
    /* Listed as soon as its set is published, lowered. */
    assert_true(metrics_have(
        w, "\nabuseguard_shield_raised{policy=\"login.site_failures\"} 0\n"));
    assert_true(metrics_have(
        w, "\nabuseguard_shield_threshold{policy=\"login.site_failures\"} "
           "2\n"));
    assert_true(metrics_have(
        w, "\nabuseguard_shield_learning{policy=\"login.site_failures\"} "
           "1\n"));
    shields_learn(w);
    fail_n(w, 3, FAIL_BODY);
    ag_shields_sync(sh);
    assert_true(metrics_have(
        w, "\nabuseguard_shield_raised{policy=\"login.site_failures\"} 1\n"));
    /* The store has no Redis: the instance's own counts. */
    assert_true(metrics_have(
        w, "\nabuseguard_shield_local{policy=\"login.site_failures\"} 1\n"));
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(check(w, LOGIN_BODY, &r), 429);
    ag_http_response_free(&r);
    /* Sampled at the sync, in the shields' clock's minute, whichever of
     * the hour's it was. */
    json_t *o = ag_overview_json(ag_service_overview(w->svc), shield_now);
    assert_non_null(o);
    json_t *s = json_array_get(json_object_get(o, "shields"), 0);
    assert_string_equal(json_string_value(json_object_get(s, "policy")),
                        "login.site_failures");
    json_t *count = json_object_get(s, "count");
    size_t last = 59;
    while (last > 0 && json_is_null(json_array_get(count, last)))
        last--;
    assert_int_equal(json_integer_value(json_array_get(count, last)), 3);
    assert_true(
        json_is_true(json_array_get(json_object_get(s, "raised"), last)));
    /* The challenge it answered counts under its name. */
    json_t *p = json_array_get(json_object_get(o, "policies"), 0);
    assert_string_equal(json_string_value(json_object_get(p, "policy")),
                        "login.site_failures");
    json_t *asked = json_object_get(p, "challenged");
    long long sum = 0;
    for (size_t i = 0; i < json_array_size(asked); i++)
        sum += json_integer_value(json_array_get(asked, i));
    assert_int_equal(sum, 1);
    json_decref(o);
    /* A minute on, it has been raised a minute. */
    shield_now += 60000;
    ag_shields_sync(sh);
    assert_true(metrics_have(
        w, "\nabuseguard_shield_raised_seconds{policy=\"login.site_failures\"} "
           "60\n"));
    /* Raised by its counts, not by an operator. */
    assert_true(metrics_have(
        w, "\nabuseguard_shield_operator{policy=\"login.site_failures\"} 0\n"));
    /* A set without it: its gauges go. */
    static const char *const without[] = {OPEN};
    struct ag_policy p1 = ag_test_policy(without[0]);
    ag_service_set_ruleset(w->svc, ag_ruleset_new(&p1, 1, 2));
    assert_false(metrics_have(
        w, "abuseguard_shield_raised{policy=\"login.site_failures\"}"));
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            failures_raise_the_shield_which_answers_without_the_store),
        cmocka_unit_test(only_the_reasons_it_counts_raise_it),
        cmocka_unit_test(trusted_devices_and_listed_requests_are_not_judged),
        cmocka_unit_test(a_shadow_shield_only_notes),
        cmocka_unit_test(a_deny_shield_is_reported_before_a_challenge),
        cmocka_unit_test(attempts_raise_an_attempts_shield),
        cmocka_unit_test(a_new_ruleset_keeps_a_raised_shield),
        cmocka_unit_test(a_switch_while_a_table_is_made_stands),
        cmocka_unit_test(a_window_edit_keeps_a_raised_shield),
        cmocka_unit_test(each_step_shows_in_the_gauges_and_the_overview),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
