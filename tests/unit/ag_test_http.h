/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check answers' fixture that test_http_response.c and
 * test_http_verdict.c share: two enforcing login policies and an optional
 * shadow one, with a plan and results over the first n. Needs ag_test.h
 * (ag_test_policy) included first.
 */
#ifndef AG_TEST_HTTP_H
#define AG_TEST_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ag_limiter.h"
#include "ag_policy.h"

static inline struct ag_policy policy(const char *name, uint32_t limit,
                                      const char *extra)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"name\":\"%s\",\"endpoint\":\"login\",\"key\":[\"user\"],"
             "\"algorithm\":\"sliding_log\",\"limit\":%u,\"window_s\":900%s}",
             name, (unsigned)limit, extra ? extra : "");
    return ag_test_policy(text);
}

/* Two enforcing login policies and an optional shadow one. */
struct fixture {
    struct ag_policy ps[3];
    struct ag_plan plan;
    struct ag_limit_result res[3];
    struct ag_decision d;
};

static inline void fixture_init(struct fixture *f, size_t n)
{
    memset(f, 0, sizeof *f);
    f->ps[0] = policy("login.user", 10, NULL);
    f->ps[1] = policy("login.user_ip", 5, NULL);
    f->ps[2] = policy("login.shadow", 3, ",\"mode\":\"shadow\"");
    f->plan.n = n;
    for (size_t i = 0; i < n; i++) {
        f->plan.ops[i].policy = &f->ps[i];
        f->plan.ops[i].shadow = f->ps[i].mode == AG_MODE_SHADOW;
        f->plan.ops[i].charge = true;
    }
    f->res[0] = (struct ag_limit_result){true, 9, 0, 900000, 0, 0, 0};
    f->res[1] = (struct ag_limit_result){true, 2, 0, 899001, 0, 0, 0};
    f->res[2] = (struct ag_limit_result){true, 1, 0, 30000, 0, 0, 0};
}

#endif
