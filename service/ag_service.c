#include "ag_service.h"

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_lists.h"

#include "ag_log.h"
#include "ag_request.h"

void ag_service_init(struct ag_service *s, const struct ag_hasher *h,
                     struct ag_store *store)
{
    s->hasher = h;
    s->opts.phone_prefix_digits = 0;
    s->store = store;
    pthread_mutex_init(&s->lock, NULL);
    s->policies = NULL;
}

void ag_service_fini(struct ag_service *s)
{
    ag_policy_set_unref(s->policies);
    s->policies = NULL;
    pthread_mutex_destroy(&s->lock);
}

void ag_service_set_policies(struct ag_service *s, struct ag_policy_set *set)
{
    pthread_mutex_lock(&s->lock);
    struct ag_policy_set *old = s->policies;
    s->policies = set;
    pthread_mutex_unlock(&s->lock);
    ag_policy_set_unref(old);
}

struct ag_policy_set *ag_service_policies(struct ag_service *s)
{
    pthread_mutex_lock(&s->lock);
    struct ag_policy_set *set = s->policies;
    if (set)
        ag_policy_set_ref(set);
    pthread_mutex_unlock(&s->lock);
    return set;
}

/* Plans req against the active set; on success *set holds the reference
 * the plan borrows from (unref it when done). On failure resp is filled. */
static int plan(struct ag_service *s, enum ag_plan_kind kind,
                const struct ag_request *req, struct ag_policy_set **set,
                struct ag_plan *p, struct ag_response *resp)
{
    *set = ag_service_policies(s);
    if (!*set) {
        ag_response_error(resp, 503, "policies are not loaded yet");
        return AG_ENOTFOUND;
    }
    int rc = ag_limiter_plan(*set, kind, req, s->hasher, p);
    if (rc) {
        ag_log(AG_LOG_ERROR, "plan",
               "more than %d policies apply to one request", AG_PLAN_MAX);
        ag_response_error(resp, 503, "too many policies apply");
        ag_policy_set_unref(*set);
        *set = NULL;
    }
    return rc;
}

/* The allow or deny entry that settles req, if any. */
static const struct ag_list_entry *match_lists(struct ag_service *s,
                                               const struct ag_policy_set *set,
                                               const struct ag_request *req)
{
    if (!set->nlists)
        return NULL;
    char user[AG_DIGEST_HEX + 1], phone[AG_DIGEST_HEX + 1];
    const char *u = ag_request_value(req, AG_KEY_USER);
    const char *ph = ag_request_value(req, AG_KEY_PHONE);
    if (u)
        ag_limiter_digest(s->hasher, AG_KEY_USER, u, user);
    if (ph)
        ag_limiter_digest(s->hasher, AG_KEY_PHONE, ph, phone);
    return ag_lists_match(set->lists, set->nlists, req, u ? user : NULL,
                          ph ? phone : NULL);
}

int ag_service_check(struct ag_service *s, enum ag_endpoint endpoint,
                     const char *body, size_t len, struct ag_response *resp)
{
    struct ag_request req;
    char err[256];
    if (ag_request_parse(endpoint, body, len, &s->opts, &req, err, sizeof err))
        return ag_response_error(resp, 400, err);
    struct ag_policy_set *set;
    struct ag_plan p;
    if (plan(s, AG_PLAN_CHECK, &req, &set, &p, resp))
        return AG_OK;
    const struct ag_list_entry *listed = match_lists(s, set, &req);
    if (listed) {
        int rc = ag_response_listed(resp, listed);
        ag_policy_set_unref(set);
        return rc;
    }
    struct ag_limit_result res[AG_PLAN_MAX];
    int rc;
    if (ag_store_check(s->store, &p, res) == AG_OK) {
        struct ag_decision d;
        ag_limiter_decide(&p, res, &d);
        rc = ag_response_check(resp, &p, res, &d, false);
    } else {
        rc = ag_response_unavailable(resp, &p);
    }
    ag_policy_set_unref(set);
    return rc;
}

int ag_service_report_login(struct ag_service *s, const char *body, size_t len,
                            struct ag_response *resp)
{
    struct ag_request req;
    char err[256];
    if (ag_request_parse_report(body, len, &s->opts, &req, err, sizeof err))
        return ag_response_error(resp, 400, err);
    struct ag_policy_set *set;
    struct ag_plan p;
    if (plan(s, req.success ? AG_PLAN_SUCCESS : AG_PLAN_FAILURE, &req, &set, &p,
             resp))
        return AG_OK;
    struct ag_limit_result res[AG_PLAN_MAX];
    int rc = req.success ? ag_store_clear(s->store, &p)
                         : ag_store_check(s->store, &p, res);
    ag_policy_set_unref(set);
    if (rc)
        return ag_response_error(resp, 503,
                                 "the limiter store is unavailable; the "
                                 "report was not recorded");
    resp->status = 204;
    ag_buf_reset(&resp->body);
    return AG_OK;
}

bool ag_service_ready(struct ag_service *s)
{
    struct ag_policy_set *set = ag_service_policies(s);
    bool ready = set && ag_store_ping(s->store) == AG_OK;
    ag_policy_set_unref(set);
    return ready;
}
