/*
 * The policy database (SQLite). Opening migrates the schema: every embedded
 * migrations/NNN_*.sql newer than the recorded version runs, in order,
 * inside one IMMEDIATE transaction, so concurrent starts of several
 * instances on one file migrate it once. A database created by this open is
 * seeded with the given policies in the same transaction; an existing one
 * never is, even if an admin emptied it.
 *
 * One ag_policy_db is one SQLite connection: use it from one thread at a
 * time. Every statement is prepared with bound parameters.
 */
#ifndef AG_POLICY_DB_H
#define AG_POLICY_DB_H

#include <stddef.h>

#include "ag_policy.h"

struct ag_policy_db;

/* Opens (creating if absent) and migrates the database at path, seeding a
 * new one with the n policies in seed. On failure returns a negative code
 * and a message in err; *out is untouched. Close with ag_policy_db_close. */
int ag_policy_db_open(const char *path, const struct ag_policy *seed, size_t n,
                      struct ag_policy_db **out, char *err, size_t errsz);
void ag_policy_db_close(struct ag_policy_db *db);

/* The schema version now recorded (the newest migration applied). */
int ag_policy_db_schema_version(struct ag_policy_db *db);

/* Loads every policy, each validated again. On success *out is a malloc'd
 * array of *n policies the caller frees. A row that fails validation is an
 * error naming the policy. */
int ag_policy_db_load(struct ag_policy_db *db, struct ag_policy **out,
                      size_t *n, char *err, size_t errsz);

/* Inserts or replaces one policy (already validated). */
int ag_policy_db_put(struct ag_policy_db *db, const struct ag_policy *p,
                     char *err, size_t errsz);

#endif
