/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy database (SQLite): policies, allow and deny lists, and the
 * audit log of every change to them. The code is cut by concern behind
 * this one header: ag_db_core.c (the connection, migrations,
 * transactions: ag_db_core.h, which knows none of the tables below);
 * ag_db_policies.c; ag_db_lists.c; ag_db_audit.c; ag_db_seed.c (opening
 * with a seed). Each part calls the core; the core calls none of them.
 *
 * A database created by ag_db_open is seeded with the given policies in
 * the migrating transaction; an existing one never is, even if an admin
 * emptied it.
 *
 * Caps that span rows (AG_PLAN_MAX enabled policies per endpoint,
 * AG_LISTS_MAX list entries) are checked inside the change's IMMEDIATE
 * transaction, so they hold however many instances write at once.
 *
 * One ag_db is one SQLite connection: use it from one thread at a time.
 * Every statement is prepared with bound parameters.
 */
#ifndef AG_DB_H
#define AG_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_db_core.h"
#include "ag_lists.h"
#include "ag_policy.h"

/* Opens (creating if absent) and migrates the database at path, seeding a
 * new one with the n policies in seed (ag_db_connect). On failure returns
 * a negative code and a message in err; *out is untouched. Close with
 * ag_db_close. */
int ag_db_open(const char *path, const struct ag_policy *seed, size_t n,
               struct ag_db **out, struct ag_error *err);
/* ag_db_open, seeding a new database with every *.json of seed_dir
 * in name order, or with the compiled-in policies/ when seed_dir is NULL or
 * empty. */
int ag_db_open_seeded(const char *path, const char *seed_dir,
                      struct ag_db **out, struct ag_error *err);

/* Loads every policy, each validated again. On success *out is a malloc'd
 * array of *n policies the caller frees. A row that fails validation is an
 * error naming the policy. */
int ag_db_policies_load(struct ag_db *db, struct ag_policy **out, size_t *n,
                        struct ag_error *err);

/* A policy row that fails validation (a hand edit, a file from another
 * version), as a lenient load reports it. */
struct ag_db_invalid {
    char name[AG_POLICY_NAME_MAX + 1];
    char error[AG_ERROR_MSG_MAX]; /* the validator's sentence */
    bool kept;                    /* its last valid version stands in for it */
};

/* ag_db_policies_load for whoever must go on when one row is bad (the
 * watcher, the admin listing): a row that fails validation is no error.
 * Its last valid version, the record of the newest change to it in the
 * audit log if that validates, stands in for it in *out; without one it
 * stays out. *bad is a malloc'd array of the *nbad invalid rows (NULL
 * when there are none) the caller frees. */
int ag_db_policies_load_lenient(struct ag_db *db, struct ag_policy **out,
                                size_t *n, struct ag_db_invalid **bad,
                                size_t *nbad, struct ag_error *err);

/* Inserts or replaces one policy (already validated), without an audit row:
 * for callers inside their own transaction. Prefer ag_db_policy_save. */
int ag_db_policy_put(struct ag_db *db, const struct ag_policy *p,
                     struct ag_error *err);

/*
 * Changes. Each runs in one IMMEDIATE transaction that also writes its
 * audit row (action, name, actor, the record before and after), so the
 * history cannot miss a change or record one that did not happen. actor
 * says where the change came from ("admin-api", "cli", "seed").
 */

/* Inserts or replaces p; *created says which. */
int ag_db_policy_save(struct ag_db *db, const struct ag_policy *p,
                      const char *actor, bool *created, struct ag_error *err);
/* Deletes the named policy; AG_ENOTFOUND if there is none. */
int ag_db_policy_delete(struct ag_db *db, const char *name, const char *actor,
                        struct ag_error *err);
/* Saves every policy of an import in one transaction. */
int ag_db_policies_import(struct ag_db *db, const struct ag_policy *ps,
                          size_t n, const char *actor, struct ag_error *err);
/* The version that last wrote the named policy (its ETag): the fleet
 * record's, or a local write's, each newer than the last; AG_ENOTFOUND if
 * there is none. */
int ag_db_policy_version(struct ag_db *db, const char *name, int64_t *version,
                         struct ag_error *err);
/* Reads one policy; AG_ENOTFOUND if there is none. */
int ag_db_policy_get(struct ag_db *db, const char *name, struct ag_policy *out,
                     struct ag_error *err);
/* An audit row for an action that changes no table here (a counter reset);
 * before and after may be NULL and stay the caller's. */
int ag_db_audit_note(struct ag_db *db, const char *action, const char *name,
                     const char *actor, const json_t *before,
                     const json_t *after, struct ag_error *err);
#define AG_DB_AUDIT_PAGE_MAX 500 /* rows in one audit page at most */

/* Audit rows newest first: at most limit rows (1 to AG_DB_AUDIT_PAGE_MAX,
 * else AG_EINVAL naming "limit") with id < before_id (0 for the newest). *out
 * is a new JSON array the caller owns; *next is the id to pass as before_id for
 * the next page, or 0 when there is none. */
int ag_db_audit_page(struct ag_db *db, int64_t before_id, int limit,
                     json_t **out, int64_t *next, struct ag_error *err);

/* Deletes the audit rows older than days days, but for the newest change
 * of each policy that exists: that record is the policy's last valid
 * version (ag_db_policies_load_lenient). *deleted (may be NULL) receives
 * how many rows went. */
int ag_db_audit_prune(struct ag_db *db, unsigned days, int64_t *deleted,
                      struct ag_error *err);

/* Adds a list entry (the digest, never a plaintext, for users and phones);
 * *id receives its id. AG_ECONFLICT if the same entry exists, AG_ETOOBIG
 * if the lists already hold AG_LISTS_MAX entries (checked in the
 * transaction, so it holds across instances). */
int ag_db_list_add(struct ag_db *db, const struct ag_list_entry *e,
                   const char *actor, int64_t *id, struct ag_error *err);
/* Deletes entry id of list; AG_ENOTFOUND if there is none. */
int ag_db_list_delete(struct ag_db *db, enum ag_list list, int64_t id,
                      const char *actor, struct ag_error *err);
/* Loads every list entry; *out is a malloc'd array the caller frees. An
 * entry that fails validation (a hand edit of the file) is left out and
 * counted in *ninvalid, so one bad row does not stop every later load
 * (it can only narrow the lists, never widen them beyond what the rows
 * say). */
int ag_db_lists_load(struct ag_db *db, struct ag_list_entry **out, size_t *n,
                     size_t *ninvalid, struct ag_error *err);

#endif
