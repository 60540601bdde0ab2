/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_request: check bodies for /check-login and /check-otp become
 * normalised identifiers, and every refusal names the field at fault.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_request.h"
#include "ag_test_request.h"

static void login_body_is_normalised(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\" ANA@Example.COM \","
                       "\"ip\":\"::ffff:10.0.0.1\",\"device\":\" Dev-1 \"}";
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_OK);
    assert_int_equal(r.endpoint, AG_EP_LOGIN);
    assert_int_equal(r.have, HAVE(AG_KEY_SITE) | HAVE(AG_KEY_USER) |
                                 HAVE(AG_KEY_IP) | HAVE(AG_KEY_DEVICE) |
                                 HAVE(AG_KEY_IP_PREFIX));
    assert_string_equal(ag_request_value(&r, AG_KEY_USER), "ana@example.com");
    assert_string_equal(ag_request_value(&r, AG_KEY_IP), "10.0.0.1");
    assert_int_equal(r.ip.family, AF_INET);
    assert_string_equal(ag_request_value(&r, AG_KEY_DEVICE), "Dev-1");
    assert_string_equal(ag_request_value(&r, AG_KEY_IP_PREFIX), "10.0.0.0/24");
    assert_null(ag_request_value(&r, AG_KEY_PHONE));
    assert_null(ag_request_value(&r, AG_KEY_PHONE_PREFIX));
}

static void login_device_is_optional(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}";
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_OK);
    assert_int_equal(r.have, HAVE(AG_KEY_SITE) | HAVE(AG_KEY_USER) |
                                 HAVE(AG_KEY_IP) | HAVE(AG_KEY_IP_PREFIX));
    assert_null(ag_request_value(&r, AG_KEY_DEVICE));
}

static void otp_body_is_normalised(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body =
        "{\"phone\":\"+48 600-100-200\",\"ip\":\"2001:DB8::0:1\","
        "\"user\":\"Bob\"}";
    assert_int_equal(parse(AG_EP_OTP, body, &r, err), AG_OK);
    assert_int_equal(r.endpoint, AG_EP_OTP);
    assert_int_equal(r.have,
                     HAVE(AG_KEY_SITE) | HAVE(AG_KEY_PHONE) | HAVE(AG_KEY_IP) |
                         HAVE(AG_KEY_USER) | HAVE(AG_KEY_IP_PREFIX) |
                         HAVE(AG_KEY_PHONE_PREFIX) | HAVE(AG_KEY_COUNTRY));
    assert_string_equal(ag_request_value(&r, AG_KEY_PHONE), "+48600100200");
    /* The ip key of an IPv6 address is its /64, its ip_prefix the /48. */
    assert_string_equal(ag_request_value(&r, AG_KEY_IP), "2001:db8::/64");
    assert_string_equal(r.ip.text, "2001:db8::1");
    assert_int_equal(r.ip.family, AF_INET6);
    assert_string_equal(ag_request_value(&r, AG_KEY_USER), "bob");
    assert_string_equal(ag_request_value(&r, AG_KEY_IP_PREFIX),
                        "2001:db8::/48");
    /* The default prefix: '+' and 7 digits. */
    assert_string_equal(ag_request_value(&r, AG_KEY_PHONE_PREFIX), "+4860010");
    assert_null(ag_request_value(&r, AG_KEY_DEVICE));
}

static void ip_prefix_lengths_come_from_the_options(void **state)
{
    (void)state;
    struct ag_request r;
    struct ag_error err;
    const struct ag_request_opts opts = {
        .ipv6_ip_prefix = 56, .ipv6_group_prefix = 32, .ipv4_group_prefix = 16};
    const char *v6 =
        "{\"phone\":\"+48600100200\",\"ip\":\"2001:db8:1:2ff::9\"}";
    assert_int_equal(
        ag_request_parse(AG_EP_OTP, v6, strlen(v6), &opts, &r, &err), AG_OK);
    assert_string_equal(ag_request_value(&r, AG_KEY_IP), "2001:db8:1:200::/56");
    assert_string_equal(ag_request_value(&r, AG_KEY_IP_PREFIX),
                        "2001:db8::/32");
    const char *v4 = "{\"phone\":\"+48600100200\",\"ip\":\"203.0.113.9\"}";
    assert_int_equal(
        ag_request_parse(AG_EP_OTP, v4, strlen(v4), &opts, &r, &err), AG_OK);
    /* IPv4 is counted per address whatever the options. */
    assert_string_equal(ag_request_value(&r, AG_KEY_IP), "203.0.113.9");
    assert_string_equal(ag_request_value(&r, AG_KEY_IP_PREFIX), "203.0.0.0/16");
}

static void otp_phone_gives_its_country_calling_code(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    assert_int_equal(parse(AG_EP_OTP,
                           "{\"phone\":\"+44 7911 123456\",\"ip\":\"1.2.3.4\"}",
                           &r, err),
                     AG_OK);
    assert_string_equal(r.country, "+44");
    assert_string_equal(ag_request_value(&r, AG_KEY_COUNTRY), "+44");
    /* A number under no assigned calling code is refused, naming phone. */
    assert_int_equal(parse(AG_EP_OTP,
                           "{\"phone\":\"+2801234567\",\"ip\":\"1.2.3.4\"}", &r,
                           err),
                     AG_EINVAL);
    assert_non_null(strstr(err, "phone has no assigned country calling code"));
}

static void otp_report_needs_a_boolean_verified(void **state)
{
    (void)state;
    struct ag_request r;
    struct ag_error e;
    const char *ok = "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\","
                     "\"verified\":true}";
    assert_int_equal(ag_request_parse_otp_report(ok, strlen(ok), NULL, &r, &e),
                     AG_OK);
    assert_true(r.verified);
    assert_int_equal(r.endpoint, AG_EP_OTP);
    assert_string_equal(r.country, "+48");
    static const char *const bad[][2] = {
        {"{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\"}", "verified"},
        {"{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\",\"verified\":1}",
         "verified"},
        {"{\"ip\":\"1.2.3.4\",\"verified\":true}", "phone"},
        {"{\"phone\":\"+48600100200\",\"verified\":false}", "ip"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ag_request_parse_otp_report(
                             bad[i][0], strlen(bad[i][0]), NULL, &r, &e),
                         AG_EINVAL);
        assert_string_equal(e.field, bad[i][1]);
    }
}

static void otp_user_is_optional(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\"}";
    assert_int_equal(parse(AG_EP_OTP, body, &r, err), AG_OK);
    assert_int_equal(r.have, HAVE(AG_KEY_SITE) | HAVE(AG_KEY_PHONE) |
                                 HAVE(AG_KEY_IP) | HAVE(AG_KEY_IP_PREFIX) |
                                 HAVE(AG_KEY_PHONE_PREFIX) |
                                 HAVE(AG_KEY_COUNTRY));
    assert_null(ag_request_value(&r, AG_KEY_USER));
}

static void missing_required_field_is_named(void **state)
{
    (void)state;
    expect_refused(AG_EP_LOGIN, "{\"ip\":\"1.2.3.4\"}", "user", "required");
    expect_refused(AG_EP_LOGIN, "{\"user\":\"ana\"}", "ip", "required");
    expect_refused(AG_EP_LOGIN, "{}", "user", "required");
    expect_refused(AG_EP_OTP, "{\"ip\":\"1.2.3.4\"}", "phone", "required");
    expect_refused(AG_EP_OTP, "{\"phone\":\"+48600100200\"}", "ip", "required");
    /* Login does not accept a phone in place of the user. */
    expect_refused(AG_EP_LOGIN,
                   "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\"}", "user",
                   "required");
}

static void non_string_field_is_named(void **state)
{
    (void)state;
    expect_refused(AG_EP_LOGIN, "{\"user\":5,\"ip\":\"1.2.3.4\"}", "user",
                   "string");
    expect_refused(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":true}", "ip",
                   "string");
    expect_refused(AG_EP_LOGIN,
                   "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"device\":[]}",
                   "device", "string");
    expect_refused(AG_EP_OTP, "{\"phone\":{},\"ip\":\"1.2.3.4\"}", "phone",
                   "string");
    expect_refused(AG_EP_OTP, "{\"phone\":48600100200,\"ip\":\"1.2.3.4\"}",
                   "phone", "string");
    expect_refused(
        AG_EP_OTP,
        "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\",\"user\":1.5}", "user",
        "string");
}

static void invalid_field_value_is_named(void **state)
{
    (void)state;
    expect_refused(AG_EP_LOGIN, "{\"user\":\"  \",\"ip\":\"1.2.3.4\"}", "user",
                   "empty");
    expect_refused(AG_EP_LOGIN, "{\"user\":\"a\\u0001b\",\"ip\":\"1.2.3.4\"}",
                   "user", NULL);
    expect_refused(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"1.2.3\"}", "ip",
                   NULL);
    expect_refused(AG_EP_LOGIN,
                   "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"device\":\"\"}",
                   "device", NULL);
    expect_refused(AG_EP_OTP, "{\"phone\":\"12345\",\"ip\":\"1.2.3.4\"}",
                   "phone", NULL);
    expect_refused(AG_EP_OTP, "{\"phone\":\"+48600100200\",\"ip\":\"x\"}", "ip",
                   NULL);
    expect_refused(
        AG_EP_OTP,
        "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\",\"user\":\" \"}",
        "user", NULL);
}

static void null_is_treated_as_absent(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    assert_int_equal(
        parse(AG_EP_LOGIN,
              "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"device\":null}", &r, err),
        AG_OK);
    assert_int_equal(r.have, HAVE(AG_KEY_SITE) | HAVE(AG_KEY_USER) |
                                 HAVE(AG_KEY_IP) | HAVE(AG_KEY_IP_PREFIX));
    assert_int_equal(parse(AG_EP_OTP,
                           "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\","
                           "\"user\":null}",
                           &r, err),
                     AG_OK);
    assert_int_equal(r.have, HAVE(AG_KEY_SITE) | HAVE(AG_KEY_PHONE) |
                                 HAVE(AG_KEY_IP) | HAVE(AG_KEY_IP_PREFIX) |
                                 HAVE(AG_KEY_PHONE_PREFIX) |
                                 HAVE(AG_KEY_COUNTRY));
    expect_refused(AG_EP_LOGIN, "{\"user\":null,\"ip\":\"1.2.3.4\"}", "user",
                   "required");
    expect_refused(AG_EP_OTP, "{\"phone\":\"+48600100200\",\"ip\":null}", "ip",
                   "required");
}

static void malformed_json_names_line_and_column(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\"ana\",\n  \"ip\": }";
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_EINVAL);
    assert_int_equal(strncmp(err, "body ", 5), 0);
    assert_non_null(strstr(err, "line 2"));
    assert_non_null(strstr(err, "column "));
}

static void truncated_and_empty_bodies_are_refused(void **state)
{
    (void)state;
    expect_refused(AG_EP_LOGIN, "{\"user\":\"ana\"", "body", "line");
    expect_refused(AG_EP_LOGIN, "", "body", NULL);
    expect_refused(AG_EP_OTP, "{\"phone\":\"+4860\xff\"}", "body", NULL);
    /* A NUL inside a string never reaches the identifier checks. */
    expect_refused(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"1.2.3.4\\u0000x\"}",
                   "body", NULL);
}

static void non_object_body_is_refused(void **state)
{
    (void)state;
    expect_refused(AG_EP_LOGIN, "[{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}]",
                   "body", "object");
    expect_refused(AG_EP_OTP, "[]", "body", "object");
    expect_refused(AG_EP_LOGIN, "\"user\"", "body", NULL);
    expect_refused(AG_EP_LOGIN, "42", "body", NULL);
    expect_refused(AG_EP_LOGIN, "null", "body", NULL);
}

static void duplicate_keys_are_refused(void **state)
{
    (void)state;
    expect_refused(AG_EP_LOGIN,
                   "{\"user\":\"ana\",\"user\":\"bob\",\"ip\":\"1.2.3.4\"}",
                   "body", "duplicate");
    expect_refused(AG_EP_OTP,
                   "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\","
                   "\"ip\":\"1.2.3.4\"}",
                   "body", "duplicate");
}

static void unknown_fields_are_ignored(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"extra\":"
                       "{\"nested\":[1,2,null]},\"phone\":\"+48600100200\","
                       "\"v\":2}";
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_OK);
    /* "phone" is not a login field, so it is not read. */
    assert_int_equal(r.have, HAVE(AG_KEY_SITE) | HAVE(AG_KEY_USER) |
                                 HAVE(AG_KEY_IP) | HAVE(AG_KEY_IP_PREFIX));
    assert_null(ag_request_value(&r, AG_KEY_PHONE));
    /* Nor is "device" an otp field, even when it is invalid. */
    body = "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\",\"device\":5}";
    assert_int_equal(parse(AG_EP_OTP, body, &r, err), AG_OK);
    assert_null(ag_request_value(&r, AG_KEY_DEVICE));
}

static void only_len_bytes_of_body_are_read(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}trailing junk";
    size_t len = strlen("{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}");
    assert_int_equal(req_parse(AG_EP_LOGIN, body, len, &r, err), AG_OK);
    assert_string_equal(r.user, "ana");
    assert_int_equal(req_parse(AG_EP_LOGIN, body, strlen(body), &r, err),
                     AG_EINVAL);
}

/* Builds a valid login body padded with an unknown field to exactly len
 * bytes; the caller frees it. */
static char *padded_body(size_t len)
{
    const char *head = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"pad\":\"";
    const char *tail = "\"}";
    size_t fixed = strlen(head) + strlen(tail);
    assert_true(len > fixed);
    char *b = malloc(len + 1);
    assert_non_null(b);
    strcpy(b, head);
    memset(b + strlen(head), 'x', len - fixed);
    strcpy(b + len - strlen(tail), tail);
    return b;
}

static void body_of_64_kib_is_accepted_and_larger_refused(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    char *b = padded_body(AG_BODY_MAX);
    assert_int_equal(strlen(b), AG_BODY_MAX);
    assert_int_equal(req_parse(AG_EP_LOGIN, b, AG_BODY_MAX, &r, err), AG_OK);
    free(b);
    b = padded_body(AG_BODY_MAX + 1);
    assert_int_equal(req_parse(AG_EP_LOGIN, b, AG_BODY_MAX + 1, &r, err),
                     AG_EINVAL);
    assert_int_equal(strncmp(err, "body ", 5), 0);
    free(b);
}

static void refusal_names_its_field_apart_from_the_sentence(void **state)
{
    (void)state;
    struct ag_request r;
    struct ag_error e;
    memset(&e, 'Z', sizeof e);
    const char *body = "{\"user\":\"ana\",\"ip\":\"1.2.3\"}";
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, body, strlen(body), NULL, &r, &e),
        AG_EINVAL);
    assert_int_equal(e.code, AG_EINVAL);
    assert_string_equal(e.field, "ip");
    assert_string_equal(e.msg, "ip is not a valid IPv4 or IPv6 address");
}

static void report_needs_a_boolean_success(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ] = "";
    const char *ok = "{\"user\":\"Ana\",\"ip\":\"1.2.3.4\",\"success\":false}";
    assert_int_equal(report_parse(ok, strlen(ok), &r, err), AG_OK);
    assert_int_equal(r.endpoint, AG_EP_LOGIN);
    assert_false(r.success);
    assert_string_equal(r.user, "ana");
    const char *yes = "{\"user\":\"a\",\"ip\":\"1.2.3.4\",\"success\":true}";
    assert_int_equal(report_parse(yes, strlen(yes), &r, err), AG_OK);
    assert_true(r.success);
    const char *bad[] = {
        "{\"user\":\"a\",\"ip\":\"1.2.3.4\"}",
        "{\"user\":\"a\",\"ip\":\"1.2.3.4\",\"success\":\"false\"}",
        "{\"user\":\"a\",\"ip\":\"1.2.3.4\",\"success\":0}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(report_parse(bad[i], strlen(bad[i]), &r, err),
                         AG_EINVAL);
        assert_int_equal(strncmp(err, "success ", 8), 0);
    }
    /* The login fields are checked first, as on /check-login. */
    const char *no_user = "{\"ip\":\"1.2.3.4\",\"success\":true}";
    assert_int_equal(report_parse(no_user, strlen(no_user), &r, err),
                     AG_EINVAL);
    assert_int_equal(strncmp(err, "user ", 5), 0);
}

static void otp_verify_reads_the_otp_fields(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    assert_int_equal(
        parse(AG_EP_OTP_VERIFY,
              "{\"phone\":\"+1 (415) 555-0100\",\"ip\":\"1.2.3.4\"}", &r, err),
        AG_OK);
    assert_int_equal(r.endpoint, AG_EP_OTP_VERIFY);
    assert_string_equal(r.phone, "+14155550100");
    expect_refused(AG_EP_OTP_VERIFY, "{\"ip\":\"1.2.3.4\"}", "phone",
                   "required");
}

static void phone_prefix_length_follows_the_options(void **state)
{
    (void)state;
    struct ag_request r;
    const char *body = "{\"phone\":\"+447911123456\",\"ip\":\"1.2.3.4\"}";
    struct ag_request_opts opts = {.phone_prefix_digits = 4};
    assert_int_equal(
        ag_request_parse(AG_EP_OTP, body, strlen(body), &opts, &r, &last),
        AG_OK);
    assert_string_equal(ag_request_value(&r, AG_KEY_PHONE_PREFIX), "+4479");
    opts.phone_prefix_digits = 15;
    assert_int_equal(
        ag_request_parse(AG_EP_OTP, body, strlen(body), &opts, &r, &last),
        AG_OK);
    assert_string_equal(ag_request_value(&r, AG_KEY_PHONE_PREFIX),
                        "+447911123456");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(report_needs_a_boolean_success),
        cmocka_unit_test(otp_verify_reads_the_otp_fields),
        cmocka_unit_test(phone_prefix_length_follows_the_options),
        cmocka_unit_test(login_body_is_normalised),
        cmocka_unit_test(login_device_is_optional),
        cmocka_unit_test(otp_body_is_normalised),
        cmocka_unit_test(ip_prefix_lengths_come_from_the_options),
        cmocka_unit_test(otp_user_is_optional),
        cmocka_unit_test(otp_report_needs_a_boolean_verified),
        cmocka_unit_test(otp_phone_gives_its_country_calling_code),
        cmocka_unit_test(missing_required_field_is_named),
        cmocka_unit_test(non_string_field_is_named),
        cmocka_unit_test(invalid_field_value_is_named),
        cmocka_unit_test(null_is_treated_as_absent),
        cmocka_unit_test(malformed_json_names_line_and_column),
        cmocka_unit_test(truncated_and_empty_bodies_are_refused),
        cmocka_unit_test(non_object_body_is_refused),
        cmocka_unit_test(duplicate_keys_are_refused),
        cmocka_unit_test(unknown_fields_are_ignored),
        cmocka_unit_test(only_len_bytes_of_body_are_read),
        cmocka_unit_test(body_of_64_kib_is_accepted_and_larger_refused),
        cmocka_unit_test(refusal_names_its_field_apart_from_the_sentence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
