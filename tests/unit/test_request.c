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

#define ERRSZ 256

#define HAVE(kind) (1u << (kind))

static int parse(enum ag_endpoint ep, const char *body, struct ag_request *r,
                 char *err)
{
    err[0] = '\0';
    return ag_request_parse(ep, body, strlen(body), r, err, ERRSZ);
}

/* Expects body to be refused with a message that starts with field and a
 * space, and holds want if want is not NULL. */
static void expect_refused(enum ag_endpoint ep, const char *body,
                           const char *field, const char *want)
{
    struct ag_request r;
    char err[ERRSZ];
    int rc = parse(ep, body, &r, err);
    if (rc != AG_EINVAL)
        fail_msg("%s: rc %d, want AG_EINVAL", body, rc);
    size_t n = strlen(field);
    if (strncmp(err, field, n) != 0 || err[n] != ' ')
        fail_msg("%s: message does not start with '%s ': %s", body, field, err);
    if (want && !strstr(err, want))
        fail_msg("%s: message lacks '%s': %s", body, want, err);
}

static void login_body_is_normalised(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\" ANA@Example.COM \","
                       "\"ip\":\"::ffff:10.0.0.1\",\"device\":\" Dev-1 \"}";
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_OK);
    assert_int_equal(r.endpoint, AG_EP_LOGIN);
    assert_int_equal(r.have,
                     HAVE(AG_KEY_USER) | HAVE(AG_KEY_IP) | HAVE(AG_KEY_DEVICE));
    assert_string_equal(ag_request_value(&r, AG_KEY_USER), "ana@example.com");
    assert_string_equal(ag_request_value(&r, AG_KEY_IP), "10.0.0.1");
    assert_int_equal(r.ip.family, AF_INET);
    assert_string_equal(ag_request_value(&r, AG_KEY_DEVICE), "Dev-1");
    assert_null(ag_request_value(&r, AG_KEY_PHONE));
}

static void login_device_is_optional(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}";
    assert_int_equal(parse(AG_EP_LOGIN, body, &r, err), AG_OK);
    assert_int_equal(r.have, HAVE(AG_KEY_USER) | HAVE(AG_KEY_IP));
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
                     HAVE(AG_KEY_PHONE) | HAVE(AG_KEY_IP) | HAVE(AG_KEY_USER));
    assert_string_equal(ag_request_value(&r, AG_KEY_PHONE), "+48600100200");
    assert_string_equal(ag_request_value(&r, AG_KEY_IP), "2001:db8::1");
    assert_int_equal(r.ip.family, AF_INET6);
    assert_string_equal(ag_request_value(&r, AG_KEY_USER), "bob");
    assert_null(ag_request_value(&r, AG_KEY_DEVICE));
}

static void otp_user_is_optional(void **state)
{
    (void)state;
    struct ag_request r;
    char err[ERRSZ];
    const char *body = "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\"}";
    assert_int_equal(parse(AG_EP_OTP, body, &r, err), AG_OK);
    assert_int_equal(r.have, HAVE(AG_KEY_PHONE) | HAVE(AG_KEY_IP));
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
    assert_int_equal(r.have, HAVE(AG_KEY_USER) | HAVE(AG_KEY_IP));
    assert_int_equal(parse(AG_EP_OTP,
                           "{\"phone\":\"+48600100200\",\"ip\":\"1.2.3.4\","
                           "\"user\":null}",
                           &r, err),
                     AG_OK);
    assert_int_equal(r.have, HAVE(AG_KEY_PHONE) | HAVE(AG_KEY_IP));
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
    assert_int_equal(r.have, HAVE(AG_KEY_USER) | HAVE(AG_KEY_IP));
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
    assert_int_equal(ag_request_parse(AG_EP_LOGIN, body, len, &r, err, ERRSZ),
                     AG_OK);
    assert_string_equal(r.user, "ana");
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, body, strlen(body), &r, err, ERRSZ),
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
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, b, AG_BODY_MAX, &r, err, ERRSZ), AG_OK);
    free(b);
    b = padded_body(AG_BODY_MAX + 1);
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, b, AG_BODY_MAX + 1, &r, err, ERRSZ),
        AG_EINVAL);
    assert_int_equal(strncmp(err, "body ", 5), 0);
    free(b);
}

static void message_is_cut_to_the_error_buffer(void **state)
{
    (void)state;
    struct ag_request r;
    char err[8];
    memset(err, 'Z', sizeof err);
    const char *body = "{\"ip\":\"1.2.3.4\"}";
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, body, strlen(body), &r, err, 6),
        AG_EINVAL);
    assert_string_equal(err, "user ");
    assert_int_equal(err[6], 'Z');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(login_body_is_normalised),
        cmocka_unit_test(login_device_is_optional),
        cmocka_unit_test(otp_body_is_normalised),
        cmocka_unit_test(otp_user_is_optional),
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
        cmocka_unit_test(message_is_cut_to_the_error_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
