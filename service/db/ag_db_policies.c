/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Policy rows: load, read, edit, each edit with its audit row.
 */
#include "ag_db.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ag_db_core_impl.h"
#include "ag_db_tx_impl.h"
#include "ag_error.h"
#include "ag_limiter.h"

/* The policies table, column by column; the JSON record
 * (ag_policy_to_json, ag_policy_from_json) has a field of each name. */
static const struct ag_db_column policy_columns[] = {
    {"name", AG_DB_TEXT, false},        {"endpoint", AG_DB_TEXT, false},
    {"key", AG_DB_JSON, false},         {"algorithm", AG_DB_TEXT, false},
    {"limit", AG_DB_INT, false},        {"window_s", AG_DB_INT, false},
    {"block_s", AG_DB_INT, false},      {"counts", AG_DB_TEXT, false},
    {"fail", AG_DB_TEXT, false},        {"mode", AG_DB_TEXT, false},
    {"block_growth", AG_DB_INT, false}, {"block_max_s", AG_DB_INT, false},
    {"applies_to", AG_DB_TEXT, false},  {"action", AG_DB_TEXT, false},
    {"enabled", AG_DB_BOOL, false},     {"min_ratio", AG_DB_REAL, false},
    {"factor", AG_DB_REAL, false},      {"baseline_s", AG_DB_INT, false},
    {"reasons", AG_DB_JSON, false},     {"signal", AG_DB_TEXT, false},
    {"lists", AG_DB_JSON, false},       {"countries", AG_DB_JSON, false},
    {"scope", AG_DB_TEXT, false},
};
static const struct ag_db_table policies = {"policies", policy_columns,
                                            sizeof policy_columns /
                                                sizeof policy_columns[0]};

/* The validated policy of the current row; a row that fails validation is
 * AG_EINVAL naming the policy in err, and the validator's own error in why
 * (which may be NULL). */
static int row_to_policy(sqlite3_stmt *st, struct ag_policy *out,
                         struct ag_error *why, struct ag_error *err)
{
    const char *name = (const char *)sqlite3_column_text(st, 0);
    json_t *o;
    struct ag_error perr;
    int rc = ag_db__row_to_json(st, &policies, &o, &perr);
    if (!rc) {
        rc = ag_policy_from_json(o, NULL, out, &perr);
        json_decref(o);
    }
    if (rc == AG_ENOMEM)
        return ag_db__nomem(err);
    if (rc && why)
        *why = perr;
    if (rc)
        return ag_error_set(err, rc, NULL, "policy database: row '%.*s': %s",
                            AG_POLICY_NAME_MAX, name ? name : "", perr.msg);
    return AG_OK;
}

/* The last valid version of the named policy: the record the newest
 * change to it left in the audit log. *found is false when there is none
 * (never audited, deleted last, or a record that no longer validates). */
static int last_valid(struct ag_db *db, const char *name, struct ag_policy *out,
                      bool *found, struct ag_error *err)
{
    *found = false;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT after FROM audit WHERE name = ?1 AND action"
                           " IN ('create', 'update', 'delete')"
                           " ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "reading the audit log", err);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = AG_OK;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
        struct ag_error perr;
        const json_t *named = json_object_get(o, "name");
        *found = json_is_string(named) &&
                 strcmp(json_string_value(named), name) == 0 &&
                 ag_policy_from_json(o, NULL, out, &perr) == AG_OK;
        json_decref(o);
    } else if (step != SQLITE_ROW && step != SQLITE_DONE) {
        rc = ag_db__fail(db->db, "reading the audit log", err);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Notes an invalid row in *bad, growing it; AG_ENOMEM if it cannot. */
static int note_invalid(struct ag_db_invalid **bad, size_t *nbad,
                        const char *name, const char *error, bool kept)
{
    struct ag_db_invalid *bigger = realloc(*bad, (*nbad + 1) * sizeof **bad);
    if (!bigger)
        return AG_ENOMEM;
    *bad = bigger;
    struct ag_db_invalid *b = &bigger[(*nbad)++];
    snprintf(b->name, sizeof b->name, "%s", name);
    snprintf(b->error, sizeof b->error, "%s", error);
    b->kept = kept;
    return AG_OK;
}

/* Loads every row; with lenient, an invalid row is noted in *bad and its
 * last valid version taken instead, else it fails the load. */
static int load(struct ag_db *db, bool lenient, struct ag_policy **out,
                size_t *n, struct ag_db_invalid **bad, size_t *nbad,
                struct ag_error *err)
{
    sqlite3_stmt *st;
    int rc = ag_db__prepare_select(db, &policies, "ORDER BY name", &st, err);
    if (rc)
        return rc;
    size_t cap = 16, count = 0;
    struct ag_policy *ps = malloc(cap * sizeof *ps);
    rc = ps ? AG_OK : ag_db__nomem(err);
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
        struct ag_error why, rerr;
        rc = row_to_policy(st, &ps[count], &why, &rerr);
        if (rc == AG_EINVAL && lenient) {
            /* The row's name, copied: the audit read below may move the
             * statement's text. */
            char name[AG_POLICY_NAME_MAX + 1];
            const char *text = (const char *)sqlite3_column_text(st, 0);
            snprintf(name, sizeof name, "%s", text ? text : "");
            bool kept;
            rc = last_valid(db, name, &ps[count], &kept, err);
            if (!rc && note_invalid(bad, nbad, name, why.msg, kept))
                rc = ag_db__nomem(err);
            if (!rc && kept)
                count++;
            continue;
        }
        if (rc)
            *err = rerr;
        else
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

int ag_db_policies_load(struct ag_db *db, struct ag_policy **out, size_t *n,
                        struct ag_error *err)
{
    return load(db, false, out, n, NULL, NULL, err);
}

int ag_db_policies_load_lenient(struct ag_db *db, struct ag_policy **out,
                                size_t *n, struct ag_db_invalid **bad,
                                size_t *nbad, struct ag_error *err)
{
    *bad = NULL;
    *nbad = 0;
    int rc = load(db, true, out, n, bad, nbad, err);
    if (rc) {
        free(*bad);
        *bad = NULL;
        *nbad = 0;
    }
    return rc;
}

int ag_db_policy_put(struct ag_db *db, const struct ag_policy *p,
                     struct ag_error *err)
{
    sqlite3_stmt *st;
    int rc = ag_db__prepare_insert(
        db, &policies, "name",
        ", updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", &st, err);
    if (rc)
        return rc;
    json_t *o = ag_policy_to_json(p);
    rc = o ? ag_db__bind_record(db, st, &policies, o, err) : ag_db__nomem(err);
    if (!rc && sqlite3_step(st) != SQLITE_DONE)
        rc = ag_db__fail(db->db, "saving a policy", err);
    sqlite3_finalize(st);
    json_decref(o);
    /* Its version (the admin API's ETag): the fleet record's that wrote
     * it, or, written here alone, one past the newest. */
    if (!rc &&
        sqlite3_prepare_v2(db->db,
                           "UPDATE policies SET version = CASE WHEN ?1 > 0 "
                           "THEN ?1 ELSE (SELECT coalesce(max(version), 0) + 1 "
                           "FROM policies) END WHERE name = ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "versioning a policy", err);
    if (!rc) {
        sqlite3_bind_int64(st, 1, db->fleet_version);
        sqlite3_bind_text(st, 2, p->name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = ag_db__fail(db->db, "versioning a policy", err);
        sqlite3_finalize(st);
    }
    return rc;
}

int ag_db_policy_version(struct ag_db *db, const char *name, int64_t *version,
                         struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT version FROM policies WHERE name = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "reading a policy's version", err);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    int rc = AG_OK;
    if (step == SQLITE_ROW)
        *version = sqlite3_column_int64(st, 0);
    else if (step == SQLITE_DONE)
        rc = AG_ENOTFOUND;
    else
        rc = ag_db__fail(db->db, "reading a policy's version", err);
    sqlite3_finalize(st);
    return rc;
}

int ag_db_policy_get(struct ag_db *db, const char *name, struct ag_policy *out,
                     struct ag_error *err)
{
    sqlite3_stmt *st;
    int rc = ag_db__prepare_select(db, &policies, "WHERE name = ?1", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        rc = row_to_policy(st, out, NULL, err);
    else if (step == SQLITE_DONE)
        rc = AG_ENOTFOUND;
    else
        rc = ag_db__fail(db->db, "reading a policy", err);
    sqlite3_finalize(st);
    return rc;
}

/* One check applies every enabled policy of its endpoint, at most
 * AG_PLAN_MAX, of which at most AG_SIGNALS_MAX signal policies: a change
 * that would pass either is refused (AG_ETOOBIG) inside its transaction,
 * whichever path it came by. */
int ag_db__policy_check_capacity(struct ag_db *db, enum ag_endpoint ep,
                                 struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT count(*), sum(algorithm = 'signal') FROM "
                           "policies WHERE enabled = 1 AND endpoint = ?1",
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
    } else if (!rc && sqlite3_column_int(st, 1) > AG_SIGNALS_MAX) {
        rc = ag_error_set(err, AG_ETOOBIG, "enabled",
                          "enabled: the %s endpoint may have at most %d "
                          "enabled signal policies",
                          ag_endpoint_name(ep), AG_SIGNALS_MAX);
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
        rc = ag_db__policy_check_capacity(db, p->endpoint, err);
    json_t *before = found == AG_OK ? ag_policy_to_json(&old) : NULL;
    json_t *after = ag_policy_to_json(p);
    /* An audit row without its record would tell less than happened. */
    if (!rc && (!after || (found == AG_OK && !before)))
        rc = ag_db__nomem(err);
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

int ag_db__policy_delete_in_tx(struct ag_db *db, const char *name,
                               const char *actor, struct ag_error *err)
{
    struct ag_policy old;
    int rc = ag_db_policy_get(db, name, &old, err);
    json_t *before = rc == AG_OK ? ag_policy_to_json(&old) : NULL;
    if (rc == AG_OK && !before)
        rc = ag_db__nomem(err);
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
    return rc;
}

int ag_db_policy_delete(struct ag_db *db, const char *name, const char *actor,
                        struct ag_error *err)
{
    int rc = ag_db__begin(db, err);
    if (rc)
        return rc;
    rc = ag_db__policy_delete_in_tx(db, name, actor, err);
    return ag_db__finish(db, rc, err);
}
