/*
 * Inside the policy database: what the ag_db*.c files share and no other
 * module may use. The connection, the statement helpers and the audit row
 * writer live here so that every file runs its SQL the same way.
 *
 * Like ag_db.h: one struct ag_db is one connection, one thread at a time.
 */
#ifndef AG_DB_IMPL_H
#define AG_DB_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ag_db.h"
#include "ag_error.h"

struct ag_db {
    sqlite3 *db;
};

/* Fills err with what failed and SQLite's own message; returns AG_EIO. */
int ag_db__fail(sqlite3 *db, const char *what, struct ag_error *err);
/* Fills err with "out of memory"; returns AG_ENOMEM. */
int ag_db__nomem(struct ag_error *err);
/* Runs sql (no parameters); AG_EIO with err on failure. */
int ag_db__exec(sqlite3 *db, const char *sql, struct ag_error *err);
/* BEGIN IMMEDIATE: the write lock is held from here to ag_db__finish. */
int ag_db__begin(struct ag_db *db, struct ag_error *err);
/* Commits if rc is 0, else rolls back; returns rc, or the commit's error. */
int ag_db__finish(struct ag_db *db, int rc, struct ag_error *err);
/* Binds text, or NULL for a NULL pointer. */
void ag_db__bind_text(sqlite3_stmt *st, int i, const char *s);

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

#endif
