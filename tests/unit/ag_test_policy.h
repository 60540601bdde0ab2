/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the ag_policy unit tests that build one record from
 * JSON: a login and an OTP base record, a base with one field set or
 * removed (caller owns the result; free with json_decref), and the checks
 * that such a record is refused with the field named, or accepted. The
 * base records are valid; each test changes what it is about. Include
 * after <cmocka.h>.
 */
#ifndef AG_TEST_POLICY_H
#define AG_TEST_POLICY_H

#include <string.h>

#include <jansson.h>

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

static inline json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!v)
        fail_msg("test JSON does not parse (%s): %s", jerr.text, text);
    return v;
}

/* base with field set to the JSON text value, or removed if value is NULL;
 * the caller owns the result. */
static inline json_t *with_field(const char *base, const char *field,
                                 const char *value)
{
    json_t *o = load(base);
    if (value)
        assert_int_equal(json_object_set_new(o, field, load(value)), 0);
    else
        assert_int_equal(json_object_del(o, field), 0);
    return o;
}

static inline void expect_refused(const char *base, const char *field,
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
static inline void expect_refused_saying(const char *base, const char *field,
                                         const char *value,
                                         const char *want_field,
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
        fail_msg("%s=%s: message lacks '%s': %s", field,
                 value ? value : "(absent)", want, err.msg);
}

static inline void expect_field_refused(const char *base, const char *field,
                                        const char *value)
{
    expect_refused(base, field, value, field);
}

static inline void expect_accepted(const char *base, const char *field,
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

#endif
