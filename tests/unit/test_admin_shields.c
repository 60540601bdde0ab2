/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_admin_shields, the operators' routes, on a service whose shields are
 * its own (a store without Redis): the switch's body, each refusal naming
 * its field; the list of shields with their figures and their policies'
 * words; the switch raising and lowering a shield and asking for its
 * audit row, while a refusal or an unknown shield asks for none; the
 * methods each path takes; and the overview counting a check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_admin_shields.h"
#include "ag_test_service.h"

#define FAILS                                                                  \
    "{\"name\":\"login.site_failures\",\"endpoint\":\"login\","                \
    "\"key\":[\"site\"],\"algorithm\":\"surge\",\"limit\":100,"                \
    "\"window_s\":60,\"block_s\":600,\"applies_to\":\"untrusted\","            \
    "\"action\":\"challenge\",\"counts\":\"failures\"}"

static const char *refused_field(const char *body)
{
    static struct ag_error err;
    struct ag_shield_switch sw = {.lower = true, .raise_for_s = 9};
    assert_int_equal(
        ag_admin_shield_switch_parse(body, body ? strlen(body) : 0, &sw, &err),
        AG_EINVAL);
    assert_false(sw.lower);
    assert_int_equal(sw.raise_for_s, 0);
    /* The sentence names the field it refuses. */
    assert_non_null(strstr(err.msg, err.field));
    return err.field;
}

static void a_switch_takes_exactly_one_of_raise_for_s_or_lower(void **state)
{
    (void)state;
    struct ag_shield_switch sw;
    struct ag_error err;
    const char *raise = "{\"raise_for_s\": 3600}";
    assert_int_equal(
        ag_admin_shield_switch_parse(raise, strlen(raise), &sw, &err), AG_OK);
    assert_false(sw.lower);
    assert_int_equal(sw.raise_for_s, 3600);
    const char *lower = "{\"lower\": true}";
    assert_int_equal(
        ag_admin_shield_switch_parse(lower, strlen(lower), &sw, &err), AG_OK);
    assert_true(sw.lower);
    assert_int_equal(sw.raise_for_s, 0);
    assert_int_equal(sw.lower_for_s, AG_SHIELDS_LOWER_HOLD);
    const char *quiet = "{\"lower_for_s\": 0}";
    assert_int_equal(
        ag_admin_shield_switch_parse(quiet, strlen(quiet), &sw, &err), AG_OK);
    assert_true(sw.lower);
    assert_int_equal(sw.lower_for_s, 0);
    const char *longest = "{\"raise_for_s\": 2592000}";
    assert_int_equal(
        ag_admin_shield_switch_parse(longest, strlen(longest), &sw, &err),
        AG_OK);
    assert_int_equal(sw.raise_for_s, 30 * 86400);
}

static void each_refusal_names_its_field(void **state)
{
    (void)state;
    assert_string_equal(refused_field(NULL), "body");
    assert_string_equal(refused_field("{\"lower\": tru"), "body");
    assert_string_equal(refused_field("[1]"), "body");
    assert_string_equal(refused_field("\"lower\""), "body");
    assert_string_equal(refused_field("{\"lower\": true, \"lower\": true}"),
                        "body");
    assert_string_equal(refused_field("{}"), "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": 60, \"lower\": true}"),
                        "lower");
    assert_string_equal(refused_field("{\"lower\": false}"), "lower");
    assert_string_equal(refused_field("{\"lower\": \"yes\"}"), "lower");
    assert_string_equal(refused_field("{\"lower\": null}"), "lower");
    assert_string_equal(refused_field("{\"raise_for_s\": 0}"), "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": -5}"), "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": 2592001}"),
                        "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": 1.5}"), "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": 60.0}"),
                        "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": \"60\"}"),
                        "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": null}"),
                        "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": 99999999999999999}"),
                        "raise_for_s");
    assert_string_equal(refused_field("{\"raise_for_s\": 60, \"why\": 1}"),
                        "why");
    assert_string_equal(refused_field("{\"lower\": true, \"lower_for_s\": 5}"),
                        "lower_for_s");
    assert_string_equal(
        refused_field("{\"raise_for_s\": 5, \"lower_for_s\": 5}"),
        "lower_for_s");
    assert_string_equal(refused_field("{\"lower_for_s\": -1}"), "lower_for_s");
    assert_string_equal(refused_field("{\"lower_for_s\": 2592001}"),
                        "lower_for_s");
    assert_string_equal(refused_field("{\"lower_for_s\": \"5\"}"),
                        "lower_for_s");
    /* A field's name is echoed in a safe alphabet only. */
    assert_string_equal(refused_field("{\"<b>\\\"x\": 1}"), "?b??x");
}

/* Serves method path (after /admin) with body through the routes. */
static int serve(struct world *w, const char *method, const char *path,
                 const char *body, struct ag_http_response *r,
                 struct ag_admin_shield_audit *audit)
{
    ag_http_response_free(r);
    ag_http_response_init(r);
    struct ag_admin_shields_request req = {.method = method,
                                           .path = path,
                                           .body = body,
                                           .len = body ? strlen(body) : 0};
    int rc = strcmp(path, "/overview") == 0
                 ? ag_admin_overview(w->svc, &req, NULL, r)
                 : ag_admin_shields(w->svc, &req, r, audit);
    assert_int_equal(rc, AG_OK);
    return r->status;
}

static json_t *body_json(const struct ag_http_response *r)
{
    json_t *o = json_loadb(r->body.p, r->body.len, 0, NULL);
    assert_non_null(o);
    return o;
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static void the_list_shows_each_shield_with_its_figures(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    struct ag_admin_shield_audit audit;
    assert_int_equal(serve(w, "GET", "/shields", NULL, &r, &audit), 200);
    assert_null(audit.action);
    json_t *o = body_json(&r);
    json_t *list = json_object_get(o, "shields");
    assert_int_equal(json_array_size(list), 1); /* login.user is no shield */
    json_t *s = json_array_get(list, 0);
    assert_string_equal(str(s, "name"), "login.site_failures");
    assert_true(json_is_false(json_object_get(s, "raised")));
    assert_true(json_is_null(json_object_get(s, "since")));
    assert_true(json_is_null(json_object_get(s, "until")));
    assert_int_equal(json_integer_value(json_object_get(s, "threshold")), 100);
    assert_int_equal(json_integer_value(json_object_get(s, "rate")), 0);
    assert_int_equal(json_integer_value(json_object_get(s, "current")), 0);
    assert_true(json_is_number(json_object_get(s, "baseline")));
    assert_true(json_is_number(json_object_get(s, "attempt_baseline")));
    assert_int_equal(json_integer_value(json_object_get(s, "window_s")), 60);
    assert_string_equal(str(s, "mode"), "enforce");
    assert_string_equal(str(s, "action"), "challenge");
    assert_string_equal(str(s, "applies_to"), "untrusted");
    assert_string_equal(str(s, "counts"), "failures");
    assert_string_equal(str(s, "endpoint"), "login");
    assert_true(json_is_null(json_object_get(s, "stepped_at")));
    json_decref(o);
    /* Once stepped, it says when, and where its state came from: no
     * Redis behind this store, so this instance's own counts. */
    ag_shields_sync(ag_service_shields(w->svc));
    assert_int_equal(serve(w, "GET", "/shields", NULL, &r, &audit), 200);
    o = body_json(&r);
    s = json_array_get(json_object_get(o, "shields"), 0);
    assert_string_equal(str(s, "source"), "local");
    assert_true(json_is_string(json_object_get(s, "stepped_at")));
    json_decref(o);
    ag_http_response_free(&r);
    world_free(w);
}

static void the_switch_raises_and_lowers_and_asks_for_its_audit(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    struct ag_admin_shield_audit audit;
    assert_int_equal(serve(w, "POST", "/shields/login.site_failures",
                           "{\"raise_for_s\": 600}", &r, &audit),
                     200);
    assert_string_equal(audit.action, "shield_raise");
    assert_string_equal(audit.policy, "login.site_failures");
    assert_int_equal(
        json_integer_value(json_object_get(audit.after, "raise_for_s")), 600);
    json_decref(audit.after);
    json_t *o = body_json(&r);
    json_t *s = json_object_get(o, "shield");
    assert_true(json_is_true(json_object_get(s, "raised")));
    assert_true(json_is_string(json_object_get(s, "since")));
    assert_true(json_is_string(json_object_get(s, "until")));
    json_decref(o);
    /* An untrusted check is now challenged by it. */
    struct ag_http_response c;
    ag_http_response_init(&c);
    assert_int_equal(run_check(w, LOGIN_BODY, &c), 429);
    assert_true(body_has(&c, "login.site_failures"));
    ag_http_response_free(&c);
    assert_int_equal(serve(w, "POST", "/shields/login.site_failures",
                           "{\"lower\": true}", &r, &audit),
                     200);
    assert_string_equal(audit.action, "shield_lower");
    assert_true(json_is_true(json_object_get(audit.after, "lower")));
    json_decref(audit.after);
    o = body_json(&r);
    s = json_object_get(o, "shield");
    assert_true(json_is_false(json_object_get(s, "raised")));
    assert_true(json_is_null(json_object_get(s, "until")));
    json_decref(o);
    ag_http_response_init(&c);
    assert_int_equal(run_check(w, LOGIN_BODY, &c), 200);
    ag_http_response_free(&c);
    ag_http_response_free(&r);
    world_free(w);
}

static void refusals_and_unknown_shields_ask_for_no_audit(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    struct ag_admin_shield_audit audit;
    assert_int_equal(serve(w, "POST", "/shields/login.site_failures",
                           "{\"raise_for_s\": 0}", &r, &audit),
                     400);
    assert_true(body_has(&r, "\"field\":\"raise_for_s\""));
    assert_null(audit.action);
    /* A policy that is no shield, and none at all: 404. */
    assert_int_equal(serve(w, "POST", "/shields/login.user",
                           "{\"raise_for_s\": 60}", &r, &audit),
                     404);
    assert_null(audit.action);
    assert_int_equal(serve(w, "POST", "/shields/login.nothing",
                           "{\"lower\": true}", &r, &audit),
                     404);
    assert_null(audit.action);
    assert_int_equal(serve(w, "POST", "/shields/Login Site",
                           "{\"lower\": true}", &r, &audit),
                     400);
    assert_true(body_has(&r, "\"field\":\"name\""));
    assert_null(audit.action);
    /* Each path takes its own method. */
    assert_int_equal(
        serve(w, "GET", "/shields/login.site_failures", NULL, &r, &audit), 405);
    assert_string_equal(r.allow, "POST");
    assert_int_equal(serve(w, "POST", "/shields", "{}", &r, &audit), 405);
    assert_string_equal(r.allow, "GET");
    assert_int_equal(serve(w, "DELETE", "/overview", NULL, &r, &audit), 405);
    assert_string_equal(r.allow, "GET");
    ag_http_response_free(&r);
    world_free(w);
}

static void the_overview_counts_a_check_in_this_minute(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, FAILS};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    struct ag_admin_shield_audit audit;
    assert_int_equal(serve(w, "GET", "/overview", NULL, &r, &audit), 200);
    json_t *o = body_json(&r);
    assert_string_equal(str(o, "scope"), "instance");
    assert_int_equal(json_array_size(json_object_get(o, "minutes")), 60);
    json_t *login = json_array_get(json_object_get(o, "checks"), AG_EP_LOGIN);
    assert_string_equal(str(login, "endpoint"), "login");
    json_t *allowed = json_object_get(login, "allowed");
    long long sum = 0;
    for (size_t i = 0; i < json_array_size(allowed); i++)
        sum += json_integer_value(json_array_get(allowed, i));
    /* In one of the hour's minutes, whichever it turned out to be. */
    assert_int_equal(sum, 1);
    json_decref(o);
    ag_http_response_free(&r);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_switch_takes_exactly_one_of_raise_for_s_or_lower),
        cmocka_unit_test(each_refusal_names_its_field),
        cmocka_unit_test(the_list_shows_each_shield_with_its_figures),
        cmocka_unit_test(the_switch_raises_and_lowers_and_asks_for_its_audit),
        cmocka_unit_test(refusals_and_unknown_shields_ask_for_no_audit),
        cmocka_unit_test(the_overview_counts_a_check_in_this_minute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
