/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis Cluster store (ag_store_cluster.c): checks over the master
 * nodes of a cluster, each group of a check's keys on the node of its
 * slot, all or nothing across them (reserve, then release on a denial).
 * Keys must be tagged (ag_service_opts.tagged_keys) so that a policy's
 * keys share a slot. Needs Redis 7 functions on every node.
 */
#ifndef AG_STORE_CLUSTER_H
#define AG_STORE_CLUSTER_H

#include "ag_store_redis.h"

/* A store over the cluster whose seed nodes are o->addr's seeds
 * (AG_REDIS_CLUSTER), with its credentials; o->lua, probe_key and
 * redirect are not used. The slot map is fetched at once and then every
 * second; until one is known, checks fail (AG_ESTORE) and ping says not
 * ready. NULL when out of memory or threads. Free with ag_store_destroy. */
struct ag_store *ag_store_cluster_new(const struct ag_store_redis_opts *o);

#endif
