/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What test_request.c and test_request_fields.c share: ag_request's parses
 * as the tests read them (the message, and the field it names, kept from
 * the last call) and expect_refused. Included by one test file each.
 */
#ifndef AG_TEST_REQUEST_H
#define AG_TEST_REQUEST_H

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_request.h"

#define ERRSZ AG_ERROR_MSG_MAX

/* The library's refusals as the tests read them: the message, and the
 * field it names, kept from the last call. */
static struct ag_error last;

static inline int req_parse(enum ag_endpoint ep, const char *body, size_t len,
                            struct ag_request *r, char *err)
{
    memset(&last, 0, sizeof last);
    int rc = ag_request_parse(ep, body, len, NULL, r, &last);
    snprintf(err, ERRSZ, "%s", last.msg);
    return rc;
}

static inline int report_parse(const char *body, size_t len,
                               struct ag_request *r, char *err)
{
    memset(&last, 0, sizeof last);
    int rc = ag_request_parse_report(body, len, NULL, r, &last);
    snprintf(err, ERRSZ, "%s", last.msg);
    return rc;
}

#define HAVE(kind) (1u << (kind))

static inline int parse(enum ag_endpoint ep, const char *body,
                        struct ag_request *r, char *err)
{
    return req_parse(ep, body, strlen(body), r, err);
}

/* Expects body to be refused with a message that starts with field and a
 * space, and holds want if want is not NULL. */
static inline void expect_refused(enum ag_endpoint ep, const char *body,
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
    if (strcmp(last.field, field) != 0)
        fail_msg("%s: error names field '%s', want '%s'", body, last.field,
                 field);
    assert_int_equal(last.code, AG_EINVAL);
    if (want && !strstr(err, want))
        fail_msg("%s: message lacks '%s': %s", body, want, err);
}

#endif
