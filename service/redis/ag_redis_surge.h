/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A site-wide shield's state shared through Redis: lua/surge.lua takes
 * ag_surge's steps (engine/ag_surge.h) on one hash per shield, atomically,
 * so that every instance adds its counts to one window, one baseline
 * learns from all of them, and exactly one instance sees each raise and
 * each lowering (its `changed`). An instance calls it a few times a
 * second with what it counted since, never once per check.
 *
 * The script runs through the store's command path (ag_store_command:
 * EVALSHA, and EVAL once after NOSCRIPT), so that a Redis Cluster store
 * routes it by its key, and an open breaker refuses it at once. The hash
 * holds counts, times and baselines only, never an identifier, and expires
 * two baseline periods after its last step. A hash left by a policy with
 * another window_ms starts over.
 *
 * Thread-safe as the store is.
 */
#ifndef AG_REDIS_SURGE_H
#define AG_REDIS_SURGE_H

#include <stdint.h>

#include "ag_store.h"
#include "ag_surge.h"

enum ag_redis_surge_op {
    AG_SURGE_OP_STEP,  /* ag_surge_step with count and attempts */
    AG_SURGE_OP_RAISE, /* ag_surge_raise for for_ms */
    AG_SURGE_OP_LOWER, /* ag_surge_lower */
};

struct ag_redis_surge_call {
    enum ag_redis_surge_op op;
    uint64_t count, attempts; /* AG_SURGE_OP_STEP: counted since the last */
    uint64_t for_ms;          /* AG_SURGE_OP_RAISE */
    /* The time to step at, in milliseconds since the Unix epoch; 0: Redis
     * TIME, the service's always (one clock for every instance). Tests
     * pass their own, as the check scripts' clock.lua piece does. */
    uint64_t now_ms;
};

struct ag_redis_surge_answer {
    struct ag_surge_state state; /* after the op */
    unsigned changed;            /* AG_SURGE_RAISED and/or _LOWERED */
    uint64_t now_ms;             /* the time it was taken at */
    uint64_t threshold;          /* ag_surge_threshold of the state */
};

/* Runs call on the shield whose state is at key, with p: AG_OK and *out
 * filled, AG_ESTORE (Redis did not answer, or refused), or AG_EINVAL (a
 * store without Redis, or what the script cannot take: window_ms 0,
 * baseline_ms under window_ms, a number of 10^15 or more), nothing sent. */
int ag_redis_surge(struct ag_store *store, const char *key,
                   const struct ag_surge_params *p,
                   const struct ag_redis_surge_call *call,
                   struct ag_redis_surge_answer *out);

#endif
