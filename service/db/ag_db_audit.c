/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The audit log: one row per change, written inside the change's own
 * transaction, and read back newest first a page at a time.
 */
#include "ag_db.h"

#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "ag_db_core_impl.h"
#include "ag_db_tx_impl.h"
#include "ag_error.h"

/* The audit table. before and after hold the JSON record of what changed
 * (NULL when there was none, or is none now). */
static const struct ag_db_column audit_columns[] = {
    {"id", AG_DB_INT, true},         {"at", AG_DB_TEXT, true},
    {"action", AG_DB_TEXT, false},   {"name", AG_DB_TEXT, false},
    {"actor", AG_DB_TEXT, false},    {"before", AG_DB_JSON, false},
    {"after", AG_DB_JSON, false},    {"fleet_version", AG_DB_INT, false},
    {"instance", AG_DB_TEXT, false},
};
static const struct ag_db_table audit = {
    "audit", audit_columns, sizeof audit_columns / sizeof audit_columns[0]};

int ag_db__audit(struct ag_db *db, const char *action, const char *name,
                 const char *actor, const json_t *before, const json_t *after,
                 struct ag_error *err)
{
    sqlite3_stmt *st;
    int rc = ag_db__prepare_insert(db, &audit, NULL, NULL, &st, err);
    if (rc)
        return rc;
    /* The record borrows before and after: json_pack's "O" would take a
     * reference, and they are const here. */
    json_t *row = json_pack("{s:s, s:s, s:s}", "action", action, "name", name,
                            "actor", actor);
    if (row && before)
        rc = json_object_set(row, "before", (json_t *)before);
    if (row && !rc && after)
        rc = json_object_set(row, "after", (json_t *)after);
    /* A fleet record's rows say which version and instance. */
    if (row && !rc && db->fleet_version)
        rc = json_object_set_new(row, "fleet_version",
                                 json_integer(db->fleet_version));
    if (row && !rc && db->fleet_instance)
        rc = json_object_set_new(row, "instance",
                                 json_string(db->fleet_instance));
    if (!row || rc)
        rc = ag_db__nomem(err);
    if (!rc)
        rc = ag_db__bind_record(db, st, &audit, row, err);
    if (!rc && sqlite3_step(st) != SQLITE_DONE)
        rc = ag_db__fail(db->db, "writing the audit row", err);
    sqlite3_finalize(st);
    json_decref(row);
    return rc;
}

int ag_db_audit_note(struct ag_db *db, const char *action, const char *name,
                     const char *actor, const json_t *before,
                     const json_t *after, struct ag_error *err)
{
    return ag_db__audit(db, action, name, actor, before, after, err);
}

int ag_db_audit_page(struct ag_db *db, int64_t before_id, int limit,
                     json_t **out, int64_t *next, struct ag_error *err)
{
    if (limit < 1 || limit > AG_DB_AUDIT_PAGE_MAX)
        return ag_error_set(err, AG_EINVAL, "limit",
                            "limit must be an integer from 1 to %d",
                            AG_DB_AUDIT_PAGE_MAX);
    sqlite3_stmt *st;
    int rc = ag_db__prepare_select(
        db, &audit, "WHERE ?1 = 0 OR id < ?1 ORDER BY id DESC LIMIT ?2", &st,
        err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, before_id);
    sqlite3_bind_int(st, 2, limit + 1);
    json_t *entries = json_array();
    rc = entries ? AG_OK : ag_db__nomem(err);
    int rows = 0, step = SQLITE_DONE;
    *next = 0;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (rows++ == limit) {
            *next = id + 1; /* the next page starts at this row */
            break;
        }
        /* A row that cannot be shown fails the page: a page with a row left
         * out would read as a history without that change. */
        json_t *entry;
        struct ag_error rowerr;
        rc = ag_db__row_to_json(st, &audit, &entry, &rowerr);
        if (rc == AG_ENOMEM)
            rc = ag_db__nomem(err);
        else if (rc)
            rc = ag_error_set(err, rc, NULL,
                              "policy database: audit row %lld: %s",
                              (long long)id, rowerr.msg);
        else if (json_array_append_new(entries, entry))
            rc = ag_db__nomem(err);
    }
    if (!rc && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = ag_db__fail(db->db, "reading the audit log", err);
    sqlite3_finalize(st);
    if (rc) {
        json_decref(entries);
        return rc;
    }
    *out = entries;
    return AG_OK;
}

int ag_db_audit_prune(struct ag_db *db, unsigned days, int64_t *deleted,
                      struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db->db,
            "DELETE FROM audit WHERE at < strftime('%Y-%m-%dT%H:%M:%fZ',"
            " 'now', '-' || ?1 || ' days') AND id NOT IN"
            " (SELECT max(id) FROM audit WHERE action IN"
            " ('create', 'update', 'delete') AND name IN"
            " (SELECT name FROM policies) GROUP BY name)",
            -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "pruning the audit log", err);
    sqlite3_bind_int64(st, 1, days);
    int rc = sqlite3_step(st) == SQLITE_DONE
                 ? AG_OK
                 : ag_db__fail(db->db, "pruning the audit log", err);
    sqlite3_finalize(st);
    if (!rc && deleted)
        *deleted = sqlite3_changes64(db->db);
    return rc;
}
