/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_limiter.h"

#include <stdio.h>
#include <string.h>

#include "ag_challenge.h"
#include "ag_error.h"

static bool has_key(const struct ag_policy *p, enum ag_key_kind kind)
{
    for (size_t k = 0; k < p->nkeys; k++)
        if (p->key[k] == kind)
            return true;
    return false;
}

/* Does p take part in a plan of kind? A surge policy never does: its
 * shield is counted and judged apart from the store (ag_shields); nor
 * does a signal policy, judged by the service alone
 * (ag_limiter_plan_signals). */
static bool applies(const struct ag_policy *p, enum ag_plan_kind kind)
{
    if (p->algorithm == AG_ALG_SURGE || p->algorithm == AG_ALG_SIGNAL)
        return false;
    switch (kind) {
    case AG_PLAN_CHECK:
    case AG_PLAN_RESERVE:
    case AG_PLAN_RELEASE:
    case AG_PLAN_PEEK:
        return true;
    case AG_PLAN_FAILURE:
        return p->counts == AG_COUNTS_FAILURES;
    case AG_PLAN_VERIFIED:
        return p->algorithm == AG_ALG_CONVERSION;
    case AG_PLAN_SUCCESS:
        /* A success ends the row of consecutive failures of this user (NIST)
         * — of a key that holds the user: one keyed on an address alone is
         * not the user's to forgive, or an attacker spraying from there
         * would reset it by logging into an account of their own. Of the
         * others, only those of this user from this address: a success
         * from one address forgives no other address's failures. */
        return p->counts == AG_COUNTS_FAILURES && has_key(p, AG_KEY_USER) &&
               (p->algorithm == AG_ALG_CONSECUTIVE || has_key(p, AG_KEY_IP));
    }
    return false;
}

void ag_digests_init(struct ag_digests *d, const struct ag_hasher *h,
                     const struct ag_request *req, bool tagged)
{
    d->hasher = h;
    d->req = req;
    d->done = 0;
    d->tagged = tagged;
}

const char *ag_digests_get(struct ag_digests *d, enum ag_key_kind kind)
{
    if (d->done & 1u << kind)
        return d->hex[kind];
    const char *value = ag_request_value(d->req, kind);
    if (!value)
        return NULL;
    ag_identity_digest(d->hasher, kind, value, d->hex[kind]);
    d->done |= 1u << kind;
    return d->hex[kind];
}

bool ag_limiter_plan_policy(const struct ag_policy *p, enum ag_plan_kind kind,
                            struct ag_digests *d, struct ag_limit_op *op)
{
    struct ag_ident_part parts[AG_POLICY_KEYS_MAX];
    for (size_t k = 0; k < p->nkeys; k++) {
        parts[k].kind = ag_key_kind_name(p->key[k]);
        parts[k].value = ag_request_value(d->req, p->key[k]);
        if (!parts[k].value)
            return false;
    }
    op->member[0] = '\0';
    /* Clearing a distinct set needs only its key, not a subject. */
    if (p->algorithm == AG_ALG_DISTINCT && kind != AG_PLAN_SUCCESS) {
        const char *member =
            ag_digests_get(d, ag_endpoint_subject(p->endpoint));
        if (!member)
            return false;
        memcpy(op->member, member, AG_DIGEST_HEX + 1);
    }
    /* A key of one part hashes to that identifier's digest, which the
     * check may have needed already (lists, distinct members). */
    char composite[AG_DIGEST_HEX + 1];
    const char *digest = composite;
    if (p->nkeys == 1)
        digest = ag_digests_get(d, p->key[0]);
    else
        ag_hasher_digest(d->hasher, parts, p->nkeys, composite);
    /* "ag:<policy>:<digest>" (or "ag:<policy>:{<digest>}"), which
     * AG_STORE_KEY_MAX always holds. */
    size_t name_len = strlen(p->name);
    char *k = op->key;
    memcpy(k, "ag:", 3);
    memcpy(k + 3, p->name, name_len);
    k += 3 + name_len;
    *k++ = ':';
    if (d->tagged)
        *k++ = '{';
    memcpy(k, digest, AG_DIGEST_HEX);
    k += AG_DIGEST_HEX;
    if (d->tagged)
        *k++ = '}';
    *k = '\0';
    op->policy = p;
    bool check = kind == AG_PLAN_CHECK || kind == AG_PLAN_RESERVE ||
                 kind == AG_PLAN_RELEASE || kind == AG_PLAN_PEEK;
    op->charge =
        kind == AG_PLAN_FAILURE || (check && p->counts == AG_COUNTS_ATTEMPTS);
    op->waived = p->action == AG_ACTION_CHALLENGE && d->req->challenge_passed;
    op->shadow = p->mode == AG_MODE_SHADOW || op->waived;
    return true;
}

bool ag_limiter_in_lane(const struct ag_policy *p, bool trusted)
{
    switch (p->applies_to) {
    case AG_LANE_ALL:
        return true;
    case AG_LANE_TRUSTED:
        return trusted;
    case AG_LANE_UNTRUSTED:
        return !trusted;
    }
    return false;
}

const char *ag_limiter_net_missing(const struct ag_policy *p,
                                   const struct ag_net_avail *avail,
                                   const char **list)
{
    *list = NULL;
    if ((p->needs & AG_POLICY_NEEDS_COUNTRY) && !(avail && avail->country))
        return "--geoip-file";
    if ((p->needs & AG_POLICY_NEEDS_ASN) && !(avail && avail->asn))
        return "--asn-file";
    if (!(p->needs & AG_POLICY_NEEDS_LISTS))
        return NULL;
    for (size_t i = 0; i < p->nlists; i++) {
        size_t j = 0;
        while (avail && j < avail->nlists &&
               strcmp(avail->lists[j], p->lists[i]) != 0)
            j++;
        if (!avail || j == avail->nlists) {
            *list = p->lists[i];
            return "--ip-list";
        }
    }
    return NULL;
}

/* Records that p was left out of plan, and why. */
static void skip(struct ag_plan *plan, const struct ag_policy *p,
                 enum ag_skip_why why)
{
    if (plan->nskipped < AG_PLAN_SKIPS_MAX)
        plan->skipped[plan->nskipped++] =
            (struct ag_plan_skip){.policy = p, .why = why};
    else
        plan->skipped_more[why]++;
}

/* Can p, which needs the network files (p->needs), judge the request:
 * true, or false with the skip recorded in plan. A request whose address
 * was not looked up (an inspect without one) has nothing to skip for: its
 * keys are simply missing. */
static bool net_ready(const struct ag_policy *p, const struct ag_request *req,
                      struct ag_plan *plan)
{
    const char *list;
    if (ag_limiter_net_missing(p, req->net.avail, &list)) {
        skip(plan, p, AG_SKIP_NOT_LOADED);
        return false;
    }
    if (!req->net.looked)
        return true;
    if (((p->needs & AG_POLICY_NEEDS_COUNTRY) && !req->net.country[0]) ||
        ((p->needs & AG_POLICY_NEEDS_ASN) && !req->net.asn[0])) {
        skip(plan, p, AG_SKIP_ADDRESS_UNKNOWN);
        return false;
    }
    return true;
}

int ag_limiter_plan(const struct ag_ruleset *set, enum ag_plan_kind kind,
                    struct ag_digests *d, struct ag_plan *plan)
{
    /* A verification is recorded as a reported event (the kind's note). */
    enum ag_plan_kind selecting = kind;
    if (kind == AG_PLAN_VERIFIED)
        kind = AG_PLAN_FAILURE;
    plan->kind = kind;
    plan->trusted = d->req->trusted;
    plan->n = 0;
    /* No fingerprint unless the service adds one to a failure plan. */
    plan->fp[0] = plan->fp_key[0] = '\0';
    plan->fp_window_s = 0;
    /* The store makes the nonce unless a reserve's caller sets one. */
    plan->nonce[0] = '\0';
    plan->asking = false;
    plan->history = NULL;
    plan->risk = 0;
    memcpy(plan->ref, d->req->ref, sizeof plan->ref);
    plan->net = d->req->net;
    plan->nskipped = 0;
    plan->skipped_more[0] = plan->skipped_more[1] = 0;
    for (size_t i = 0; i < set->count; i++) {
        const struct ag_policy *p = &set->policies[i];
        if (!p->enabled || p->endpoint != d->req->endpoint ||
            !applies(p, selecting))
            continue;
        /* A success proves the real user: it clears what every lane
         * counted for the keys it can fill, so a login on a trusted device
         * reopens the untrusted lane an attacker closed (NIST SP 800-63B:
         * a success clears prior failures). */
        if (kind != AG_PLAN_SUCCESS && !ag_limiter_in_lane(p, d->req->trusted))
            continue;
        /* A failure counts only in the policies of its reason. */
        if (selecting == AG_PLAN_FAILURE && p->reasons &&
            !(p->reasons & 1u << d->req->reason))
            continue;
        if (p->needs && !net_ready(p, d->req, plan))
            continue;
        struct ag_limit_op op;
        if (!ag_limiter_plan_policy(p, kind, d, &op))
            continue;
        if (plan->n == AG_PLAN_MAX)
            return AG_ETOOBIG;
        plan->ops[plan->n++] = op;
    }
    return AG_OK;
}

int ag_limiter_plan_verified_clear(const struct ag_ruleset *set,
                                   struct ag_digests *d, struct ag_plan *plan)
{
    *plan = (struct ag_plan){.kind = AG_PLAN_SUCCESS,
                             .trusted = d->req->trusted,
                             .net = d->req->net};
    memcpy(plan->ref, d->req->ref, sizeof plan->ref);
    for (size_t i = 0; i < set->count; i++) {
        const struct ag_policy *p = &set->policies[i];
        if (!p->enabled || p->endpoint != AG_EP_OTP_VERIFY ||
            p->algorithm == AG_ALG_SURGE || p->algorithm == AG_ALG_SIGNAL ||
            p->algorithm == AG_ALG_CONVERSION || !has_key(p, AG_KEY_PHONE) ||
            !(has_key(p, AG_KEY_USER) || has_key(p, AG_KEY_DEVICE_TOKEN)))
            continue;
        struct ag_limit_op op;
        if (!ag_limiter_plan_policy(p, AG_PLAN_SUCCESS, d, &op))
            continue;
        if (plan->n == AG_PLAN_MAX)
            return AG_ETOOBIG;
        plan->ops[plan->n++] = op;
    }
    return AG_OK;
}

/* Does the request carry p's signal: sent by the caller, or found in
 * the address by the service's files? */
static bool carries(const struct ag_policy *p, const struct ag_request *req)
{
    const struct ag_request_net *n = &req->net;
    switch (p->signal) {
    case AG_SIGNAL_PASSWORD_BREACHED:
        return req->signals & 1u << p->signal;
    case AG_SIGNAL_IP_LISTED:
        /* A match in a private or CGNAT range only is the integrator's
         * own address, not a signal (n->lists leaves it out). */
        for (size_t i = 0; n->lists && i < p->nlists; i++)
            for (size_t j = 0; j < n->avail->nlists && j < AG_REQUEST_NET_LISTS;
                 j++)
                if ((n->lists & 1u << j) &&
                    strcmp(n->avail->lists[j], p->lists[i]) == 0)
                    return true;
        return false;
    case AG_SIGNAL_IP_COUNTRY: {
        if (!n->country[0])
            return false;
        unsigned bit = AG_POLICY_COUNTRY_BIT(n->country[0], n->country[1]);
        return p->countries[bit / 8] & 1u << bit % 8;
    }
    case AG_SIGNAL_NEW_COUNTRY:
    case AG_SIGNAL_NEW_ASN:
    case AG_SIGNAL_NO_HISTORY:
    case AG_SIGNAL_IMPOSSIBLE_TRAVEL:
        /* Known once the store has read the history: never here
         * (ag_limiter_plan_history_signals). */
    case AG_SIGNAL_COUNT:
        break;
    }
    return false;
}

int ag_limiter_plan_history_signals(const struct ag_ruleset *set,
                                    struct ag_plan *plan, struct ag_digests *d,
                                    struct ag_limit_op *ops, size_t *n)
{
    *n = 0;
    /* A trusted device is the strongest evidence there is: never judged
     * by where it logs in from. */
    if (plan->kind != AG_PLAN_CHECK || d->req->trusted)
        return AG_OK;
    for (size_t i = 0; i < set->count; i++) {
        const struct ag_policy *p = &set->policies[i];
        if (p->algorithm != AG_ALG_SIGNAL || !p->enabled ||
            !ag_signal_history(p->signal) || p->endpoint != d->req->endpoint ||
            !ag_limiter_in_lane(p, d->req->trusted))
            continue;
        if (p->needs && !net_ready(p, d->req, plan))
            continue;
        struct ag_limit_op op;
        if (!ag_limiter_plan_policy(p, plan->kind, d, &op))
            continue;
        op.charge = false;
        if (*n == AG_SIGNALS_MAX)
            return AG_ETOOBIG;
        ops[(*n)++] = op;
    }
    return AG_OK;
}

size_t ag_limiter_keep_tripped(struct ag_limit_op *ops, size_t n,
                               unsigned signals)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (signals & 1u << ops[i].policy->signal)
            ops[kept++] = ops[i];
    return kept;
}

int ag_limiter_plan_signals(const struct ag_ruleset *set, struct ag_plan *plan,
                            struct ag_digests *d, struct ag_limit_op *ops,
                            size_t *n)
{
    *n = 0;
    if (plan->kind != AG_PLAN_CHECK && plan->kind != AG_PLAN_PEEK)
        return AG_OK;
    for (size_t i = 0; i < set->count; i++) {
        const struct ag_policy *p = &set->policies[i];
        if (p->algorithm != AG_ALG_SIGNAL || !p->enabled ||
            p->endpoint != d->req->endpoint ||
            !ag_limiter_in_lane(p, d->req->trusted))
            continue;
        if (p->needs && !net_ready(p, d->req, plan))
            continue;
        if (!carries(p, d->req))
            continue;
        struct ag_limit_op op;
        if (!ag_limiter_plan_policy(p, plan->kind, d, &op))
            continue;
        /* Nothing to record: it is never sent to a store. */
        op.charge = false;
        if (*n == AG_SIGNALS_MAX || plan->n + *n == AG_PLAN_OPS)
            return AG_ETOOBIG;
        ops[(*n)++] = op;
    }
    return AG_OK;
}

bool ag_limiter_signals_deny(const struct ag_limit_op *ops, size_t n)
{
    /* A challenge is no denial here: the attempt goes on to a second
     * factor, so it counts as an allowed one would. */
    for (size_t i = 0; i < n; i++)
        if (!ops[i].shadow && ops[i].policy->action == AG_ACTION_DENY)
            return true;
    return false;
}

void ag_limiter_charge_nothing(struct ag_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++)
        plan->ops[i].charge = false;
}

void ag_limiter_add_signals(struct ag_plan *plan, struct ag_limit_result *res,
                            const struct ag_limit_op *ops, size_t n)
{
    /* Both run in the set's order, which is the order of its policies in
     * memory: merged from the end, each op moves once. */
    size_t i = plan->n, j = n, at = plan->n + n;
    while (j > 0) {
        if (i > 0 && plan->ops[i - 1].policy > ops[j - 1].policy) {
            plan->ops[--at] = plan->ops[--i];
            res[at] = res[i];
            continue;
        }
        plan->ops[--at] = ops[--j];
        /* Tripped: nothing is left of it for this check, and nothing
         * holds it, so nothing to wait for but the next attempt. */
        res[at] = (struct ag_limit_result){.allowed = false};
    }
    plan->n += n;
}

uint32_t ag_limiter_seconds(uint64_t ms)
{
    uint64_t s = ms / 1000 + (ms % 1000 != 0);
    if (s < 1)
        return 1;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

/* Is result a tighter than b for the X-RateLimit headers? */
static bool tighter(const struct ag_limit_op *oa,
                    const struct ag_limit_result *a,
                    const struct ag_limit_op *ob,
                    const struct ag_limit_result *b)
{
    if (a->remaining != b->remaining)
        return a->remaining < b->remaining;
    return oa->policy->limit < ob->policy->limit;
}

/* Is denial i to be reported rather than denial j? */
static bool reported_before(const struct ag_plan *plan,
                            const struct ag_limit_result *res, size_t i,
                            size_t j)
{
    bool deny_i = plan->ops[i].policy->action == AG_ACTION_DENY;
    bool deny_j = plan->ops[j].policy->action == AG_ACTION_DENY;
    if (deny_i != deny_j)
        return deny_i;
    return res[i].retry_after_ms > res[j].retry_after_ms;
}

void ag_limiter_decide(const struct ag_plan *plan,
                       const struct ag_limit_result *res, struct ag_decision *d)
{
    d->allowed = true;
    d->denied_by = -1;
    d->action = AG_ACTION_DENY;
    d->retry_after_s = 0;
    d->tightest = -1;
    for (size_t i = 0; i < plan->n; i++) {
        if (plan->ops[i].shadow)
            continue;
        int j = (int)i;
        if (!res[i].allowed &&
            (d->denied_by < 0 ||
             reported_before(plan, res, i, (size_t)d->denied_by)))
            d->denied_by = j;
        if (d->tightest < 0 ||
            tighter(&plan->ops[i], &res[i], &plan->ops[d->tightest],
                    &res[d->tightest]))
            d->tightest = j;
    }
    if (d->denied_by >= 0) {
        d->allowed = false;
        d->action = plan->ops[d->denied_by].policy->action;
        d->tightest = d->denied_by;
        d->retry_after_s = ag_limiter_seconds(res[d->denied_by].retry_after_ms);
    }
}

/* The longest state key ("ag:<policy>:{<digest>}") with the longest
 * suffix and its NUL: the key writers below copy without checking. */
_Static_assert(3 + AG_POLICY_NAME_MAX + 1 + 2 + AG_DIGEST_HEX +
                           AG_BLOCK_SUFFIX_LEN + 1 <=
                       AG_STORE_KEY_MAX &&
                   AG_BLOCK_SUFFIX_LEN == AG_LEVEL_SUFFIX_LEN &&
                   AG_MARK_SUFFIX_LEN == AG_BLOCK_SUFFIX_LEN,
               "AG_STORE_KEY_MAX holds every key's suffixed names");

size_t ag_limiter_block_key(const struct ag_limit_op *op, char *out)
{
    size_t n = strlen(op->key);
    memcpy(out, op->key, n);
    memcpy(out + n, AG_BLOCK_SUFFIX, AG_BLOCK_SUFFIX_LEN + 1);
    return n + AG_BLOCK_SUFFIX_LEN;
}

size_t ag_limiter_level_key(const struct ag_limit_op *op, char *out)
{
    size_t n = strlen(op->key);
    memcpy(out, op->key, n);
    memcpy(out + n, AG_LEVEL_SUFFIX, AG_LEVEL_SUFFIX_LEN + 1);
    return n + AG_LEVEL_SUFFIX_LEN;
}

size_t ag_limiter_mark_key(const struct ag_limit_op *op, char *out)
{
    size_t n = strlen(op->key);
    memcpy(out, op->key, n);
    memcpy(out + n, AG_MARK_SUFFIX, AG_MARK_SUFFIX_LEN + 1);
    return n + AG_MARK_SUFFIX_LEN;
}

const char *ag_digests_subject(struct ag_digests *d)
{
    const char *user = ag_digests_get(d, AG_KEY_USER);
    if (user || d->req->endpoint == AG_EP_LOGIN)
        return user;
    return ag_digests_get(d, AG_KEY_PHONE);
}

int ag_limiter_plan_pass(struct ag_plan *plan, const char *id_hex, bool tagged)
{
    if (plan->n == AG_PLAN_OPS)
        return AG_ETOOBIG;
    struct ag_limit_op *op = &plan->ops[plan->n];
    memset(op, 0, sizeof *op);
    op->policy = ag_challenge_policy();
    snprintf(op->key, sizeof op->key,
             tagged ? "ag:" AG_CHALLENGE_POLICY ":{%.*s}"
                    : "ag:" AG_CHALLENGE_POLICY ":%.*s",
             AG_CHALLENGE_ID_HEX, id_hex);
    op->charge = true;
    plan->n++;
    return AG_OK;
}
