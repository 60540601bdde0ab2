/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A connection of its own, for traffic that must never wait in line with
 * the checks nor make them wait (the fleet's scripts): one link, made on
 * first use and again after any failure, one command at a time under a
 * mutex. A Redis that cannot be reached costs its caller the timeout and
 * costs the checks, which run on the store's links, nothing.
 *
 * Where it connects: the URL's server; for Sentinel, the master the
 * sentinels name (asked again after a failure, or a READONLY or
 * MASTERDOWN answer); for a cluster, a seed node, then wherever a MOVED
 * answer points (followed once a command; an ASK is followed once with
 * ASKING). Callers whose keys share one hash tag (the fleet's) thus stay
 * on one node. TLS, AUTH and SELECT as the store's links (ag_redis_link).
 */
#ifndef AG_REDIS_DIRECT_H
#define AG_REDIS_DIRECT_H

#include <stddef.h>

#include "ag_error.h"
#include "ag_redis_addr.h"

struct ag_redis_direct;

/* addr is copied (the copy's password wiped at free). AG_OK with *out,
 * or AG_ENOMEM. TLS settings that cannot be made (a missing CA file) are
 * logged, and every command then fails, as the store's do. Nothing is
 * connected yet. */
int ag_redis_direct_new(const struct ag_redis_addr *addr, unsigned timeout_ms,
                        struct ag_redis_direct **out, struct ag_error *err);
void ag_redis_direct_free(struct ag_redis_direct *d);

/* Sends one command and reads its answer: AG_OK with *reply (a
 * redisReply; an error reply is the caller's to read; free it with
 * ag_redis_reply_free), or AG_ESTORE when Redis could not be reached or
 * did not answer within the timeout (the link is dropped; the next call
 * connects again). Thread-safe. */
int ag_redis_direct_command(struct ag_redis_direct *d, int argc,
                            const char **argv, const size_t *lens,
                            void **reply);

#endif
