/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin API's allow and deny lists (ag_admin.h): listed from this
 * instance's database, added to and removed from through the fleet.
 */
#include "ag_admin_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_db_fleet.h"

/* DELETE /admin/lists/{list}/{id}. */
static int remove_entry(struct ag_admin *a, const char *which, int list,
                        const char *id_text, struct ag_http_response *r)
{
    long long id = ag_admin__query_int(id_text, -1, INT64_MAX);
    if (id < 0)
        return ag_http_response_field_error(r, 400, "id must be an entry id",
                                            "id");
    json_t *ops =
        json_pack("[{s:s, s:s, s:I}]", "op", "list_delete", "list",
                  ag_list_name((enum ag_list)list), "id", (json_int_t)id);
    struct ag_fleet_change c = {.ops = ops, .actor = AG_ADMIN_ACTOR};
    struct ag_fleet_result res;
    struct ag_error err;
    int rc = ops ? ag_fleet_change(a->fleet, &c, &res, &err)
                 : ag_error_set(&err, AG_ENOMEM, NULL, "out of memory");
    json_decref(ops);
    if (rc == AG_ENOTFOUND)
        return ag_http_response_error(r, 404, "no such entry");
    if (rc)
        return ag_admin__refused(r, rc, &err);
    ag_admin__note_edit(a, AG_EV_LIST_CHANGED, NULL, -1, which, "delete", id);
    char msg[256];
    return ag_admin__answer_delete(r, ag_admin__changed(a, msg, sizeof msg));
}

/* GET /admin/lists/{list}. */
static int list_entries(struct ag_admin *a, int list,
                        struct ag_http_response *r)
{
    struct ag_list_entry *es;
    size_t count, invalid;
    struct ag_error err;
    pthread_mutex_lock(&a->lock);
    int rc = ag_db_lists_load(a->db, &es, &count, &invalid, &err);
    pthread_mutex_unlock(&a->lock);
    if (rc)
        return ag_admin__db_error(r, &err);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < count; i++)
        if ((int)es[i].list == list)
            arr = ag_admin__append_or_drop(arr, ag_list_entry_to_json(&es[i]));
    free(es);
    /* Rows of either list that fail validation, left out of both. */
    return ag_admin__send_json(r, 200,
                               json_pack("{s:o,s:I}", "entries", arr,
                                         "invalid_entries",
                                         (json_int_t)invalid));
}

/* POST /admin/lists/{list}: the entry's digest (for a user or a phone)
 * travels, never its plaintext. */
static int add_entry(struct ag_admin *a, const struct ag_admin_request *req,
                     const char *which, int list, struct ag_http_response *r)
{
    json_t *body = ag_admin__parse_body(req, r);
    if (!body)
        return AG_OK;
    struct ag_list_entry e;
    struct ag_error perr;
    int rc =
        ag_list_entry_from_json(body, (enum ag_list)list, a->hasher, &e, &perr);
    json_decref(body);
    if (rc)
        return ag_http_response_field_error(r, 400, perr.msg, perr.field);
    e.id = 0;
    json_t *row = ag_db_fleet_entry_row(&e);
    json_object_del(row, "id");
    json_t *ops =
        row ? json_pack("[{s:s, s:o}]", "op", "list_add", "entry", row) : NULL;
    struct ag_fleet_change c = {.ops = ops, .actor = AG_ADMIN_ACTOR};
    struct ag_fleet_result res;
    struct ag_error err;
    rc = ops ? ag_fleet_change(a->fleet, &c, &res, &err)
             : ag_error_set(&err, AG_ENOMEM, NULL, "out of memory");
    json_decref(ops);
    if (rc)
        return ag_admin__refused(r, rc, &err);
    ag_admin__note_edit(a, AG_EV_LIST_CHANGED, NULL, -1, which, "add",
                        res.entry_id);
    char msg[256];
    const char *why = ag_admin__changed(a, msg, sizeof msg);
    e.id = res.entry_id;
    return ag_admin__answer_change(
        r, 201, json_pack("{s:o}", "entry", ag_list_entry_to_json(&e)), why);
}

int ag_admin__lists(struct ag_admin *a, const struct ag_admin_request *req,
                    const char *rest, struct ag_http_response *r)
{
    char which[8];
    size_t n = strcspn(rest, "/");
    int list = -1;
    if (n < sizeof which) {
        memcpy(which, rest, n);
        which[n] = '\0';
        list = ag_list_parse(which);
    }
    if (list < 0)
        return ag_http_response_error(r, 404, "lists are /allow and /deny");
    if (rest[n] == '/') {
        if (strcmp(req->method, "DELETE") != 0)
            return ag_admin__not_allowed(r, "DELETE");
        return remove_entry(a, which, list, rest + n + 1, r);
    }
    if (strcmp(req->method, "GET") == 0)
        return list_entries(a, list, r);
    if (strcmp(req->method, "POST") != 0)
        return ag_admin__not_allowed(r, "GET, POST");
    return add_entry(a, req, which, list, r);
}
