/*
 * The policy database's core: opening, migrations, transactions, the
 * change counter and the one read transaction that loads everything.
 */
#include "ag_db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "ag_db_impl.h"
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

/* Applies every embedded migration newer than the recorded version; seeds a
 * database that had none. Runs inside the caller's transaction. */
static int migrate(struct ag_db *pdb, const struct ag_policy *seed, size_t n,
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
    for (size_t i = 0; !rc && start == 0 && i < n; i++)
        rc = ag_db__policy_save_in_tx(pdb, &seed[i], "seed", NULL, err);
    return rc;
}

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

int ag_db_open(const char *path, const struct ag_policy *seed, size_t n,
               struct ag_db **out, struct ag_error *err)
{
    struct ag_db *pdb = calloc(1, sizeof *pdb);
    if (!pdb)
        return ag_db__nomem(err);
    make_parent_dir(path);
    int flags =
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = AG_OK;
    if (sqlite3_open_v2(path, &pdb->db, flags, NULL) != SQLITE_OK)
        rc = ag_db__fail(pdb->db, path, err);
    if (!rc) {
        sqlite3_busy_timeout(pdb->db, 5000);
        rc = ag_db__exec(pdb->db, "PRAGMA journal_mode=WAL", err);
    }
    if (!rc)
        rc = ag_db__exec(pdb->db, "BEGIN IMMEDIATE", err);
    if (!rc) {
        rc = migrate(pdb, seed, n, err);
        rc = rc ? rc : ag_db__exec(pdb->db, "COMMIT", err);
        if (rc)
            sqlite3_exec(pdb->db, "ROLLBACK", NULL, NULL, NULL);
    }
    if (rc) {
        ag_db_close(pdb);
        return rc;
    }
    *out = pdb;
    return AG_OK;
}

void ag_db_close(struct ag_db *db)
{
    if (!db)
        return;
    sqlite3_close(db->db);
    free(db);
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

int ag_db_load_all(struct ag_db *db, struct ag_policy **ps, size_t *n,
                   struct ag_list_entry **lists, size_t *nlists,
                   struct ag_error *err)
{
    int rc = ag_db__exec(db->db, "BEGIN", err);
    if (rc)
        return rc;
    rc = ag_db_policies_load(db, ps, n, err);
    if (!rc) {
        rc = ag_db_lists_load(db, lists, nlists, err);
        if (rc)
            free(*ps);
    }
    sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL);
    return rc;
}
