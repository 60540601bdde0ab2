/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A lane: one event loop's own connection to the Redis a pipe talks to
 * (ag_redis_pipe.h), so that a check begun on a loop's thread is written,
 * answered and settled on that thread, with no dispatcher between: no
 * lock, no futex, no wake-up of another thread, no poll(2) of its own. A
 * pipe has one lane a loop, made by ag_redis_pipe_send the first time it
 * runs on that loop's thread, and found again without a lock (a list
 * that only grows, each lane tagged with its loop).
 *
 * Sending appends the job's command (ASKING first for an ASK redirection)
 * to the link's buffer at once and pushes the job on the lane's FIFO of
 * replies awaited. The lane's hook, at the end of the loop's iteration,
 * writes the whole buffer in one write: every job the iteration sent
 * shares it. If the socket takes only part, the lane watches EPOLLOUT
 * until it drains. On EPOLLIN (level-triggered) the lane reads once
 * (over TLS, on while OpenSSL holds decrypted bytes), matches every whole
 * reply to the FIFO's head, then calls the dones of that read in order.
 * A done may send again (it lands on this lane and goes out at this
 * iteration's hook) or reload code (ag_redis_conn_load: the loads are
 * appended ahead of what done sends next, and their replies noted as they
 * come).
 *
 * Connecting: a job that finds no connection (none yet, or the last one
 * failed) makes the hook begin one on a thread of its own with the
 * pipe's own set-up (connect, TLS, AUTH, SELECT, the code load), which
 * may take a few timeout_ms (each step's): the loop never waits for it.
 * Until it is made the lane's jobs go to the pipe's dispatchers (their
 * dones then run on a dispatcher's thread); the hook takes the new link
 * when it is done. While the breaker is open no connection is tried and
 * the jobs fail at once, not
 * sent. A sentinel's demotion (READONLY, MASTERDOWN) is handled as the
 * dispatchers do: the job did not run (sent false, no reply), the pipe's
 * epoch moves on, nothing more is written on the link and it is dropped
 * once its replies are in; any lane whose link predates the epoch drops
 * it before it writes on it idle.
 *
 * Failures mirror the dispatchers': a read or write error, or Redis
 * closing the connection, is counted and logged (an idle connection Redis
 * closed is only replaced), the link dropped, and every job in flight done
 * with no reply: sent, and orphaned but for the first, if it was handed
 * to a write; not sent if not. A reply that does not come within
 * timeout_ms of its command's write is a redis_timeout, handled alike.
 * Dones never run within ag_redis_pipe_send.
 *
 * Thread-safety and lifetime: a lane is its loop's thread's only; nothing
 * of it is touched from another thread while the loop runs. Lanes are
 * freed by ag_redis_pipe_free only, which the
 * service calls after every loop has stopped; the loops are not touched
 * then (the links are closed, which takes them out of epoll).
 *
 */
#ifndef AG_REDIS_LANE_H
#define AG_REDIS_LANE_H

struct ag_redis_pipe;

/* Gives p lanes: from now on ag_redis_pipe_send on a loop's thread uses
 * that loop's lane. Call it once, right after ag_redis_pipe_new, before
 * any job is sent (the store does). A pipe never attached sends every
 * job to its shared queue. The lane module builds on the pipe: the pipe
 * reaches it only through what this hands it, never by name. */
void ag_redis_lane_attach(struct ag_redis_pipe *p);

#endif
