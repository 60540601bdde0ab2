/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the unit tests. Include after <cmocka.h>.
 */
#ifndef AG_TEST_H
#define AG_TEST_H

#include <jansson.h>

#include "ag_policy.h"

/* The policy a JSON record describes; fails the test if the JSON does not
 * parse or the record does not validate. */
static inline struct ag_policy ag_test_policy(const char *text)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    if (!o)
        fail_msg("bad test JSON (%s): %s", jerr.text, text);
    struct ag_policy p;
    struct ag_error err;
    if (ag_policy_from_json(o, NULL, &p, &err))
        fail_msg("policy refused: %s: %s", text, err.msg);
    json_decref(o);
    return p;
}

#endif
