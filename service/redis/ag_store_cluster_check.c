/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis Cluster store's plans (ag_store_cluster_impl.h): a check's
 * keys hash to several slots (the user's, the address's, ...), and one
 * FCALL may only touch one slot, so a check becomes one call per slot
 * group, in parallel, each to the node the map names
 * (ag_store_cluster_map.c). The guarantees (docs/operations.md,
 * "Redis Cluster"):
 * - Never over-admit: each group's policies are judged and charged
 *   atomically on the node that holds them, exactly as on one Redis.
 * - All or nothing: a check of several groups sends each as a RESERVE
 *   (judged and charged as a check, reporting what it charged); if any
 *   group denied, each group that charged is sent a RELEASE that undoes
 *   exactly that. Until the release lands another check may see the
 *   charge and be denied where one Redis would have allowed it: the
 *   price, never the reverse. A release that fails leaves the charge (an
 *   over-count, never an over-admission).
 * - A peek (the admin inspect) writes nothing, so each group is peeked
 *   on its own, with nothing to reserve or release.
 * - A failure report's groups record independently (as they do on one
 *   Redis); the password fingerprint is judged with the user's group, so
 *   a repeated password still counts once there but not in groups keyed
 *   on other identifiers.
 * - MOVED updates the map and sends the group to the owner (a redirected
 *   command did not run, so this is no re-send); ASK sends it to the
 *   target once with ASKING. A node whose connection fails opens its own
 *   breaker: checks whose keys live elsewhere go on.
 * A clear splits its plan the same way and clears each group on its node.
 */
#include "ag_store_cluster_impl.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_deny_cache.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_pipe.h"
#include "ag_redis_slot.h"

#define ATTEMPTS_MAX 3 /* a group's sends, redirections included */

struct ccheck;

/* One slot's share of a check, sent to the node that holds the slot. */
struct group {
    struct ccheck *parent;
    uint16_t slot;
    int node; /* index in nodes */
    int attempts;
    int rc;
    bool asking;
    size_t nops;
    size_t idx[AG_PLAN_OPS]; /* each op's index in the parent's plan */
    struct ag_plan plan;
    struct ag_limit_result res[AG_PLAN_OPS];
};

struct ccheck {
    struct ag_store_cluster__store *c;
    const struct ag_plan *plan;
    struct ag_limit_result *res;
    ag_store_done_fn done;
    void *arg;
    atomic_size_t pending; /* groups (then releases) not yet back */
    atomic_bool answered;  /* done has been called */
    size_t ngroups;
    /* The ops' policies, copied, one per op of the plan (after the
     * groups, in the same allocation): a release (and a reformat of it)
     * may be built after the check's caller has been answered and has
     * dropped the ruleset the plan borrowed them from. */
    struct ag_policy *policies;
    struct group groups[];
};

static uint16_t op_slot(const struct ag_limit_op *op)
{
    return ag_redis_slot(op->key, strlen(op->key));
}

static void group_done(void *arg, int rc);

/* Sends g to its node, to end in cb; an error is returned and cb is not
 * called. */
static int send_group(struct group *g, ag_store_done_fn cb)
{
    struct ag_store *s = ag_store_cluster__node_store(g->parent->c, g->node);
    if (!s)
        return AG_ESTORE;
    g->attempts++;
    g->plan.asking = g->asking;
    return ag_store_check_async(s, &g->plan, g->res, cb, g);
}

static void free_check(struct ccheck *k)
{
    struct ag_store_cluster__store *c = k->c;
    free(k);
    pthread_mutex_lock(&c->lock);
    if (--c->live == 0)
        pthread_cond_broadcast(&c->idle);
    pthread_mutex_unlock(&c->lock);
}

/* Undoes what each group that allowed charged, after another denied (or
 * failed). Fire and forget: the answer does not wait. Once a release has
 * landed, its keys are published on the deny cache's channel: a check
 * that saw the reserved charge meanwhile may have been denied where one
 * Redis would have allowed, and its denial cached for the full wait, on
 * any instance (this one's subscriber hears it too). A check that saw the
 * charge was sent before the release landed, so before this publish: its
 * epoch (ag_deny_cache.h) drops an insert that comes after. */
static void release_done(void *arg, int rc)
{
    struct group *g = arg;
    if (rc)
        ag_log(AG_LOG_WARN, "cluster_release_failed",
               "a charge stays on slot %u (an over-count)", g->slot);
    else
        for (size_t i = 0; i < g->nops; i++)
            if (g->res[i].undo)
                ag_store_publish(&g->parent->c->base, AG_DENY_CACHE_CHANNEL,
                                 g->plan.ops[i].key);
    if (atomic_fetch_sub(&g->parent->pending, 1) == 1)
        free_check(g->parent);
}

static bool charged(const struct group *g)
{
    for (size_t i = 0; i < g->nops; i++)
        if (g->res[i].undo)
            return true;
    return false;
}

static bool group_denied(const struct group *g)
{
    for (size_t i = 0; i < g->nops; i++)
        if (!g->res[i].allowed && !g->plan.ops[i].shadow)
            return true;
    return false;
}

/* Every group is back: answer, then release what must be. */
static void finish(struct ccheck *k)
{
    int rc = AG_OK;
    bool denied = false;
    for (size_t i = 0; i < k->ngroups; i++) {
        struct group *g = &k->groups[i];
        if (g->rc)
            rc = AG_ESTORE;
        else if (group_denied(g))
            denied = true;
    }
    bool reserve = k->ngroups > 1 && k->groups[0].plan.kind == AG_PLAN_RESERVE;
    /* Which groups to release: on a denial or a failure, every reserved
     * group that answered and charged. */
    size_t nrelease = 0;
    bool release[AG_PLAN_OPS] = {false};
    if (reserve && (denied || rc))
        for (size_t i = 0; i < k->ngroups; i++) {
            struct group *g = &k->groups[i];
            if (!g->rc && !group_denied(g) && charged(g)) {
                release[i] = true;
                nrelease++;
            }
        }
    if (rc == AG_OK)
        for (size_t i = 0; i < k->ngroups; i++) {
            struct group *g = &k->groups[i];
            for (size_t j = 0; j < g->nops; j++) {
                k->res[g->idx[j]] = g->res[j];
                /* Released: what was charged is given back. */
                if (release[i] && g->res[j].undo)
                    k->res[g->idx[j]].remaining++;
            }
        }
    ag_store_done_fn done = k->done;
    void *arg = k->arg;
    if (!nrelease) {
        free_check(k);
        done(arg, rc);
        return;
    }
    ag_metrics_count(k->c->metrics, AG_M_CLUSTER_RELEASES);
    /* One count more than the releases, held by this loop: a release
     * that comes back before the next is sent must not free k. The
     * releases are queued before the caller is answered (sending only
     * queues), so none is formatted after the caller let go of its plan.
     * A group reserved after an ASK is released the same way, with
     * ASKING, on the node that took the reserve. */
    atomic_store(&k->pending, nrelease + 1);
    for (size_t i = 0; i < k->ngroups; i++) {
        if (!release[i])
            continue;
        struct group *g = &k->groups[i];
        g->plan.kind = AG_PLAN_RELEASE;
        if (send_group(g, release_done) != AG_OK)
            release_done(g, AG_ESTORE);
    }
    done(arg, rc);
    if (atomic_fetch_sub(&k->pending, 1) == 1)
        free_check(k);
}

/* A redirection of g (its text kept by the map, per thread): to the
 * owner the map now names (MOVED), or once to the ASK target. Returns
 * whether g went again. */
static bool follow(struct group *g)
{
    struct ag_store_cluster__store *c = g->parent->c;
    ag_metrics_count(c->metrics, AG_M_CLUSTER_REDIRECTS);
    if (g->attempts >= ATTEMPTS_MAX)
        return false;
    bool asking;
    int n = ag_store_cluster__redirect_target(c, g->node, &asking);
    if (n < 0)
        return false;
    g->node = n;
    g->asking = asking;
    return send_group(g, group_done) == AG_OK;
}

static void group_done(void *arg, int rc)
{
    struct group *g = arg;
    if (rc == AG_EREDIRECT && follow(g))
        return;
    g->rc = rc == AG_EREDIRECT ? AG_ESTORE : rc;
    if (atomic_fetch_sub(&g->parent->pending, 1) == 1)
        finish(g->parent);
}

/* A check of n ops on c: room for n groups and n policies, zeroed; NULL
 * when out of memory. Free with free(). */
static struct ccheck *ccheck_new(struct ag_store_cluster__store *c, size_t n)
{
    _Static_assert(sizeof(struct group) % _Alignof(struct ag_policy) == 0,
                   "the policies after the groups are aligned");
    struct ccheck *k = calloc(
        1, sizeof *k + n * (sizeof(struct group) + sizeof(struct ag_policy)));
    if (!k)
        return NULL;
    k->policies = (struct ag_policy *)(void *)&k->groups[n];
    k->c = c;
    return k;
}

/* Splits plan by slot into k's groups (k sized for plan->n of them). */
static size_t split(struct ag_store_cluster__store *c,
                    const struct ag_plan *plan, struct ccheck *k)
{
    size_t ng = 0;
    for (size_t i = 0; i < plan->n; i++) {
        uint16_t slot = op_slot(&plan->ops[i]);
        struct group *g = NULL;
        for (size_t j = 0; j < ng && !g; j++)
            if (k->groups[j].slot == slot)
                g = &k->groups[j];
        if (!g) {
            g = &k->groups[ng++];
            g->parent = k;
            g->slot = slot;
            g->node = ag_store_cluster__owner_of(c, slot);
            g->plan.kind = plan->kind;
            g->plan.trusted = plan->trusted;
        }
        g->idx[g->nops] = i;
        k->policies[i] = *plan->ops[i].policy;
        g->plan.ops[g->nops] = plan->ops[i];
        g->plan.ops[g->nops].policy = &k->policies[i];
        g->nops++;
        g->plan.n = g->nops;
    }
    /* The fingerprint goes with the group whose slot its set shares. */
    if (plan->kind == AG_PLAN_FAILURE && plan->fp[0]) {
        uint16_t slot = ag_redis_slot(plan->fp_key, strlen(plan->fp_key));
        for (size_t j = 0; j < ng; j++)
            if (k->groups[j].slot == slot) {
                memcpy(k->groups[j].plan.fp, plan->fp, sizeof plan->fp);
                memcpy(k->groups[j].plan.fp_key, plan->fp_key,
                       sizeof plan->fp_key);
                k->groups[j].plan.fp_window_s = plan->fp_window_s;
            }
    }
    /* So does the history, when a group's slot is its key's (tagged keys:
     * a policy keyed on the user alone): no call more. Otherwise it is
     * not read, and the check says so. */
    if (plan->history) {
        plan->history->read = false;
        uint16_t slot =
            ag_redis_slot(plan->history->key, strlen(plan->history->key));
        for (size_t j = 0; j < ng; j++)
            if (k->groups[j].slot == slot) {
                k->groups[j].plan.history = plan->history;
                break;
            }
    }
    return ng;
}

int ag_store_cluster__check_async(struct ag_store *base,
                                  const struct ag_plan *plan,
                                  struct ag_limit_result *res,
                                  ag_store_done_fn done, void *arg)
{
    struct ag_store_cluster__store *c = (struct ag_store_cluster__store *)base;
    if (plan->n == 0)
        return AG_EINVAL;
    struct ccheck *k = ccheck_new(c, plan->n);
    if (!k)
        return AG_ENOMEM;
    k->plan = plan;
    k->res = res;
    k->done = done;
    k->arg = arg;
    pthread_mutex_lock(&c->lock);
    k->ngroups = split(c, plan, k);
    bool routable = c->map != NULL && !c->stopping;
    for (size_t i = 0; i < k->ngroups; i++)
        routable = routable && k->groups[i].node >= 0;
    if (routable)
        c->live++;
    pthread_mutex_unlock(&c->lock);
    if (!routable) {
        free(k);
        return AG_ESTORE;
    }
    if (plan->kind == AG_PLAN_CHECK && k->ngroups > 1) {
        /* One nonce for a check's reserves and releases. */
        char nonce[AG_NONCE_MAX];
        uint_fast64_t seq = atomic_fetch_add(&c->seq, 1);
        snprintf(nonce, sizeof nonce, "%sc%" PRIxFAST64, c->instance, seq);
        for (size_t i = 0; i < k->ngroups; i++) {
            k->groups[i].plan.kind = AG_PLAN_RESERVE;
            snprintf(k->groups[i].plan.nonce, sizeof k->groups[i].plan.nonce,
                     "%s", nonce);
        }
    }
    /* One count more than the groups, held by this loop: the last group
     * back must not finish (and free) k while the loop still reads it.
     * Once one group is away, the check answers through done, whatever
     * the others do. */
    size_t ngroups = k->ngroups;
    atomic_init(&k->pending, ngroups + 1);
    for (size_t i = 0; i < ngroups; i++) {
        struct group *g = &k->groups[i];
        int rc = send_group(g, group_done);
        if (rc == AG_OK)
            continue;
        if (i == 0) {
            free_check(k);
            return rc;
        }
        g->rc = AG_ESTORE;
        atomic_fetch_sub(&k->pending, 1);
    }
    if (atomic_fetch_sub(&k->pending, 1) == 1)
        finish(k);
    return AG_OK;
}

struct waiting {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int rc;
};

static void wake(void *arg, int rc)
{
    struct waiting *w = arg;
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int ag_store_cluster__check(struct ag_store *base, const struct ag_plan *plan,
                            struct ag_limit_result *res)
{
    if (plan->n == 0)
        return AG_OK;
    struct waiting w = {.done = false};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    /* The node stores' checks take their shared queues: on a loop's
     * thread, its lane could not answer while this waits. */
    ag_redis_pipe_wait_begin();
    int rc = ag_store_cluster__check_async(base, plan, res, wake, &w);
    ag_redis_pipe_wait_end();
    if (rc == AG_OK) {
        pthread_mutex_lock(&w.lock);
        while (!w.done)
            pthread_cond_wait(&w.cond, &w.lock);
        pthread_mutex_unlock(&w.lock);
        rc = w.rc;
    }
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    return rc;
}

/* Clears each slot's keys on its node; the first failure is the answer
 * (the others are still tried). */
int ag_store_cluster__clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct ag_store_cluster__store *c = (struct ag_store_cluster__store *)base;
    struct ccheck *k = ccheck_new(c, plan->n ? plan->n : 1);
    if (!k)
        return AG_ENOMEM;
    pthread_mutex_lock(&c->lock);
    k->ngroups = split(c, plan, k);
    pthread_mutex_unlock(&c->lock);
    int rc = AG_OK;
    for (size_t i = 0; i < k->ngroups; i++) {
        struct group *g = &k->groups[i];
        struct ag_store *s = ag_store_cluster__node_store(c, g->node);
        int r = s ? ag_store_clear(s, &g->plan) : AG_ESTORE;
        if (r == AG_EREDIRECT) {
            /* Once, to the owner the answer names (a DEL that was
             * redirected did not run). */
            s = ag_store_cluster__moved_owner(c, g->node);
            r = s ? ag_store_clear(s, &g->plan) : AG_ESTORE;
        }
        if (r == AG_EREDIRECT)
            r = AG_ESTORE;
        if (r && !rc)
            rc = r;
    }
    free(k);
    return rc;
}
