/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the fleet (ag_fleet.h), shared by its files and no other module:
 * ag_fleet.c (start, stop, the thread, heartbeats), ag_fleet_parts.c (the
 * state, events, the wake, a record's body, seal and opening: what all the
 * others call, and which calls none of them), ag_fleet_step.c
 * (one step against the head), ag_fleet_history.c (a history read whole,
 * begun, or made a snapshot of), ag_fleet_write.c (changes and notes,
 * abuseguard fleet init) and ag_fleet_status.c (GET /admin/fleet).
 */
#ifndef AG_FLEET_IMPL_H
#define AG_FLEET_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_db_fleet.h"
#include "ag_events.h"
#include "ag_fleet.h"
#include "ag_fleet_record.h"
#include "ag_redis_fleet.h"

/* Where this instance stands, as /admin/fleet names it. */
enum ag_fleet__state {
    AG_FLEET__STARTING,    /* no step yet */
    AG_FLEET__FOLLOWING,   /* at the head, or on its way */
    AG_FLEET__UNREACHABLE, /* Redis did not answer the last step */
    AG_FLEET__DIVERGED,    /* its set is not the fleet's: waits for init */
    AG_FLEET__HELD,        /* at a record it cannot apply */
    AG_FLEET__OFF          /* --fleet off */
};

const char *ag_fleet__state_name(enum ag_fleet__state s);

#define AG_FLEET__WHY_MAX 320
#define AG_FLEET__HOST_MAX 256
#define AG_FLEET__BINARY_MAX 64
#define AG_FLEET__CHANNEL_MAX                                                  \
    (sizeof AG_REDIS_FLEET_CHANNEL + AG_FLEET_NAME_MAX)

struct ag_fleet {
    bool on;
    char name[AG_FLEET_NAME_MAX + 1];
    char channel[AG_FLEET__CHANNEL_MAX];
    char host[AG_FLEET__HOST_MAX];
    char binary[AG_FLEET__BINARY_MAX];
    struct ag_redis_direct *redis; /* the fleet's own connection */
    bool caught_up; /* this step took a base already (ag_fleet_step.c) */
    struct ag_fleet_key key;
    struct ag_reload *reload;
    struct ag_events *events;
    struct ag_metrics *metrics;
    json_t *(*files)(void *ctx);
    void *files_ctx;
    unsigned lag_event_s, poll_ms;

    pthread_mutex_t lock; /* guards db and everything to the thread's */
    struct ag_db *db;
    struct ag_db_fleet row;          /* as last read */
    struct ag_redis_fleet_head head; /* as last read */
    enum ag_fleet__state state;
    char why[AG_FLEET__WHY_MAX]; /* the state's reason, "" */
    uint64_t behind_since_ms;    /* monotonic; 0 while not behind */
    bool lag_raised;             /* fleet_lagging for this spell */
    char refused_hash[AG_FLEET_HASH_HEX + 1]; /* the last one raised */
    int64_t held_at;                          /* the record held at (raised) */
    bool diverged_raised;

    pthread_t thread;
    pthread_mutex_t wake_lock; /* guards woken and stopping */
    pthread_cond_t wake;
    bool woken, stopping, started;
    atomic_bool channel_live;
};

/* Wakes the thread (ag_fleet_wake). */
void ag_fleet__wake(struct ag_fleet *f);

/* Sets the state and its reason (logged when either changes). Under
 * f->lock. */
void ag_fleet__set_state(struct ag_fleet *f, enum ag_fleet__state s,
                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Raises a fleet event of type with reason and the record at issue (0).
 * Under f->lock. */
void ag_fleet__raise(struct ag_fleet *f, enum ag_event_type type,
                     const char *reason, int64_t record);

/* One step against the head (ag_fleet.h says what it does). AG_OK; or
 * AG_ESTORE (Redis did not answer), AG_EIO (the database). Under
 * f->lock. */
int ag_fleet__step(struct ag_fleet *f);

/* A record's body: {"actor", "instance", "host", "ops": ops}, with more
 * fields for a snapshot's (ag_fleet_step.c). ops is taken over. NULL when
 * out of memory. */
json_t *ag_fleet__body(const struct ag_fleet *f, const char *actor,
                       json_t *ops);

/* Seals body at (f's name, epoch, version, prev, this schema) into rec,
 * whose blob the caller frees (free((char *)rec->blob)). */
int ag_fleet__seal(const struct ag_fleet *f, const json_t *body,
                   const char *epoch, int64_t version, const char *prev,
                   struct ag_redis_fleet_record *rec);

/* Opens r (a base if base: its place names the chain's hash at its
 * version, which is then its hash; a record's names the one before, and
 * its hash is computed): AG_OK with *body, new and the caller's; AG_EINVAL
 * if it does not open; AG_EPENDING if it opens to no JSON; AG_ENOMEM. */
int ag_fleet__open(const struct ag_fleet *f,
                   const struct ag_redis_fleet_record *r, bool base,
                   json_t **body, char hash[AG_FLEET_HASH_HEX + 1]);

/* A snapshot's body of this database's set (reason: "found", "restore",
 * "compact", "init"), its policies' versions version where policies (an
 * array of records, or NULL: the database's own) replaces them; NULL
 * with err filled. */
json_t *ag_fleet__snapshot_body(struct ag_fleet *f, const char *reason,
                                const json_t *policies, int64_t version,
                                struct ag_error *err);

/* What a history's records add up to, read from Redis from its start (its
 * base, or its first record) to head: a set (ag_fleet_set.h), and the
 * epoch its first snapshot says it replaced (out, "" for none). NULL
 * with err filled (unreachable, or a record that does not open). Under
 * f->lock. */
json_t *ag_fleet__fleet_set(struct ag_fleet *f,
                            const struct ag_redis_fleet_head *head,
                            char replaces[AG_FLEET_EPOCH_HEX + 1],
                            struct ag_error *err);

/* Begins a new history over head (as seen; absent: none) with a
 * snapshot of this database's set (policies, when not NULL, an array of
 * records, in place of its policies: fleet init --from FILE), for
 * reason ("found", "init"), seed when the set is only a seed, and
 * applies it here. AG_OK; AG_ECONFLICT if the head moved; AG_ESTORE;
 * AG_EIO; err filled. Under f->lock. */
int ag_fleet__found(struct ag_fleet *f, const struct ag_redis_fleet_head *head,
                    const char *reason, const json_t *policies, bool seed,
                    struct ag_error *err);

#endif
