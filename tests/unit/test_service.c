/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_service, the check path: checks and reports over a fake store (one
 * that answers, fails, or answers later on demand) and the real
 * in-process fallback (ag_test_service.h): the verdict each answer is,
 * fail closed against fail open, list precedence, login reports, an
 * abandoned check, the waiter's order, device tokens and their lanes,
 * and the challenge tier. The deny cache in front of the store is
 * test_service_cache.c's, resets and inspects test_service_admin.c's.
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
#include "ag_test_service.h"
#include "ag_verdict.h"

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
    struct ag_verdict v;
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &v),
                     AG_EPENDING);
    /* Started and waiting: suspended, not yet resumed. */
    assert_string_equal(waiter_log, "suspend ");
    assert_int_equal(ag_service_waiting(w->svc), 1);
    fake_answer(&w->store);
    assert_string_equal(waiter_log, "suspend resume ");
    assert_int_equal(ag_service_waiting(w->svc), 0);
    assert_int_equal(answer(ag_service_check_finish(c, &v), &v, &r), 200);
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
    assert_int_equal(report_login(w, fail, &r), AG_OK);
    assert_int_equal(r.status, 204);
    assert_int_equal(w->store.checks, 1);
    assert_int_equal(w->store.last_kind, AG_PLAN_FAILURE);
    assert_int_equal(w->store.last_n, 1); /* the failure policy alone */
    const char *ok = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                     "\"success\":true}";
    assert_int_equal(report_login(w, ok, &r), AG_OK);
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
        assert_int_equal(report_login(w, fail, &r), AG_OK);
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
        assert_int_equal(report_login(w, fail, &r), AG_OK);
    }
    /* Six failures, two passwords: two charged of the limit of three. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    const char *third = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                        "\"success\":false}";
    assert_int_equal(report_login(w, third, &r), AG_OK);
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
    struct ag_verdict v;
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &v),
                     AG_EPENDING);
    /* The test's, the service's and the check's. */
    assert_int_equal(atomic_load(&w->set->refs), 3);
    fake_answer(&w->store);
    ag_service_check_abandon(c);
    assert_int_equal(atomic_load(&w->set->refs), 2);
    ag_http_response_free(&r);
    world_free(w);
}

/* The verdicts: what the service hands the HTTP layer, and what each
 * borrows until released. */

static void a_decided_verdict_borrows_its_check_until_released(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(true, ps, 1);
    struct ag_check *c = NULL;
    struct ag_verdict v;
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &v),
                     AG_EPENDING);
    fake_answer(&w->store);
    assert_int_equal(ag_service_check_finish(c, &v), AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_DECIDED);
    assert_false(v.degraded);
    assert_false(v.cached);
    assert_false(v.inspected);
    assert_int_equal(v.plan->n, 1);
    assert_string_equal(v.plan->ops[0].policy->name, "login.user");
    assert_true(v.res[0].allowed);
    assert_int_equal(v.res[0].remaining, 7);
    assert_true(v.decision.allowed);
    /* The test's, the service's and the verdict's check's. */
    assert_int_equal(atomic_load(&w->set->refs), 3);
    ag_verdict_release(&v);
    assert_int_equal(atomic_load(&w->set->refs), 2);
    assert_null(v.plan);
    assert_null(v.owner);
    ag_verdict_release(&v); /* a released verdict: nothing more */
    assert_int_equal(atomic_load(&w->set->refs), 2);
    world_free(w);
}

static void each_answer_is_a_verdict_of_its_kind(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, CLOSED};
    struct world *w = world_new(false, ps, 2);
    struct ag_check *c = NULL;
    struct ag_verdict v;
    /* A refused body: the field, nothing borrowed. */
    const char *bad = "{\"user\":\"ana\"}";
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, bad,
                                            strlen(bad), &waiter, &c, &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_REFUSED);
    assert_string_equal(v.err.field, "ip");
    assert_null(v.owner);
    ag_verdict_release(&v);
    /* The store down while login.ip fails closed: that policy, no
     * decision. */
    w->store.rc = AG_ESTORE;
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &v),
                     AG_EPENDING);
    assert_int_equal(ag_service_check_finish(c, &v), AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_STORE_DOWN);
    assert_string_equal(v.closed->policy->name, "login.ip");
    assert_false(v.trusted);
    ag_verdict_release(&v);
    w->store.rc = AG_OK;
    /* A deny list entry: the entry, borrowed from the ruleset. */
    add_list(w, AG_LIST_DENY, "{\"kind\":\"ip\",\"value\":\"192.0.2.1\"}");
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_LISTED);
    assert_int_equal(v.entry->list, AG_LIST_DENY);
    assert_int_equal(atomic_load(&w->set->refs), 3);
    ag_verdict_release(&v);
    assert_int_equal(atomic_load(&w->set->refs), 2);
    /* Reports: a failure recorded, a success a token. */
    const char *fail = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.9\","
                       "\"success\":false}";
    assert_int_equal(ag_service_report_login(w->svc, fail, strlen(fail), &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_RECORDED);
    ag_verdict_release(&v);
    const char *ok = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.9\","
                     "\"success\":true}";
    assert_int_equal(ag_service_report_login(w->svc, ok, strlen(ok), &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_TOKEN);
    assert_int_equal(strlen(v.token), AG_DEVICE_TOKEN_LEN);
    assert_int_equal(v.ttl_s, TTL);
    ag_verdict_release(&v);
    /* No ruleset: unavailable, saying why. */
    ag_service_set_ruleset(w->svc, NULL);
    assert_int_equal(ag_service_check_begin(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                            strlen(LOGIN_BODY), &waiter, &c,
                                            &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_UNAVAILABLE);
    assert_string_equal(v.why, "policies are not loaded yet");
    ag_verdict_release(&v);
    const char *otp = "{\"phone\":\"+48600100200\",\"ip\":\"192.0.2.1\","
                      "\"verified\":true}";
    assert_int_equal(ag_service_report_otp(w->svc, otp, strlen(otp), &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_UNAVAILABLE);
    ag_verdict_release(&v);
    ag_service_set_ruleset(w->svc, ag_ruleset_ref(w->set));
    world_free(w);
}

/* Device tokens and lanes. */

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
    assert_int_equal(report_login(w, ok, &r), AG_OK);
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
    assert_int_equal(report_login(w, fail, &r), AG_OK);
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
    assert_int_equal(report_login(w, fail, &r), AG_OK);
    assert_int_equal(r.status, 204);
    assert_int_equal(w->store.last_kind, AG_PLAN_FAILURE);
    assert_string_equal(w->store.last_names, "login.known_fail");
    fail = with_token("\"forged\"", ",\"success\":false");
    assert_int_equal(report_login(w, fail, &r), AG_OK);
    assert_string_equal(w->store.last_names, "login.unknown_fail");
    /* A success from the untrusted lane clears only that lane's. */
    const char *ok = with_token("\"forged\"", ",\"success\":true");
    assert_int_equal(report_login(w, ok, &r), AG_OK);
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
    assert_int_equal(report_login(w, ok, &r), AG_OK);
    token_of(&r, renewed);
    ok = with_token("\"stale\"", ",\"success\":true");
    assert_int_equal(report_login(w, ok, &r), AG_OK);
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

/* The challenge tier, judged by the real in-process store (the fake one
 * fails, so every check goes to the fallback). */

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
        cmocka_unit_test(a_decided_verdict_borrows_its_check_until_released),
        cmocka_unit_test(each_answer_is_a_verdict_of_its_kind),
        cmocka_unit_test(successful_login_gets_a_token_that_is_trusted_after),
        cmocka_unit_test(any_token_but_a_live_one_of_the_user_is_untrusted),
        cmocka_unit_test(otp_token_is_trusted_only_with_its_user),
        cmocka_unit_test(reports_are_laned_by_the_token_they_carry),
        cmocka_unit_test(success_with_a_trusted_token_renews_the_same_device),
        cmocka_unit_test(
            challenge_is_asked_then_waived_while_a_deny_still_denies),
        cmocka_unit_test(listed_answer_says_the_lane_too),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
