/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the pipe: what ag_redis_pipe.c (the shared queue and its
 * dispatcher threads, the code load, the connection) and ag_redis_lane.c
 * (each event loop's own connection) share, and no other module may use.
 * ag_redis_lane.c builds on ag_redis_pipe.c: it calls these helpers, and
 * the pipe calls it back only through the table it attached.
 *
 * Thread-safety as the pipe's (ag_redis_pipe.h): the fields set at
 * ag_redis_pipe_new are read-only afterwards; the queue, sha and stopping
 * are guarded by lock; epoch, functions and lanes are atomic. A
 * connection (a dispatcher's or a lane's) is its own thread's only.
 */
#ifndef AG_REDIS_PIPE_IMPL_H
#define AG_REDIS_PIPE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <hiredis/hiredis.h>

#include "ag_error.h"
#include "ag_redis_link.h"
#include "ag_redis_pipe.h"

/* Sent before a command redirected by ASK (Redis Cluster), on the same
 * connection. */
#define AG_REDIS_PIPE__ASKING "*1\r\n$6\r\nASKING\r\n"

struct ag_redis_lane;
struct ag_loop;

/* The lanes' entry points, which ag_redis_lane_attach hands the pipe: the
 * pipe calls the lane module only through them, so that the lane, which
 * builds on the pipe, is not called by name from below. */
struct ag_redis_pipe__lanes {
    /* Queues j on loop's lane, made at its first use: false if none
     * could be made (the shared queue then takes j). */
    bool (*send)(struct ag_redis_pipe *p, struct ag_loop *loop,
                 struct ag_redis_job *j);
    /* ag_redis_conn_load on a lane's connection. */
    int (*load)(struct ag_redis_conn *c, bool library, unsigned mask);
    /* Ends every lane: their jobs done with no reply, on the calling
     * thread; their links closed; the lanes freed. */
    void (*free_all)(struct ag_redis_pipe *p);
};

struct ag_redis_conn {
    struct ag_redis_pipe *pipe;
    struct ag_redis_lane *lane; /* a lane's connection; NULL: a dispatcher's */
    pthread_t thread;
    bool started;               /* the thread runs: it is joined at the end */
    struct ag_redis_link *link; /* this thread's only; NULL while
                                   disconnected */
    unsigned epoch;             /* the pipe's epoch when link was made */
};

struct ag_redis_pipe {
    struct ag_redis_addr addr;
    unsigned timeout_ms;
    /* TLS settings shared by every connection (rediss://); NULL for plain
     * Redis, or when they could not be made: tls_error then says why, and
     * every connection fails with it. */
    struct ag_redis_tls *tls;
    char tls_error[AG_ERROR_MSG_MAX];
    const struct ag_redis_code *code; /* borrowed */
    struct ag_redis_breaker *breaker; /* borrowed */
    struct ag_metrics *metrics;       /* borrowed; may be NULL */
    /* Sentinel: one more each time a server answered that it is no
     * longer the master; every connection then replaces a link made
     * before, so that a command sent again after a READONLY does not meet
     * the old master on another connection. */
    atomic_uint epoch;
    atomic_int functions;  /* 1: Redis took the library, checks
                              use FCALL; 0: it refused it; -1:
                              not known yet */
    pthread_mutex_t lock;  /* guards the queue, sha, stopping */
    pthread_cond_t queued; /* dispatchers wait on it */
    struct ag_redis_job *head, *tail;
    bool stopping;
    char sha[AG_REDIS_SCRIPTS][41]; /* each script's SHA1 once Redis told us */
    struct ag_redis_conn conns[AG_REDIS_PIPE_DISPATCHERS];
    /* The loops' lanes, each added by its loop's thread at its first
     * send and never removed before ag_redis_pipe_free: read without a
     * lock. */
    _Atomic(struct ag_redis_lane *) lanes;
    /* Set once by ag_redis_lane_attach before the pipe is used; NULL:
     * every job takes the shared queue. */
    const struct ag_redis_pipe__lanes *lane_fns;
};

/* Closes *l and sets it NULL. */
void ag_redis_pipe__drop(struct ag_redis_link **l);
/* Counts and logs a failed call on l (NULL: out of memory). */
void ag_redis_pipe__failed(struct ag_redis_pipe *p,
                           const struct ag_redis_link *l);
/* Formats argv and buffers it on *l; drops *l if that fails. */
bool ag_redis_pipe__append_argv(struct ag_redis_pipe *p,
                                struct ag_redis_link **l, int argc,
                                const char **argv, const size_t *lens);
/* Notes what Redis said to FUNCTION LOAD: true if Redis has the library. */
bool ag_redis_pipe__note_library(struct ag_redis_pipe *p, const redisReply *r);
/* Notes what Redis said to SCRIPT LOAD of script m: true if it took it
 * (its SHA1 noted); false, logged, if not. */
bool ag_redis_pipe__note_sha(struct ag_redis_pipe *p, unsigned m,
                             const redisReply *r);
/* A READONLY or MASTERDOWN answer: this server is no longer a writable
 * master, and the command did not run. */
bool ag_redis_pipe__not_master(const redisReply *r);
/* A new connection, authenticated, on the right database, with the
 * library and every script loaded; NULL (logged and counted) if any step
 * fails. Blocks for at most a few timeouts. */
struct ag_redis_link *ag_redis_pipe__connect(struct ag_redis_pipe *p);

#endif
