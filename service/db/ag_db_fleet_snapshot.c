/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The whole set as one operation (ag_db_fleet.h): a snapshot applied row
 * by row where it differs from what the database holds, and the export
 * that makes one. A list entry travels as its row, the digest of a user
 * or a phone and never a plaintext.
 */
#include "ag_db_fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "ag_db_core_impl.h"
#include "ag_db_tx_impl.h"
#include "ag_endpoint.h"
#include "ag_error.h"

json_t *ag_db_fleet_entry_row(const struct ag_list_entry *e)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:s, s:s}", "id", (json_int_t)e->id, "list",
        ag_list_name(e->list), "kind", ag_list_kind_name(e->kind), "value",
        e->value, "endpoint",
        e->endpoint < 0 ? "*" : ag_endpoint_name((enum ag_endpoint)e->endpoint),
        "note", e->note);
    if (o && e->force && json_object_set_new(o, "force", json_true())) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

int ag_db_fleet_entry_parse(const json_t *row, struct ag_list_entry *e,
                            struct ag_error *err)
{
    const json_t *id = json_object_get(row, "id");
    if (!json_is_object(row) || (id && !json_is_integer(id)))
        return ag_error_set(err, AG_EINVAL, "entry",
                            "entry must be an entry row with an integer id");
    const char *f[5] = {"list", "kind", "value", "endpoint", "note"};
    const char *v[5];
    for (int i = 0; i < 5; i++) {
        const json_t *s = json_object_get(row, f[i]);
        v[i] = json_string_value(s);
        if (!v[i] && !(i == 4 && !s))
            return ag_error_set(err, AG_EINVAL, f[i], "entry.%s must be text",
                                f[i]);
    }
    if (json_integer_value(id) < 0 ||
        ag_list_entry_from_row(json_integer_value(id), v[0], v[1], v[2], v[3],
                               v[4], e))
        return ag_error_set(err, AG_EINVAL, "entry",
                            "entry is not a valid list entry row");
    e->force = json_is_true(json_object_get(row, "force"));
    return AG_OK;
}

/* A snapshot's parts, parsed and validated before anything is written. */
struct snap {
    struct ag_policy *ps;
    int64_t *pv;
    size_t np;
    struct ag_list_entry *es;
    int64_t *ev;
    size_t ne;
};

static void snap_free(struct snap *s)
{
    free(s->ps);
    free(s->pv);
    free(s->es);
    free(s->ev);
}

/* The "version" of item i of an array; AG_EINVAL if it is no count. */
static int item_version(const json_t *item, const char *what, size_t i,
                        int64_t *out, struct ag_error *err)
{
    const json_t *v = json_object_get(item, "version");
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ag_error_set(err, AG_EINVAL, "version",
                            "%s[%zu].version must be a count", what, i);
    *out = json_integer_value(v);
    return AG_OK;
}

static int parse_snap(const json_t *op, struct snap *s, struct ag_error *err)
{
    const json_t *pols = json_object_get(op, "policies");
    const json_t *lists = json_object_get(op, "lists");
    if (!json_is_array(pols) || !json_is_array(lists))
        return ag_error_set(err, AG_EINVAL, "policies",
                            "a snapshot has \"policies\" and \"lists\" arrays");
    s->np = json_array_size(pols);
    s->ne = json_array_size(lists);
    if (s->ne > AG_LISTS_MAX)
        return ag_error_set(err, AG_ETOOBIG, "lists",
                            "the lists hold at most %d entries", AG_LISTS_MAX);
    s->ps = calloc(s->np + 1, sizeof *s->ps);
    s->pv = calloc(s->np + 1, sizeof *s->pv);
    s->es = calloc(s->ne + 1, sizeof *s->es);
    s->ev = calloc(s->ne + 1, sizeof *s->ev);
    if (!s->ps || !s->pv || !s->es || !s->ev)
        return ag_db__nomem(err);
    for (size_t i = 0; i < s->np; i++) {
        const json_t *item = json_array_get(pols, i);
        struct ag_error perr;
        int rc = item_version(item, "policies", i, &s->pv[i], err);
        if (!rc && ag_policy_from_json(json_object_get(item, "policy"), NULL,
                                       &s->ps[i], &perr))
            rc = ag_error_set(err, AG_EINVAL, perr.field, "policies[%zu]: %s",
                              i, perr.msg);
        for (size_t k = 0; !rc && k < i; k++)
            if (strcmp(s->ps[k].name, s->ps[i].name) == 0)
                rc = ag_error_set(err, AG_EINVAL, "name",
                                  "policies[%zu]: a second policy named '%s'",
                                  i, s->ps[i].name);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < s->ne; i++) {
        const json_t *item = json_array_get(lists, i);
        struct ag_error perr;
        int rc = item_version(item, "lists", i, &s->ev[i], err);
        if (!rc && ag_db_fleet_entry_parse(json_object_get(item, "entry"),
                                           &s->es[i], &perr))
            rc = ag_error_set(err, AG_EINVAL, perr.field, "lists[%zu]: %s", i,
                              perr.msg);
        if (!rc && s->es[i].id < 1)
            rc = ag_error_set(err, AG_EINVAL, "id",
                              "lists[%zu]: an entry has its id", i);
        for (size_t k = 0; !rc && k < i; k++)
            if (s->es[k].id == s->es[i].id)
                rc = ag_error_set(err, AG_EINVAL, "id",
                                  "lists[%zu]: a second entry %lld", i,
                                  (long long)s->es[i].id);
        if (rc)
            return rc;
    }
    return AG_OK;
}

/* Runs sql with text a (or NULL) as ?1 and b as ?2. */
static int run2(struct ag_db *db, const char *sql, const char *a, int64_t b,
                struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "applying a snapshot", err);
    ag_db__bind_text(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st) == SQLITE_DONE
                 ? AG_OK
                 : ag_db__fail(db->db, "applying a snapshot", err);
    sqlite3_finalize(st);
    return rc;
}

/* Adds name to arr; AG_ENOMEM if it cannot. */
static int note(json_t *arr, const char *name, struct ag_error *err)
{
    return json_array_append_new(arr, json_string(name)) ? ag_db__nomem(err)
                                                         : AG_OK;
}

/* The policies: those the snapshot lacks go, those that differ (in their
 * record or their version) are written. */
static int apply_policies(struct ag_db *db, const struct snap *s, json_t *added,
                          json_t *changed, json_t *removed,
                          struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db, "SELECT name, version FROM policies", -1,
                           &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "applying a snapshot", err);
    json_t *held = json_object(); /* name: version, of the rows here */
    int rc = held ? AG_OK : ag_db__nomem(err);
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name && json_object_set_new(
                        held, name, json_integer(sqlite3_column_int64(st, 1))))
            rc = ag_db__nomem(err);
    }
    sqlite3_finalize(st);
    const char *name;
    json_t *v;
    json_object_foreach(held, name, v)
    {
        bool kept = false;
        for (size_t i = 0; i < s->np && !kept; i++)
            kept = strcmp(s->ps[i].name, name) == 0;
        if (!rc && !kept) {
            rc = run2(db, "DELETE FROM policies WHERE name = ?1", name, 0, err);
            rc = rc ? rc : note(removed, name, err);
        }
    }
    for (size_t i = 0; !rc && i < s->np; i++) {
        const struct ag_policy *p = &s->ps[i];
        struct ag_policy old;
        struct ag_error gerr;
        int found = ag_db_policy_get(db, p->name, &old, &gerr);
        if (found && found != AG_ENOTFOUND && found != AG_EINVAL) {
            *err = gerr;
            rc = found;
            break;
        }
        bool same = false;
        if (found == AG_OK) {
            json_t *a = ag_policy_to_json(&old), *b = ag_policy_to_json(p);
            same =
                a && b && json_equal(a, b) &&
                json_integer_value(json_object_get(held, p->name)) == s->pv[i];
            json_decref(a);
            json_decref(b);
        }
        if (same)
            continue;
        rc = ag_db_policy_put(db, p, err);
        rc = rc ? rc
                : run2(db, "UPDATE policies SET version = ?2 WHERE name = ?1",
                       p->name, s->pv[i], err);
        rc = rc ? rc
                : note(found == AG_ENOTFOUND ? added : changed, p->name, err);
    }
    json_decref(held);
    for (int e = 0; !rc && e < AG_EP_COUNT; e++)
        rc = ag_db__policy_check_capacity(db, (enum ag_endpoint)e, err);
    return rc;
}

/* Is entry e, of version v, the row st holds (id, list, kind, value,
 * endpoint, note, version)? */
static bool same_row(sqlite3_stmt *st, const struct ag_list_entry *e, int64_t v)
{
    const char *ep =
        e->endpoint < 0 ? "*" : ag_endpoint_name((enum ag_endpoint)e->endpoint);
    const char *want[5] = {ag_list_name(e->list), ag_list_kind_name(e->kind),
                           e->value, ep, e->note};
    for (int i = 0; i < 5; i++) {
        const char *t = (const char *)sqlite3_column_text(st, i + 1);
        if (strcmp(t ? t : "", want[i]) != 0)
            return false;
    }
    return sqlite3_column_int64(st, 6) == v;
}

static int insert_entry(struct ag_db *db, const struct ag_list_entry *e,
                        int64_t v, struct ag_error *err)
{
    int step = ag_db__list_insert(db, e, v);
    if (step == SQLITE_CONSTRAINT)
        return ag_error_set(err, AG_ECONFLICT, "lists",
                            "a snapshot's entry %lld repeats another",
                            (long long)e->id);
    return step == SQLITE_DONE
               ? AG_OK
               : ag_db__fail(db->db, "applying a snapshot", err);
}

/* The lists: rows the snapshot lacks or holds otherwise go, its entries
 * not here identically come. */
static int apply_lists(struct ag_db *db, const struct snap *s, int64_t *added,
                       int64_t *removed, struct ag_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT id, list, kind, value, endpoint, note, "
                           "version FROM lists ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return ag_db__fail(db->db, "applying a snapshot", err);
    /* Which of the snapshot's entries are here already, as they are. */
    bool *here = calloc(s->ne + 1, sizeof *here);
    int64_t *gone = calloc(AG_LISTS_MAX + 1, sizeof *gone);
    size_t ngone = 0;
    int rc = here && gone ? AG_OK : ag_db__nomem(err);
    int step;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        bool kept = false;
        for (size_t i = 0; i < s->ne && !kept; i++)
            if (s->es[i].id == id && same_row(st, &s->es[i], s->ev[i]))
                kept = here[i] = true;
        if (!kept && ngone < AG_LISTS_MAX + 1)
            gone[ngone++] = id;
    }
    sqlite3_finalize(st);
    for (size_t k = 0; !rc && k < ngone; k++)
        rc = run2(db, "DELETE FROM lists WHERE id = ?2", NULL, gone[k], err);
    *removed = (int64_t)ngone;
    *added = 0;
    for (size_t i = 0; !rc && i < s->ne; i++)
        if (!here[i]) {
            rc = insert_entry(db, &s->es[i], s->ev[i], err);
            ++*added;
        }
    free(here);
    free(gone);
    return rc;
}

int ag_db__fleet_snapshot(struct ag_db *db, const json_t *op, const char *actor,
                          int64_t version, struct ag_error *err)
{
    const char *reason = json_string_value(json_object_get(op, "reason"));
    if (!reason || !reason[0] || strlen(reason) > 32)
        return ag_error_set(err, AG_EINVAL, "reason",
                            "reason must be a word of 1 to 32 characters");
    struct snap s = {0};
    int rc = parse_snap(op, &s, err);
    json_t *added = json_array(), *changed = json_array(),
           *removed = json_array();
    if (!rc && (!added || !changed || !removed))
        rc = ag_db__nomem(err);
    int64_t ladded = 0, lremoved = 0;
    if (!rc)
        rc = apply_policies(db, &s, added, changed, removed, err);
    if (!rc)
        rc = apply_lists(db, &s, &ladded, &lremoved, err);
    snap_free(&s);
    json_t *after =
        rc ? NULL
           : json_pack("{s:I, s:s, s:{s:O, s:O, s:O}, s:{s:I, s:I}}", "version",
                       (json_int_t)version, "reason", reason, "policies",
                       "added", added, "changed", changed, "removed", removed,
                       "lists", "added", (json_int_t)ladded, "removed",
                       (json_int_t)lremoved);
    if (!rc && !after)
        rc = ag_db__nomem(err);
    if (!rc)
        rc = ag_db__audit(db, "snapshot", reason, actor, NULL, after, err);
    json_decref(after);
    json_decref(added);
    json_decref(changed);
    json_decref(removed);
    return rc;
}

struct export
{
    json_t *out;
    bool lists; /* false: the policies alone, "lists" empty */
};

/* The export inside one read transaction. */
static int export_fn(struct ag_db *db, void *arg, struct ag_error *err)
{
    struct export *x = arg;
    json_t **out = &x->out;
    struct ag_policy *ps = NULL;
    struct ag_db_invalid *bad = NULL;
    size_t n = 0, nbad = 0;
    int rc = ag_db_policies_load_lenient(db, &ps, &n, &bad, &nbad, err);
    free(bad);
    json_t *pols = json_array(), *lists = json_array();
    if (!rc && (!pols || !lists))
        rc = ag_db__nomem(err);
    for (size_t i = 0; !rc && i < n; i++) {
        int64_t v = 0;
        rc = ag_db_policy_version(db, ps[i].name, &v, err);
        json_t *item = rc ? NULL
                          : json_pack("{s:I, s:o}", "version", (json_int_t)v,
                                      "policy", ag_policy_to_json(&ps[i]));
        if (!rc && (!item || json_array_append_new(pols, item)))
            rc = ag_db__nomem(err);
    }
    free(ps);
    sqlite3_stmt *st = NULL;
    if (!rc && x->lists &&
        sqlite3_prepare_v2(db->db,
                           "SELECT id, list, kind, value, endpoint, "
                           "note, version FROM lists ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        rc = ag_db__fail(db->db, "exporting the lists", err);
    while (!rc && st && sqlite3_step(st) == SQLITE_ROW) {
        struct ag_list_entry e;
        const char *t[5];
        for (int i = 0; i < 5; i++)
            t[i] = (const char *)sqlite3_column_text(st, i + 1);
        /* A row that fails validation is in force nowhere: left out, as
         * ag_db_lists_load leaves it. */
        if (ag_list_entry_from_row(sqlite3_column_int64(st, 0), t[0], t[1],
                                   t[2], t[3], t[4], &e))
            continue;
        json_t *item = json_pack("{s:I, s:o}", "version",
                                 (json_int_t)sqlite3_column_int64(st, 6),
                                 "entry", ag_db_fleet_entry_row(&e));
        if (!item || json_array_append_new(lists, item))
            rc = ag_db__nomem(err);
    }
    sqlite3_finalize(st);
    *out =
        rc ? NULL : json_pack("{s:O, s:O}", "policies", pols, "lists", lists);
    if (!rc && !*out)
        rc = ag_db__nomem(err);
    json_decref(pols);
    json_decref(lists);
    return rc;
}

static int export(struct ag_db *db, bool lists, json_t **out,
                  struct ag_error *err)
{
    struct export x = {NULL, lists};
    int rc = ag_db_read(db, export_fn, &x, err);
    if (rc)
        json_decref(x.out);
    *out = rc ? NULL : x.out;
    return rc;
}

int ag_db_fleet_export(struct ag_db *db, json_t **out, struct ag_error *err)
{
    return export(db, true, out, err);
}

int ag_db_fleet_export_policies(struct ag_db *db, json_t **out,
                                struct ag_error *err)
{
    return export(db, false, out, err);
}
