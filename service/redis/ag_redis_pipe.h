/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store's pipeline ("auto-pipelining"): a caller formats its
 * command as RESP, queues it as a job and is called back. AG_REDIS_PIPE_
 * DISPATCHERS threads, each with its own connection (an ag_redis_link,
 * used by one thread at a time), take everything queued
 * (AG_REDIS_PIPE_BATCH at most), write it in one go and read the replies
 * in order. While one batch is on the wire the next one gathers, so under
 * load many commands share each write and read system call on both sides,
 * and Redis serves them nearly at its pipelined rate; with one command in
 * flight it is still one round trip.
 *
 * A connection is made when a batch needs one and the breaker is closed:
 * connect, the TLS handshake for rediss:// (with TLS settings made once
 * with the pipe and shared by its connections), AUTH, SELECT, then the
 * store's code loaded in one round trip (the function library and every
 * script, so a check formatted either way finds its code). One that Redis
 * closed while it sat idle is noticed before a batch is written on it (a
 * restart, a failover, CLIENT KILL) and replaced. The pipe notes what
 * Redis did with the code: the scripts' SHA1s, and whether it took the
 * library (checks then use FCALL) or refuses FUNCTION (Redis 6, an ACL,
 * rename-command: checks use EVALSHA).
 *
 * Each event loop (ag_loop.h) has a lane of its own for the pipe besides
 * (ag_redis_lane.h): a job sent on a loop's thread goes out on that
 * loop's connection, pipelined with every other job of the iteration,
 * and its done runs on that thread; no dispatcher, no lock, no wake-up.
 *
 * Each job's done is called once, on a dispatcher thread (or the lane's
 * loop thread, for a job sent there), after every reply of its batch (of
 * its read, on a lane) is read, with the reply (or NULL: the command
 * failed, and sent says whether it may have reached Redis) and the
 * connection, on which done may reload code before it queues the job
 * again. done owns
 * the reply. The pipe borrows the code, the breaker and the metrics; it
 * does not retry, count failures toward the breaker or parse replies: the
 * store does (ag_store_redis_check.c). Thread-safe: any thread may send.
 */
#ifndef AG_REDIS_PIPE_H
#define AG_REDIS_PIPE_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "ag_redis_addr.h"
#include "ag_redis_breaker.h"
#include "ag_redis_code.h"

#define AG_REDIS_PIPE_DISPATCHERS 2 /* connections, each with its thread */
#define AG_REDIS_PIPE_BATCH 256     /* commands written in one go at most */

struct ag_metrics;
struct ag_redis_pipe;
/* A dispatcher's connection, lent to a job's done for the call. */
struct ag_redis_conn;

struct ag_redis_job {
    char *cmd; /* formatted RESP; the sender's, untouched by the pipe */
    size_t len;
    redisReply *reply; /* done's to free; NULL if the command failed */
    bool sent;         /* it may have reached Redis */
    bool orphaned;     /* it failed only because an earlier reply of its
                          batch did, on the same broken connection */
    bool asking;       /* send ASKING first, on the same connection (a
                          Redis Cluster ASK redirection) */
    void (*done)(struct ag_redis_job *j, struct ag_redis_conn *c);
    struct ag_redis_job *next; /* the pipe's while queued */
};

/* Starts the dispatchers (no connection yet). NULL if out of memory or
 * threads; every thread that started is then stopped again. Free with
 * ag_redis_pipe_free. */
struct ag_redis_pipe *ag_redis_pipe_new(const struct ag_redis_addr *addr,
                                        unsigned timeout_ms,
                                        const struct ag_redis_code *code,
                                        struct ag_redis_breaker *breaker,
                                        struct ag_metrics *metrics);
/* Stops after the queued jobs are done, and frees the pipe with its
 * lanes. Call it only after every loop that sent on it has stopped (and
 * before any of them runs again): a lane's jobs still in flight are then
 * done here, with no reply (sent: whether they may have been written),
 * and the loops are not touched. */
void ag_redis_pipe_free(struct ag_redis_pipe *p);

/* Queues j; j->done is called once, later. j must stay valid until then.
 * On a loop's thread (ag_loop_self() non-NULL) j goes to that loop's lane
 * and done runs on that thread, in a later callback or hook of the loop,
 * never within this call; elsewhere it goes to the shared queue and done
 * runs on a dispatcher thread.
 *
 * The rule: a caller that waits for j's done (a semaphore, a condition
 * variable) must not send it to a lane, since on a loop's thread the wait
 * would stop the very loop that must answer it. It sends with
 * ag_redis_pipe_send_shared, or brackets code that sends through other
 * modules (the cluster store's synchronous check, which waits on its
 * asynchronous one) with ag_redis_pipe_wait_begin and _end. A done that
 * sends a job again (a retry, a reload) uses ag_redis_pipe_send: it stays
 * on the thread it ran on. */
void ag_redis_pipe_send(struct ag_redis_pipe *p, struct ag_redis_job *j);
/* Queues j on the shared queue, whatever the thread: done runs on a
 * dispatcher thread. */
void ag_redis_pipe_send_shared(struct ag_redis_pipe *p, struct ag_redis_job *j);
/* Between these two (they nest), ag_redis_pipe_send from this thread
 * uses the shared queue, for every pipe. */
void ag_redis_pipe_wait_begin(void);
void ag_redis_pipe_wait_end(void);
/* Runs argv through the pipe and waits: the reply (free it with
 * ag_redis_reply_free), or NULL with *sent saying whether it may have
 * reached Redis. */
redisReply *ag_redis_pipe_call(struct ag_redis_pipe *p, int argc,
                               const char **argv, const size_t *lens,
                               bool *sent);

/* Whether Redis took the function library: checks then use FCALL. */
bool ag_redis_pipe_fcall(struct ag_redis_pipe *p);
/* Notes that Redis refused FCALL (why: its words): checks use scripts. */
void ag_redis_pipe_refuse_library(struct ag_redis_pipe *p, const char *why);
/* Copies the SHA1 of the script for mask into sha, or "" if not loaded. */
void ag_redis_pipe_sha(struct ag_redis_pipe *p, unsigned mask, char sha[41]);

/* Loads on c, in one round trip, the function library if library is set
 * and the script for mask unless mask is 0. A refused library is noted
 * (checks then use the scripts), not a failure. AG_OK, or AG_ESTORE with
 * the connection dropped. Only from a job's done. On a lane's connection
 * it waits for nothing: the loads are written ahead of whatever done
 * sends next, so Redis runs them first, and their replies are noted as
 * they come; AG_OK (a lane with no connection loads the code when it
 * connects). */
int ag_redis_conn_load(struct ag_redis_conn *c, bool library, unsigned mask);

/* Formats a probe's command into *cmd (the caller frees it with free()):
 * its length, or -1. Called once the probe's connection has loaded the
 * code, so that it can choose FCALL or a script as a check would. */
typedef long long (*ag_redis_probe_fmt)(void *arg, char **cmd);

/* For the breaker's probe: a fresh connection (AUTH, SELECT and the code
 * load), then the command fmt formats, and the connection is closed again.
 * Returns the command's reply (free it with ag_redis_reply_free; it may be
 * an error reply, which the caller judges), or NULL if any step failed. */
redisReply *ag_redis_pipe_probe(struct ag_redis_pipe *p, ag_redis_probe_fmt fmt,
                                void *arg);

#endif
