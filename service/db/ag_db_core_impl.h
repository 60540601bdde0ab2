/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the policy database's core: what ag_db_core.c offers the parts
 * built on it (ag_db_policies.c, ag_db_lists.c, ag_db_audit.c,
 * ag_db_seed.c) and no other module may use. The connection and the
 * statement helpers live here so that every part runs its SQL the same
 * way. Like everything of the core, it names no part: what the parts
 * share among themselves is in ag_db_tx_impl.h.
 *
 * Like ag_db_core.h: one struct ag_db is one connection, one thread at a
 * time.
 */
#ifndef AG_DB_IMPL_H
#define AG_DB_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ag_db_core.h"
#include "ag_error.h"

struct ag_db {
    sqlite3 *db;
    char *path; /* as opened, for ag_db_file_check and ag_db_reopen */
    dev_t dev;  /* the file the connection has open, taken at open */
    ino_t ino;
    /* While a fleet record is applied (ag_db_fleet.c): its version and
     * the instance that wrote it, which the audit rows and the rows'
     * versions take; 0 and NULL otherwise. */
    int64_t fleet_version;
    const char *fleet_instance;
};

/* Fills err with what failed and SQLite's own message; returns AG_EIO. */
int ag_db__fail(sqlite3 *db, const char *what, struct ag_error *err);

/*
 * Tables as data. Each table's columns are written down once, in a
 * struct ag_db_table, and every SELECT and INSERT of it is built from that
 * list, so that the column list of a read and of a write cannot drift
 * apart. Result columns come back in table order (0, 1, ...); parameters
 * are bound in table order of the columns written (?1, ?2, ...).
 */
enum ag_db_type {
    AG_DB_TEXT, /* TEXT, a JSON string in the record */
    AG_DB_INT,  /* INTEGER, a JSON integer */
    AG_DB_BOOL, /* INTEGER 0 or 1, a JSON boolean */
    AG_DB_REAL, /* REAL, a JSON number; NULL for a field the record lacks */
    AG_DB_JSON  /* TEXT holding compact JSON, any JSON value */
};

struct ag_db_column {
    const char *name; /* the column, and its field in the JSON record */
    enum ag_db_type type;
    bool generated; /* assigned by SQLite (ids, times): never written */
};

struct ag_db_table {
    const char *name;
    const struct ag_db_column *columns;
    size_t n;
};

/* Bytes of one built statement: the policies' upsert, the longest, names
 * each column three times and passed 1024 with its twentieth (signal). */
#define AG_DB_SQL_MAX 2048

/* Prepares "SELECT <every column> FROM <table> <tail>"; tail may be NULL. */
int ag_db__prepare_select(struct ag_db *db, const struct ag_db_table *t,
                          const char *tail, sqlite3_stmt **st,
                          struct ag_error *err);
/* Prepares "INSERT INTO <table> (<written columns>) VALUES (?1, ...)",
 * and, when upsert_key names a column, "ON CONFLICT (<key>) DO UPDATE SET"
 * every other written column from excluded, followed by set_tail (e.g.
 * ", updated_at = ..."; may be NULL). */
int ag_db__prepare_insert(struct ag_db *db, const struct ag_db_table *t,
                          const char *upsert_key, const char *set_tail,
                          sqlite3_stmt **st, struct ag_error *err);

/* The JSON record of the current row of a statement prepared by
 * ag_db__prepare_select on t: one field per column, SQL NULL as null.
 * *out is new and the caller's. AG_EINVAL if a JSON column does not parse
 * or a text is not UTF-8 (a hand edit), AG_ENOMEM. */
int ag_db__row_to_json(sqlite3_stmt *st, const struct ag_db_table *t,
                       json_t **out, struct ag_error *err);
/* Binds the written columns of t, in table order from ?1, to the fields of
 * record (an absent field binds NULL). */
int ag_db__bind_record(struct ag_db *db, sqlite3_stmt *st,
                       const struct ag_db_table *t, const json_t *record,
                       struct ag_error *err);

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

#endif
