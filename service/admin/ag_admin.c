/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_admin.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ag_admin_auth.h"
#include "ag_admin_shields.h"
#include "ag_db.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_http_verdict.h"
#include "ag_limiter.h"
#include "ag_lists.h"
#include "ag_log.h"
#include "ag_otp_stats.h"
#include "ag_request.h"

#define ACTOR "admin-api"
#define AUDIT_PAGE_DEFAULT 50

struct ag_admin {
    struct ag_service *svc;
    const struct ag_hasher *hasher;
    struct ag_reload *reload;
    struct ag_db *db;
    pthread_mutex_t lock;       /* guards db */
    struct ag_admin_auth *auth; /* owned */
};

int ag_admin_new(const char *db_path, const char *token, struct ag_service *svc,
                 const struct ag_hasher *hasher, struct ag_reload *reload,
                 struct ag_admin **out, struct ag_error *err)
{
    struct ag_admin *a = calloc(1, sizeof *a);
    if (!a)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    int rc = ag_admin_auth_new(token, NULL, NULL, &a->auth, err);
    if (rc) {
        free(a);
        return rc;
    }
    rc = ag_db_open(db_path, NULL, 0, &a->db, err);
    if (rc) {
        ag_admin_auth_free(a->auth);
        free(a);
        return rc;
    }
    a->svc = svc;
    a->hasher = hasher;
    a->reload = reload;
    pthread_mutex_init(&a->lock, NULL);
    *out = a;
    return AG_OK;
}

void ag_admin_free(struct ag_admin *a)
{
    if (!a)
        return;
    ag_db_close(a->db);
    pthread_mutex_destroy(&a->lock);
    ag_admin_auth_free(a->auth);
    free(a);
}

/* A policy_changed or list_changed event for a committed edit: policy
 * (or NULL) with endpoint (or -1), list (or NULL) and its entry (or 0). */
static void note_edit(struct ag_admin *a, enum ag_event_type type,
                      const char *policy, int endpoint, const char *list,
                      const char *change, int64_t entry)
{
    struct ag_event e;
    ag_event_init(&e, type);
    snprintf(e.policy, sizeof e.policy, "%s", policy ? policy : "");
    e.endpoint = endpoint;
    snprintf(e.list, sizeof e.list, "%s", list ? list : "");
    snprintf(e.change, sizeof e.change, "%s", change);
    e.entry = entry;
    ag_events_raise(ag_service_events(a->svc), &e);
}

static int not_allowed(struct ag_http_response *r, const char *allow)
{
    r->allow = allow;
    return ag_http_response_error(r, 405, "method not allowed");
}

/* A row the database holds but cannot give back (a hand edit) is the
 * service's fault, 500, and the message names it; anything else is the
 * database being unavailable. */
static int db_error(struct ag_http_response *r, const struct ag_error *err)
{
    ag_log(AG_LOG_ERROR, "admin_db", "%s", err->msg);
    if (err->code == AG_EINVAL)
        return ag_http_response_error(r, 500, err->msg);
    return ag_http_response_error(r, 503, "the policy database is unavailable");
}

/* Sends o, which it takes over; a NULL o (json_pack or a constructor
 * failed) is a clean 500 rather than a body with a part missing. */
static int send_json(struct ag_http_response *r, int status, json_t *o)
{
    if (!o)
        return ag_http_response_error(r, 500,
                                      "out of memory building the response");
    int rc = ag_http_response_json(r, status, o);
    json_decref(o);
    return rc;
}

/* Appends v (taken over) to arr; on failure drops arr and returns NULL, so
 * that an array is whole or absent. */
static json_t *append_or_drop(json_t *arr, json_t *v)
{
    if (!arr || !v || json_array_append_new(arr, v)) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* Parses a JSON request body; on failure fills r with a 400. */
static json_t *parse_body(const struct ag_admin_request *req,
                          struct ag_http_response *r)
{
    json_error_t jerr;
    json_t *v = json_loadb(req->body ? req->body : "", req->len,
                           JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "body is not valid JSON: %s at line %d column %d", jerr.text,
                 jerr.line, jerr.column);
        ag_http_response_field_error(r, 400, msg, "body");
    }
    return v;
}

/* After a committed change: waits for this instance's watcher to apply
 * it. NULL once it has; else the sentence a 202 carries. The change is
 * committed either way and the other instances follow it on their own, so
 * an error status would be untrue and invite a retry that finds the change
 * already made; a 2xx other than 202 would claim it is in force here. */
static const char *changed(struct ag_admin *a, char *msg, size_t size)
{
    int rc = ag_reload_sync(a->reload);
    if (rc == AG_OK)
        return NULL;
    if (rc == AG_EPENDING)
        snprintf(msg, size,
                 "the change is committed but not yet applied on this "
                 "instance: its policy watcher did not load it within %d ms",
                 AG_RELOAD_SYNC_TIMEOUT_MS);
    else
        snprintf(msg, size,
                 "the change is committed but not applied on this instance: "
                 "its policy watcher failed to load the database and keeps "
                 "the policies it had");
    ag_log(AG_LOG_WARN, "admin_change_not_applied", "%s", msg);
    return msg;
}

/* Answers a committed change with body (taken over) and status, or, when
 * why says it is not applied here, with 202 and body plus
 * "applied": false and "message": why. */
static int answer_change(struct ag_http_response *r, int status, json_t *body,
                         const char *why)
{
    if (why && body &&
        (json_object_set_new(body, "applied", json_false()) ||
         json_object_set_new(body, "message", json_string(why)))) {
        json_decref(body);
        body = NULL;
    }
    return send_json(r, why ? 202 : status, body);
}

/* A delete: 204 once applied here, else a 202 saying why not. */
static int answer_delete(struct ag_http_response *r, const char *why)
{
    if (why)
        return answer_change(r, 204, json_object(), why);
    r->status = 204;
    return AG_OK;
}

static int wrap_policy(struct ag_http_response *r, int status,
                       const struct ag_policy *p)
{
    return send_json(r, status,
                     json_pack("{s:o}", "policy", ag_policy_to_json(p)));
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
 * operator can find and fix it. */
static int list_policies(struct ag_admin *a, struct ag_http_response *r)
{
    struct ag_policy *ps;
    struct ag_db_invalid *bad;
    size_t n, nbad;
    struct ag_error err;
    pthread_mutex_lock(&a->lock);
    int rc = ag_db_policies_load_lenient(a->db, &ps, &n, &bad, &nbad, &err);
    pthread_mutex_unlock(&a->lock);
    if (rc)
        return db_error(r, &err);
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        list = append_or_drop(list, listed(&ps[i], bad, nbad));
    for (size_t k = 0; list && k < nbad; k++)
        if (!bad[k].kept)
            list = append_or_drop(list,
                                  json_pack("{s:s, s:s}", "name", bad[k].name,
                                            "invalid", bad[k].error));
    free(ps);
    free(bad);
    return send_json(r, 200, json_pack("{s:o}", "policies", list));
}

static int one_policy(struct ag_admin *a, const struct ag_admin_request *req,
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
        return rc ? db_error(r, &err) : wrap_policy(r, 200, &p);
    }
    if (strcmp(req->method, "DELETE") == 0) {
        pthread_mutex_lock(&a->lock);
        rc = ag_db_follow(a->db, &err);
        rc = rc ? rc : ag_db_policy_delete(a->db, name, ACTOR, &err);
        pthread_mutex_unlock(&a->lock);
        if (rc == AG_ENOTFOUND)
            return ag_http_response_error(r, 404, "no such policy");
        if (rc)
            return db_error(r, &err);
        note_edit(a, AG_EV_POLICY_CHANGED, name, -1, NULL, "delete", 0);
        char msg[256];
        return answer_delete(r, changed(a, msg, sizeof msg));
    }
    if (strcmp(req->method, "PUT") != 0)
        return not_allowed(r, "GET, PUT, DELETE");
    json_t *body = parse_body(req, r);
    if (!body)
        return AG_OK;
    struct ag_error perr;
    rc = ag_policy_from_json(body, name, &p, &perr);
    json_decref(body);
    if (rc)
        return ag_http_response_field_error(r, 400, perr.msg, perr.field);
    bool created = false;
    pthread_mutex_lock(&a->lock);
    rc = ag_db_follow(a->db, &err);
    rc = rc ? rc : ag_db_policy_save(a->db, &p, ACTOR, &created, &err);
    pthread_mutex_unlock(&a->lock);
    if (rc == AG_ETOOBIG)
        return ag_http_response_refusal(r, 400, &err);
    if (rc)
        return db_error(r, &err);
    note_edit(a, AG_EV_POLICY_CHANGED, p.name, (int)p.endpoint, NULL, "put", 0);
    char msg[256];
    const char *why = changed(a, msg, sizeof msg);
    return answer_change(r, created ? 201 : 200,
                         json_pack("{s:o}", "policy", ag_policy_to_json(&p)),
                         why);
}

/* Audits an action already done, after (NULL: it could not be built)
 * its row's "after", which this takes; a row that cannot be written is
 * logged, not a reason to say the action failed. */
static void audit_done(struct ag_admin *a, const char *action, const char *name,
                       json_t *after)
{
    struct ag_error err;
    int rc;
    if (!after) {
        rc = ag_error_set(&err, AG_ENOMEM, NULL, "out of memory");
    } else {
        pthread_mutex_lock(&a->lock);
        rc = ag_db_audit_note(a->db, action, name, ACTOR, NULL, after, &err);
        pthread_mutex_unlock(&a->lock);
    }
    json_decref(after);
    if (rc)
        ag_log(AG_LOG_ERROR, "admin_db", "%s not audited: %s", action, err.msg);
}

/* POST /admin/reset: clears one policy's counters for one identity. */
static int reset(struct ag_admin *a, const struct ag_admin_request *req,
                 struct ag_http_response *r)
{
    if (strcmp(req->method, "POST") != 0)
        return not_allowed(r, "POST");
    json_t *body = parse_body(req, r);
    if (!body)
        return AG_OK;
    const json_t *name = json_object_get(body, "policy");
    if (!json_is_string(name) ||
        !ag_policy_name_valid(json_string_value(name))) {
        json_decref(body);
        return ag_http_response_field_error(
            r, 400, "policy must be the name of a policy", "policy");
    }
    struct ag_error err;
    struct ag_policy p;
    pthread_mutex_lock(&a->lock);
    int rc = ag_db_policy_get(a->db, json_string_value(name), &p, &err);
    pthread_mutex_unlock(&a->lock);
    json_decref(body);
    if (rc == AG_ENOTFOUND)
        return ag_http_response_field_error(r, 404, "policy does not exist",
                                            "policy");
    if (rc)
        return db_error(r, &err);
    char key[AG_STORE_KEY_MAX];
    struct ag_error rerr;
    int cleared = ag_service_reset(a->svc, &p, req->body, req->len, key, &rerr);
    if (cleared == AG_EINVAL)
        return ag_http_response_refusal(r, 400, &rerr);
    if (cleared == AG_ETOOBIG)
        return ag_http_response_refusal(r, 503, &rerr);
    audit_done(a, "reset", p.name, json_pack("{s:s}", "key", key));
    if (cleared == AG_EUNKNOWN) {
        return send_json(
            r, 202,
            json_pack("{s:s,s:s}", "status", "unconfirmed", "message",
                      "cleared in this instance's fallback; the limiter "
                      "store did not answer the clear, which may have been "
                      "applied (it is not sent again)"));
    }
    if (cleared == AG_EPENDING) {
        /* Redis could not answer: this instance's fallback is cleared and
         * Redis will be before this instance sends it another check. */
        return send_json(
            r, 202,
            json_pack("{s:s,s:s}", "status", "pending", "message",
                      "cleared in this instance's fallback; the limiter "
                      "store is cleared when it answers"));
    }
    r->status = 204;
    return AG_OK;
}

/* POST /admin/inspect: what a check would be answered now, charging
 * nothing (ag_service_inspect), audited with the keys it read, hashed. */
static int inspect(struct ag_admin *a, const struct ag_admin_request *req,
                   struct ag_http_response *r)
{
    if (strcmp(req->method, "POST") != 0)
        return not_allowed(r, "POST");
    json_t *body = parse_body(req, r);
    if (!body)
        return AG_OK;
    /* Refused as a check refuses it: an array has no endpoint to name. */
    if (!json_is_object(body)) {
        json_decref(body);
        return ag_http_response_field_error(
            r, 400, "body must be a JSON object", "body");
    }
    const json_t *name = json_object_get(body, "endpoint");
    int endpoint =
        json_is_string(name) ? ag_endpoint_parse(json_string_value(name)) : -1;
    json_decref(body);
    if (endpoint < 0)
        return ag_http_response_field_error(
            r, 400, "endpoint must be \"login\", \"otp\" or \"otp_verify\"",
            "endpoint");
    struct ag_inspect_keys keys;
    struct ag_verdict v;
    int rc = ag_service_inspect(a->svc, (enum ag_endpoint)endpoint, req->body,
                                req->len, &keys, &v);
    if (rc == AG_OK)
        rc = ag_http_verdict_render(r, &v);
    ag_verdict_release(&v);
    if (rc || r->status != 200)
        return rc;
    /* Answered: audited with the keys it read. */
    json_t *list = json_array();
    for (size_t i = 0; list && i < keys.n; i++)
        list = append_or_drop(list, json_string(keys.key[i]));
    const char *ep = ag_endpoint_name((enum ag_endpoint)endpoint);
    json_t *after =
        list ? json_pack("{s:s,s:o}", "endpoint", ep, "keys", list) : NULL;
    audit_done(a, "inspect", ep, after);
    return AG_OK;
}

/* Parses a positive integer query argument: decimal digits only (no
 * sign, no white space, nothing that overflows); def if absent, -1 if
 * bad. */
static long long query_int(const char *s, long long def, long long max)
{
    if (!s)
        return def;
    if (!isdigit((unsigned char)s[0]))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 1 || v > max)
        return -1;
    return v;
}

static int audit_page(struct ag_admin *a, const struct ag_admin_request *req,
                      struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return not_allowed(r, "GET");
    long long limit =
        query_int(req->limit, AUDIT_PAGE_DEFAULT, AG_DB_AUDIT_PAGE_MAX);
    if (limit < 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "limit must be an integer from 1 to %d",
                 AG_DB_AUDIT_PAGE_MAX);
        return ag_http_response_field_error(r, 400, msg, "limit");
    }
    long long before = query_int(req->before, 0, INT64_MAX);
    if (before < 0)
        return ag_http_response_field_error(
            r, 400, "before must be a positive integer", "before");
    json_t *entries;
    int64_t next;
    struct ag_error err;
    pthread_mutex_lock(&a->lock);
    int rc = ag_db_audit_page(a->db, before, (int)limit, &entries, &next, &err);
    pthread_mutex_unlock(&a->lock);
    if (rc)
        return db_error(r, &err);
    return send_json(r, 200,
                     json_pack("{s:o, s:o}", "entries", entries, "next_before",
                               next ? json_integer(next) : json_null()));
}

/* GET /admin/otp/conversion?by=country|phone_prefix[&window_s=N] */
static int conversion(struct ag_admin *a, const struct ag_admin_request *req,
                      struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return not_allowed(r, "GET");
    int by = ag_otp_by_parse(req->by);
    if (by < 0)
        return ag_http_response_field_error(
            r, 400, "by must be \"country\" or \"phone_prefix\"", "by");
    long long window = query_int(req->window_s, AG_OTP_STATS_WINDOW_DEFAULT_S,
                                 AG_OTP_STATS_WINDOW_MAX_S);
    if (window < 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "window_s must be an integer from 1 to %u",
                 AG_OTP_STATS_WINDOW_MAX_S);
        return ag_http_response_field_error(r, 400, msg, "window_s");
    }
    json_t *out = NULL;
    int rc = ag_service_conversion(a->svc, by, (uint32_t)window, &out);
    if (rc == AG_ESTORE)
        return ag_http_response_error(r, 503,
                                      "Redis cannot answer: the figures live "
                                      "there");
    if (rc)
        return rc;
    return send_json(r, 200, out);
}

/* GET /admin/events?after=ID&limit=N: a page of the event stream. */
static int events_page(struct ag_admin *a, const struct ag_admin_request *req,
                       struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return not_allowed(r, "GET");
    long long limit =
        query_int(req->limit, AG_EVENTS_PAGE_DEFAULT, AG_EVENTS_PAGE_MAX);
    struct ag_events *ev = ag_service_events(a->svc);
    if (!ev)
        return ag_http_response_error(r, 404, "security events are off");
    json_t *out;
    struct ag_error err;
    int rc = ag_events_read(ev, req->after, limit, &out, &err);
    if (rc == AG_EINVAL)
        return ag_http_response_refusal(r, 400, &err);
    if (rc == AG_ESTORE)
        return ag_http_response_refusal(r, 503, &err);
    if (rc)
        return ag_http_response_error(r, 500, "out of memory");
    return send_json(r, 200, out);
}

static int lists(struct ag_admin *a, const struct ag_admin_request *req,
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
    struct ag_error err;
    int rc;
    if (rest[n] == '/') {
        if (strcmp(req->method, "DELETE") != 0)
            return not_allowed(r, "DELETE");
        long long id = query_int(rest + n + 1, -1, INT64_MAX);
        if (id < 0)
            return ag_http_response_field_error(r, 400,
                                                "id must be an entry id", "id");
        pthread_mutex_lock(&a->lock);
        rc = ag_db_follow(a->db, &err);
        rc = rc ? rc
                : ag_db_list_delete(a->db, (enum ag_list)list, id, ACTOR, &err);
        pthread_mutex_unlock(&a->lock);
        if (rc == AG_ENOTFOUND)
            return ag_http_response_error(r, 404, "no such entry");
        if (rc)
            return db_error(r, &err);
        note_edit(a, AG_EV_LIST_CHANGED, NULL, -1, which, "delete", id);
        char msg[256];
        return answer_delete(r, changed(a, msg, sizeof msg));
    }
    if (strcmp(req->method, "GET") == 0) {
        struct ag_list_entry *es;
        size_t count, invalid;
        pthread_mutex_lock(&a->lock);
        rc = ag_db_lists_load(a->db, &es, &count, &invalid, &err);
        pthread_mutex_unlock(&a->lock);
        if (rc)
            return db_error(r, &err);
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < count; i++)
            if ((int)es[i].list == list)
                arr = append_or_drop(arr, ag_list_entry_to_json(&es[i]));
        free(es);
        /* Rows of either list that fail validation, left out of both. */
        return send_json(r, 200,
                         json_pack("{s:o,s:I}", "entries", arr,
                                   "invalid_entries", (json_int_t)invalid));
    }
    if (strcmp(req->method, "POST") != 0)
        return not_allowed(r, "GET, POST");
    json_t *body = parse_body(req, r);
    if (!body)
        return AG_OK;
    struct ag_list_entry e;
    struct ag_error perr;
    rc =
        ag_list_entry_from_json(body, (enum ag_list)list, a->hasher, &e, &perr);
    json_decref(body);
    if (rc)
        return ag_http_response_field_error(r, 400, perr.msg, perr.field);
    int64_t id = 0;
    pthread_mutex_lock(&a->lock);
    rc = ag_db_follow(a->db, &err);
    rc = rc ? rc : ag_db_list_add(a->db, &e, ACTOR, &id, &err);
    pthread_mutex_unlock(&a->lock);
    if (rc == AG_ETOOBIG)
        return ag_http_response_refusal(r, 400, &err);
    if (rc == AG_ECONFLICT)
        return ag_http_response_refusal(r, 409, &err);
    if (rc)
        return db_error(r, &err);
    note_edit(a, AG_EV_LIST_CHANGED, NULL, -1, which, "add", id);
    char msg[256];
    const char *why = changed(a, msg, sizeof msg);
    e.id = id;
    return answer_change(
        r, 201, json_pack("{s:o}", "entry", ag_list_entry_to_json(&e)), why);
}

int ag_admin_handle(struct ag_admin *a, const struct ag_admin_request *req,
                    struct ag_http_response *r)
{
    uint32_t retry_after_s = 0;
    switch (ag_admin_auth_check(a->auth, req->client, req->authorization,
                                &retry_after_s)) {
    case AG_ADMIN_AUTH_OK:
        break;
    case AG_ADMIN_AUTH_DENIED:
        r->www_authenticate = true;
        return ag_http_response_error(r, 401,
                                      "a valid bearer token is required");
    case AG_ADMIN_AUTH_THROTTLED:
        r->retry_after = retry_after_s;
        return ag_http_response_error(
            r, 429, "too many failed admin authentications from this address");
    }
    const char *path = req->path + strlen("/admin");
    if (strcmp(path, "/policies") == 0) {
        if (strcmp(req->method, "GET") != 0)
            return not_allowed(r, "GET");
        return list_policies(a, r);
    }
    if (strncmp(path, "/policies/", 10) == 0)
        return one_policy(a, req, path + 10, r);
    if (strcmp(path, "/reset") == 0)
        return reset(a, req, r);
    if (strcmp(path, "/inspect") == 0)
        return inspect(a, req, r);
    if (strcmp(path, "/audit") == 0)
        return audit_page(a, req, r);
    if (strncmp(path, "/lists/", 7) == 0)
        return lists(a, req, path + 7, r);
    if (strcmp(path, "/otp/conversion") == 0)
        return conversion(a, req, r);
    if (strcmp(path, "/events") == 0)
        return events_page(a, req, r);
    struct ag_admin_shields_request sr = {req->method, path, req->body,
                                          req->len};
    if (strcmp(path, "/shields") == 0 || strncmp(path, "/shields/", 9) == 0) {
        struct ag_admin_shield_audit au;
        int rc = ag_admin_shields(a->svc, &sr, r, &au);
        if (au.action)
            audit_done(a, au.action, au.policy, au.after);
        return rc;
    }
    if (strcmp(path, "/overview") == 0)
        return ag_admin_overview(a->svc, &sr, r);
    return ag_http_response_error(r, 404, "no such admin path");
}
