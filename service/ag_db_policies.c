/*
 * Policy rows: load, read, edit, each edit with its audit row.
 */
#include "ag_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "ag_db_impl.h"
#include "ag_error.h"
#include "ag_limiter.h"

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

int ag_db_policies_load(struct ag_db *db, struct ag_policy **out, size_t *n,
                        struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT name, endpoint, key, algorithm, \"limit\", "
                           "window_s, block_s, counts, fail, mode, enabled "
                           "FROM policies ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "loading policies", err);
    size_t cap = 16, count = 0;
    struct ag_policy *ps = malloc(cap * sizeof *ps);
    int rc = ps ? AG_OK : ag_db__nomem(err);
    int step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            struct ag_policy *bigger = realloc(ps, 2 * cap * sizeof *ps);
            if (!bigger) {
                rc = ag_db__nomem(err);
                break;
            }
            ps = bigger;
            cap *= 2;
        }
        json_t *o = row_to_json(st);
        struct ag_error perr;
        rc = o ? ag_policy_from_json(o, NULL, &ps[count], &perr)
               : ag_db__nomem(err);
        if (rc == AG_EINVAL)
            ag_error_set(err, rc, NULL, "policy database: row '%.64s': %s",
                         (const char *)sqlite3_column_text(st, 0), perr.msg);
        json_decref(o);
        count++;
    }
    if (!rc && step != SQLITE_DONE)
        rc = ag_db__fail(db->db, "loading policies", err);
    sqlite3_finalize(st);
    if (rc) {
        free(ps);
        return rc;
    }
    *out = ps;
    *n = count;
    return AG_OK;
}

int ag_db_policy_put(struct ag_db *db, const struct ag_policy *p,
                     struct ag_error *err)
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
        return ag_db__fail(db->db, "saving a policy", err);
    json_t *o = ag_policy_to_json(p);
    char *key = o ? json_dumps(json_object_get(o, "key"), JSON_COMPACT) : NULL;
    int rc = ag_db__nomem(err);
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
                 : ag_db__fail(db->db, "saving a policy", err);
    }
    sqlite3_finalize(st);
    free(key);
    json_decref(o);
    return rc;
}

static const char select_policy[] =
    "SELECT name, endpoint, key, algorithm, \"limit\", window_s, block_s, "
    "counts, fail, mode, enabled FROM policies";

int ag_db_policy_get(struct ag_db *db, const char *name, struct ag_policy *out,
                     struct ag_error *err)
{
    char sql[256];
    snprintf(sql, sizeof sql, "%s WHERE name = ?1", select_policy);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "reading a policy", err);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    int rc;
    if (step == SQLITE_ROW) {
        json_t *o = row_to_json(st);
        struct ag_error perr;
        rc = o ? ag_policy_from_json(o, NULL, out, &perr) : ag_db__nomem(err);
        if (rc == AG_EINVAL)
            ag_error_set(err, rc, NULL, "policy database: row '%.64s': %s",
                         name, perr.msg);
        json_decref(o);
    } else if (step == SQLITE_DONE) {
        rc = AG_ENOTFOUND;
    } else {
        rc = ag_db__fail(db->db, "reading a policy", err);
    }
    sqlite3_finalize(st);
    return rc;
}

/* One check applies every enabled policy of its endpoint, at most
 * AG_PLAN_MAX: a change that would pass that is refused (AG_ETOOBIG) inside
 * its transaction, whichever path it came by. */
static int check_capacity(struct ag_db *db, enum ag_endpoint ep,
                          struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT count(*) FROM policies WHERE enabled = 1 "
                           "AND endpoint = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "counting policies", err);
    sqlite3_bind_text(st, 1, ag_endpoint_name(ep), -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_ROW
                 ? AG_OK
                 : ag_db__fail(db->db, "counting policies", err);
    if (!rc && sqlite3_column_int(st, 0) > AG_PLAN_MAX) {
        rc = ag_error_set(err, AG_ETOOBIG, "enabled",
                          "enabled: the %s endpoint may have at most %d "
                          "enabled policies",
                          ag_endpoint_name(ep), AG_PLAN_MAX);
    }
    sqlite3_finalize(st);
    return rc;
}

int ag_db__policy_save_in_tx(struct ag_db *db, const struct ag_policy *p,
                             const char *actor, bool *created,
                             struct ag_error *err)
{
    struct ag_policy old;
    int found = ag_db_policy_get(db, p->name, &old, err);
    if (found && found != AG_ENOTFOUND && found != AG_EINVAL)
        return found;
    /* A row that no longer validates is replaced like any other. */
    int rc = ag_db_policy_put(db, p, err);
    if (!rc)
        rc = check_capacity(db, p->endpoint, err);
    json_t *before = found == AG_OK ? ag_policy_to_json(&old) : NULL;
    json_t *after = ag_policy_to_json(p);
    if (!rc)
        rc = ag_db__audit(db, found == AG_ENOTFOUND ? "create" : "update",
                          p->name, actor, before, after, err);
    json_decref(before);
    json_decref(after);
    if (created)
        *created = found == AG_ENOTFOUND;
    return rc;
}

int ag_db_policy_save(struct ag_db *db, const struct ag_policy *p,
                      const char *actor, bool *created, struct ag_error *err)
{
    int rc = ag_db__begin(db, err);
    if (rc)
        return rc;
    rc = ag_db__policy_save_in_tx(db, p, actor, created, err);
    return ag_db__finish(db, rc, err);
}

int ag_db_policies_import(struct ag_db *db, const struct ag_policy *ps,
                          size_t n, const char *actor, struct ag_error *err)
{
    int rc = ag_db__begin(db, err);
    if (rc)
        return rc;
    for (size_t i = 0; !rc && i < n; i++)
        rc = ag_db__policy_save_in_tx(db, &ps[i], actor, NULL, err);
    return ag_db__finish(db, rc, err);
}

int ag_db_policy_delete(struct ag_db *db, const char *name, const char *actor,
                        struct ag_error *err)
{
    int rc = ag_db__begin(db, err);
    if (rc)
        return rc;
    struct ag_policy old;
    rc = ag_db_policy_get(db, name, &old, err);
    json_t *before = rc == AG_OK ? ag_policy_to_json(&old) : NULL;
    if (rc == AG_EINVAL)
        rc = AG_OK; /* an invalid row can still be deleted */
    sqlite3_stmt *st = NULL;
    if (!rc &&
        sqlite3_prepare_v2(db->db, "DELETE FROM policies WHERE name = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        rc = ag_db__fail(db->db, "deleting a policy", err);
    if (!rc) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = ag_db__fail(db->db, "deleting a policy", err);
    }
    sqlite3_finalize(st);
    if (!rc)
        rc = ag_db__audit(db, "delete", name, actor, before, NULL, err);
    json_decref(before);
    return ag_db__finish(db, rc, err);
}
