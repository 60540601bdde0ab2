/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_admin_impl.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ag_admin_shields.h"
#include "ag_error.h"
#include "ag_http_verdict.h"
#include "ag_limiter.h"
#include "ag_log.h"
#include "ag_ocsf.h"
#include "ag_otp_stats.h"
#include "ag_request.h"

#define ACTOR AG_ADMIN_ACTOR
#define AUDIT_PAGE_DEFAULT 50

int ag_admin_new(const char *db_path, const char *token, struct ag_service *svc,
                 const struct ag_hasher *hasher, struct ag_reload *reload,
                 struct ag_fleet *fleet, struct ag_admin **out,
                 struct ag_error *err)
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
    a->fleet = fleet;
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

/* Audits an action already done, after (NULL: it could not be built)
 * its row's "after", which this takes: through the fleet when it takes
 * it, else here alone; a row that cannot be written is logged, not a
 * reason to say the action failed. */
static void audit_done(struct ag_admin *a, const char *action, const char *name,
                       json_t *after)
{
    if (!after)
        ag_log(AG_LOG_ERROR, "admin_db", "%s not audited: out of memory",
               action);
    else
        ag_fleet_note(a->fleet, ACTOR, action, name, after);
    json_decref(after);
}

/* POST /admin/reset: clears one policy's counters for one identity. */
static int reset(struct ag_admin *a, const struct ag_admin_request *req,
                 struct ag_http_response *r)
{
    if (strcmp(req->method, "POST") != 0)
        return ag_admin__not_allowed(r, "POST");
    json_t *body = ag_admin__parse_body(req, r);
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
        return ag_admin__db_error(r, &err);
    char key[AG_STORE_KEY_MAX];
    struct ag_error rerr;
    int cleared = ag_service_reset(a->svc, &p, req->body, req->len, key, &rerr);
    if (cleared == AG_EINVAL)
        return ag_http_response_refusal(r, 400, &rerr);
    if (cleared == AG_ETOOBIG)
        return ag_http_response_refusal(r, 503, &rerr);
    audit_done(a, "reset", p.name, json_pack("{s:s}", "key", key));
    if (cleared == AG_EUNKNOWN) {
        return ag_admin__send_json(
            r, 202,
            json_pack("{s:s,s:s}", "status", "unconfirmed", "message",
                      "cleared in this instance's fallback; the limiter "
                      "store did not answer the clear, which may have been "
                      "applied (it is not sent again)"));
    }
    if (cleared == AG_EPENDING) {
        /* Redis could not answer: this instance's fallback is cleared and
         * Redis will be before this instance sends it another check. */
        return ag_admin__send_json(
            r, 202,
            json_pack("{s:s,s:s}", "status", "pending", "message",
                      "cleared in this instance's fallback; the limiter "
                      "store is cleared when it answers"));
    }
    r->status = 204;
    return AG_OK;
}

/* An inspect of a login with a user shows the user's usual places
 * (AG_HISTORY_VIEW: no place) in its answer, as "history"; left out
 * while Redis does not answer. */
static int inspect_history(struct ag_admin *a,
                           const struct ag_admin_request *req,
                           struct ag_http_response *r)
{
    json_t *view;
    char digest[AG_DIGEST_HEX + 1];
    struct ag_error err;
    if (ag_service_history(a->svc, req->body, req->len, AG_HISTORY_VIEW, &view,
                           digest, &err))
        return AG_OK;
    json_t *o = json_loadb(r->body.p, r->body.len, 0, NULL);
    if (!o || json_object_set_new(o, "history", view)) {
        json_decref(o);
        return AG_ENOMEM;
    }
    return ag_admin__send_json(r, 200, o);
}

/* POST /admin/inspect: what a check would be answered now, charging
 * nothing (ag_service_inspect), audited with the keys it read, hashed. */
static int inspect(struct ag_admin *a, const struct ag_admin_request *req,
                   struct ag_http_response *r)
{
    if (strcmp(req->method, "POST") != 0)
        return ag_admin__not_allowed(r, "POST");
    json_t *body = ag_admin__parse_body(req, r);
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
    if (!rc && r->status == 200 && endpoint == AG_EP_LOGIN)
        rc = inspect_history(a, req, r);
    if (rc || r->status != 200)
        return rc;
    /* Answered: audited with the keys it read. */
    json_t *list = json_array();
    for (size_t i = 0; list && i < keys.n; i++)
        list = ag_admin__append_or_drop(list, json_string(keys.key[i]));
    const char *ep = ag_endpoint_name((enum ag_endpoint)endpoint);
    json_t *after =
        list ? json_pack("{s:s,s:o}", "endpoint", ep, "keys", list) : NULL;
    audit_done(a, "inspect", ep, after);
    return AG_OK;
}

/* POST /admin/history and /admin/history/forget: a user's usual places
 * exported whole (a data-subject access request) or forgotten (erasure),
 * audited with the user's keyed digest, never the user. */
static int history(struct ag_admin *a, const struct ag_admin_request *req,
                   struct ag_http_response *r, bool forget)
{
    if (strcmp(req->method, "POST") != 0)
        return ag_admin__not_allowed(r, "POST");
    json_t *out;
    char digest[AG_DIGEST_HEX + 1];
    struct ag_error err;
    int rc = ag_service_history(a->svc, req->body, req->len,
                                forget ? AG_HISTORY_FORGET : AG_HISTORY_EXPORT,
                                &out, digest, &err);
    if (rc == AG_EINVAL)
        return ag_http_response_refusal(r, 400, &err);
    if (rc == AG_ESTORE)
        return ag_http_response_error(r, 503,
                                      "the limiter store did not answer");
    if (rc)
        return rc;
    audit_done(a, forget ? "history_forget" : "history_export", digest,
               json_pack("{s:s}", "user_digest", digest));
    if (forget)
        return ag_admin__send_json(r, 200, out);
    return ag_admin__send_json(
        r, 200, json_pack("{s:s,s:o}", "user_digest", digest, "history", out));
}

static int audit_page(struct ag_admin *a, const struct ag_admin_request *req,
                      struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return ag_admin__not_allowed(r, "GET");
    long long limit = ag_admin__query_int(req->limit, AUDIT_PAGE_DEFAULT,
                                          AG_DB_AUDIT_PAGE_MAX);
    if (limit < 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "limit must be an integer from 1 to %d",
                 AG_DB_AUDIT_PAGE_MAX);
        return ag_http_response_field_error(r, 400, msg, "limit");
    }
    long long before = ag_admin__query_int(req->before, 0, INT64_MAX);
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
        return ag_admin__db_error(r, &err);
    return ag_admin__send_json(
        r, 200,
        json_pack("{s:o, s:o}", "entries", entries, "next_before",
                  next ? json_integer(next) : json_null()));
}

/* GET /admin/otp/conversion?by=country|phone_prefix[&window_s=N] */
static int conversion(struct ag_admin *a, const struct ag_admin_request *req,
                      struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return ag_admin__not_allowed(r, "GET");
    int by = ag_otp_by_parse(req->by);
    if (by < 0)
        return ag_http_response_field_error(
            r, 400, "by must be \"country\" or \"phone_prefix\"", "by");
    long long window =
        ag_admin__query_int(req->window_s, AG_OTP_STATS_WINDOW_DEFAULT_S,
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
    return ag_admin__send_json(r, 200, out);
}

/* A page's events as OCSF events in place (each keeps its stream_id in
 * its "unmapped" copy of ours): non-zero when out of memory. */
static int page_to_ocsf(json_t *page)
{
    json_t *events = json_object_get(page, "events");
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        json_t *o = ag_ocsf_event(e);
        if (!o || json_array_set_new(events, i, o))
            return -1;
    }
    return 0;
}

/* GET /admin/events?after=ID&limit=N&format=json|ocsf: a page of the
 * event stream. */
static int events_page(struct ag_admin *a, const struct ag_admin_request *req,
                       struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0)
        return ag_admin__not_allowed(r, "GET");
    int format =
        req->format ? ag_event_format_parse(req->format) : AG_EVENT_FORMAT_JSON;
    if (format < 0)
        return ag_http_response_field_error(
            r, 400, "format must be \"json\" or \"ocsf\"", "format");
    long long limit = ag_admin__query_int(req->limit, AG_EVENTS_PAGE_DEFAULT,
                                          AG_EVENTS_PAGE_MAX);
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
    if (!rc && format == AG_EVENT_FORMAT_OCSF && page_to_ocsf(out)) {
        json_decref(out);
        rc = AG_ENOMEM;
    }
    if (rc)
        return ag_http_response_error(r, 500, "out of memory");
    return ag_admin__send_json(r, 200, out);
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
    if (strcmp(path, "/policies") == 0)
        return ag_admin__policies(a, req, r);
    if (strcmp(path, "/policies/apply") == 0)
        return ag_admin__apply(a, req, r);
    if (strncmp(path, "/policies/", 10) == 0)
        return ag_admin__one_policy(a, req, path + 10, r);
    if (strcmp(path, "/fleet") == 0)
        return ag_admin__fleet(a, req, r);
    if (strcmp(path, "/reset") == 0)
        return reset(a, req, r);
    if (strcmp(path, "/inspect") == 0)
        return inspect(a, req, r);
    if (strcmp(path, "/history") == 0 || strcmp(path, "/history/forget") == 0)
        return history(a, req, r, path[8] == '/');
    if (strcmp(path, "/audit") == 0)
        return audit_page(a, req, r);
    if (strncmp(path, "/lists/", 7) == 0)
        return ag_admin__lists(a, req, path + 7, r);
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
        return ag_admin__overview(a, req, r);
    return ag_http_response_error(r, 404, "no such admin path");
}
