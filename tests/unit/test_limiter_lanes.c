/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_limiter: the plans other than a check's and the lanes. A failure
 * charges only failure policies, a success clears what the user may
 * forgive, reserve, release and peek plan what a check would; a request
 * trusted by its device token plans the trusted lane, one without the
 * untrusted lane, and a passed challenge waives challenge policies; and
 * a password spray policy in each of these plans.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_test.h"
#include "ag_test_limiter.h"
#include "ag_test_sodium.h"

static struct ag_ruleset *failure_set(void)
{
    struct ag_policy ps[] = {
        policy("f.user_ip", "login", "[\"user\",\"ip\"]", 3,
               ",\"counts\":\"failures\""),
        policy("f.user", "login", "[\"user\"]", 5, ",\"counts\":\"failures\""),
        policy("f.user_ip_off", "login", "[\"user\",\"ip\"]", 3,
               ",\"counts\":\"failures\",\"enabled\":false"),
        policy("a.user_ip", "login", "[\"user\",\"ip\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

static void failure_plan_charges_only_failure_policies(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = failure_set();
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const want[] = {"f.user", "f.user_ip"};
    expect_plan(&plan, s, want, 2);
    assert_int_equal(plan.kind, AG_PLAN_FAILURE);
    assert_true(plan.ops[0].charge);
    assert_true(plan.ops[1].charge);
    ag_ruleset_unref(s);
}

/* Issue 36: a failure counts only in the policies of its reason. */
static void a_failure_counts_only_where_its_reason_does(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_policy ps[] = {
        policy("f.all", "login", "[\"user\"]", 5, ",\"counts\":\"failures\""),
        policy("f.known", "login", "[\"user\"]", 5,
               ",\"counts\":\"failures\",\"reasons\":[\"bad_password\","
               "\"second_factor_failed\"]"),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, 2, 1);
    assert_non_null(s);
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan plan;
    r.reason = AG_REASON_UNKNOWN_USER;
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const unknown[] = {"f.all"};
    expect_plan(&plan, s, unknown, 1);
    r.reason = AG_REASON_SECOND_FACTOR_FAILED;
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const both[] = {"f.all", "f.known"};
    expect_plan(&plan, s, both, 2);
    /* A check is judged by both, whatever a report would say. */
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    expect_plan(&plan, s, both, 2);
    ag_ruleset_unref(s);
}

static void reserve_and_release_plans_are_planned_as_a_check(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = failure_set();
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan check, plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &check), AG_OK);
    const enum ag_plan_kind kinds[] = {AG_PLAN_RESERVE, AG_PLAN_RELEASE};
    for (size_t k = 0; k < 2; k++) {
        /* A nonce left from an earlier use of the plan is cleared. */
        memset(&plan, 0x5a, sizeof plan);
        assert_int_equal(plan_of(s, kinds[k], &r, &h, &plan), AG_OK);
        assert_int_equal(plan.kind, kinds[k]);
        assert_int_equal(plan.nonce[0], '\0');
        assert_int_equal(plan.n, check.n);
        for (size_t i = 0; i < check.n; i++) {
            assert_ptr_equal(plan.ops[i].policy, check.ops[i].policy);
            assert_string_equal(plan.ops[i].key, check.ops[i].key);
            assert_int_equal(plan.ops[i].charge, check.ops[i].charge);
        }
    }
    /* Something to compare: the attempts policy charges, the others not. */
    assert_int_equal(check.n, 3);
    assert_false(op_named(&check, "f.user")->charge);
    assert_true(op_named(&check, "a.user_ip")->charge);
    ag_ruleset_unref(s);
}

static void
success_plan_clears_every_consecutive_policy_it_can_key(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_policy ps[] = {
        ag_test_policy("{\"name\":\"c.user\",\"endpoint\":\"login\","
                       "\"key\":[\"user\"],\"algorithm\":\"consecutive\","
                       "\"limit\":100,\"window_s\":86400,"
                       "\"counts\":\"failures\"}"),
        ag_test_policy("{\"name\":\"c.device\",\"endpoint\":\"login\","
                       "\"key\":[\"user\",\"device\"],"
                       "\"algorithm\":\"consecutive\","
                       "\"limit\":20,\"window_s\":86400,"
                       "\"counts\":\"failures\"}"),
        /* An address's row is not the user's to forgive: an attacker
         * spraying from there would reset it with an account of their
         * own. */
        ag_test_policy("{\"name\":\"c.ip\",\"endpoint\":\"login\","
                       "\"key\":[\"ip\"],\"algorithm\":\"consecutive\","
                       "\"limit\":50,\"window_s\":86400,"
                       "\"counts\":\"failures\"}"),
        policy("f.user", "login", "[\"user\"]", 5, ",\"counts\":\"failures\""),
        policy("f.user_ip", "login", "[\"user\",\"ip\"]", 3,
               ",\"counts\":\"failures\""),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const want[] = {"c.device", "c.user", "f.user_ip"};
    expect_plan(&plan, s, want, 3);
    /* Without a device the device's row cannot be named, so stays. */
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const want_no_device[] = {"c.user", "f.user_ip"};
    expect_plan(&plan, s, want_no_device, 2);
    ag_ruleset_unref(s);
}

static void success_plan_clears_only_user_and_ip_failure_policies(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = failure_set();
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const want[] = {"f.user_ip"};
    expect_plan(&plan, s, want, 1);
    ag_ruleset_unref(s);
}

/* Lanes: the same policies for a request without a token and for one
 * the service trusts. */
static struct ag_ruleset *lane_set(void)
{
    struct ag_policy ps[] = {
        policy("login.all", "login", "[\"user\"]", 10, NULL),
        policy("login.known", "login", "[\"user\"]", 20,
               ",\"applies_to\":\"trusted\""),
        policy("login.known_fail", "login", "[\"user\",\"device_token\"]", 20,
               ",\"applies_to\":\"trusted\",\"counts\":\"failures\""),
        policy("login.unknown", "login", "[\"user\"]", 30,
               ",\"applies_to\":\"untrusted\""),
        policy("login.unknown_fail", "login", "[\"user\",\"ip\"]", 5,
               ",\"applies_to\":\"untrusted\",\"counts\":\"failures\""),
        policy("login.per_device", "login", "[\"device_token\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

static const unsigned char device_id[AG_DEVICE_ID_BYTES] = {1, 2, 3, 4, 5};

static void untrusted_request_plans_only_its_lane(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    struct ag_request r;
    /* A token the service did not trust changes nothing. */
    request(AG_EP_LOGIN,
            "{\"user\":\"ana\",\"ip\":\"10.1.2.3\",\"device_token\":\"x\"}",
            &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    assert_false(plan.trusted);
    static const char *const check[] = {"login.all", "login.unknown",
                                        "login.unknown_fail"};
    expect_plan(&plan, s, check, sizeof check / sizeof check[0]);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const failure[] = {"login.unknown_fail"};
    expect_plan(&plan, s, failure, 1);
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    expect_plan(&plan, s, failure, 1);
    ag_ruleset_unref(s);
}

static void trusted_request_plans_only_its_lane(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    struct ag_request r;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
    ag_request_trust(&r, device_id);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    assert_true(plan.trusted);
    static const char *const check[] = {"login.all", "login.known",
                                        "login.known_fail", "login.per_device"};
    expect_plan(&plan, s, check, sizeof check / sizeof check[0]);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const failure[] = {"login.known_fail"};
    expect_plan(&plan, s, failure, 1);
    /* A success proves the real user: it clears what the untrusted lane
     * counted too (an attacker's failures from this address). */
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const success[] = {"login.unknown_fail"};
    expect_plan(&plan, s, success, 1);
    ag_ruleset_unref(s);
}

/* The admin inspect peeks what a check would apply, in either lane: the
 * same policies under the same keys, with the same flags. */
static void a_peek_plan_is_the_check_plan_in_either_lane(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    for (int trusted = 0; trusted < 2; trusted++) {
        struct ag_request r;
        request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
        if (trusted)
            ag_request_trust(&r, device_id);
        struct ag_plan check, peek;
        assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &check), AG_OK);
        assert_int_equal(plan_of(s, AG_PLAN_PEEK, &r, &h, &peek), AG_OK);
        assert_int_equal(peek.kind, AG_PLAN_PEEK);
        assert_int_equal(peek.trusted, trusted);
        assert_int_equal(peek.n, check.n);
        for (size_t i = 0; i < check.n; i++) {
            assert_ptr_equal(peek.ops[i].policy, check.ops[i].policy);
            assert_string_equal(peek.ops[i].key, check.ops[i].key);
            assert_int_equal(peek.ops[i].charge, check.ops[i].charge);
            assert_int_equal(peek.ops[i].shadow, check.ops[i].shadow);
        }
        /* Something to compare: each lane has its own policies, and a
         * failures policy among them is not charged. */
        assert_int_equal(check.n, 3 + trusted);
        const char *fail = trusted ? "login.known_fail" : "login.unknown_fail";
        assert_false(op_named(&peek, fail)->charge);
        assert_true(op_named(&peek, "login.all")->charge);
    }
    ag_ruleset_unref(s);
}

static void device_token_key_hashes_the_tokens_id(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    struct ag_request r;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
    ag_request_trust(&r, device_id);
    assert_string_equal(ag_request_value(&r, AG_KEY_DEVICE_TOKEN),
                        "01020304050000000000000000000000");
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    char want[AG_DIGEST_HEX + 1], key[AG_STORE_KEY_MAX];
    ag_identity_digest(&h, AG_KEY_DEVICE_TOKEN, r.device_id, want);
    snprintf(key, sizeof key, "ag:login.per_device:%s", want);
    assert_string_equal(op_named(&plan, "login.per_device")->key, key);
    /* Another device of the same user has a key of its own. */
    struct ag_request other;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &other);
    ag_request_trust(&other, (const unsigned char[AG_DEVICE_ID_BYTES]){9});
    struct ag_plan plan2;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &other, &h, &plan2), AG_OK);
    assert_string_not_equal(op_named(&plan2, "login.known_fail")->key,
                            op_named(&plan, "login.known_fail")->key);
    ag_ruleset_unref(s);
}

static struct ag_ruleset *challenge_set(void)
{
    struct ag_policy ps[] = {
        policy("login.ask", "login", "[\"user\"]", 3,
               ",\"action\":\"challenge\""),
        policy("login.deny", "login", "[\"ip\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, 2, 1);
    assert_non_null(s);
    return s;
}

static void passed_challenge_plans_challenge_policies_as_waived(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = challenge_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &h,
             &plan);
    assert_false(op_named(&plan, "login.ask")->shadow);
    assert_false(op_named(&plan, "login.ask")->waived);
    plan_for(s, AG_EP_LOGIN,
             "{\"user\":\"ana\",\"ip\":\"10.1.2.3\","
             "\"challenge_passed\":true}",
             &h, &plan);
    /* Still counted and charged, but it may not deny this check. */
    const struct ag_limit_op *ask = op_named(&plan, "login.ask");
    assert_true(ask->waived);
    assert_true(ask->shadow);
    assert_true(ask->charge);
    /* A deny policy is not lifted by a challenge. */
    assert_false(op_named(&plan, "login.deny")->shadow);
    assert_false(op_named(&plan, "login.deny")->waived);
    ag_ruleset_unref(s);
}

/* Password spraying (issue 27): a distinct policy keyed on password_fp,
 * counting failures, beside a user policy. */
static struct ag_ruleset *spray_set(void)
{
    struct ag_policy ps[] = {
        ag_test_policy("{\"name\":\"login.spray\",\"endpoint\":\"login\","
                       "\"key\":[\"password_fp\"],\"algorithm\":\"distinct\","
                       "\"limit\":10,\"window_s\":3600,"
                       "\"counts\":\"failures\",\"applies_to\":\"untrusted\","
                       "\"action\":\"challenge\"}"),
        policy("login.user", "login", "[\"user\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

/* A check with the fingerprint is judged by the spray policy (checked,
 * never charged: it counts failures), under the fingerprint's digest
 * with the user's digest as the member; a failure report with it charges
 * the same key and member; a check or a failure without one skips it,
 * and a success never clears it, so a real user's success cannot empty
 * a sprayed password's set. */
static void a_spray_policy_judges_a_check_with_password_fp(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = spray_set();
    char fp[AG_DIGEST_HEX + 1], user[AG_DIGEST_HEX + 1], key[80];
    ag_identity_digest(&h, AG_KEY_PASSWORD_FP, "Summer2026!-digest", fp);
    ag_identity_digest(&h, AG_KEY_USER, "ana", user);
    snprintf(key, sizeof key, "ag:login.spray:%s", fp);
    struct ag_request r;
    request(AG_EP_LOGIN,
            "{\"user\":\"ana\",\"ip\":\"10.1.2.3\","
            "\"password_fp\":\"Summer2026!-digest\"}",
            &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    static const char *const both[] = {"login.spray", "login.user"};
    expect_plan(&plan, s, both, 2);
    const struct ag_limit_op *op = op_named(&plan, "login.spray");
    assert_string_equal(op->key, key);
    assert_string_equal(op->member, user);
    assert_false(op->charge);
    assert_false(op->shadow);
    assert_null(strstr(op->key, "Summer"));
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const failure[] = {"login.spray"};
    expect_plan(&plan, s, failure, 1);
    assert_string_equal(plan.ops[0].key, key);
    assert_string_equal(plan.ops[0].member, user);
    assert_true(plan.ops[0].charge);
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.n, 0);
    /* Another user with the same fingerprint: the same key, another
     * member. */
    request(AG_EP_LOGIN,
            "{\"user\":\"bob\",\"ip\":\"10.9.9.9\","
            "\"password_fp\":\"Summer2026!-digest\"}",
            &r);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    assert_string_equal(plan.ops[0].key, key);
    assert_string_not_equal(plan.ops[0].member, user);
    /* No fingerprint: nothing to judge or charge. */
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    static const char *const user_only[] = {"login.user"};
    expect_plan(&plan, s, user_only, 1);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.n, 0);
    ag_ruleset_unref(s);
}

/* The spray policy is the untrusted lane's: a trusted device is never
 * judged or charged by it, and a passed challenge waives it. */
static void
a_spray_policy_spares_trusted_devices_and_passed_challenges(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = spray_set();
    const char *body = "{\"user\":\"ana\",\"ip\":\"10.1.2.3\","
                       "\"password_fp\":\"fp\"}";
    struct ag_request r;
    request(AG_EP_LOGIN, body, &r);
    ag_request_trust(&r, device_id);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    static const char *const user_only[] = {"login.user"};
    expect_plan(&plan, s, user_only, 1);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.n, 0);
    request(AG_EP_LOGIN,
            "{\"user\":\"ana\",\"ip\":\"10.1.2.3\","
            "\"password_fp\":\"fp\",\"challenge_passed\":true}",
            &r);
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    const struct ag_limit_op *op = op_named(&plan, "login.spray");
    assert_true(op->waived);
    assert_true(op->shadow);
    ag_ruleset_unref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reserve_and_release_plans_are_planned_as_a_check),
        cmocka_unit_test(a_peek_plan_is_the_check_plan_in_either_lane),
        cmocka_unit_test(failure_plan_charges_only_failure_policies),
        cmocka_unit_test(a_failure_counts_only_where_its_reason_does),
        cmocka_unit_test(success_plan_clears_only_user_and_ip_failure_policies),
        cmocka_unit_test(
            success_plan_clears_every_consecutive_policy_it_can_key),
        cmocka_unit_test(untrusted_request_plans_only_its_lane),
        cmocka_unit_test(trusted_request_plans_only_its_lane),
        cmocka_unit_test(device_token_key_hashes_the_tokens_id),
        cmocka_unit_test(passed_challenge_plans_challenge_policies_as_waived),
        cmocka_unit_test(a_spray_policy_judges_a_check_with_password_fp),
        cmocka_unit_test(
            a_spray_policy_spares_trusted_devices_and_passed_challenges),
    };
    return cmocka_run_group_tests(tests, init_sodium, NULL);
}
