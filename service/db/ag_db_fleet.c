/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet row and the application of a change's operations
 * (ag_db_fleet.h). The snapshot operation and the export are
 * ag_db_fleet_snapshot.c's.
 */
#include "ag_db_fleet.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>
#include <sqlite3.h>

#include "ag_db_core_impl.h"
#include "ag_db_tx_impl.h"
#include "ag_error.h"

/* Copies column i of st (text) into out of size bytes; "" for NULL. */
static void column_text(sqlite3_stmt *st, int i, char *out, size_t size)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(out, size, "%s", t ? (const char *)t : "");
}

static int read_row(struct ag_db *db, struct ag_db_fleet *out,
                    struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT name, epoch, version, hash, member, "
                           "pristine, instance, replaces, touched FROM fleet "
                           "WHERE id = 1",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "reading the fleet row", err);
    int rc = AG_OK;
    if (sqlite3_step(st) == SQLITE_ROW) {
        memset(out, 0, sizeof *out);
        column_text(st, 0, out->name, sizeof out->name);
        column_text(st, 1, out->epoch, sizeof out->epoch);
        out->version = sqlite3_column_int64(st, 2);
        column_text(st, 3, out->hash, sizeof out->hash);
        out->member = sqlite3_column_int(st, 4) != 0;
        out->pristine = sqlite3_column_int(st, 5) != 0;
        column_text(st, 6, out->instance, sizeof out->instance);
        column_text(st, 7, out->replaces, sizeof out->replaces);
        out->touched = sqlite3_column_int(st, 8) != 0;
    } else {
        rc = ag_db__fail(db->db, "reading the fleet row", err);
    }
    sqlite3_finalize(st);
    return rc;
}

int ag_db_fleet_get(struct ag_db *db, struct ag_db_fleet *out,
                    struct ag_error *err)
{
    int rc = read_row(db, out, err);
    if (rc || out->instance[0])
        return rc;
    /* The first time: an id of its own, kept with the database (two
     * processes on one file are one instance of the fleet). */
    unsigned char raw[AG_FLEET_INSTANCE_HEX / 2];
    char id[AG_FLEET_INSTANCE_HEX + 1];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(id, sizeof id, raw, sizeof raw);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "UPDATE fleet SET instance = ?1 WHERE id = 1 AND "
                           "instance = ''",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "naming this instance", err);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE
             ? AG_OK
             : ag_db__fail(db->db, "naming this instance", err);
    sqlite3_finalize(st);
    return rc ? rc : read_row(db, out, err);
}

/* Prefixes err's message with the operation's place, "ops[i]: ". */
static int at_op(int rc, size_t i, struct ag_error *err)
{
    char head[32];
    int n = snprintf(head, sizeof head, "ops[%zu]: ", i);
    size_t len = strlen(err->msg);
    /* The message moves right by the head, its end cut where it must. */
    if (len + (size_t)n >= sizeof err->msg)
        len = sizeof err->msg - 1 - (size_t)n;
    memmove(err->msg + n, err->msg, len);
    memcpy(err->msg, head, (size_t)n);
    err->msg[n + len] = '\0';
    return rc;
}

static const char *string_of(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The list entry of a list_add operation; its id is the record's (above
 * 0) or, made here alone, the next one (0). */
static int op_list_add(struct ag_db *db, const json_t *op, const char *actor,
                       int64_t *id, struct ag_error *err)
{
    struct ag_list_entry e;
    int rc = ag_db_fleet_entry_parse(json_object_get(op, "entry"), &e, err);
    if (rc)
        return rc;
    if (db->fleet_version > 0 && e.id < 1)
        return ag_error_set(err, AG_EINVAL, "id",
                            "entry.id: a fleet record's entry has its id");
    return ag_db__list_add_in_tx(db, &e, actor, id, err);
}

static int op_list_delete(struct ag_db *db, const json_t *op, const char *actor,
                          struct ag_error *err)
{
    const char *list = string_of(op, "list");
    int l = list ? ag_list_parse(list) : -1;
    json_int_t id = json_integer_value(json_object_get(op, "id"));
    if (l < 0)
        return ag_error_set(err, AG_EINVAL, "list",
                            "list must be \"allow\" or \"deny\"");
    if (id < 1)
        return ag_error_set(err, AG_EINVAL, "id", "id must be an entry id");
    int rc = ag_db__list_delete_in_tx(db, (enum ag_list)l, id, actor, err);
    if (rc == AG_ENOTFOUND)
        ag_error_fill(err, rc, "id", "no entry %lld in the %s list",
                      (long long)id, list);
    return rc;
}

static int op_policy(struct ag_db *db, const char *kind, const json_t *op,
                     const char *actor, struct ag_error *err)
{
    if (strcmp(kind, "policy_put") == 0) {
        struct ag_policy p;
        int rc =
            ag_policy_from_json(json_object_get(op, "policy"), NULL, &p, err);
        return rc ? rc : ag_db__policy_save_in_tx(db, &p, actor, NULL, err);
    }
    const char *name = string_of(op, "name");
    if (!name || !ag_policy_name_valid(name))
        return ag_error_set(err, AG_EINVAL, "name",
                            "name must be the name of a policy");
    int rc = ag_db__policy_delete_in_tx(db, name, actor, err);
    if (rc == AG_ENOTFOUND)
        ag_error_fill(err, rc, "name", "no policy named '%s'", name);
    return rc;
}

/* An action that changes no table (a reset, an inspection, a shield's
 * switch): its audit row alone. */
static int op_audit(struct ag_db *db, const json_t *op, const char *actor,
                    struct ag_error *err)
{
    const char *action = string_of(op, "action");
    const char *name = string_of(op, "name");
    if (!action || !action[0] || strlen(action) > 32)
        return ag_error_set(err, AG_EINVAL, "action",
                            "action must be a word of 1 to 32 characters");
    if (!name || strlen(name) > 256)
        return ag_error_set(err, AG_EINVAL, "name",
                            "name must be a string of 256 bytes at most");
    return ag_db__audit(db, action, name, actor, NULL,
                        json_object_get(op, "after"), err);
}

/* Applies operation i; *entry_id receives a list_add's id. */
static int apply_op(struct ag_db *db, const json_t *op, size_t i,
                    const char *actor, int64_t version, int64_t *entry_id,
                    struct ag_error *err)
{
    const char *kind = json_is_object(op) ? string_of(op, "op") : NULL;
    int rc;
    if (!kind)
        rc = ag_error_set(err, AG_EINVAL, "op",
                          "an operation is an object with its \"op\"");
    else if (strcmp(kind, "policy_put") == 0 ||
             strcmp(kind, "policy_delete") == 0)
        rc = op_policy(db, kind, op, actor, err);
    else if (strcmp(kind, "list_add") == 0)
        rc = op_list_add(db, op, actor, entry_id, err);
    else if (strcmp(kind, "list_delete") == 0)
        rc = op_list_delete(db, op, actor, err);
    else if (strcmp(kind, "audit") == 0)
        rc = op_audit(db, op, actor, err);
    else if (strcmp(kind, "snapshot") == 0)
        rc = ag_db__fleet_snapshot(db, op, actor, version, err);
    else
        rc = ag_error_set(err, AG_EINVAL, "op", "no operation \"%s\"", kind);
    return rc ? at_op(rc, i, err) : AG_OK;
}

/* Where the change stands against the row: ALREADY, NOT_NEXT, or APPLIED
 * (it may go on). */
static enum ag_db_fleet_outcome place(const struct ag_db_fleet *row,
                                      const struct ag_db_fleet_change *c)
{
    bool same = strcmp(row->epoch, c->epoch) == 0;
    if (c->adopt)
        return same && row->version == c->version &&
                       strcmp(row->hash, c->hash) == 0
                   ? AG_DB_FLEET_ALREADY
                   : AG_DB_FLEET_APPLIED;
    if (same && row->version >= c->version)
        return AG_DB_FLEET_ALREADY;
    if (!same || row->version != c->version - 1 ||
        strcmp(row->hash, c->prev) != 0)
        return AG_DB_FLEET_NOT_NEXT;
    return AG_DB_FLEET_APPLIED;
}

/* The fleet row's new place after record c, and its hash kept. */
static int advance(struct ag_db *db, const struct ag_db_fleet_change *c,
                   bool new_epoch, struct ag_error *err)
{
    int rc =
        new_epoch ? ag_db__exec(db->db, "DELETE FROM fleet_log", err) : AG_OK;
    sqlite3_stmt *st;
    if (!rc &&
        sqlite3_prepare_v2(
            db->db,
            "UPDATE fleet SET name = ?1, epoch = ?2, version = ?3, hash = ?4, "
            "member = 1, touched = 0, "
            "pristine = CASE WHEN ?5 THEN 1 ELSE pristine END, "
            "replaces = CASE WHEN ?6 THEN coalesce(?7, '') ELSE replaces END "
            "WHERE id = 1",
            -1, &st, NULL) != SQLITE_OK)
        rc = ag_db__fail(db->db, "moving the fleet row", err);
    if (!rc) {
        sqlite3_bind_text(st, 1, c->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, c->epoch, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, c->version);
        sqlite3_bind_text(st, 4, c->hash, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 5, c->seed);
        sqlite3_bind_int(st, 6, c->adopt);
        ag_db__bind_text(st, 7, c->replaces);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = ag_db__fail(db->db, "moving the fleet row", err);
        sqlite3_finalize(st);
    }
    if (!rc && sqlite3_prepare_v2(db->db,
                                  "INSERT OR REPLACE INTO fleet_log (version, "
                                  "epoch, hash) VALUES (?1, ?2, ?3)",
                                  -1, &st, NULL) != SQLITE_OK)
        rc = ag_db__fail(db->db, "keeping the record's hash", err);
    if (!rc) {
        sqlite3_bind_int64(st, 1, c->version);
        sqlite3_bind_text(st, 2, c->epoch, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, c->hash, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = ag_db__fail(db->db, "keeping the record's hash", err);
        sqlite3_finalize(st);
    }
    if (!rc &&
        sqlite3_prepare_v2(db->db, "DELETE FROM fleet_log WHERE version <= ?1",
                           -1, &st, NULL) != SQLITE_OK)
        rc = ag_db__fail(db->db, "pruning the record hashes", err);
    if (!rc) {
        sqlite3_bind_int64(st, 1, c->version - AG_DB_FLEET_LOG_KEEP);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = ag_db__fail(db->db, "pruning the record hashes", err);
        sqlite3_finalize(st);
    }
    return rc;
}

/* The operations of c, in order, inside the transaction. */
static int apply_ops(struct ag_db *db, const struct ag_db_fleet_change *c,
                     int64_t *entry_id, struct ag_error *err)
{
    const char *actor = string_of(c->body, "actor");
    const json_t *ops = json_object_get(c->body, "ops");
    if (!actor || !actor[0] || strlen(actor) > 64)
        return ag_error_set(err, AG_EINVAL, "actor",
                            "actor must be a string of 1 to 64 bytes");
    if (!json_is_array(ops))
        return ag_error_set(err, AG_EINVAL, "ops",
                            "ops must be an array of operations");
    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op)
    {
        int rc = apply_op(db, op, i, actor, c->version, entry_id, err);
        if (rc)
            return rc;
    }
    return AG_OK;
}

int ag_db_fleet_apply(struct ag_db *db, const struct ag_db_fleet_change *c,
                      enum ag_db_fleet_outcome *outcome, int64_t *entry_id,
                      struct ag_error *err)
{
    *outcome = AG_DB_FLEET_APPLIED;
    int64_t id = 0;
    int rc = ag_db__begin(db, err);
    if (rc)
        return rc;
    struct ag_db_fleet row;
    bool new_epoch = false;
    if (c->version > 0) {
        rc = read_row(db, &row, err);
        if (!rc)
            *outcome = place(&row, c);
        if (rc || *outcome != AG_DB_FLEET_APPLIED)
            return ag_db__finish(db, rc, err);
        new_epoch = strcmp(row.epoch, c->epoch) != 0;
    }
    db->fleet_version = c->version;
    db->fleet_instance = c->version > 0 ? c->instance : NULL;
    rc = apply_ops(db, c, &id, err);
    db->fleet_version = 0;
    db->fleet_instance = NULL;
    if (!rc && c->version > 0)
        rc = advance(db, c, new_epoch, err);
    if (c->dry_run) {
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        rc = ag_db__finish(db, rc, err);
    }
    if (!rc && entry_id)
        *entry_id = id;
    return rc;
}

int ag_db_fleet_hash_at(struct ag_db *db, int64_t version, char *out,
                        struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT hash FROM fleet_log WHERE version = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "reading a record's hash", err);
    sqlite3_bind_int64(st, 1, version);
    int step = sqlite3_step(st), rc = AG_OK;
    if (step == SQLITE_ROW)
        column_text(st, 0, out, AG_FLEET_HASH_HEX + 1);
    else if (step == SQLITE_DONE)
        rc = AG_ENOTFOUND;
    else
        rc = ag_db__fail(db->db, "reading a record's hash", err);
    sqlite3_finalize(st);
    return rc;
}

int ag_db_fleet_next_entry_id(struct ag_db *db, int64_t *id,
                              struct ag_error *err)
{
    sqlite3_stmt *st;
    /* Past every id the table ever gave (AUTOINCREMENT keeps the highest
     * in sqlite_sequence): an id is never used for a second entry. */
    if (sqlite3_prepare_v2(db->db,
                           "SELECT max(coalesce((SELECT seq FROM "
                           "sqlite_sequence WHERE name = 'lists'), 0), "
                           "coalesce((SELECT max(id) FROM lists), 0)) + 1",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "numbering a list entry", err);
    int rc = sqlite3_step(st) == SQLITE_ROW
                 ? AG_OK
                 : ag_db__fail(db->db, "numbering a list entry", err);
    if (!rc)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

int ag_db_fleet_untouch(struct ag_db *db, struct ag_error *err)
{
    return ag_db__exec(db->db, "UPDATE fleet SET touched = 0 WHERE id = 1",
                       err);
}

int ag_db_fleet_forget(struct ag_db *db, const char *actor,
                       struct ag_error *err)
{
    struct ag_db_fleet row;
    int rc = ag_db__begin(db, err);
    if (!rc)
        rc = read_row(db, &row, err);
    json_t *before =
        rc ? NULL
           : json_pack("{s:s, s:s, s:I}", "fleet", row.name, "epoch", row.epoch,
                       "version", (json_int_t)row.version);
    if (!rc && !before)
        rc = ag_db__nomem(err);
    if (!rc)
        rc = ag_db__exec(db->db,
                         "UPDATE fleet SET epoch = '', version = 0, hash = '', "
                         "member = 0, pristine = 1, replaces = '', "
                         "touched = 0 "
                         "WHERE id = 1",
                         err);
    if (!rc)
        rc = ag_db__exec(db->db, "DELETE FROM fleet_log", err);
    if (!rc)
        rc = ag_db__audit(db, "fleet_forget", row.name, actor, before, NULL,
                          err);
    json_decref(before);
    return ag_db__finish(db, rc, err);
}
