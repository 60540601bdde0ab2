/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy database's core: opening, migrations, transactions, the
 * change counter and the read transaction. It names no table of the
 * parts: they call it, and hand it what it runs for them (ag_db_core.h).
 */
#include "ag_db_core.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "ag_buf.h"
#include "ag_db_core_impl.h"
#include "ag_embedded.h"
#include "ag_error.h"

int ag_db__fail(sqlite3 *db, const char *what, struct ag_error *err)
{
    return ag_error_set(err, AG_EIO, NULL, "policy database: %s: %s", what,
                        db ? sqlite3_errmsg(db) : "out of memory");
}

int ag_db__nomem(struct ag_error *err)
{
    return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
}

/* Appends the columns of t, quoted (some, like "limit", are keywords),
 * and separated by commas; only those SQLite does not generate if
 * written_only. */
static int put_columns(struct ag_buf *b, const struct ag_db_table *t,
                       bool written_only)
{
    int rc = AG_OK;
    const char *sep = "";
    for (size_t i = 0; !rc && i < t->n; i++) {
        if (written_only && t->columns[i].generated)
            continue;
        rc = ag_buf_printf(b, "%s\"%s\"", sep, t->columns[i].name);
        sep = ", ";
    }
    return rc;
}

static int prepare_built(struct ag_db *db, struct ag_buf *b, int rc,
                         sqlite3_stmt **st, struct ag_error *err)
{
    if (rc == AG_ETOOBIG)
        rc = ag_error_set(err, rc, NULL,
                          "policy database: a statement would pass %d bytes",
                          AG_DB_SQL_MAX);
    else if (rc)
        rc = ag_db__nomem(err);
    else if (sqlite3_prepare_v2(db->db, b->p, -1, st, NULL) != SQLITE_OK)
        rc = ag_db__fail(db->db, b->p, err);
    ag_buf_free(b);
    return rc;
}

int ag_db__prepare_select(struct ag_db *db, const struct ag_db_table *t,
                          const char *tail, sqlite3_stmt **st,
                          struct ag_error *err)
{
    struct ag_buf b;
    ag_buf_init(&b, AG_DB_SQL_MAX);
    int rc = ag_buf_puts(&b, "SELECT ");
    rc = rc ? rc : put_columns(&b, t, false);
    rc = rc ? rc : ag_buf_printf(&b, " FROM %s", t->name);
    if (!rc && tail)
        rc = ag_buf_printf(&b, " %s", tail);
    return prepare_built(db, &b, rc, st, err);
}

int ag_db__prepare_insert(struct ag_db *db, const struct ag_db_table *t,
                          const char *upsert_key, const char *set_tail,
                          sqlite3_stmt **st, struct ag_error *err)
{
    struct ag_buf b;
    ag_buf_init(&b, AG_DB_SQL_MAX);
    int rc = ag_buf_printf(&b, "INSERT INTO %s (", t->name);
    rc = rc ? rc : put_columns(&b, t, true);
    rc = rc ? rc : ag_buf_puts(&b, ") VALUES (");
    int param = 0;
    for (size_t i = 0; !rc && i < t->n; i++) {
        if (t->columns[i].generated)
            continue;
        param++;
        rc = ag_buf_printf(&b, "%s?%d", param > 1 ? ", " : "", param);
    }
    rc = rc ? rc : ag_buf_puts(&b, ")");
    if (!rc && upsert_key) {
        rc = ag_buf_printf(&b, " ON CONFLICT (\"%s\") DO UPDATE SET ",
                           upsert_key);
        const char *sep = "";
        for (size_t i = 0; !rc && i < t->n; i++) {
            const char *name = t->columns[i].name;
            if (t->columns[i].generated || strcmp(name, upsert_key) == 0)
                continue;
            rc = ag_buf_printf(&b, "%s\"%s\" = excluded.\"%s\"", sep, name,
                               name);
            sep = ", ";
        }
        if (!rc && set_tail)
            rc = ag_buf_puts(&b, set_tail);
    }
    return prepare_built(db, &b, rc, st, err);
}

/* The value of column i, by its declared type; NULL with rc set when it
 * cannot be one. A column that holds the wrong SQL type (a hand edit) comes
 * back as its text, for the record's validator to refuse by name. */
static json_t *column_value(sqlite3_stmt *st, int i,
                            const struct ag_db_column *c, int *rc)
{
    int type = sqlite3_column_type(st, i);
    const char *text = (const char *)sqlite3_column_text(st, i);
    json_t *v;
    *rc = AG_OK;
    if (type == SQLITE_NULL)
        v = json_null();
    else if (c->type == AG_DB_BOOL && type == SQLITE_INTEGER)
        v = json_boolean(sqlite3_column_int(st, i));
    else if (c->type != AG_DB_TEXT && type == SQLITE_INTEGER)
        v = json_integer(sqlite3_column_int64(st, i));
    else if (c->type == AG_DB_REAL && type == SQLITE_FLOAT)
        v = json_real(sqlite3_column_double(st, i));
    else if (c->type == AG_DB_JSON) {
        v = json_loads(text ? text : "",
                       JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        *rc = v ? AG_OK : AG_EINVAL;
        return v;
    } else {
        v = text ? json_string(text) : NULL;
    }
    if (!v && text) {
        /* jansson refuses a string for bad UTF-8 or for want of memory;
         * the unchecked twin tells which. */
        json_t *unchecked = json_string_nocheck(text);
        *rc = unchecked ? AG_EINVAL : AG_ENOMEM;
        json_decref(unchecked);
    } else if (!v) {
        *rc = AG_ENOMEM;
    }
    return v;
}

int ag_db__row_to_json(sqlite3_stmt *st, const struct ag_db_table *t,
                       json_t **out, struct ag_error *err)
{
    json_t *o = json_object();
    if (!o)
        return ag_db__nomem(err);
    for (size_t i = 0; i < t->n; i++) {
        const struct ag_db_column *c = &t->columns[i];
        int rc;
        json_t *v = column_value(st, (int)i, c, &rc);
        if (!rc && json_object_set_new(o, c->name, v))
            rc = AG_ENOMEM;
        if (rc) {
            json_decref(o);
            if (rc == AG_ENOMEM)
                return ag_db__nomem(err);
            return ag_error_set(err, rc, c->name, "%s is not valid %s", c->name,
                                c->type == AG_DB_JSON ? "JSON" : "UTF-8");
        }
    }
    *out = o;
    return AG_OK;
}

int ag_db__bind_record(struct ag_db *db, sqlite3_stmt *st,
                       const struct ag_db_table *t, const json_t *record,
                       struct ag_error *err)
{
    int param = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ag_db_column *c = &t->columns[i];
        if (c->generated)
            continue;
        param++;
        const json_t *v = json_object_get(record, c->name);
        int rc;
        if (!v || json_is_null(v)) {
            rc = sqlite3_bind_null(st, param);
        } else if (c->type == AG_DB_JSON) {
            char *text =
                json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
            if (!text)
                return ag_db__nomem(err);
            rc = sqlite3_bind_text(st, param, text, -1, SQLITE_TRANSIENT);
            free(text);
        } else if (c->type == AG_DB_BOOL) {
            rc = sqlite3_bind_int(st, param, json_is_true(v));
        } else if (json_is_integer(v)) {
            rc = sqlite3_bind_int64(st, param, json_integer_value(v));
        } else if (json_is_real(v)) {
            rc = sqlite3_bind_double(st, param, json_real_value(v));
        } else {
            rc = sqlite3_bind_text(st, param, json_string_value(v), -1,
                                   SQLITE_TRANSIENT);
        }
        if (rc != SQLITE_OK)
            return ag_db__fail(db->db, c->name, err);
    }
    return AG_OK;
}

int ag_db__exec(sqlite3 *db, const char *sql, struct ag_error *err)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return ag_db__fail(db, sql, err);
    return AG_OK;
}

static int read_version(sqlite3 *db, int *version)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT coalesce(max(version), 0) FROM "
                           "schema_version",
                           -1, &st, NULL) != SQLITE_OK)
        return AG_EIO;
    int rc = sqlite3_step(st) == SQLITE_ROW ? AG_OK : AG_EIO;
    if (!rc)
        *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return rc;
}

int ag_db_schema_version(struct ag_db *db)
{
    int v = 0;
    return read_version(db->db, &v) ? -1 : v;
}

static int record_version(sqlite3 *db, int version, const char *name)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO schema_version (version, name) "
                           "VALUES (?1, ?2)",
                           -1, &st, NULL) != SQLITE_OK)
        return AG_EIO;
    sqlite3_bind_int(st, 1, version);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? AG_OK : AG_EIO;
    sqlite3_finalize(st);
    return rc;
}

/* Applies every embedded migration newer than the recorded version, then
 * has seed fill a database that had none. Runs inside the caller's
 * transaction. */
static int migrate(struct ag_db *pdb, ag_db_fn seed, void *seed_arg,
                   struct ag_error *err)
{
    sqlite3 *db = pdb->db;
    int rc = ag_db__exec(db,
                         "CREATE TABLE IF NOT EXISTS schema_version ("
                         " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                         " applied_at TEXT NOT NULL DEFAULT"
                         " (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
                         err);
    int current = 0;
    if (!rc && read_version(db, &current))
        rc = ag_db__fail(db, "reading schema_version", err);
    int start = current;
    for (size_t i = 0; !rc && i < ag_embedded_migrations_count; i++) {
        const struct ag_embedded_file *m = &ag_embedded_migrations[i];
        int version = atoi(m->name);
        if (version <= 0) {
            rc = ag_error_set(err, AG_EINVAL, NULL,
                              "migration %s: name must start NNN_", m->name);
        } else if (version > current) {
            rc = ag_db__exec(db, m->data, err);
            if (!rc && record_version(db, version, m->name))
                rc = ag_db__fail(db, m->name, err);
            current = version;
        }
    }
    if (!rc && start == 0 && seed)
        rc = seed(pdb, seed_arg, err);
    return rc;
}

/* How long a statement waits for another connection's lock (an instance
 * migrating, another's write) before it fails. */
#define BUSY_TIMEOUT_MS 5000

static void make_parent_dir(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        /* sqlite3_open_v2 reports the real problem below. */
    }
}

/* Opens and migrates a connection on path, creating the file only if
 * create; on success *out is the connection and *st the file it has open. */
static int open_conn(const char *path, ag_db_fn seed, void *seed_arg,
                     bool create, sqlite3 **out, struct stat *st,
                     struct ag_error *err)
{
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    if (create)
        flags |= SQLITE_OPEN_CREATE;
    int rc = AG_OK;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK)
        rc = ag_db__fail(db, path, err);
    if (!rc) {
        sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
        rc = ag_db__exec(db, "PRAGMA journal_mode=WAL", err);
    }
    if (!rc)
        rc = ag_db__exec(db, "BEGIN IMMEDIATE", err);
    if (!rc) {
        struct ag_db tmp = {.db = db};
        rc = migrate(&tmp, seed, seed_arg, err);
        rc = rc ? rc : ag_db__exec(db, "COMMIT", err);
        if (rc)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    }
    /* Taken after the open, so a file replaced in between is taken for
     * the one opened; the next check then sees the path as it is and
     * the file is opened again: one load too many, never one too few. */
    if (!rc && stat(path, st) != 0)
        rc = ag_error_set(err, AG_EIO, NULL, "policy database: %s: %s", path,
                          strerror(errno));
    if (rc) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return AG_OK;
}

int ag_db_connect(const char *path, ag_db_fn seed, void *seed_arg,
                  struct ag_db **out, struct ag_error *err)
{
    struct ag_db *pdb = calloc(1, sizeof *pdb);
    char *copy = strdup(path);
    if (!pdb || !copy) {
        free(pdb);
        free(copy);
        return ag_db__nomem(err);
    }
    make_parent_dir(path);
    struct stat st;
    int rc = open_conn(path, seed, seed_arg, true, &pdb->db, &st, err);
    if (rc) {
        free(copy);
        free(pdb);
        return rc;
    }
    pdb->path = copy;
    pdb->dev = st.st_dev;
    pdb->ino = st.st_ino;
    *out = pdb;
    return AG_OK;
}

void ag_db_close(struct ag_db *db)
{
    if (!db)
        return;
    sqlite3_close(db->db);
    free(db->path);
    free(db);
}

int ag_db_file_check(struct ag_db *db, struct ag_error *err)
{
    struct stat st;
    if (stat(db->path, &st) != 0)
        return ag_error_set(err, AG_ENOTFOUND, NULL, "policy database: %s: %s",
                            db->path, strerror(errno));
    if (st.st_dev != db->dev || st.st_ino != db->ino)
        return ag_error_set(err, AG_ECONFLICT, NULL,
                            "policy database: %s is another file now",
                            db->path);
    return AG_OK;
}

int ag_db_reopen(struct ag_db *db, struct ag_error *err)
{
    /* The path's -wal and -shm files still belong to the old file when it
     * was replaced, and a new connection would read the old file's pages
     * from them as the new one's. The old connection copies them into
     * its own file and empties the WAL first. Best effort: while another
     * process still reads the old file the WAL cannot be emptied (see
     * docs/decisions/operations-and-redis.md, replacing the database file). */
    if (ag_db_file_check(db, NULL) == AG_ECONFLICT)
        sqlite3_exec(db->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL,
                     NULL);
    sqlite3 *conn;
    struct stat st;
    int rc = open_conn(db->path, NULL, NULL, false, &conn, &st, err);
    if (rc)
        return rc;
    sqlite3_close(db->db);
    db->db = conn;
    db->dev = st.st_dev;
    db->ino = st.st_ino;
    return AG_OK;
}

int ag_db_follow(struct ag_db *db, struct ag_error *err)
{
    int rc = ag_db_file_check(db, err);
    if (rc == AG_ECONFLICT)
        return ag_db_reopen(db, err);
    /* Not AG_ENOTFOUND, which a caller takes for "no such row". */
    return rc == AG_ENOTFOUND ? AG_EIO : rc;
}

int ag_db__begin(struct ag_db *db, struct ag_error *err)
{
    return ag_db__exec(db->db, "BEGIN IMMEDIATE", err);
}

/* Commits if rc is 0, else rolls back; returns rc, or the commit's error. */
int ag_db__finish(struct ag_db *db, int rc, struct ag_error *err)
{
    if (!rc)
        rc = ag_db__exec(db->db, "COMMIT", err);
    if (rc)
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Binds text, or NULL for a NULL pointer. */
void ag_db__bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

int ag_db_data_version(struct ag_db *db, int64_t *version)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db, "PRAGMA data_version", -1, &st, NULL) !=
        SQLITE_OK)
        return AG_EIO;
    int rc = sqlite3_step(st) == SQLITE_ROW ? AG_OK : AG_EIO;
    if (!rc)
        *version = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

int ag_db_read(struct ag_db *db, ag_db_fn fn, void *arg, struct ag_error *err)
{
    int rc = ag_db__exec(db->db, "BEGIN", err);
    if (rc)
        return rc;
    rc = fn(db, arg, err);
    /* A read transaction left open would hold this connection's snapshot
     * and make every later BEGIN fail: the watcher would never load again.
     * So the end is checked, and a failed COMMIT rolls back. */
    int end = ag_db__exec(db->db, "COMMIT", rc ? NULL : err);
    if (end) {
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
        rc = rc ? rc : end;
    }
    return rc;
}
