/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A subscriber: one connection, on its own thread, SUBSCRIBEd to one
 * channel, handing each message to its owner. The deny cache hears on
 * AG_DENY_CACHE_CHANNEL the state keys other instances cleared (an admin
 * reset, a successful login) and drops them (ag_deny_cache); the fleet
 * hears on its channel that a change was recorded (ag_fleet).
 *
 * What is heard is live only while the subscription is: the owner is
 * told live when Redis confirms the SUBSCRIBE, and not live when the
 * connection fails, since a message may be missed in between (a Redis
 * restart loses every one sent while it was down). A PING every 500 ms
 * that goes unanswered for the Redis timeout (at least a second) counts
 * as a failure too: a frozen Redis, or one cut off without the
 * connection closing, sends nothing either. A failed connection is made
 * again after 100 ms, backing off to once a second; a SUBSCRIBE refused
 * (an ACL without the channel) is logged with the channel's name.
 *
 * Where it connects: the URL's server; for Sentinel, the master the
 * sentinels name (a PUBLISH reaches the replicas too); for a cluster, the
 * seed nodes in turn (Redis Cluster sends a PUBLISH to every node). The
 * connection does TLS, AUTH and SELECT as the store's do
 * (ag_redis_link).
 *
 * Its log lines are "<log>_subscribe" (a failure), "<log>_subscribed"
 * and "<log>_unsubscribed". Owns its thread and connection; start and
 * stop from one thread.
 */
#ifndef AG_REDIS_SUB_H
#define AG_REDIS_SUB_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_error.h"
#include "ag_redis_addr.h"

struct ag_metrics;
struct ag_redis_sub;

#define AG_REDIS_SUB_CHANNEL_MAX 64 /* a channel's name at most */

struct ag_redis_sub_opts {
    const char *channel; /* copied */
    const char *log;     /* the log lines' prefix ("deny_cache"); copied */
    /* What is off while unsubscribed, for the log ("the deny cache");
     * copied. */
    const char *what;
    /* A message (text, NUL-terminated, len bytes), on the subscriber's
     * thread. */
    void (*message)(void *ctx, const char *text, size_t len);
    /* Subscribed from now on (true), or no longer (false). */
    void (*live)(void *ctx, bool live);
    void *ctx;
    struct ag_metrics *metrics; /* may be NULL */
};

/* addr is copied (and the copy's password wiped at stop); o's ctx and
 * metrics are borrowed and must outlive the subscriber. Returns AG_OK
 * with *out, or AG_ENOMEM or AG_EINVAL (a channel too long) with err
 * filled. TLS settings that cannot be made (a missing CA file) are logged
 * and leave *out NULL and the owner not live, AG_OK: the service runs, as
 * the store does. The first connection is made on the thread. */
int ag_redis_sub_start(const struct ag_redis_addr *addr, unsigned timeout_ms,
                       const struct ag_redis_sub_opts *o,
                       struct ag_redis_sub **out, struct ag_error *err);
/* Stops and joins the thread, closes the connection, frees s (NULL is
 * fine). The owner is told not live. */
void ag_redis_sub_stop(struct ag_redis_sub *s);

#endif
