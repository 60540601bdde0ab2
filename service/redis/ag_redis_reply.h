/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reply objects for the Redis connections, built with fewer allocations
 * than hiredis's own: an array and its scalar elements (integers, strings'
 * headers, nils) share one allocation, where hiredis makes one per element.
 * A login check's reply is an array of twelve integers: one allocation and
 * one free instead of thirteen of each, on the dispatcher thread that
 * every check passes through.
 *
 * The objects are ordinary redisReply trees and are read as such; only
 * their freeing differs, so a context given ag_redis_reply_functions frees its
 * replies with ag_redis_reply_free, never freeReplyObject.
 */
#ifndef AG_REDIS_REPLY_H
#define AG_REDIS_REPLY_H

#include <hiredis/hiredis.h>

/* For a reader: ctx->reader->fn = &ag_redis_reply_functions. */
extern redisReplyObjectFunctions ag_redis_reply_functions;

/* Frees a reply those functions built (NULL is fine). */
void ag_redis_reply_free(void *reply);

#endif
