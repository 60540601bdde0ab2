/*
 * The audit log: one row per change, written inside the change's own
 * transaction, and read back newest first a page at a time.
 */
#include "ag_db.h"

#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "ag_db_impl.h"
#include "ag_error.h"

int ag_db__audit(struct ag_db *db, const char *action, const char *name,
                 const char *actor, const json_t *before, const json_t *after,
                 struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "INSERT INTO audit (action, name, actor, before, "
                           "after) VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "writing the audit row", err);
    char *b = before ? json_dumps(before, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *a = after ? json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    ag_db__bind_text(st, 1, action);
    ag_db__bind_text(st, 2, name);
    ag_db__bind_text(st, 3, actor);
    ag_db__bind_text(st, 4, b);
    ag_db__bind_text(st, 5, a);
    int rc = sqlite3_step(st) == SQLITE_DONE
                 ? AG_OK
                 : ag_db__fail(db->db, "writing the audit row", err);
    sqlite3_finalize(st);
    free(b);
    free(a);
    return rc;
}

int ag_db_audit_note(struct ag_db *db, const char *action, const char *name,
                     const char *actor, const json_t *before,
                     const json_t *after, struct ag_error *err)
{
    return ag_db__audit(db, action, name, actor, before, after, err);
}

static json_t *parsed_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

int ag_db_audit_page(struct ag_db *db, int64_t before_id, int limit,
                     json_t **out, int64_t *next, struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT id, at, action, name, actor, before, after "
                           "FROM audit WHERE ?1 = 0 OR id < ?1 "
                           "ORDER BY id DESC LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "reading the audit log", err);
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
                 : ag_db__fail(db->db, "reading the audit log", err);
    sqlite3_finalize(st);
    if (rc) {
        json_decref(entries);
        return rc;
    }
    *out = entries;
    return AG_OK;
}
