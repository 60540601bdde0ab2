/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shields' internals, shared by ag_shields.c (tables, counting,
 * judging, the sync) and ag_shields_announce.c (what a raise or a
 * lowering tells: the log, the events; and what each step shows: the
 * metrics' gauges, the overview's samples), and by no other module.
 */
#ifndef AG_SHIELDS_IMPL_H
#define AG_SHIELDS_IMPL_H

#include <pthread.h>
#include <stdbool.h>

#include "ag_redis_surge.h"
#include "ag_shields.h"

struct ag_shields {
    struct ag_shields_opts o;
    /* Guards table and every entry's local state and view; held across
     * a sync round (Redis calls included), never by a check. */
    pthread_mutex_t lock;
    struct ag_shield_table *table; /* a reference; NULL: none yet */
    pthread_cond_t wake;
    pthread_t thread;
    bool started, stopping;
    unsigned sync_ms;
};

/* Steps e by call in Redis and in its local state, and publishes the
 * state in force (the shared one, or the local one while Redis does not
 * answer) to the checks; announces a raise or a lowering. Under the
 * lock. */
void ag_shields__steps(struct ag_shields *sh, struct ag_shield *e,
                       const struct ag_redis_surge_call *call);

/* Who made a change that is announced. */
enum ag_shields_by {
    AG_SHIELDS_BY_COUNTS,   /* the counts, at a step */
    AG_SHIELDS_BY_OPERATOR, /* the operator's switch */
    /* This instance's own counts while Redis did not answer, taken back
     * to the shared state once it did (ag_surge_resume). */
    AG_SHIELDS_RESUMED,
};

/* Tells that e's shield was raised, lowered or raised long (changed:
 * AG_SURGE_* bits), with its figures. Under the lock. */
void ag_shields__announce(struct ag_shields *sh, const struct ag_shield *e,
                          unsigned changed, enum ag_shields_by by);

/* Shows e's view after a step: its gauges in the metrics, and a sample
 * in the overview's minute. Under the lock. */
void ag_shields__observe(struct ag_shields *sh, const struct ag_shield *e);

/* t took over from old (either may be NULL): the gauges of old's shields
 * that t has not are unset, and t's are set from their views. Under the
 * lock. */
void ag_shields__published(struct ag_shields *sh,
                           const struct ag_shield_table *old,
                           const struct ag_shield_table *t);

#endif
