/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin API's answers (ag_admin_impl.h): JSON bodies, refusals, the
 * wait for this instance to apply a change, events of an edit, and query
 * arguments. It calls no other file of the admin part.
 */
#include "ag_admin_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_log.h"

/* A policy_changed or list_changed event for a committed edit: policy
 * (or NULL) with endpoint (or -1), list (or NULL) and its entry (or 0). */
void ag_admin__note_edit(struct ag_admin *a, enum ag_event_type type,
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

int ag_admin__not_allowed(struct ag_http_response *r, const char *allow)
{
    r->allow = allow;
    return ag_http_response_error(r, 405, "method not allowed");
}

/* A row the database holds but cannot give back (a hand edit) is the
 * service's fault, 500, and the message names it; anything else is the
 * database being unavailable. */
int ag_admin__db_error(struct ag_http_response *r, const struct ag_error *err)
{
    ag_log(AG_LOG_ERROR, "admin_db", "%s", err->msg);
    if (err->code == AG_EINVAL)
        return ag_http_response_error(r, 500, err->msg);
    return ag_http_response_error(r, 503, "the policy database is unavailable");
}

/* Sends o, which it takes over; a NULL o (json_pack or a constructor
 * failed) is a clean 500 rather than a body with a part missing. */
int ag_admin__send_json(struct ag_http_response *r, int status, json_t *o)
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
json_t *ag_admin__append_or_drop(json_t *arr, json_t *v)
{
    if (!arr || !v || json_array_append_new(arr, v)) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* Parses a JSON request body; on failure fills r with a 400. */
json_t *ag_admin__parse_body(const struct ag_admin_request *req,
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
const char *ag_admin__changed(struct ag_admin *a, char *msg, size_t size)
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
int ag_admin__answer_change(struct ag_http_response *r, int status,
                            json_t *body, const char *why)
{
    if (why && body &&
        (json_object_set_new(body, "applied", json_false()) ||
         json_object_set_new(body, "message", json_string(why)))) {
        json_decref(body);
        body = NULL;
    }
    return ag_admin__send_json(r, why ? 202 : status, body);
}

/* A delete: 204 once applied here, else a 202 saying why not. */
int ag_admin__answer_delete(struct ag_http_response *r, const char *why)
{
    if (why)
        return ag_admin__answer_change(r, 204, json_object(), why);
    r->status = 204;
    return AG_OK;
}

int ag_admin__refused(struct ag_http_response *r, int rc,
                      const struct ag_error *err)
{
    switch (rc) {
    case AG_EINVAL:
    case AG_ETOOBIG:
        return ag_http_response_refusal(r, 400, err);
    case AG_ENOTFOUND:
        return ag_http_response_refusal(r, 404, err);
    case AG_ECONFLICT:
        return ag_http_response_refusal(r, 409, err);
    case AG_ESTALE:
        return ag_http_response_refusal(r, 412, err);
    case AG_ESTORE:
    case AG_EUNKNOWN:
        ag_log(AG_LOG_WARN, "admin_change_refused", "%s", err->msg);
        return ag_http_response_refusal(r, 503, err);
    default:
        return ag_admin__db_error(r, err);
    }
}

/* Parses a positive integer query argument: decimal digits only (no
 * sign, no white space, nothing that overflows); def if absent, -1 if
 * bad. */
long long ag_admin__query_int(const char *s, long long def, long long max)
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
