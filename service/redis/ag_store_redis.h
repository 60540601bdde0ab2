/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store (ag_store_redis.c, and its check in
 * ag_store_redis_check.c): the store interface of ag_store.h over one
 * Redis server, or the master Redis Sentinel names, reached at a struct
 * ag_redis_addr. What a Redis store is made of lives here, beside
 * the Redis layer it needs, and not in the engine's ag_store.h, which
 * knows no addresses: the engine calls a store through its function
 * table, main.c wires the Redis one in.
 *
 * Thread-safety: any thread may call a Redis store's functions at once
 * (ag_store.h); make and destroy it on one thread.
 */
#ifndef AG_STORE_REDIS_H
#define AG_STORE_REDIS_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_redis_addr.h"
#include "ag_store.h"

/* What a Redis store is made of (hiredis's options-struct style: later
 * knobs go here). addr is copied; metrics (may be NULL) counts errors,
 * timeouts and the breaker's state and must outlive the store. */
struct ag_metrics;
struct ag_embedded_file;
struct ag_store_redis_opts {
    const struct ag_redis_addr *addr;
    unsigned timeout_ms; /* on connect and on every command */
    struct ag_metrics *metrics;
    /* The Lua pieces to compose (ag_redis_code.h); NULL for the embedded
     * lua/ files. A test adds a clock.lua that replaces Redis TIME with a
     * time it sets (tests/integration/test_store_redis.c). Borrowed only
     * while ag_store_redis_new runs. */
    const struct ag_embedded_file *lua;
    size_t nlua;
    /* A Redis Cluster node's store (ag_store_cluster_map.c). probe_key:
     * the key the breaker's probe checks, one in a slot the node serves;
     * NULL for "ag::probe". redirect: called, on a store thread, with the text
     * of a MOVED or ASK answer before the check ends with AG_EREDIRECT
     * (which does not count against the breaker: the node answered, and
     * ran nothing). NULL: such an answer is an error like any other. */
    const char *probe_key;
    void (*redirect)(void *arg, const char *text);
    void *redirect_arg;
    /* Called when the store's circuit breaker opens (open true, on the
     * thread whose operation failed) or closes (on its probe thread),
     * with no lock of the store held. NULL: nobody is told. */
    void (*breaker)(void *arg, bool open);
    void *breaker_arg;
};

/* A Redis store. Commands are pipelined over two connections, each its
 * own thread's (ag_redis_pipe.h), made lazily; a failed connection is
 * dropped and the next batch reconnects. The Lua code is loaded on connect
 * and again on NOSCRIPT or "Function not found". Returns NULL when out of
 * memory or threads. Free with ag_store_destroy after every thread that
 * used it has stopped using it. After three failed operations in a row a
 * circuit breaker opens: calls then fail at once (AG_ESTORE) while a
 * background thread probes Redis, 100 ms after opening and then backing
 * off to once a second, and closes the breaker when Redis answers
 * (ag_redis_breaker.h). */
struct ag_store *ag_store_redis_new(const struct ag_store_redis_opts *opts);

#endif
