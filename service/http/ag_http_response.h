/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP responses as data: status, JSON body and the headers abuseguard
 * sets, built without libmicrohttpd so they can be tested alone. ag_http
 * turns one into a wire response.
 *
 * Check bodies, each saying the lane the check was judged in:
 *   200 {"allowed":true,"device":"untrusted","decisions":[{"policy":
 *        "login.user","allowed":true,"limit":10,"remaining":9,
 *        "reset_after":900}, ...]}
 *   429 {"allowed":false,"policy":"login.user_ip","action":"deny",
 *        "retry_after":712,"device":"trusted","decisions":[...]}
 * "action" is "challenge" when the reported policy asks for one; a
 * challenge policy's decision says "action":"challenge", and
 * "challenge_passed":true when the request passed it (it did not deny).
 * A successful /report-login: 200 {"device_token":"v1....","expires_in":N}.
 * Error bodies: {"error":"<sentence naming the field>","field":"<it>"}.
 * Not thread-safe; one response per request.
 */
#ifndef AG_HTTP_RESPONSE_H
#define AG_HTTP_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_buf.h"
#include "ag_error.h"

#include "ag_limiter.h"

#define AG_HTTP_RESPONSE_MAX (64 * 1024) /* body bytes at most */
#define AG_HTTP_ETAG_MAX 48 /* bytes of an ETag, quotes and NUL included */
/* RateLimit field bytes at most: AG_PLAN_MAX items of a policy name and
 * three numbers. */
#define AG_RATELIMIT_FIELD_MAX (AG_PLAN_OPS * (AG_POLICY_NAME_MAX + 48))

struct ag_http_response {
    int status;
    struct ag_buf body;
    bool rate_headers;     /* send X-RateLimit-Limit/Remaining/Reset */
    uint32_t rl_limit;     /* X-RateLimit-Limit */
    uint32_t rl_remaining; /* X-RateLimit-Remaining */
    uint32_t rl_reset;     /* X-RateLimit-Reset, seconds from now */
    uint32_t retry_after;  /* Retry-After seconds; 0 = no header */
    /* The IETF fields (draft-ietf-httpapi-ratelimit-headers-11), one
     * Structured Field list item per enforcing policy of a check:
     * RateLimit-Policy: "login.user";q=10;w=900, ... and
     * RateLimit: "login.user";r=9;t=900, ...; empty: not sent. */
    struct ag_buf rl_policy_field;
    struct ag_buf rl_field;
    const char *allow;           /* Allow header for a 405; NULL = none */
    bool www_authenticate;       /* send WWW-Authenticate: Bearer (a 401) */
    const char *content_type;    /* NULL: application/json */
    bool close;                  /* Connection: close */
    const char *cache_control;   /* Cache-Control; NULL: no-store */
    const char *vary;            /* Vary; NULL: none */
    char etag[AG_HTTP_ETAG_MAX]; /* ETag, quoted; empty: none */
};

void ag_http_response_init(struct ag_http_response *r);
/* Frees the body; the response may be reused after ag_http_response_init. */
void ag_http_response_free(struct ag_http_response *r);

/* An error response with {"error": msg}; non-ASCII bytes of msg become '?'
 * so the body is always valid JSON. */
int ag_http_response_error(struct ag_http_response *r, int status,
                           const char *msg);
/* An error response with {"error": msg, "field": field}. */
int ag_http_response_field_error(struct ag_http_response *r, int status,
                                 const char *msg, const char *field);
/* A refusal of input: {"error": err->msg, "field": err->field}, the field
 * left out when err names none. */
int ag_http_response_refusal(struct ag_http_response *r, int status,
                             const struct ag_error *err);
/* r as the bytes of a whole HTTP/1.1 response that ends its connection,
 * for an answer written without libmicrohttpd (the acceptor's refusals,
 * a framing fault's 400): the status line, Content-Type (JSON unless r
 * says), Cache-Control: no-store, Retry-After if r sets it, Connection:
 * close, Content-Length and the body. Writes at most size bytes to out,
 * the caller's, and returns how many, or 0 if it does not fit. */
size_t ag_http_response_raw(const struct ag_http_response *r, char *out,
                            size_t size);
/* A response whose body is obj, serialised compactly; obj stays the
 * caller's. */
int ag_http_response_json(struct ag_http_response *r, int status,
                          const json_t *obj);
/* {"status": "ok"} style bodies for probes. */
int ag_http_response_status(struct ag_http_response *r, int status,
                            const char *text);

/* The response to a check, from its plan, per-policy results and decision;
 * "device" is the plan's lane. degraded adds "degraded": true (results
 * came from a fallback). nonce (NULL or "": none), a denial's
 * "challenge_nonce" (ag_challenge.h), is borrowed. */
int ag_http_response_check(struct ag_http_response *r,
                           const struct ag_plan *plan,
                           const struct ag_limit_result *res,
                           const struct ag_decision *d, bool degraded,
                           const char *nonce);

/* The response to a check denied from the deny cache (ag_deny_cache):
 * as ag_http_response_check, for a plan of the cached denials only, each
 * decision marked "cached": true. */
int ag_http_response_cached(struct ag_http_response *r,
                            const struct ag_plan *plan,
                            const struct ag_limit_result *res,
                            const struct ag_decision *d, const char *nonce);

struct ag_list_entry;

/* The answer to an admin inspect (ag_service_inspect) of a peek plan: 200
 * whatever a check would be answered, with the check's body and
 * "inspected": true, and no Retry-After or RateLimit headers. Each
 * decision adds "blocked_for" (whole seconds of a running block) and,
 * for a policy whose blocks grow, "block_level" (the blocks in a row so
 * far). degraded: res came from the fallback; then an enforcing policy
 * that fails closed, for which a check would be a 503, is listed as
 * {"policy", "allowed": false, "limit", "unknown": true}, and the top
 * level says what the check would: "allowed": false, "reason":
 * "store_unavailable", "policy" (the first such), "retry_after": 1. */
int ag_http_response_inspect(struct ag_http_response *r,
                             const struct ag_plan *plan,
                             const struct ag_limit_result *res, bool degraded);
/* An inspect settled by a list entry: ag_http_response_listed's body and
 * "inspected": true, 200. */
int ag_http_response_inspect_listed(struct ag_http_response *r,
                                    const struct ag_list_entry *e,
                                    bool trusted);

/* The response to a check settled by an allow or deny list entry: 200
 * allowed, or 403 denied, {"allowed": ..., "list": "deny", "device":
 * "untrusted", "decisions": [{"list": "deny", "id": 7, "kind": "ip",
 * "allowed": false}]}. */
int ag_http_response_listed(struct ag_http_response *r,
                            const struct ag_list_entry *e, bool trusted);

/* The response to a check the store could not answer while the enforcing
 * policy closed fails closed: 503 with Retry-After: 1 and
 * {"allowed": false, "reason": "store_unavailable", "policy": ...,
 *  "retry_after": 1, "device": "trusted", "degraded": true}. */
int ag_http_response_unavailable(struct ag_http_response *r,
                                 const struct ag_limit_op *closed,
                                 bool trusted);

/* The answer to a successful login: 200 {"device_token": token,
 * "expires_in": ttl_s}. token is ag_device's text (no escaping needed). */
int ag_http_response_device_token(struct ag_http_response *r, const char *token,
                                  uint32_t ttl_s);

#endif
