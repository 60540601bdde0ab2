/* SPDX-License-Identifier: Apache-2.0 */
/* The service's support-desk path: resets of one policy's counters, and
 * inspects that show what a check would be answered, charging nothing.
 * Built on the core (ag_service_impl.h). */
#include "ag_service.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_lists.h"
#include "ag_request.h"
#include "ag_service_impl.h"
#include "ag_store.h"
#include "ag_verdict.h"

int ag_service_inspect(struct ag_service *s, enum ag_endpoint endpoint,
                       const char *body, size_t len,
                       struct ag_inspect_keys *keys, struct ag_verdict *v)
{
    keys->n = 0;
    *v = (struct ag_verdict){0};
    struct ag_request req;
    struct ag_error err;
    if (ag_request_parse(endpoint, body, len, &s->o.request, &req, &err)) {
        v->kind = AG_VERDICT_REFUSED;
        v->err = err;
        return AG_OK;
    }
    /* The plan and results live in a check's storage, which the verdict
     * borrows. */
    struct ag_check *c = ag_service__check_new();
    if (!c)
        return AG_ENOMEM;
    c->svc = s;
    c->shields = NULL;
    c->nsignals = 0;
    c->endpoint = endpoint;
    c->subject[0] = '\0'; /* an inspect's answer carries no nonce */
    struct ag_plan *p = &c->plan;
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    if (ag_service__plan(s, AG_PLAN_PEEK, &req, &d, &c->set, &c->shields, p,
                         v)) {
        ag_service__check_free(c);
        return AG_OK;
    }
    /* The signals the body carries trip as in a check; their keys are no
     * store's, and not among those the inspect read. */
    if (ag_service__plan_signals(c, &d, v)) {
        ag_shield_table_unref(c->shields);
        ag_ruleset_unref(c->set);
        ag_service__check_free(c);
        return AG_OK;
    }
    for (size_t i = 0; i < p->n; i++)
        memcpy(keys->key[i], p->ops[i].key, AG_STORE_KEY_MAX);
    keys->n = p->n;
    v->inspected = true;
    v->trusted = req.trusted;
    v->owner = c;
    const struct ag_list_entry *listed = ag_service__match_lists(c->set, &d);
    if (listed) {
        v->kind = AG_VERDICT_LISTED;
        v->entry = listed;
        return AG_OK;
    }
    /* A raised shield answers as it would a check: by itself, naming
     * itself, for as long as it holds (issue 36: the desk's "why can't
     * this customer log in?" during a wave). Nothing is read from the
     * store then, as a check would read nothing. */
    if (ag_service__shielded(s, c, &req, false)) {
        keys->n = 0;
        v->kind = AG_VERDICT_DECIDED;
        v->plan = p;
        v->res = c->res;
        ag_limiter_decide(p, c->res, &v->decision);
        return AG_OK;
    }
    memset(c->res, 0, sizeof c->res);
    bool degraded = false;
    int rc = AG_OK;
    /* A reset that waits for the store is sent first, as before a check:
     * the answer must not show a lock the desk already lifted. */
    if (p->n)
        ag_service__send_resets(s);
    if (p->n && ag_store_check(s->o.store, p, c->res) != AG_OK) {
        degraded = true;
        rc = ag_store_check(s->o.fallback, p, c->res);
    }
    if (rc) {
        v->kind = AG_VERDICT_UNAVAILABLE;
        v->why = "out of memory reading the fallback";
        return AG_OK;
    }
    ag_limiter_add_signals(p, c->res, c->signals, c->nsignals);
    c->nsignals = 0;
    v->kind = AG_VERDICT_DECIDED;
    v->degraded = degraded;
    v->plan = p;
    v->res = c->res;
    ag_limiter_decide(p, c->res, &v->decision);
    return AG_OK;
}

/* A reset's event, and its lockout marker gone: the next lockout of the
 * key is an event again. Raised once the reset is done or queued. */
static void note_reset(struct ag_service *s, const struct ag_plan *plan)
{
    struct ag_event e;
    const struct ag_policy *p = plan->ops[0].policy;
    ag_event_init(&e, AG_EV_RESET);
    snprintf(e.policy, sizeof e.policy, "%s", p->name);
    e.endpoint = (int)p->endpoint;
    ag_event_key_digest(plan->ops[0].key, e.key);
    ag_events_cleared(s->o.events, plan);
    ag_events_raise(s->o.events, &e);
}

int ag_service_reset(struct ag_service *s, const struct ag_policy *p,
                     const char *body, size_t len, char *key,
                     struct ag_error *err)
{
    /* A signal trips on each check that carries it and counts nothing:
     * there is nothing of it to clear, in any store. */
    if (p->algorithm == AG_ALG_SIGNAL)
        return ag_error_refuse(err, "policy",
                               "is a signal policy, which keeps nothing to "
                               "reset");
    unsigned need = 0;
    for (size_t k = 0; k < p->nkeys; k++)
        need |= 1u << p->key[k];
    /* A device_token is no field of the body but the verified token's
     * id: parsed, then trusted or not like a check's. */
    unsigned token = 1u << AG_KEY_DEVICE_TOKEN;
    /* An asn or ip_country is the service's lookup of the body's ip. */
    unsigned looked = 1u << AG_KEY_ASN | 1u << AG_KEY_IP_COUNTRY;
    unsigned sent = need & ~token & ~looked;
    if (need & looked)
        sent |= 1u << AG_KEY_IP;
    struct ag_request req;
    if (ag_request_parse_for(p->endpoint, sent, body, len, &s->o.request, &req,
                             err))
        return AG_EINVAL;
    if (need & looked) {
        char why[AG_SERVICE_NET_WHY];
        if (ag_service_net_missing(s, p, why, sizeof why))
            return ag_error_refuse(err, "policy", why);
        ag_service__look_up_network(s, &req);
        if ((need & looked) & ~req.have)
            return ag_error_refuse(err, "ip",
                                   "is in no network the databases know: "
                                   "the policy keeps nothing for it");
    }
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    ag_service__trust_device(s, &req, &d);
    if ((need & token) && !req.trusted)
        return ag_error_set(err, AG_EINVAL, "device_token",
                            "device_token must be a live token issued to "
                            "the body's user");
    struct ag_plan plan = {.kind = AG_PLAN_SUCCESS, .n = 1};
    if (!ag_limiter_plan_policy(p, AG_PLAN_SUCCESS, &d, &plan.ops[0]))
        return ag_error_set(err, AG_EINVAL, "policy",
                            "policy's key needs identifiers the body lacks");
    memcpy(key, plan.ops[0].key, AG_STORE_KEY_MAX);
    ag_service__send_resets(s);
    int rc = ag_store_clear(s->o.store, &plan);
    if (rc == AG_OK || rc == AG_EUNKNOWN) {
        /* Unknown: sent and unanswered; it is not sent again (it could
         * forgive what was counted since), and the caller is told. */
        ag_store_clear(s->o.fallback, &plan);
        note_reset(s, &plan);
        ag_service__cleared(s, &plan, true);
        return rc;
    }
    ag_service__cleared(s, &plan, false);
    if (!ag_service__queue_reset(s, &plan.ops[0]))
        return ag_error_set(err, AG_ETOOBIG, NULL,
                            "the limiter store is unavailable and %d resets "
                            "already wait for it",
                            AG_SERVICE_PENDING_RESETS);
    ag_store_clear(s->o.fallback, &plan);
    note_reset(s, &plan);
    return AG_EPENDING;
}
