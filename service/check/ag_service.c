/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_service.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_deny_cache.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_lists.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_otp_stats.h"
#include "ag_request.h"
#include "ag_store.h"

/* A reset the store could not take yet: its key and the policy it was
 * planned from (a copy: the ruleset may change meanwhile). */
struct pending_reset {
    struct ag_policy policy;
    char key[AG_STORE_KEY_MAX];
};

struct ag_service {
    struct ag_service_opts o;
    struct ag_otp_stats stats; /* the conversion figures (ag_otp_stats) */
    pthread_mutex_t lock;      /* guards set */
    struct ag_ruleset *set;    /* NULL until the first load */
    /* Resets the store missed. The lock guards the queue only, never a
     * store call; one thread at a time (flushing) sends them. */
    pthread_mutex_t pending_lock;
    atomic_size_t npending; /* read without the lock on every check */
    atomic_bool flushing;
    struct pending_reset pending[AG_SERVICE_PENDING_RESETS];
    atomic_size_t waiting; /* checks the store holds, not yet resumed */
    struct ag_device_key device_key; /* derived from the hasher's key */
    uint32_t device_ttl_s;
};

/* A check between its two halves: the plan for the store, and where the
 * store's results go. */
struct ag_check {
    struct ag_service *svc;
    enum ag_endpoint endpoint;
    uint64_t start;         /* microseconds, for the latency histogram */
    struct ag_ruleset *set; /* the plan borrows from it */
    const struct ag_check_waiter *waiter;
    int store_rc;
    /* The deny cache's clock and epoch, read before the store call was
     * sent (ag_deny_cache.h). */
    uint64_t sent_us;
    uint64_t epoch;
    char country[AG_COUNTRY_MAX];        /* otp: the phone's calling code */
    char phone_prefix[AG_PHONE_MAX + 1]; /* otp: its number range */
    struct ag_plan plan;
    struct ag_limit_result res[AG_PLAN_MAX];
};

static void flush_pending(struct ag_service *s);

int ag_service_new(const struct ag_service_opts *opts, struct ag_service **out)
{
    struct ag_service *s = calloc(1, sizeof *s);
    if (!s)
        return AG_ENOMEM;
    s->o = *opts;
    ag_device_key_init(&s->device_key, opts->hasher);
    ag_otp_stats_init(&s->stats, opts->hasher);
    s->device_ttl_s = opts->device_token_ttl_s ? opts->device_token_ttl_s
                                               : AG_DEVICE_TTL_DEFAULT_S;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->pending_lock, NULL);
    atomic_init(&s->npending, 0);
    atomic_init(&s->flushing, false);
    atomic_init(&s->waiting, 0);
    *out = s;
    return AG_OK;
}

void ag_service_free(struct ag_service *s)
{
    if (!s)
        return;
    ag_ruleset_unref(s->set);
    ag_device_key_wipe(&s->device_key);
    ag_otp_stats_wipe(&s->stats);
    pthread_mutex_destroy(&s->pending_lock);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void ag_service_set_ruleset(struct ag_service *s, struct ag_ruleset *set)
{
    pthread_mutex_lock(&s->lock);
    struct ag_ruleset *old = s->set;
    s->set = set;
    pthread_mutex_unlock(&s->lock);
    /* An edit may have raised a limit, disabled or deleted a policy: no
     * cached denial of the old set may stand. A reload that changed no
     * policy (any other commit to the database: a list entry, which checks
     * meet before the cache, or the audit row of an inspect) keeps them;
     * emptying every instance's cache for those would send a flood back
     * to Redis whenever the support desk looks a subject up. */
    if (s->o.deny_cache && !ag_ruleset_same_policies(old, set))
        ag_deny_cache_clear(s->o.deny_cache);
    ag_ruleset_unref(old);
}

struct ag_ruleset *ag_service_ruleset(struct ag_service *s)
{
    pthread_mutex_lock(&s->lock);
    struct ag_ruleset *set = s->set;
    if (set)
        ag_ruleset_ref(set);
    pthread_mutex_unlock(&s->lock);
    return set;
}

/* A check is large (its plan holds its keys: over 5 KiB), too large for
 * malloc's per-thread cache, so each would take the lock of the one arena
 * (main.c) twice. A thread keeps a few it finished for its next checks
 * instead; they are freed when the thread ends. */
#define SPARE_CHECKS 4

struct spares {
    unsigned n;
    struct ag_check *c[SPARE_CHECKS];
};

static pthread_key_t spares_key;
static pthread_once_t spares_once = PTHREAD_ONCE_INIT;

static void spares_free(void *p)
{
    struct spares *sp = p;
    for (unsigned i = 0; i < sp->n; i++)
        free(sp->c[i]);
    free(sp);
}

static void spares_init(void)
{
    if (pthread_key_create(&spares_key, spares_free) != 0)
        abort(); /* only at start, out of keys: nothing can work */
}

static struct ag_check *check_new(void)
{
    pthread_once(&spares_once, spares_init);
    struct spares *sp = pthread_getspecific(spares_key);
    if (sp && sp->n)
        return sp->c[--sp->n];
    return malloc(sizeof(struct ag_check));
}

/* Any thread keeps up to SPARE_CHECKS spares; they are freed when the
 * thread ends. The main thread's (a unit test's) are freed by no one but
 * stay reachable through its thread-specific slot until exit. */
static void check_free(struct ag_check *c)
{
    if (!c)
        return;
    struct spares *sp = pthread_getspecific(spares_key);
    if (!sp && (sp = calloc(1, sizeof *sp)) &&
        pthread_setspecific(spares_key, sp) != 0) {
        free(sp);
        sp = NULL;
    }
    if (sp && sp->n < SPARE_CHECKS)
        sp->c[sp->n++] = c;
    else
        free(c);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t wall_s(void)
{
    return (uint64_t)time(NULL);
}

/* Puts req in the trusted lane if its device token verifies for its user
 * (d holds req's digests). Only a request that sent a token pays for
 * the check; one without a user (an OTP body may lack it) stays
 * untrusted. */
static void trust_device(struct ag_service *s, struct ag_request *req,
                         struct ag_digests *d)
{
    if (!req->device_token[0])
        return;
    const char *user = ag_digests_get(d, AG_KEY_USER);
    if (!user)
        return;
    unsigned char id[AG_DEVICE_ID_BYTES];
    if (ag_device_verify(&s->device_key, req->device_token,
                         strlen(req->device_token), user, wall_s(),
                         s->device_ttl_s, id) == AG_DEVICE_TRUSTED)
        ag_request_trust(req, id);
}

/* Decides the lane of req (whose digests d holds), then plans it against
 * the active set; on success *set holds the reference the plan borrows
 * from (unref it when done). On failure resp is filled. */
static int plan(struct ag_service *s, enum ag_plan_kind kind,
                struct ag_request *req, struct ag_digests *d,
                struct ag_ruleset **set, struct ag_plan *p,
                struct ag_http_response *resp)
{
    trust_device(s, req, d);
    *set = ag_service_ruleset(s);
    if (!*set) {
        ag_http_response_error(resp, 503, "policies are not loaded yet");
        return AG_ENOTFOUND;
    }
    int rc = ag_limiter_plan(*set, kind, d, p);
    if (rc) {
        ag_log(AG_LOG_ERROR, "plan",
               "more than %d policies apply to one request", AG_PLAN_MAX);
        ag_http_response_error(resp, 503, "too many policies apply");
        ag_ruleset_unref(*set);
        *set = NULL;
    }
    return rc;
}

/* The allow or deny entry that settles the request, if any. */
static const struct ag_list_entry *match_lists(const struct ag_ruleset *set,
                                               struct ag_digests *d)
{
    if (!set->nlists)
        return NULL;
    return ag_lists_match(set->lists, set->nlists, d->req,
                          ag_digests_get(d, AG_KEY_USER),
                          ag_digests_get(d, AG_KEY_PHONE));
}

/* Is any enforcing policy of the plan one that fails closed? */
static const struct ag_limit_op *fails_closed(const struct ag_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (!p->ops[i].shadow && p->ops[i].policy->fail == AG_FAIL_CLOSED)
            return &p->ops[i];
    return NULL;
}

/* The log event of a policy that tripped. */
static const char *tripped_event(const struct ag_limit_op *op)
{
    if (op->policy->mode == AG_MODE_SHADOW)
        return "shadow_denied";
    if (op->policy->action == AG_ACTION_CHALLENGE)
        return op->waived ? "challenge_passed" : "challenged";
    return "denied";
}

/* Counts the policies that tripped (denials, shadow denials, challenges
 * asked for or passed: each apart) and logs them, by key hash. */
static void note_denials(struct ag_service *s, const struct ag_plan *p,
                         const struct ag_limit_result *res)
{
    for (size_t i = 0; i < p->n; i++) {
        if (res[i].allowed)
            continue;
        const struct ag_limit_op *op = &p->ops[i];
        if (op->policy->action == AG_ACTION_CHALLENGE &&
            op->policy->mode != AG_MODE_SHADOW)
            ag_metrics_challenge(s->o.metrics, op->policy->name, op->waived);
        else
            ag_metrics_denial(s->o.metrics, op->policy->name, op->shadow);
        ag_log(AG_LOG_INFO, tripped_event(op),
               "policy=%s key=%s retry_after=%u", op->policy->name,
               strrchr(op->key, ':') + 1,
               (unsigned)ag_limiter_seconds(res[i].retry_after_ms));
    }
}

/* The deny cache (issue 20). */

/* Can op's denial be cached? Only an enforcing policy's whose denial ends
 * with time alone: a consecutive policy's ends at the next success, a
 * conversion policy's at a verification (either on any instance, at any
 * moment), so neither is. */
static bool cacheable(const struct ag_limit_op *op)
{
    return !op->shadow && op->policy->algorithm != AG_ALG_CONSECUTIVE &&
           op->policy->algorithm != AG_ALG_CONVERSION;
}

/* The cache entry's member: a distinct policy's subject (a known subject
 * is still allowed), none for the others. */
static const char *cache_member(const struct ag_limit_op *op)
{
    return op->policy->algorithm == AG_ALG_DISTINCT ? op->member : "";
}

/* Whole milliseconds from now to at, rounded up. */
static uint64_t ms_until(uint64_t at, uint64_t now)
{
    return at > now ? (at - now + 999) / 1000 : 0;
}

/* Answers c at once if one of its enforcing policies is denied in the
 * cache: true with resp filled (and *rc its result). The plan is cut down
 * to the cached denials, each with the wait Redis gave, counted down. */
static bool answer_cached(struct ag_service *s, struct ag_check *c,
                          struct ag_http_response *resp, int *rc)
{
    struct ag_deny_cache *dc = s->o.deny_cache;
    if (!dc || !ag_deny_cache_live(dc))
        return false;
    /* Looked up first, the plan untouched, so that a check the cache must
     * not answer still goes to Redis whole. */
    bool hit[AG_PLAN_MAX] = {false};
    struct ag_limit_result found[AG_PLAN_MAX];
    size_t hits = 0;
    uint64_t now = ag_deny_cache_now(dc);
    for (size_t i = 0; i < c->plan.n; i++) {
        const struct ag_limit_op *op = &c->plan.ops[i];
        uint64_t until, reset;
        if (!cacheable(op))
            continue;
        if (!ag_deny_cache_lookup(dc, op->key, cache_member(op), &until,
                                  &reset))
            continue;
        /* The deadline is a millisecond short of the wait Redis gave
         * (ag_deny_cache_insert's caller), which the answer adds back. */
        found[i] = (struct ag_limit_result){
            .allowed = false,
            .retry_after_ms = ms_until(until, now) + 1,
            .reset_after_ms = ms_until(reset, now) + 1,
        };
        hit[i] = true;
        hits++;
    }
    ag_deny_cache_count(dc, hits > 0);
    if (!hits)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < c->plan.n; i++) {
        if (!hit[i])
            continue;
        c->res[n] = found[i];
        if (n != i)
            c->plan.ops[n] = c->plan.ops[i];
        n++;
    }
    c->plan.n = hits;
    struct ag_decision d;
    ag_limiter_decide(&c->plan, c->res, &d);
    note_denials(s, &c->plan, c->res);
    *rc = ag_http_response_cached(resp, &c->plan, c->res, &d);
    return true;
}

/* Remembers the denials Redis gave c. Redis computed each wait at a
 * moment after sent_us, and rounded it up to a millisecond: a deadline a
 * millisecond short of sent_us plus the wait is never after the moment
 * Redis would allow. The reset is stored a millisecond short the same
 * way, since a cached answer adds that millisecond back to both.
 *
 * An answer in which a policy the cache never holds (consecutive,
 * conversion) denied is not remembered at all: Redis reported that policy
 * (a deny before a challenge, then the longest wait), and a cached answer
 * built from the others would name another policy, perhaps a challenge,
 * and a shorter wait. Such a policy that starts denying while an entry is
 * held (failures reported on another instance) is seen when the entry
 * ends, within AG_DENY_CACHE_MAX_HOLD_MS; until then the cached answer
 * still denies, only under the other policy's name. */
static void remember_denials(struct ag_service *s, const struct ag_check *c)
{
    struct ag_deny_cache *dc = s->o.deny_cache;
    if (!dc)
        return;
    for (size_t i = 0; i < c->plan.n; i++) {
        const struct ag_limit_op *op = &c->plan.ops[i];
        if (!c->res[i].allowed && !op->shadow && !cacheable(op))
            return;
    }
    for (size_t i = 0; i < c->plan.n; i++) {
        const struct ag_limit_op *op = &c->plan.ops[i];
        const struct ag_limit_result *r = &c->res[i];
        if (r->allowed || !cacheable(op) || r->retry_after_ms < 2)
            continue;
        uint64_t reset_ms = r->reset_after_ms > 1 ? r->reset_after_ms - 1 : 0;
        ag_deny_cache_insert(dc, c->epoch, op->key, cache_member(op),
                             c->sent_us + (r->retry_after_ms - 1) * 1000,
                             c->sent_us + reset_ms * 1000);
    }
}

/* The keys of p were cleared (a reset, a successful login): dropped from
 * this instance's cache, and, when the store took the clear (told), from
 * every other instance's through the store. Published whether or not
 * this instance caches: the others may. */
static void cleared(struct ag_service *s, const struct ag_plan *p, bool told)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct ag_limit_op *op = &p->ops[i];
        if (op->policy->algorithm == AG_ALG_CONSECUTIVE ||
            op->policy->algorithm == AG_ALG_CONVERSION)
            continue; /* never cached */
        if (s->o.deny_cache)
            ag_deny_cache_invalidate(s->o.deny_cache, op->key);
        if (told)
            ag_store_publish(s->o.store, AG_DENY_CACHE_CHANNEL, op->key);
    }
}

/* The store's callback, on a store thread (or on the calling thread when
 * the call could not start). */
static void store_answered(void *arg, int rc)
{
    struct ag_check *c = arg;
    struct ag_service *s = c->svc; /* c may be freed once resumed */
    c->store_rc = rc;
    c->waiter->resume(c->waiter->arg);
    atomic_fetch_sub(&s->waiting, 1);
}

/* Runs c's plan in the store: asynchronously where the store can, else
 * at once; either way the waiter is suspended first and resumed once. */
static void start_store(struct ag_service *s, struct ag_check *c)
{
    if (atomic_load_explicit(&s->npending, memory_order_relaxed))
        flush_pending(s);
    c->waiter->suspend(c->waiter->arg);
    atomic_fetch_add(&s->waiting, 1);
    int rc =
        ag_store_check_async(s->o.store, &c->plan, c->res, store_answered, c);
    if (rc == AG_EINVAL)
        rc = ag_store_check(s->o.store, &c->plan, c->res);
    else if (rc == AG_OK)
        return;
    /* Not started, or answered at once: the callback will not come. */
    store_answered(c, rc);
}

/* An OTP code the sender may now send: counted in the metrics and the
 * conversion figures. */
static void note_send(struct ag_service *s, const struct ag_check *c)
{
    ag_metrics_otp(s->o.metrics, c->country, false);
    ag_otp_stats_record(&s->stats, s->o.store, c->country, c->phone_prefix,
                        false, (uint64_t)time(NULL));
}

int ag_service_check_begin(struct ag_service *s, enum ag_endpoint endpoint,
                           const char *body, size_t len,
                           const struct ag_check_waiter *w,
                           struct ag_check **out, struct ag_http_response *resp)
{
    *out = NULL;
    struct ag_check *c = check_new();
    if (!c)
        return AG_ENOMEM;
    c->svc = s;
    c->endpoint = endpoint;
    c->start = now_us();
    c->set = NULL;
    c->waiter = w;
    /* Read before the plan takes its ruleset: a new set (which clears the
     * cache) landing after this moves the epoch on, so a denial the old
     * set computed is never cached under the new one. */
    if (s->o.deny_cache) {
        c->epoch = ag_deny_cache_epoch(s->o.deny_cache);
        c->sent_us = ag_deny_cache_now(s->o.deny_cache);
    }
    struct ag_request req;
    struct ag_error err;
    enum ag_outcome outcome = AG_OUT_INVALID;
    int rc;
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    int parsed =
        ag_request_parse(endpoint, body, len, &s->o.request, &req, &err);
    if (parsed == AG_OK) {
        memcpy(c->country, req.country, sizeof c->country);
        memcpy(c->phone_prefix, req.phone_prefix, sizeof c->phone_prefix);
    }
    if (parsed) {
        rc = ag_http_response_refusal(resp, 400, &err);
    } else if (plan(s, AG_PLAN_CHECK, &req, &d, &c->set, &c->plan, resp)) {
        outcome = AG_OUT_UNAVAILABLE;
        rc = AG_OK;
    } else {
        const struct ag_list_entry *listed = match_lists(c->set, &d);
        if (!listed && c->plan.n > 0 && answer_cached(s, c, resp, &rc)) {
            outcome = AG_OUT_DENIED; /* Redis denied it a moment ago */
        } else if (!listed && c->plan.n > 0) {
            *out = c;
            start_store(s, c); /* the store decides */
            return AG_EPENDING;
        } else if (listed) {
            outcome =
                listed->list == AG_LIST_ALLOW ? AG_OUT_ALLOWED : AG_OUT_DENIED;
            rc = ag_http_response_listed(resp, listed, req.trusted);
        } else {
            /* No policy applies: allowed, nothing to ask the store. */
            struct ag_decision dec;
            ag_limiter_decide(&c->plan, c->res, &dec);
            outcome = AG_OUT_ALLOWED;
            rc = ag_http_response_check(resp, &c->plan, c->res, &dec, false);
        }
    }
    if (outcome == AG_OUT_ALLOWED && endpoint == AG_EP_OTP)
        note_send(s, c);
    ag_metrics_check(s->o.metrics, endpoint, outcome, false,
                     now_us() - c->start);
    ag_ruleset_unref(c->set);
    check_free(c);
    return rc;
}

int ag_service_check_finish(struct ag_check *c, struct ag_http_response *resp)
{
    struct ag_service *s = c->svc;
    enum ag_outcome outcome;
    bool degraded = c->store_rc != AG_OK;
    int rc;
    const struct ag_limit_op *closed = degraded ? fails_closed(&c->plan) : NULL;
    if (closed) {
        outcome = AG_OUT_UNAVAILABLE;
        rc = ag_http_response_unavailable(resp, closed, c->plan.trusted);
    } else {
        if (degraded)
            ag_store_check(s->o.fallback, &c->plan, c->res);
        struct ag_decision d;
        ag_limiter_decide(&c->plan, c->res, &d);
        note_denials(s, &c->plan, c->res);
        if (!d.allowed)
            ag_events_denied(s->o.events, &c->plan, c->res, degraded);
        if (!degraded && !d.allowed)
            remember_denials(s, c);
        outcome = d.allowed ? AG_OUT_ALLOWED : AG_OUT_DENIED;
        rc = ag_http_response_check(resp, &c->plan, c->res, &d, degraded);
        if (d.allowed && c->endpoint == AG_EP_OTP)
            note_send(s, c);
    }
    ag_metrics_check(s->o.metrics, c->endpoint, outcome, degraded,
                     now_us() - c->start);
    ag_ruleset_unref(c->set);
    check_free(c);
    return rc;
}

void ag_service_check_abandon(struct ag_check *c)
{
    if (!c)
        return;
    ag_ruleset_unref(c->set);
    check_free(c);
}

/* Answers a successful login with a device token for its user: the same
 * device id again when the report showed a trusted token (the device
 * keeps its per-device counters), a new one otherwise. */
static int issue_token(struct ag_service *s, const struct ag_request *req,
                       struct ag_digests *d, struct ag_http_response *resp)
{
    unsigned char id[AG_DEVICE_ID_BYTES];
    bool renew =
        req->trusted && sodium_hex2bin(id, sizeof id, req->device_id,
                                       AG_DEVICE_ID_HEX, NULL, NULL, NULL) == 0;
    char token[AG_DEVICE_TOKEN_LEN + 1];
    ag_device_issue(&s->device_key, ag_digests_get(d, AG_KEY_USER),
                    renew ? id : NULL, wall_s(), token);
    return ag_http_response_device_token(resp, token, s->device_ttl_s);
}

/* The same wrong password counted once (issue 14): a failure report's
 * fingerprint for the store (ag_plan's fp). Only the keyed digest of the
 * user and the fingerprint leaves here, in a set remembered as long as the
 * longest window of the report's policies: while any of them may still
 * hold the failure the fingerprint was first charged in, a repeat is that
 * failure again. The set is the untrusted lane's for the user, or one
 * trusted device's: an attacker reporting wrong passwords of their own
 * must not push a device's stale password out of its set, or its every
 * retry would count again. Empty without a fingerprint. */
static void plan_password_fp(const struct ag_service *s,
                             const struct ag_request *req, struct ag_digests *d,
                             struct ag_plan *p)
{
    p->fp[0] = '\0';
    p->fp_key[0] = '\0';
    p->fp_window_s = 0;
    const char *user = ag_digests_get(d, AG_KEY_USER);
    if (!req->password_fp[0] || !user)
        return;
    struct ag_ident_part parts[] = {
        {"user", ag_request_value(req, AG_KEY_USER)},
        {"password_fp", req->password_fp},
    };
    ag_hasher_digest(s->o.hasher, parts, 2, p->fp);
    char device_set[AG_DIGEST_HEX + 1];
    const char *set = user;
    const char *device = ag_request_value(req, AG_KEY_DEVICE_TOKEN);
    if (device) {
        struct ag_ident_part owner[] = {
            {"user", ag_request_value(req, AG_KEY_USER)},
            {"device_token", device},
        };
        ag_hasher_digest(s->o.hasher, owner, 2, device_set);
        set = device_set;
    }
    /* The set's digest is that of the policies keyed on the same
     * identifiers (user, or user and device_token), so that with tagged
     * keys it shares their slot. */
    snprintf(p->fp_key, sizeof p->fp_key,
             s->o.tagged_keys ? AG_FP_KEY_PREFIX "{%s}" : AG_FP_KEY_PREFIX "%s",
             set);
    for (size_t i = 0; i < p->n; i++)
        if (p->ops[i].policy->window_s > p->fp_window_s)
            p->fp_window_s = p->ops[i].policy->window_s;
}

int ag_service_report_login(struct ag_service *s, const char *body, size_t len,
                            struct ag_http_response *resp)
{
    struct ag_request req;
    struct ag_error err;
    if (ag_request_parse_report(body, len, &s->o.request, &req, &err))
        return ag_http_response_refusal(resp, 400, &err);
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    struct ag_ruleset *set;
    struct ag_plan p;
    if (plan(s, req.success ? AG_PLAN_SUCCESS : AG_PLAN_FAILURE, &req, &d, &set,
             &p, resp))
        return AG_OK;
    if (!req.success)
        plan_password_fp(s, &req, &d, &p);
    if (atomic_load_explicit(&s->npending, memory_order_relaxed))
        flush_pending(s);
    struct ag_limit_result res[AG_PLAN_MAX];
    int rc = req.success ? ag_store_clear(s->o.store, &p)
                         : ag_store_check(s->o.store, &p, res);
    if (rc) {
        /* Record it where the checks are evaluated meanwhile; a fail-closed
         * policy denies every check anyway. */
        ag_log(AG_LOG_WARN, "report_degraded",
               "login report recorded in the fallback store only");
        if (req.success)
            ag_store_clear(s->o.fallback, &p);
        else
            ag_store_check(s->o.fallback, &p, res);
    }
    if (req.success) {
        ag_events_cleared(s->o.events, &p);
        cleared(s, &p, rc == AG_OK || rc == AG_EUNKNOWN);
    }
    ag_ruleset_unref(set);
    if (req.success)
        return issue_token(s, &req, &d, resp);
    resp->status = 204;
    ag_buf_reset(&resp->body);
    return AG_OK;
}

int ag_service_report_otp(struct ag_service *s, const char *body, size_t len,
                          struct ag_http_response *resp)
{
    struct ag_request req;
    struct ag_error err;
    if (ag_request_parse_otp_report(body, len, &s->o.request, &req, &err))
        return ag_http_response_refusal(resp, 400, &err);
    if (req.verified) {
        struct ag_digests d;
        ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
        struct ag_ruleset *set;
        struct ag_plan p;
        if (plan(s, AG_PLAN_VERIFIED, &req, &d, &set, &p, resp))
            return AG_OK;
        /* A number a list settles was never charged a send, so its
         * verifications must not raise its range's share either (an
         * allow-listed test number would cover for pumping around it). */
        if (match_lists(set, &d))
            p.n = 0;
        if (atomic_load_explicit(&s->npending, memory_order_relaxed))
            flush_pending(s);
        struct ag_limit_result res[AG_PLAN_MAX];
        if (p.n && ag_store_check(s->o.store, &p, res)) {
            ag_log(AG_LOG_WARN, "report_degraded",
                   "otp report recorded in the fallback store only");
            ag_store_check(s->o.fallback, &p, res);
        }
        ag_ruleset_unref(set);
        ag_metrics_otp(s->o.metrics, req.country, true);
        ag_otp_stats_record(&s->stats, s->o.store, req.country,
                            req.phone_prefix, true, (uint64_t)time(NULL));
    }
    resp->status = 204;
    ag_buf_reset(&resp->body);
    return AG_OK;
}

int ag_service_inspect(struct ag_service *s, enum ag_endpoint endpoint,
                       const char *body, size_t len,
                       struct ag_inspect_keys *keys,
                       struct ag_http_response *resp)
{
    keys->n = 0;
    struct ag_request req;
    struct ag_error err;
    if (ag_request_parse(endpoint, body, len, &s->o.request, &req, &err))
        return ag_http_response_refusal(resp, 400, &err);
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    struct ag_ruleset *set;
    struct ag_plan p;
    if (plan(s, AG_PLAN_PEEK, &req, &d, &set, &p, resp))
        return AG_OK;
    for (size_t i = 0; i < p.n; i++)
        memcpy(keys->key[i], p.ops[i].key, AG_STORE_KEY_MAX);
    keys->n = p.n;
    int rc;
    const struct ag_list_entry *listed = match_lists(set, &d);
    if (listed) {
        rc = ag_http_response_inspect_listed(resp, listed, req.trusted);
    } else {
        struct ag_limit_result res[AG_PLAN_MAX];
        memset(res, 0, sizeof res);
        bool degraded = false;
        /* A reset that waits for the store is sent first, as before a
         * check: the answer must not show a lock the desk already lifted. */
        if (p.n && atomic_load_explicit(&s->npending, memory_order_relaxed))
            flush_pending(s);
        if (p.n && ag_store_check(s->o.store, &p, res) != AG_OK) {
            degraded = true;
            rc = ag_store_check(s->o.fallback, &p, res);
        } else {
            rc = AG_OK;
        }
        if (rc)
            rc = ag_http_response_error(resp, 503,
                                        "out of memory reading the fallback");
        else
            rc = ag_http_response_inspect(resp, &p, res, degraded);
    }
    ag_ruleset_unref(set);
    return rc;
}

/* Queues the cleared op for the store; false if the queue is full. */
static bool add_pending(struct ag_service *s, const struct ag_limit_op *op)
{
    pthread_mutex_lock(&s->pending_lock);
    size_t n = atomic_load(&s->npending);
    bool room = n < AG_SERVICE_PENDING_RESETS;
    if (room) {
        s->pending[n].policy = *op->policy;
        memcpy(s->pending[n].key, op->key, sizeof op->key);
        atomic_store(&s->npending, n + 1);
    }
    pthread_mutex_unlock(&s->pending_lock);
    return room;
}

/* Sends the resets the store missed while it could not answer, before
 * this instance next asks it to judge a check. One thread sends them
 * while the others go on (a slow store then holds up one check, not every
 * worker); the queue's lock is never held across the store call. Each
 * reset is its own clear: on Redis Cluster the resets of one batch live on
 * several nodes, and a clear that one node refused has still cleared the
 * others, so a batch put back whole would clear those again before every
 * check (forgiving all that was counted since) for as long as the node is
 * down. A clear the store may have done (AG_EUNKNOWN) counts as done: sent
 * again, it could forgive what was counted since. What the store refused
 * stays queued for the next try. */
static void flush_pending(struct ag_service *s)
{
    if (atomic_exchange(&s->flushing, true))
        return;
    for (;;) {
        struct pending_reset batch[AG_PLAN_MAX];
        pthread_mutex_lock(&s->pending_lock);
        size_t n = atomic_load(&s->npending);
        size_t take = n < AG_PLAN_MAX ? n : AG_PLAN_MAX;
        memcpy(batch, &s->pending[n - take], take * sizeof *batch);
        atomic_store(&s->npending, n - take);
        pthread_mutex_unlock(&s->pending_lock);
        if (!take)
            break;
        size_t done = 0, unconfirmed = 0, back = 0;
        for (size_t i = 0; i < take; i++) {
            struct ag_plan p = {.kind = AG_PLAN_SUCCESS, .n = 1};
            memset(&p.ops[0], 0, sizeof p.ops[0]);
            p.ops[0].policy = &batch[i].policy;
            memcpy(p.ops[0].key, batch[i].key, sizeof p.ops[0].key);
            int rc = ag_store_clear(s->o.store, &p);
            if (rc == AG_OK || rc == AG_EUNKNOWN) {
                ag_events_cleared(s->o.events, &p);
                cleared(s, &p, true);
                done++;
                unconfirmed += rc == AG_EUNKNOWN;
            } else {
                batch[back++] = batch[i]; /* refused: kept, in order */
            }
        }
        if (done)
            ag_log(unconfirmed ? AG_LOG_WARN : AG_LOG_INFO, "reset_applied",
                   "%zu reset(s) made during the outage sent to the store "
                   "(%zu unconfirmed, not sent again)",
                   done, unconfirmed);
        if (!back)
            continue;
        /* Put them back (after any queued meanwhile), or drop the oldest
         * if the queue filled up: a reset is a convenience, not a limit. */
        pthread_mutex_lock(&s->pending_lock);
        n = atomic_load(&s->npending);
        size_t room = AG_SERVICE_PENDING_RESETS - n;
        size_t keep = back < room ? back : room;
        memcpy(&s->pending[n], batch + (back - keep), keep * sizeof *batch);
        atomic_store(&s->npending, n + keep);
        pthread_mutex_unlock(&s->pending_lock);
        if (keep < back)
            ag_log(AG_LOG_WARN, "reset_dropped",
                   "%zu reset(s) waiting for the store dropped: queue full",
                   back - keep);
        break;
    }
    atomic_store(&s->flushing, false);
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
    unsigned need = 0;
    for (size_t k = 0; k < p->nkeys; k++)
        need |= 1u << p->key[k];
    /* A device_token is no field of the body but the verified token's
     * id: parsed, then trusted or not like a check's. */
    unsigned token = 1u << AG_KEY_DEVICE_TOKEN;
    struct ag_request req;
    if (ag_request_parse_for(p->endpoint, need & ~token, body, len,
                             &s->o.request, &req, err))
        return AG_EINVAL;
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    trust_device(s, &req, &d);
    if ((need & token) && !req.trusted)
        return ag_error_set(err, AG_EINVAL, "device_token",
                            "device_token must be a live token issued to "
                            "the body's user");
    struct ag_plan plan = {.kind = AG_PLAN_SUCCESS, .n = 1};
    if (!ag_limiter_plan_policy(p, AG_PLAN_SUCCESS, &d, &plan.ops[0]))
        return ag_error_set(err, AG_EINVAL, "policy",
                            "policy's key needs identifiers the body lacks");
    memcpy(key, plan.ops[0].key, AG_STORE_KEY_MAX);
    if (atomic_load_explicit(&s->npending, memory_order_relaxed))
        flush_pending(s);
    int rc = ag_store_clear(s->o.store, &plan);
    if (rc == AG_OK || rc == AG_EUNKNOWN) {
        /* Unknown: sent and unanswered; it is not sent again (it could
         * forgive what was counted since), and the caller is told. */
        ag_store_clear(s->o.fallback, &plan);
        note_reset(s, &plan);
        cleared(s, &plan, true);
        return rc;
    }
    cleared(s, &plan, false);
    if (!add_pending(s, &plan.ops[0]))
        return ag_error_set(err, AG_ETOOBIG, NULL,
                            "the limiter store is unavailable and %d resets "
                            "already wait for it",
                            AG_SERVICE_PENDING_RESETS);
    ag_store_clear(s->o.fallback, &plan);
    note_reset(s, &plan);
    return AG_EPENDING;
}

struct ag_events *ag_service_events(struct ag_service *s)
{
    return s->o.events;
}

size_t ag_service_waiting(struct ag_service *s)
{
    return atomic_load(&s->waiting);
}

bool ag_service_ready(struct ag_service *s)
{
    struct ag_ruleset *set = ag_service_ruleset(s);
    bool ready = set && ag_store_ping(s->o.store) == AG_OK;
    ag_ruleset_unref(set);
    if (ready && atomic_load_explicit(&s->npending, memory_order_relaxed))
        flush_pending(s);
    return ready;
}

int ag_service_conversion(struct ag_service *s, int by, uint32_t window_s,
                          json_t **out)
{
    return ag_otp_stats_report(&s->stats, s->o.store, (enum ag_otp_by)by,
                               window_s, (uint64_t)time(NULL), out);
}
