/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the ag_limiter unit tests: a hasher keyed with one
 * repeated byte, a validated sliding_log policy, a request parsed from its
 * JSON body, the plan a set makes for it (borrowing the set's policies),
 * and the checks on what a plan holds. The hasher needs sodium_init
 * (ag_test_sodium.h). Include after <cmocka.h>.
 */
#ifndef AG_TEST_LIMITER_H
#define AG_TEST_LIMITER_H

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_test.h"

static inline void make_hasher(struct ag_hasher *h, unsigned char fill)
{
    unsigned char secret[32];
    memset(secret, fill, sizeof secret);
    ag_hasher_init(h, secret, sizeof secret);
}

/* A validated policy; extra is appended inside the JSON object. */
static inline struct ag_policy policy(const char *name, const char *endpoint,
                                      const char *key, uint32_t limit,
                                      const char *extra)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"name\":\"%s\",\"endpoint\":\"%s\",\"key\":%s,"
             "\"algorithm\":\"sliding_log\",\"limit\":%u,\"window_s\":60%s}",
             name, endpoint, key, (unsigned)limit, extra ? extra : "");
    return ag_test_policy(text);
}

static inline void request(enum ag_endpoint ep, const char *body,
                           struct ag_request *r)
{
    struct ag_error err;
    if (ag_request_parse(ep, body, strlen(body), NULL, r, &err))
        fail_msg("test request refused: %s: %s", body, err.msg);
}

static inline int plan_of(const struct ag_ruleset *s, enum ag_plan_kind kind,
                          const struct ag_request *r, const struct ag_hasher *h,
                          struct ag_plan *plan)
{
    struct ag_digests d;
    ag_digests_init(&d, h, r, false);
    return ag_limiter_plan(s, kind, &d, plan);
}

static inline void plan_for(const struct ag_ruleset *s, enum ag_endpoint ep,
                            const char *body, const struct ag_hasher *h,
                            struct ag_plan *plan)
{
    struct ag_request r;
    request(ep, body, &r);
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, h, plan), AG_OK);
}

/* Fails unless the plan holds exactly the named policies, in order, each
 * borrowed from s. */
static inline void expect_plan(const struct ag_plan *plan,
                               const struct ag_ruleset *s,
                               const char *const *names, size_t n)
{
    if (plan->n != n) {
        for (size_t i = 0; i < plan->n; i++)
            print_message("plan[%zu] = %s\n", i, plan->ops[i].policy->name);
        fail_msg("plan has %zu operations, want %zu", plan->n, n);
    }
    for (size_t i = 0; i < n; i++) {
        const struct ag_policy *p = plan->ops[i].policy;
        assert_string_equal(p->name, names[i]);
        assert_true(p >= s->policies && p < s->policies + s->count);
    }
}

static inline const struct ag_limit_op *op_named(const struct ag_plan *plan,
                                                 const char *name)
{
    for (size_t i = 0; i < plan->n; i++)
        if (strcmp(plan->ops[i].policy->name, name) == 0)
            return &plan->ops[i];
    fail_msg("no operation for %s in the plan", name);
    return NULL;
}

static const char full_login[] = "{\"user\":\"Ana@Example.com\","
                                 "\"ip\":\"10.1.2.3\",\"device\":\"dev-9\"}";

#endif
