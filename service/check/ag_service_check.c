/* SPDX-License-Identifier: Apache-2.0 */
/* The service's public path: checks, from their body to their verdict,
 * with the deny cache in front of the store, and login and OTP reports.
 * Built on the core (ag_service_impl.h). */
#include "ag_service.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "ag_challenge.h"
#include "ag_clock.h"
#include "ag_deny_cache.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_lists.h"
#include "ag_log.h"
#include "ag_loop.h"
#include "ag_metrics.h"
#include "ag_otp_stats.h"
#include "ag_overview.h"
#include "ag_request.h"
#include "ag_service_impl.h"
#include "ag_shields.h"
#include "ag_store.h"
#include "ag_verdict.h"

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

/* The log event of a policy that tripped. */
static const char *tripped_event(const struct ag_limit_op *op)
{
    if (op->policy->mode == AG_MODE_SHADOW)
        return "shadow_denied";
    if (op->policy->action == AG_ACTION_CHALLENGE)
        return op->waived ? "challenge_passed" : "challenged";
    return "denied";
}

/* How op tripped, for the overview: as the metrics count it. */
static enum ag_overview_trip trip_of(const struct ag_limit_op *op)
{
    if (op->policy->action == AG_ACTION_CHALLENGE &&
        op->policy->mode != AG_MODE_SHADOW)
        return op->waived ? AG_OVERVIEW_CHALLENGE_PASSED
                          : AG_OVERVIEW_CHALLENGED;
    return op->shadow ? AG_OVERVIEW_SHADOW_DENIED : AG_OVERVIEW_DENIED;
}

/* Appends " risk=new_country,new_asn" (the plan's risk signals, no
 * place) to the log line's words in out (cap bytes). */
static void risk_words(unsigned risk, char *out, size_t cap)
{
    size_t at = strlen(out);
    const char *sep = " risk=";
    for (int i = 0; i < AG_SIGNAL_COUNT && at < cap; i++) {
        if (!(risk & 1u << i))
            continue;
        int n = snprintf(out + at, cap - at, "%s%s", sep,
                         ag_signal_name((enum ag_signal)i));
        at += n > 0 ? (size_t)n : 0;
        sep = ",";
    }
}

/* Counts the policies that tripped (denials, shadow denials, challenges
 * asked for or passed: each apart) in the metrics and this minute of the
 * overview, and logs them, by key hash. */
static void note_denials(struct ag_service *s, const struct ag_plan *p,
                         const struct ag_limit_result *res)
{
    uint64_t now_ms = 0;
    char net[AG_REQUEST_NET_TEXT + 128] = "";
    for (size_t i = 0; i < p->n; i++) {
        if (res[i].allowed)
            continue;
        if (!net[0] && p->net.looked)
            ag_request_net_text(&p->net, net, AG_REQUEST_NET_TEXT);
        if (p->risk && !strstr(net, " risk="))
            risk_words(p->risk, net, sizeof net);
        const struct ag_limit_op *op = &p->ops[i];
        if (op->policy == ag_challenge_policy())
            ag_metrics_pass(s->o.metrics, AG_METRICS_PASS_NONCE,
                            AG_METRICS_PASS_REUSED);
        if (op->policy->action == AG_ACTION_CHALLENGE &&
            op->policy->mode != AG_MODE_SHADOW)
            ag_metrics_challenge(s->o.metrics, op->policy->name, op->waived);
        else
            ag_metrics_denial(s->o.metrics, op->policy->name, op->shadow);
        if (!now_ms)
            now_ms = ag_clock_wall_ms();
        ag_overview_trip(s->overview, now_ms, op->policy->name, trip_of(op));
        ag_log(AG_LOG_INFO, tripped_event(op),
               "policy=%s key=%s retry_after=%u%s", op->policy->name,
               strrchr(op->key, ':') + 1,
               (unsigned)ag_limiter_seconds(res[i].retry_after_ms), net);
    }
}

/* The deny cache (issue 20). */

/* Can op's denial be cached? Only an enforcing policy's whose denial ends
 * with time alone: a consecutive policy's ends at the next success, a
 * conversion policy's at a verification (either on any instance, at any
 * moment), so neither is; a signal's is no store's denial at all (the next
 * check may not carry the signal). */
static bool cacheable(const struct ag_limit_op *op)
{
    return !op->shadow && op->policy->algorithm != AG_ALG_CONSECUTIVE &&
           op->policy->algorithm != AG_ALG_CONVERSION &&
           op->policy->algorithm != AG_ALG_SIGNAL;
}

/* c's signal policies, each tripped, into its plan and results: once the
 * store's results are in, or when none are asked for. */
static void add_signals(struct ag_check *c)
{
    ag_limiter_add_signals(&c->plan, c->res, c->signals, c->nsignals);
    c->nsignals = 0;
}

/* The cache entry's member: a distinct policy's subject (a known subject
 * is still allowed), none for the others. */
static const char *cache_member(const struct ag_limit_op *op)
{
    return op->policy->algorithm == AG_ALG_DISTINCT ? op->member : "";
}

/* v: c's plan decided on c's results, which it borrows, with c. A
 * denial that asks for a challenge carries the nonce that will prove it
 * passed (ag_challenge.h), bound to c's subject and lane. */
static void decided(struct ag_verdict *v, struct ag_check *c, bool degraded)
{
    v->kind = AG_VERDICT_DECIDED;
    v->trusted = c->plan.trusted;
    v->degraded = degraded;
    v->plan = &c->plan;
    v->res = c->res;
    ag_limiter_decide(&c->plan, c->res, &v->decision);
    v->owner = c;
    v->nonce[0] = '\0';
    if (!v->decision.allowed && v->decision.action == AG_ACTION_CHALLENGE &&
        c->subject[0])
        ag_challenge_mint(&c->svc->challenge_key, c->endpoint, c->plan.trusted,
                          c->subject, (uint64_t)time(NULL), v->nonce);
}

/* Whole milliseconds from now to at, rounded up. */
static uint64_t ms_until(uint64_t at, uint64_t now)
{
    return at > now ? (at - now + 999) / 1000 : 0;
}

/* Decides c at once if one of its enforcing policies is denied in the
 * cache: true with v its verdict, which borrows c. The plan is cut down
 * to the cached denials, each with the wait Redis gave, counted down. */
static bool answer_cached(struct ag_service *s, struct ag_check *c,
                          struct ag_verdict *v)
{
    struct ag_deny_cache *dc = s->o.deny_cache;
    if (!dc || !ag_deny_cache_live(dc))
        return false;
    /* Looked up first, the plan untouched, so that a check the cache must
     * not answer still goes to Redis whole. */
    bool hit[AG_PLAN_OPS] = {false};
    struct ag_limit_result found[AG_PLAN_OPS];
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
    add_signals(c);
    decided(v, c, false);
    v->cached = true;
    note_denials(s, &c->plan, c->res);
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
 * still denies, only under the other policy's name.
 *
 * A signal's denial is no answer of Redis's, and the next check may not
 * carry the signal: the store's denials beside it are remembered as they
 * would be without it. */
static void remember_denials(struct ag_service *s, const struct ag_check *c)
{
    struct ag_deny_cache *dc = s->o.deny_cache;
    if (!dc)
        return;
    for (size_t i = 0; i < c->plan.n; i++) {
        const struct ag_limit_op *op = &c->plan.ops[i];
        if (!c->res[i].allowed && !op->shadow && !cacheable(op) &&
            op->policy->algorithm != AG_ALG_SIGNAL)
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

/* Site-wide shields (ag_shields.h): a raised one answers c at once,
 * without the store (ag_service__shielded); v is that verdict, which
 * borrows c. */
static bool answer_shielded(struct ag_service *s, struct ag_check *c,
                            const struct ag_request *req, struct ag_verdict *v)
{
    if (!ag_service__shielded(s, c, req, true))
        return false;
    decided(v, c, false);
    return true;
}

/* The store's callback, on a store thread (or on the calling thread when
 * the call could not start). */
static void release(struct ag_check *c)
{
    ag_shield_table_unref(c->shields);
    ag_ruleset_unref(c->set);
    ag_service__check_free(c);
}

static void store_answered(void *arg, int rc)
{
    struct ag_check *c = arg;
    struct ag_service *s = c->svc; /* c may be freed once resumed */
    c->store_rc = rc;
    int was = AG_CHECK_WAITING;
    if (atomic_compare_exchange_strong(&c->state, &was, AG_CHECK_RESUMING)) {
        c->waiter->resume(c->waiter->arg);
        atomic_store(&c->state, AG_CHECK_ANSWERED);
    } else {
        release(c); /* its waiter went away (ag_service_check_abandon) */
    }
    atomic_fetch_sub(&s->waiting, 1);
}

/* Runs c's plan in the store: asynchronously where the store can, else
 * at once; either way the waiter is suspended first and resumed once. */
static void start_store(struct ag_service *s, struct ag_check *c)
{
    /* Sending the resets the store missed waits for Redis: never on a
     * check loop, whose other requests would wait too. The reports,
     * /readyz and the admin API send them, off the loops. */
    if (!ag_loop_self())
        ag_service__send_resets(s);
    if (c->waiter->suspend)
        c->waiter->suspend(c->waiter->arg);
    atomic_init(&c->state, AG_CHECK_WAITING);
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

/* A check of c's endpoint answered with outcome: counted in the metrics
 * (with its latency) and in this minute of the overview. */
static void note_check(struct ag_service *s, const struct ag_check *c,
                       enum ag_outcome outcome, bool degraded)
{
    ag_metrics_check(s->o.metrics, c->endpoint, outcome, degraded,
                     now_us() - c->start);
    ag_overview_check(s->overview, ag_clock_wall_ms(), c->endpoint, outcome);
}

/* The verdict a body was refused with: err (the field at fault). */
static void refused(struct ag_verdict *v, const struct ag_error *err)
{
    v->kind = AG_VERDICT_REFUSED;
    v->err = *err;
}

int ag_service_check_begin(struct ag_service *s, enum ag_endpoint endpoint,
                           const char *body, size_t len,
                           const struct ag_check_waiter *w,
                           struct ag_check **out, struct ag_verdict *v)
{
    *out = NULL;
    *v = (struct ag_verdict){0};
    struct ag_check *c = ag_service__check_new();
    if (!c)
        return AG_ENOMEM;
    c->svc = s;
    c->endpoint = endpoint;
    c->start = now_us();
    c->set = NULL;
    c->shields = NULL;
    c->nsignals = 0;
    c->subject[0] = '\0';
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
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    int parsed =
        ag_request_parse(endpoint, body, len, &s->o.request, &req, &err);
    if (parsed == AG_OK) {
        memcpy(c->country, req.country, sizeof c->country);
        memcpy(c->phone_prefix, req.phone_prefix, sizeof c->phone_prefix);
    }
    if (parsed) {
        refused(v, &err);
    } else if (ag_service__plan(s, AG_PLAN_CHECK, &req, &d, &c->set,
                                &c->shields, &c->plan, v) ||
               ag_service__plan_signals(c, &d, v) ||
               ag_service__risk_plan(s, c, &req, &d, v)) {
        outcome = AG_OUT_UNAVAILABLE;
    } else {
        const char *subject = ag_digests_subject(&d);
        if (subject)
            memcpy(c->subject, subject, AG_DIGEST_HEX + 1);
        const struct ag_list_entry *listed =
            ag_service__match_lists(c->set, &d);
        /* A listed request is settled before any policy, shields too,
         * and counts in none. */
        if (!listed)
            ag_shields_count_check(c->shields, endpoint, req.trusted,
                                   req.challenge_passed);
        if (!listed && answer_shielded(s, c, &req, v)) {
            outcome = AG_OUT_DENIED; /* the shield is raised: no store */
        } else if (!listed && c->plan.n > 0 && answer_cached(s, c, v)) {
            outcome = AG_OUT_DENIED; /* Redis denied it a moment ago */
        } else if (!listed && (c->plan.n > 0 || c->plan.history)) {
            /* A check a signal denies is denied: the store only judges
             * it, beside the signal, and records nothing. One a signal
             * only challenges goes on to a second factor: the store
             * charges and judges it as any check. */
            if (ag_limiter_signals_deny(c->signals, c->nsignals))
                ag_limiter_charge_nothing(&c->plan);
            c->net = v->net; /* for the answer ag_service_check_finish makes */
            *out = c;
            start_store(s, c); /* the store decides */
            return AG_EPENDING;
        } else if (listed) {
            outcome =
                listed->list == AG_LIST_ALLOW ? AG_OUT_ALLOWED : AG_OUT_DENIED;
            v->kind = AG_VERDICT_LISTED;
            v->trusted = req.trusted;
            v->entry = listed;
            v->owner = c; /* the entry is the ruleset's */
        } else {
            /* No policy of the store applies: nothing to ask it, and
             * allowed unless a signal denies. */
            add_signals(c);
            decided(v, c, false);
            note_denials(s, &c->plan, c->res);
            outcome = v->decision.allowed ? AG_OUT_ALLOWED : AG_OUT_DENIED;
        }
    }
    if (v->kind == AG_VERDICT_DECIDED) {
        /* Answered without the store: no history read. */
        ag_service__risk_judge(s, c, false);
        v->risk = c->risk;
    }
    if (outcome == AG_OUT_ALLOWED && endpoint == AG_EP_OTP)
        note_send(s, c);
    note_check(s, c, outcome, false);
    if (!v->owner) {
        ag_shield_table_unref(c->shields);
        ag_ruleset_unref(c->set);
        ag_service__check_free(c);
    }
    return AG_OK;
}

/* Waits out the few instructions of a resume still running on the
 * store's thread, which touches c last. */
static void settled(struct ag_check *c)
{
    while (atomic_load(&c->state) == AG_CHECK_RESUMING)
        sched_yield();
}

/* Judges c's risk now that the store answered, and a risky-scoped shield
 * raised when it began by it: true when that shield answers c (its plan
 * then the shield's alone). While Redis is out there is no history: the
 * shield acts as untrusted-scoped, and the answer says so. */
static bool risky_shielded(struct ag_service *s, struct ag_check *c,
                           bool degraded)
{
    if (degraded)
        c->hist.read = false;
    ag_service__risk_judge(s, c, true);
    if (!c->risky || !ag_service__risky(c))
        return false;
    if (!ag_service__shield_answer(s, c, c->risky, c->risky_ms,
                                   c->challenge_passed, true))
        return false; /* a shadow or waived shield: the policies answer */
    c->risk.risky_fallback = !c->risk.judged;
    c->nsignals = 0;
    return true;
}

int ag_service_check_finish(struct ag_check *c, struct ag_verdict *v)
{
    struct ag_service *s = c->svc;
    settled(c);
    *v = (struct ag_verdict){.net = c->net, .network = s->o.network};
    enum ag_outcome outcome;
    bool degraded = c->store_rc != AG_OK;
    const struct ag_limit_op *closed = degraded ? fails_closed(&c->plan) : NULL;
    if (closed) {
        outcome = AG_OUT_UNAVAILABLE;
        v->kind = AG_VERDICT_STORE_DOWN;
        v->trusted = c->plan.trusted;
        v->closed = closed;
    } else if (risky_shielded(s, c, degraded)) {
        /* A risky-scoped shield challenges it: answered as the shield
         * (ag_service__shielded), not logged one line a check. */
        decided(v, c, degraded);
        v->risk = c->risk;
        outcome = v->decision.allowed ? AG_OUT_ALLOWED : AG_OUT_DENIED;
    } else {
        if (degraded)
            ag_store_check(s->o.fallback, &c->plan, c->res);
        add_signals(c);
        decided(v, c, degraded);
        v->risk = c->risk;
        const struct ag_decision *d = &v->decision;
        note_denials(s, &c->plan, c->res);
        if (!d->allowed)
            ag_events_denied(s->o.events, &c->plan, c->res, degraded);
        if (!degraded && !d->allowed)
            remember_denials(s, c);
        outcome = d->allowed ? AG_OUT_ALLOWED : AG_OUT_DENIED;
        if (d->allowed && c->endpoint == AG_EP_OTP)
            note_send(s, c);
    }
    note_check(s, c, outcome, degraded);
    v->owner = c;
    return AG_OK;
}

void ag_service_check_abandon(struct ag_check *c)
{
    if (!c)
        return;
    int was = AG_CHECK_WAITING;
    if (atomic_compare_exchange_strong(&c->state, &was, AG_CHECK_ABANDONED))
        return; /* the store's answer frees it */
    settled(c);
    release(c);
}

/* Answers a successful login with a device token for its user: the same
 * device id again when the report showed a trusted token (the device
 * keeps its per-device counters), a new one otherwise. */
static void issue_token(struct ag_service *s, const struct ag_request *req,
                        struct ag_digests *d, struct ag_verdict *v)
{
    unsigned char id[AG_DEVICE_ID_BYTES];
    bool renew =
        req->trusted && sodium_hex2bin(id, sizeof id, req->device_id,
                                       AG_DEVICE_ID_HEX, NULL, NULL, NULL) == 0;
    v->kind = AG_VERDICT_TOKEN;
    ag_device_issue(&s->device_key, ag_digests_get(d, AG_KEY_USER),
                    renew ? id : NULL, (uint64_t)time(NULL), v->token);
    v->ttl_s = s->device_ttl_s;
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

/* A success after the application's own account recovery: an event that
 * names the user by its keyed digest alone (the one in the keys of the
 * policies keyed on the user), so that operators see each way back past
 * the cap, and a run of them, an attack on the recovery flow itself. */
static void note_recovered(struct ag_service *s, struct ag_digests *d)
{
    struct ag_event e;
    ag_service__user_event(&e, AG_EV_RECOVERED, d->req, d);
    ag_events_raise(s->o.events, &e);
}
/* A login succeeded with a password the caller found breached: the
 * breached_password_login event, naming the user's digest (that of the
 * policies keyed on user) and the lane, for the application to have the
 * password changed; and its metric. */
static void note_breached_login(struct ag_service *s,
                                const struct ag_request *req,
                                struct ag_digests *d)
{
    struct ag_event e;
    ag_service__user_event(&e, AG_EV_BREACHED_PASSWORD_LOGIN, req, d);
    snprintf(e.lane, sizeof e.lane, "%s",
             req->trusted ? "trusted" : "untrusted");
    ag_events_raise(s->o.events, &e);
    ag_metrics_breached_login(s->o.metrics, req->trusted);
}

int ag_service_report_login(struct ag_service *s, const char *body, size_t len,
                            struct ag_verdict *v)
{
    *v = (struct ag_verdict){.kind = AG_VERDICT_RECORDED};
    struct ag_request req;
    struct ag_error err;
    if (ag_request_parse_report(body, len, &s->o.request, &req, &err)) {
        refused(v, &err);
        return AG_OK;
    }
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    struct ag_ruleset *set;
    struct ag_shield_table *shields;
    struct ag_plan p;
    if (ag_service__plan(s, req.success ? AG_PLAN_SUCCESS : AG_PLAN_FAILURE,
                         &req, &d, &set, &shields, &p, v))
        return AG_OK;
    /* A failure counts in the failure shields of its lane and reason
     * whatever the store says: they count in this instance. A listed
     * request was never judged by one, and counts in none. */
    if (!req.success && !ag_service__match_lists(set, &d))
        ag_shields_count_failure(shields, req.trusted, req.reason);
    ag_shield_table_unref(shields);
    if (!req.success)
        plan_password_fp(s, &req, &d, &p);
    ag_service__send_resets(s);
    struct ag_limit_result res[AG_PLAN_OPS];
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
        ag_service__cleared(s, &p, rc == AG_OK || rc == AG_EUNKNOWN);
    }
    /* A recovery clears what any success clears (the plan above): only
     * its event tells it apart. */
    if (req.success && req.method == AG_METHOD_RECOVERY)
        note_recovered(s, &d);
    ag_ruleset_unref(set);
    if (req.success) {
        /* What proves a new place: a trusted device, or the nonce of a
         * challenge its check passed (true proves nothing). */
        ag_service__risk_teach(
            s, &req, &d,
            req.trusted || (req.pass == AG_PASS_NONCE && req.challenge_passed));
        issue_token(s, &req, &d, v);
        if (req.signals & 1u << AG_SIGNAL_PASSWORD_BREACHED)
            note_breached_login(s, &req, &d);
    }
    return AG_OK;
}

/* A verified code clears the guesses at it counted under the user or the
 * trusted device (ag_limiter_plan_verified_clear says which, and why
 * never the phone's alone), as a login success clears its failures. */
static void clear_verify_guesses(struct ag_service *s,
                                 const struct ag_ruleset *set,
                                 struct ag_digests *d)
{
    struct ag_plan p;
    if (ag_limiter_plan_verified_clear(set, d, &p) || !p.n)
        return;
    int rc = ag_store_clear(s->o.store, &p);
    if (rc)
        ag_store_clear(s->o.fallback, &p);
    ag_events_cleared(s->o.events, &p);
    ag_service__cleared(s, &p, rc == AG_OK || rc == AG_EUNKNOWN);
}

int ag_service_report_otp(struct ag_service *s, const char *body, size_t len,
                          struct ag_verdict *v)
{
    *v = (struct ag_verdict){.kind = AG_VERDICT_RECORDED};
    struct ag_request req;
    struct ag_error err;
    if (ag_request_parse_otp_report(body, len, &s->o.request, &req, &err)) {
        refused(v, &err);
        return AG_OK;
    }
    if (req.verified) {
        struct ag_digests d;
        ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
        struct ag_ruleset *set;
        struct ag_plan p;
        if (ag_service__plan(s, AG_PLAN_VERIFIED, &req, &d, &set, NULL, &p, v))
            return AG_OK;
        /* A number a list settles was never charged a send, so its
         * verifications must not raise its range's share either (an
         * allow-listed test number would cover for pumping around it). */
        if (ag_service__match_lists(set, &d))
            p.n = 0;
        ag_service__send_resets(s);
        struct ag_limit_result res[AG_PLAN_OPS];
        if (p.n && ag_store_check(s->o.store, &p, res)) {
            ag_log(AG_LOG_WARN, "report_degraded",
                   "otp report recorded in the fallback store only");
            ag_store_check(s->o.fallback, &p, res);
        }
        clear_verify_guesses(s, set, &d);
        ag_ruleset_unref(set);
        ag_metrics_otp(s->o.metrics, req.country, true);
        ag_otp_stats_record(&s->stats, s->o.store, req.country,
                            req.phone_prefix, true, (uint64_t)time(NULL));
    }
    return AG_OK;
}
