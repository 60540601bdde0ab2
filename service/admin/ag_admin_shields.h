/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operators' side of the site-wide shields (ag_shields.h), as admin
 * API routes (ag_admin.c routes to them once the
 * token is checked, and writes the audit row a switch asks for; this
 * part knows nothing of it, so that calls go one way):
 *
 *   GET  /admin/shields            {"shields": [<shield>, ...]}
 *   POST /admin/shields/{policy}   {"raise_for_s": N} | {"lower": true}
 *                                  | {"lower_for_s": N}
 *                                  -> 200 {"shield": <shield>}; 503 with
 *                                  it when Redis did not take it
 *   GET  /admin/overview           this instance's last hour, a minute
 *                                  at a time (ag_overview_json), and the
 *                                  fleet's part the caller hands in
 *
 * A <shield> is its state as the last sync of this instance saw it:
 * {"name", "raised", "since", "until" (RFC 3339, UTC, ms; null while
 * lowered), "rate" (the last full window's count), "current" (this
 * window's so far), "baseline" (a number), "threshold", "attempts",
 * "current_attempts", "attempt_baseline", "window_s", "source"
 * ("shared": Redis, every instance's counts; "local": this instance's
 * own, because Redis does not answer), "stepped_at" (null before the
 * first sync), and from its policy "endpoint", "counts", "mode",
 * "action" and "applies_to"}.
 *
 * Stateless; the service is borrowed. Thread-safe as the service is.
 */
#ifndef AG_ADMIN_SHIELDS_H
#define AG_ADMIN_SHIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_policy.h"
#include "ag_service.h"
#include "ag_shields.h"

/* The longest an operator may raise a shield for: 30 days. */
#define AG_SHIELD_RAISE_MAX_S AG_WINDOW_MAX

/* What a POST /admin/shields/{policy} body asks. */
struct ag_shield_switch {
    bool lower;           /* {"lower": true} or {"lower_for_s": N} */
    uint32_t raise_for_s; /* {"raise_for_s": N}; 0 when lowering */
    /* Lowering: how long the counts may not raise it again, seconds;
     * AG_SHIELDS_LOWER_HOLD ({"lower": true}) for the policy's block_s. */
    uint32_t lower_for_s;
};

/* Parses a switch's body: a JSON object with exactly one of
 * "raise_for_s" (an integer from 1 to AG_SHIELD_RAISE_MAX_S), "lower"
 * (true) or "lower_for_s" (an integer from 0 to AG_SHIELD_RAISE_MAX_S),
 * and nothing else. AG_OK and *out, or AG_EINVAL with err naming the
 * field at fault ("body" for what is no JSON object). */
int ag_admin_shield_switch_parse(const char *body, size_t len,
                                 struct ag_shield_switch *out,
                                 struct ag_error *err);

/* A <shield> of v, whose policy is p (the active set's of its name). A
 * new reference, or NULL when out of memory. */
json_t *ag_admin_shield_json(const struct ag_shield_view *v,
                             const struct ag_policy *p);

/* The audit row a switch applied asks for (action NULL: none). */
struct ag_admin_shield_audit {
    const char *action; /* "shield_raise" or "shield_lower" */
    char policy[AG_POLICY_NAME_MAX + 1];
    json_t *after; /* the row's "after", the caller's to take */
};

/* One request to these routes, as ag_admin.c read it (borrowed). */
struct ag_admin_shields_request {
    const char *method;
    const char *path; /* the part after "/admin" */
    const char *body;
    size_t len;
};

/* Serves GET /admin/shields and POST /admin/shields/{policy} into r, and
 * fills audit when a switch was applied, in Redis or in this instance
 * alone. Returns an error only if the response could not be built. */
int ag_admin_shields(struct ag_service *svc,
                     const struct ag_admin_shields_request *req,
                     struct ag_http_response *r,
                     struct ag_admin_shield_audit *audit);

/* Serves GET /admin/overview into r, with fleet (taken over; NULL: none)
 * as its "fleet". */
int ag_admin_overview(struct ag_service *svc,
                      const struct ag_admin_shields_request *req, json_t *fleet,
                      struct ag_http_response *r);

#endif
