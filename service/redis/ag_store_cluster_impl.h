/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the Redis Cluster store: what ag_store_cluster.c (the function
 * table, the commands routed by their key, the store's life),
 * ag_store_cluster_map.c (the nodes and the slot map, and the thread that
 * refreshes it) and ag_store_cluster_check.c (a plan split across slot
 * groups: the all-or-nothing check, the clear) share, and no other module
 * may use.
 *
 * Thread-safety: the map, the node list, stopping, dirty and live are
 * guarded by lock, held only to look up or swap; the functions below say
 * whether they take it or want it held. A node's store, once made, lives
 * until the cluster store is destroyed.
 */
#ifndef AG_STORE_CLUSTER_IMPL_H
#define AG_STORE_CLUSTER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_error.h"
#include "ag_redis_addr.h"
#include "ag_redis_link.h"
#include "ag_redis_slot.h"
#include "ag_store_cluster.h"

/* Nodes ever seen (masters and promoted replicas). */
#define AG_STORE_CLUSTER__NODES_MAX 128

/* One node ever seen, and its store. */
struct ag_store_cluster__node {
    char host[256];
    int port;
    struct ag_store *store;
    char probe_key[64];
};

struct ag_store_cluster__store {
    struct ag_store base;
    struct ag_redis_addr addr; /* credentials and TLS; kind, seeds */
    unsigned timeout_ms;
    struct ag_metrics *metrics;
    pthread_mutex_t lock; /* guards map, nodes, nnodes, stopping, dirty */
    pthread_cond_t wake;  /* the refresh thread waits on it */
    struct ag_redis_slot_map *map; /* NULL until the first fetch */
    int *owner_node; /* per map node index: its index in nodes, or -1 */
    size_t mapped;   /* map nodes owner_node covers */
    struct ag_store_cluster__node *nodes[AG_STORE_CLUSTER__NODES_MAX];
    size_t nnodes;
    bool stopping;
    bool dirty;           /* a redirection came: fetch the map now */
    size_t live;          /* checks not yet freed, releases included */
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

/* Fetches the slot map from the nodes the current map names, then from
 * the seeds, and adopts the first complete one (ag_store_cluster_map.c).
 * Takes the lock to read and to swap, never while asking. */
void ag_store_cluster__refresh(struct ag_store_cluster__store *c);
/* The refresh thread: a refresh every second, and at once after a
 * redirection, until stopping. arg is the cluster store. */
void *ag_store_cluster__refresher(void *arg);

/* The node holding slot now, or -1. Called with the lock held. */
int ag_store_cluster__owner_of(const struct ag_store_cluster__store *c,
                               uint16_t slot);
/* Node's store, or NULL for node -1. Takes the lock. */
struct ag_store *ag_store_cluster__node_store(struct ag_store_cluster__store *c,
                                              int node);
/* The store of the node that holds key's slot, or NULL; *node (may be
 * NULL) its index. Takes the lock. */
struct ag_store *ag_store_cluster__store_at(struct ag_store_cluster__store *c,
                                            const char *key, int *node);

/* The next two follow a redirection that node's store answered on this
 * thread: the store calls its redirect callback, then returns or calls
 * done, on the same thread, so the map keeps the redirection's text per
 * thread. Both take the lock.
 *
 * moved_owner: for a MOVED, the map takes the slot's new owner, whose
 * store is returned to send the command to once more; NULL for anything
 * but a MOVED, or an owner not reachable. */
struct ag_store *
ag_store_cluster__moved_owner(struct ag_store_cluster__store *c, int node);
/* redirect_target: for a MOVED or an ASK, the map takes a MOVED's new
 * owner; returns the index of the node to send to once more (made if
 * new), *asking set for an ASK, or -1 when the text is no redirection or
 * the node cannot be had. */
int ag_store_cluster__redirect_target(struct ag_store_cluster__store *c,
                                      int node, bool *asking);

/* The store's check, check_async and clear (ag_store_cluster_check.c), as
 * ag_store.h describes them. */
int ag_store_cluster__check(struct ag_store *base, const struct ag_plan *plan,
                            struct ag_limit_result *res);
int ag_store_cluster__check_async(struct ag_store *base,
                                  const struct ag_plan *plan,
                                  struct ag_limit_result *res,
                                  ag_store_done_fn done, void *arg);
int ag_store_cluster__clear(struct ag_store *base, const struct ag_plan *plan);

#endif
