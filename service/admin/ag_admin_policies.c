/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin API's policies (ag_admin.h): listed with their versions, one
 * read with its ETag, put and deleted through the fleet (If-Match keeps
 * a whole-record save from overwriting another operator's edit), and a
 * whole file applied as one change (POST /admin/policies/apply).
 */
#include "ag_admin_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_log.h"

/* If-Match's value: IF_NONE without the header, IF_ANY for "*", else a
 * version ("12" quoted, as the ETag gives it, or bare); IF_BAD for
 * anything else. */
#define IF_NONE (-1)
#define IF_ANY (-2)
#define IF_BAD (-3)

static int64_t if_match(const char *v)
{
    if (!v)
        return IF_NONE;
    while (*v == ' ')
        v++;
    if (strcmp(v, "*") == 0)
        return IF_ANY;
    bool quoted = *v == '"';
    const char *d = v + quoted;
    if (*d < '0' || *d > '9')
        return IF_BAD;
    char *end;
    errno = 0;
    long long n = strtoll(d, &end, 10);
    if (errno || n < 0 || (quoted && *end++ != '"'))
        return IF_BAD;
    while (*end == ' ')
        end++;
    return *end ? IF_BAD : (int64_t)n;
}

/* Sets r's ETag to the named policy's version, read now. */
static void etag(struct ag_admin *a, const char *name,
                 struct ag_http_response *r)
{
    int64_t v = 0;
    struct ag_error err;
    pthread_mutex_lock(&a->lock);
    int rc = ag_db_policy_version(a->db, name, &v, &err);
    pthread_mutex_unlock(&a->lock);
    if (rc == AG_OK)
        snprintf(r->etag, sizeof r->etag, "\"%" PRId64 "\"", v);
}

/* The record listed for policy p: with "invalid" added when its row in
 * the database fails validation and p is its last valid version. */
static json_t *listed(const struct ag_policy *p,
                      const struct ag_db_invalid *bad, size_t nbad)
{
    json_t *o = ag_policy_to_json(p);
    for (size_t k = 0; o && k < nbad; k++)
        if (bad[k].kept && strcmp(bad[k].name, p->name) == 0 &&
            json_object_set_new(o, "invalid", json_string(bad[k].error))) {
            json_decref(o);
            o = NULL;
        }
    return o;
}

/* Lists every policy in force, an invalid row with its last valid version
 * (or its name alone) and "invalid": the validator's error, so that the
 * operator can find and fix it; and each one's version (its ETag), which
 * an editor sends back in If-Match. */
int ag_admin__policies(struct ag_admin *a, const struct ag_admin_request *req,
                       struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return ag_admin__not_allowed(r, "GET");
    struct ag_policy *ps;
    struct ag_db_invalid *bad;
    size_t n, nbad;
    struct ag_error err;
    json_t *versions = json_object();
    pthread_mutex_lock(&a->lock);
    int rc = ag_db_policies_load_lenient(a->db, &ps, &n, &bad, &nbad, &err);
    for (size_t i = 0; !rc && versions && i < n; i++) {
        int64_t v = 0;
        if (ag_db_policy_version(a->db, ps[i].name, &v, &err) == AG_OK &&
            json_object_set_new(versions, ps[i].name, json_integer(v))) {
            json_decref(versions);
            versions = NULL;
        }
    }
    pthread_mutex_unlock(&a->lock);
    if (rc) {
        json_decref(versions);
        return ag_admin__db_error(r, &err);
    }
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        list = ag_admin__append_or_drop(list, listed(&ps[i], bad, nbad));
    for (size_t k = 0; list && k < nbad; k++)
        if (!bad[k].kept)
            list = ag_admin__append_or_drop(
                list, json_pack("{s:s, s:s}", "name", bad[k].name, "invalid",
                                bad[k].error));
    free(ps);
    free(bad);
    return ag_admin__send_json(
        r, 200,
        json_pack("{s:o, s:o}", "policies", list, "versions", versions));
}

/* Puts "warnings" into out (NULL: out of memory, then nothing) for each
 * of the n policies that needs a network file this instance has not
 * loaded: accepted, since a policy set travels between hosts, but
 * skipped wherever the file is missing, this instance included. */
static json_t *warn_missing(struct ag_admin *a, const struct ag_policy *ps,
                            size_t n, json_t *out)
{
    json_t *list = NULL;
    for (size_t i = 0; out && i < n; i++) {
        char why[AG_SERVICE_NET_WHY];
        if (!ag_service_net_missing(a->svc, &ps[i], why, sizeof why))
            continue;
        if (!list && !(list = json_array()))
            break;
        json_array_append_new(list, json_string(why));
    }
    if (out && list && json_object_set_new(out, "warnings", list)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* A policy's change through the fleet: ops (taken over), If-Match. */
static int change(struct ag_admin *a, json_t *ops, const char *name,
                  int64_t match, struct ag_fleet_result *res,
                  struct ag_error *err)
{
    struct ag_fleet_change c = {
        .ops = ops,
        .actor = AG_ADMIN_ACTOR,
        .if_name = match == IF_NONE ? NULL : name,
        .if_version = match == IF_ANY ? -1 : match,
    };
    int rc = ops ? ag_fleet_change(a->fleet, &c, res, err)
                 : ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    json_decref(ops);
    return rc;
}

int ag_admin__one_policy(struct ag_admin *a, const struct ag_admin_request *req,
                         const char *name, struct ag_http_response *r)
{
    struct ag_error err;
    if (ag_policy_name_check(name, &err))
        return ag_http_response_refusal(r, 400, &err);
    struct ag_policy p;
    int rc;
    if (strcmp(req->method, "GET") == 0) {
        pthread_mutex_lock(&a->lock);
        rc = ag_db_policy_get(a->db, name, &p, &err);
        pthread_mutex_unlock(&a->lock);
        if (rc == AG_ENOTFOUND)
            return ag_http_response_error(r, 404, "no such policy");
        if (rc)
            return ag_admin__db_error(r, &err);
        etag(a, name, r);
        return ag_admin__send_json(
            r, 200, json_pack("{s:o}", "policy", ag_policy_to_json(&p)));
    }
    bool put = strcmp(req->method, "PUT") == 0;
    if (!put && strcmp(req->method, "DELETE") != 0)
        return ag_admin__not_allowed(r, "GET, PUT, DELETE");
    int64_t match = if_match(req->if_match);
    if (match == IF_BAD)
        return ag_http_response_field_error(
            r, 400,
            "If-Match must be the policy's ETag (a version in quotes) or *",
            "If-Match");
    struct ag_fleet_result res;
    char msg[256];
    if (!put) {
        rc = change(
            a, json_pack("[{s:s, s:s}]", "op", "policy_delete", "name", name),
            name, match, &res, &err);
        if (rc == AG_ENOTFOUND)
            return ag_http_response_error(r, 404, "no such policy");
        if (rc)
            return ag_admin__refused(r, rc, &err);
        ag_admin__note_edit(a, AG_EV_POLICY_CHANGED, name, -1, NULL, "delete",
                            0);
        return ag_admin__answer_delete(r,
                                       ag_admin__changed(a, msg, sizeof msg));
    }
    json_t *body = ag_admin__parse_body(req, r);
    if (!body)
        return AG_OK;
    struct ag_error perr;
    rc = ag_policy_from_json(body, name, &p, &perr);
    json_decref(body);
    if (rc)
        return ag_http_response_field_error(r, 400, perr.msg, perr.field);
    /* Whether it is new, for 201 or 200: read before; a change made
     * between by another instance only makes the status say replaced. */
    struct ag_policy old;
    pthread_mutex_lock(&a->lock);
    bool created = ag_db_policy_get(a->db, name, &old, &err) == AG_ENOTFOUND;
    pthread_mutex_unlock(&a->lock);
    rc = change(a,
                json_pack("[{s:s, s:o}]", "op", "policy_put", "policy",
                          ag_policy_to_json(&p)),
                name, match, &res, &err);
    if (rc)
        return ag_admin__refused(r, rc, &err);
    ag_admin__note_edit(a, AG_EV_POLICY_CHANGED, p.name, (int)p.endpoint, NULL,
                        "put", 0);
    const char *why = ag_admin__changed(a, msg, sizeof msg);
    etag(a, name, r);
    return ag_admin__answer_change(
        r, created ? 201 : 200,
        warn_missing(a, &p, 1,
                     json_pack("{s:o}", "policy", ag_policy_to_json(&p))),
        why);
}

/* The records of a request's "policies", validated as a file's are:
 * a new array, or NULL with r answered; and their warnings
 * (warn_missing) put into *warned, a new object. */
static json_t *file_policies(struct ag_admin *a, const json_t *body,
                             struct ag_http_response *r, json_t **warned)
{
    json_t *file =
        json_pack("{s:O?}", "policies", json_object_get(body, "policies"));
    char *text = file ? json_dumps(file, JSON_COMPACT) : NULL;
    json_decref(file);
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error perr;
    int rc = text ? ag_policy_parse_file(text, strlen(text), &ps, &n, &perr)
                  : AG_ENOMEM;
    free(text);
    if (rc == AG_EINVAL) {
        ag_http_response_refusal(r, 400, &perr);
        return NULL;
    }
    json_t *out = rc ? NULL : json_array();
    for (size_t i = 0; out && i < n; i++)
        out = ag_admin__append_or_drop(out, ag_policy_to_json(&ps[i]));
    *warned = out ? warn_missing(a, ps, n, json_object()) : NULL;
    free(ps);
    if (out && !*warned) {
        json_decref(out);
        out = NULL;
    }
    if (!out)
        ag_http_response_error(r, 500, "out of memory");
    return out;
}

/* POST /admin/policies/apply {"policies": [...], "prune": true,
 * "dry_run": false}: the policies become the file's (and, pruning, only
 * those) in one change; the answer says what changed, field by field. */
int ag_admin__apply(struct ag_admin *a, const struct ag_admin_request *req,
                    struct ag_http_response *r)
{
    if (strcmp(req->method, "POST") != 0)
        return ag_admin__not_allowed(r, "POST");
    json_t *body = ag_admin__parse_body(req, r);
    if (!body)
        return AG_OK;
    const char *bad = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "policies") != 0 && strcmp(key, "prune") != 0 &&
            strcmp(key, "dry_run") != 0)
            bad = key;
    }
    const json_t *prune = json_object_get(body, "prune");
    const json_t *dry = json_object_get(body, "dry_run");
    const char *msg = NULL, *field = NULL;
    if (!json_is_object(body))
        msg = "body must be a JSON object", field = "body";
    else if (bad)
        msg = "unknown field: the body has policies, prune and dry_run",
        field = bad;
    else if (prune && !json_is_boolean(prune))
        msg = "prune must be true or false", field = "prune";
    else if (dry && !json_is_boolean(dry))
        msg = "dry_run must be true or false", field = "dry_run";
    if (msg) {
        int rc = ag_http_response_field_error(r, 400, msg, field);
        json_decref(body);
        return rc;
    }
    json_t *warned = NULL;
    json_t *records = file_policies(a, body, r, &warned);
    bool pruning = !prune || json_is_true(prune);
    bool dry_run = json_is_true(dry);
    json_decref(body);
    if (!records)
        return AG_OK;
    json_t *diff = NULL;
    struct ag_fleet_result res;
    struct ag_error err;
    int rc = ag_fleet_apply_policies(a->fleet, records, pruning, dry_run,
                                     AG_ADMIN_ACTOR, &diff, &res, &err);
    json_decref(records);
    if (rc) {
        json_decref(warned);
        return ag_admin__refused(r, rc, &err);
    }
    bool same = !json_array_size(json_object_get(diff, "added")) &&
                !json_array_size(json_object_get(diff, "changed")) &&
                !json_array_size(json_object_get(diff, "removed"));
    bool changed = !dry_run && !same;
    /* One policy_changed a policy, as its own PUT or DELETE raises. */
    static const char *const parts[] = {"added", "changed", "removed"};
    for (size_t k = 0; changed && k < 3; k++) {
        size_t i;
        const json_t *item;
        json_array_foreach(json_object_get(diff, parts[k]), i, item)
        {
            const char *n =
                json_is_string(item)
                    ? json_string_value(item)
                    : json_string_value(json_object_get(item, "name"));
            ag_admin__note_edit(a, AG_EV_POLICY_CHANGED, n, -1, NULL,
                                k == 2 ? "delete" : "put", 0);
        }
    }
    char text[256];
    const char *why = changed ? ag_admin__changed(a, text, sizeof text) : NULL;
    json_t *out = json_pack("{s:o, s:b, s:I}", "diff", diff, "changed", changed,
                            "version", (json_int_t)res.version);
    if (out && json_object_update(out, warned)) {
        json_decref(out);
        out = NULL;
    }
    json_decref(warned);
    if (why)
        return ag_admin__answer_change(r, 200, out, why);
    return ag_admin__send_json(r, 200, out);
}
