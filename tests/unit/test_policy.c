/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_policy: one record's JSON round trip, the defaults of the fields it
 * omits, and each field's validation on its own (a refusal names the
 * field), the name taken from a path, and the enum names. The rules that
 * tie fields together are in test_policy_rules.c, policy files and the
 * compiled-in defaults in test_policy_file.c, sets in test_policy_set.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_policy.h"
#include "ag_test_policy.h"

static void full_record_round_trips_through_json(void **state)
{
    (void)state;
    json_t *in = load(
        "{\"name\":\"login.user_ip-2\",\"endpoint\":\"login\","
        "\"key\":[\"user\",\"ip\",\"device\"],\"algorithm\":\"fixed_window\","
        "\"limit\":50,\"window_s\":600,\"block_s\":120,\"block_growth\":2,"
        "\"block_max_s\":3600,\"counts\":\"failures\",\"fail\":\"closed\","
        "\"mode\":\"shadow\",\"applies_to\":\"untrusted\","
        "\"action\":\"challenge\",\"enabled\":false}");
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(in, NULL, &p, &err), AG_OK);
    assert_string_equal(p.name, "login.user_ip-2");
    assert_int_equal(p.endpoint, AG_EP_LOGIN);
    assert_int_equal(p.nkeys, 3);
    assert_int_equal(p.key[0], AG_KEY_USER);
    assert_int_equal(p.key[1], AG_KEY_IP);
    assert_int_equal(p.key[2], AG_KEY_DEVICE);
    assert_int_equal(p.algorithm, AG_ALG_FIXED_WINDOW);
    assert_int_equal(p.limit, 50);
    assert_int_equal(p.window_s, 600);
    assert_int_equal(p.block_s, 120);
    assert_int_equal(p.counts, AG_COUNTS_FAILURES);
    assert_int_equal(p.fail, AG_FAIL_CLOSED);
    assert_int_equal(p.mode, AG_MODE_SHADOW);
    assert_int_equal(p.block_growth, 2);
    assert_int_equal(p.block_max_s, 3600);
    assert_int_equal(p.applies_to, AG_LANE_UNTRUSTED);
    assert_int_equal(p.action, AG_ACTION_CHALLENGE);
    assert_false(p.enabled);

    json_t *out = ag_policy_to_json(&p);
    assert_non_null(out);
    if (!json_equal(in, out)) {
        char *s = json_dumps(out, JSON_SORT_KEYS);
        fail_msg("round trip differs: %s", s);
    }
    /* And back again to the same record. */
    struct ag_policy q;
    assert_int_equal(ag_policy_from_json(out, NULL, &q, &err), AG_OK);
    assert_string_equal(q.name, p.name);
    assert_int_equal(q.nkeys, p.nkeys);
    assert_memory_equal(q.key, p.key, sizeof p.key[0] * p.nkeys);
    assert_int_equal(q.limit, p.limit);
    assert_int_equal(q.block_s, p.block_s);
    assert_int_equal(q.mode, p.mode);
    json_decref(out);
    json_decref(in);
}

static void every_algorithm_round_trips(void **state)
{
    (void)state;
    /* distinct needs another key; distinct_round_trips covers it. */
    static const char *const algs[] = {"sliding_log", "fixed_window",
                                       "sliding_window", "token_bucket"};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        char value[32];
        snprintf(value, sizeof value, "\"%s\"", algs[i]);
        struct ag_policy p;
        expect_accepted(login_base, "algorithm", value, &p);
        assert_int_equal(p.algorithm, (int)i);
        assert_string_equal(ag_algorithm_name(p.algorithm), algs[i]);
        json_t *out = ag_policy_to_json(&p);
        assert_string_equal(
            json_string_value(json_object_get(out, "algorithm")), algs[i]);
        json_decref(out);
    }
}

static void omitted_optional_fields_take_defaults(void **state)
{
    (void)state;
    json_t *in = load("{\"name\":\"otp.ip\",\"endpoint\":\"otp\","
                      "\"key\":[\"ip\"],\"algorithm\":\"sliding_window\","
                      "\"limit\":20,\"window_s\":3600}");
    struct ag_policy p;
    memset(&p, 0xff, sizeof p);
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(in, NULL, &p, &err), AG_OK);
    assert_int_equal(p.block_s, 0);
    assert_int_equal(p.counts, AG_COUNTS_ATTEMPTS);
    assert_int_equal(p.fail, AG_FAIL_OPEN);
    assert_int_equal(p.mode, AG_MODE_ENFORCE);
    assert_int_equal(p.block_growth, 1);
    assert_int_equal(p.block_max_s, 0);
    assert_int_equal(p.applies_to, AG_LANE_ALL);
    assert_int_equal(p.action, AG_ACTION_DENY);
    assert_true(p.enabled);
    /* Serialising writes the defaults out. */
    json_t *out = ag_policy_to_json(&p);
    assert_int_equal(json_object_size(out), 15);
    assert_int_equal(json_integer_value(json_object_get(out, "block_s")), 0);
    assert_string_equal(json_string_value(json_object_get(out, "counts")),
                        "attempts");
    assert_string_equal(json_string_value(json_object_get(out, "fail")),
                        "open");
    assert_string_equal(json_string_value(json_object_get(out, "mode")),
                        "enforce");
    assert_true(json_is_true(json_object_get(out, "enabled")));
    json_decref(out);
    json_decref(in);
}

static void invalid_name_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "name", "\"Login.User\"");
    expect_field_refused(login_base, "name", "\"\"");
    expect_field_refused(login_base, "name", "\"login user\"");
    expect_field_refused(login_base, "name", "\"login/user\"");
    expect_field_refused(login_base, "name", "\"login:user\"");
    expect_field_refused(login_base, "name", "5");
    expect_field_refused(login_base, "name", "null");
    expect_field_refused(login_base, "name", NULL);
    char too_long[AG_POLICY_NAME_MAX + 4];
    too_long[0] = '"';
    memset(too_long + 1, 'n', AG_POLICY_NAME_MAX + 1);
    strcpy(too_long + AG_POLICY_NAME_MAX + 2, "\"");
    expect_field_refused(login_base, "name", too_long);
    /* 64 characters is the longest name. */
    char longest[AG_POLICY_NAME_MAX + 3];
    longest[0] = '"';
    memset(longest + 1, 'n', AG_POLICY_NAME_MAX);
    strcpy(longest + AG_POLICY_NAME_MAX + 1, "\"");
    struct ag_policy p;
    expect_accepted(login_base, "name", longest, &p);
    assert_int_equal(strlen(p.name), AG_POLICY_NAME_MAX);
    expect_accepted(login_base, "name", "\"a-z_0.9\"", &p);
    assert_string_equal(p.name, "a-z_0.9");
}

static void policy_name_validator_checks_alphabet_and_length(void **state)
{
    (void)state;
    assert_true(ag_policy_name_valid("login.user_ip-2"));
    assert_false(ag_policy_name_valid(""));
    assert_false(ag_policy_name_valid("Login"));
    assert_false(ag_policy_name_valid("a b"));
    assert_false(ag_policy_name_valid("\xc3\xa9"));
    /* Dot segments, which URL normalisation removes from a path. */
    assert_false(ag_policy_name_valid("."));
    assert_false(ag_policy_name_valid(".."));
    assert_true(ag_policy_name_valid("..."));
    assert_true(ag_policy_name_valid(".x"));
    char name[AG_POLICY_NAME_MAX + 2];
    memset(name, 'a', AG_POLICY_NAME_MAX);
    name[AG_POLICY_NAME_MAX] = '\0';
    assert_true(ag_policy_name_valid(name));
    name[AG_POLICY_NAME_MAX] = 'a';
    name[AG_POLICY_NAME_MAX + 1] = '\0';
    assert_false(ag_policy_name_valid(name));
}

static void invalid_endpoint_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "endpoint", "\"signup\"");
    expect_field_refused(login_base, "endpoint", "\"LOGIN\"");
    expect_field_refused(login_base, "endpoint", "0");
    expect_field_refused(login_base, "endpoint", NULL);
}

static void invalid_key_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "key", "[]");
    expect_field_refused(login_base, "key", "[\"email\"]");
    expect_field_refused(login_base, "key", "[\"USER\"]");
    expect_field_refused(login_base, "key", "[1]");
    expect_field_refused(login_base, "key", "\"user\"");
    expect_field_refused(login_base, "key", "[\"user\",\"user\"]");
    expect_field_refused(login_base, "key", "[\"user\",\"ip\",\"user\"]");
    expect_field_refused(login_base, "key",
                         "[\"user\",\"ip\",\"device\",\"user\",\"ip\"]");
    expect_field_refused(login_base, "key", NULL);
}

static void invalid_algorithm_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "algorithm", "\"leaky_bucket\"");
    expect_field_refused(login_base, "algorithm", "\"\"");
    expect_field_refused(login_base, "algorithm", "3");
    expect_field_refused(login_base, "algorithm", NULL);
}

static void invalid_limit_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "limit", "0");
    expect_field_refused(login_base, "limit", "-1");
    expect_field_refused(login_base, "limit", "\"10\"");
    expect_field_refused(login_base, "limit", "10.0");
    expect_field_refused(login_base, "limit", "null");
    expect_field_refused(login_base, "limit", "true");
    expect_field_refused(login_base, "limit", NULL);
    const char *fixed = "{\"name\":\"login.user\",\"endpoint\":\"login\","
                        "\"key\":[\"user\"],\"algorithm\":\"fixed_window\","
                        "\"limit\":1,\"window_s\":1}";
    expect_field_refused(fixed, "limit", "1000000001");
    expect_field_refused(fixed, "limit", "4294967297");
    struct ag_policy p;
    expect_accepted(fixed, "limit", "1000000000", &p);
    assert_int_equal(p.limit, AG_LIMIT_MAX);
    expect_accepted(fixed, "limit", "1", &p);
    assert_int_equal(p.limit, 1);
}

static void invalid_window_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "window_s", "0");
    expect_field_refused(login_base, "window_s", "-900");
    expect_field_refused(login_base, "window_s", "2592001");
    expect_field_refused(login_base, "window_s", "\"900\"");
    expect_field_refused(login_base, "window_s", "900.5");
    expect_field_refused(login_base, "window_s", NULL);
    struct ag_policy p;
    expect_accepted(login_base, "window_s", "2592000", &p);
    assert_int_equal(p.window_s, AG_WINDOW_MAX);
}

static void invalid_block_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "block_s", "-1");
    expect_field_refused(login_base, "block_s", "2592001");
    expect_field_refused(login_base, "block_s", "\"0\"");
    expect_field_refused(login_base, "block_s", "false");
    struct ag_policy p;
    expect_accepted(login_base, "block_s", "2592000", &p);
    assert_int_equal(p.block_s, AG_WINDOW_MAX);
}

static void invalid_counts_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "counts", "\"everything\"");
    expect_field_refused(login_base, "counts", "1");
    expect_field_refused(login_base, "counts", "null");
}

static void invalid_fail_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "fail", "\"maybe\"");
    expect_field_refused(login_base, "fail", "\"Open\"");
    expect_field_refused(login_base, "fail", "false");
}

static void invalid_mode_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "mode", "\"dry_run\"");
    expect_field_refused(login_base, "mode", "null");
    expect_field_refused(login_base, "mode", "[\"shadow\"]");
}

static void non_boolean_enabled_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "enabled", "\"true\"");
    expect_field_refused(login_base, "enabled", "1");
    expect_field_refused(login_base, "enabled", "0");
    expect_field_refused(login_base, "enabled", "null");
    struct ag_policy p;
    expect_accepted(login_base, "enabled", "false", &p);
    assert_false(p.enabled);
}

static void unknown_field_is_refused_and_named(void **state)
{
    (void)state;
    expect_refused(login_base, "burst", "5", "burst");
    expect_refused(login_base, "Name", "\"x\"", "Name");
    /* A field name outside a safe alphabet is echoed with '?'. */
    expect_refused(login_base, "a b\"<x>", "1", "a?b??x?");
}

static void non_object_policy_is_refused(void **state)
{
    (void)state;
    json_t *a = load("[]");
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(a, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "policy");
    json_decref(a);
}

static void path_name_allows_body_name_to_be_omitted(void **state)
{
    (void)state;
    json_t *o = with_field(login_base, "name", NULL);
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, "login.from_path", &p, &err),
                     AG_OK);
    assert_string_equal(p.name, "login.from_path");
    json_decref(o);
}

static void path_name_must_match_body_name(void **state)
{
    (void)state;
    json_t *o = load(login_base);
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, "login.other", &p, &err),
                     AG_EINVAL);
    assert_string_equal(err.field, "name");
    assert_int_equal(ag_policy_from_json(o, "login.user", &p, &err), AG_OK);
    assert_string_equal(p.name, "login.user");
    json_decref(o);
}

static void invalid_path_name_is_refused(void **state)
{
    (void)state;
    json_t *o = with_field(login_base, "name", NULL);
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, "Bad Name", &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "name");
    json_decref(o);
}

static void refused_policy_leaves_output_untouched(void **state)
{
    (void)state;
    json_t *o = with_field(login_base, "enabled", "\"yes\"");
    struct ag_policy p, before;
    memset(&p, 0xa5, sizeof p);
    memcpy(&before, &p, sizeof p);
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_EINVAL);
    assert_memory_equal(&p, &before, sizeof p);
    json_decref(o);
}

static void enum_names_parse_back(void **state)
{
    (void)state;
    assert_int_equal(ag_endpoint_parse("login"), AG_EP_LOGIN);
    assert_int_equal(ag_endpoint_parse("otp"), AG_EP_OTP);
    assert_int_equal(ag_endpoint_parse("signup"), -1);
    assert_int_equal(ag_endpoint_parse(""), -1);
    assert_string_equal(ag_endpoint_name(AG_EP_OTP), "otp");
    assert_string_equal(ag_key_kind_name(AG_KEY_DEVICE), "device");
    assert_string_equal(ag_key_kind_name(AG_KEY_PHONE), "phone");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_record_round_trips_through_json),
        cmocka_unit_test(every_algorithm_round_trips),
        cmocka_unit_test(omitted_optional_fields_take_defaults),
        cmocka_unit_test(invalid_name_is_refused),
        cmocka_unit_test(policy_name_validator_checks_alphabet_and_length),
        cmocka_unit_test(invalid_endpoint_is_refused),
        cmocka_unit_test(invalid_key_is_refused),
        cmocka_unit_test(invalid_algorithm_is_refused),
        cmocka_unit_test(invalid_limit_is_refused),
        cmocka_unit_test(invalid_window_is_refused),
        cmocka_unit_test(invalid_block_is_refused),
        cmocka_unit_test(invalid_counts_is_refused),
        cmocka_unit_test(invalid_fail_is_refused),
        cmocka_unit_test(invalid_mode_is_refused),
        cmocka_unit_test(non_boolean_enabled_is_refused),
        cmocka_unit_test(unknown_field_is_refused_and_named),
        cmocka_unit_test(non_object_policy_is_refused),
        cmocka_unit_test(path_name_allows_body_name_to_be_omitted),
        cmocka_unit_test(path_name_must_match_body_name),
        cmocka_unit_test(invalid_path_name_is_refused),
        cmocka_unit_test(refused_policy_leaves_output_untouched),
        cmocka_unit_test(enum_names_parse_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
