/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server's internals, shared by its two files and by no other
 * module: ag_http_server.c owns the server's life (the listeners, the
 * accepting thread, libmicrohttpd's start and stop) and hands every
 * request to ag_http.c, the request glue (routing, the HTTP layer's own
 * routes, turning responses into wire responses). Calls go one way, from
 * the server into the glue's callbacks, never back; the names carry a
 * double underscore, as libuv marks its internal ones.
 *
 * Thread-safety is ag_http.h's: the glue runs on libmicrohttpd's worker
 * threads, the acceptor on its own; what they share is atomic or
 * ag_http_conns' (locked).
 */
#ifndef AG_HTTP_IMPL_H
#define AG_HTTP_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "ag_http.h"
#include "ag_http_route.h"

/* The listeners, as tagged in the connection table. */
enum ag_http__listener {
    AG_HTTP__PUBLIC,
    AG_HTTP__ADMIN,
    AG_HTTP__LISTENERS,
};

/* A canned answer of the accepting thread, which refuses a connection
 * before libmicrohttpd ever sees it. */
struct ag_http__refusal {
    char text[512];
    size_t len;
};

struct ag_http {
    struct MHD_Daemon *daemon;
    struct ag_service *svc;
    struct ag_metrics *metrics;
    struct ag_pwned_live *pwned; /* GET /range's corpora; NULL: none */
    /* The HTTP layer's own routes, then the options' (owned table). */
    struct ag_http_router router;
    struct ag_http_route *routes;
    atomic_bool draining; /* stopping: new requests get a 503 */
    atomic_int in_flight; /* requests begun and not yet completed */
    struct ag_http_conns *conns;
    int listen_fd[AG_HTTP__LISTENERS];       /* -1: none */
    char unix_path[AG_HTTP__LISTENERS][108]; /* unix sockets to unlink */
    int wake[2]; /* a pipe that stops the acceptor */
    pthread_t acceptor;
    bool acceptor_running;
    struct ag_http__refusal full, per_ip; /* 503s for the two refusals */
};

/* Builds h's route table (h->routes, h->router): the HTTP layer's own
 * routes, then the n of extra, in order. Returns AG_OK or AG_ENOMEM. */
int ag_http__routes(struct ag_http *h, const struct ag_http_route *extra,
                    size_t n, bool admin_apart);

/* The glue's libmicrohttpd callbacks; cls is the server. */
enum MHD_Result ag_http__handle(void *cls, struct MHD_Connection *conn,
                                const char *url, const char *method,
                                const char *version, const char *upload,
                                size_t *upload_size, void **con_cls);
void ag_http__completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);
size_t ag_http__unescape(void *cls, struct MHD_Connection *conn, char *s);

/* The connection's descriptor, or -1. */
int ag_http__conn_fd(struct MHD_Connection *conn);

#endif
