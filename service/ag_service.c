#include "ag_service.h"

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_log.h"
#include "ag_request.h"

void ag_service_init(struct ag_service *s, const struct ag_hasher *h,
                     struct ag_store *store)
{
    s->hasher = h;
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

int ag_service_check(struct ag_service *s, enum ag_endpoint endpoint,
                     const char *body, size_t len, struct ag_response *resp)
{
    struct ag_request req;
    char err[256];
    if (ag_request_parse(endpoint, body, len, &req, err, sizeof err))
        return ag_response_error(resp, 400, err);

    struct ag_policy_set *set = ag_service_policies(s);
    if (!set)
        return ag_response_error(resp, 503, "policies are not loaded yet");
    struct ag_plan plan;
    struct ag_limit_result res[AG_PLAN_MAX];
    int rc = ag_limiter_plan(set, &req, s->hasher, &plan);
    if (rc == AG_OK && ag_store_check(s->store, &plan, res) == AG_OK) {
        struct ag_decision d;
        ag_limiter_decide(&plan, res, &d);
        rc = ag_response_check(resp, &plan, res, &d, false);
    } else if (rc == AG_OK) {
        rc = ag_response_unavailable(resp, &plan);
    } else {
        ag_log(AG_LOG_ERROR, "plan",
               "more than %d policies apply to one "
               "check",
               AG_PLAN_MAX);
        rc = ag_response_error(resp, 503, "too many policies apply");
    }
    ag_policy_set_unref(set);
    return rc;
}

bool ag_service_ready(struct ag_service *s)
{
    struct ag_policy_set *set = ag_service_policies(s);
    bool ready = set && ag_store_ping(s->store) == AG_OK;
    ag_policy_set_unref(set);
    return ready;
}
