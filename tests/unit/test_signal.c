/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signals in the engine (issue 28): the signal table, a body's
 * password_breached, the signal policy's record (its own field, refused
 * elsewhere; a shape that counts, holds and asks nothing) and the
 * limiter's part: a signal policy is in no plan a store gets, is planned
 * apart for a check or a peek that carries its signal in its lane, and
 * joins the plan in the set's order, tripped, before the decision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ag_endpoint.h"
#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_metrics.h"
#include "ag_policy.h"
#include "ag_request.h"
#include "ag_test.h"
#include "ag_test_limiter.h"
#include "ag_test_policy.h"
#include "ag_test_sodium.h"

static const char signal_base[] =
    "{\"name\":\"login.breached_password\",\"endpoint\":\"login\","
    "\"key\":[\"user\"],\"algorithm\":\"signal\","
    "\"signal\":\"password_breached\",\"applies_to\":\"untrusted\","
    "\"action\":\"challenge\"}";

static void the_signal_table_names_password_breached_on_login(void **state)
{
    (void)state;
    assert_int_equal(AG_SIGNAL_COUNT, 7);
    assert_string_equal(ag_signal_name(AG_SIGNAL_PASSWORD_BREACHED),
                        "password_breached");
    assert_int_equal(ag_signal_parse("password_breached"),
                     AG_SIGNAL_PASSWORD_BREACHED);
    assert_int_equal(ag_signal_parse("Password_breached"), -1);
    assert_int_equal(ag_signal_parse(""), -1);
    assert_true(ag_signal_on(AG_SIGNAL_PASSWORD_BREACHED, AG_EP_LOGIN));
    assert_false(ag_signal_on(AG_SIGNAL_PASSWORD_BREACHED, AG_EP_OTP));
    assert_false(ag_signal_computed(AG_SIGNAL_PASSWORD_BREACHED));
    /* The service's own: on every endpoint that knows the address. */
    for (int s = AG_SIGNAL_IP_LISTED; s <= AG_SIGNAL_IP_COUNTRY; s++) {
        assert_true(ag_signal_computed((enum ag_signal)s));
        for (int e = 0; e < AG_EP_COUNT; e++)
            assert_true(ag_signal_on((enum ag_signal)s, (enum ag_endpoint)e));
    }
    assert_int_equal(ag_signal_parse("ip_listed"), AG_SIGNAL_IP_LISTED);
    assert_int_equal(ag_signal_parse("ip_country"), AG_SIGNAL_IP_COUNTRY);
    /* Issue 40: the history's, computed on login checks only. */
    static const char *const history[] = {"new_country", "new_asn",
                                          "no_history", "impossible_travel"};
    for (size_t i = 0; i < 4; i++) {
        int s = ag_signal_parse(history[i]);
        assert_int_equal(s, AG_SIGNAL_NEW_COUNTRY + (int)i);
        assert_true(ag_signal_computed((enum ag_signal)s));
        assert_true(ag_signal_history((enum ag_signal)s));
        assert_true(ag_signal_on((enum ag_signal)s, AG_EP_LOGIN));
        assert_false(ag_signal_on((enum ag_signal)s, AG_EP_OTP));
    }
    assert_false(ag_signal_history(AG_SIGNAL_IP_LISTED));
    /* The metrics name them in the same order. */
    for (int s = 0; s < AG_SIGNAL_COUNT; s++)
        assert_string_equal(ag_metrics_risk_signal_name((unsigned)s),
                            ag_signal_name((enum ag_signal)s));
}

/* A history signal's policy may challenge, or be shadowed, never deny. */
static void a_history_signal_challenges_and_never_denies(void **state)
{
    (void)state;
    static const char travel[] =
        "{\"name\":\"login.travel\",\"endpoint\":\"login\","
        "\"key\":[\"user\"],\"algorithm\":\"signal\","
        "\"signal\":\"impossible_travel\",\"action\":\"challenge\"}";
    struct ag_policy p;
    expect_accepted(travel, "action", "\"challenge\"", &p);
    assert_int_equal(p.needs, AG_POLICY_NEEDS_COUNTRY);
    expect_refused_saying(travel, "action", "\"deny\"", "action", "never deny");
    expect_accepted(travel, "mode", "\"shadow\"", &p);
    expect_refused_saying(travel, "endpoint", "\"otp\"", "signal", "login");
    expect_accepted(travel, "signal", "\"new_asn\"", &p);
    assert_int_equal(p.needs, AG_POLICY_NEEDS_ASN);
}

/* Parses body as kind (0: a check of ep, 1: a login report) into r:
 * the return code, err filled on a refusal. */
static int parse_as(int kind, enum ag_endpoint ep, const char *body,
                    struct ag_request *r, struct ag_error *err)
{
    return kind ? ag_request_parse_report(body, strlen(body), NULL, r, err)
                : ag_request_parse(ep, body, strlen(body), NULL, r, err);
}

static void
login_checks_and_reports_read_a_boolean_password_breached(void **state)
{
    (void)state;
    static const char *const heads[] = {
        "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",",
        "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"success\":true,",
    };
    for (int kind = 0; kind < 2; kind++) {
        struct ag_request r;
        struct ag_error err;
        char b[256];
        snprintf(b, sizeof b, "%s\"password_breached\":true}", heads[kind]);
        assert_int_equal(parse_as(kind, AG_EP_LOGIN, b, &r, &err), AG_OK);
        assert_int_equal(r.signals, 1u << AG_SIGNAL_PASSWORD_BREACHED);
        snprintf(b, sizeof b, "%s\"password_breached\":false}", heads[kind]);
        assert_int_equal(parse_as(kind, AG_EP_LOGIN, b, &r, &err), AG_OK);
        assert_int_equal(r.signals, 0);
        snprintf(b, sizeof b, "%s\"ok\":1}", heads[kind]);
        assert_int_equal(parse_as(kind, AG_EP_LOGIN, b, &r, &err), AG_OK);
        assert_int_equal(r.signals, 0);
        /* null is the field left out, as in every optional field. */
        snprintf(b, sizeof b, "%s\"password_breached\":null}", heads[kind]);
        assert_int_equal(parse_as(kind, AG_EP_LOGIN, b, &r, &err), AG_OK);
        assert_int_equal(r.signals, 0);
        /* Anything else but a boolean is refused, naming the field. */
        static const char *const bad[] = {"\"true\"", "1", "0", "[]", "{}"};
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            snprintf(b, sizeof b, "%s\"password_breached\":%s}", heads[kind],
                     bad[i]);
            assert_int_equal(parse_as(kind, AG_EP_LOGIN, b, &r, &err),
                             AG_EINVAL);
            assert_string_equal(err.field, "password_breached");
            assert_non_null(strstr(err.msg, "password_breached must be true "
                                            "or false"));
        }
    }
}

static void otp_bodies_carry_no_password_breached(void **state)
{
    (void)state;
    /* An OTP body's unknown fields are ignored, as any unknown field. */
    struct ag_request r;
    struct ag_error err;
    const char *b = "{\"phone\":\"+447911123456\",\"ip\":\"1.2.3.4\","
                    "\"password_breached\":\"junk\"}";
    assert_int_equal(parse_as(0, AG_EP_OTP, b, &r, &err), AG_OK);
    assert_int_equal(r.signals, 0);
}

static void signal_takes_its_defaults(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(signal_base, "enabled", "true", &p);
    assert_int_equal(p.algorithm, AG_ALG_SIGNAL);
    assert_string_equal(ag_algorithm_name(p.algorithm), "signal");
    assert_int_equal(p.signal, AG_SIGNAL_PASSWORD_BREACHED);
    /* It counts nothing: limit and window_s are 1, and need not be
     * written; a record that writes them 1 (an export) is the same. */
    assert_int_equal(p.limit, 1);
    assert_int_equal(p.window_s, 1);
    assert_int_equal(p.block_s, 0);
    assert_int_equal(p.counts, AG_COUNTS_ATTEMPTS);
    assert_int_equal(p.fail, AG_FAIL_OPEN);
    expect_accepted(signal_base, "limit", "1", &p);
    expect_accepted(signal_base, "window_s", "1", &p);
}

static void signal_names_a_known_signal_its_endpoint_sends(void **state)
{
    (void)state;
    expect_refused_saying(signal_base, "signal", NULL, "signal", "required");
    expect_refused_saying(signal_base, "signal", "null", "signal", "required");
    static const char *const bad[] = {"\"password_breachd\"", "\"\"", "1",
                                      "true", "[\"password_breached\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_refused_saying(signal_base, "signal", bad[i], "signal",
                              "\"password_breached\"");
    /* password_breached is a login body's: an OTP signal policy is
     * refused for it, naming signal. */
    json_t *o = with_field(signal_base, "endpoint", "\"otp\"");
    json_object_set_new(o, "key", json_pack("[s]", "phone"));
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "signal");
    assert_non_null(strstr(err.msg, "login"));
    json_decref(o);
}

static void signal_counts_holds_and_asks_nothing(void **state)
{
    (void)state;
    expect_refused_saying(signal_base, "limit", "2", "limit", "counts nothing");
    expect_refused_saying(signal_base, "window_s", "60", "window_s",
                          "counts nothing");
    expect_refused_saying(signal_base, "block_s", "60", "block_s",
                          "holds nothing");
    expect_refused_saying(signal_base, "block_max_s", "60", "block_max_s",
                          "holds nothing");
    expect_field_refused(signal_base, "block_growth", "2");
    expect_refused_saying(signal_base, "counts", "\"failures\"", "counts",
                          "checks");
    expect_refused_saying(signal_base, "fail", "\"closed\"", "fail",
                          "cannot fail");
    /* Still the usual range checks before its own. */
    expect_field_refused(signal_base, "limit", "0");
}

static void signal_lane_action_mode_and_key_are_any_policys(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(signal_base, "applies_to", "\"trusted\"", &p);
    assert_int_equal(p.applies_to, AG_LANE_TRUSTED);
    expect_accepted(signal_base, "action", "\"deny\"", &p);
    assert_int_equal(p.action, AG_ACTION_DENY);
    expect_accepted(signal_base, "mode", "\"shadow\"", &p);
    assert_int_equal(p.mode, AG_MODE_SHADOW);
    expect_accepted(signal_base, "key", "[\"user\",\"ip\"]", &p);
    assert_int_equal(p.nkeys, 2);
    expect_field_refused(signal_base, "key", "[\"phone\"]");
    expect_field_refused(signal_base, "key", NULL);
    expect_field_refused(signal_base, "applies_to", "\"some\"");
}

static void signal_field_is_refused_elsewhere(void **state)
{
    (void)state;
    expect_refused_saying(login_base, "signal", "\"password_breached\"",
                          "signal", "signal algorithm");
    struct ag_policy p;
    expect_accepted(login_base, "signal", "null", &p);
    assert_int_equal(p.algorithm, AG_ALG_SLIDING_LOG);
}

static void signal_record_round_trips(void **state)
{
    (void)state;
    json_t *o = load(signal_base);
    struct ag_policy p, q;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
    json_t *back = ag_policy_to_json(&p);
    assert_non_null(back);
    assert_string_equal(json_string_value(json_object_get(back, "signal")),
                        "password_breached");
    assert_string_equal(json_string_value(json_object_get(back, "algorithm")),
                        "signal");
    assert_int_equal(json_integer_value(json_object_get(back, "limit")), 1);
    assert_int_equal(json_integer_value(json_object_get(back, "window_s")), 1);
    assert_int_equal(ag_policy_from_json(back, NULL, &q, &err), AG_OK);
    assert_memory_equal(&p, &q, sizeof p);
    json_decref(back);
    /* Another algorithm's record has no signal. */
    o = load(login_base);
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    back = ag_policy_to_json(&p);
    assert_null(json_object_get(back, "signal"));
    json_decref(back);
    json_decref(o);
}

/* The limiter. */

/* A set of a login policy on each side of two signal policies by name
 * (the set sorts them: a.user, b.breached, c.breached_trusted, d.ip),
 * and one of another endpoint. */
static struct ag_ruleset *signal_set(void)
{
    struct ag_policy ps[] = {
        policy("d.ip", "login", "[\"ip\"]", 5, NULL),
        ag_test_policy(
            "{\"name\":\"b.breached\",\"endpoint\":\"login\","
            "\"key\":[\"user\"],\"algorithm\":\"signal\","
            "\"signal\":\"password_breached\",\"applies_to\":\"untrusted\","
            "\"action\":\"challenge\"}"),
        ag_test_policy(
            "{\"name\":\"c.breached_trusted\",\"endpoint\":\"login\","
            "\"key\":[\"user\"],\"algorithm\":\"signal\","
            "\"signal\":\"password_breached\",\"applies_to\":\"trusted\"}"),
        policy("a.user", "login", "[\"user\"]", 5, NULL),
        policy("o.phone", "otp", "[\"phone\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

static const char breached_login[] = "{\"user\":\"ana@example.com\","
                                     "\"ip\":\"10.1.2.3\","
                                     "\"password_breached\":true}";

static void no_plan_a_store_gets_holds_a_signal_policy(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = signal_set();
    struct ag_request r;
    request(AG_EP_LOGIN, breached_login, &r);
    static const char *const want[] = {"a.user", "d.ip"};
    const enum ag_plan_kind kinds[] = {AG_PLAN_CHECK, AG_PLAN_RESERVE,
                                       AG_PLAN_RELEASE, AG_PLAN_PEEK};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        struct ag_plan plan;
        assert_int_equal(plan_of(s, kinds[k], &r, &h, &plan), AG_OK);
        expect_plan(&plan, s, want, 2);
    }
    /* Nor does a report's plan. */
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.n, 0);
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.n, 0);
    ag_ruleset_unref(s);
}

/* Plans r's signals beside its check plan of kind into ops; returns how
 * many. */
static size_t signals_of(const struct ag_ruleset *s, enum ag_plan_kind kind,
                         const struct ag_request *r, const struct ag_hasher *h,
                         struct ag_plan *plan, struct ag_limit_op *ops)
{
    struct ag_digests d;
    ag_digests_init(&d, h, r, false);
    assert_int_equal(ag_limiter_plan(s, kind, &d, plan), AG_OK);
    size_t n = 99;
    assert_int_equal(ag_limiter_plan_signals(s, plan, &d, ops, &n), AG_OK);
    return n;
}

static void
a_check_carrying_the_signal_plans_its_lanes_signal_policy(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = signal_set();
    struct ag_request r;
    struct ag_plan plan;
    struct ag_limit_op ops[AG_SIGNALS_MAX];
    request(AG_EP_LOGIN, breached_login, &r);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 1);
    assert_string_equal(ops[0].policy->name, "b.breached");
    /* Charged nowhere; keyed as any policy on user, a digest for the log
     * line and nothing a store is asked about. */
    assert_false(ops[0].charge);
    assert_false(ops[0].shadow);
    assert_false(ops[0].waived);
    assert_int_equal(strncmp(ops[0].key, "ag:b.breached:", 14), 0);
    assert_string_equal(strrchr(ops[0].key, ':'),
                        strrchr(op_named(&plan, "a.user")->key, ':'));
    /* The trusted lane's is planned for a trusted request only. */
    unsigned char id[AG_DEVICE_ID_BYTES] = {7};
    ag_request_trust(&r, id);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 1);
    assert_string_equal(ops[0].policy->name, "c.breached_trusted");
    /* A peek plans it too (the inspect shows it); the other kinds none. */
    request(AG_EP_LOGIN, breached_login, &r);
    assert_int_equal(signals_of(s, AG_PLAN_PEEK, &r, &h, &plan, ops), 1);
    assert_int_equal(signals_of(s, AG_PLAN_FAILURE, &r, &h, &plan, ops), 0);
    /* Without the signal, or without it true, none. */
    request(AG_EP_LOGIN, full_login, &r);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 0);
    request(AG_EP_LOGIN,
            "{\"user\":\"a\",\"ip\":\"10.1.2.3\",\"password_breached\":false}",
            &r);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 0);
    ag_ruleset_unref(s);
}

static void only_an_enforcing_deny_signal_denies_a_check(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = signal_set();
    struct ag_request r;
    struct ag_plan plan;
    struct ag_limit_op ops[AG_SIGNALS_MAX];
    request(AG_EP_LOGIN,
            "{\"user\":\"ana@example.com\",\"ip\":\"10.1.2.3\","
            "\"password_breached\":true,\"challenge_passed\":true}",
            &r);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 1);
    assert_true(ops[0].waived);
    assert_true(ops[0].shadow);
    assert_false(ag_limiter_signals_deny(ops, 1));
    /* A challenge not passed is no denial either: the attempt goes on to
     * a second factor, and is charged as an allowed one. */
    request(AG_EP_LOGIN, breached_login, &r);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 1);
    assert_false(ops[0].shadow);
    assert_false(ag_limiter_signals_deny(ops, 1));
    assert_false(ag_limiter_signals_deny(ops, 0));
    /* The trusted lane's, action deny: a denial. */
    unsigned char id[AG_DEVICE_ID_BYTES] = {7};
    ag_request_trust(&r, id);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 1);
    assert_int_equal(ops[0].policy->action, AG_ACTION_DENY);
    assert_true(ag_limiter_signals_deny(ops, 1));
    ag_ruleset_unref(s);
}

static void signals_join_the_plan_in_the_sets_order_tripped(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = signal_set();
    struct ag_request r;
    struct ag_plan plan;
    struct ag_limit_op ops[AG_SIGNALS_MAX];
    request(AG_EP_LOGIN, breached_login, &r);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops), 1);
    /* The store's answers: a.user allowed, d.ip denied for 30 s. */
    struct ag_limit_result res[AG_PLAN_MAX] = {
        {.allowed = true, .remaining = 4, .reset_after_ms = 60000},
        {.allowed = false, .retry_after_ms = 30000, .reset_after_ms = 30000},
    };
    ag_limiter_add_signals(&plan, res, ops, 1);
    static const char *const want[] = {"a.user", "b.breached", "d.ip"};
    expect_plan(&plan, s, want, 3);
    assert_true(res[0].allowed);
    assert_int_equal(res[0].remaining, 4);
    assert_false(res[1].allowed);
    assert_int_equal(res[1].remaining, 0);
    assert_int_equal(res[1].retry_after_ms, 0);
    assert_false(res[2].allowed);
    assert_int_equal(res[2].retry_after_ms, 30000);
    /* Deny beats the signal's challenge. */
    struct ag_decision d;
    ag_limiter_decide(&plan, res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 2);
    assert_int_equal(d.action, AG_ACTION_DENY);
    assert_int_equal(d.retry_after_s, 30);
    /* Alone, the signal's challenge is the answer, at least a second. */
    res[2] = (struct ag_limit_result){.allowed = true, .remaining = 3};
    ag_limiter_decide(&plan, res, &d);
    assert_int_equal(d.denied_by, 1);
    assert_int_equal(d.action, AG_ACTION_CHALLENGE);
    assert_int_equal(d.retry_after_s, 1);
    assert_int_equal(d.tightest, 1);
    ag_ruleset_unref(s);
}

static void a_check_plan_charges_nothing_once_a_signal_denies(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = signal_set();
    struct ag_request r;
    struct ag_plan plan;
    request(AG_EP_LOGIN, breached_login, &r);
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    assert_true(plan.ops[0].charge);
    assert_true(plan.ops[1].charge);
    ag_limiter_charge_nothing(&plan);
    assert_false(plan.ops[0].charge);
    assert_false(plan.ops[1].charge);
    ag_ruleset_unref(s);
}

static void more_signal_policies_than_a_check_holds_are_refused(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_policy ps[AG_SIGNALS_MAX + 1];
    for (size_t i = 0; i < AG_SIGNALS_MAX + 1; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"name\":\"s%zu\",\"endpoint\":\"login\","
                 "\"key\":[\"user\"],\"algorithm\":\"signal\","
                 "\"signal\":\"password_breached\"}",
                 i);
        ps[i] = ag_test_policy(text);
    }
    struct ag_ruleset *s = ag_ruleset_new(ps, AG_SIGNALS_MAX, 1);
    struct ag_request r;
    struct ag_plan plan;
    struct ag_limit_op ops[AG_SIGNALS_MAX];
    request(AG_EP_LOGIN, breached_login, &r);
    assert_int_equal(signals_of(s, AG_PLAN_CHECK, &r, &h, &plan, ops),
                     AG_SIGNALS_MAX);
    ag_ruleset_unref(s);
    s = ag_ruleset_new(ps, AG_SIGNALS_MAX + 1, 1);
    struct ag_digests d;
    ag_digests_init(&d, &h, &r, false);
    assert_int_equal(ag_limiter_plan(s, AG_PLAN_CHECK, &d, &plan), AG_OK);
    size_t n;
    assert_int_equal(ag_limiter_plan_signals(s, &plan, &d, ops, &n),
                     AG_ETOOBIG);
    ag_ruleset_unref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_signal_table_names_password_breached_on_login),
        cmocka_unit_test(
            login_checks_and_reports_read_a_boolean_password_breached),
        cmocka_unit_test(otp_bodies_carry_no_password_breached),
        cmocka_unit_test(a_history_signal_challenges_and_never_denies),
        cmocka_unit_test(signal_takes_its_defaults),
        cmocka_unit_test(signal_names_a_known_signal_its_endpoint_sends),
        cmocka_unit_test(signal_counts_holds_and_asks_nothing),
        cmocka_unit_test(signal_lane_action_mode_and_key_are_any_policys),
        cmocka_unit_test(signal_field_is_refused_elsewhere),
        cmocka_unit_test(signal_record_round_trips),
        cmocka_unit_test(no_plan_a_store_gets_holds_a_signal_policy),
        cmocka_unit_test(
            a_check_carrying_the_signal_plans_its_lanes_signal_policy),
        cmocka_unit_test(only_an_enforcing_deny_signal_denies_a_check),
        cmocka_unit_test(signals_join_the_plan_in_the_sets_order_tripped),
        cmocka_unit_test(a_check_plan_charges_nothing_once_a_signal_denies),
        cmocka_unit_test(more_signal_policies_than_a_check_holds_are_refused),
    };
    return cmocka_run_group_tests(tests, init_sodium, NULL);
}
