#include "ag_service.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_lists.h"
#include "ag_metrics.h"

#include "ag_log.h"
#include "ag_request.h"

void ag_service_init(struct ag_service *s, const struct ag_hasher *h,
                     struct ag_store *store, struct ag_store *fallback,
                     struct ag_metrics *metrics)
{
    s->hasher = h;
    s->opts.phone_prefix_digits = 0;
    s->store = store;
    s->fallback = fallback;
    s->metrics = metrics;
    pthread_mutex_init(&s->lock, NULL);
    s->policies = NULL;
}

void ag_service_fini(struct ag_service *s)
{
    ag_ruleset_unref(s->policies);
    s->policies = NULL;
    pthread_mutex_destroy(&s->lock);
}

void ag_service_set_policies(struct ag_service *s, struct ag_ruleset *set)
{
    pthread_mutex_lock(&s->lock);
    struct ag_ruleset *old = s->policies;
    s->policies = set;
    pthread_mutex_unlock(&s->lock);
    ag_ruleset_unref(old);
}

struct ag_ruleset *ag_service_policies(struct ag_service *s)
{
    pthread_mutex_lock(&s->lock);
    struct ag_ruleset *set = s->policies;
    if (set)
        ag_ruleset_ref(set);
    pthread_mutex_unlock(&s->lock);
    return set;
}

/* Plans req against the active set; on success *set holds the reference
 * the plan borrows from (unref it when done). On failure resp is filled. */
static int plan(struct ag_service *s, enum ag_plan_kind kind,
                const struct ag_request *req, struct ag_ruleset **set,
                struct ag_plan *p, struct ag_http_response *resp)
{
    *set = ag_service_policies(s);
    if (!*set) {
        ag_http_response_error(resp, 503, "policies are not loaded yet");
        return AG_ENOTFOUND;
    }
    int rc = ag_limiter_plan(*set, kind, req, s->hasher, p);
    if (rc) {
        ag_log(AG_LOG_ERROR, "plan",
               "more than %d policies apply to one request", AG_PLAN_MAX);
        ag_http_response_error(resp, 503, "too many policies apply");
        ag_ruleset_unref(*set);
        *set = NULL;
    }
    return rc;
}

/* The allow or deny entry that settles req, if any. */
static const struct ag_list_entry *match_lists(struct ag_service *s,
                                               const struct ag_ruleset *set,
                                               const struct ag_request *req)
{
    if (!set->nlists)
        return NULL;
    char user[AG_DIGEST_HEX + 1], phone[AG_DIGEST_HEX + 1];
    const char *u = ag_request_value(req, AG_KEY_USER);
    const char *ph = ag_request_value(req, AG_KEY_PHONE);
    if (u)
        ag_identity_digest(s->hasher, AG_KEY_USER, u, user);
    if (ph)
        ag_identity_digest(s->hasher, AG_KEY_PHONE, ph, phone);
    return ag_lists_match(set->lists, set->nlists, req, u ? user : NULL,
                          ph ? phone : NULL);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Is any enforcing policy of the plan one that fails closed? */
static const struct ag_limit_op *fails_closed(const struct ag_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (!p->ops[i].shadow && p->ops[i].policy->fail == AG_FAIL_CLOSED)
            return &p->ops[i];
    return NULL;
}

/* Counts denials per policy and logs the enforcing ones, by key hash. */
static void note_denials(struct ag_service *s, const struct ag_plan *p,
                         const struct ag_limit_result *res)
{
    for (size_t i = 0; i < p->n; i++) {
        if (res[i].allowed)
            continue;
        const struct ag_limit_op *op = &p->ops[i];
        struct ag_policy_counters *c =
            ag_metrics_policy(s->metrics, op->policy->name);
        atomic_fetch_add_explicit(op->shadow ? &c->shadow_denials : &c->denials,
                                  1, memory_order_relaxed);
        ag_log(AG_LOG_INFO, op->shadow ? "shadow_denied" : "denied",
               "policy=%s key=%s retry_after=%u", op->policy->name,
               strrchr(op->key, ':') + 1,
               (unsigned)ag_limiter_seconds(res[i].retry_after_ms));
    }
}

int ag_service_check_begin(struct ag_service *s, enum ag_endpoint endpoint,
                           const char *body, size_t len, struct ag_check *c,
                           struct ag_http_response *resp)
{
    c->endpoint = endpoint;
    c->start = now_us();
    c->set = NULL;
    struct ag_request req;
    char err[256];
    enum ag_outcome outcome = AG_OUT_INVALID;
    int rc;
    if (ag_request_parse(endpoint, body, len, &s->opts, &req, err,
                         sizeof err)) {
        rc = ag_http_response_error(resp, 400, err);
    } else if (plan(s, AG_PLAN_CHECK, &req, &c->set, &c->plan, resp)) {
        outcome = AG_OUT_UNAVAILABLE;
        rc = AG_OK;
    } else {
        const struct ag_list_entry *listed = match_lists(s, c->set, &req);
        if (!listed && c->plan.n > 0)
            return AG_EPENDING; /* the store decides */
        if (listed) {
            outcome =
                listed->list == AG_LIST_ALLOW ? AG_OUT_ALLOWED : AG_OUT_DENIED;
            rc = ag_http_response_listed(resp, listed);
        } else {
            /* No policy applies: allowed, nothing to ask the store. */
            struct ag_decision d;
            ag_limiter_decide(&c->plan, c->res, &d);
            outcome = AG_OUT_ALLOWED;
            rc = ag_http_response_check(resp, &c->plan, c->res, &d, false);
        }
        ag_ruleset_unref(c->set);
        c->set = NULL;
    }
    ag_metrics_check(s->metrics, endpoint, outcome, false, now_us() - c->start);
    return rc;
}

int ag_service_check_finish(struct ag_service *s, struct ag_check *c,
                            int store_rc, struct ag_http_response *resp)
{
    enum ag_outcome outcome;
    bool degraded = store_rc != AG_OK;
    int rc;
    const struct ag_limit_op *closed = degraded ? fails_closed(&c->plan) : NULL;
    if (closed) {
        outcome = AG_OUT_UNAVAILABLE;
        rc = ag_http_response_unavailable(resp, closed);
    } else {
        if (degraded)
            ag_store_check(s->fallback, &c->plan, c->res);
        struct ag_decision d;
        ag_limiter_decide(&c->plan, c->res, &d);
        note_denials(s, &c->plan, c->res);
        outcome = d.allowed ? AG_OUT_ALLOWED : AG_OUT_DENIED;
        rc = ag_http_response_check(resp, &c->plan, c->res, &d, degraded);
    }
    ag_ruleset_unref(c->set);
    c->set = NULL;
    ag_metrics_check(s->metrics, c->endpoint, outcome, degraded,
                     now_us() - c->start);
    return rc;
}

void ag_service_check_abandon(struct ag_check *c)
{
    ag_ruleset_unref(c->set);
    c->set = NULL;
}

int ag_service_report_login(struct ag_service *s, const char *body, size_t len,
                            struct ag_http_response *resp)
{
    struct ag_request req;
    char err[256];
    if (ag_request_parse_report(body, len, &s->opts, &req, err, sizeof err))
        return ag_http_response_error(resp, 400, err);
    struct ag_ruleset *set;
    struct ag_plan p;
    if (plan(s, req.success ? AG_PLAN_SUCCESS : AG_PLAN_FAILURE, &req, &set, &p,
             resp))
        return AG_OK;
    struct ag_limit_result res[AG_PLAN_MAX];
    int rc = req.success ? ag_store_clear(s->store, &p)
                         : ag_store_check(s->store, &p, res);
    if (rc) {
        /* Record it where the checks are evaluated meanwhile; a fail-closed
         * policy denies every check anyway. */
        ag_log(AG_LOG_WARN, "report_degraded",
               "login report recorded in the fallback store only");
        if (req.success)
            ag_store_clear(s->fallback, &p);
        else
            ag_store_check(s->fallback, &p, res);
    }
    ag_ruleset_unref(set);
    resp->status = 204;
    ag_buf_reset(&resp->body);
    return AG_OK;
}

bool ag_service_ready(struct ag_service *s)
{
    struct ag_ruleset *set = ag_service_policies(s);
    bool ready = set && ag_store_ping(s->store) == AG_OK;
    ag_ruleset_unref(set);
    return ready;
}
