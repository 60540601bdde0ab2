/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_verdict: each kind of the service's verdict rendered exactly as
 * the ag_http_response builder for its kind renders it (status, body,
 * Retry-After and the rate headers), and a recorded report as a 204 with
 * no body.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_test.h"

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_http_verdict.h"
#include "ag_lists.h"
#include "ag_test_http.h"
#include "ag_verdict.h"

/* Two responses alike in every part ag_http puts on the wire. */
static void assert_same_response(const struct ag_http_response *a,
                                 const struct ag_http_response *b)
{
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->body.len, b->body.len);
    if (a->body.len)
        assert_memory_equal(a->body.p, b->body.p, a->body.len);
    assert_int_equal(a->retry_after, b->retry_after);
    assert_int_equal(a->rate_headers, b->rate_headers);
    assert_int_equal(a->rl_limit, b->rl_limit);
    assert_int_equal(a->rl_remaining, b->rl_remaining);
    assert_int_equal(a->rl_reset, b->rl_reset);
    assert_int_equal(a->rl_policy_field.len, b->rl_policy_field.len);
    assert_int_equal(a->rl_field.len, b->rl_field.len);
    if (a->rl_field.len)
        assert_string_equal(a->rl_field.p, b->rl_field.p);
}

/* v rendered, against the response want built by the function its kind
 * names; both are then freed. */
static void expect_rendered_as(const struct ag_verdict *v,
                               struct ag_http_response *want)
{
    struct ag_http_response got;
    ag_http_response_init(&got);
    assert_int_equal(ag_http_verdict_render(&got, v), AG_OK);
    assert_same_response(&got, want);
    ag_http_response_free(&got);
    ag_http_response_free(want);
    ag_http_response_init(want);
}

static void each_verdict_renders_as_the_response_of_its_kind(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3);
    f.res[1] = (struct ag_limit_result){false, 0, 712000, 712000, 0, 0, 0};
    ag_limiter_decide(&f.plan, f.res, &f.d);
    struct ag_http_response want;
    ag_http_response_init(&want);
    struct ag_verdict v = {.kind = AG_VERDICT_DECIDED,
                           .plan = &f.plan,
                           .res = f.res,
                           .decision = f.d};
    ag_http_response_check(&want, &f.plan, f.res, &f.d, false, NULL);
    assert_int_equal(want.status, 429);
    expect_rendered_as(&v, &want);
    v.degraded = true;
    ag_http_response_check(&want, &f.plan, f.res, &f.d, true, NULL);
    expect_rendered_as(&v, &want);
    v.degraded = false;
    v.cached = true;
    ag_http_response_cached(&want, &f.plan, f.res, &f.d, NULL);
    expect_rendered_as(&v, &want);
    v.cached = false;
    v.inspected = true;
    f.plan.kind = AG_PLAN_PEEK;
    ag_http_response_inspect(&want, &f.plan, f.res, false);
    assert_int_equal(want.status, 200);
    expect_rendered_as(&v, &want);
    struct ag_list_entry e = {.id = 7, .list = AG_LIST_DENY, .kind = AG_LK_IP};
    v = (struct ag_verdict){
        .kind = AG_VERDICT_LISTED, .trusted = true, .entry = &e};
    ag_http_response_listed(&want, &e, true);
    assert_int_equal(want.status, 403);
    expect_rendered_as(&v, &want);
    v.inspected = true;
    ag_http_response_inspect_listed(&want, &e, true);
    expect_rendered_as(&v, &want);
    v = (struct ag_verdict){.kind = AG_VERDICT_STORE_DOWN,
                            .closed = &f.plan.ops[1]};
    ag_http_response_unavailable(&want, &f.plan.ops[1], false);
    assert_int_equal(want.status, 503);
    expect_rendered_as(&v, &want);
    v = (struct ag_verdict){.kind = AG_VERDICT_REFUSED};
    ag_error_fill(&v.err, AG_EINVAL, "ip", "ip is required");
    ag_http_response_refusal(&want, 400, &v.err);
    expect_rendered_as(&v, &want);
    v = (struct ag_verdict){.kind = AG_VERDICT_UNAVAILABLE,
                            .why = "policies are not loaded yet"};
    ag_http_response_error(&want, 503, "policies are not loaded yet");
    expect_rendered_as(&v, &want);
    v = (struct ag_verdict){.kind = AG_VERDICT_TOKEN, .ttl_s = 600};
    strcpy(v.token, "v1.token");
    ag_http_response_device_token(&want, "v1.token", 600);
    expect_rendered_as(&v, &want);
    /* A report recorded: 204 with no body, whatever r held before. */
    v = (struct ag_verdict){.kind = AG_VERDICT_RECORDED};
    struct ag_http_response r;
    ag_http_response_init(&r);
    ag_http_response_error(&r, 500, "earlier");
    assert_int_equal(ag_http_verdict_render(&r, &v), AG_OK);
    assert_int_equal(r.status, 204);
    assert_int_equal(r.body.len, 0);
    ag_http_response_free(&r);
    ag_http_response_free(&want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_verdict_renders_as_the_response_of_its_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
