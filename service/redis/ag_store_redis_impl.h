/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the Redis store: what ag_store_redis.c (the store's life, its
 * breaker's probe thread and the commands beside the limits) and
 * ag_store_redis_check.c (the check: its command, its reply, the state
 * machine that settles it and the breaker's count) share, and no other
 * module may use. Calls go one way: ag_store_redis.c calls into
 * ag_store_redis_check.c, never the reverse.
 *
 * Thread-safety as the store's (ag_store_redis.h): the fields set at
 * ag_store_redis_new are read-only afterwards; seq is atomic; stopping is
 * guarded by lock; the pipe, the code and the breaker are thread-safe.
 */
#ifndef AG_STORE_REDIS_IMPL_H
#define AG_STORE_REDIS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_limiter.h"
#include "ag_redis_breaker.h"
#include "ag_redis_code.h"
#include "ag_redis_pipe.h"
#include "ag_store_redis.h"

struct ag_store_redis__store {
    struct ag_store base;
    struct ag_redis_code code;
    struct ag_redis_breaker breaker;
    struct ag_redis_pipe *pipe;
    struct ag_metrics *metrics; /* borrowed; may be NULL */
    char instance[17];          /* random hex, makes log members unique */
    atomic_uint_fast64_t seq;   /* with instance, a per-check nonce */
    pthread_mutex_t lock;       /* guards stopping, for the probe */
    pthread_cond_t wake;        /* the probe waits on it */
    bool stopping;
    pthread_t probe;
    /* The probe's check: one fixed-window policy on PROBE_KEY, one second
     * long, so that its key expires within a second, with a limit no
     * number of instances probing reaches, so that it is always allowed
     * and so always written. */
    struct ag_policy probe_policy;
    struct ag_plan probe_plan;
    void (*redirect)(void *arg, const char *text); /* see ag_store_redis.h */
    void *redirect_arg;
    void (*breaker_fn)(void *arg, bool open); /* see ag_store_redis.h */
    void *breaker_arg;
};

/* A Redis Cluster redirection: MOVED (the slot lives elsewhere) or ASK
 * (it is moving there). Either way the command did not run. */
static inline bool ag_store_redis__redirected(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "MOVED ", 6) == 0 ||
            strncmp(r->str, "ASK ", 4) == 0);
}

/* Records how an operation went with the breaker, logging and counting
 * its opening and waking the probe (ag_store_redis_check.c: checks and
 * the commands that count alike). Returns rc. */
int ag_store_redis__outcome(struct ag_store_redis__store *s, int rc,
                            bool orphaned);

/* The store's check and check_async (ag_store_redis_check.c), as
 * ag_store.h describes them. */
int ag_store_redis__check(struct ag_store *base, const struct ag_plan *plan,
                          struct ag_limit_result *res);
int ag_store_redis__check_async(struct ag_store *base,
                                const struct ag_plan *plan,
                                struct ag_limit_result *res,
                                ag_store_done_fn done, void *arg);

/* Whether Redis runs checks again: the probe's check on a fresh
 * connection (ag_store_redis_check.c). Called by the probe thread. */
bool ag_store_redis__probe_check(struct ag_store_redis__store *s);

#endif
