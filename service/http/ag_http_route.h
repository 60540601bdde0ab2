/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP router: what a route is (a path or a prefix, its method,
 * whether it reads the body, the listener that serves it, and the handler
 * that answers it), the request a handler sees, and the routing of a
 * request's head to one route or to the error it is answered with.
 *
 * The HTTP layer serves its own routes (the checks, the reports, the
 * probes) and whatever routes the layers above hand it in a table
 * (struct ag_http_options): the admin part registers its API and its
 * console this way (ag_admin_routes), as nginx's modules register their
 * handlers with the core, so that the HTTP layer never calls them by
 * name. Routing is pure (no libmicrohttpd): ag_http glues it to the wire.
 *
 * The server copies the table it is given; the contexts its routes point
 * to are borrowed and must outlive it. Handlers run on the HTTP worker
 * threads, many at once; a request and everything it points to are valid
 * only during the call.
 */
#ifndef AG_HTTP_ROUTE_H
#define AG_HTTP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_http_response.h"
#include "ag_request.h"

/* The 413's message, from the cap it enforces. */
#define AG_HTTP_STR(n) #n
#define AG_HTTP_TOO_LARGE_TEXT(n) "body is larger than " AG_HTTP_STR(n) " KiB"
#define AG_HTTP_TOO_LARGE AG_HTTP_TOO_LARGE_TEXT(AG_BODY_MAX_KIB)

struct ag_console_answer;

/* How a handler reads what the request carries beyond its line and body;
 * arg is the request's. Each returns NULL when there is none. */
struct ag_http_request_ops {
    /* A header's value; name is matched without regard to case. */
    const char *(*header)(void *arg, const char *name);
    /* A query argument's value, decoded; "" for a name given without a
     * value ("?mode"), as for "?mode=", so that neither reads as absent. */
    const char *(*query)(void *arg, const char *name);
    /* The peer's IP address as text in buf (size bytes), or NULL when it
     * has none (a unix socket). */
    const char *(*client)(void *arg, char *buf, size_t size);
};

/* A request as a handler sees it. */
struct ag_http_request {
    const char *method;
    const char *path; /* decoded, without the query */
    const char *body; /* NUL-terminated; NULL when empty or not read */
    size_t len;       /* bytes of body */
    const struct ag_http_request_ops *ops;
    void *arg; /* the server's, for ops */
};

const char *ag_http_request_header(const struct ag_http_request *r,
                                   const char *name);
const char *ag_http_request_query(const struct ag_http_request *r,
                                  const char *name);
const char *ag_http_request_client(const struct ag_http_request *r, char *buf,
                                   size_t size);
/* Whether an If-None-Match value names etag (quoted): "*" as the whole
 * value, or a comma-separated list holding it, weak ("W/") or not, as
 * RFC 9110 13.1.2 compares for a GET. */
bool ag_http_etag_matches(const char *if_none_match, const char *etag);

/* Answers req into resp (initialised, empty: the handler may give its
 * body another cap with ag_buf_init) for the route whose ctx it is.
 * Returns AG_OK to send resp; AG_EPENDING when the request is parked
 * (the HTTP layer's own check routes only: the handler then runs again
 * when it is resumed); any other code is answered 500. */
typedef int (*ag_http_handler_fn)(void *ctx, const struct ag_http_request *req,
                                  struct ag_http_response *resp);
/* Answers req with a static page (ag_console.h's answer: body and header
 * values static, sent without a copy). Returns AG_OK, or an error that is
 * answered 404 "no such path". */
typedef int (*ag_http_page_fn)(void *ctx, const struct ag_http_request *req,
                               struct ag_console_answer *out);

struct ag_http_route {
    /* The path served; with prefix, also every path below it: path + "/"
     * and on, or, when path ends in "/", every path that starts so. */
    const char *path;
    bool prefix;
    /* The one method served (HEAD too for GET; any other is a 405 with
     * Allow); NULL: every method, the handler answers each. */
    const char *method;
    /* The body is read for the handler (capped at AG_BODY_MAX, a 413 past
     * it); false: it is read and dropped. */
    bool body;
    /* Served on the admin listener when one is apart (--admin-listen),
     * and then only there; every other route only on the public one. */
    bool admin;
    /* The handler may block (SQLite, a synchronous Redis call): it runs
     * on the HTTP layer's pool, off the check loops, and reads its
     * request from a copy (every header, query argument, the path). */
    bool blocking;
    ag_http_handler_fn handle; /* answers with a response; or, NULL, */
    ag_http_page_fn page;      /* with a static page */
    void *ctx;
};

/* The routes a server serves, looked up in order (first match wins), and
 * whether an admin listener is apart. */
struct ag_http_router {
    const struct ag_http_route *routes;
    size_t n;
    bool admin_apart;
};

/* Where a request's head was routed: to route, or, NULL, to the error
 * answer status with msg (and Allow: allow for a 405). */
struct ag_http_routing {
    const struct ag_http_route *route;
    int status;
    const char *msg;   /* static */
    const char *allow; /* static; NULL: none */
    bool discard;      /* the body is not wanted: read and dropped */
};

/* The first route of rt that serves path, or NULL. */
const struct ag_http_route *ag_http_route_find(const struct ag_http_router *rt,
                                               const char *path);

/* Routes a request for path with method, which arrived on the admin
 * listener (on_admin) or the public one, declaring a body of declared
 * bytes (0 when it declares none), into out:
 *   - with an admin listener apart, a route marked admin is a 404 on the
 *     public listener, and any other path a 404 on the admin one;
 *   - a path no route serves is a 404, a method the route does not serve
 *     a 405 with Allow;
 *   - a route that reads the body is a 413 when declared passes
 *     AG_BODY_MAX; any other answer drops the body.
 * Every answer but the route's waits for the end of the request. */
void ag_http_route(const struct ag_http_router *rt, const char *path,
                   const char *method, bool on_admin,
                   unsigned long long declared, struct ag_http_routing *out);

#endif
