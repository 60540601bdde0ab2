/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis Cluster store (ag_store_cluster.h): the store function table
 * over one Redis store (ag_store_redis.c) per master node, the commands
 * beside the limits routed to the node of their key's slot, and the
 * store's making and end. The nodes and the slot map that says which
 * node holds a key are ag_store_cluster_map.c's; a check or a clear split
 * across slot groups, all or nothing, ag_store_cluster_check.c's.
 *
 * Thread-safety: any thread may check; the map and the node list are
 * guarded by one mutex, held only to look up or swap. A node's store,
 * once made, lives until the cluster store is destroyed.
 */
#include "ag_store_cluster_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_redis_link.h"
#include "ag_redis_slot.h"

/* Ready when every slot has a master whose store answers. */
static int cluster_ping(struct ag_store *base)
{
    struct ag_store_cluster__store *c = (struct ag_store_cluster__store *)base;
    struct ag_store *masters[AG_STORE_CLUSTER__NODES_MAX];
    size_t n = 0;
    pthread_mutex_lock(&c->lock);
    bool complete = c->map && ag_redis_slot_map_complete(c->map);
    /* Every slot's owner, once each (a node of the map that no longer
     * holds a slot, a master before a failover, is not asked). */
    bool seen[AG_STORE_CLUSTER__NODES_MAX] = {false};
    for (unsigned slot = 0; complete && slot < AG_REDIS_SLOTS; slot++) {
        int node = ag_store_cluster__owner_of(c, (uint16_t)slot);
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
    struct ag_store_cluster__store *c = (struct ag_store_cluster__store *)base;
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

static struct ag_store *store_of(struct ag_store_cluster__store *c,
                                 const char *key)
{
    return ag_store_cluster__store_at(c, key, NULL);
}

static void cluster_tally(struct ag_store *base, const char *key,
                          const char *field, const char *name_field,
                          const char *name, unsigned ttl_s)
{
    struct ag_store *s = store_of((struct ag_store_cluster__store *)base, key);
    if (s)
        ag_store_tally(s, key, field, name_field, name, ttl_s);
}

static int cluster_read_hash(struct ag_store *base, const char *key,
                             void **reply)
{
    struct ag_store *s = store_of((struct ag_store_cluster__store *)base, key);
    return s ? ag_store_read_hash(s, key, reply) : AG_ESTORE;
}

static int cluster_command_async(struct ag_store *base, int argc,
                                 const char **argv, const size_t *lens,
                                 int key_at, ag_store_reply_fn done, void *arg)
{
    struct ag_store *s =
        store_of((struct ag_store_cluster__store *)base, argv[key_at]);
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
    struct ag_store_cluster__store *c = (struct ag_store_cluster__store *)base;
    int node;
    struct ag_store *s = ag_store_cluster__store_at(c, argv[key_at], &node);
    int rc =
        s ? ag_store_command(s, argc, argv, lens, key_at, reply) : AG_ESTORE;
    if (rc == AG_EREDIRECT) {
        s = ag_store_cluster__moved_owner(c, node);
        rc = s ? ag_store_command(s, argc, argv, lens, key_at, reply)
               : AG_ESTORE;
    }
    return rc == AG_EREDIRECT ? AG_ESTORE : rc;
}

static void cluster_publish(struct ag_store *base, const char *channel,
                            const char *message)
{
    struct ag_store *s =
        store_of((struct ag_store_cluster__store *)base, message);
    if (s)
        ag_store_publish(s, channel, message);
}

static const struct ag_store_ops cluster_ops = {
    .name = "redis-cluster",
    .check = ag_store_cluster__check,
    .check_async = ag_store_cluster__check_async,
    .clear = ag_store_cluster__clear,
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
    struct ag_store_cluster__store *c = calloc(1, sizeof *c);
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
    ag_store_cluster__refresh(c);
    if (pthread_create(&c->refresher, NULL, ag_store_cluster__refresher, c) !=
        0) {
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
