/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis Cluster store: the store function table over one Redis store
 * (ag_store_redis.c) per master node, and the slot map that says which
 * node holds a key (ag_redis_slot.c).
 *
 * A check's keys hash to several slots (the user's, the address's, ...),
 * and one FCALL may only touch one slot, so a check becomes one call per
 * slot group, in parallel. The guarantees (README, "Redis Cluster"):
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
 * The map is fetched from the seeds at start, then every second and at
 * once after a redirection (CLUSTER SLOTS), by one refresh thread.
 *
 * Thread-safety: any thread may check; the map and the node list are
 * guarded by one mutex, held only to look up or swap. A node's store,
 * once made, lives until the cluster store is destroyed.
 */
#include "ag_store_cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "ag_clock.h"
#include "ag_deny_cache.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_link.h"
#include "ag_redis_reply.h"
#include "ag_redis_slot.h"

#define NODES_MAX 128  /* nodes ever seen (masters and promoted replicas) */
#define ATTEMPTS_MAX 3 /* a group's sends, redirections included */
#define REFRESH_MS 1000

struct node {
    char host[256];
    int port;
    struct ag_store *store;
    char probe_key[64];
};

struct cluster {
    struct ag_store base;
    struct ag_redis_addr addr; /* credentials and TLS; kind, seeds */
    unsigned timeout_ms;
    struct ag_metrics *metrics;
    pthread_mutex_t lock; /* guards map, nodes, nnodes, stopping, dirty */
    pthread_cond_t wake;  /* the refresh thread waits on it */
    struct ag_redis_slot_map *map; /* NULL until the first fetch */
    int *owner_node; /* per map node index: its index in nodes, or -1 */
    size_t mapped;   /* map nodes owner_node covers */
    struct node *nodes[NODES_MAX];
    size_t nnodes;
    bool stopping;
    bool dirty;           /* a redirection came: fetch the map now */
    size_t live;          /* ccheck objects not yet freed, releases included */
    pthread_cond_t idle;  /* signalled when live falls to 0 */
    char asked_host[256]; /* the address the current map came from */
    pthread_t refresher;
    struct ag_redis_tls *tls; /* rediss+cluster://; NULL if it failed */
    char tls_error[AG_ERROR_MSG_MAX];
    char instance[17];
    atomic_uint_fast64_t seq;
    /* Each node's store's, see ag_store_redis.h. */
    void (*breaker)(void *arg, bool open);
    void *breaker_arg;
};

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
    size_t idx[AG_PLAN_MAX]; /* each op's index in the parent's plan */
    struct ag_plan plan;
    struct ag_limit_result res[AG_PLAN_MAX];
    /* The ops' policies, copied: a release (and a reformat of it) may be
     * built after the check's caller has been answered and has dropped
     * the ruleset the plan borrowed them from. */
    struct ag_policy policies[AG_PLAN_MAX];
};

struct ccheck {
    struct cluster *c;
    const struct ag_plan *plan;
    struct ag_limit_result *res;
    ag_store_done_fn done;
    void *arg;
    atomic_size_t pending; /* groups (then releases) not yet back */
    atomic_bool answered;  /* done has been called */
    size_t ngroups;
    struct group groups[];
};

/* The text of the last redirection a node's store reported on this
 * thread: the store calls redirect, then the check's done, on the same
 * thread, so group_done finds it here. */
static _Thread_local char last_redirect[512];

/* Copies a host name into a 256-byte field, cut at 255 bytes (hosts are
 * shorter: AG_REDIS_HOST_MAX). */
static void copy_host(char dst[256], const char *src)
{
    size_t n = strnlen(src, 255);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void on_redirect(void *arg, const char *text)
{
    struct cluster *c = arg;
    snprintf(last_redirect, sizeof last_redirect, "%s", text);
    pthread_mutex_lock(&c->lock);
    c->dirty = true;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

/* A key in a slot that node holds in map, for its store's probe. */
static void pick_probe_key(const struct ag_redis_slot_map *map, int map_node,
                           char out[64])
{
    for (unsigned t = 0; t < 100000; t++) {
        snprintf(out, 64, "ag::probe:{%u}", t);
        if (ag_redis_slot_map_owner(map, ag_redis_slot(out, strlen(out))) ==
            map_node)
            return;
    }
    snprintf(out, 64, "ag::probe");
}

/* The index in c->nodes of host:port, made (with its store) if new; -1
 * when out of room or memory. Called with the lock held. */
static int node_index(struct cluster *c, const char *host, int port,
                      const struct ag_redis_slot_map *map, int map_node)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->port == port && strcmp(c->nodes[i]->host, host) == 0)
            return (int)i;
    if (c->nnodes == NODES_MAX)
        return -1;
    struct node *n = calloc(1, sizeof *n);
    if (!n)
        return -1;
    copy_host(n->host, host);
    n->port = port;
    pick_probe_key(map, map_node, n->probe_key);
    struct ag_redis_addr a = c->addr;
    a.kind = AG_REDIS_TCP;
    copy_host(a.host, host);
    a.port = port;
    a.db = 0;
    n->store = ag_store_redis_new(&(struct ag_store_redis_opts){
        .addr = &a,
        .timeout_ms = c->timeout_ms,
        .metrics = c->metrics,
        .probe_key = n->probe_key,
        .redirect = on_redirect,
        .redirect_arg = c,
        .breaker = c->breaker,
        .breaker_arg = c->breaker_arg,
    });
    sodium_memzero(a.password, sizeof a.password);
    if (!n->store) {
        free(n);
        return -1;
    }
    c->nodes[c->nnodes] = n;
    return (int)c->nnodes++;
}

/* Points owner_node at c->nodes for every node of c->map, making stores
 * for new ones (an empty host is asked_host, the address that answered).
 * Called with the lock held. */
static void remap(struct cluster *c, const char *asked_host)
{
    size_t n = ag_redis_slot_map_nodes(c->map);
    int *owner = realloc(c->owner_node, (n ? n : 1) * sizeof *owner);
    if (!owner)
        return; /* the old array still covers the nodes it knew */
    c->owner_node = owner;
    for (size_t i = 0; i < n; i++) {
        const char *host = ag_redis_slot_map_host(c->map, i);
        owner[i] =
            node_index(c, host[0] ? host : asked_host,
                       ag_redis_slot_map_port(c->map, i), c->map, (int)i);
    }
    c->mapped = n;
}

/* Swaps map in. Called with the lock held; takes over map. */
static void adopt_map(struct cluster *c, struct ag_redis_slot_map *map,
                      const char *asked_host)
{
    ag_redis_slot_map_free(c->map);
    c->map = map;
    c->mapped = 0;
    copy_host(c->asked_host, asked_host);
    remap(c, c->asked_host);
}

/* Asks host:port for the slot map; NULL if it cannot answer. */
static struct ag_redis_slot_map *fetch_from(struct cluster *c, const char *host,
                                            int port)
{
    struct ag_redis_addr a = c->addr;
    a.kind = AG_REDIS_TCP;
    copy_host(a.host, host);
    a.port = port;
    a.db = 0;
    /* Never less than a second: a map fetch is rare and not on a check's
     * path. */
    unsigned timeout = c->timeout_ms < 1000 ? 1000 : c->timeout_ms;
    struct ag_redis_link *l = NULL;
    struct ag_error err;
    int rc = (a.tls && !c->tls)
                 ? ag_error_set(&err, AG_ESTORE, NULL, "%s", c->tls_error)
                 : ag_redis_link_open(&a, c->tls, timeout, &l, &err);
    sodium_memzero(a.password, sizeof a.password);
    if (rc) {
        ag_log(AG_LOG_WARN, "cluster_slots", "%s:%d: %s", host, port, err.msg);
        return NULL;
    }
    static const char cmd[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    redisReply *r = NULL;
    struct ag_redis_slot_map *map = NULL;
    if (ag_redis_link_append(l, cmd, sizeof cmd - 1) != AG_OK ||
        ag_redis_link_get_reply(l, (void **)&r) != AG_OK)
        ag_log(AG_LOG_WARN, "cluster_slots", "%s:%d: %s", host, port,
               ag_redis_link_error(l));
    else if (ag_redis_slot_map_from_reply(r, &map, &err) != AG_OK)
        ag_log(AG_LOG_WARN, "cluster_slots", "%s:%d: %s", host, port,
               r->type == REDIS_REPLY_ERROR ? r->str : err.msg);
    ag_redis_reply_free(r);
    ag_redis_link_close(l);
    return map;
}

/* One refresh: the nodes the current map names first (a seed may have
 * left), then the seeds. Nodes no map names any more (a master that
 * failed, say) are not asked: each would cost a timeout. */
static void refresh(struct cluster *c)
{
    struct ag_redis_hostport ask[NODES_MAX + AG_SEEDS_MAX];
    size_t nask = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->mapped && nask < NODES_MAX; i++) {
        if (c->owner_node[i] < 0)
            continue;
        const struct node *n = c->nodes[c->owner_node[i]];
        copy_host(ask[nask].host, n->host);
        ask[nask++].port = n->port;
    }
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < c->addr.n_seeds; i++)
        ask[nask++] = c->addr.seeds[i];
    for (size_t i = 0; i < nask; i++) {
        struct ag_redis_slot_map *map = fetch_from(c, ask[i].host, ask[i].port);
        if (!map)
            continue;
        if (!ag_redis_slot_map_complete(map)) {
            /* A node mid-failover may not know every slot yet; another
             * may. */
            ag_redis_slot_map_free(map);
            continue;
        }
        pthread_mutex_lock(&c->lock);
        adopt_map(c, map, ask[i].host);
        pthread_mutex_unlock(&c->lock);
        return;
    }
}

static void *refresher(void *arg)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        c->dirty = false;
        pthread_mutex_unlock(&c->lock);
        refresh(c);
        pthread_mutex_lock(&c->lock);
        if (c->stopping || c->dirty)
            continue;
        struct timespec until = ag_clock_deadline(REFRESH_MS);
        pthread_cond_timedwait(&c->wake, &c->lock, &until);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static uint16_t op_slot(const struct ag_limit_op *op)
{
    return ag_redis_slot(op->key, strlen(op->key));
}

/* The node holding slot now, or -1. Called with the lock held. */
static int owner_of(const struct cluster *c, uint16_t slot)
{
    if (!c->map)
        return -1;
    int m = ag_redis_slot_map_owner(c->map, slot);
    return m < 0 || (size_t)m >= c->mapped ? -1 : c->owner_node[m];
}

/* After an answer of MOVED (its text in last_redirect) from node: the
 * map takes the slot's new owner, whose store is returned to send the
 * command to once more; NULL for anything but a MOVED, or an owner not
 * reachable. host-less redirections name node's host. */
static struct ag_store *moved_owner(struct cluster *c, int node)
{
    struct ag_redis_redirect to;
    if (ag_redis_slot_parse_redirect(last_redirect, strlen(last_redirect),
                                     &to) != AG_OK ||
        to.kind != AG_REDIS_MOVED)
        return NULL;
    pthread_mutex_lock(&c->lock);
    struct ag_store *s = NULL;
    if (c->map && node >= 0) {
        char target[256];
        copy_host(target, to.host[0] ? to.host : c->nodes[node]->host);
        ag_redis_slot_map_moved(c->map, to.slot, target, to.port);
        remap(c, c->asked_host);
        int n = owner_of(c, to.slot);
        s = n >= 0 ? c->nodes[n]->store : NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return s;
}

static void group_done(void *arg, int rc);

/* Sends g to its node, to end in cb; an error is returned and cb is not
 * called. */
static int send_group(struct group *g, ag_store_done_fn cb)
{
    struct cluster *c = g->parent->c;
    pthread_mutex_lock(&c->lock);
    struct ag_store *s = g->node >= 0 ? c->nodes[g->node]->store : NULL;
    pthread_mutex_unlock(&c->lock);
    if (!s)
        return AG_ESTORE;
    g->attempts++;
    g->plan.asking = g->asking;
    return ag_store_check_async(s, &g->plan, g->res, cb, g);
}

static void free_check(struct ccheck *k)
{
    struct cluster *c = k->c;
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
    bool release[AG_PLAN_MAX] = {false};
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

/* A redirection of g (its text in last_redirect): to the owner the map
 * now names (MOVED), or once to the ASK target. Returns whether g went
 * again. */
static bool follow(struct group *g)
{
    struct cluster *c = g->parent->c;
    struct ag_redis_redirect to;
    ag_metrics_count(c->metrics, AG_M_CLUSTER_REDIRECTS);
    if (g->attempts >= ATTEMPTS_MAX ||
        ag_redis_slot_parse_redirect(last_redirect, strlen(last_redirect),
                                     &to) != AG_OK)
        return false;
    pthread_mutex_lock(&c->lock);
    const char *host = to.host[0] ? to.host : c->nodes[g->node]->host;
    char target[256];
    copy_host(target, host);
    int n = -1;
    if (c->map) {
        if (to.kind == AG_REDIS_MOVED) {
            ag_redis_slot_map_moved(c->map, to.slot, target, to.port);
            remap(c, c->asked_host);
        }
        n = node_index(c, target, to.port, c->map,
                       ag_redis_slot_map_owner(c->map, to.slot));
    }
    pthread_mutex_unlock(&c->lock);
    if (n < 0)
        return false;
    g->node = n;
    g->asking = to.kind == AG_REDIS_ASK;
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

/* Splits plan by slot into k's groups (k sized for plan->n of them). */
static size_t split(struct cluster *c, const struct ag_plan *plan,
                    struct ccheck *k)
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
            g->node = owner_of(c, slot);
            g->plan.kind = plan->kind;
            g->plan.trusted = plan->trusted;
        }
        g->idx[g->nops] = i;
        g->policies[g->nops] = *plan->ops[i].policy;
        g->plan.ops[g->nops] = plan->ops[i];
        g->plan.ops[g->nops].policy = &g->policies[g->nops];
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
    return ng;
}

static int cluster_check_async(struct ag_store *base,
                               const struct ag_plan *plan,
                               struct ag_limit_result *res,
                               ag_store_done_fn done, void *arg)
{
    struct cluster *c = (struct cluster *)base;
    if (plan->n == 0)
        return AG_EINVAL;
    struct ccheck *k = calloc(1, sizeof *k + plan->n * sizeof(struct group));
    if (!k)
        return AG_ENOMEM;
    k->c = c;
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

static int cluster_check(struct ag_store *base, const struct ag_plan *plan,
                         struct ag_limit_result *res)
{
    if (plan->n == 0)
        return AG_OK;
    struct waiting w = {.done = false};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    int rc = cluster_check_async(base, plan, res, wake, &w);
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
static int cluster_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct cluster *c = (struct cluster *)base;
    struct ccheck *k =
        calloc(1, sizeof *k + (plan->n ? plan->n : 1) * sizeof(struct group));
    if (!k)
        return AG_ENOMEM;
    k->c = c;
    pthread_mutex_lock(&c->lock);
    k->ngroups = split(c, plan, k);
    pthread_mutex_unlock(&c->lock);
    int rc = AG_OK;
    for (size_t i = 0; i < k->ngroups; i++) {
        struct group *g = &k->groups[i];
        pthread_mutex_lock(&c->lock);
        struct ag_store *s = g->node >= 0 ? c->nodes[g->node]->store : NULL;
        pthread_mutex_unlock(&c->lock);
        int r = s ? ag_store_clear(s, &g->plan) : AG_ESTORE;
        if (r == AG_EREDIRECT) {
            /* Once, to the owner the answer names (a DEL that was
             * redirected did not run). */
            s = moved_owner(c, g->node);
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

/* Ready when every slot has a master whose store answers. */
static int cluster_ping(struct ag_store *base)
{
    struct cluster *c = (struct cluster *)base;
    struct ag_store *masters[NODES_MAX];
    size_t n = 0;
    pthread_mutex_lock(&c->lock);
    bool complete = c->map && ag_redis_slot_map_complete(c->map);
    /* Every slot's owner, once each (a node of the map that no longer
     * holds a slot, a master before a failover, is not asked). */
    bool seen[NODES_MAX] = {false};
    for (unsigned slot = 0; complete && slot < AG_REDIS_SLOTS; slot++) {
        int node = owner_of(c, (uint16_t)slot);
        if (node < 0) {
            complete = false;
        } else if (!seen[node]) {
            seen[node] = true;
            masters[n++] = c->nodes[node]->store;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (!complete)
        return AG_ESTORE;
    for (size_t i = 0; i < n; i++)
        if (ag_store_ping(masters[i]) != AG_OK)
            return AG_ESTORE;
    return AG_OK;
}

static void cluster_destroy(struct ag_store *base)
{
    struct cluster *c = (struct cluster *)base;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->wake);
    /* Releases may still be on their way after their checks were
     * answered: the node stores they use must outlive them. */
    while (c->live)
        pthread_cond_wait(&c->idle, &c->lock);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->refresher, NULL);
    for (size_t i = 0; i < c->nnodes; i++) {
        ag_store_destroy(c->nodes[i]->store);
        free(c->nodes[i]);
    }
    ag_redis_slot_map_free(c->map);
    free(c->owner_node);
    ag_redis_tls_free(c->tls);
    pthread_cond_destroy(&c->idle);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    sodium_memzero(c->addr.password, sizeof c->addr.password);
    free(c);
}

/* The store of the node that holds key's slot, or NULL; *node (may be
 * NULL) its index. */
static struct ag_store *store_at(struct cluster *c, const char *key, int *node)
{
    pthread_mutex_lock(&c->lock);
    int n = owner_of(c, ag_redis_slot(key, strlen(key)));
    struct ag_store *s = n >= 0 ? c->nodes[n]->store : NULL;
    pthread_mutex_unlock(&c->lock);
    if (node)
        *node = n;
    return s;
}

static struct ag_store *store_of(struct cluster *c, const char *key)
{
    return store_at(c, key, NULL);
}

static void cluster_tally(struct ag_store *base, const char *key,
                          const char *field, const char *name_field,
                          const char *name, unsigned ttl_s)
{
    struct ag_store *s = store_of((struct cluster *)base, key);
    if (s)
        ag_store_tally(s, key, field, name_field, name, ttl_s);
}

static int cluster_read_hash(struct ag_store *base, const char *key,
                             void **reply)
{
    struct ag_store *s = store_of((struct cluster *)base, key);
    return s ? ag_store_read_hash(s, key, reply) : AG_ESTORE;
}

static int cluster_command_async(struct ag_store *base, int argc,
                                 const char **argv, const size_t *lens,
                                 int key_at, ag_store_reply_fn done, void *arg)
{
    struct ag_store *s = store_of((struct cluster *)base, argv[key_at]);
    return s ? ag_store_command_async(s, argc, argv, lens, key_at, done, arg)
             : AG_ESTORE;
}

/* A MOVED answer is followed once, as a clear's is: a slot moved since
 * the map was last read (a resharding) costs the command nothing. An ASK
 * (a slot half way through its move) is not followed: the command fails
 * and the caller's own retry finds the slot moved. */
static int cluster_command(struct ag_store *base, int argc, const char **argv,
                           const size_t *lens, int key_at, void **reply)
{
    struct cluster *c = (struct cluster *)base;
    int node;
    struct ag_store *s = store_at(c, argv[key_at], &node);
    int rc =
        s ? ag_store_command(s, argc, argv, lens, key_at, reply) : AG_ESTORE;
    if (rc == AG_EREDIRECT) {
        s = moved_owner(c, node);
        rc = s ? ag_store_command(s, argc, argv, lens, key_at, reply)
               : AG_ESTORE;
    }
    return rc == AG_EREDIRECT ? AG_ESTORE : rc;
}

static void cluster_publish(struct ag_store *base, const char *channel,
                            const char *message)
{
    struct ag_store *s = store_of((struct cluster *)base, message);
    if (s)
        ag_store_publish(s, channel, message);
}

static const struct ag_store_ops cluster_ops = {
    .name = "redis-cluster",
    .check = cluster_check,
    .check_async = cluster_check_async,
    .clear = cluster_clear,
    .ping = cluster_ping,
    .tally = cluster_tally,
    .read_hash = cluster_read_hash,
    .command_async = cluster_command_async,
    .command = cluster_command,
    .publish = cluster_publish,
    .destroy = cluster_destroy,
};

struct ag_store *ag_store_cluster_new(const struct ag_store_redis_opts *o)
{
    struct cluster *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base.ops = &cluster_ops;
    c->addr = *o->addr;
    c->timeout_ms = o->timeout_ms;
    c->metrics = o->metrics;
    c->breaker = o->breaker;
    c->breaker_arg = o->breaker_arg;
    unsigned char id[8];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(c->instance, sizeof c->instance, id, sizeof id);
    atomic_init(&c->seq, 0);
    pthread_mutex_init(&c->lock, NULL);
    ag_clock_cond_init(&c->wake);
    pthread_cond_init(&c->idle, NULL);
    if (c->addr.tls) {
        struct ag_error err;
        if (ag_redis_tls_new(&c->addr, &c->tls, &err) != AG_OK) {
            snprintf(c->tls_error, sizeof c->tls_error, "%s", err.msg);
            ag_log(AG_LOG_ERROR, "redis_tls", "%s", err.msg);
        }
    }
    /* The first map before the first check, if the seeds answer. */
    refresh(c);
    if (pthread_create(&c->refresher, NULL, refresher, c) != 0) {
        pthread_cond_destroy(&c->idle);
        for (size_t i = 0; i < c->nnodes; i++) {
            ag_store_destroy(c->nodes[i]->store);
            free(c->nodes[i]);
        }
        ag_redis_tls_free(c->tls);
        ag_redis_slot_map_free(c->map);
        free(c->owner_node);
        pthread_cond_destroy(&c->wake);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    return &c->base;
}
