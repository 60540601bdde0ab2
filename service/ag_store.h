/*
 * The limiter store: where counters live. An interface (a table of function
 * pointers, after Redis's ConnectionType) so that the engine does not know
 * whether it talks to Redis or to the in-process fallback.
 *
 * check() runs a whole plan atomically. For an AG_PLAN_CHECK plan every
 * policy is evaluated and the attempt is recorded only if no enforcing
 * policy denies it; for an AG_PLAN_FAILURE plan each policy records the
 * failure unless it is full or blocked. It returns 0 and fills one result
 * per plan operation, or AG_ESTORE when the store could not answer
 * (results are then undefined). clear() deletes every counter (and block)
 * of the plan's keys, atomically. Implementations are
 * thread-safe: each keeps per-thread connections as it needs.
 */
#ifndef AG_STORE_H
#define AG_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ag_config.h"
#include "ag_error.h"
#include "ag_limiter.h"

struct ag_store;

/* Called once when an asynchronous check ends, on a store thread, with 0
 * (the results are filled) or AG_ESTORE. */
typedef void (*ag_store_done_fn)(void *arg, int rc);

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
    void (*destroy)(struct ag_store *s);
};

struct ag_store {
    const struct ag_store_ops *ops;
};

/* A Redis store. Connects lazily, one hiredis context per calling thread,
 * each with timeout_ms on connect and on every command; a failed context is
 * dropped and the next call reconnects. Scripts are loaded on connect and
 * again on NOSCRIPT. Returns NULL when out of memory. Free with
 * ag_store_destroy after every thread that used it has stopped using it.
 * After three failed operations in a row a circuit breaker opens: calls
 * then fail at once (AG_ESTORE) while a background thread probes Redis,
 * 100 ms after opening and then backing off to once a second, and closes
 * the breaker when Redis answers. metrics (may be NULL) counts errors,
 * timeouts and the breaker's state. */
struct ag_metrics;
struct ag_store *ag_store_redis_new(const struct ag_redis_addr *addr,
                                    unsigned timeout_ms,
                                    struct ag_metrics *metrics);

/* Test only: a Redis store whose checks run at the time the test sets,
 * not at Redis TIME. Before each check the test sets the time, in
 * microseconds since the Unix epoch, on a connection of its own:
 * FCALL <clock_function> 0 <microseconds>, where clock_function receives
 * the function's name (the library's name is a hash of its code, so the
 * test build is never mistaken for the service's). Checks that would run
 * as scripts (a Redis without FUNCTION) fail. Free with ag_store_destroy.
 */
#define AG_TEST_CLOCK_FN 64
struct ag_store *ag_store_redis_test_new(const struct ag_redis_addr *addr,
                                         unsigned timeout_ms,
                                         char clock_function[AG_TEST_CLOCK_FN]);

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

static inline void ag_store_destroy(struct ag_store *s)
{
    if (s)
        s->ops->destroy(s);
}

#endif
