/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The limiter store: where counters live. An interface (a table of function
 * pointers, after Redis's ConnectionType) so that the engine does not know
 * whether it talks to Redis or to the in-process fallback.
 *
 * check() runs a whole plan atomically. For an AG_PLAN_CHECK plan every
 * policy is evaluated and the attempt is recorded only if no enforcing
 * policy denies it; for an AG_PLAN_FAILURE plan each policy records the
 * failure unless it is full or blocked; an AG_PLAN_PEEK plan is evaluated
 * as a check is and writes nothing (the store's state, expiries included,
 * is left as it was: lua/check.lua's mode "peek"). It returns 0 and fills
 * one result per plan operation, or AG_ESTORE when the store could not
 * answer (results are then undefined; AG_ENOMEM from the in-process store
 * when a peek finds no memory to read a set into).
 *
 * The two halves of an all-or-nothing check across Redis Cluster slot
 * groups (the cluster store's, one group per call): an AG_PLAN_RESERVE
 * plan is evaluated and charged exactly as an AG_PLAN_CHECK of its
 * policies, and each result's undo says how to undo that policy's charge
 * (0: not charged). An AG_PLAN_RELEASE plan undoes it: its ops and nonce
 * are the reserve's (the same plan with its kind changed), and the caller
 * passes as res the results its RESERVE filled; the store reads each
 * one's undo and writes nothing into res. Both need the plan's nonce set
 * by the caller, and a Redis with functions: the Redis store refuses
 * either (AG_EINVAL, logged, nothing sent) without a nonce or where it
 * would have to send it as a script. The in-process store answers
 * AG_EINVAL to both: it never shards. A release undoes only what is still
 * there to undo (an expired key, a window since moved on, a cleared key:
 * nothing), and never the blocks a denying policy set. clear() deletes every
 * counter (and block) of the plan's keys, atomically: AG_OK, AG_ESTORE (not
 * done) or AG_EUNKNOWN (sent, never answered: it may be done; a store sends
 * nothing that may have reached it twice). Implementations are
 * thread-safe: the Redis store funnels every caller through its
 * dispatcher connections, the in-process one through a mutex.
 */
#ifndef AG_STORE_H
#define AG_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_error.h"
#include "ag_limiter.h"

struct ag_store;

/* Called once when an asynchronous check ends, on a store thread, with 0
 * (the results are filled) or AG_ESTORE. */
typedef void (*ag_store_done_fn)(void *arg, int rc);

/* Called once when a command_async ends, on a store thread: rc 0 and
 * reply (a redisReply, borrowed for the call; it may be an error reply),
 * or AG_ESTORE and NULL. */
typedef void (*ag_store_reply_fn)(void *arg, int rc, const void *reply);

struct ag_store_ops {
    const char *name;
    int (*check)(struct ag_store *s, const struct ag_plan *plan,
                 struct ag_limit_result *res);
    int (*clear)(struct ag_store *s, const struct ag_plan *plan);
    /* Starts check() without waiting: returns 0 and later calls done, or
     * returns an error and never calls it (the libuv rule). plan and res
     * must stay valid until done. NULL for stores that answer at once. */
    int (*check_async)(struct ag_store *s, const struct ag_plan *plan,
                       struct ag_limit_result *res, ag_store_done_fn done,
                       void *arg);

    /* 0 if the store answers now. */
    int (*ping)(struct ag_store *s);
    /* Figures beside the limits (the OTP conversion report): adds one to
     * field of hash key, sets name_field to name, and has key expire in
     * ttl_s; sent without waiting for an answer, and dropped while the
     * store cannot answer (figures, not limits). NULL: not kept. */
    void (*tally)(struct ag_store *s, const char *key, const char *field,
                  const char *name_field, const char *name, unsigned ttl_s);
    /* Reads hash key whole: AG_OK and *reply (an array of field, value
     * strings; the caller frees it with ag_redis_reply_free), or
     * AG_ESTORE. NULL: AG_EINVAL from ag_store_read_hash. */
    int (*read_hash)(struct ag_store *s, const char *key, void **reply);
    /* One command beside the limits (the security events: a marker, the
     * stream), whose key is argv[key_at] (the cluster store routes by
     * it). Not counted toward the breaker; refused at once (AG_ESTORE)
     * while it is open. command_async sends it without waiting and
     * returns 0 and later calls done (if not NULL), or returns an error
     * and never calls it; command waits: AG_OK and *reply (free it with
     * ag_redis_reply_free), or AG_ESTORE. A Cluster node's store answers
     * command with AG_EREDIRECT for MOVED or ASK (nothing ran; the cluster
     * store follows a MOVED once), and tells its redirect callback of
     * either answer to command_async, whose done gets the answer as it
     * came. NULL for stores without Redis: AG_EINVAL from the wrappers
     * below. */
    int (*command_async)(struct ag_store *s, int argc, const char **argv,
                         const size_t *lens, int key_at, ag_store_reply_fn done,
                         void *arg);
    int (*command)(struct ag_store *s, int argc, const char **argv,
                   const size_t *lens, int key_at, void **reply);
    /* PUBLISH message on channel (the deny cache's invalidations), sent
     * without waiting (the caller publishes a clear once it has been
     * answered); dropped while the store cannot answer. A cluster store sends
     * it to the node of the slot of message, a key (Redis Cluster broadcasts a
     * PUBLISH to every node). NULL: nothing to tell (one instance). */
    void (*publish)(struct ag_store *s, const char *channel,
                    const char *message);
    void (*destroy)(struct ag_store *s);
};

struct ag_store {
    const struct ag_store_ops *ops;
};

#define AG_MEM_KEYS 65536      /* keys the in-process store holds */
#define AG_MEM_MEMBERS 1048576 /* sorted-set members it holds in all */

/* A clock in microseconds since the Unix epoch, for the in-process
 * store. */
typedef uint64_t (*ag_clock_fn)(void *ctx);

/* The in-process store, the fallback of fail-open policies while Redis is
 * down: the same algorithms and all-or-nothing check as the Lua scripts,
 * for this instance alone, in bounded memory (keys slots; members
 * sorted-set members in all) with expiring entries. clock may be NULL for
 * CLOCK_REALTIME, the clock Redis TIME reads, so that windows align to the
 * Unix epoch as they do in Redis (tests pass their own). Free with
 * ag_store_destroy. */
struct ag_store *ag_store_mem_new(size_t keys, size_t members,
                                  ag_clock_fn clock, void *clock_ctx);

static inline int ag_store_check(struct ag_store *s, const struct ag_plan *plan,
                                 struct ag_limit_result *res)
{
    return s->ops->check(s, plan, res);
}

static inline int ag_store_clear(struct ag_store *s, const struct ag_plan *plan)
{
    return s->ops->clear(s, plan);
}

/* Starts an asynchronous check where the store has one; otherwise returns
 * AG_EINVAL at once (run ag_store_check instead). */
static inline int ag_store_check_async(struct ag_store *s,
                                       const struct ag_plan *plan,
                                       struct ag_limit_result *res,
                                       ag_store_done_fn done, void *arg)
{
    if (!s->ops->check_async)
        return AG_EINVAL;
    return s->ops->check_async(s, plan, res, done, arg);
}

static inline int ag_store_ping(struct ag_store *s)

{
    return s->ops->ping(s);
}

static inline void ag_store_tally(struct ag_store *s, const char *key,
                                  const char *field, const char *name_field,
                                  const char *name, unsigned ttl_s)
{
    if (s->ops->tally)
        s->ops->tally(s, key, field, name_field, name, ttl_s);
}

static inline int ag_store_read_hash(struct ag_store *s, const char *key,
                                     void **reply)
{
    return s->ops->read_hash ? s->ops->read_hash(s, key, reply) : AG_EINVAL;
}

static inline int ag_store_command_async(struct ag_store *s, int argc,
                                         const char **argv, const size_t *lens,
                                         int key_at, ag_store_reply_fn done,
                                         void *arg)
{
    if (!s->ops->command_async)
        return AG_EINVAL;
    return s->ops->command_async(s, argc, argv, lens, key_at, done, arg);
}

static inline int ag_store_command(struct ag_store *s, int argc,
                                   const char **argv, const size_t *lens,
                                   int key_at, void **reply)
{
    if (!s->ops->command)
        return AG_EINVAL;
    return s->ops->command(s, argc, argv, lens, key_at, reply);
}

static inline void ag_store_publish(struct ag_store *s, const char *channel,
                                    const char *message)
{
    if (s->ops->publish)
        s->ops->publish(s, channel, message);
}

static inline void ag_store_destroy(struct ag_store *s)
{
    if (s)
        s->ops->destroy(s);
}

#endif
