/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis Cluster store's nodes and slot map (ag_store_cluster_impl.h):
 * which node holds a slot (ag_redis_slot.c), one Redis store
 * (ag_store_redis.c) per node, made the first time a map or a redirection
 * names it, and the refresh thread. The map is fetched from the seeds at
 * start, then every second and at once after a redirection (CLUSTER
 * SLOTS). MOVED updates the map at once, ahead of the next fetch: the
 * slot's new owner is where the command goes again (a redirected command
 * did not run, so this is no re-send); ASK names a node for one command
 * and leaves the map alone.
 */
#include "ag_store_cluster_impl.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_redis_link.h"
#include "ag_redis_reply.h"
#include "ag_redis_slot.h"
#include "ag_store_redis.h"

#define REFRESH_MS 1000

/* The text of the last redirection a node's store reported on this
 * thread: the store calls redirect, then returns or calls the check's
 * done, on the same thread, so the redirection's caller finds it here
 * (ag_store_cluster__moved_owner, ag_store_cluster__redirect_target). */
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
    struct ag_store_cluster__store *c = arg;
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
static int node_index(struct ag_store_cluster__store *c, const char *host,
                      int port, const struct ag_redis_slot_map *map,
                      int map_node)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->port == port && strcmp(c->nodes[i]->host, host) == 0)
            return (int)i;
    if (c->nnodes == AG_STORE_CLUSTER__NODES_MAX)
        return -1;
    struct ag_store_cluster__node *n = calloc(1, sizeof *n);
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
static void remap(struct ag_store_cluster__store *c, const char *asked_host)
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
static void adopt_map(struct ag_store_cluster__store *c,
                      struct ag_redis_slot_map *map, const char *asked_host)
{
    ag_redis_slot_map_free(c->map);
    c->map = map;
    c->mapped = 0;
    copy_host(c->asked_host, asked_host);
    remap(c, c->asked_host);
}

/* Asks host:port for the slot map; NULL if it cannot answer. */
static struct ag_redis_slot_map *fetch_from(struct ag_store_cluster__store *c,
                                            const char *host, int port)
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
void ag_store_cluster__refresh(struct ag_store_cluster__store *c)
{
    struct ag_redis_hostport ask[AG_STORE_CLUSTER__NODES_MAX + AG_SEEDS_MAX];
    size_t nask = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->mapped && nask < AG_STORE_CLUSTER__NODES_MAX;
         i++) {
        if (c->owner_node[i] < 0)
            continue;
        const struct ag_store_cluster__node *n = c->nodes[c->owner_node[i]];
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

void *ag_store_cluster__refresher(void *arg)
{
    struct ag_store_cluster__store *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        c->dirty = false;
        pthread_mutex_unlock(&c->lock);
        ag_store_cluster__refresh(c);
        pthread_mutex_lock(&c->lock);
        if (c->stopping || c->dirty)
            continue;
        struct timespec until = ag_clock_deadline(REFRESH_MS);
        pthread_cond_timedwait(&c->wake, &c->lock, &until);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* The node holding slot now, or -1. Called with the lock held. */
int ag_store_cluster__owner_of(const struct ag_store_cluster__store *c,
                               uint16_t slot)
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
struct ag_store *
ag_store_cluster__moved_owner(struct ag_store_cluster__store *c, int node)
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
        int n = ag_store_cluster__owner_of(c, to.slot);
        s = n >= 0 ? c->nodes[n]->store : NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return s;
}

/* The store of the node that holds key's slot, or NULL; *node (may be
 * NULL) its index. */
struct ag_store *ag_store_cluster__store_at(struct ag_store_cluster__store *c,
                                            const char *key, int *node)
{
    pthread_mutex_lock(&c->lock);
    int n = ag_store_cluster__owner_of(c, ag_redis_slot(key, strlen(key)));
    struct ag_store *s = n >= 0 ? c->nodes[n]->store : NULL;
    pthread_mutex_unlock(&c->lock);
    if (node)
        *node = n;
    return s;
}

/* Looked up under the lock: the node list grows while checks run. */
struct ag_store *ag_store_cluster__node_store(struct ag_store_cluster__store *c,
                                              int node)
{
    pthread_mutex_lock(&c->lock);
    struct ag_store *s = node >= 0 ? c->nodes[node]->store : NULL;
    pthread_mutex_unlock(&c->lock);
    return s;
}

/* Where a redirected command goes next: the owner the map now names
 * (MOVED), or the ASK target for once. Host-less redirections name
 * node's host. */
int ag_store_cluster__redirect_target(struct ag_store_cluster__store *c,
                                      int node, bool *asking)
{
    struct ag_redis_redirect to;
    if (ag_redis_slot_parse_redirect(last_redirect, strlen(last_redirect),
                                     &to) != AG_OK)
        return -1;
    pthread_mutex_lock(&c->lock);
    const char *host = to.host[0] ? to.host : c->nodes[node]->host;
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
    *asking = to.kind == AG_REDIS_ASK;
    return n;
}
