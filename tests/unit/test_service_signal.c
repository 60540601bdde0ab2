/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_service and signal policies (issue 28): a check that says
 * password_breached is judged by login.breached_password's shape (the
 * untrusted lane, a challenge) without the store, which never sees the
 * policy: a check the signal challenges is charged as an allowed one
 * would be (the attempt goes on to a second factor), one it denies is
 * only judged (a denied check records nothing); its trip is combined
 * with the store's answers
 * as any policy's (deny beats challenge), waived by a passed challenge,
 * shadowed in shadow mode, counted in the metrics, shown by the deny
 * cache's answers, the fallback's and the inspect's; and a successful
 * login report that says password_breached raises
 * breached_password_login and counts it. Over the fake store and the
 * in-process fallback of ag_test_service.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "ag_deny_cache.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_metrics.h"
#include "ag_service.h"
#include "ag_store.h"
#include "ag_test.h"
#include "ag_test_metrics.h"
#include "ag_test_service.h"
#include "ag_verdict.h"

/* login.breached_password as policies/default.json has it. */
#define BREACHED                                                               \
    "{\"name\":\"login.breached_password\",\"endpoint\":\"login\","            \
    "\"key\":[\"user\"],\"algorithm\":\"signal\","                             \
    "\"signal\":\"password_breached\",\"applies_to\":\"untrusted\","           \
    "\"action\":\"challenge\"}"
#define BREACHED_SHADOW                                                        \
    "{\"name\":\"login.breached_password\",\"endpoint\":\"login\","            \
    "\"key\":[\"user\"],\"algorithm\":\"signal\","                             \
    "\"signal\":\"password_breached\",\"mode\":\"shadow\"}"
/* The signal with action deny, in every lane. */
#define BREACHED_DENY                                                          \
    "{\"name\":\"login.breached_deny\",\"endpoint\":\"login\","                \
    "\"key\":[\"user\"],\"algorithm\":\"signal\","                             \
    "\"signal\":\"password_breached\",\"action\":\"deny\"}"
/* A deny policy that sorts after the signal. */
#define DENY_USER                                                              \
    "{\"name\":\"login.user_deny\",\"endpoint\":\"login\","                    \
    "\"key\":[\"user\"],\"algorithm\":\"sliding_log\",\"limit\":3,"            \
    "\"window_s\":60}"

static const char *const BREACHED_BODY =
    "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
    "\"password_breached\":true}";
static const char *const BREACHED_PASSED =
    "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
    "\"password_breached\":true,\"challenge_passed\":true}";

static bool metrics_have(struct world *w, const char *s)
{
    bool has = strstr(ag_test_metrics_text(w->metrics), s) != NULL;
    if (!has)
        print_message("metrics lack: %s\n", s);
    return has;
}

static void assert_challenged_by_the_signal(const struct ag_http_response *r)
{
    assert_int_equal(r->status, 429);
    assert_true(body_has(r, "{\"allowed\":false,\"policy\":\"login.breached_"
                            "password\",\"action\":\"challenge\","
                            "\"retry_after\":1,\"challenge_nonce\":\"c1."));
    assert_true(body_has(r, "\",\"device\":\"untrusted\""));
    assert_true(body_has(r, "{\"policy\":\"login.breached_password\","
                            "\"allowed\":false,\"limit\":1,\"remaining\":0,"
                            "\"reset_after\":0,\"retry_after\":1,"
                            "\"action\":\"challenge\"}"));
    assert_int_equal(r->retry_after, 1);
    assert_true(r->rate_headers);
    assert_int_equal(r->rl_limit, 1);
    assert_int_equal(r->rl_remaining, 0);
}

static void an_untrusted_breached_check_is_challenged_and_charged(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, BREACHED};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
    assert_challenged_by_the_signal(&r);
    /* The store judged the other policy alone, and charged it as for an
     * allowed check: the signal is no store's, and a challenged attempt
     * goes on to a second factor, so it counts. */
    assert_int_equal(w->store.checks, 1);
    assert_string_equal(w->store.last_names, "login.user");
    assert_int_equal(w->store.last_charge, 1);
    assert_true(body_has(&r, "{\"policy\":\"login.user\",\"allowed\":true,"
                             "\"limit\":2,\"remaining\":7"));
    assert_true(metrics_have(
        w, "abuseguard_challenges_total{policy=\"login.breached_password\"} "
           "1\n"));
    /* Without the signal the check is the store's, charged as ever, and
     * the signal policy is in none of its decisions. */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.last_charge, 1);
    assert_false(body_has(&r, "breached"));
    ag_http_response_free(&r);
    world_free(w);
}

static void a_signal_alone_costs_no_store_call(void **state)
{
    (void)state;
    static const char *const ps[] = {BREACHED};
    struct world *w = world_new(true, ps, 1);
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
        assert_challenged_by_the_signal(&r);
    }
    assert_int_equal(w->store.checks, 0);
    assert_string_equal(waiter_log, ""); /* answered at once */
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_true(body_has(&r, "\"decisions\":[]"));
    assert_int_equal(w->store.checks, 0);
    /* Nor while the store is down: nothing asks it. */
    w->store.rc = AG_ESTORE;
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
    assert_false(body_has(&r, "degraded"));
    assert_int_equal(w->store.checks, 0);
    ag_http_response_free(&r);
    world_free(w);
}

static void a_trusted_breached_check_is_not_judged_by_it(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, BREACHED};
    struct world *w = world_new(true, ps, 2);
    char token[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s(), token);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(
        run_check(w, with_token(quoted(token), ",\"password_breached\":true"),
                  &r),
        200);
    assert_true(body_has(&r, "\"device\":\"trusted\""));
    assert_false(body_has(&r, "login.breached_password"));
    assert_int_equal(w->store.last_charge, 1);
    ag_http_response_free(&r);
    world_free(w);
}

static void a_passed_challenge_goes_on_and_is_charged(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, BREACHED};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, BREACHED_PASSED, &r), 200);
    assert_true(body_has(&r, "{\"allowed\":true,"));
    assert_true(body_has(&r, "{\"policy\":\"login.breached_password\","
                             "\"allowed\":false,\"limit\":1,\"remaining\":0,"
                             "\"reset_after\":0,\"retry_after\":1,"
                             "\"action\":\"challenge\","
                             "\"challenge_passed\":true}"));
    assert_int_equal(w->store.last_charge, 1);
    /* The headers are the store's policy's: a waived signal is no quota. */
    assert_int_equal(r.rl_limit, 2);
    assert_true(metrics_have(w, "abuseguard_challenges_passed_total{policy="
                                "\"login.breached_password\"} 1\n"));
    ag_http_response_free(&r);
    world_free(w);
}

static void a_deny_beside_the_signal_is_the_answer(void **state)
{
    (void)state;
    static const char *const ps[] = {BREACHED, DENY_USER};
    struct world *w = world_new(true, ps, 2);
    w->store.deny_ms = 5000; /* the account is rate-limited */
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
    assert_true(body_has(&r, "{\"allowed\":false,\"policy\":\"login.user_"
                             "deny\",\"action\":\"deny\",\"retry_after\":5,"));
    assert_int_equal(r.retry_after, 5);
    /* Both are named, in the set's order. The store was asked as for any
     * check (its own denial records nothing, as the fallback's test
     * shows). */
    assert_true(body_has(&r, "\"decisions\":[{\"policy\":\"login.breached_"
                             "password\",\"allowed\":false"));
    assert_true(body_has(&r, "},{\"policy\":\"login.user_deny\","
                             "\"allowed\":false"));
    assert_int_equal(w->store.last_charge, 1);
    assert_true(metrics_have(
        w, "abuseguard_denials_total{policy=\"login.user_deny\"} 1\n"));
    assert_true(metrics_have(
        w, "abuseguard_challenges_total{policy=\"login.breached_password\"} "
           "1\n"));
    /* A passed challenge does not lift the denial. */
    assert_int_equal(run_check(w, BREACHED_PASSED, &r), 429);
    assert_true(body_has(&r, "\"policy\":\"login.user_deny\",\"action\":"
                             "\"deny\""));
    ag_http_response_free(&r);
    world_free(w);
}

/* A signal that denies is a denial: the store only judges the check,
 * charging nothing, as for any denied check. */
static void a_denying_signal_charges_nothing(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, BREACHED_DENY};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
    assert_true(body_has(&r, "{\"allowed\":false,\"policy\":\"login.breached_"
                             "deny\",\"action\":\"deny\""));
    assert_int_equal(w->store.checks, 1);
    assert_string_equal(w->store.last_names, "login.user");
    assert_int_equal(w->store.last_charge, 0);
    ag_http_response_free(&r);
    world_free(w);
}

/* The fallback (the in-process store) counts a challenged breached check
 * as Redis would, so the limit beside the signal is used up and denies
 * (deny beats the signal's challenge). */
static void
the_fallback_counts_a_challenged_check_and_denies_at_the_limit(void **state)
{
    (void)state;
    static const char *const ps[] = {BREACHED, DENY_USER};
    struct world *w = world_new(false, ps, 2);
    w->store.rc = AG_ESTORE;
    struct ag_http_response r;
    ag_http_response_init(&r);
    static const char *const left[] = {
        "{\"policy\":\"login.user_deny\",\"allowed\":true,\"limit\":3,"
        "\"remaining\":2,",
        "{\"policy\":\"login.user_deny\",\"allowed\":true,\"limit\":3,"
        "\"remaining\":1,",
        "{\"policy\":\"login.user_deny\",\"allowed\":true,\"limit\":3,"
        "\"remaining\":0,",
    };
    for (int i = 0; i < 3; i++) {
        assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
        assert_true(body_has(&r, "\"degraded\":true"));
        assert_true(body_has(&r, "{\"allowed\":false,\"policy\":\"login."
                                 "breached_password\",\"action\":"
                                 "\"challenge\""));
        assert_true(body_has(&r, left[i]));
    }
    /* Now the limit denies, and deny beats the signal's challenge. */
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
    assert_true(body_has(&r, "{\"allowed\":false,\"policy\":\"login.user_"
                             "deny\",\"action\":\"deny\""));
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    ag_http_response_free(&r);
    world_free(w);
}

/* The fallback judges a check a signal denies charging nothing, as Redis
 * would: the limit is still whole afterwards. */
static void
the_fallback_judges_beside_a_denying_signal_and_records_nothing(void **state)
{
    (void)state;
    static const char *const ps[] = {BREACHED_DENY, DENY_USER};
    struct world *w = world_new(false, ps, 2);
    w->store.rc = AG_ESTORE;
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
        assert_true(body_has(&r, "\"degraded\":true"));
        assert_true(body_has(&r, "{\"allowed\":false,\"policy\":\"login."
                                 "breached_deny\",\"action\":\"deny\""));
        assert_true(body_has(&r, "{\"policy\":\"login.user_deny\","
                                 "\"allowed\":true,\"limit\":3,"
                                 "\"remaining\":3,"));
    }
    /* Three attempts without it are allowed, the fourth denied. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    ag_http_response_free(&r);
    world_free(w);
}

static void a_shadow_signal_only_counts(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, BREACHED_SHADOW};
    struct world *w = world_new(true, ps, 2);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 200);
    assert_true(body_has(&r, "{\"policy\":\"login.breached_password\","
                             "\"allowed\":false,\"limit\":1,\"remaining\":0,"
                             "\"reset_after\":0,\"retry_after\":1,"
                             "\"shadow\":true}"));
    assert_int_equal(w->store.last_charge, 1);
    assert_int_equal(r.rl_limit, 2);
    assert_true(metrics_have(w, "abuseguard_shadow_denials_total{policy="
                                "\"login.breached_password\"} 1\n"));
    assert_true(metrics_have(
        w, "abuseguard_denials_total{policy=\"login.breached_password\"} 0\n"));
    ag_http_response_free(&r);
    world_free(w);
}

/* A cached denial answers at once, and the signal beside it. */
static void a_cached_denial_is_answered_with_the_signal(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct ag_deny_cache_opts o = {.entries = 64, .clock = cache_clock};
    assert_int_equal(ag_deny_cache_new(&o, &dc), AG_OK);
    ag_deny_cache_set_live(dc, true);
    static const char *const ps[] = {BREACHED, DENY_USER};
    next_cache = dc;
    struct world *w = world_new(true, ps, 2);
    next_cache = NULL;
    w->store.deny_ms = 5000;
    struct ag_http_response r;
    ag_http_response_init(&r);
    /* Redis denies a breached check: the denial is remembered. */
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
    assert_int_equal(w->store.checks, 1);
    assert_int_equal(run_check(w, BREACHED_BODY, &r), 429);
    assert_int_equal(w->store.checks, 1);
    assert_true(body_has(&r, "{\"allowed\":false,\"policy\":\"login.user_"
                             "deny\",\"action\":\"deny\""));
    assert_true(body_has(&r, "{\"policy\":\"login.breached_password\","
                             "\"allowed\":false"));
    assert_true(body_has(&r, "\"cached\":true"));
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429);
    assert_false(body_has(&r, "breached"));
    assert_int_equal(w->store.checks, 1);
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

static void an_inspect_shows_the_signal_the_body_carries(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, BREACHED};
    struct world *w = world_new(false, ps, 2);
    struct ag_inspect_keys keys;
    struct ag_verdict v;
    assert_int_equal(ag_service_inspect(w->svc, AG_EP_LOGIN, BREACHED_BODY,
                                        strlen(BREACHED_BODY), &keys, &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_DECIDED);
    assert_string_equal(w->store.last_names, "login.user");
    /* The keys the inspect read are the store's only. */
    assert_int_equal(keys.n, 1);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(answer(AG_OK, &v, &r), 200);
    assert_true(body_has(&r, "{\"allowed\":false,\"policy\":\"login.breached_"
                             "password\",\"action\":\"challenge\""));
    assert_true(body_has(&r, "\"inspected\":true"));
    ag_http_response_free(&r);
    world_free(w);
}

static void a_signal_policy_has_nothing_to_reset(void **state)
{
    (void)state;
    static const char *const ps[] = {BREACHED};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(BREACHED);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EINVAL);
    assert_string_equal(err.field, "policy");
    assert_int_equal(w->store.clears, 0);
    world_free(w);
}

/* The breached_password_login event, as the stream would get it. */
static char xadded[1024];

static int capture_xadd(struct ag_store *s, int argc, const char **argv,
                        const size_t *lens, int key_at, ag_store_reply_fn done,
                        void *arg)
{
    (void)s;
    (void)lens;
    (void)key_at;
    (void)done;
    (void)arg;
    if (argc == 8 && strcmp(argv[0], "XADD") == 0 && !xadded[0])
        snprintf(xadded, sizeof xadded, "%s", argv[7]);
    return AG_ESTORE; /* not taken: it waits in the backlog */
}

static const struct ag_store_ops xadd_ops = {
    .name = "fake-xadd",
    .check = fake_check,
    .clear = fake_clear,
    .ping = fake_ping,
    .command_async = capture_xadd,
    .publish = fake_publish,
    .destroy = fake_destroy,
};

static int64_t counted(struct ag_metrics *m, const char *line)
{
    const char *at = strstr(ag_test_metrics_text(m), line);
    return at ? atoll(at + strlen(line)) : -1;
}

#define BREACHED_LOGINS "abuseguard_breached_password_logins_total"

static void a_breached_login_success_raises_its_event_and_metric(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, BREACHED};
    struct ag_metrics *em = ag_metrics_new();
    struct ag_events *ev = NULL;
    assert_int_equal(
        ag_events_new(&(struct ag_events_opts){.metrics = em}, &ev), AG_OK);
    next_events = ev;
    struct world *w = world_new(false, ps, 2);
    next_events = NULL;
    w->store.base.ops = &xadd_ops;
    ag_events_attach(ev, &w->store.base);
    xadded[0] = '\0';
    const char *kind = "abuseguard_events_total{type=\"breached_password_"
                       "login\"} ";
    struct ag_http_response r;
    ag_http_response_init(&r);
    /* A failure, or a success without the signal, raises nothing. */
    assert_int_equal(report_login(w,
                                  "{\"user\":\"ana@example.com\",\"ip\":"
                                  "\"192.0.2.1\",\"success\":false,"
                                  "\"password_breached\":true}",
                                  &r),
                     AG_OK);
    assert_int_equal(r.status, 204);
    assert_int_equal(report_login(w,
                                  "{\"user\":\"ana@example.com\",\"ip\":"
                                  "\"192.0.2.1\",\"success\":true}",
                                  &r),
                     AG_OK);
    assert_int_equal(r.status, 200);
    assert_int_equal(counted(em, kind), 0);
    assert_string_equal(xadded, "");
    /* A success that says it: one event, the user's digest and the lane. */
    assert_int_equal(report_login(w,
                                  "{\"user\":\"ANA@example.com\",\"ip\":"
                                  "\"192.0.2.1\",\"success\":true,"
                                  "\"password_breached\":true}",
                                  &r),
                     AG_OK);
    assert_int_equal(r.status, 200);
    assert_true(body_has(&r, "\"device_token\""));
    assert_int_equal(counted(em, kind), 1);
    assert_int_equal(
        counted(w->metrics, BREACHED_LOGINS "{lane=\"untrusted\"} "), 1);
    assert_int_equal(counted(w->metrics, BREACHED_LOGINS "{lane=\"trusted\"} "),
                     0);
    json_t *e = json_loads(xadded, 0, NULL);
    assert_non_null(e);
    char user[AG_DIGEST_HEX + 1];
    ag_identity_digest(&w->hasher, AG_KEY_USER, ANA, user);
    assert_string_equal(json_string_value(json_object_get(e, "type")),
                        "breached_password_login");
    assert_string_equal(json_string_value(json_object_get(e, "key")), user);
    assert_string_equal(json_string_value(json_object_get(e, "lane")),
                        "untrusted");
    assert_string_equal(json_string_value(json_object_get(e, "endpoint")),
                        "login");
    assert_null(strstr(xadded, "ana@"));
    assert_null(strstr(xadded, "ANA@"));
    json_decref(e);
    /* From a trusted device, the trusted lane's. */
    char token[AG_DEVICE_TOKEN_LEN + 1];
    mint(w, ANA, now_s(), token);
    char body[1024];
    snprintf(body, sizeof body,
             "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
             "\"success\":true,\"password_breached\":true,"
             "\"device_token\":\"%s\"}",
             token);
    assert_int_equal(report_login(w, body, &r), AG_OK);
    assert_int_equal(counted(em, kind), 2);
    assert_int_equal(counted(w->metrics, BREACHED_LOGINS "{lane=\"trusted\"} "),
                     1);
    /* A bad value is refused, naming it, and raises nothing. */
    struct ag_verdict v;
    const char *bad = "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\","
                      "\"success\":true,\"password_breached\":\"yes\"}";
    assert_int_equal(ag_service_report_login(w->svc, bad, strlen(bad), &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_REFUSED);
    assert_string_equal(v.err.field, "password_breached");
    ag_verdict_release(&v);
    assert_int_equal(counted(em, kind), 2);
    ag_http_response_free(&r);
    ag_events_attach(ev, NULL);
    world_free(w);
    ag_events_free(ev);
    ag_metrics_free(em);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_untrusted_breached_check_is_challenged_and_charged),
        cmocka_unit_test(a_signal_alone_costs_no_store_call),
        cmocka_unit_test(a_trusted_breached_check_is_not_judged_by_it),
        cmocka_unit_test(a_passed_challenge_goes_on_and_is_charged),
        cmocka_unit_test(a_deny_beside_the_signal_is_the_answer),
        cmocka_unit_test(a_denying_signal_charges_nothing),
        cmocka_unit_test(
            the_fallback_counts_a_challenged_check_and_denies_at_the_limit),
        cmocka_unit_test(
            the_fallback_judges_beside_a_denying_signal_and_records_nothing),
        cmocka_unit_test(a_shadow_signal_only_counts),
        cmocka_unit_test(a_cached_denial_is_answered_with_the_signal),
        cmocka_unit_test(an_inspect_shows_the_signal_the_body_carries),
        cmocka_unit_test(a_signal_policy_has_nothing_to_reset),
        cmocka_unit_test(a_breached_login_success_raises_its_event_and_metric),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
