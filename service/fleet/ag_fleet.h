/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet: every instance that shares one Redis and one fleet name holds
 * one set of policies and lists, and one audit, whatever host it runs on.
 * Counts were shared already; this shares what an operator decides.
 *
 * A change (a policy put or deleted, an import, a list entry added or
 * removed) is a record: its operations (ag_db_fleet.h), sealed
 * (ag_fleet_record.h), appended to the fleet's log in Redis by one atomic
 * compare-and-set on the log's head (ag_redis_fleet.h), so that two
 * instances writing at once cannot both take one version: the second
 * reads the first and tries again. Each record names the hash of the one
 * before it, within an epoch (the id of one history). Every instance
 * applies the records in version order into its own SQLite, each in one
 * transaction with its audit rows: the database stays each host's durable
 * copy, and checks never wait on any of this.
 *
 * Who applies: a thread of the instance's own, woken by the fleet's
 * channel (ag_redis_sub) at once and by a poll every AG_FLEET_POLL_MS
 * otherwise, which also writes the instance's heartbeat. What it does at
 * each step, against the head it reads:
 *   - the head is of its history and ahead: it reads and applies the
 *     records after its own (a snapshot, the base, when the log no
 *     longer reaches back);
 *   - the head is of its history and behind (a Redis that failed over
 *     to a replica without the last records) with the same records to
 *     there: it puts its own history back (restore), so that the
 *     highest version wins; a head at its version with another hash, or
 *     ahead with other records, is a fork, and the fleet's history wins:
 *     this instance takes it and raises fleet_diverged naming the
 *     versions it loses;
 *   - there is no head (FLUSHALL, a new Redis): a member puts its history
 *     back; a new instance begins one (found) with its own set;
 *   - the head is of another history: a database that is only a seed
 *     (pristine: nobody changed it since it was made) takes the fleet's
 *     set; a member whose fleet began from a seed, with no change yet,
 *     puts its own history over it; a history that an operator began
 *     over this instance's own (abuseguard fleet init) is taken;
 *     anything else diverges: the instance keeps its set, refuses admin
 *     writes, raises fleet_diverged, and waits for the operator (fleet
 *     init, which shows the difference).
 * A record that does not open (forged or replayed in Redis) is refused,
 * counted and raised (fleet_record_refused), and the instance puts its
 * own good history back over it. A record that needs a newer schema
 * holds the instance at its version (fleet_held): it never skips one, and
 * goes on serving checks with the set it has.
 *
 * Writes: ag_fleet_change brings the instance to the head, checks the
 * change against its database (the whole change applied and rolled
 * back: every error the admin API would answer), seals it and appends
 * it, then applies it here. While the fleet cannot be reached (or this
 * instance diverged, or holds), a change is refused with AG_ESTORE and
 * nothing is changed anywhere, so no two instances can hold different
 * sets when Redis returns. With the fleet off (--fleet off), a change is
 * applied here alone, as before the fleet existed.
 *
 * Thread-safe: one lock guards the fleet's database connection and
 * state; a change and a step never run at once.
 */
#ifndef AG_FLEET_H
#define AG_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_fleet_ids.h"

#define AG_FLEET_POLL_MS 2000 /* a step at least this often */
/* After a history is put back, no change is taken for this long at least
 * (two polls and a second, if longer): every instance holding a later one
 * has looked and put its own back. */
#define AG_FLEET_SETTLE_MS 5000
/* A heartbeat older than this (or three of its instance's polls) is an
 * instance gone (shown so); one older than an hour is forgotten. */
#define AG_FLEET_GONE_MS 10000
#define AG_FLEET_FORGET_MS 3600000
/* Every this many versions the writer makes a base and trims the log,
 * keeping this many records before it. */
#define AG_FLEET_COMPACT_EVERY 1000
#define AG_FLEET_LOG_KEEP 1000
/* A change that meets another's append tries again this many times (two
 * busy writers: each try wins about one time in two). */
#define AG_FLEET_TRIES 64

struct ag_fleet;
struct ag_redis_addr;
struct ag_reload;
struct ag_events;
struct ag_metrics;

struct ag_fleet_opts {
    bool on;             /* off: changes are made here alone */
    const char *name;    /* the fleet's (ag_fleet_name_valid) */
    const char *db_path; /* this instance's database */
    /* Where Redis is (copied): the fleet talks to it on a connection of
     * its own, never in line with the checks. */
    const struct ag_redis_addr *redis;
    unsigned redis_timeout_ms;
    /* The secret's key (ag_hasher's), which the records' key derives
     * from; copied. */
    const unsigned char *secret;
    size_t secret_len;
    struct ag_events *events;   /* may be NULL */
    struct ag_metrics *metrics; /* may be NULL */
    const char *binary;         /* this binary's version */
    /* The operator files this instance loaded (corpora), for the
     * heartbeat: a new JSON array; called on the fleet's thread. */
    json_t *(*files)(void *ctx);
    void *files_ctx;
    unsigned lag_event_s; /* behind this long raises fleet_lagging */
    unsigned poll_ms;     /* 0: AG_FLEET_POLL_MS */
    /* No first step at start (abuseguard fleet init, which steps only
     * when the operator chose). */
    bool passive;
};

/* Opens the database and, when on, takes a first step now, so that a new
 * instance starts with the fleet's set rather than its seed's (bounded by
 * the Redis timeout: an unreachable fleet leaves the set as it is). AG_OK
 * with *out, or a negative code with err filled. Free with
 * ag_fleet_stop. */
int ag_fleet_start(const struct ag_fleet_opts *o, struct ag_fleet **out,
                   struct ag_error *err);
/* Starts the thread that follows the fleet from now on, kicking reload
 * (borrowed; may be NULL) after each record it applies. Not called, the
 * fleet steps only in the calls below (abuseguard fleet init). */
int ag_fleet_run(struct ag_fleet *f, struct ag_reload *reload,
                 struct ag_error *err);
/* Stops and joins the thread, closes the database, frees f (NULL is
 * fine). */
void ag_fleet_stop(struct ag_fleet *f);

/* The channel said a record was appended (the subscriber's message, on
 * its thread): step now. */
void ag_fleet_wake(struct ag_fleet *f);
/* The channel is heard (true) or not: shown in the status; when it comes
 * back the thread steps, since a message may have been missed. */
void ag_fleet_channel(struct ag_fleet *f, bool live);
/* The fleet's channel name (AG_REDIS_FLEET_CHANNEL and its name). */
const char *ag_fleet_channel_name(const struct ag_fleet *f);

/* A change to make. */
struct ag_fleet_change {
    const json_t *ops; /* the operations (ag_db_fleet.h); borrowed */
    const char *actor; /* "admin-api", "cli" */
    /* If-Match: the version of policy if_name the editor read; a change
     * made to it since is AG_ESTALE. if_name NULL: none. */
    const char *if_name;
    int64_t if_version;
    bool dry_run; /* check only: every error, nothing written */
};

struct ag_fleet_result {
    int64_t version;  /* the record's; 0 for a change made here alone */
    int64_t entry_id; /* the last list_add's id; 0 */
};

/* Makes change c. AG_OK with *res; the operations' own error, nothing
 * changed (AG_EINVAL, AG_ENOTFOUND, AG_ECONFLICT, AG_ETOOBIG, err naming
 * the operation); AG_ESTALE (If-Match); AG_ESTORE: the fleet cannot take
 * a change now (unreachable, diverged, held, settling, busy: err says
 * which, and that nothing changed); AG_EUNKNOWN: the append was sent and
 * not answered (it may be in the fleet, which then brings it here);
 * AG_EIO: the database failed. */
int ag_fleet_change(struct ag_fleet *f, const struct ag_fleet_change *c,
                    struct ag_fleet_result *res, struct ag_error *err);

/* POST /admin/policies/apply: makes the policies those of records (an
 * array of valid records, names unique), removing any other when prune
 * (an import keeps them), as one change, worked out against the set as
 * it stands when the change is made. *diff (new, the caller's) says what
 * changes (ag_fleet_policies_diff); with dry_run nothing is written.
 * res->version: the change's, or the set's version when nothing
 * changes. Errors as ag_fleet_change's. */
int ag_fleet_apply_policies(struct ag_fleet *f, const json_t *records,
                            bool prune, bool dry_run, const char *actor,
                            json_t **diff, struct ag_fleet_result *res,
                            struct ag_error *err);

/* Audits an action done elsewhere (a reset, an inspection, a shield's
 * switch), whose after (may be NULL) stays the caller's: as a fleet
 * record when the fleet takes it now, else as a row here alone. Never
 * refused: a row that cannot be written at all is logged. */
void ag_fleet_note(struct ag_fleet *f, const char *actor, const char *action,
                   const char *name, const json_t *after);

/* The body of GET /admin/fleet: this instance, the fleet's head and every
 * instance's heartbeat (docs/api.md). *out is new and the caller's. Never
 * fails for the fleet's sake: unreachable, it says so. */
int ag_fleet_status(struct ag_fleet *f, json_t **out, struct ag_error *err);

/* abuseguard fleet init, on a fleet started manual: *diff (new, the
 * caller's) is what would change in the fleet's set (ag_fleet_set_diff,
 * from the fleet's to this database's, whose policies are policies, an
 * array of records, when not NULL); with apply, that set becomes the
 * fleet's as a new history over the head's, which every instance of the
 * old one then takes. AG_OK; AG_ESTORE; AG_ECONFLICT (another change came
 * first: run it again); the set's own errors. */
int ag_fleet_init(struct ag_fleet *f, const json_t *policies, bool apply,
                  json_t **diff, struct ag_error *err);

/* This database's set now, as an export (ag_db_fleet_export). */
int ag_fleet_export(struct ag_fleet *f, json_t **out, struct ag_error *err);

#endif
