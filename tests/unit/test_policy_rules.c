/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_policy: the rules that tie a record's fields together. Which key
 * kinds each endpoint sends; what each algorithm needs (sliding_log and
 * distinct keep at most 10 000 members, distinct never keys on what it
 * counts, consecutive counts failures, conversion is for OTPs and needs
 * its min_ratio, which no other algorithm takes); and the lanes, actions
 * and growing blocks of escalation.
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

/* login.password_spray's shape: distinct users per password fingerprint,
 * charged by failures. The fingerprint is a login field only, and the
 * user is what the set counts, so it is no part of the key. */
static void a_distinct_policy_may_key_on_password_fp(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(distinct_base, "key", "[\"password_fp\"]", &p);
    assert_int_equal(p.nkeys, 1);
    assert_int_equal(p.key[0], AG_KEY_PASSWORD_FP);
    json_t *o = with_field(distinct_base, "key", "[\"password_fp\"]");
    json_object_set_new(o, "counts", json_string("failures"));
    json_object_set_new(o, "action", json_string("challenge"));
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
    assert_int_equal(p.counts, AG_COUNTS_FAILURES);
    json_t *out = ag_policy_to_json(&p);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(out, "key"), 0)),
        "password_fp");
    struct ag_policy back;
    assert_int_equal(ag_policy_from_json(out, NULL, &back, &err), AG_OK);
    assert_memory_equal(&back, &p, sizeof p);
    json_decref(out);
    expect_field_refused(distinct_base, "key", "[\"password_fp\",\"user\"]");
    expect_refused_saying(otp_base, "key", "[\"password_fp\"]", "key",
                          "not sent to the otp endpoint");
    /* site, the whole endpoint, is every endpoint's. */
    expect_accepted(distinct_base, "key", "[\"site\"]", &p);
    assert_int_equal(p.key[0], AG_KEY_SITE);
    expect_accepted(otp_base, "key", "[\"site\"]", &p);
    assert_int_equal(p.key[0], AG_KEY_SITE);
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
        cmocka_unit_test(a_distinct_policy_may_key_on_password_fp),
        cmocka_unit_test(consecutive_needs_counts_failures),
        cmocka_unit_test(consecutive_round_trips),
        cmocka_unit_test(conversion_needs_min_ratio_in_range),
        cmocka_unit_test(min_ratio_is_refused_for_other_algorithms),
        cmocka_unit_test(conversion_is_only_for_otp_and_counts_attempts),
        cmocka_unit_test(conversion_round_trips_with_its_ratio_alone),
        cmocka_unit_test(prefix_kinds_follow_the_endpoint),
        cmocka_unit_test(lanes_actions_and_block_growth_are_validated),
        cmocka_unit_test(block_max_defaults_to_a_day_when_blocks_grow),
        cmocka_unit_test(key_kind_not_sent_to_endpoint_is_refused),
        cmocka_unit_test(device_token_key_is_accepted_on_every_endpoint),
        cmocka_unit_test(sliding_log_limit_over_10000_is_refused),
        cmocka_unit_test(failures_counting_is_refused_on_otp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
