/* SPDX-License-Identifier: Apache-2.0 */
/* The service's core (ag_service_impl.h): the service and its ruleset,
 * the storage of checks, lanes, plans and lists, and the queue of resets
 * the store missed. */
#include "ag_service.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_challenge.h"
#include "ag_clock.h"
#include "ag_deny_cache.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_lists.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_network.h"
#include "ag_otp_stats.h"
#include "ag_overview.h"
#include "ag_request.h"
#include "ag_service_impl.h"
#include "ag_store.h"
#include "ag_verdict.h"

/* What the network files are, for the policies that need them. */
static void know_network(struct ag_service *s)
{
    const struct ag_network *n = s->o.network;
    size_t nl = ag_network_nlists(n);
    for (size_t i = 0; i < nl && i < AG_NETWORK_LISTS_MAX; i++)
        s->net_lists[i] = ag_network_list_name(n, i);
    s->net_avail = (struct ag_net_avail){
        .country = ag_network_has_country(n),
        .asn = ag_network_has_asn(n),
        .lists = s->net_lists,
        .nlists = nl < AG_NETWORK_LISTS_MAX ? nl : AG_NETWORK_LISTS_MAX,
    };
}

int ag_service_new(const struct ag_service_opts *opts, struct ag_service **out)
{
    struct ag_service *s = calloc(1, sizeof *s);
    if (!s)
        return AG_ENOMEM;
    s->o = *opts;
    ag_device_key_init(&s->device_key, opts->hasher);
    ag_challenge_key_init(&s->challenge_key, opts->hasher);
    atomic_init(&s->pass_true_said_ms, 0);
    ag_otp_stats_init(&s->stats, opts->hasher);
    s->device_ttl_s = opts->device_token_ttl_s ? opts->device_token_ttl_s
                                               : AG_DEVICE_TTL_DEFAULT_S;
    know_network(s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->pending_lock, NULL);
    atomic_init(&s->npending, 0);
    atomic_init(&s->flushing, false);
    atomic_init(&s->waiting, 0);
    if (ag_overview_new(&s->overview)) {
        ag_service_free(s);
        return AG_ENOMEM;
    }
    struct ag_shields_opts so = {
        .store = opts->store,
        .hasher = opts->hasher,
        .tagged_keys = opts->tagged_keys,
        .events = opts->events,
        .metrics = opts->metrics,
        .overview = s->overview,
        .clock_ms = opts->shield_clock_ms,
        .clock_ctx = opts->shield_clock_ctx,
    };
    if (ag_shields_new(&so, &s->shields) ||
        (opts->shield_sync_ms &&
         ag_shields_start(s->shields, opts->shield_sync_ms))) {
        ag_service_free(s);
        return AG_ENOMEM;
    }
    *out = s;
    return AG_OK;
}

void ag_service_free(struct ag_service *s)
{
    if (!s)
        return;
    ag_shields_free(s->shields);
    ag_shield_table_unref(s->shield_table);
    ag_overview_free(s->overview);
    ag_ruleset_unref(s->set);
    ag_device_key_wipe(&s->device_key);
    ag_challenge_key_wipe(&s->challenge_key);
    ag_otp_stats_wipe(&s->stats);
    pthread_mutex_destroy(&s->pending_lock);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Did old's policy of p's name, if any, lack the same file? */
static bool lacked_before(const struct ag_ruleset *old,
                          const struct ag_policy *p, const char *flag,
                          const char *list, const struct ag_net_avail *avail)
{
    for (size_t i = 0; old && i < old->count; i++) {
        const struct ag_policy *q = &old->policies[i];
        if (strcmp(q->name, p->name) != 0)
            continue;
        const char *qlist;
        const char *was =
            q->enabled ? ag_limiter_net_missing(q, avail, &qlist) : NULL;
        return was && strcmp(was, flag) == 0 &&
               (!list || (qlist && strcmp(qlist, list) == 0));
    }
    return false;
}

bool ag_service_net_missing(const struct ag_service *s,
                            const struct ag_policy *p, char *why, size_t cap)
{
    const char *list;
    const char *flag =
        p->enabled ? ag_limiter_net_missing(p, &s->net_avail, &list) : NULL;
    if (!flag)
        return false;
    if (list)
        snprintf(why, cap,
                 "policy %s names the IP list %s, which this instance has "
                 "not loaded (--ip-list %s=PATH): it is skipped here",
                 p->name, list, list);
    else
        snprintf(why, cap,
                 "policy %s needs the %s database, which this instance has "
                 "not loaded (%s): it is skipped here",
                 p->name, strcmp(flag, "--asn-file") == 0 ? "ASN" : "country",
                 flag);
    return true;
}

/* Says once, when set brings it, that an enabled policy needs a network
 * file this instance has not loaded: it is skipped here (a policy set
 * travels between hosts, so it is accepted), and each request it is
 * skipped in says so and counts (abuseguard_skipped_not_loaded_total). */
static void say_missing_files(const struct ag_service *s,
                              const struct ag_ruleset *old,
                              const struct ag_ruleset *set)
{
    for (size_t i = 0; set && i < set->count; i++) {
        const struct ag_policy *p = &set->policies[i];
        char why[AG_SERVICE_NET_WHY];
        if (!ag_service_net_missing(s, p, why, sizeof why))
            continue;
        const char *list;
        const char *flag = ag_limiter_net_missing(p, &s->net_avail, &list);
        if (!lacked_before(old, p, flag, list, &s->net_avail))
            ag_log(AG_LOG_WARN, "policies", "%s", why);
    }
}

void ag_service_set_ruleset(struct ag_service *s, struct ag_ruleset *set)
{
    /* Out of memory for the table: no shield until the next set, which
     * a check survives. */
    struct ag_shield_table *table = ag_shields_table_new(s->shields, set);
    /* Named before any check of set counts under them. */
    ag_overview_name_policies(s->overview, set);
    if (!table)
        ag_log(AG_LOG_ERROR, "shields", "out of memory: shields are off");
    ag_shields_publish(s->shields, table);
    pthread_mutex_lock(&s->lock);
    struct ag_ruleset *old = s->set;
    struct ag_shield_table *old_table = s->shield_table;
    say_missing_files(s, old, set);
    s->set = set;
    s->shield_table = table;
    pthread_mutex_unlock(&s->lock);
    ag_shield_table_unref(old_table);
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

struct ag_shields *ag_service_shields(struct ag_service *s)
{
    return s->shields;
}

struct ag_overview *ag_service_overview(struct ag_service *s)
{
    return s->overview;
}

/* The active set and, if shields is not NULL, its shields: references
 * taken together, so that the shields' policies are the set's. */
static struct ag_ruleset *ruleset_and_shields(struct ag_service *s,
                                              struct ag_shield_table **shields)
{
    pthread_mutex_lock(&s->lock);
    struct ag_ruleset *set = s->set;
    if (set)
        ag_ruleset_ref(set);
    if (shields)
        *shields = set ? ag_shield_table_ref(s->shield_table) : NULL;
    pthread_mutex_unlock(&s->lock);
    return set;
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

struct ag_check *ag_service__check_new(void)
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
void ag_service__check_free(struct ag_check *c)
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

static uint64_t wall_s(void)
{
    return (uint64_t)time(NULL);
}

/* Puts req in the trusted lane if its device token verifies for its user
 * (d holds req's digests). Only a request that sent a token pays for
 * the check; one without a user (an OTP body may lack it) stays
 * untrusted. */
void ag_service__trust_device(struct ag_service *s, struct ag_request *req,
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

static void unavailable(struct ag_verdict *v, const char *why)
{
    v->kind = AG_VERDICT_UNAVAILABLE;
    v->why = why;
}

/* The old form of a pass, true: a pass while lenient (req's
 * challenge_passed says which), counted, and said once a minute at most,
 * for the integrations still sending it. */
static void pass_true(struct ag_service *s, const struct ag_request *req)
{
    bool taken = req->challenge_passed;
    ag_metrics_pass(s->o.metrics, AG_METRICS_PASS_TRUE,
                    taken ? AG_METRICS_PASS_ACCEPTED : AG_METRICS_PASS_REFUSED);
    uint64_t now = ag_clock_mono_ms();
    uint64_t said =
        atomic_load_explicit(&s->pass_true_said_ms, memory_order_relaxed);
    if ((said && now - said < 60000) ||
        !atomic_compare_exchange_strong(&s->pass_true_said_ms, &said, now))
        return;
    if (taken)
        ag_log(AG_LOG_WARN, "challenge_pass_deprecated",
               "a check said \"challenge_passed\": true, which proves "
               "nothing: send the challenge_nonce of the answer that asked "
               "for the challenge (--challenge-pass strict takes true for no "
               "pass; said once a minute)");
    else
        ag_log(AG_LOG_WARN, "challenge_pass_refused",
               "a check said \"challenge_passed\": true, which "
               "--challenge-pass strict takes for no pass: send the "
               "challenge_nonce of the answer that asked for the challenge "
               "(said once a minute)");
}

/* A check's pass (req->pass): a nonce verified for req's endpoint,
 * subject and lane makes it a pass, and its id goes into id_hex (else
 * ""); true is one while lenient (the parser said so), none while
 * strict.
 * Counted in the metrics when count is true (a check, not an inspect). */
static void judge_pass(struct ag_service *s, struct ag_request *req,
                       struct ag_digests *d, bool count, char *id_hex)
{
    id_hex[0] = '\0';
    if (req->pass == AG_PASS_TRUE && count)
        pass_true(s, req);
    if (req->pass != AG_PASS_NONCE)
        return;
    const char *subject = ag_digests_subject(d);
    enum ag_challenge_verdict verdict =
        subject ? ag_challenge_verify(&s->challenge_key, req->pass_nonce,
                                      strlen(req->pass_nonce), req->endpoint,
                                      req->trusted, subject, wall_s(), id_hex)
                : AG_CHALLENGE_FORGED;
    req->challenge_passed = verdict == AG_CHALLENGE_VALID;
    if (count)
        ag_metrics_pass(s->o.metrics, AG_METRICS_PASS_NONCE,
                        verdict == AG_CHALLENGE_VALID ? AG_METRICS_PASS_ACCEPTED
                        : verdict == AG_CHALLENGE_EXPIRED
                            ? AG_METRICS_PASS_EXPIRED
                            : AG_METRICS_PASS_FORGED);
}

/* The address's country, autonomous system and lists, for the policies
 * keyed on them and the answer; no lookup without network files. */
void ag_service__look_up_network(struct ag_service *s, struct ag_request *req)
{
    req->net.avail = &s->net_avail;
    if (!ag_network_active(s->o.network) || !(req->have & 1u << AG_KEY_IP))
        return;
    struct ag_netinfo ni;
    ag_network_lookup(s->o.network, &req->ip, &ni);
    ag_request_network(req, &s->net_avail, ni.country, ni.asn, ni.lists,
                       ni.lists_special);
    req->net.placed = ni.placed;
    req->net.place = ni.place;
}

/* Counts the skips p's planning added since it held from named ones and
 * more[] past them (struct ag_plan's skipped and skipped_more): those
 * past the names under "_other". An inspect's are no request's. */
static void count_skips(const struct ag_service *s, const struct ag_plan *p,
                        size_t from, const uint32_t more[2])
{
    if (p->kind == AG_PLAN_PEEK)
        return;
    for (size_t i = from; i < p->nskipped; i++)
        ag_metrics_skipped(s->o.metrics, p->skipped[i].policy->name,
                           p->skipped[i].why == AG_SKIP_NOT_LOADED);
    for (int why = 0; why < 2; why++)
        for (uint32_t k = more[why]; k < p->skipped_more[why]; k++)
            ag_metrics_skipped(s->o.metrics, NULL, why == AG_SKIP_NOT_LOADED);
}

int ag_service__plan(struct ag_service *s, enum ag_plan_kind kind,
                     struct ag_request *req, struct ag_digests *d,
                     struct ag_ruleset **set, struct ag_shield_table **shields,
                     struct ag_plan *p, struct ag_verdict *v)
{
    ag_service__trust_device(s, req, d);
    ag_service__look_up_network(s, req);
    if (v) {
        v->net = req->net;
        v->network = s->o.network;
    }
    char pass_id[AG_CHALLENGE_ID_HEX + 1] = "";
    if (kind == AG_PLAN_CHECK || kind == AG_PLAN_PEEK ||
        kind == AG_PLAN_SUCCESS)
        judge_pass(s, req, d, kind == AG_PLAN_CHECK, pass_id);
    *set = ruleset_and_shields(s, shields);
    if (!*set) {
        unavailable(v, "policies are not loaded yet");
        return AG_ENOTFOUND;
    }
    int rc = ag_limiter_plan(*set, kind, d, p);
    if (!rc)
        count_skips(s, p, 0, (const uint32_t[2]){0, 0});
    /* A pass is used once: its nonce is charged beside the policies. */
    if (!rc && pass_id[0] && kind != AG_PLAN_SUCCESS)
        rc = ag_limiter_plan_pass(p, pass_id, d->tagged);
    if (rc) {
        ag_log(AG_LOG_ERROR, "plan",
               "more than %d policies apply to one request", AG_PLAN_MAX);
        unavailable(v, "too many policies apply");
        ag_ruleset_unref(*set);
        *set = NULL;
        if (shields) {
            ag_shield_table_unref(*shields);
            *shields = NULL;
        }
    }
    return rc;
}

int ag_service__plan_signals(struct ag_check *c, struct ag_digests *d,
                             struct ag_verdict *v)
{
    size_t from = c->plan.nskipped;
    uint32_t more[2] = {c->plan.skipped_more[0], c->plan.skipped_more[1]};
    int rc =
        ag_limiter_plan_signals(c->set, &c->plan, d, c->signals, &c->nsignals);
    count_skips(c->svc, &c->plan, from, more);
    if (rc) {
        ag_log(AG_LOG_ERROR, "plan",
               "more than %d signal policies, or %d policies in all, apply "
               "to one request",
               AG_SIGNALS_MAX, AG_PLAN_MAX);
        unavailable(v, "too many policies apply");
    }
    return rc;
}

/* The allow or deny entry that settles the request, if any. */
const struct ag_list_entry *
ag_service__match_lists(const struct ag_ruleset *set, struct ag_digests *d)
{
    if (!set->nlists)
        return NULL;
    return ag_lists_match(set->lists, set->nlists, d->req,
                          ag_digests_get(d, AG_KEY_USER),
                          ag_digests_get(d, AG_KEY_PHONE));
}

bool ag_service__shielded(struct ag_service *s, struct ag_check *c,
                          const struct ag_request *req, bool count)
{
    uint64_t ms;
    const struct ag_shield *sh;
    if (!c->plan.history) {
        /* No history to judge by: every shield as untrusted-scoped. */
        sh = ag_shields_judge(c->shields, c->endpoint, req->trusted, &ms);
        return sh && ag_service__shield_answer(s, c, sh, ms,
                                               req->challenge_passed, count);
    }
    /* An untrusted-scoped shield answers first, whatever a risky-scoped
     * one would say; a risky-scoped one judges once the history is read
     * (ag_service_risk.c). */
    sh = ag_shields_judge_scope(c->shields, c->endpoint, req->trusted,
                                AG_SHIELD_SCOPE_UNTRUSTED, &ms);
    if (sh &&
        ag_service__shield_answer(s, c, sh, ms, req->challenge_passed, count))
        return true;
    c->risky = ag_shields_judge_scope(c->shields, c->endpoint, req->trusted,
                                      AG_SHIELD_SCOPE_RISKY, &c->risky_ms);
    return false;
}

bool ag_service__shield_answer(struct ag_service *s, struct ag_check *c,
                               const struct ag_shield *sh, uint64_t ms,
                               bool passed, bool count)
{
    struct ag_limit_op op = {
        .policy = sh->policy,
        .waived = sh->policy->action == AG_ACTION_CHALLENGE && passed,
    };
    op.shadow = sh->policy->mode == AG_MODE_SHADOW || op.waived;
    memcpy(op.key, sh->key, sizeof op.key);
    /* Counted (the metrics, the overview), but not logged one line a
     * check: under a wave that would be a line for every attempt, and the
     * shield's raise already said it all (ag_shields__announce). */
    if (count) {
        bool challenge =
            op.waived ||
            (sh->policy->action == AG_ACTION_CHALLENGE && !op.shadow);
        if (challenge)
            ag_metrics_challenge(s->o.metrics, sh->policy->name, op.waived);
        else
            ag_metrics_denial(s->o.metrics, sh->policy->name, op.shadow);
        enum ag_overview_trip trip =
            challenge
                ? (op.waived ? AG_OVERVIEW_CHALLENGE_PASSED
                             : AG_OVERVIEW_CHALLENGED)
                : (op.shadow ? AG_OVERVIEW_SHADOW_DENIED : AG_OVERVIEW_DENIED);
        ag_overview_trip(s->overview, ag_clock_wall_ms(), sh->policy->name,
                         trip);
    }
    if (op.shadow)
        return false;
    c->plan.n = 1;
    c->plan.ops[0] = op;
    c->res[0] = (struct ag_limit_result){
        .allowed = false, .retry_after_ms = ms, .reset_after_ms = ms};
    return true;
}

void ag_service__user_event(struct ag_event *e, enum ag_event_type type,
                            const struct ag_request *req, struct ag_digests *d)
{
    ag_event_init(e, type);
    e->endpoint = (int)AG_EP_LOGIN;
    snprintf(e->key, sizeof e->key, "%s", ag_digests_get(d, AG_KEY_USER));
    memcpy(e->ref, req->ref, sizeof e->ref);
    ag_event_network(e, &req->net);
}

/* The keys of p were cleared (a reset, a successful login): dropped from
 * this instance's cache, and, when the store took the clear (told), from
 * every other instance's through the store. Published whether or not
 * this instance caches: the others may. */
void ag_service__cleared(struct ag_service *s, const struct ag_plan *p,
                         bool told)
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

/* Queues the cleared op for the store; false if the queue is full. */
bool ag_service__queue_reset(struct ag_service *s, const struct ag_limit_op *op)
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
        struct ag_service__pending batch[AG_PLAN_MAX];
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
                ag_service__cleared(s, &p, true);
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

void ag_service__send_resets(struct ag_service *s)
{
    if (atomic_load_explicit(&s->npending, memory_order_relaxed))
        flush_pending(s);
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
    if (ready)
        ag_service__send_resets(s);
    return ready;
}

int ag_service_conversion(struct ag_service *s, int by, uint32_t window_s,
                          json_t **out)
{
    return ag_otp_stats_report(&s->stats, s->o.store, (enum ag_otp_by)by,
                               window_s, (uint64_t)time(NULL), out);
}

void ag_verdict_release(struct ag_verdict *v)
{
    if (!v || !v->owner)
        return;
    ag_shield_table_unref(v->owner->shields);
    ag_ruleset_unref(v->owner->set);
    ag_service__check_free(v->owner);
    v->owner = NULL;
    v->plan = NULL;
    v->res = NULL;
    v->entry = NULL;
    v->closed = NULL;
}
