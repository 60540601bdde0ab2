/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin API: policy edits, counter resets, the audit log and the allow
 * and deny lists, as JSON over HTTP. Every route needs
 * "Authorization: Bearer <token>" (ag_admin_auth.h); a missing or wrong
 * token is a 401 with WWW-Authenticate, and an address with too many
 * failures is answered 429 with Retry-After, whatever its token. Every
 * write goes through the
 * same validation as every other path (ag_policy_from_json,
 * ag_list_entry_from_json), is one SQLite transaction with its audit row,
 * and waits for the reload watcher to apply it on this instance (the
 * others within their watch interval). A change committed but not applied
 * here (the wait ran out, or the load failed) is answered 202 with the
 * usual body plus "applied": false and a "message" saying which.
 *
 * Routes (all under /admin):
 *   GET    /policies              {"policies": [...]}
 *   GET    /policies/{name}       {"policy": ...} | 404
 *   PUT    /policies/{name}       201 created | 200 replaced | 202,
 *                                 {"policy": ...}
 *   DELETE /policies/{name}       204 | 202 | 404
 *   POST   /reset                 {"policy": name, <identifiers>} -> 204
 *   POST   /inspect               {"endpoint": e, <identifiers>} -> 200,
 *                                 a check's answer, nothing charged
 *   GET    /audit?limit=&before=  {"entries": [...], "next_before": id|null}
 *   GET    /lists/{allow|deny}    {"entries": [...]}
 *   POST   /lists/{allow|deny}    201 | 202 {"entry": ...}
 *   DELETE /lists/{allow|deny}/{id}  204 | 202 | 404
 *   GET    /otp/conversion?by=&window_s=  sent and verified codes
 *   GET    /events?after=&limit=&format=json|ocsf
 *                                {"events": [...], "next_after": id}
 *
 * api/openapi.json describes each in full, and test_openapi.py holds the
 * description to what these handlers answer. The HTTP router reaches
 * ag_admin_handle through the routes the admin part hands it
 * (ag_admin_routes.h), never by name.
 *
 * Handlers run on HTTP threads; the admin's own SQLite connection is used
 * under a mutex (admin traffic is rare; checks never wait for it).
 */
#ifndef AG_ADMIN_H
#define AG_ADMIN_H

#include <stddef.h>

#include "ag_http_response.h"
#include "ag_reload.h"
#include "ag_service.h"

struct ag_admin;

/* Admin answers may be long (a page of AG_DB_AUDIT_PAGE_MAX audit rows,
 * AG_LISTS_MAX list entries): their bodies may reach this many bytes. */
#define AG_ADMIN_RESPONSE_MAX (16 * 1024 * 1024)

struct ag_admin_request {
    const char *method;
    const char *path;          /* starts with "/admin/" */
    const char *authorization; /* the header's value, or NULL */
    const char *client;        /* the peer's address as text, or NULL */
    const char *limit;         /* query argument, or NULL */
    const char *before;        /* query argument, or NULL */
    const char *by;            /* query argument, or NULL */
    const char *window_s;      /* query argument, or NULL */
    const char *after;         /* query argument, or NULL */
    const char *format;        /* query argument, or NULL */
    const char *if_match;      /* the If-Match header, or NULL */
    const char *body;
    size_t len;
};

struct ag_fleet;

/* Opens its own connection to db_path, for reads. token is copied. svc,
 * hasher (for list entries' digests), reload and fleet (through which
 * every change and audit row goes) are borrowed and must outlive the
 * admin. */
int ag_admin_new(const char *db_path, const char *token, struct ag_service *svc,
                 const struct ag_hasher *hasher, struct ag_reload *reload,
                 struct ag_fleet *fleet, struct ag_admin **out,
                 struct ag_error *err);
void ag_admin_free(struct ag_admin *a);

/* Serves one admin request into resp. Returns an error only if the
 * response could not be built. */
int ag_admin_handle(struct ag_admin *a, const struct ag_admin_request *req,
                    struct ag_http_response *resp);

#endif
