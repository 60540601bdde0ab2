/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store's circuit breaker: after AG_REDIS_BREAKER_THRESHOLD
 * failed operations in a row it opens, and the store fails every operation
 * at once, without touching Redis, until a probe runs a check again. The
 * first probe is due AG_REDIS_PROBE_MIN_MS after opening; each failed one
 * doubles the wait up to AG_REDIS_PROBE_MAX_MS, so Redis is back in use
 * within about a second of its return. A probe that succeeds closes it.
 *
 * A batch whose connection fails counts once: its commands after the one
 * whose reply failed are orphans (their failure is that same one), and
 * are recorded as such, which counts nothing.
 *
 * The breaker only decides; the store logs, counts metrics and runs the
 * probes on this schedule. Its clock is injectable, so the rules are
 * tested without Redis or real time. Thread-safety: record and is_open
 * from any thread (a success on the hot path costs an atomic load); the
 * schedule is under the breaker's own lock.
 */
#ifndef AG_REDIS_BREAKER_H
#define AG_REDIS_BREAKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define AG_REDIS_BREAKER_THRESHOLD 3 /* failures in a row that open it */
#define AG_REDIS_PROBE_MIN_MS 100
#define AG_REDIS_PROBE_MAX_MS 1000

/* A monotonic clock in milliseconds. */
typedef uint64_t (*ag_redis_clock_fn)(void *ctx);

struct ag_redis_breaker {
    atomic_int failures; /* failed operations in a row */
    atomic_bool open;
    pthread_mutex_t lock; /* guards the schedule */
    uint64_t probe_at_ms; /* when the next probe is due, while open */
    unsigned wait_ms;     /* the wait after the next failed probe */
    ag_redis_clock_fn clock;
    void *clock_ctx;
};

/* Closed, with clock (NULL: CLOCK_MONOTONIC). Undo with _destroy. */
void ag_redis_breaker_init(struct ag_redis_breaker *b, ag_redis_clock_fn clock,
                           void *clock_ctx);
void ag_redis_breaker_destroy(struct ag_redis_breaker *b);

static inline bool ag_redis_breaker_is_open(struct ag_redis_breaker *b)
{
    return atomic_load(&b->open);
}

/* Records how an operation went (rc: 0 or an error; orphaned: it failed
 * only because an earlier command of its batch did, which was recorded).
 * True if this failure opened the breaker: the caller then wakes its
 * prober. */
bool ag_redis_breaker_record(struct ag_redis_breaker *b, int rc, bool orphaned);

/* While open, milliseconds until the next probe is due (0: now); while
 * closed, UINT64_MAX. */
uint64_t ag_redis_breaker_probe_in(struct ag_redis_breaker *b);

/* Records a probe's result: up closes the breaker (true is returned if
 * this closed it); down puts the next probe off by the doubled wait. */
bool ag_redis_breaker_probed(struct ag_redis_breaker *b, bool up);

#endif
