/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Site-wide shields: the surge policies of the active ruleset, counted in
 * this instance and shared through Redis a few times a second, never per
 * check. A check or a failure report only adds to a shield's counters
 * (atomics) and reads whether it is raised: while a shield of its
 * endpoint and lane is raised, an untrusted check without
 * challenge_passed is answered by the service without any Redis call.
 *
 * A table (struct ag_shield_table) holds one entry per enabled surge
 * policy of one ruleset, built when the ruleset is published and taken by
 * a check with it (both under the service's lock), so that an entry's
 * policy lives as long as the check's set; counters and state move over
 * to the next table by policy name.
 *
 * The sync thread (ag_shields_start) steps each shield every sync_ms:
 * what was counted since goes to lua/surge.lua (ag_redis_surge), which
 * answers the shared state every instance sees; a raise reaches every
 * instance within a sync. The shared state is kept per shape (what the
 * shield counts and its window): instances that disagree during a rollout
 * keep a state each and say so (a log line a minute, a metric). Each
 * entry also steps a state of its own with this instance's counts alone
 * (ag_surge): while Redis cannot answer the instance shields from that,
 * says so (the view's source "local", a log line, a metric), and goes
 * back to the shared state once Redis answers. While Redis answers, the
 * local state follows the shared one (ag_surge_follow): an instance whose
 * own share of a wave never crossed the floor keeps shielding when Redis
 * goes away mid-raise. A raise this instance made or renewed from its
 * own counts while Redis did not answer goes back to the shared state
 * when it answers again (ag_surge_resume), for what is left of that
 * hold, and only if the operator switched nothing meanwhile: a copy of a
 * raise the operator has since lowered is never pushed back. Exactly one
 * instance sees each shared raise, lowering and long raise, and raises
 * the event.
 *
 * Thread-safety: counting and judging from any thread, lock-free; the
 * sync, the operator's switch and the views under the shields' lock.
 */
#ifndef AG_SHIELDS_H
#define AG_SHIELDS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_endpoint.h"
#include "ag_error.h"
#include "ag_identity.h"
#include "ag_limiter.h"
#include "ag_policy.h"
#include "ag_redis_surge.h"
#include "ag_surge.h"

struct ag_events;
struct ag_metrics;
struct ag_overview;
struct ag_store;

#define AG_SHIELDS_SYNC_MS 250 /* how often the sync thread steps */
/* After this entry's shape changed, another shape in use is taken for
 * this instance's own old one this long (ms), not a disagreement. */
#define AG_SHIELDS_SHAPE_GRACE_MS 4000
/* A disagreement is logged at most once a minute per shield. */
#define AG_SHIELDS_DISAGREE_LOG_MS 60000

/* Where a shield's state came from at its last step. */
enum ag_shield_source {
    AG_SHIELD_SHARED, /* Redis: every instance's counts */
    AG_SHIELD_LOCAL,  /* this instance's alone: Redis did not answer */
};

/* One shield as the operator sees it. */
struct ag_shield_view {
    char name[AG_POLICY_NAME_MAX + 1];
    char shape[AG_SURGE_SHAPE_MAX + 1]; /* its configuration's name */
    struct ag_surge_state state;
    uint64_t threshold;
    bool young;      /* still learning fast (ag_surge_young) */
    uint64_t now_ms; /* the clock the state was stepped at */
    enum ag_shield_source source;
    bool stepped; /* false until its first sync */
    /* Other shapes of the shield in use by other instances at the last
     * sync (0 while Redis does not answer), the latest one's name, and
     * the syncs that saw any, in all. */
    uint64_t others;
    char other[AG_SURGE_SHAPE_MAX + 1];
    uint64_t disagreements;
};

struct ag_shield {
    const struct ag_policy *policy; /* borrowed from the table's set */
    struct ag_surge_params params;
    /* Its shared state's base key, "ag:<policy>:<site digest>", as a
     * policy keyed on ["site"] would have (the key a shielded check's
     * verdict names); the state of each shape lives under
     * "<key>:<shape>" (ag_redis_surge.h). */
    char key[AG_STORE_KEY_MAX];
    /* Counted since the last sync: the policy's signal, its lane's checks
     * and those of them that brought a passed challenge. */
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t attempts;
    atomic_uint_fast64_t passes;
    /* What checks read: raised, and until when on CLOCK_MONOTONIC (ms). */
    atomic_bool raised;
    atomic_uint_fast64_t until_mono_ms;
    /* The sync thread's (under the shields' lock). */
    struct ag_surge_state local; /* this instance's counts alone */
    struct ag_shield_view view;  /* the state in force */
    bool said_local; /* shield_local was logged, shield_shared not yet */
    /* The shared state's switch_version at the last answer: a raise of
     * this instance's own goes back only if nobody switched since. */
    uint64_t known_version;
    /* While Redis did not answer: the last hold this instance's own
     * counts raised or renewed the local state to (0: none), and when
     * they first raised it. */
    uint64_t own_until_ms, own_since_ms;
    uint64_t shape_since_mono;     /* when this shape took over (ms) */
    uint64_t disagree_logged_mono; /* the last disagreement line (ms) */
};

struct ag_shield_table {
    atomic_uint refs;
    struct ag_ruleset *set; /* a reference: the entries' policies */
    size_t n;
    struct ag_shield shields[];
};

struct ag_shields_opts {
    struct ag_store *store; /* Redis; NULL: every shield is local */
    const struct ag_hasher *hasher;
    bool tagged_keys;           /* as the service's (struct ag_digests) */
    struct ag_events *events;   /* may be NULL */
    struct ag_metrics *metrics; /* may be NULL */
    /* Where each step leaves a sample of its shield for the operator's
     * overview (ag_overview.h); may be NULL. */
    struct ag_overview *overview;
    /* The wall clock in ms (Redis TIME's, for the local states); NULL:
     * CLOCK_REALTIME. Tests pass their own. */
    uint64_t (*clock_ms)(void *ctx);
    void *clock_ctx;
};

struct ag_shields;

/* AG_OK and *out, or AG_ENOMEM. No thread runs until ag_shields_start. */
int ag_shields_new(const struct ag_shields_opts *o, struct ag_shields **out);
/* Stops the sync thread, drops the table. NULL is allowed. */
void ag_shields_free(struct ag_shields *sh);
/* Starts the sync thread, stepping every sync_ms. AG_OK or AG_ENOMEM. */
int ag_shields_start(struct ag_shields *sh, unsigned sync_ms);

/* A table for set's enabled surge policies (set may be NULL: none), with
 * one reference. NULL when out of memory (and then no shield). */
struct ag_shield_table *ag_shields_table_new(struct ag_shields *sh,
                                             struct ag_ruleset *set);
/* Makes t the table the sync thread steps (a reference of its own),
 * carrying over the current table's counters and states by policy name
 * as they are now: a switch made after t was made stands. */
void ag_shields_publish(struct ag_shields *sh, struct ag_shield_table *t);
struct ag_shield_table *ag_shield_table_ref(struct ag_shield_table *t);
void ag_shield_table_unref(struct ag_shield_table *t);

/* A check of endpoint in the lane trusted: counted in its shields, the
 * signal of those that count attempts and the lane's attempts of all; a
 * check that brings a passed challenge (passed) is the attempt it was
 * asked for again, no new one, and counts as a pass instead (what a real
 * user makes and an attack does not: ag_surge.h). */
void ag_shields_count_check(struct ag_shield_table *t,
                            enum ag_endpoint endpoint, bool trusted,
                            bool passed);
/* A failed login of reason in the lane trusted: counted in the failure
 * shields that count reason. */
void ag_shields_count_failure(struct ag_shield_table *t, bool trusted,
                              enum ag_reason reason);
/* The raised shield, if any, that judges a check of endpoint in the lane
 * trusted: an enforcing one first (a deny before a challenge), else a
 * shadow one. NULL if none is raised; *retry_ms is then 0, else how long
 * it holds at least (1 at least). */
const struct ag_shield *ag_shields_judge(struct ag_shield_table *t,
                                         enum ag_endpoint endpoint,
                                         bool trusted, uint64_t *retry_ms);
/* ag_shields_judge among the shields of one scope only (the policy's
 * "scope": untrusted, the default, or risky), or of any. */
enum ag_shield_scope {
    AG_SHIELD_SCOPE_ANY,
    AG_SHIELD_SCOPE_UNTRUSTED,
    AG_SHIELD_SCOPE_RISKY,
};
const struct ag_shield *ag_shields_judge_scope(struct ag_shield_table *t,
                                               enum ag_endpoint endpoint,
                                               bool trusted,
                                               enum ag_shield_scope scope,
                                               uint64_t *retry_ms);

/* One round of the sync thread: every shield stepped with what was
 * counted since. For tests and for the thread. */
void ag_shields_sync(struct ag_shields *sh);

/* The operator's switch: raise the named shield for for_s seconds, or
 * lower it now and keep its counts from raising it for for_s seconds
 * (AG_SHIELDS_LOWER_HOLD: its policy's block_s, which *quiet_s is told),
 * in Redis (and this instance's own state). AG_OK; AG_ENOTFOUND: no
 * enabled surge policy of that name; AG_ESTORE: Redis did not answer (the
 * local state took it). */
#define AG_SHIELDS_LOWER_HOLD UINT32_MAX
int ag_shields_raise(struct ag_shields *sh, const char *name, uint32_t for_s);
int ag_shields_lower(struct ag_shields *sh, const char *name, uint32_t for_s,
                     uint32_t *quiet_s);

/* The views of every shield, in policy order: AG_OK and *out, a malloc'd
 * array of *n (free it), or AG_ENOMEM. */
int ag_shields_views(struct ag_shields *sh, struct ag_shield_view **out,
                     size_t *n);

#endif
