/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allow and deny list rows: add (under the cap), delete, load.
 */
#include "ag_db.h"

#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "ag_db_core_impl.h"
#include "ag_db_tx_impl.h"
#include "ag_error.h"

/* The lists table. Rows are read and written in this column order:
 * ag_list_entry_from_row takes them so. */
static const struct ag_db_column list_columns[] = {
    {"id", AG_DB_INT, true},         {"list", AG_DB_TEXT, false},
    {"kind", AG_DB_TEXT, false},     {"value", AG_DB_TEXT, false},
    {"endpoint", AG_DB_TEXT, false}, {"note", AG_DB_TEXT, false},
};
static const struct ag_db_table lists = {
    "lists", list_columns, sizeof list_columns / sizeof list_columns[0]};

/* The lists hold at most AG_LISTS_MAX entries. The count is read inside
 * the caller's IMMEDIATE transaction, which holds the write lock from
 * BEGIN, so that two instances adding at once cannot both see room for one
 * more and pass the cap together. */
static int check_lists_room(struct ag_db *db, struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db, "SELECT count(*) FROM lists", -1, &st,
                           NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "counting list entries", err);
    int rc = sqlite3_step(st) == SQLITE_ROW
                 ? AG_OK
                 : ag_db__fail(db->db, "counting list entries", err);
    if (!rc && sqlite3_column_int64(st, 0) >= AG_LISTS_MAX) {
        rc = ag_error_set(
            err, AG_ETOOBIG, NULL,
            "the allow and deny lists hold at most %d entries together",
            AG_LISTS_MAX);
    }
    sqlite3_finalize(st);
    return rc;
}

int ag_db__list_insert(struct ag_db *db, const struct ag_list_entry *e,
                       int64_t version)
{
    sqlite3_stmt *st;
    /* The id: the entry's own when it has one (a fleet record's, the same
     * on every instance), else SQLite's next. */
    if (sqlite3_prepare_v2(
            db->db,
            "INSERT INTO lists (id, list, kind, value, endpoint, "
            "note, version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    const char *ep =
        e->endpoint < 0 ? "*" : ag_endpoint_name((enum ag_endpoint)e->endpoint);
    if (e->id > 0)
        sqlite3_bind_int64(st, 1, e->id);
    else
        sqlite3_bind_null(st, 1);
    ag_db__bind_text(st, 2, ag_list_name(e->list));
    ag_db__bind_text(st, 3, ag_list_kind_name(e->kind));
    ag_db__bind_text(st, 4, e->value);
    ag_db__bind_text(st, 5, ep);
    ag_db__bind_text(st, 6, e->note);
    sqlite3_bind_int64(st, 7, version);
    int step = sqlite3_step(st);
    sqlite3_finalize(st);
    return step;
}

int ag_db__list_add_in_tx(struct ag_db *db, const struct ag_list_entry *e,
                          const char *actor, int64_t *id, struct ag_error *err)
{
    int rc = check_lists_room(db, err);
    if (rc)
        return rc;
    int step = ag_db__list_insert(db, e, db->fleet_version);
    if (step == SQLITE_CONSTRAINT) {
        rc = ag_error_set(err, AG_ECONFLICT, "value",
                          "value is already on the %s list",
                          ag_list_name(e->list));
    } else if (step != SQLITE_DONE) {
        rc = ag_db__fail(db->db, "adding a list entry", err);
    }
    if (!rc) {
        struct ag_list_entry saved = *e;
        saved.id = sqlite3_last_insert_rowid(db->db);
        *id = saved.id;
        json_t *after = ag_list_entry_to_json(&saved);
        rc = after ? ag_db__audit(db, "list_add", ag_list_name(e->list), actor,
                                  NULL, after, err)
                   : ag_db__nomem(err);
        json_decref(after);
    }
    return rc;
}

int ag_db_list_add(struct ag_db *db, const struct ag_list_entry *e,
                   const char *actor, int64_t *id, struct ag_error *err)
{
    int rc = ag_db__begin(db, err);
    if (rc)
        return rc;
    struct ag_list_entry fresh = *e;
    fresh.id = 0;
    rc = ag_db__list_add_in_tx(db, &fresh, actor, id, err);
    return ag_db__finish(db, rc, err);
}

static int lists_query(struct ag_db *db, sqlite3_stmt *st,
                       struct ag_list_entry **out, size_t *n, size_t *ninvalid,
                       struct ag_error *err)
{
    *ninvalid = 0;
    size_t cap = 16, count = 0;
    struct ag_list_entry *es = malloc(cap * sizeof *es);
    int rc = es ? AG_OK : ag_db__nomem(err);
    int step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            struct ag_list_entry *bigger = realloc(es, 2 * cap * sizeof *es);
            if (!bigger) {
                rc = ag_db__nomem(err);
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
            (*ninvalid)++;
            continue;
        }
        count++;
    }
    if (!rc && step != SQLITE_DONE)
        rc = ag_db__fail(db->db, "loading lists", err);
    if (rc) {
        free(es);
        return rc;
    }
    *out = es;
    *n = count;
    return AG_OK;
}

int ag_db_lists_load(struct ag_db *db, struct ag_list_entry **out, size_t *n,
                     size_t *ninvalid, struct ag_error *err)
{
    sqlite3_stmt *st;
    int rc = ag_db__prepare_select(db, &lists, "ORDER BY id", &st, err);
    if (rc)
        return rc;
    rc = lists_query(db, st, out, n, ninvalid, err);
    sqlite3_finalize(st);
    return rc;
}

int ag_db__list_delete_in_tx(struct ag_db *db, enum ag_list list, int64_t id,
                             const char *actor, struct ag_error *err)
{
    sqlite3_stmt *st;
    int rc = ag_db__prepare_select(db, &lists, "WHERE id = ?1 AND list = ?2",
                                   &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, ag_list_name(list), -1, SQLITE_STATIC);
    struct ag_list_entry *found = NULL;
    size_t n = 0, invalid = 0;
    rc = lists_query(db, st, &found, &n, &invalid, err);
    sqlite3_finalize(st);
    /* An invalid row can be deleted too: that is how an operator clears
     * one; its audit row then records only its id. */
    if (!rc && n == 0 && invalid == 0)
        rc = AG_ENOTFOUND;
    if (!rc) {
        char sql[] = "DELETE FROM lists WHERE id = ?1";
        if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK)
            rc = ag_db__fail(db->db, "deleting a list entry", err);
        else {
            sqlite3_bind_int64(st, 1, id);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = ag_db__fail(db->db, "deleting a list entry", err);
            sqlite3_finalize(st);
        }
    }
    if (!rc) {
        json_t *before =
            n ? ag_list_entry_to_json(&found[0])
              : json_pack("{s:I,s:b}", "id", (json_int_t)id, "invalid", 1);
        rc = before ? ag_db__audit(db, "list_delete", ag_list_name(list), actor,
                                   before, NULL, err)
                    : ag_db__nomem(err);
        json_decref(before);
    }
    free(found);
    return rc;
}

int ag_db_list_delete(struct ag_db *db, enum ag_list list, int64_t id,
                      const char *actor, struct ag_error *err)
{
    int rc = ag_db__begin(db, err);
    if (rc)
        return rc;
    rc = ag_db__list_delete_in_tx(db, list, id, actor, err);
    return ag_db__finish(db, rc, err);
}
