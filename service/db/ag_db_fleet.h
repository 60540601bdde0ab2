/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The database's side of the fleet (service/fleet/ag_fleet.h): where this
 * database stands in its fleet's history (the fleet row), and the one
 * function that changes the policies and lists by a change's operations,
 * whether they came in a fleet record or were made here alone
 * (--fleet off).
 *
 * A change is a JSON body {"actor": "admin-api", "ops": [...]}, each
 * operation one of
 *   {"op": "policy_put", "policy": {...}}      (the policy record)
 *   {"op": "policy_delete", "name": "..."}
 *   {"op": "list_add", "entry": {"id", "list", "kind", "value",
 *                                "endpoint", "note"}}   (a row)
 *   {"op": "list_delete", "list": "deny", "id": 7}
 *   {"op": "audit", "action": "reset", "name": "...", "after": {...}}
 *   {"op": "snapshot", "reason": "...", "policies": [{"version",
 *    "policy"}], "lists": [{"version", "entry"}]}   (the whole set)
 * applied in order, in one IMMEDIATE transaction with their audit rows
 * and the fleet row's new place, or not at all. Every value goes through
 * the validator the admin API uses (ag_policy_from_json,
 * ag_list_entry_from_row), so a record cannot put into the database what
 * the API would refuse.
 *
 * A policy and a list entry carry the version that last wrote them: the
 * record's, or, for a change made here alone, one past the newest. A
 * snapshot sets each row's own. Audit rows of a record carry its version
 * and the instance that took the change.
 *
 * Like ag_db.h: one struct ag_db is one connection, one thread at a time.
 */
#ifndef AG_DB_FLEET_H
#define AG_DB_FLEET_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_db.h"
#include "ag_error.h"
#include "ag_fleet_ids.h"

/* A list entry as a change carries it: {"id", "list", "kind", "value"
 * (the canonical network, or the digest of a user or a phone), "endpoint",
 * "note"}, and "force": true when the admin forced it. New, the caller's;
 * NULL when out of memory. */
json_t *ag_db_fleet_entry_row(const struct ag_list_entry *e);
/* Its inverse, validated as a row read back is (ag_list_entry_from_row);
 * an absent id is 0. AG_EINVAL naming the field. */
int ag_db_fleet_entry_parse(const json_t *row, struct ag_list_entry *e,
                            struct ag_error *err);

/* Where the database stands. */
struct ag_db_fleet {
    char name[AG_FLEET_NAME_MAX + 1];         /* "" until a first record */
    char epoch[AG_FLEET_EPOCH_HEX + 1];       /* "" until a first record */
    int64_t version;                          /* the last record applied; 0 */
    char hash[AG_FLEET_HASH_HEX + 1];         /* its hash; "" */
    bool member;                              /* it applied a fleet's record */
    bool pristine;                            /* its set is only a seed */
    char instance[AG_FLEET_INSTANCE_HEX + 1]; /* this database's id */
    /* The epoch the history replaced, when an operator began it over
     * another (abuseguard fleet init); "". */
    char replaces[AG_FLEET_EPOCH_HEX + 1];
    /* Its policies or lists were changed since the last record applied,
     * by no record (a hand edit, a file restored): its set must be
     * compared with the fleet's. */
    bool touched;
};

/* Reads the fleet row, making the instance id the first time (random,
 * kept). */
int ag_db_fleet_get(struct ag_db *db, struct ag_db_fleet *out,
                    struct ag_error *err);

/* A change to apply: body is {"actor", "ops"} as above (borrowed). */
struct ag_db_fleet_change {
    const json_t *body;
    /* A fleet record: its fleet, epoch, version (> 0), the hash of the
     * record before it (prev) and its own, and the instance that took
     * the change. version 0: a change made here alone, outside any fleet
     * (the rest unread). */
    const char *name, *epoch, *prev, *hash, *instance;
    int64_t version;
    /* The record may begin this database's history here (the fleet code
     * decided to take a snapshot: a join, a restore, an init), so it need
     * not follow the last one applied. */
    bool adopt;
    /* A snapshot of a seed: the database stays pristine. */
    bool seed;
    /* adopt: the epoch the history replaced, kept in the row ("" or
     * NULL: none). */
    const char *replaces;
    /* Apply, check, and roll back: what the change would do, with every
     * error it would meet, and nothing written. */
    bool dry_run;
};

/* What applying did. */
enum ag_db_fleet_outcome {
    AG_DB_FLEET_APPLIED, /* applied (or, dry_run, would be) */
    AG_DB_FLEET_ALREADY, /* this version or a later one is applied */
    AG_DB_FLEET_NOT_NEXT /* it does not follow the last one applied */
};

/* Applies c. AG_OK with *outcome, and *entry_id (may be NULL) the id of
 * the last entry a list_add added (0: none); else the first operation's
 * error, its message opening with "ops[i]: " and its field the
 * operation's (AG_EINVAL, AG_ENOTFOUND for a deletion of what is not
 * there, AG_ECONFLICT for an entry that exists, AG_ETOOBIG past a cap),
 * and nothing changed. */
int ag_db_fleet_apply(struct ag_db *db, const struct ag_db_fleet_change *c,
                      enum ag_db_fleet_outcome *outcome, int64_t *entry_id,
                      struct ag_error *err);

/* The whole set as a snapshot operation's fields: {"policies":
 * [{"version", "policy"}], "lists": [{"version", "entry"}]}, read in one
 * transaction, policies by name and entries by id. *out is new and the
 * caller's. */
int ag_db_fleet_export(struct ag_db *db, json_t **out, struct ag_error *err);
/* The same with the policies alone ("lists" empty): what a policy file's
 * difference needs, readable while the lists are not. */
int ag_db_fleet_export_policies(struct ag_db *db, json_t **out,
                                struct ag_error *err);

/* The hash of the record of version applied here, if it is one of the
 * last AG_DB_FLEET_LOG_KEEP; AG_ENOTFOUND if not. out holds
 * AG_FLEET_HASH_HEX + 1 bytes. */
#define AG_DB_FLEET_LOG_KEEP 10000
int ag_db_fleet_hash_at(struct ag_db *db, int64_t version, char *out,
                        struct ag_error *err);

/* The id the next list entry takes: one past the largest this database
 * ever gave, so that no id names two entries over time. */
int ag_db_fleet_next_entry_id(struct ag_db *db, int64_t *id,
                              struct ag_error *err);

/* Clears the touched mark: the set was found to be the fleet's. */
int ag_db_fleet_untouch(struct ag_db *db, struct ag_error *err);

/* Makes the database leave its fleet and take the fleet's set at its next
 * step, as a new one does: not a member, pristine, no history (abuseguard
 * fleet init --from fleet). Its set stays until then; its audit stays. */
int ag_db_fleet_forget(struct ag_db *db, const char *actor,
                       struct ag_error *err);

#endif
