/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scripts of their own (lua/surge.lua, lua/fleet.lua: not pieces of
 * the check library) run through a store's command path
 * (ag_store_command) or a connection of their own (ag_redis_direct):
 * EVALSHA, and EVAL once when Redis answers NOSCRIPT
 * (a restart, SCRIPT FLUSH, a failover: NOSCRIPT means nothing ran, so
 * this is no re-send). A Redis Cluster store routes each by its first
 * key; an open breaker refuses it at once. Each script's SHA1 is computed
 * once, from the embedded text. Thread-safe as the store is.
 */
#ifndef AG_REDIS_SCRIPT_H
#define AG_REDIS_SCRIPT_H

#include <stddef.h>

#include "ag_store.h"

struct ag_redis_direct;

/* Arguments (keys and ARGV together) a script takes at most. */
#define AG_REDIS_SCRIPT_ARGS 32

/* Runs lua/<piece> with nkeys keys then the rest of the nargs arguments
 * of argv (lens their lengths): AG_OK with *reply (a redisReply the
 * caller frees with ag_redis_reply_free; an error reply is the caller's
 * to read); AG_EINVAL for a store without Redis, or a piece that is not
 * embedded, or too many arguments; AG_ESTORE when Redis did not answer
 * (or a Cluster node redirected it). */
int ag_redis_script_run(struct ag_store *store, const char *piece, int nkeys,
                        int nargs, const char *const *argv, const size_t *lens,
                        void **reply);
/* The same, on direct's own connection. */
int ag_redis_script_run_direct(struct ag_redis_direct *direct,
                               const char *piece, int nkeys, int nargs,
                               const char *const *argv, const size_t *lens,
                               void **reply);

#endif
