/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_policy: the surge algorithm's record. A shield counts the whole
 * endpoint (key ["site"]), holds for block_s once raised, and has three
 * fields of its own that every other algorithm refuses: factor, baseline_s
 * and, counting failures, reasons. The site and password_fp key kinds are
 * accepted where their endpoint sends them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_policy.h"
#include "ag_test_policy.h"

static const char surge_base[] =
    "{\"name\":\"login.site_failures\",\"endpoint\":\"login\","
    "\"key\":[\"site\"],\"algorithm\":\"surge\",\"limit\":100,"
    "\"window_s\":60,\"block_s\":600,\"counts\":\"failures\","
    "\"applies_to\":\"untrusted\",\"action\":\"challenge\"}";

static void surge_takes_its_defaults(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(surge_base, "enabled", "true", &p);
    assert_int_equal(p.algorithm, AG_ALG_SURGE);
    assert_int_equal(p.factor_milli, AG_SURGE_FACTOR_DEFAULT);
    assert_int_equal(p.baseline_s, AG_SURGE_BASELINE_DEFAULT);
    assert_int_equal(p.reasons, 0);
    assert_string_equal(ag_algorithm_name(p.algorithm), "surge");
    /* The default baseline is never shorter than two windows. */
    json_t *o = with_field(surge_base, "window_s", "2000000");
    json_object_set_new(o, "block_s", json_integer(1));
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
    assert_int_equal(p.baseline_s, AG_WINDOW_MAX);
}

static void surge_factor_is_from_1_5_to_100_in_thousandths(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(surge_base, "factor", "1.5", &p);
    assert_int_equal(p.factor_milli, 1500);
    expect_accepted(surge_base, "factor", "100", &p);
    assert_int_equal(p.factor_milli, 100000);
    expect_accepted(surge_base, "factor", "2.0004", &p);
    assert_int_equal(p.factor_milli, 2000);
    expect_accepted(surge_base, "factor", "null", &p);
    assert_int_equal(p.factor_milli, AG_SURGE_FACTOR_DEFAULT);
    static const char *const bad[] = {"1.49",  "100.001", "0", "-5",
                                      "\"5\"", "true",    "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_field_refused(surge_base, "factor", bad[i]);
}

static void surge_baseline_is_two_windows_to_30_days(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(surge_base, "baseline_s", "120", &p);
    assert_int_equal(p.baseline_s, 120);
    expect_accepted(surge_base, "baseline_s", "2592000", &p);
    expect_field_refused(surge_base, "baseline_s", "119");
    expect_field_refused(surge_base, "baseline_s", "2592001");
    expect_field_refused(surge_base, "baseline_s", "\"7d\"");
}

static void surge_reasons_are_failure_reasons_without_repeats(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(surge_base, "reasons", "[\"unknown_user\"]", &p);
    assert_int_equal(p.reasons, 1u << AG_REASON_UNKNOWN_USER);
    expect_accepted(surge_base, "reasons",
                    "[\"bad_password\",\"second_factor_failed\"]", &p);
    assert_int_equal(p.reasons, 1u << AG_REASON_BAD_PASSWORD |
                                    1u << AG_REASON_SECOND_FACTOR_FAILED);
    static const char *const bad[] = {"[]", "\"unknown_user\"", "[\"nope\"]",
                                      "[1]",
                                      "[\"unknown_user\",\"unknown_user\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_field_refused(surge_base, "reasons", bad[i]);
    /* Attempts have no reason. */
    json_t *o = with_field(surge_base, "counts", "\"attempts\"");
    json_object_set_new(o, "reasons", json_pack("[s]", "unknown_user"));
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "reasons");
    json_decref(o);
}

static void surge_counts_the_site_and_holds(void **state)
{
    (void)state;
    expect_refused_saying(surge_base, "key", "[\"ip\"]", "key", "site");
    expect_field_refused(surge_base, "key", "[\"site\",\"ip\"]");
    expect_refused_saying(surge_base, "block_s", "0", "block_s", "hold");
    expect_refused_saying(surge_base, "block_s", NULL, "block_s", "hold");
    expect_field_refused(surge_base, "block_growth", "2");
    /* Failures are login's only, as for any algorithm. */
    json_t *o = with_field(surge_base, "endpoint", "\"otp\"");
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "counts");
    json_object_set_new(o, "counts", json_string("attempts"));
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
}

static void surge_fields_are_refused_elsewhere(void **state)
{
    (void)state;
    expect_refused_saying(login_base, "factor", "5", "factor", "surge");
    expect_refused_saying(login_base, "baseline_s", "600", "baseline_s",
                          "surge");
    expect_refused_saying(login_base, "reasons", "[\"unknown_user\"]",
                          "reasons", "counts failures");
    struct ag_policy p;
    expect_accepted(login_base, "factor", "null", &p);
    assert_int_equal(p.factor_milli, 0);
}

/* Issue 36: reasons are any failure-counting policy's (a spray policy
 * that leaves unknown users out), and its record keeps them. */
static void reasons_are_any_failure_policys(void **state)
{
    (void)state;
    static const char spray[] =
        "{\"name\":\"login.password_spray\",\"endpoint\":\"login\","
        "\"key\":[\"password_fp\"],\"algorithm\":\"distinct\",\"limit\":10,"
        "\"window_s\":3600,\"counts\":\"failures\","
        "\"applies_to\":\"untrusted\",\"action\":\"challenge\"}";
    struct ag_policy p;
    expect_accepted(spray, "reasons",
                    "[\"bad_password\", \"second_factor_failed\"]", &p);
    assert_int_equal(p.reasons, 1u << AG_REASON_BAD_PASSWORD |
                                    1u << AG_REASON_SECOND_FACTOR_FAILED);
    json_t *back = ag_policy_to_json(&p);
    json_t *r = json_object_get(back, "reasons");
    assert_int_equal(json_array_size(r), 2);
    assert_string_equal(json_string_value(json_array_get(r, 0)),
                        "bad_password");
    json_decref(back);
    expect_field_refused(spray, "reasons", "[]");
    expect_field_refused(spray, "reasons", "[\"nope\"]");
}

static void surge_record_round_trips(void **state)
{
    (void)state;
    json_t *o = with_field(surge_base, "reasons", "[\"unknown_user\"]");
    json_object_set_new(o, "factor", json_real(2.5));
    json_object_set_new(o, "baseline_s", json_integer(3600));
    struct ag_policy p, q;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_t *back = ag_policy_to_json(&p);
    assert_non_null(back);
    assert_true(json_number_value(json_object_get(back, "factor")) == 2.5);
    assert_int_equal(json_integer_value(json_object_get(back, "baseline_s")),
                     3600);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(back, "reasons"), 0)),
        "unknown_user");
    assert_int_equal(ag_policy_from_json(back, NULL, &q, &err), AG_OK);
    assert_memory_equal(&p, &q, sizeof p);
    json_decref(back);
    json_decref(o);
    /* Another algorithm's record has none of the three. */
    o = load(login_base);
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    back = ag_policy_to_json(&p);
    assert_null(json_object_get(back, "factor"));
    assert_null(json_object_get(back, "baseline_s"));
    assert_null(json_object_get(back, "reasons"));
    json_decref(back);
    json_decref(o);
}

/* Issue 40: a login shield's scope, untrusted (the default, left out of
 * its record) or risky (kept). */
static void surge_scope_is_untrusted_or_risky_on_login(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(surge_base, "scope", "\"risky\"", &p);
    assert_true(p.scope_risky);
    json_t *back = ag_policy_to_json(&p);
    assert_string_equal(json_string_value(json_object_get(back, "scope")),
                        "risky");
    json_decref(back);
    expect_accepted(surge_base, "scope", "\"untrusted\"", &p);
    assert_false(p.scope_risky);
    back = ag_policy_to_json(&p);
    assert_null(json_object_get(back, "scope"));
    json_decref(back);
    expect_refused_saying(surge_base, "scope", "\"all\"", "scope", "risky");
    expect_refused_saying(surge_base, "scope", "true", "scope", "risky");
    expect_refused_saying(login_base, "scope", "\"risky\"", "scope", "surge");
}

static void site_and_password_fp_keys_follow_their_endpoints(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(login_base, "key", "[\"password_fp\"]", &p);
    assert_int_equal(p.key[0], AG_KEY_PASSWORD_FP);
    expect_accepted(login_base, "key", "[\"site\"]", &p);
    assert_int_equal(p.key[0], AG_KEY_SITE);
    expect_accepted(otp_base, "key", "[\"site\"]", &p);
    expect_field_refused(otp_base, "key", "[\"password_fp\"]");
    expect_refused_saying(login_base, "key", "[\"passwordfp\"]", "key",
                          "\"password_fp\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(surge_takes_its_defaults),
        cmocka_unit_test(surge_factor_is_from_1_5_to_100_in_thousandths),
        cmocka_unit_test(surge_baseline_is_two_windows_to_30_days),
        cmocka_unit_test(surge_reasons_are_failure_reasons_without_repeats),
        cmocka_unit_test(reasons_are_any_failure_policys),
        cmocka_unit_test(surge_counts_the_site_and_holds),
        cmocka_unit_test(surge_fields_are_refused_elsewhere),
        cmocka_unit_test(surge_record_round_trips),
        cmocka_unit_test(surge_scope_is_untrusted_or_risky_on_login),
        cmocka_unit_test(site_and_password_fp_keys_follow_their_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
