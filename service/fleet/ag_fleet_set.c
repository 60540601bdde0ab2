/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_fleet_set.h"

#include <stdlib.h>
#include <string.h>

#include "ag_error.h"

json_t *ag_fleet_set_new(void)
{
    return json_pack("{s:{}, s:[]}", "policies", "lists");
}

static const char *string_of(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Replaces the contents of set with those of a snapshot operation. */
static int take_snapshot(json_t *set, const json_t *snap)
{
    const json_t *pols = json_object_get(snap, "policies");
    const json_t *lists = json_object_get(snap, "lists");
    if (!json_is_array(pols) || !json_is_array(lists))
        return AG_EINVAL;
    json_t *p = json_object(), *l = json_array();
    int rc = p && l ? AG_OK : AG_ENOMEM;
    size_t i;
    const json_t *item;
    json_array_foreach(pols, i, item)
    {
        const json_t *rec = json_object_get(item, "policy");
        const char *name = string_of(rec, "name");
        if (!rc && !name)
            rc = AG_EINVAL;
        if (!rc && json_object_set(p, name, (json_t *)rec))
            rc = AG_ENOMEM;
    }
    json_array_foreach(lists, i, item)
    {
        const json_t *row = json_object_get(item, "entry");
        if (!rc && !json_is_object(row))
            rc = AG_EINVAL;
        if (!rc && json_array_append(l, (json_t *)row))
            rc = AG_ENOMEM;
    }
    if (!rc && (json_object_set_new(set, "policies", p) ||
                json_object_set_new(set, "lists", l)))
        return AG_ENOMEM;
    if (rc) {
        json_decref(p);
        json_decref(l);
    }
    return rc;
}

json_t *ag_fleet_set_from_snapshot(const json_t *snap)
{
    json_t *set = ag_fleet_set_new();
    if (set && take_snapshot(set, snap)) {
        json_decref(set);
        return NULL;
    }
    return set;
}

/* Removes the entry of id from the rows; AG_EINVAL if none has it. */
/* Removes the entry of list (allow or deny) and id, as the database's
 * list_delete does: AG_EINVAL for an operation of another shape or an
 * entry the set does not hold. */
static int drop_entry(json_t *rows, const json_t *op)
{
    const json_t *jid = json_object_get(op, "id");
    const char *list = json_string_value(json_object_get(op, "list"));
    if (!json_is_integer(jid) || json_integer_value(jid) < 1 || !list ||
        (strcmp(list, "allow") != 0 && strcmp(list, "deny") != 0))
        return AG_EINVAL;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const json_t *rid = json_object_get(row, "id");
        const char *rl = json_string_value(json_object_get(row, "list"));
        if (json_is_integer(rid) &&
            json_integer_value(rid) == json_integer_value(jid) && rl &&
            strcmp(rl, list) == 0)
            return json_array_remove(rows, i) ? AG_ENOMEM : AG_OK;
    }
    return AG_EINVAL;
}

int ag_fleet_set_apply(json_t *set, const json_t *body)
{
    json_t *pols = json_object_get(set, "policies");
    json_t *rows = json_object_get(set, "lists");
    const json_t *ops = json_object_get(body, "ops");
    if (!json_is_object(pols) || !json_is_array(rows) || !json_is_array(ops))
        return AG_EINVAL;
    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op)
    {
        const char *kind = string_of(op, "op");
        int rc = AG_OK;
        if (!kind) {
            rc = AG_EINVAL;
        } else if (strcmp(kind, "policy_put") == 0) {
            const json_t *rec = json_object_get(op, "policy");
            const char *name = string_of(rec, "name");
            rc = !name                                        ? AG_EINVAL
                 : json_object_set(pols, name, (json_t *)rec) ? AG_ENOMEM
                                                              : AG_OK;
        } else if (strcmp(kind, "policy_delete") == 0) {
            const char *name = string_of(op, "name");
            rc = name && json_object_del(pols, name) == 0 ? AG_OK : AG_EINVAL;
        } else if (strcmp(kind, "list_add") == 0) {
            const json_t *row = json_object_get(op, "entry");
            rc = !json_is_object(row)                     ? AG_EINVAL
                 : json_array_append(rows, (json_t *)row) ? AG_ENOMEM
                                                          : AG_OK;
        } else if (strcmp(kind, "list_delete") == 0) {
            rc = drop_entry(rows, op);
        } else if (strcmp(kind, "snapshot") == 0) {
            rc = take_snapshot(set, op);
            pols = json_object_get(set, "policies");
            rows = json_object_get(set, "lists");
        } else if (strcmp(kind, "audit") != 0) {
            rc = AG_EINVAL;
        }
        if (rc)
            return rc;
    }
    return AG_OK;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of o's keys, sorted; *n of them. The caller frees the array
 * (the names are o's). */
static const char **sorted_keys(const json_t *o, size_t *n)
{
    *n = json_object_size(o);
    const char **k = malloc((*n + 1) * sizeof *k);
    if (!k)
        return NULL;
    size_t i = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        k[i++] = key;
    }
    qsort(k, *n, sizeof *k, by_text);
    return k;
}

/* The fields in which records a and b differ, sorted by name. */
static json_t *fields_diff(const json_t *a, const json_t *b)
{
    json_t *both = json_object();
    json_t *out = json_array();
    if (!both || !out || json_object_update(both, (json_t *)a) ||
        json_object_update(both, (json_t *)b)) {
        json_decref(both);
        json_decref(out);
        return NULL;
    }
    size_t n;
    const char **keys = sorted_keys(both, &n);
    for (size_t i = 0; out && keys && i < n; i++) {
        const json_t *x = json_object_get(a, keys[i]);
        const json_t *y = json_object_get(b, keys[i]);
        if (x && y && json_equal(x, y))
            continue;
        json_t *f = json_pack("{s:s, s:O, s:O}", "field", keys[i], "before",
                              x ? (json_t *)x : json_null(), "after",
                              y ? (json_t *)y : json_null());
        if (!f || json_array_append_new(out, f)) {
            json_decref(out);
            out = NULL;
        }
    }
    if (!keys) {
        json_decref(out);
        out = NULL;
    }
    free(keys);
    json_decref(both);
    return out;
}

json_t *ag_fleet_policies_diff(const json_t *a, const json_t *b, bool *same)
{
    json_t *added = json_array(), *changed = json_array(),
           *removed = json_array();
    json_t *all = json_object();
    bool ok = added && changed && removed && all &&
              !json_object_update(all, (json_t *)a) &&
              !json_object_update(all, (json_t *)b);
    size_t n = 0;
    const char **names = ok ? sorted_keys(all, &n) : NULL;
    ok = ok && names;
    for (size_t i = 0; ok && i < n; i++) {
        const json_t *x = json_object_get(a, names[i]);
        const json_t *y = json_object_get(b, names[i]);
        if (!x)
            ok = !json_array_append_new(added, json_string(names[i]));
        else if (!y)
            ok = !json_array_append_new(removed, json_string(names[i]));
        else if (!json_equal(x, y)) {
            json_t *c = json_pack("{s:s, s:o}", "name", names[i], "fields",
                                  fields_diff(x, y));
            ok = c && !json_array_append_new(changed, c);
        }
    }
    free(names);
    json_decref(all);
    json_t *out = ok ? json_pack("{s:O, s:O, s:O}", "added", added, "changed",
                                 changed, "removed", removed)
                     : NULL;
    *same = out && json_array_size(added) == 0 &&
            json_array_size(changed) == 0 && json_array_size(removed) == 0;
    json_decref(added);
    json_decref(changed);
    json_decref(removed);
    return out;
}

/* An entry row's content without its id (and whether it was forced,
 * which only its audit row keeps): what makes two hosts' entries the
 * same. A new string the caller frees; NULL when out of memory. */
static char *entry_key(const json_t *row)
{
    json_t *c = json_deep_copy(row);
    if (!c)
        return NULL;
    json_object_del(c, "id");
    json_object_del(c, "force");
    char *text = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(c);
    return text;
}

/* How many entries of rows a has no match for in rows b (each match used
 * once), or -1 when out of memory. */
static long unmatched(const json_t *a, const json_t *b)
{
    size_t nb = json_array_size(b);
    char **kb = calloc(nb + 1, sizeof *kb);
    bool *used = calloc(nb + 1, sizeof *used);
    long count = kb && used ? 0 : -1;
    for (size_t i = 0; count >= 0 && i < nb; i++)
        if (!(kb[i] = entry_key(json_array_get(b, i))))
            count = -1;
    size_t i;
    const json_t *row;
    json_array_foreach(a, i, row)
    {
        if (count < 0)
            break;
        char *k = entry_key(row);
        if (!k) {
            count = -1;
            break;
        }
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            if (!used[j] && strcmp(kb[j], k) == 0)
                found = used[j] = true;
        if (!found)
            count++;
        free(k);
    }
    for (size_t j = 0; kb && j < nb; j++)
        free(kb[j]);
    free(kb);
    free(used);
    return count;
}

json_t *ag_fleet_set_diff(const json_t *a, const json_t *b, bool *same)
{
    bool psame = false;
    json_t *p = ag_fleet_policies_diff(json_object_get(a, "policies"),
                                       json_object_get(b, "policies"), &psame);
    long added =
        unmatched(json_object_get(b, "lists"), json_object_get(a, "lists"));
    long removed =
        unmatched(json_object_get(a, "lists"), json_object_get(b, "lists"));
    json_t *out =
        p && added >= 0 && removed >= 0
            ? json_pack("{s:o, s:{s:I, s:I}}", "policies", p, "lists", "added",
                        (json_int_t)added, "removed", (json_int_t)removed)
            : NULL;
    if (!out && p && (added < 0 || removed < 0))
        json_decref(p);
    *same = out && psame && added == 0 && removed == 0;
    return out;
}

/* Does v hold, at any depth, an object that match says yes to? */
static bool holds(const json_t *v, bool (*match)(const json_t *obj))
{
    if (json_is_array(v)) {
        size_t i;
        const json_t *item;
        json_array_foreach(v, i, item)
        {
            if (holds(item, match))
                return true;
        }
        return false;
    }
    if (!json_is_object(v))
        return false;
    if (match(v))
        return true;
    const char *key;
    const json_t *item;
    json_object_foreach((json_t *)v, key, item)
    {
        if (holds(item, match))
            return true;
    }
    return false;
}

/* A policy record or an entry row of what schema 2 brought (issue 39's
 * network fields)? */
static bool network_field(const json_t *v)
{
    const char *signal = string_of(v, "signal");
    const char *kind = string_of(v, "kind");
    if (json_object_get(v, "algorithm") &&
        (json_object_get(v, "lists") || json_object_get(v, "countries") ||
         (signal && (strcmp(signal, "ip_listed") == 0 ||
                     strcmp(signal, "ip_country") == 0))))
        return true;
    return kind && json_object_get(v, "value") &&
           (strcmp(kind, "asn") == 0 || strcmp(kind, "ip_country") == 0);
}

/* A policy record of what schema 3 brought (issue 40: a risky scope, a
 * signal of the user's history)? */
static bool history_field(const json_t *v)
{
    const char *signal = string_of(v, "signal");
    return json_object_get(v, "algorithm") &&
           (json_object_get(v, "scope") ||
            (signal && (strcmp(signal, "new_country") == 0 ||
                        strcmp(signal, "new_asn") == 0 ||
                        strcmp(signal, "no_history") == 0 ||
                        strcmp(signal, "impossible_travel") == 0)));
}

unsigned ag_fleet_set_schema(const json_t *body)
{
    const json_t *ops = json_object_get(body, "ops");
    return holds(ops, history_field) ? 3 : holds(ops, network_field) ? 2 : 1;
}
