/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the ag_events unit tests (test_events.c,
 * test_events_store.c): a key digest, and a plan of one policy's
 * operation on it. Include after <cmocka.h>.
 */
#ifndef AG_TEST_EVENTS_H
#define AG_TEST_EVENTS_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ag_limiter.h"

#define DIGEST "0123456789abcdef0123456789abcdef"

/* A one-op plan of p on key digest, and its result. */
static inline void one_op(struct ag_plan *plan, const struct ag_policy *p,
                          const char *digest, bool shadow)
{
    memset(plan, 0, sizeof *plan);
    plan->kind = AG_PLAN_CHECK;
    plan->n = 1;
    plan->ops[0].policy = p;
    plan->ops[0].shadow = shadow;
    snprintf(plan->ops[0].key, sizeof plan->ops[0].key, "ag:%s:%s", p->name,
             digest);
}

#endif
