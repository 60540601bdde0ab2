/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the admin API (ag_admin.h), shared by its files and no other
 * module: ag_admin.c (the part's life, resets, inspections, the audit,
 * the events and the dispatch), ag_admin_reply.c (the answers every other
 * file gives: it calls none of them), ag_admin_policies.c (policies,
 * their versions and the declarative apply), ag_admin_lists.c (the allow
 * and deny lists) and ag_admin_fleet.c (the fleet's status and the
 * overview).
 */
#ifndef AG_ADMIN_IMPL_H
#define AG_ADMIN_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_admin.h"
#include "ag_admin_auth.h"
#include "ag_db.h"
#include "ag_events.h"
#include "ag_fleet.h"

#define AG_ADMIN_ACTOR "admin-api"

struct ag_admin {
    struct ag_service *svc;
    const struct ag_hasher *hasher;
    struct ag_reload *reload;
    struct ag_fleet *fleet;     /* every change goes through it */
    struct ag_db *db;           /* reads */
    pthread_mutex_t lock;       /* guards db */
    struct ag_admin_auth *auth; /* owned */
};

/* A policy_changed or list_changed event for a made change: policy (or
 * NULL) with endpoint (or -1), list (or NULL) and its entry (or 0). */
void ag_admin__note_edit(struct ag_admin *a, enum ag_event_type type,
                         const char *policy, int endpoint, const char *list,
                         const char *change, int64_t entry);
int ag_admin__not_allowed(struct ag_http_response *r, const char *allow);
/* The database failed (500 for a row it cannot give back, else 503). */
int ag_admin__db_error(struct ag_http_response *r, const struct ag_error *err);
/* Sends o, which it takes over; a NULL o is a clean 500. */
int ag_admin__send_json(struct ag_http_response *r, int status, json_t *o);
/* Appends v (taken over) to arr; on failure drops arr, returns NULL. */
json_t *ag_admin__append_or_drop(json_t *arr, json_t *v);
/* Parses a JSON request body; on failure fills r with a 400 and returns
 * NULL. */
json_t *ag_admin__parse_body(const struct ag_admin_request *req,
                             struct ag_http_response *r);
/* After a made change: waits for this instance's watcher to apply it;
 * NULL once it has, else the sentence a 202 carries (in msg). */
const char *ag_admin__changed(struct ag_admin *a, char *msg, size_t size);
/* Answers a made change with body (taken over) and status, or 202 with
 * "applied": false and why. */
int ag_admin__answer_change(struct ag_http_response *r, int status,
                            json_t *body, const char *why);
/* A delete: 204 once applied here, else a 202 saying why not. */
int ag_admin__answer_delete(struct ag_http_response *r, const char *why);
/* The answer to a change the fleet refused (ag_fleet_change's codes):
 * 400, 404, 409, 412 or 503, with err's message and field. */
int ag_admin__refused(struct ag_http_response *r, int rc,
                      const struct ag_error *err);
/* A positive integer query argument: def if absent, -1 if bad. */
long long ag_admin__query_int(const char *s, long long def, long long max);

int ag_admin__policies(struct ag_admin *a, const struct ag_admin_request *req,
                       struct ag_http_response *r);
int ag_admin__one_policy(struct ag_admin *a, const struct ag_admin_request *req,
                         const char *name, struct ag_http_response *r);
int ag_admin__apply(struct ag_admin *a, const struct ag_admin_request *req,
                    struct ag_http_response *r);
int ag_admin__lists(struct ag_admin *a, const struct ag_admin_request *req,
                    const char *rest, struct ag_http_response *r);
int ag_admin__fleet(struct ag_admin *a, const struct ag_admin_request *req,
                    struct ag_http_response *r);
int ag_admin__overview(struct ag_admin *a, const struct ag_admin_request *req,
                       struct ag_http_response *r);

#endif
