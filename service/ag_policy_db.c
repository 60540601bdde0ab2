#include "ag_policy_db.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_limiter.h"

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

static int save_in_tx(struct ag_policy_db *db, const struct ag_policy *p,
                      const char *actor, bool *created, char *err,
                      size_t errsz);

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
        rc = save_in_tx(pdb, &seed[i], "seed", NULL, err, errsz);
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
        struct ag_error perr;
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

static int begin(struct ag_policy_db *db, char *err, size_t errsz)
{
    return exec(db->db, "BEGIN IMMEDIATE", err, errsz);
}

/* Commits if rc is 0, else rolls back; returns rc, or the commit's error. */
static int finish(struct ag_policy_db *db, int rc, char *err, size_t errsz)
{
    if (!rc)
        rc = exec(db->db, "COMMIT", err, errsz);
    if (rc)
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Binds text, or NULL for a NULL pointer. */
static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

static int audit(struct ag_policy_db *db, const char *action, const char *name,
                 const char *actor, const json_t *before, const json_t *after,
                 char *err, size_t errsz)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "INSERT INTO audit (action, name, actor, before, "
                           "after) VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db->db, "writing the audit row", err, errsz);
    char *b = before ? json_dumps(before, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *a = after ? json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    bind_text(st, 1, action);
    bind_text(st, 2, name);
    bind_text(st, 3, actor);
    bind_text(st, 4, b);
    bind_text(st, 5, a);
    int rc = sqlite3_step(st) == SQLITE_DONE
                 ? AG_OK
                 : db_fail(db->db, "writing the audit row", err, errsz);
    sqlite3_finalize(st);
    free(b);
    free(a);
    return rc;
}

static const char select_policy[] =
    "SELECT name, endpoint, key, algorithm, \"limit\", window_s, block_s, "
    "counts, fail, mode, enabled FROM policies";

int ag_policy_db_get(struct ag_policy_db *db, const char *name,
                     struct ag_policy *out, char *err, size_t errsz)
{
    char sql[256];
    snprintf(sql, sizeof sql, "%s WHERE name = ?1", select_policy);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db->db, "reading a policy", err, errsz);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    int rc;
    if (step == SQLITE_ROW) {
        json_t *o = row_to_json(st);
        struct ag_error perr;
        rc = o ? ag_policy_from_json(o, NULL, out, &perr) : AG_ENOMEM;
        if (rc == AG_EINVAL)
            snprintf(err, errsz, "policy database: row '%.64s': %s", name,
                     perr.msg);
        json_decref(o);
    } else if (step == SQLITE_DONE) {
        rc = AG_ENOTFOUND;
    } else {
        rc = db_fail(db->db, "reading a policy", err, errsz);
    }
    sqlite3_finalize(st);
    return rc;
}

/* One check applies every enabled policy of its endpoint, at most
 * AG_PLAN_MAX: a change that would pass that is refused (AG_ETOOBIG) inside
 * its transaction, whichever path it came by. */
static int check_capacity(struct ag_policy_db *db, enum ag_endpoint ep,
                          char *err, size_t errsz)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT count(*) FROM policies WHERE enabled = 1 "
                           "AND endpoint = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db->db, "counting policies", err, errsz);
    sqlite3_bind_text(st, 1, ag_endpoint_name(ep), -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_ROW
                 ? AG_OK
                 : db_fail(db->db, "counting policies", err, errsz);
    if (!rc && sqlite3_column_int(st, 0) > AG_PLAN_MAX) {
        snprintf(err, errsz,
                 "enabled: the %s endpoint may have at most %d enabled "
                 "policies",
                 ag_endpoint_name(ep), AG_PLAN_MAX);
        rc = AG_ETOOBIG;
    }
    sqlite3_finalize(st);
    return rc;
}

static int save_in_tx(struct ag_policy_db *db, const struct ag_policy *p,
                      const char *actor, bool *created, char *err, size_t errsz)
{
    struct ag_policy old;
    int found = ag_policy_db_get(db, p->name, &old, err, errsz);
    if (found && found != AG_ENOTFOUND && found != AG_EINVAL)
        return found;
    /* A row that no longer validates is replaced like any other. */
    int rc = ag_policy_db_put(db, p, err, errsz);
    if (!rc)
        rc = check_capacity(db, p->endpoint, err, errsz);
    json_t *before = found == AG_OK ? ag_policy_to_json(&old) : NULL;
    json_t *after = ag_policy_to_json(p);
    if (!rc)
        rc = audit(db, found == AG_ENOTFOUND ? "create" : "update", p->name,
                   actor, before, after, err, errsz);
    json_decref(before);
    json_decref(after);
    if (created)
        *created = found == AG_ENOTFOUND;
    return rc;
}

int ag_policy_db_save(struct ag_policy_db *db, const struct ag_policy *p,
                      const char *actor, bool *created, char *err, size_t errsz)
{
    int rc = begin(db, err, errsz);
    if (rc)
        return rc;
    rc = save_in_tx(db, p, actor, created, err, errsz);
    return finish(db, rc, err, errsz);
}

int ag_policy_db_import(struct ag_policy_db *db, const struct ag_policy *ps,
                        size_t n, const char *actor, char *err, size_t errsz)
{
    int rc = begin(db, err, errsz);
    if (rc)
        return rc;
    for (size_t i = 0; !rc && i < n; i++)
        rc = save_in_tx(db, &ps[i], actor, NULL, err, errsz);
    return finish(db, rc, err, errsz);
}

int ag_policy_db_delete(struct ag_policy_db *db, const char *name,
                        const char *actor, char *err, size_t errsz)
{
    int rc = begin(db, err, errsz);
    if (rc)
        return rc;
    struct ag_policy old;
    rc = ag_policy_db_get(db, name, &old, err, errsz);
    json_t *before = rc == AG_OK ? ag_policy_to_json(&old) : NULL;
    if (rc == AG_EINVAL)
        rc = AG_OK; /* an invalid row can still be deleted */
    sqlite3_stmt *st = NULL;
    if (!rc &&
        sqlite3_prepare_v2(db->db, "DELETE FROM policies WHERE name = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        rc = db_fail(db->db, "deleting a policy", err, errsz);
    if (!rc) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = db_fail(db->db, "deleting a policy", err, errsz);
    }
    sqlite3_finalize(st);
    if (!rc)
        rc = audit(db, "delete", name, actor, before, NULL, err, errsz);
    json_decref(before);
    return finish(db, rc, err, errsz);
}

int ag_policy_db_note(struct ag_policy_db *db, const char *action,
                      const char *name, const char *actor, const json_t *before,
                      const json_t *after, char *err, size_t errsz)
{
    return audit(db, action, name, actor, before, after, err, errsz);
}

static json_t *parsed_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

int ag_policy_db_audit_page(struct ag_policy_db *db, int64_t before_id,
                            int limit, json_t **out, int64_t *next, char *err,
                            size_t errsz)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT id, at, action, name, actor, before, after "
                           "FROM audit WHERE ?1 = 0 OR id < ?1 "
                           "ORDER BY id DESC LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db->db, "reading the audit log", err, errsz);
    sqlite3_bind_int64(st, 1, before_id);
    sqlite3_bind_int(st, 2, limit + 1);
    json_t *entries = json_array();
    int rows = 0, step;
    *next = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (rows++ == limit) {
            *next = id + 1; /* the next page starts at this row */
            break;
        }
        json_array_append_new(
            entries,
            json_pack(
                "{s:I, s:s, s:s, s:s, s:s, s:o, s:o}", "id", (json_int_t)id,
                "at", sqlite3_column_text(st, 1), "action",
                sqlite3_column_text(st, 2), "name", sqlite3_column_text(st, 3),
                "actor", sqlite3_column_text(st, 4), "before",
                parsed_or_null((const char *)sqlite3_column_text(st, 5)),
                "after",
                parsed_or_null((const char *)sqlite3_column_text(st, 6))));
    }
    int rc = step == SQLITE_ROW || step == SQLITE_DONE
                 ? AG_OK
                 : db_fail(db->db, "reading the audit log", err, errsz);
    sqlite3_finalize(st);
    if (rc) {
        json_decref(entries);
        return rc;
    }
    *out = entries;
    return AG_OK;
}

/* The lists hold at most AG_LISTS_MAX entries. The count is read inside
 * the caller's IMMEDIATE transaction, which holds the write lock from
 * BEGIN, so that two instances adding at once cannot both see room for one
 * more and pass the cap together. */
static int check_lists_room(struct ag_policy_db *db, char *err, size_t errsz)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db, "SELECT count(*) FROM lists", -1, &st,
                           NULL) != SQLITE_OK)
        return db_fail(db->db, "counting list entries", err, errsz);
    int rc = sqlite3_step(st) == SQLITE_ROW
                 ? AG_OK
                 : db_fail(db->db, "counting list entries", err, errsz);
    if (!rc && sqlite3_column_int64(st, 0) >= AG_LISTS_MAX) {
        snprintf(err, errsz,
                 "the allow and deny lists hold at most %d entries together",
                 AG_LISTS_MAX);
        rc = AG_ETOOBIG;
    }
    sqlite3_finalize(st);
    return rc;
}

int ag_policy_db_list_add(struct ag_policy_db *db,
                          const struct ag_list_entry *e, const char *actor,
                          int64_t *id, char *err, size_t errsz)
{
    int rc = begin(db, err, errsz);
    if (rc)
        return rc;
    rc = check_lists_room(db, err, errsz);
    if (rc)
        return finish(db, rc, err, errsz);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "INSERT INTO lists (list, kind, value, endpoint, "
                           "note) VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &st, NULL) != SQLITE_OK)
        return finish(db, db_fail(db->db, "adding a list entry", err, errsz),
                      err, errsz);
    const char *ep =
        e->endpoint < 0 ? "*" : ag_endpoint_name((enum ag_endpoint)e->endpoint);
    bind_text(st, 1, ag_list_name(e->list));
    bind_text(st, 2, ag_list_kind_name(e->kind));
    bind_text(st, 3, e->value);
    bind_text(st, 4, ep);
    bind_text(st, 5, e->note);
    int step = sqlite3_step(st);
    sqlite3_finalize(st);
    if (step == SQLITE_CONSTRAINT) {
        snprintf(err, errsz, "entry is already on the %s list",
                 ag_list_name(e->list));
        rc = AG_ECONFLICT;
    } else if (step != SQLITE_DONE) {
        rc = db_fail(db->db, "adding a list entry", err, errsz);
    }
    if (!rc) {
        struct ag_list_entry saved = *e;
        saved.id = sqlite3_last_insert_rowid(db->db);
        *id = saved.id;
        json_t *after = ag_list_entry_to_json(&saved);
        rc = audit(db, "list_add", ag_list_name(e->list), actor, NULL, after,
                   err, errsz);
        json_decref(after);
    }
    return finish(db, rc, err, errsz);
}

static int lists_query(struct ag_policy_db *db, sqlite3_stmt *st,
                       struct ag_list_entry **out, size_t *n, char *err,
                       size_t errsz)
{
    size_t cap = 16, count = 0;
    struct ag_list_entry *es = malloc(cap * sizeof *es);
    int rc = es ? AG_OK : AG_ENOMEM;
    int step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            struct ag_list_entry *bigger = realloc(es, 2 * cap * sizeof *es);
            if (!bigger) {
                rc = AG_ENOMEM;
                break;
            }
            es = bigger;
            cap *= 2;
        }
        if (ag_list_entry_from_row(sqlite3_column_int64(st, 0),
                                   (const char *)sqlite3_column_text(st, 1),
                                   (const char *)sqlite3_column_text(st, 2),
                                   (const char *)sqlite3_column_text(st, 3),
                                   (const char *)sqlite3_column_text(st, 4),
                                   (const char *)sqlite3_column_text(st, 5),
                                   &es[count])) {
            snprintf(err, errsz, "policy database: list entry %lld is invalid",
                     (long long)sqlite3_column_int64(st, 0));
            rc = AG_EINVAL;
        }
        count++;
    }
    if (!rc && step != SQLITE_DONE)
        rc = db_fail(db->db, "loading lists", err, errsz);
    if (rc) {
        free(es);
        return rc;
    }
    *out = es;
    *n = count;
    return AG_OK;
}

int ag_policy_db_lists_load(struct ag_policy_db *db, struct ag_list_entry **out,
                            size_t *n, char *err, size_t errsz)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT id, list, kind, value, endpoint, note "
                           "FROM lists ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db->db, "loading lists", err, errsz);
    int rc = lists_query(db, st, out, n, err, errsz);
    sqlite3_finalize(st);
    return rc;
}

int ag_policy_db_list_delete(struct ag_policy_db *db, enum ag_list list,
                             int64_t id, const char *actor, char *err,
                             size_t errsz)
{
    int rc = begin(db, err, errsz);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT id, list, kind, value, endpoint, note "
                           "FROM lists WHERE id = ?1 AND list = ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return finish(db, db_fail(db->db, "deleting a list entry", err, errsz),
                      err, errsz);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, ag_list_name(list), -1, SQLITE_STATIC);
    struct ag_list_entry *found = NULL;
    size_t n = 0;
    rc = lists_query(db, st, &found, &n, err, errsz);
    sqlite3_finalize(st);
    if (!rc && n == 0)
        rc = AG_ENOTFOUND;
    if (!rc) {
        char sql[] = "DELETE FROM lists WHERE id = ?1";
        if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK)
            rc = db_fail(db->db, "deleting a list entry", err, errsz);
        else {
            sqlite3_bind_int64(st, 1, id);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = db_fail(db->db, "deleting a list entry", err, errsz);
            sqlite3_finalize(st);
        }
    }
    if (!rc) {
        json_t *before = ag_list_entry_to_json(&found[0]);
        rc = audit(db, "list_delete", ag_list_name(list), actor, before, NULL,
                   err, errsz);
        json_decref(before);
    }
    free(found);
    return finish(db, rc, err, errsz);
}

int ag_policy_db_data_version(struct ag_policy_db *db, int64_t *version)
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

int ag_policy_db_load_all(struct ag_policy_db *db, struct ag_policy **ps,
                          size_t *n, struct ag_list_entry **lists,
                          size_t *nlists, char *err, size_t errsz)
{
    int rc = exec(db->db, "BEGIN", err, errsz);
    if (rc)
        return rc;
    rc = ag_policy_db_load(db, ps, n, err, errsz);
    if (!rc) {
        rc = ag_policy_db_lists_load(db, lists, nlists, err, errsz);
        if (rc)
            free(*ps);
    }
    sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL);
    return rc;
}

/* Appends the policies of one file to *all. */
static int add_seed_file(const char *name, const char *text, size_t len,
                         struct ag_policy **all, size_t *n, char *err,
                         size_t errsz)
{
    struct ag_policy *ps;
    size_t count;
    struct ag_error perr;
    int rc = ag_policy_parse_file(text, len, &ps, &count, &perr);
    if (rc) {
        snprintf(err, errsz, "seed policies %s: %s", name, perr.msg);
        return rc;
    }
    struct ag_policy *grown = realloc(*all, (*n + count + 1) * sizeof *ps);
    if (!grown) {
        free(ps);
        return AG_ENOMEM;
    }
    memcpy(grown + *n, ps, count * sizeof *ps);
    *all = grown;
    *n += count;
    free(ps);
    return AG_OK;
}

static int read_whole(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return AG_EIO;
    char *buf = malloc(1024 * 1024 + 1);
    size_t n = buf ? fread(buf, 1, 1024 * 1024 + 1, f) : 0;
    int bad = !buf || ferror(f) || n > 1024 * 1024;
    fclose(f);
    if (bad) {
        free(buf);
        return AG_EIO;
    }
    *text = buf;
    *len = n;
    return AG_OK;
}

static int json_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* The policies seeded into a new database: every *.json of seed_dir in name
 * order, or the compiled-in policies/ when seed_dir is empty. */
static int load_seed(const char *seed_dir, struct ag_policy **all, size_t *n,
                     char *err, size_t errsz)
{
    *all = NULL;
    *n = 0;
    if (!seed_dir[0]) {
        for (size_t i = 0; i < ag_embedded_policies_count; i++) {
            const struct ag_embedded_file *f = &ag_embedded_policies[i];
            int rc =
                add_seed_file(f->name, f->data, f->len, all, n, err, errsz);
            if (rc)
                return rc;
        }
        return AG_OK;
    }
    struct dirent **names;
    int count = scandir(seed_dir, &names, json_name, alphasort);
    if (count < 0) {
        snprintf(err, errsz, "--seed-dir '%s' cannot be read", seed_dir);
        return AG_EIO;
    }
    int rc = AG_OK;
    for (int i = 0; i < count; i++) {
        char path[2048];
        char *text = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", seed_dir, names[i]->d_name);
        if (!rc && read_whole(path, &text, &len)) {
            snprintf(err, errsz, "cannot read %s", path);
            rc = AG_EIO;
        }
        if (!rc)
            rc = add_seed_file(path, text, len, all, n, err, errsz);
        free(text);
        free(names[i]);
    }
    free(names);
    return rc;
}

int ag_policy_db_open_seeded(const char *path, const char *seed_dir,
                             struct ag_policy_db **out, char *err, size_t errsz)
{
    struct ag_policy *seed = NULL;
    size_t n = 0;
    int rc = load_seed(seed_dir ? seed_dir : "", &seed, &n, err, errsz);
    if (!rc)
        rc = ag_policy_db_open(path, seed, n, out, err, errsz);
    free(seed);
    return rc;
}
