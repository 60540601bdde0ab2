/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The deny cache's subscriber: one connection per instance, on its own
 * thread, SUBSCRIBEd to AG_DENY_CACHE_CHANNEL, through which every
 * instance hears the state keys the others cleared (an admin reset, a
 * successful login) and drops them from its deny cache (ag_deny_cache).
 *
 * The cache is live only while the subscription is: it is cleared and
 * made live when Redis confirms the SUBSCRIBE, and cleared and made not
 * live when the connection fails, since a message may be missed in
 * between (a Redis restart loses every one sent while it was down). A
 * PING every 500 ms that goes unanswered for the Redis timeout (at least
 * a second) counts as a failure too: a frozen Redis, or one cut off
 * without the connection closing, sends no invalidations either. A
 * failed connection is made again after 100 ms, backing off to once a
 * second.
 *
 * Where it connects: the URL's server; for Sentinel, the master the
 * sentinels name (a PUBLISH reaches the replicas too); for a cluster, the
 * seed nodes in turn (Redis Cluster sends a PUBLISH to every node). The
 * connection does TLS, AUTH and SELECT as the store's do
 * (ag_redis_link).
 *
 * Owns its thread and connection; start and stop from one thread.
 */
#ifndef AG_REDIS_SUB_H
#define AG_REDIS_SUB_H

#include "ag_error.h"
#include "ag_redis_addr.h"

struct ag_deny_cache;
struct ag_metrics;
struct ag_redis_sub;

/* addr is copied (and the copy's password wiped at stop); cache and
 * metrics (may be NULL) are borrowed and must outlive the subscriber.
 * Returns AG_OK with *out, or AG_ENOMEM with err filled. TLS settings
 * that cannot be made (a missing CA file) are logged and leave *out NULL
 * and the cache off, AG_OK: the service runs, as the store does. The
 * first connection is made on the
 * thread: until it is subscribed, the cache answers nothing. */
int ag_redis_sub_start(const struct ag_redis_addr *addr, unsigned timeout_ms,
                       struct ag_deny_cache *cache, struct ag_metrics *metrics,
                       struct ag_redis_sub **out, struct ag_error *err);
/* Stops and joins the thread, closes the connection, frees s (NULL is
 * fine). The cache is left not live. */
void ag_redis_sub_stop(struct ag_redis_sub *s);

#endif
