/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_request: what checks and reports carry beside the identifiers, each
 * refusal naming its field: device tokens (kept as sent, never refused),
 * challenge passes (a nonce's shape or, leniently, true), password
 * fingerprints, a failure's reason and a success's method.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_request.h"
#include "ag_test_request.h"

static void device_tokens_are_kept_as_sent_and_never_refused(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\","
                       "\"device_token\":\"v1.abc\"}";
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_OK);
    assert_string_equal(r.device_token, "v1.abc");
    /* Not a string, empty, or too long: no token, and no refusal. */
    static const char *const odd[] = {"1", "null", "{}", "\"\"", "true"};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        char b[256];
        snprintf(b, sizeof b,
                 "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"device_token\":%s}",
                 odd[i]);
        assert_int_equal(parse(AG_EP_LOGIN, b, &r, err), AG_OK);
        assert_string_equal(r.device_token, "");
    }
    char big[AG_DEVICE_TOKEN_TEXT_MAX + 128];
    int n =
        snprintf(big, sizeof big,
                 "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"device_token\":\"");
    memset(big + n, 'x', AG_DEVICE_TOKEN_TEXT_MAX + 1);
    strcpy(big + n + AG_DEVICE_TOKEN_TEXT_MAX + 1, "\"}");
    assert_int_equal(parse(AG_EP_LOGIN, big, &r, err), AG_OK);
    assert_string_equal(r.device_token, "");
}

/* challenge_passed: a nonce's shape (its authenticity is the service's,
 * test_service_challenge.c), true or false; anything else is refused. */
static void challenge_passed_is_a_nonce_or_a_boolean(void **state)
{
    (void)state;
    const char *bad[] = {
        "\"yes\"",
        "1",
        "{}",
        "\"c1.\"",
        "\"c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"",
        "\"c2.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"",
        "\"c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[160];
        snprintf(
            body, sizeof body,
            "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"challenge_passed\":%s}",
            bad[i]);
        expect_refused(AG_EP_LOGIN, body, "challenge_passed",
                       "must be the challenge_nonce of the answer that asked "
                       "for the challenge, true or false");
    }
    struct ag_request r;
    char err[ERRSZ];
    assert_int_equal(parse(AG_EP_LOGIN,
                           "{\"user\":\"ana\",\"ip\":\"1.2.3.4\","
                           "\"challenge_passed\":true}",
                           &r, err),
                     AG_OK);
    assert_true(r.challenge_passed);
    assert_int_equal(r.pass, AG_PASS_TRUE);
    assert_int_equal(
        parse(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}", &r, err),
        AG_OK);
    assert_false(r.challenge_passed);
    assert_int_equal(r.pass, AG_PASS_NONE);
    /* A nonce's shape: taken, not yet a pass (the service verifies it). */
    const char *nonce = "c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    char body[160];
    snprintf(
        body, sizeof body,
        "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"challenge_passed\":\"%s\"}",
        nonce);
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_OK);
    assert_int_equal(r.pass, AG_PASS_NONCE);
    assert_string_equal(r.pass_nonce, nonce);
    assert_false(r.challenge_passed);
    /* Strict: true is no pass (not a 400: an integration that lets a 4xx
     * through would make an injected true a way past every policy). */
    struct ag_request_opts strict = {.strict_pass = true};
    struct ag_error e;
    const char *vouch = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\","
                        "\"challenge_passed\":true}";
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, vouch, strlen(vouch), &strict, &r, &e),
        AG_OK);
    assert_int_equal(r.pass, AG_PASS_TRUE);
    assert_false(r.challenge_passed);
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, body, strlen(body), &strict, &r, &e),
        AG_OK);
    assert_int_equal(r.pass, AG_PASS_NONCE);
}

/* One rule for null: in every optional field it is the field left out,
 * the same parse; in a required one, "is required". */
static void null_is_an_absent_field_everywhere(void **state)
{
    (void)state;
    static const struct {
        enum ag_endpoint ep;
        int kind; /* 0 check, 1 login report, 2 OTP report */
        const char *base, *field;
    } cases[] = {
        {AG_EP_LOGIN, 0, "\"user\":\"ana\",\"ip\":\"1.2.3.4\"", "device"},
        {AG_EP_LOGIN, 0, "\"user\":\"ana\",\"ip\":\"1.2.3.4\"", "device_token"},
        {AG_EP_LOGIN, 0, "\"user\":\"ana\",\"ip\":\"1.2.3.4\"", "password_fp"},
        {AG_EP_LOGIN, 0, "\"user\":\"ana\",\"ip\":\"1.2.3.4\"",
         "password_breached"},
        {AG_EP_LOGIN, 0, "\"user\":\"ana\",\"ip\":\"1.2.3.4\"",
         "challenge_passed"},
        {AG_EP_LOGIN, 0, "\"user\":\"ana\",\"ip\":\"1.2.3.4\"", "ref"},
        {AG_EP_OTP, 0, "\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\"", "user"},
        {AG_EP_OTP, 0, "\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\"",
         "challenge_passed"},
        {AG_EP_LOGIN, 1,
         "\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"success\":false", "reason"},
        {AG_EP_LOGIN, 1, "\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"success\":true",
         "method"},
        {AG_EP_LOGIN, 1, "\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"success\":true",
         "password_breached"},
        {AG_EP_OTP, 2,
         "\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\",\"verified\":true",
         "ref"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char with[256], without[256];
        snprintf(with, sizeof with, "{%s,\"%s\":null}", cases[i].base,
                 cases[i].field);
        snprintf(without, sizeof without, "{%s}", cases[i].base);
        struct ag_request a, b;
        struct ag_error e;
        int ra, rb;
        if (cases[i].kind == 0) {
            ra =
                ag_request_parse(cases[i].ep, with, strlen(with), NULL, &a, &e);
            rb = ag_request_parse(cases[i].ep, without, strlen(without), NULL,
                                  &b, &e);
        } else if (cases[i].kind == 1) {
            ra = ag_request_parse_report(with, strlen(with), NULL, &a, &e);
            rb =
                ag_request_parse_report(without, strlen(without), NULL, &b, &e);
        } else {
            ra = ag_request_parse_otp_report(with, strlen(with), NULL, &a, &e);
            rb = ag_request_parse_otp_report(without, strlen(without), NULL, &b,
                                             &e);
        }
        if (ra != AG_OK || rb != AG_OK)
            fail_msg("%s: rc %d (%s)", with, ra, e.msg);
        if (memcmp(&a, &b, sizeof a) != 0)
            fail_msg("%s parses unlike %s", with, without);
    }
    /* Required ones: null is a missing field. */
    struct ag_request r;
    struct ag_error e;
    const char *report = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\","
                         "\"success\":null}";
    assert_int_equal(
        ag_request_parse_report(report, strlen(report), NULL, &r, &e),
        AG_EINVAL);
    assert_string_equal(e.field, "success");
    assert_non_null(strstr(e.msg, "is required"));
    const char *otp = "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\","
                      "\"verified\":null}";
    assert_int_equal(
        ag_request_parse_otp_report(otp, strlen(otp), NULL, &r, &e), AG_EINVAL);
    assert_string_equal(e.field, "verified");
    assert_non_null(strstr(e.msg, "is required"));
}

/* ref: kept as sent for the events, printable ASCII without spaces, 1 to
 * 64 bytes; anything else names ref. */
static void ref_is_a_short_printable_string(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    assert_int_equal(parse(AG_EP_LOGIN,
                           "{\"user\":\"ana\",\"ip\":\"1.2.3.4\","
                           "\"ref\":\"u:9f86d081\"}",
                           &r, err),
                     AG_OK);
    assert_string_equal(r.ref, "u:9f86d081");
    const char *bad[] = {"\"\"",
                         "\"a b\"",
                         "\"caf\u00e9\"",
                         "\"tab\\t\"",
                         "7",
                         "true",
                         "{}",
                         "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                         "xxxxxxxxxxxxxxxxx\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[200];
        snprintf(body, sizeof body,
                 "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"ref\":%s}", bad[i]);
        expect_refused(AG_EP_LOGIN, body, "ref", "1 to 64 printable ASCII");
    }
}

/* A check may carry the fingerprint too (password spraying is judged at
 * the check), and only login has one. */
static void login_check_takes_a_password_fp(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    assert_int_equal(parse(AG_EP_LOGIN,
                           "{\"user\":\"ana\",\"ip\":\"1.2.3.4\","
                           "\"password_fp\":\"f00d\"}",
                           &r, err),
                     AG_OK);
    assert_string_equal(r.password_fp, "f00d");
    assert_string_equal(ag_request_value(&r, AG_KEY_PASSWORD_FP), "f00d");
    assert_true(r.have & HAVE(AG_KEY_PASSWORD_FP));
    assert_int_equal(parse(AG_EP_LOGIN,
                           "{\"user\":\"ana\",\"ip\":\"1.2.3.4\","
                           "\"password_fp\":\"\"}",
                           &r, err),
                     AG_EINVAL);
    assert_string_equal(last.field, "password_fp");
    assert_int_equal(parse(AG_EP_OTP,
                           "{\"phone\":\"+447911123456\",\"ip\":\"1.2.3.4\","
                           "\"password_fp\":\"f00d\"}",
                           &r, err),
                     AG_OK);
    assert_false(r.have & HAVE(AG_KEY_PASSWORD_FP));
    assert_null(ag_request_value(&r, AG_KEY_PASSWORD_FP));
    assert_string_equal(ag_request_value(&r, AG_KEY_SITE), "site");
}

/* A failure says why it failed; anything else, or a reason on a success,
 * is refused naming reason. */
static void report_reason_is_one_of_three_on_a_failure(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    char b[256];
    const char *base = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",";
    snprintf(b, sizeof b, "%s\"success\":false}", base);
    assert_int_equal(report_parse(b, strlen(b), &r, err), AG_OK);
    assert_int_equal(r.reason, AG_REASON_BAD_PASSWORD);
    for (int i = 0; i < AG_REASON_COUNT; i++) {
        snprintf(b, sizeof b, "%s\"success\":false,\"reason\":\"%s\"}", base,
                 ag_reason_name((enum ag_reason)i));
        assert_int_equal(report_parse(b, strlen(b), &r, err), AG_OK);
        assert_int_equal(r.reason, i);
    }
    assert_string_equal(ag_reason_name(AG_REASON_UNKNOWN_USER), "unknown_user");
    static const char *const bad[] = {"\"nope\"", "1", "\"\"", "[]",
                                      "\"Bad_password\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(b, sizeof b, "%s\"success\":false,\"reason\":%s}", base,
                 bad[i]);
        assert_int_equal(report_parse(b, strlen(b), &r, err), AG_EINVAL);
        assert_string_equal(last.field, "reason");
    }
    snprintf(b, sizeof b, "%s\"success\":true,\"reason\":\"unknown_user\"}",
             base);
    assert_int_equal(report_parse(b, strlen(b), &r, err), AG_EINVAL);
    assert_string_equal(last.field, "reason");
    snprintf(b, sizeof b, "%s\"success\":true,\"reason\":null}", base);
    assert_int_equal(report_parse(b, strlen(b), &r, err), AG_OK);
}

/* A report says how the login went through: a password (the default) or
 * the application's account recovery, which only a success can be;
 * anything else is refused naming method. */
static void report_method_is_password_or_recovery_on_a_success(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    char b[256];
    const char *base = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",";
    static const struct {
        const char *tail;
        enum ag_method want;
    } ok[] = {
        {"\"success\":true}", AG_METHOD_PASSWORD},
        {"\"success\":false}", AG_METHOD_PASSWORD},
        {"\"success\":true,\"method\":null}", AG_METHOD_PASSWORD},
        {"\"success\":true,\"method\":\"password\"}", AG_METHOD_PASSWORD},
        {"\"success\":false,\"method\":\"password\"}", AG_METHOD_PASSWORD},
        {"\"success\":true,\"method\":\"recovery\"}", AG_METHOD_RECOVERY},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        snprintf(b, sizeof b, "%s%s", base, ok[i].tail);
        assert_int_equal(report_parse(b, strlen(b), &r, err), AG_OK);
        assert_int_equal(r.method, ok[i].want);
    }
    assert_string_equal(ag_method_name(AG_METHOD_RECOVERY), "recovery");
    static const char *const bad[] = {
        "\"success\":true,\"method\":\"Recovery\"}",
        "\"success\":true,\"method\":\"\"}",
        "\"success\":true,\"method\":1}",
        "\"success\":true,\"method\":[\"recovery\"]}",
        "\"success\":true,\"method\":\"sms\"}",
        "\"success\":false,\"method\":\"recovery\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(b, sizeof b, "%s%s", base, bad[i]);
        assert_int_equal(report_parse(b, strlen(b), &r, err), AG_EINVAL);
        assert_string_equal(last.field, "method");
        assert_non_null(strstr(err, "recovery"));
    }
    /* A check is no report: method there is an unknown field. */
    snprintf(b, sizeof b, "%s\"method\":\"sms\"}", base);
    assert_int_equal(parse(AG_EP_LOGIN, b, &r, err), AG_OK);
}

static void password_fp_is_a_short_string(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *ok = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"success\":false,"
                     "\"password_fp\":\"f00d\"}";
    assert_int_equal(report_parse(ok, strlen(ok), &r, err), AG_OK);
    assert_string_equal(r.password_fp, "f00d");
    static const char *const bad[] = {"1", "\"\"", "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char b[256];
        snprintf(b, sizeof b,
                 "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"success\":false,"
                 "\"password_fp\":%s}",
                 bad[i]);
        assert_int_equal(report_parse(b, strlen(b), &r, err), AG_EINVAL);
        assert_string_equal(last.field, "password_fp");
    }
    char big[400];
    int n = snprintf(big, sizeof big,
                     "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"success\":false,"
                     "\"password_fp\":\"");
    memset(big + n, 'f', AG_PASSWORD_FP_MAX + 1);
    strcpy(big + n + AG_PASSWORD_FP_MAX + 1, "\"}");
    assert_int_equal(report_parse(big, strlen(big), &r, err), AG_EINVAL);
    assert_non_null(strstr(err, "1 to 128 bytes"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_tokens_are_kept_as_sent_and_never_refused),
        cmocka_unit_test(null_is_an_absent_field_everywhere),
        cmocka_unit_test(ref_is_a_short_printable_string),
        cmocka_unit_test(challenge_passed_is_a_nonce_or_a_boolean),
        cmocka_unit_test(password_fp_is_a_short_string),
        cmocka_unit_test(login_check_takes_a_password_fp),
        cmocka_unit_test(report_reason_is_one_of_three_on_a_failure),
        cmocka_unit_test(report_method_is_password_or_recovery_on_a_success),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
