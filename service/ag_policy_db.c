#include "ag_policy_db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "ag_embedded.h"
#include "ag_error.h"

struct ag_policy_db {
    sqlite3 *db;
};

static int db_fail(sqlite3 *db, const char *what, char *err, size_t errsz)
{
    snprintf(err, errsz, "policy database: %s: %s", what,
             db ? sqlite3_errmsg(db) : "out of memory");
    return AG_EIO;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errsz)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(db, sql, err, errsz);
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

int ag_policy_db_schema_version(struct ag_policy_db *db)
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
static int migrate(struct ag_policy_db *pdb, const struct ag_policy *seed,
                   size_t n, char *err, size_t errsz)
{
    sqlite3 *db = pdb->db;
    int rc = exec(db,
                  "CREATE TABLE IF NOT EXISTS schema_version ("
                  " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                  " applied_at TEXT NOT NULL DEFAULT"
                  " (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
                  err, errsz);
    int current = 0;
    if (!rc && read_version(db, &current))
        rc = db_fail(db, "reading schema_version", err, errsz);
    int start = current;
    for (size_t i = 0; !rc && i < ag_embedded_migrations_count; i++) {
        const struct ag_embedded_file *m = &ag_embedded_migrations[i];
        int version = atoi(m->name);
        if (version <= 0) {
            snprintf(err, errsz, "migration %s: name must start NNN_", m->name);
            rc = AG_EINVAL;
        } else if (version > current) {
            rc = exec(db, m->data, err, errsz);
            if (!rc && record_version(db, version, m->name))
                rc = db_fail(db, m->name, err, errsz);
            current = version;
        }
    }
    for (size_t i = 0; !rc && start == 0 && i < n; i++)
        rc = ag_policy_db_put(pdb, &seed[i], err, errsz);
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

int ag_policy_db_open(const char *path, const struct ag_policy *seed, size_t n,
                      struct ag_policy_db **out, char *err, size_t errsz)
{
    struct ag_policy_db *pdb = calloc(1, sizeof *pdb);
    if (!pdb)
        return AG_ENOMEM;
    make_parent_dir(path);
    int flags =
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = AG_OK;
    if (sqlite3_open_v2(path, &pdb->db, flags, NULL) != SQLITE_OK)
        rc = db_fail(pdb->db, path, err, errsz);
    if (!rc) {
        sqlite3_busy_timeout(pdb->db, 5000);
        rc = exec(pdb->db, "PRAGMA journal_mode=WAL", err, errsz);
    }
    if (!rc)
        rc = exec(pdb->db, "BEGIN IMMEDIATE", err, errsz);
    if (!rc) {
        rc = migrate(pdb, seed, n, err, errsz);
        rc = rc ? rc : exec(pdb->db, "COMMIT", err, errsz);
        if (rc)
            sqlite3_exec(pdb->db, "ROLLBACK", NULL, NULL, NULL);
    }
    if (rc) {
        ag_policy_db_close(pdb);
        return rc;
    }
    *out = pdb;
    return AG_OK;
}

void ag_policy_db_close(struct ag_policy_db *db)
{
    if (!db)
        return;
    sqlite3_close(db->db);
    free(db);
}

static const char *const columns[] = {
    "name",    "endpoint", "key",  "algorithm", "limit",  "window_s",
    "block_s", "counts",   "fail", "mode",      "enabled"};

/* Builds the JSON record of the current row, for ag_policy_from_json. */
static json_t *row_to_json(sqlite3_stmt *st)
{
    json_t *o = json_object();
    for (int i = 0; o && i < (int)(sizeof columns / sizeof columns[0]); i++) {
        const char *name = columns[i];
        json_t *v;
        if (strcmp(name, "key") == 0) {
            const char *text = (const char *)sqlite3_column_text(st, i);
            v = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
        } else if (strcmp(name, "enabled") == 0) {
            v = json_boolean(sqlite3_column_int(st, i));
        } else if (sqlite3_column_type(st, i) == SQLITE_INTEGER) {
            v = json_integer(sqlite3_column_int64(st, i));
        } else {
            const char *text = (const char *)sqlite3_column_text(st, i);
            v = text ? json_string(text) : NULL;
        }
        if (v)
            json_object_set_new(o, name, v);
    }
    return o;
}

int ag_policy_db_load(struct ag_policy_db *db, struct ag_policy **out,
                      size_t *n, char *err, size_t errsz)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT name, endpoint, key, algorithm, \"limit\", "
                           "window_s, block_s, counts, fail, mode, enabled "
                           "FROM policies ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db->db, "loading policies", err, errsz);
    size_t cap = 16, count = 0;
    struct ag_policy *ps = malloc(cap * sizeof *ps);
    int rc = ps ? AG_OK : AG_ENOMEM;
    int step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            struct ag_policy *bigger = realloc(ps, 2 * cap * sizeof *ps);
            if (!bigger) {
                rc = AG_ENOMEM;
                break;
            }
            ps = bigger;
            cap *= 2;
        }
        json_t *o = row_to_json(st);
        struct ag_policy_error perr;
        rc = o ? ag_policy_from_json(o, NULL, &ps[count], &perr) : AG_ENOMEM;
        if (rc == AG_EINVAL)
            snprintf(err, errsz, "policy database: row '%.64s': %s",
                     (const char *)sqlite3_column_text(st, 0), perr.msg);
        json_decref(o);
        count++;
    }
    if (!rc && step != SQLITE_DONE)
        rc = db_fail(db->db, "loading policies", err, errsz);
    sqlite3_finalize(st);
    if (rc) {
        free(ps);
        return rc;
    }
    *out = ps;
    *n = count;
    return AG_OK;
}

int ag_policy_db_put(struct ag_policy_db *db, const struct ag_policy *p,
                     char *err, size_t errsz)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db->db,
            "INSERT INTO policies (name, endpoint, key, algorithm, \"limit\", "
            "window_s, block_s, counts, fail, mode, enabled) VALUES "
            "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
            "ON CONFLICT (name) DO UPDATE SET endpoint = excluded.endpoint, "
            "key = excluded.key, algorithm = excluded.algorithm, "
            "\"limit\" = excluded.\"limit\", window_s = excluded.window_s, "
            "block_s = excluded.block_s, counts = excluded.counts, "
            "fail = excluded.fail, mode = excluded.mode, "
            "enabled = excluded.enabled, updated_at = "
            "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
            -1, &st, NULL) != SQLITE_OK)
        return db_fail(db->db, "saving a policy", err, errsz);
    json_t *o = ag_policy_to_json(p);
    char *key = o ? json_dumps(json_object_get(o, "key"), JSON_COMPACT) : NULL;
    int rc = AG_ENOMEM;
    if (key) {
        sqlite3_bind_text(st, 1, p->name, -1, SQLITE_STATIC);
        for (int i = 1; i < 11; i++) {
            json_t *v = json_object_get(o, columns[i]);
            if (i == 2)
                sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
            else if (json_is_string(v))
                sqlite3_bind_text(st, i + 1, json_string_value(v), -1,
                                  SQLITE_STATIC);
            else if (json_is_integer(v))
                sqlite3_bind_int64(st, i + 1, json_integer_value(v));
            else
                sqlite3_bind_int(st, i + 1, json_is_true(v));
        }
        rc = sqlite3_step(st) == SQLITE_DONE
                 ? AG_OK
                 : db_fail(db->db, "saving a policy", err, errsz);
    }
    sqlite3_finalize(st);
    free(key);
    json_decref(o);
    return rc;
}
