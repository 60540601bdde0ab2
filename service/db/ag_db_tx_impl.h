/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the policy database's parts: the writes one part makes inside
 * another's transaction, and no other module may use. Every change writes
 * its audit row (ag_db_audit.c) in its own transaction; the seed of a new
 * database saves its policies (ag_db_policies.c) inside the core's
 * migrating one (ag_db_seed.c). The core (ag_db_core.c) includes none of
 * this.
 *
 * Like ag_db.h: one struct ag_db is one connection, one thread at a time.
 */
#ifndef AG_DB_TX_IMPL_H
#define AG_DB_TX_IMPL_H

#include <stdbool.h>

#include <jansson.h>

#include "ag_db.h"
#include "ag_db_core_impl.h"
#include "ag_error.h"

/* Writes one audit row inside the caller's transaction; before and after
 * (either may be NULL) stay the caller's. */
int ag_db__audit(struct ag_db *db, const char *action, const char *name,
                 const char *actor, const json_t *before, const json_t *after,
                 struct ag_error *err);
/* Saves p and its audit row inside the caller's transaction (the seed of
 * a new database uses it while migrating). */
int ag_db__policy_save_in_tx(struct ag_db *db, const struct ag_policy *p,
                             const char *actor, bool *created,
                             struct ag_error *err);

/* Deletes the named policy and writes its audit row inside the caller's
 * transaction; AG_ENOTFOUND if there is none. */
int ag_db__policy_delete_in_tx(struct ag_db *db, const char *name,
                               const char *actor, struct ag_error *err);
/* Adds e with its audit row inside the caller's transaction, under the
 * cap; its own id when e->id is above 0, else the next; *id receives it.
 * AG_ECONFLICT, AG_ETOOBIG as ag_db_list_add. */
/* Inserts entry e (its own id when it has one, else SQLite's next) at
 * version, with no check and no audit row: the step's code (SQLITE_DONE;
 * SQLITE_CONSTRAINT for an entry already there), SQLITE_ERROR if the
 * statement could not be made. */
int ag_db__list_insert(struct ag_db *db, const struct ag_list_entry *e,
                       int64_t version);
int ag_db__list_add_in_tx(struct ag_db *db, const struct ag_list_entry *e,
                          const char *actor, int64_t *id, struct ag_error *err);
/* Deletes entry id of list with its audit row inside the caller's
 * transaction; AG_ENOTFOUND if there is none. */
int ag_db__list_delete_in_tx(struct ag_db *db, enum ag_list list, int64_t id,
                             const char *actor, struct ag_error *err);
/* AG_ETOOBIG naming "enabled" if endpoint ep has more enabled policies
 * than AG_PLAN_MAX, or signal policies than AG_SIGNALS_MAX, now. */
int ag_db__policy_check_capacity(struct ag_db *db, enum ag_endpoint ep,
                                 struct ag_error *err);

/* Applies a snapshot operation (ag_db_fleet.h) inside the caller's
 * transaction: the set becomes snap's, row by row where it differs, with
 * one audit row that says what changed. ag_db_fleet_snapshot.c. */
int ag_db__fleet_snapshot(struct ag_db *db, const json_t *snap,
                          const char *actor, int64_t version,
                          struct ag_error *err);

#endif
