/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP layer: libmicrohttpd glue. Accepts connections itself (the
 * limits of struct ag_http_options, ag_http_conns), routes requests
 * (ag_http_route), enforces the body cap (64 KiB, a 413 past it) and
 * turns ag_http_response values into wire responses. It holds no business
 * logic: a check goes to ag_service_check_begin and _finish, and its
 * verdict is rendered by ag_http_verdict_render.
 *
 * Its own routes: POST /check-login, /check-otp, /check-otp-verify,
 * /report-login, /report-otp; GET /healthz, /readyz, /metrics,
 * /openapi.json; and the range API, GET /range/{prefix} (ag_http_range).
 * The layers above add theirs in the options' table (the admin API and
 * its console under /admin/: ag_admin_routes). Unknown
 * paths are 404, a known path with another method 405 with Allow.
 *
 * Four files hold it (ag_http_impl.h): ag_http_server.c (listeners, the
 * accepting thread, start and stop), ag_http_loop.c (the check loops:
 * one ag_loop a core, each driving its own libmicrohttpd daemon in
 * external epoll mode), ag_http.c (the request glue) and ag_http_pool.c
 * (the pool that runs the routes that may block: the admin API, the
 * reports, /readyz). A check is read, begun, sent to Redis on the loop's
 * own lane, answered and written on one loop's thread.
 */
#ifndef AG_HTTP_H
#define AG_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_error.h"
#include "ag_http_route.h"

struct ag_http;
struct ag_metrics;
struct ag_pwned_live;
struct ag_service;

/* Where to serve: a numeric TCP address and port, or a unix socket. */
struct ag_http_listen {
    char host[64];  /* numeric address to bind; empty: the unix socket */
    int port;       /* TCP only */
    char path[108]; /* unix only: the socket path */
};

/* What a server is made of; main.c fills it from the configuration. */
struct ag_http_options {
    struct ag_http_listen listen;
    /* With admin_apart, the routes marked admin are served on
     * admin_listen and only there (--admin-listen); the public listener
     * then answers 404 for them. */
    bool admin_apart;
    struct ag_http_listen admin_listen;
    unsigned conn_timeout_s;   /* a whole request within it */
    unsigned max_conns;        /* concurrent connections at most */
    unsigned max_conns_per_ip; /* of them from one address at most */
    unsigned max_header_bytes; /* per-connection memory for headers */
    unsigned threads;          /* check loops; 0 = one per core */
    /* Routes served beside the HTTP layer's own, after them, in order
     * (ag_http_route.h). The table is copied; the contexts its routes
     * point to are borrowed and must outlive the server. */
    const struct ag_http_route *routes;
    size_t nroutes;
    /* The breached-password corpora GET /range answers from (borrowed,
     * must outlive the server); NULL: none, every range is a 404. */
    struct ag_pwned_live *pwned;
};

/* Raises the process's soft open-files limit (RLIMIT_NOFILE), never
 * lowering it, to what --max-conns connections need with a margin for
 * the rest of the process. Returns 0; AG_EINVAL with a message naming
 * --max-conns when the hard limit is lower than that; AG_EIO when the
 * limit cannot be read or set. Call it before any thread starts. */
int ag_http_reserve_fds(const struct ag_http_options *o, struct ag_error *err);
/* Starts serving as o says (o is read during the call only); svc and
 * metrics (for /metrics) are borrowed. Returns 0 and the server in
 * *out, or a negative code with a message in err. */
int ag_http_start(const struct ag_http_options *o, struct ag_service *svc,
                  struct ag_metrics *metrics, struct ag_http **out,
                  struct ag_error *err);
/* Stops taking new requests: each gets a 503 with Retry-After and
 * Connection: close. In-flight requests go on. */
void ag_http_quiesce(struct ag_http *h);
/* Waits for in-flight requests and closes every connection. */
void ag_http_stop(struct ag_http *h);
/* Frees h (NULL: nothing), once no thread of the process can be in
 * recv(2): the interposed recv (ag_http_recv) reads h's connection table
 * on every thread, the Redis dispatchers', the subscriber's and libcurl's
 * included, so they must have stopped first. */
void ag_http_free(struct ag_http *h);

#endif
