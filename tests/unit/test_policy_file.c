/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_policy: policy files (a list read in order, refused whole with the
 * bad policy and field named) and the compiled-in defaults, which must
 * parse and say what docs/policies.md's table says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_policy.h"

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
        {"login.password_spray",
         AG_EP_LOGIN,
         1,
         {AG_KEY_PASSWORD_FP},
         10,
         3600,
         AG_ALG_DISTINCT,
         AG_COUNTS_FAILURES,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_CHALLENGE},
        {"login.breached_password",
         AG_EP_LOGIN,
         1,
         {AG_KEY_USER},
         1,
         1,
         AG_ALG_SIGNAL,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_UNTRUSTED,
         AG_ACTION_CHALLENGE},
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
        {"otp_verify.phone_ceiling",
         AG_EP_OTP_VERIFY,
         1,
         {AG_KEY_PHONE},
         10,
         900,
         AG_ALG_SLIDING_LOG,
         AG_COUNTS_ATTEMPTS,
         0,
         1,
         0,
         AG_LANE_ALL,
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
        {"login.site_failures",
         AG_EP_LOGIN,
         1,
         {AG_KEY_SITE},
         100,
         60,
         AG_ALG_SURGE,
         AG_COUNTS_FAILURES,
         600,
         1,
         600,
         AG_LANE_UNTRUSTED,
         AG_ACTION_CHALLENGE},
        {"login.site_unknown_users",
         AG_EP_LOGIN,
         1,
         {AG_KEY_SITE},
         30,
         60,
         AG_ALG_SURGE,
         AG_COUNTS_FAILURES,
         600,
         1,
         600,
         AG_LANE_UNTRUSTED,
         AG_ACTION_CHALLENGE},
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
        /* The shields: 5 times a week's typical minute; the unknown
         * users' one counts only those, the spray policy every reason
         * but those (issue 36). */
        bool surge = p->algorithm == AG_ALG_SURGE;
        assert_int_equal(p->factor_milli, surge ? 5000 : 0);
        assert_int_equal(p->baseline_s, surge ? 604800 : 0);
        unsigned reasons = 0;
        if (strcmp(p->name, "login.site_unknown_users") == 0)
            reasons = 1u << AG_REASON_UNKNOWN_USER;
        if (strcmp(p->name, "login.password_spray") == 0)
            reasons = 1u << AG_REASON_BAD_PASSWORD |
                      1u << AG_REASON_SECOND_FACTOR_FAILED;
        assert_int_equal(p->reasons, reasons);
        /* The one signal policy trips on a breached password; the
         * others' signal field is 0 and unread. */
        if (p->algorithm == AG_ALG_SIGNAL)
            assert_int_equal(p->signal, AG_SIGNAL_PASSWORD_BREACHED);
    }
    free(ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policy_file_is_read_in_order),
        cmocka_unit_test(policy_file_with_no_policies_is_empty),
        cmocka_unit_test(policy_file_with_duplicate_names_is_refused),
        cmocka_unit_test(policy_file_that_is_not_json_is_refused),
        cmocka_unit_test(policy_file_without_a_policy_list_is_refused),
        cmocka_unit_test(policy_file_names_the_bad_policy_and_field),
        cmocka_unit_test(every_embedded_policy_file_parses),
        cmocka_unit_test(default_policies_match_the_documented_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
