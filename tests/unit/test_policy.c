/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_policy: the record's validation field by field, its JSON round trip,
 * policy files, the compiled-in defaults and reference-counted sets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_policy.h"

static const char login_base[] =
    "{\"name\":\"login.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"
    "\"algorithm\":\"sliding_log\",\"limit\":10,\"window_s\":900,"
    "\"block_s\":0,\"counts\":\"attempts\",\"fail\":\"open\","
    "\"mode\":\"enforce\",\"enabled\":true}";

static const char otp_base[] =
    "{\"name\":\"otp.phone\",\"endpoint\":\"otp\",\"key\":[\"phone\"],"
    "\"algorithm\":\"sliding_log\",\"limit\":3,\"window_s\":900}";

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!v)
        fail_msg("test JSON does not parse (%s): %s", jerr.text, text);
    return v;
}

/* base with field set to the JSON text value, or removed if value is NULL;
 * the caller owns the result. */
static json_t *with_field(const char *base, const char *field,
                          const char *value)
{
    json_t *o = load(base);
    if (value)
        assert_int_equal(json_object_set_new(o, field, load(value)), 0);
    else
        assert_int_equal(json_object_del(o, field), 0);
    return o;
}

static void expect_refused(const char *base, const char *field,
                           const char *value, const char *want_field)
{
    json_t *o = with_field(base, field, value);
    struct ag_policy p;
    struct ag_error err;
    int rc = ag_policy_from_json(o, NULL, &p, &err);
    json_decref(o);
    if (rc != AG_EINVAL)
        fail_msg("%s=%s: rc %d, want AG_EINVAL", field,
                 value ? value : "(absent)", rc);
    if (strcmp(err.field, want_field) != 0)
        fail_msg("%s=%s: err.field '%s', want '%s' (%s)", field,
                 value ? value : "(absent)", err.field, want_field, err.msg);
    if (!strstr(err.msg, want_field))
        fail_msg("%s=%s: message does not name the field: %s", field,
                 value ? value : "(absent)", err.msg);
}

/* expect_refused, and the message holds want (NULL: anything). */
static void expect_refused_saying(const char *base, const char *field,
                                  const char *value, const char *want_field,
                                  const char *want)
{
    expect_refused(base, field, value, want_field);
    if (!want)
        return;
    json_t *o = with_field(base, field, value);
    struct ag_policy p;
    struct ag_error err;
    ag_policy_from_json(o, NULL, &p, &err);
    json_decref(o);
    if (!strstr(err.msg, want))
        fail_msg("%s=%s: message lacks '%s': %s", field, value, want, err.msg);
}

static void expect_field_refused(const char *base, const char *field,
                                 const char *value)
{
    expect_refused(base, field, value, field);
}

static void expect_accepted(const char *base, const char *field,
                            const char *value, struct ag_policy *out)
{
    json_t *o = with_field(base, field, value);
    struct ag_error err;
    int rc = ag_policy_from_json(o, NULL, out, &err);
    json_decref(o);
    if (rc != AG_OK)
        fail_msg("%s=%s: rc %d (%s)", field, value ? value : "(absent)", rc,
                 err.msg);
}

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

static void key_kind_not_sent_to_endpoint_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "key", "[\"phone\"]");
    expect_field_refused(login_base, "key", "[\"user\",\"phone\"]");
    expect_field_refused(otp_base, "key", "[\"device\"]");
    struct ag_policy p;
    expect_accepted(otp_base, "key", "[\"phone\",\"ip\",\"user\"]", &p);
    assert_int_equal(p.nkeys, 3);
    assert_int_equal(p.key[2], AG_KEY_USER);
}

static void device_token_key_is_accepted_on_every_endpoint(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(login_base, "key", "[\"user\",\"device_token\"]", &p);
    assert_int_equal(p.key[1], AG_KEY_DEVICE_TOKEN);
    expect_accepted(otp_base, "key", "[\"device_token\"]", &p);
    assert_int_equal(p.key[0], AG_KEY_DEVICE_TOKEN);
    json_t *o = with_field(otp_base, "endpoint", "\"otp_verify\"");
    json_object_set_new(o, "key", json_pack("[ss]", "phone", "device_token"));
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
    /* And the kind is listed where an unknown one is refused. */
    expect_refused_saying(login_base, "key", "[\"devicetoken\"]", "key",
                          "\"device_token\"");
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

static void sliding_log_limit_over_10000_is_refused(void **state)
{
    (void)state;
    expect_field_refused(login_base, "limit", "10001");
    struct ag_policy p;
    expect_accepted(login_base, "limit", "10000", &p);
    assert_int_equal(p.limit, AG_SET_LIMIT_MAX);
    /* The other algorithms do not store every request. */
    json_t *o = with_field(login_base, "algorithm", "\"sliding_window\"");
    assert_int_equal(json_object_set_new(o, "limit", json_integer(10001)), 0);
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    assert_int_equal(p.limit, 10001);
    json_decref(o);
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

static void failures_counting_is_refused_on_otp(void **state)
{
    (void)state;
    expect_field_refused(otp_base, "counts", "\"failures\"");
    struct ag_policy p;
    expect_accepted(otp_base, "counts", "\"attempts\"", &p);
    assert_int_equal(p.counts, AG_COUNTS_ATTEMPTS);
    expect_accepted(login_base, "counts", "\"failures\"", &p);
    assert_int_equal(p.counts, AG_COUNTS_FAILURES);
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

/* Policy files. */

static int parse_text(const char *text, struct ag_policy **ps, size_t *n,
                      struct ag_error *err)
{
    return ag_policy_parse_file(text, strlen(text), ps, n, err);
}

static void policy_file_is_read_in_order(void **state)
{
    (void)state;
    const char *text =
        "{\"policies\":[{\"name\":\"otp.phone\",\"endpoint\":\"otp\","
        "\"key\":[\"phone\"],\"algorithm\":\"sliding_log\",\"limit\":3,"
        "\"window_s\":900},{\"name\":\"login.ip\",\"endpoint\":\"login\","
        "\"key\":[\"ip\"],\"algorithm\":\"token_bucket\",\"limit\":100,"
        "\"window_s\":60,\"mode\":\"shadow\"}]}";
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err;
    assert_int_equal(parse_text(text, &ps, &n, &err), AG_OK);
    assert_int_equal(n, 2);
    assert_string_equal(ps[0].name, "otp.phone");
    assert_int_equal(ps[0].limit, 3);
    assert_string_equal(ps[1].name, "login.ip");
    assert_int_equal(ps[1].algorithm, AG_ALG_TOKEN_BUCKET);
    assert_int_equal(ps[1].mode, AG_MODE_SHADOW);
    free(ps);
}

static void policy_file_with_no_policies_is_empty(void **state)
{
    (void)state;
    struct ag_policy *ps = NULL;
    size_t n = 99;
    struct ag_error err;
    assert_int_equal(parse_text("{\"policies\":[]}", &ps, &n, &err), AG_OK);
    assert_int_equal(n, 0);
    free(ps);
}

static void policy_file_with_duplicate_names_is_refused(void **state)
{
    (void)state;
    const char *text =
        "{\"policies\":[{\"name\":\"login.ip\",\"endpoint\":\"login\","
        "\"key\":[\"ip\"],\"algorithm\":\"sliding_log\",\"limit\":3,"
        "\"window_s\":900},{\"name\":\"login.ip\",\"endpoint\":\"login\","
        "\"key\":[\"user\"],\"algorithm\":\"sliding_log\",\"limit\":5,"
        "\"window_s\":60}]}";
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err;
    assert_int_equal(parse_text(text, &ps, &n, &err), AG_EINVAL);
    assert_string_equal(err.field, "name");
    assert_non_null(strstr(err.msg, "policy 2"));
    assert_null(ps);
}

static void policy_file_that_is_not_json_is_refused(void **state)
{
    (void)state;
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err;
    assert_int_equal(parse_text("policies: [login.user]", &ps, &n, &err),
                     AG_EINVAL);
    assert_string_equal(err.field, "policies");
    assert_non_null(strstr(err.msg, "line 1"));
    assert_int_equal(parse_text("{\"policies\":[", &ps, &n, &err), AG_EINVAL);
    assert_string_equal(err.field, "policies");
    assert_null(ps);
}

static void policy_file_without_a_policy_list_is_refused(void **state)
{
    (void)state;
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err;
    assert_int_equal(parse_text("{\"policies\":{}}", &ps, &n, &err), AG_EINVAL);
    assert_string_equal(err.field, "policies");
    assert_int_equal(parse_text("{\"policy\":[]}", &ps, &n, &err), AG_EINVAL);
    assert_string_equal(err.field, "policies");
    assert_int_equal(parse_text("[]", &ps, &n, &err), AG_EINVAL);
    assert_string_equal(err.field, "policies");
    assert_null(ps);
}

static void policy_file_names_the_bad_policy_and_field(void **state)
{
    (void)state;
    const char *text =
        "{\"policies\":[{\"name\":\"otp.phone\",\"endpoint\":\"otp\","
        "\"key\":[\"phone\"],\"algorithm\":\"sliding_log\",\"limit\":3,"
        "\"window_s\":900},{\"name\":\"otp.ip\",\"endpoint\":\"otp\","
        "\"key\":[\"ip\"],\"algorithm\":\"sliding_log\",\"limit\":3,"
        "\"window_s\":0}]}";
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err;
    assert_int_equal(parse_text(text, &ps, &n, &err), AG_EINVAL);
    assert_string_equal(err.field, "window_s");
    assert_non_null(strstr(err.msg, "policy 2"));
    assert_non_null(strstr(err.msg, "window_s"));
    assert_null(ps);
}

/* The compiled-in defaults. */

static const struct ag_embedded_file *embedded_policy(const char *name)
{
    for (size_t i = 0; i < ag_embedded_policies_count; i++)
        if (strcmp(ag_embedded_policies[i].name, name) == 0)
            return &ag_embedded_policies[i];
    return NULL;
}

static void every_embedded_policy_file_parses(void **state)
{
    (void)state;
    assert_true(ag_embedded_policies_count >= 1);
    assert_null(ag_embedded_policies[ag_embedded_policies_count].name);
    for (size_t i = 0; i < ag_embedded_policies_count; i++) {
        const struct ag_embedded_file *f = &ag_embedded_policies[i];
        struct ag_policy *ps = NULL;
        size_t n = 0;
        struct ag_error err;
        int rc = ag_policy_parse_file(f->data, f->len, &ps, &n, &err);
        if (rc != AG_OK)
            fail_msg("%s: %s", f->name, err.msg);
        assert_true(n >= 1);
        free(ps);
    }
}

static void default_policies_match_the_documented_table(void **state)
{
    (void)state;
    /* The default-policy table of docs/policies.md, as data: the file
     * must say the same (issue 14's lanes, challenges and growing blocks
     * included). */
    static const struct {
        const char *name;
        enum ag_endpoint endpoint;
        size_t nkeys;
        enum ag_key_kind key[2];
        uint32_t limit;
        uint32_t window_s;
        enum ag_algorithm algorithm;
        enum ag_counts counts;
        uint32_t block_s, block_growth, block_max_s;
        enum ag_lane applies_to;
        enum ag_action action;
    } want[] = {
        {"login.ip",
         AG_EP_LOGIN,
         1,
         {AG_KEY_IP},
         100,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         900,
         2,
         86400,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"login.ip_prefix",
         AG_EP_LOGIN,
         1,
         {AG_KEY_IP_PREFIX},
         300,
         900,
         AG_ALG_SLIDING_WINDOW,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"login.ip_users",
         AG_EP_LOGIN,
         1,
         {AG_KEY_IP},
         20,
         3600,
         AG_ALG_DISTINCT,
         AG_COUNTS_ATTEMPTS,
         3600,
         2,
         86400,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"login.user",
         AG_EP_LOGIN,
         1,
         {AG_KEY_USER},
         20,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_CHALLENGE},
        {"login.user_fail",
         AG_EP_LOGIN,
         1,
         {AG_KEY_USER},
         10,
         3600,
         AG_ALG_SLIDING_WINDOW,
         AG_COUNTS_FAILURES,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_CHALLENGE},
        {"login.user_consecutive",
         AG_EP_LOGIN,
         1,
         {AG_KEY_USER},
         100,
         86400,
         AG_ALG_CONSECUTIVE,
         AG_COUNTS_FAILURES,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"login.user_ip",
         AG_EP_LOGIN,
         2,
         {AG_KEY_USER, AG_KEY_IP},
         5,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_CHALLENGE},
        {"login.user_ip_fail",
         AG_EP_LOGIN,
         2,
         {AG_KEY_USER, AG_KEY_IP},
         5,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_FAILURES,
         900,
         2,
         86400,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"login.device_fail",
         AG_EP_LOGIN,
         2,
         {AG_KEY_USER, AG_KEY_DEVICE_TOKEN},
         20,
         86400,
         AG_ALG_CONSECUTIVE,
         AG_COUNTS_FAILURES,
         0,
         1,
         0,
         AG_LANE_TRUSTED,
         AG_ACTION_DENY},
        {"otp.phone",
         AG_EP_OTP,
         1,
         {AG_KEY_PHONE},
         3,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"otp.phone_daily",
         AG_EP_OTP,
         1,
         {AG_KEY_PHONE},
         10,
         86400,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"otp.phone_interval",
         AG_EP_OTP,
         1,
         {AG_KEY_PHONE},
         1,
         30,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"otp.user_phone",
         AG_EP_OTP,
         2,
         {AG_KEY_PHONE, AG_KEY_USER},
         3,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_TRUSTED,
         AG_ACTION_DENY},
        {"otp.user_phone_interval",
         AG_EP_OTP,
         2,
         {AG_KEY_PHONE, AG_KEY_USER},
         1,
         30,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_TRUSTED,
         AG_ACTION_DENY},
        {"otp.user_daily",
         AG_EP_OTP,
         1,
         {AG_KEY_USER},
         20,
         86400,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_TRUSTED,
         AG_ACTION_DENY},
        {"otp.ip",
         AG_EP_OTP,
         1,
         {AG_KEY_IP},
         20,
         3600,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_ALL,
         AG_ACTION_DENY},
        {"otp.ip_prefix",
         AG_EP_OTP,
         1,
         {AG_KEY_IP_PREFIX},
         100,
         3600,
         AG_ALG_SLIDING_WINDOW,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"otp.phone_prefix",
         AG_EP_OTP,
         1,
         {AG_KEY_PHONE_PREFIX},
         100,
         3600,
         AG_ALG_SLIDING_WINDOW,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"otp.ip_phones",
         AG_EP_OTP,
         1,
         {AG_KEY_IP},
         10,
         86400,
         AG_ALG_DISTINCT,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_ALL,
         AG_ACTION_DENY},
        {"otp_verify.phone",
         AG_EP_OTP_VERIFY,
         1,
         {AG_KEY_PHONE},
         5,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         900,
         1,
         900,
         AG_LANE_UNTRUSTED,
         AG_ACTION_DENY},
        {"otp_verify.user_phone",
         AG_EP_OTP_VERIFY,
         2,
         {AG_KEY_PHONE, AG_KEY_USER},
         5,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         900,
         1,
         900,
         AG_LANE_TRUSTED,
         AG_ACTION_DENY},
        {"otp_verify.ip",
         AG_EP_OTP_VERIFY,
         1,
         {AG_KEY_IP},
         50,
         3600,
         AG_ALG_SLIDING_WINDOW,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_ALL,
         AG_ACTION_DENY},
        {"otp.prefix_conversion",
         AG_EP_OTP,
         1,
         {AG_KEY_PHONE_PREFIX},
         50,
         3600,
         AG_ALG_CONVERSION,
         AG_COUNTS_ATTEMPTS,
         86400,
         1,
         86400,
         AG_LANE_ALL,
         AG_ACTION_DENY},
        {"otp.country",
         AG_EP_OTP,
         1,
         {AG_KEY_COUNTRY},
         1000,
         3600,
         AG_ALG_SLIDING_WINDOW,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_ALL,
         AG_ACTION_DENY},
    };
    const size_t nwant = sizeof want / sizeof want[0];
    /* The defaults that start in shadow mode (SMS pumping: an operator
     * reads their would-be denials before enforcing), with their ratio;
     * every other default enforces and has none. */
    static const struct {
        const char *name;
        uint32_t min_ratio_ppm;
    } shadow[] = {{"otp.prefix_conversion", 200000}, {"otp.country", 0}};
    const struct ag_embedded_file *f = embedded_policy("default.json");
    assert_non_null(f);
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err;
    assert_int_equal(ag_policy_parse_file(f->data, f->len, &ps, &n, &err),
                     AG_OK);
    assert_int_equal(n, nwant);
    for (size_t w = 0; w < nwant; w++) {
        const struct ag_policy *p = NULL;
        for (size_t i = 0; i < n; i++)
            if (strcmp(ps[i].name, want[w].name) == 0)
                p = &ps[i];
        if (!p)
            fail_msg("default policy %s is missing", want[w].name);
        assert_int_equal(p->endpoint, want[w].endpoint);
        assert_int_equal(p->nkeys, want[w].nkeys);
        for (size_t k = 0; k < want[w].nkeys; k++)
            assert_int_equal(p->key[k], want[w].key[k]);
        if (p->limit != want[w].limit || p->window_s != want[w].window_s)
            fail_msg("%s: %u/%u, want %u/%u", p->name, p->limit, p->window_s,
                     want[w].limit, want[w].window_s);
        assert_int_equal(p->algorithm, want[w].algorithm);
        assert_int_equal(p->counts, want[w].counts);
        assert_int_equal(p->block_s, want[w].block_s);
        assert_int_equal(p->block_growth, want[w].block_growth);
        assert_int_equal(p->block_max_s, want[w].block_max_s);
        assert_int_equal(p->applies_to, want[w].applies_to);
        assert_int_equal(p->action, want[w].action);
        assert_true(p->enabled);
        enum ag_mode mode = AG_MODE_ENFORCE;
        uint32_t ppm = 0;
        for (size_t k = 0; k < sizeof shadow / sizeof shadow[0]; k++)
            if (strcmp(shadow[k].name, p->name) == 0) {
                mode = AG_MODE_SHADOW;
                ppm = shadow[k].min_ratio_ppm;
            }
        assert_int_equal(p->mode, mode);
        assert_int_equal(p->min_ratio_ppm, ppm);
    }
    free(ps);
}

/* Policy sets. */

static struct ag_policy named(const char *name, uint32_t limit)
{
    json_t *o = load(login_base);
    assert_int_equal(json_object_set_new(o, "name", json_string(name)), 0);
    assert_int_equal(json_object_set_new(o, "limit", json_integer(limit)), 0);
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
    return p;
}

static void policy_set_is_sorted_by_name(void **state)
{
    (void)state;
    struct ag_policy in[] = {named("otp.ip", 1), named("login.user", 2),
                             named("login.ip", 3), named("otp.ip_daily", 4)};
    struct ag_ruleset *s = ag_ruleset_new(in, 4, 7);
    assert_non_null(s);
    assert_int_equal(s->count, 4);
    assert_int_equal(s->version, 7);
    assert_string_equal(s->policies[0].name, "login.ip");
    assert_int_equal(s->policies[0].limit, 3);
    assert_string_equal(s->policies[1].name, "login.user");
    assert_int_equal(s->policies[1].limit, 2);
    assert_string_equal(s->policies[2].name, "otp.ip");
    assert_string_equal(s->policies[3].name, "otp.ip_daily");
    /* The set holds a copy; the caller's array keeps its order. */
    assert_string_equal(in[0].name, "otp.ip");
    in[1].limit = 99;
    assert_int_equal(s->policies[1].limit, 2);
    ag_ruleset_unref(s);
}

static void policy_set_is_reference_counted(void **state)
{
    (void)state;
    struct ag_policy in[] = {named("login.user", 2)};
    struct ag_ruleset *s = ag_ruleset_new(in, 1, 1);
    assert_non_null(s);
    assert_int_equal(atomic_load(&s->refs), 1);
    assert_ptr_equal(ag_ruleset_ref(s), s);
    assert_int_equal(atomic_load(&s->refs), 2);
    ag_ruleset_unref(s);
    assert_int_equal(atomic_load(&s->refs), 1);
    /* Still readable with one reference left; the last unref frees it,
     * which the leak checker verifies. */
    assert_string_equal(s->policies[0].name, "login.user");
    ag_ruleset_unref(s);
}

static void empty_policy_set_is_valid(void **state)
{
    (void)state;
    struct ag_ruleset *s = ag_ruleset_new(NULL, 0, 3);
    assert_non_null(s);
    assert_int_equal(s->count, 0);
    assert_int_equal(s->version, 3);
    ag_ruleset_unref(s);
}

static void sets_are_the_same_only_when_every_policy_field_is(void **state)
{
    (void)state;
    struct ag_policy in[] = {named("login.user", 2), named("login.ip", 3)};
    struct ag_ruleset *a = ag_ruleset_new(in, 2, 1);
    /* Another load of the same rows: its own version, same policies. */
    struct ag_ruleset *b = ag_ruleset_new(in, 2, 2);
    assert_true(ag_ruleset_same_policies(a, b));
    in[1].mode = AG_MODE_SHADOW;
    struct ag_ruleset *shadow = ag_ruleset_new(in, 2, 3);
    assert_false(ag_ruleset_same_policies(a, shadow));
    in[1].mode = AG_MODE_ENFORCE;
    in[0].block_s = 60;
    struct ag_ruleset *blocked = ag_ruleset_new(in, 2, 4);
    assert_false(ag_ruleset_same_policies(a, blocked));
    struct ag_ruleset *fewer = ag_ruleset_new(in, 1, 5);
    assert_false(ag_ruleset_same_policies(a, fewer));
    assert_false(ag_ruleset_same_policies(a, NULL));
    assert_true(ag_ruleset_same_policies(NULL, NULL));
    ag_ruleset_unref(a);
    ag_ruleset_unref(b);
    ag_ruleset_unref(shadow);
    ag_ruleset_unref(blocked);
    ag_ruleset_unref(fewer);
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

static const char distinct_base[] =
    "{\"name\":\"login.ip_users\",\"endpoint\":\"login\",\"key\":[\"ip\"],"
    "\"algorithm\":\"distinct\",\"limit\":20,\"window_s\":3600}";

static void distinct_must_not_key_on_what_it_counts(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(distinct_base, "key", "[\"ip_prefix\"]", &p);
    expect_field_refused(distinct_base, "key", "[\"ip\",\"user\"]");
    json_t *o = with_field(otp_base, "algorithm", "\"distinct\"");
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "key");
    json_decref(o);
}

static void distinct_round_trips(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(distinct_base, "limit", "7", &p);
    assert_int_equal(p.algorithm, AG_ALG_DISTINCT);
    json_t *out = ag_policy_to_json(&p);
    assert_string_equal(json_string_value(json_object_get(out, "algorithm")),
                        "distinct");
    struct ag_policy back;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(out, NULL, &back, &err), AG_OK);
    assert_memory_equal(&back, &p, sizeof p);
    json_decref(out);
}

static const char consecutive_base[] =
    "{\"name\":\"login.cap\",\"endpoint\":\"login\",\"key\":[\"user\"],"
    "\"algorithm\":\"consecutive\",\"limit\":100,\"window_s\":86400,"
    "\"counts\":\"failures\"}";

static void consecutive_needs_counts_failures(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(consecutive_base, "counts", "\"failures\"", &p);
    assert_int_equal(p.algorithm, AG_ALG_CONSECUTIVE);
    expect_refused_saying(consecutive_base, "counts", "\"attempts\"", "counts",
                          "must be \"failures\" for consecutive");
    expect_refused_saying(consecutive_base, "counts", NULL, "counts",
                          "must be \"failures\" for consecutive");
}

static void consecutive_round_trips(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(consecutive_base, "limit", "100", &p);
    json_t *out = ag_policy_to_json(&p);
    assert_string_equal(json_string_value(json_object_get(out, "algorithm")),
                        "consecutive");
    struct ag_policy back;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(out, NULL, &back, &err), AG_OK);
    assert_memory_equal(&back, &p, sizeof p);
    json_decref(out);
}

static const char conversion_base[] =
    "{\"name\":\"otp.prefix_conversion\",\"endpoint\":\"otp\","
    "\"key\":[\"phone_prefix\"],\"algorithm\":\"conversion\","
    "\"limit\":50,\"window_s\":3600,\"min_ratio\":0.2}";

static void conversion_needs_min_ratio_in_range(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(conversion_base, "min_ratio", "0.2", &p);
    assert_int_equal(p.algorithm, AG_ALG_CONVERSION);
    assert_int_equal(p.min_ratio_ppm, 200000);
    expect_accepted(conversion_base, "min_ratio", "1", &p);
    assert_int_equal(p.min_ratio_ppm, AG_RATIO_ONE);
    expect_accepted(conversion_base, "min_ratio", "0.000001", &p);
    assert_int_equal(p.min_ratio_ppm, 1);
    expect_refused_saying(conversion_base, "min_ratio", NULL, "min_ratio",
                          "is required for conversion");
    expect_refused_saying(conversion_base, "min_ratio", "null", "min_ratio",
                          "is required for conversion");
    expect_field_refused(conversion_base, "min_ratio", "0");
    expect_field_refused(conversion_base, "min_ratio", "-0.5");
    expect_field_refused(conversion_base, "min_ratio", "1.5");
    expect_field_refused(conversion_base, "min_ratio", "0.0000001");
    expect_field_refused(conversion_base, "min_ratio", "\"0.2\"");
    expect_field_refused(conversion_base, "min_ratio", "true");
}

static void min_ratio_is_refused_for_other_algorithms(void **state)
{
    (void)state;
    expect_refused_saying(otp_base, "min_ratio", "0.2", "min_ratio",
                          "only for the conversion algorithm");
    expect_refused_saying(login_base, "min_ratio", "0.5", "min_ratio",
                          "only for the conversion algorithm");
    /* A row's empty column reads as absent. */
    struct ag_policy p;
    expect_accepted(otp_base, "min_ratio", "null", &p);
    assert_int_equal(p.min_ratio_ppm, 0);
}

static void conversion_is_only_for_otp_and_counts_attempts(void **state)
{
    (void)state;
    expect_refused_saying(conversion_base, "endpoint", "\"otp_verify\"",
                          "algorithm", "only for the otp endpoint");
    json_t *o = with_field(conversion_base, "endpoint", "\"login\"");
    json_object_set_new(o, "key", json_pack("[s]", "user"));
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "algorithm");
    json_decref(o);
    expect_accepted(conversion_base, "counts", "\"attempts\"", &p);
    expect_refused_saying(conversion_base, "counts", "\"failures\"", "counts",
                          "must be \"attempts\" for conversion");
}

static void conversion_round_trips_with_its_ratio_alone(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(conversion_base, "min_ratio", "0.35", &p);
    json_t *out = ag_policy_to_json(&p);
    assert_string_equal(json_string_value(json_object_get(out, "algorithm")),
                        "conversion");
    assert_true(json_is_real(json_object_get(out, "min_ratio")));
    assert_true(json_real_value(json_object_get(out, "min_ratio")) == 0.35);
    struct ag_policy back;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(out, NULL, &back, &err), AG_OK);
    assert_memory_equal(&back, &p, sizeof p);
    json_decref(out);
    /* Every other policy's record has no min_ratio. */
    expect_accepted(otp_base, "limit", "3", &p);
    out = ag_policy_to_json(&p);
    assert_null(json_object_get(out, "min_ratio"));
    json_decref(out);
}

static void distinct_limit_over_10000_is_refused(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(distinct_base, "limit", "10000", &p);
    expect_field_refused(distinct_base, "limit", "10001");
}

static void prefix_kinds_follow_the_endpoint(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(login_base, "key", "[\"ip_prefix\"]", &p);
    assert_int_equal(p.key[0], AG_KEY_IP_PREFIX);
    expect_field_refused(login_base, "key", "[\"phone_prefix\"]");
    expect_accepted(otp_base, "key", "[\"phone_prefix\",\"ip_prefix\"]", &p);
    assert_int_equal(p.key[0], AG_KEY_PHONE_PREFIX);
    expect_accepted(otp_base, "endpoint", "\"otp_verify\"", &p);
    assert_int_equal(p.endpoint, AG_EP_OTP_VERIFY);
}

static void lanes_actions_and_block_growth_are_validated(void **state)
{
    (void)state;
    expect_refused_saying(login_base, "applies_to", "\"devices\"", "applies_to",
                          "must be one of \"all\", \"trusted\", \"untrusted\"");
    expect_refused_saying(login_base, "applies_to", "1", "applies_to", NULL);
    expect_refused_saying(login_base, "action", "\"block\"", "action",
                          "must be one of \"deny\", \"challenge\"");
    expect_refused_saying(login_base, "block_growth", "0", "block_growth",
                          NULL);
    expect_refused_saying(login_base, "block_growth", "1.5", "block_growth",
                          NULL);
    /* Growth needs a block to grow. */
    expect_refused_saying(login_base, "block_growth", "2", "block_growth",
                          "needs block_s");
    struct ag_policy p;
    expect_accepted(login_base, "applies_to", "\"trusted\"", &p);
    assert_int_equal(p.applies_to, AG_LANE_TRUSTED);
    expect_accepted(login_base, "action", "\"challenge\"", &p);
    assert_int_equal(p.action, AG_ACTION_CHALLENGE);
}

static void block_max_defaults_to_a_day_when_blocks_grow(void **state)
{
    (void)state;
    struct ag_policy p;
    json_t *in = load("{\"name\":\"l.g\",\"endpoint\":\"login\","
                      "\"key\":[\"ip\"],\"algorithm\":\"sliding_log\","
                      "\"limit\":5,\"window_s\":60,\"block_s\":60,"
                      "\"block_growth\":2}");
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(in, NULL, &p, &err), AG_OK);
    assert_int_equal(p.block_max_s, AG_BLOCK_LEVEL_S);
    json_decref(in);
    in = load("{\"name\":\"l.g\",\"endpoint\":\"login\","
              "\"key\":[\"ip\"],\"algorithm\":\"sliding_log\","
              "\"limit\":5,\"window_s\":60,\"block_s\":60}");
    assert_int_equal(ag_policy_from_json(in, NULL, &p, &err), AG_OK);
    assert_int_equal(p.block_max_s, 60); /* no growth: the block itself */
    json_decref(in);
    in = load("{\"name\":\"l.g\",\"endpoint\":\"login\","
              "\"key\":[\"ip\"],\"algorithm\":\"sliding_log\","
              "\"limit\":5,\"window_s\":60,\"block_s\":60,"
              "\"block_growth\":2,\"block_max_s\":59}");
    assert_int_equal(ag_policy_from_json(in, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "block_max_s");
    assert_non_null(strstr(err.msg, "at least block_s (60)"));
    json_decref(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(distinct_must_not_key_on_what_it_counts),
        cmocka_unit_test(distinct_limit_over_10000_is_refused),
        cmocka_unit_test(distinct_round_trips),
        cmocka_unit_test(consecutive_needs_counts_failures),
        cmocka_unit_test(consecutive_round_trips),
        cmocka_unit_test(conversion_needs_min_ratio_in_range),
        cmocka_unit_test(min_ratio_is_refused_for_other_algorithms),
        cmocka_unit_test(conversion_is_only_for_otp_and_counts_attempts),
        cmocka_unit_test(conversion_round_trips_with_its_ratio_alone),
        cmocka_unit_test(prefix_kinds_follow_the_endpoint),
        cmocka_unit_test(full_record_round_trips_through_json),
        cmocka_unit_test(every_algorithm_round_trips),
        cmocka_unit_test(omitted_optional_fields_take_defaults),
        cmocka_unit_test(lanes_actions_and_block_growth_are_validated),
        cmocka_unit_test(block_max_defaults_to_a_day_when_blocks_grow),
        cmocka_unit_test(invalid_name_is_refused),
        cmocka_unit_test(policy_name_validator_checks_alphabet_and_length),
        cmocka_unit_test(invalid_endpoint_is_refused),
        cmocka_unit_test(invalid_key_is_refused),
        cmocka_unit_test(key_kind_not_sent_to_endpoint_is_refused),
        cmocka_unit_test(device_token_key_is_accepted_on_every_endpoint),
        cmocka_unit_test(invalid_algorithm_is_refused),
        cmocka_unit_test(invalid_limit_is_refused),
        cmocka_unit_test(sliding_log_limit_over_10000_is_refused),
        cmocka_unit_test(invalid_window_is_refused),
        cmocka_unit_test(invalid_block_is_refused),
        cmocka_unit_test(invalid_counts_is_refused),
        cmocka_unit_test(failures_counting_is_refused_on_otp),
        cmocka_unit_test(invalid_fail_is_refused),
        cmocka_unit_test(invalid_mode_is_refused),
        cmocka_unit_test(non_boolean_enabled_is_refused),
        cmocka_unit_test(unknown_field_is_refused_and_named),
        cmocka_unit_test(non_object_policy_is_refused),
        cmocka_unit_test(path_name_allows_body_name_to_be_omitted),
        cmocka_unit_test(path_name_must_match_body_name),
        cmocka_unit_test(invalid_path_name_is_refused),
        cmocka_unit_test(refused_policy_leaves_output_untouched),
        cmocka_unit_test(policy_file_is_read_in_order),
        cmocka_unit_test(policy_file_with_no_policies_is_empty),
        cmocka_unit_test(policy_file_with_duplicate_names_is_refused),
        cmocka_unit_test(policy_file_that_is_not_json_is_refused),
        cmocka_unit_test(policy_file_without_a_policy_list_is_refused),
        cmocka_unit_test(policy_file_names_the_bad_policy_and_field),
        cmocka_unit_test(every_embedded_policy_file_parses),
        cmocka_unit_test(default_policies_match_the_documented_table),
        cmocka_unit_test(policy_set_is_sorted_by_name),
        cmocka_unit_test(policy_set_is_reference_counted),
        cmocka_unit_test(empty_policy_set_is_valid),
        cmocka_unit_test(sets_are_the_same_only_when_every_policy_field_is),
        cmocka_unit_test(enum_names_parse_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
