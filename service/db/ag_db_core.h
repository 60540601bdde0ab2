/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy database's core (SQLite): one connection, the schema's
 * migrations, transactions, and the file under the connection. The core
 * knows no table but schema_version. The parts built on it (policies,
 * lists, audit, seed: ag_db.h) call it, never the other way round: what
 * only the core can run at the right moment, they hand it as a function
 * (ag_db_fn), as Redis's backends hand in a ConnectionType. So the seed
 * of a new database runs inside the migrating transaction
 * (ag_db_connect), and loads that must agree run inside one read
 * transaction (ag_db_read).
 *
 * Opening migrates the schema: every embedded migrations/NNN_*.sql newer
 * than the recorded version runs, in order, inside one IMMEDIATE
 * transaction, so concurrent starts of several instances on one file
 * migrate it once.
 *
 * One ag_db is one SQLite connection: use it from one thread at a time.
 */
#ifndef AG_DB_CORE_H
#define AG_DB_CORE_H

#include <stdint.h>

#include "ag_error.h"

/* Where the service and the CLI keep the database unless told. */
#define AG_DB_DEFAULT_PATH "var/policies.db"

struct ag_db;

/* What a part runs inside a transaction the core holds: AG_OK, or a
 * negative code with err filled (the transaction then rolls back). */
typedef int (*ag_db_fn)(struct ag_db *db, void *arg, struct ag_error *err);

/* Opens (creating if absent) and migrates the database at path. When this
 * open created the schema, seed(db, seed_arg, err) fills the new database
 * inside the migrating transaction (seed may be NULL); an existing
 * database is never seeded, even if an admin emptied it. On failure
 * returns a negative code and a message in err; *out is untouched. Close
 * with ag_db_close. */
int ag_db_connect(const char *path, ag_db_fn seed, void *seed_arg,
                  struct ag_db **out, struct ag_error *err);
void ag_db_close(struct ag_db *db);

/*
 * The file under the connection. An operator who deletes or replaces the
 * file while instances run would otherwise have edits go into the
 * unlinked file (lost at the next start) and instances answer from it as
 * if nothing happened. The file is known by the device and inode its path
 * had when the connection was opened.
 */

/* AG_OK if db's path still names the file db has open; AG_ENOTFOUND if the
 * path names no file; AG_ECONFLICT if it names another one (replaced).
 * err names the path. A cheap stat(2): no SQL runs. */
int ag_db_file_check(struct ag_db *db, struct ag_error *err);
/* Opens a new connection on the file now at db's path, which must exist
 * (it is never created here, nor seeded), migrates it and puts it in
 * place of the old one. On failure db keeps its old connection and err
 * says why. */
int ag_db_reopen(struct ag_db *db, struct ag_error *err);
/* For a writer: ag_db_file_check, then ag_db_reopen if the file was
 * replaced, so that a write goes into the file at the path or fails.
 * AG_EIO (not AG_ENOTFOUND, which callers read as "no such row") while the
 * path names no file. */
int ag_db_follow(struct ag_db *db, struct ag_error *err);

/* The schema version now recorded (the newest migration applied). */
int ag_db_schema_version(struct ag_db *db);

/* SQLite's PRAGMA data_version: changes whenever another connection (this
 * process's or another's) commits to the file. Cheap: no table is read. */
int ag_db_data_version(struct ag_db *db, int64_t *version);

/* Runs fn(db, arg, err) inside one read transaction, so that everything it
 * loads comes from one snapshot of the file. Returns fn's code; or, when
 * fn succeeded but the transaction could not end, that error (the caller
 * then frees what fn handed it). The transaction ends either way: one left
 * open would pin this connection's snapshot and fail every later BEGIN. */
int ag_db_read(struct ag_db *db, ag_db_fn fn, void *arg, struct ag_error *err);

#endif
