/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_response: check, error and store-unavailable responses, with every
 * body parsed back with jansson.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_test.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_test_http.h"

/* Parses the body; the caller owns the result. */
static json_t *body_json(const struct ag_http_response *r)
{
    assert_non_null(r->body.p);
    json_error_t jerr;
    json_t *v = json_loadb(r->body.p, r->body.len, 0, &jerr);
    if (!v)
        fail_msg("body is not JSON (%s): %s", jerr.text, r->body.p);
    assert_true(json_is_object(v));
    return v;
}

static json_int_t int_field(const json_t *o, const char *name)
{
    const json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        fail_msg("\"%s\" is not an integer", name);
    return json_integer_value(v);
}

static const char *str_field(const json_t *o, const char *name)
{
    const json_t *v = json_object_get(o, name);
    if (!json_is_string(v))
        fail_msg("\"%s\" is not a string", name);
    return json_string_value(v);
}

static bool bool_field(const json_t *o, const char *name)
{
    const json_t *v = json_object_get(o, name);
    if (!json_is_boolean(v))
        fail_msg("\"%s\" is not a boolean", name);
    return json_is_true(v);
}

/* Decides f's results and builds their check response into r. */
static void render(struct fixture *f, bool degraded, struct ag_http_response *r)
{
    ag_limiter_decide(&f->plan, f->res, &f->d);
    assert_int_equal(
        ag_http_response_check(r, &f->plan, f->res, &f->d, degraded, NULL),
        AG_OK);
}

static void allowed_check_body_lists_every_decision(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.retry_after, 0);
    json_t *b = body_json(&r);
    assert_true(bool_field(b, "allowed"));
    assert_null(json_object_get(b, "policy"));
    assert_null(json_object_get(b, "retry_after"));
    assert_null(json_object_get(b, "degraded"));
    assert_null(json_object_get(b, "action"));
    assert_string_equal(str_field(b, "device"), "untrusted");
    const json_t *ds = json_object_get(b, "decisions");
    assert_true(json_is_array(ds));
    assert_int_equal(json_array_size(ds), 2);
    const json_t *d0 = json_array_get(ds, 0);
    assert_string_equal(str_field(d0, "policy"), "login.user");
    assert_true(bool_field(d0, "allowed"));
    assert_int_equal(int_field(d0, "limit"), 10);
    assert_int_equal(int_field(d0, "remaining"), 9);
    assert_int_equal(int_field(d0, "reset_after"), 900);
    assert_null(json_object_get(d0, "retry_after"));
    assert_null(json_object_get(d0, "shadow"));
    assert_null(json_object_get(d0, "action"));
    assert_null(json_object_get(d0, "challenge_passed"));
    const json_t *d1 = json_array_get(ds, 1);
    assert_string_equal(str_field(d1, "policy"), "login.user_ip");
    assert_int_equal(int_field(d1, "limit"), 5);
    assert_int_equal(int_field(d1, "remaining"), 2);
    /* 899001 ms rounds up to whole seconds. */
    assert_int_equal(int_field(d1, "reset_after"), 900);
    json_decref(b);
    ag_http_response_free(&r);
}

static void allowed_check_rate_headers_follow_the_tightest(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    ag_limiter_decide(&f.plan, f.res, &f.d);
    assert_int_equal(f.d.tightest, 1);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(
        ag_http_response_check(&r, &f.plan, f.res, &f.d, false, NULL), AG_OK);
    assert_true(r.rate_headers);
    assert_int_equal(r.rl_limit, 5);
    assert_int_equal(r.rl_remaining, 2);
    assert_int_equal(r.rl_reset, 900);
    ag_http_response_free(&r);
}

static void denied_check_names_policy_and_retry(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.res[1] = (struct ag_limit_result){false, 0, 711200, 899000, 0, 0, 0};
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.retry_after, 712);
    json_t *b = body_json(&r);
    assert_false(bool_field(b, "allowed"));
    assert_string_equal(str_field(b, "policy"), "login.user_ip");
    assert_string_equal(str_field(b, "action"), "deny");
    assert_int_equal(int_field(b, "retry_after"), 712);
    const json_t *ds = json_object_get(b, "decisions");
    assert_int_equal(json_array_size(ds), 2);
    const json_t *d0 = json_array_get(ds, 0);
    assert_true(bool_field(d0, "allowed"));
    assert_null(json_object_get(d0, "retry_after"));
    const json_t *d1 = json_array_get(ds, 1);
    assert_false(bool_field(d1, "allowed"));
    assert_int_equal(int_field(d1, "remaining"), 0);
    assert_int_equal(int_field(d1, "retry_after"), 712);
    assert_int_equal(int_field(d1, "reset_after"), 899);
    json_decref(b);
    /* The headers describe the denying policy. */
    assert_true(r.rate_headers);
    assert_int_equal(r.rl_limit, 5);
    assert_int_equal(r.rl_remaining, 0);
    assert_int_equal(r.rl_reset, 712);
    ag_http_response_free(&r);
}

static void ratelimit_fields_list_each_enforcing_policy(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3);
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    /* The shadow policy is no quota of the caller's: not listed. */
    assert_string_equal(r.rl_policy_field.p, "\"login.user\";q=10;w=900, "
                                             "\"login.user_ip\";q=5;w=900");
    assert_string_equal(r.rl_field.p, "\"login.user\";r=9;t=900, "
                                      "\"login.user_ip\";r=2;t=900");
    ag_http_response_free(&r);
}

/* Names are [a-z0-9._-] once validated, but the field's writer does not
 * rely on it: a quote and a backslash are escaped, and any byte outside
 * printable ASCII becomes '?', whatever runs lie between them; ' ' and
 * '~' are the printable range's ends, 0x7f just past it. */
static void ratelimit_field_names_are_sf_strings(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 1);
    snprintf(f.ps[0].name, sizeof f.ps[0].name,
             "a\"b\\c\x01"
             "d\xc3\xa9 ~\x7f");
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_string_equal(r.rl_policy_field.p,
                        "\"a\\\"b\\\\c?d?? ~?\";q=10;w=900");
    assert_string_equal(r.rl_field.p, "\"a\\\"b\\\\c?d?? ~?\";r=9;t=900");
    ag_http_response_free(&r);
}

static void
a_denying_policy_shows_r0_and_t_no_later_than_retry_after(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.res[1] = (struct ag_limit_result){false, 0, 711200, 899000, 0, 0, 0};
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_string_equal(r.rl_field.p, "\"login.user\";r=9;t=900, "
                                      "\"login.user_ip\";r=0;t=712");
    assert_int_equal(r.retry_after, 712);
    ag_http_response_free(&r);
}

static void check_body_says_the_lane_it_was_judged_in(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.plan.trusted = true;
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    json_t *b = body_json(&r);
    assert_string_equal(str_field(b, "device"), "trusted");
    json_decref(b);
    /* Denied in the trusted lane says so too. */
    f.res[0] = (struct ag_limit_result){false, 0, 2000, 2000, 0, 0, 0};
    render(&f, false, &r);
    b = body_json(&r);
    assert_string_equal(str_field(b, "device"), "trusted");
    json_decref(b);
    ag_http_response_free(&r);
}

static void tripped_challenge_is_a_429_asking_for_one(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.ps[0] = policy("login.ask", 10, ",\"action\":\"challenge\"");
    f.res[0] = (struct ag_limit_result){false, 0, 30000, 30000, 0, 0, 0};
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.retry_after, 30);
    json_t *b = body_json(&r);
    assert_false(bool_field(b, "allowed"));
    assert_string_equal(str_field(b, "policy"), "login.ask");
    assert_string_equal(str_field(b, "action"), "challenge");
    const json_t *d0 = json_array_get(json_object_get(b, "decisions"), 0);
    assert_string_equal(str_field(d0, "action"), "challenge");
    assert_null(json_object_get(d0, "challenge_passed"));
    assert_null(json_object_get(d0, "shadow"));
    json_decref(b);
    ag_http_response_free(&r);
}

static void passed_challenge_is_marked_in_its_decision(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.ps[0] = policy("login.ask", 10, ",\"action\":\"challenge\"");
    f.plan.ops[0].waived = true;
    f.plan.ops[0].shadow = true;
    f.res[0] = (struct ag_limit_result){false, 0, 30000, 30000, 0, 0, 0};
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_int_equal(r.status, 200);
    json_t *b = body_json(&r);
    assert_true(bool_field(b, "allowed"));
    const json_t *d0 = json_array_get(json_object_get(b, "decisions"), 0);
    assert_false(bool_field(d0, "allowed"));
    assert_string_equal(str_field(d0, "action"), "challenge");
    assert_true(bool_field(d0, "challenge_passed"));
    /* Waived for this request, but not a shadow policy. */
    assert_null(json_object_get(d0, "shadow"));
    json_decref(b);
    ag_http_response_free(&r);
}

static void successful_login_answer_carries_the_token(void **state)
{
    (void)state;
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(ag_http_response_device_token(&r, "v1.abc-_", 7776000),
                     AG_OK);
    assert_int_equal(r.status, 200);
    json_t *b = body_json(&r);
    assert_string_equal(str_field(b, "device_token"), "v1.abc-_");
    assert_int_equal(int_field(b, "expires_in"), 7776000);
    assert_int_equal(json_object_size(b), 2);
    json_decref(b);
    ag_http_response_free(&r);
}

static void degraded_check_says_so(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, true, &r);
    json_t *b = body_json(&r);
    assert_true(bool_field(b, "degraded"));
    assert_true(bool_field(b, "allowed"));
    assert_int_equal(json_array_size(json_object_get(b, "decisions")), 2);
    json_decref(b);
    /* Denied and degraded. */
    f.res[0] = (struct ag_limit_result){false, 0, 2000, 2000, 0, 0, 0};
    render(&f, true, &r);
    b = body_json(&r);
    assert_true(bool_field(b, "degraded"));
    assert_false(bool_field(b, "allowed"));
    assert_string_equal(str_field(b, "policy"), "login.user");
    json_decref(b);
    ag_http_response_free(&r);
}

static void shadow_decision_is_marked_and_does_not_deny(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3);
    f.res[2] = (struct ag_limit_result){false, 0, 5000, 30000, 0, 0, 0};
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.retry_after, 0);
    json_t *b = body_json(&r);
    assert_true(bool_field(b, "allowed"));
    const json_t *ds = json_object_get(b, "decisions");
    assert_int_equal(json_array_size(ds), 3);
    const json_t *d2 = json_array_get(ds, 2);
    assert_string_equal(str_field(d2, "policy"), "login.shadow");
    assert_true(bool_field(d2, "shadow"));
    assert_false(bool_field(d2, "allowed"));
    assert_int_equal(int_field(d2, "retry_after"), 5);
    assert_null(json_object_get(json_array_get(ds, 0), "shadow"));
    json_decref(b);
    /* The headers do not describe the shadow policy. */
    assert_int_equal(r.rl_limit, 5);
    ag_http_response_free(&r);
}

static void empty_window_resets_after_zero(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.res[0].reset_after_ms = 0;
    f.res[1] = (struct ag_limit_result){true, 4, 0, 1, 0, 0, 0};
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    json_t *b = body_json(&r);
    const json_t *ds = json_object_get(b, "decisions");
    assert_int_equal(int_field(json_array_get(ds, 0), "reset_after"), 0);
    assert_int_equal(int_field(json_array_get(ds, 1), "reset_after"), 1);
    json_decref(b);
    ag_http_response_free(&r);
}

static void check_without_policies_has_no_rate_headers(void **state)
{
    (void)state;
    struct ag_plan plan = {.n = 0};
    struct ag_decision d;
    ag_limiter_decide(&plan, NULL, &d);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(ag_http_response_check(&r, &plan, NULL, &d, false, NULL),
                     AG_OK);
    assert_int_equal(r.status, 200);
    assert_false(r.rate_headers);
    json_t *b = body_json(&r);
    assert_true(bool_field(b, "allowed"));
    assert_int_equal(json_array_size(json_object_get(b, "decisions")), 0);
    json_decref(b);
    ag_http_response_free(&r);
}

static void error_body_escapes_quotes_and_backslashes(void **state)
{
    (void)state;
    const char *msg = "field \"user\" has a \\ in it";
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(ag_http_response_error(&r, 400, msg), AG_OK);
    assert_int_equal(r.status, 400);
    json_t *b = body_json(&r);
    assert_string_equal(str_field(b, "error"), msg);
    assert_int_equal(json_object_size(b), 1);
    json_decref(b);
    ag_http_response_free(&r);
}

static void error_body_replaces_non_ascii_with_question_marks(void **state)
{
    (void)state;
    struct ag_http_response r;
    ag_http_response_init(&r);
    /* Valid UTF-8 and a stray invalid byte alike. */
    assert_int_equal(
        ag_http_response_error(&r, 400, "na\xc3\xafve \xe2\x82\xac \xff!"),
        AG_OK);
    json_t *b = body_json(&r);
    assert_string_equal(str_field(b, "error"), "na??ve ??? ?!");
    json_decref(b);
    ag_http_response_free(&r);
}

static void error_body_with_control_characters_is_valid_json(void **state)
{
    (void)state;
    const char *msg = "line one\nline two\ttab\x01";
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(ag_http_response_error(&r, 413, msg), AG_OK);
    assert_int_equal(r.status, 413);
    json_t *b = body_json(&r);
    assert_string_equal(str_field(b, "error"), msg);
    json_decref(b);
    ag_http_response_free(&r);
}

static void field_error_names_the_field(void **state)
{
    (void)state;
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(
        ag_http_response_field_error(&r, 422, "limit must be \"> 0\"", "limit"),
        AG_OK);
    assert_int_equal(r.status, 422);
    json_t *b = body_json(&r);
    assert_string_equal(str_field(b, "error"), "limit must be \"> 0\"");
    assert_string_equal(str_field(b, "field"), "limit");
    json_decref(b);
    ag_http_response_free(&r);
}

static void raw_answer_is_a_whole_response_that_closes(void **state)
{
    (void)state;
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(
        ag_http_response_field_error(&r, 400, "a bare LF", "framing"), AG_OK);
    char out[512];
    size_t n = ag_http_response_raw(&r, out, sizeof out);
    assert_true(n > r.body.len);
    static const char head[] = "HTTP/1.1 400 Bad Request\r\n"
                               "Content-Type: application/json\r\n"
                               "Cache-Control: no-store\r\n"
                               "Connection: close\r\n";
    assert_memory_equal(out, head, sizeof head - 1);
    char cl[64];
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n\r\n", r.body.len);
    /* The body follows the head, exactly as long as it says. */
    assert_int_equal(n, sizeof head - 1 + strlen(cl) + r.body.len);
    assert_memory_equal(out + sizeof head - 1, cl, strlen(cl));
    assert_memory_equal(out + n - r.body.len, r.body.p, r.body.len);
    /* Retry-After when set; nothing at all when it does not fit. */
    r.retry_after = 1;
    r.status = 503;
    n = ag_http_response_raw(&r, out, sizeof out);
    assert_non_null(strstr(out, "HTTP/1.1 503 Service Unavailable\r\n"));
    assert_non_null(strstr(out, "\r\nRetry-After: 1\r\n"));
    assert_int_equal(ag_http_response_raw(&r, out, n - 1), 0);
    assert_int_equal(ag_http_response_raw(&r, out, n), n);
    ag_http_response_free(&r);
}

static void new_body_replaces_the_previous_one(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    render(&f, false, &r);
    assert_int_equal(ag_http_response_error(&r, 500, "oops"), AG_OK);
    json_t *b = body_json(&r);
    assert_string_equal(str_field(b, "error"), "oops");
    assert_null(json_object_get(b, "decisions"));
    json_decref(b);
    assert_int_equal(ag_http_response_status(&r, 200, "ok"), AG_OK);
    b = body_json(&r);
    assert_string_equal(str_field(b, "status"), "ok");
    assert_int_equal(json_object_size(b), 1);
    json_decref(b);
    ag_http_response_free(&r);
}

static void unavailable_with_fail_closed_is_503_naming_it(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.ps[1] = policy("login.user_ip", 5, ",\"fail\":\"closed\"");
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(ag_http_response_unavailable(&r, &f.plan.ops[1], true),
                     AG_OK);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.retry_after, 1);
    json_t *b = body_json(&r);
    assert_false(bool_field(b, "allowed"));
    assert_string_equal(str_field(b, "reason"), "store_unavailable");
    assert_string_equal(str_field(b, "policy"), "login.user_ip");
    assert_true(bool_field(b, "degraded"));
    assert_int_equal(int_field(b, "retry_after"), 1);
    assert_string_equal(str_field(b, "device"), "trusted");
    json_decref(b);
    ag_http_response_free(&r);
}

static void denied_inspect_is_a_200_with_the_block_and_no_headers(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2);
    f.ps[1] = policy("login.user_ip", 5,
                     ",\"block_s\":60,\"block_growth\":2,"
                     "\"block_max_s\":600");
    f.plan.kind = AG_PLAN_PEEK;
    f.res[1] = (struct ag_limit_result){.allowed = false,
                                        .retry_after_ms = 41500,
                                        .reset_after_ms = 10000,
                                        .blocked_ms = 41500,
                                        .block_level = 2};
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(ag_http_response_inspect(&r, &f.plan, f.res, false),
                     AG_OK);
    /* An admin answer: never a 429, and no quota headers. */
    assert_int_equal(r.status, 200);
    assert_int_equal(r.retry_after, 0);
    assert_false(r.rate_headers);
    assert_int_equal(r.rl_field.len, 0);
    json_t *b = body_json(&r);
    assert_false(bool_field(b, "allowed"));
    assert_true(bool_field(b, "inspected"));
    assert_string_equal(str_field(b, "policy"), "login.user_ip");
    assert_string_equal(str_field(b, "action"), "deny");
    assert_int_equal(int_field(b, "retry_after"), 42);
    assert_null(json_object_get(b, "degraded"));
    const json_t *ds = json_object_get(b, "decisions");
    const json_t *d0 = json_array_get(ds, 0);
    assert_int_equal(int_field(d0, "remaining"), 9);
    assert_null(json_object_get(d0, "blocked_for"));
    assert_null(json_object_get(d0, "block_level"));
    const json_t *d1 = json_array_get(ds, 1);
    assert_false(bool_field(d1, "allowed"));
    assert_int_equal(int_field(d1, "blocked_for"), 42);
    assert_int_equal(int_field(d1, "block_level"), 2);
    json_decref(b);
    ag_http_response_free(&r);
}

static void degraded_inspect_marks_fail_closed_policies_unknown(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3);
    f.ps[1] = policy("login.user_ip", 5, ",\"fail\":\"closed\"");
    f.ps[2] =
        policy("login.shadow", 3, ",\"mode\":\"shadow\",\"fail\":\"closed\"");
    f.plan.kind = AG_PLAN_PEEK;
    f.plan.trusted = true;
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(ag_http_response_inspect(&r, &f.plan, f.res, true), AG_OK);
    assert_int_equal(r.status, 200);
    json_t *b = body_json(&r);
    /* What a check is answered now (ag_http_response_unavailable's). */
    assert_false(bool_field(b, "allowed"));
    assert_string_equal(str_field(b, "reason"), "store_unavailable");
    assert_string_equal(str_field(b, "policy"), "login.user_ip");
    assert_int_equal(int_field(b, "retry_after"), 1);
    assert_string_equal(str_field(b, "device"), "trusted");
    assert_true(bool_field(b, "degraded"));
    assert_true(bool_field(b, "inspected"));
    const json_t *ds = json_object_get(b, "decisions");
    assert_int_equal(json_array_size(ds), 3);
    const json_t *closed = json_array_get(ds, 1);
    assert_true(bool_field(closed, "unknown"));
    assert_false(bool_field(closed, "allowed"));
    assert_int_equal(int_field(closed, "limit"), 5);
    assert_null(json_object_get(closed, "remaining"));
    /* A fail-open policy and a shadow one are the fallback's. */
    assert_null(json_object_get(json_array_get(ds, 0), "unknown"));
    assert_int_equal(int_field(json_array_get(ds, 0), "remaining"), 9);
    assert_null(json_object_get(json_array_get(ds, 2), "unknown"));
    assert_true(bool_field(json_array_get(ds, 2), "shadow"));
    json_decref(b);
    /* Redis answering, the same policies are read, none unknown. */
    assert_int_equal(ag_http_response_inspect(&r, &f.plan, f.res, false),
                     AG_OK);
    b = body_json(&r);
    assert_true(bool_field(b, "allowed"));
    assert_null(json_object_get(b, "reason"));
    assert_int_equal(
        int_field(json_array_get(json_object_get(b, "decisions"), 1),
                  "remaining"),
        2);
    json_decref(b);
    ag_http_response_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allowed_check_body_lists_every_decision),
        cmocka_unit_test(allowed_check_rate_headers_follow_the_tightest),
        cmocka_unit_test(denied_check_names_policy_and_retry),
        cmocka_unit_test(ratelimit_fields_list_each_enforcing_policy),
        cmocka_unit_test(ratelimit_field_names_are_sf_strings),
        cmocka_unit_test(
            a_denying_policy_shows_r0_and_t_no_later_than_retry_after),
        cmocka_unit_test(check_body_says_the_lane_it_was_judged_in),
        cmocka_unit_test(tripped_challenge_is_a_429_asking_for_one),
        cmocka_unit_test(passed_challenge_is_marked_in_its_decision),
        cmocka_unit_test(successful_login_answer_carries_the_token),
        cmocka_unit_test(degraded_check_says_so),
        cmocka_unit_test(shadow_decision_is_marked_and_does_not_deny),
        cmocka_unit_test(empty_window_resets_after_zero),
        cmocka_unit_test(check_without_policies_has_no_rate_headers),
        cmocka_unit_test(error_body_escapes_quotes_and_backslashes),
        cmocka_unit_test(error_body_replaces_non_ascii_with_question_marks),
        cmocka_unit_test(error_body_with_control_characters_is_valid_json),
        cmocka_unit_test(field_error_names_the_field),
        cmocka_unit_test(raw_answer_is_a_whole_response_that_closes),
        cmocka_unit_test(new_body_replaces_the_previous_one),
        cmocka_unit_test(unavailable_with_fail_closed_is_503_naming_it),
        cmocka_unit_test(denied_inspect_is_a_200_with_the_block_and_no_headers),
        cmocka_unit_test(degraded_inspect_marks_fail_closed_policies_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
