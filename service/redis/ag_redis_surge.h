/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A site-wide shield's state shared through Redis: lua/surge.lua takes
 * ag_surge's steps (engine/ag_surge.h) on one hash per shield and
 * configuration, atomically, so that every instance adds its counts to
 * one window, one baseline learns from all of them, and exactly one
 * instance sees each raise and each lowering (its `changed`). An instance
 * calls it a few times a second with what it counted since, never once
 * per check.
 *
 * A shield's configuration (its shape: what it counts and its window,
 * named by the caller) has a state of its own, "<base>:<shape>", so that
 * instances that disagree during a rollout do not erase each other's;
 * beside it "<base>:shapes" lists the shapes called with lately, and
 * each answer says how many others are in use. The base key ends in the
 * shield's hash tag, so that both keys share its slot on Cluster.
 *
 * The script runs through the store's command path (ag_store_command:
 * EVALSHA, and EVAL once after NOSCRIPT), so that a Redis Cluster store
 * routes it by its key, and an open breaker refuses it at once. The
 * hashes hold counts, times, baselines and shapes only, never an
 * identifier, and expire two baseline periods after their last call.
 *
 * Thread-safe as the store is.
 */
#ifndef AG_REDIS_SURGE_H
#define AG_REDIS_SURGE_H

#include <stdint.h>

#include "ag_store.h"
#include "ag_surge.h"

/* A shape's name at most, without its NUL: [A-Za-z0-9_.+-] only. */
#define AG_SURGE_SHAPE_MAX 95

enum ag_redis_surge_op {
    AG_SURGE_OP_STEP,  /* ag_surge_step with count, attempts and resume */
    AG_SURGE_OP_RAISE, /* ag_surge_raise for for_ms */
    AG_SURGE_OP_LOWER, /* ag_surge_lower for for_ms */
};

struct ag_redis_surge_call {
    enum ag_redis_surge_op op;
    /* AG_SURGE_OP_STEP: counted since the last: the signal, the lane's
     * attempts and its passed tries (struct ag_surge_counts). */
    uint64_t count, attempts, passes;
    uint64_t for_ms;               /* AG_SURGE_OP_RAISE and _LOWER */
    struct ag_surge_resume resume; /* AG_SURGE_OP_STEP; for_ms 0: none */
    /* The time to step at, in milliseconds since the Unix epoch; 0: Redis
     * TIME, the service's always (one clock for every instance). Tests
     * pass their own, as the check scripts' clock.lua piece does. */
    uint64_t now_ms;
};

struct ag_redis_surge_answer {
    struct ag_surge_state state; /* after the op */
    unsigned changed;            /* AG_SURGE_* bits */
    uint64_t now_ms;             /* the time it was taken at */
    uint64_t threshold;          /* ag_surge_threshold of the state */
    /* Other shapes of the shield called with in the last recent_ms, and
     * the latest of them ("" if none). */
    uint64_t others;
    char other[AG_SURGE_SHAPE_MAX + 1];
};

/* How long ago another shape's call still counts as in use. */
#define AG_REDIS_SURGE_RECENT_MS 3000

/* Runs call on the shield of base key base in the configuration shape,
 * with p: AG_OK and *out filled, AG_ESTORE (Redis did not answer, or
 * refused), AG_EINVAL (a store without Redis: nothing to share), or
 * AG_ETOOBIG (what the script cannot take: window_ms 0, baseline_ms under
 * window_ms, a number of 10^15 or more, a shape that is empty, too long
 * or not in the alphabet above), nothing sent. */
int ag_redis_surge(struct ag_store *store, const char *base, const char *shape,
                   const struct ag_surge_params *p,
                   const struct ag_redis_surge_call *call,
                   struct ag_redis_surge_answer *out);

#endif
