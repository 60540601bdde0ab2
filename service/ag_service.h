/*
 * The service core: what a check does, from request body to response,
 * independent of HTTP. It owns the active policy set (swapped atomically:
 * a check holds a reference to the set it started with, so it never sees
 * half an edit) and borrows the hasher, the stores and the metrics.
 *
 * When the store (Redis) cannot answer, each policy does as its "fail"
 * says: if any enforcing policy of the check fails closed, the check is
 * denied with a 503 (reason "store_unavailable"); otherwise every policy is
 * evaluated in the fallback store (in-process, per instance) and the
 * answer says "degraded": true.
 *
 * The check halves, reports and ag_service_ready are called from many HTTP
 * threads at once; ag_service_set_policies from any thread.
 */
#ifndef AG_SERVICE_H
#define AG_SERVICE_H

#include <pthread.h>
#include <stdbool.h>

#include <stdint.h>

#include "ag_http_response.h"
#include "ag_identity.h"
#include "ag_limiter.h"
#include "ag_policy.h"
#include "ag_request.h"
#include "ag_store.h"

struct ag_metrics;

struct ag_service {
    const struct ag_hasher *hasher; /* borrowed */
    struct ag_request_opts opts;    /* how requests are normalised */
    struct ag_store *store;         /* borrowed: Redis */
    struct ag_store *fallback;      /* borrowed: in-process */
    struct ag_metrics *metrics;     /* borrowed */
    pthread_mutex_t lock;           /* guards policies */
    struct ag_ruleset *policies;    /* NULL until the first load */
};

void ag_service_init(struct ag_service *s, const struct ag_hasher *h,
                     struct ag_store *store, struct ag_store *fallback,
                     struct ag_metrics *metrics);
/* Drops the policy set; the hasher, stores and metrics stay the caller's. */

void ag_service_fini(struct ag_service *s);

/* Publishes set as the active one; takes over the caller's reference. */
void ag_service_set_policies(struct ag_service *s, struct ag_ruleset *set);
/* A new reference to the active set (NULL if none); unref when done. */
struct ag_ruleset *ag_service_policies(struct ag_service *s);

/* A check in progress, between its two halves: the plan for the store and
 * where the store's results go. Owned by the caller (it is large: keep it
 * off small stacks). */
struct ag_check {
    enum ag_endpoint endpoint;
    uint64_t start;         /* microseconds, for the latency histogram */
    struct ag_ruleset *set; /* the plan borrows from it */
    struct ag_plan plan;
    struct ag_limit_result res[AG_PLAN_MAX];
};

/* The first half of a check: parses, plans, applies the lists. Returns 0
 * when resp already holds the answer, or AG_EPENDING when the store must
 * run c->plan into c->res (ag_store_check or ag_store_check_async) before
 * ag_service_check_finish gives the answer. */
int ag_service_check_begin(struct ag_service *s, enum ag_endpoint endpoint,
                           const char *body, size_t len, struct ag_check *c,
                           struct ag_http_response *resp);
/* The second half, with what the store returned (0, or an error: then each
 * policy does as its "fail" says). Releases what begin took. */
int ag_service_check_finish(struct ag_service *s, struct ag_check *c,
                            int store_rc, struct ag_http_response *resp);

/* For a begun check (AG_EPENDING) whose client went away before
 * ag_service_check_finish: releases what begin took. The store's answer,
 * if it came, is dropped; what it recorded stays recorded. */
void ag_service_check_abandon(struct ag_check *c);

/* Records a login outcome (/report-login): a failure charges the
 * failure-counting login policies; a success clears those keyed on both
 * user and ip. resp is a 204, a 400 or a 503. */
int ag_service_report_login(struct ag_service *s, const char *body, size_t len,
                            struct ag_http_response *resp);

/* Ready: policies loaded and the store answering. */
bool ag_service_ready(struct ag_service *s);

#endif
