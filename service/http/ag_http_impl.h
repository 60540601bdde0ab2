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

#include <sys/socket.h>

#include <microhttpd.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_loop.h"
#include "ag_pool.h"

#include "ag_http.h"
#include "ag_http_route.h"
#include "ag_service.h"

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

struct ag_http__loop;

/* A blocking route's request as the pool's handler reads it: a copy of
 * the path, the method, every header and query argument and the peer,
 * since the connection may close (and libmicrohttpd free them) while the
 * handler runs. */
struct ag_http__copy {
    char *method, *path;
    char *client; /* NULL: none */
    size_t n;
    struct {
        int kind; /* MHD_HEADER_KIND or MHD_GET_ARGUMENT_KIND */
        char *key, *value;
    } * v;
};

/* Per-request state, from the first handler call to the completed
 * callback (and, for a request on the pool, until the pool is done with
 * it). Everything is the loop thread's but post_due. */
struct request {
    struct ag_http__loop *hl;
    /* The route, or NULL: an answer decided from the head alone, sent at
     * the end of the request (libmicrohttpd closes the connection after
     * a response queued before the request was read in full). */
    const struct ag_http_route *route;
    int status;
    const char *msg;   /* static */
    const char *field; /* static; NULL: no field at fault */
    const char *allow; /* static; NULL: no Allow header */
    int too_big;       /* the body passed AG_BODY_MAX; it is being discarded */
    int discard;       /* the body is not wanted; it is read and dropped */
    struct ag_buf body;
    struct MHD_Connection *conn;
    const char *url, *method; /* libmicrohttpd's, while the request lives */
    /* Answered elsewhere: a check by the store, a blocking route by the
     * pool. Until then libmicrohttpd calls the handler again each time it
     * runs, which finds waiting and returns; the answer is sent from the
     * loop's hook (ag_http__loop_hook), outside libmicrohttpd. */
    bool waiting;
    bool beginning;       /* inside ag_service_check_begin */
    bool early;           /* answered inside it, on the loop: finished inline */
    bool listed;          /* on hl->answers */
    bool closed;          /* completed while listed: freed by the hook */
    struct request *next; /* hl->answers */
    struct ag_loop_task posted; /* an answer from another thread */
    /* A check waiting for the store. */
    struct ag_check *check;
    struct ag_check_waiter waiter;
    /* An answer is on its way from another thread (ag_loop_post): its
     * arrival, not the completed callback, frees the request. */
    atomic_bool post_due;
    /* A blocking route's request, run on the pool. */
    bool pooled;
    struct ag_pool_task work;
    struct ag_http__copy copy;
    struct ag_http_response resp;
    int resp_rc;
};

/* A check loop (ag_loop) with its own libmicrohttpd daemon, driven from
 * the loop (MHD_USE_EPOLL without a thread of its own: its epoll
 * descriptor is watched by the loop, and MHD_run runs in the loop's
 * hook). Everything but run, conns and the posted tasks is the loop
 * thread's. */
struct ag_http__loop {
    struct ag_http *h;
    struct ag_loop *loop;
    struct MHD_Daemon *daemon;
    struct ag_loop_watch mhd; /* libmicrohttpd's epoll descriptor */
    struct ag_loop_hook hook; /* answers, then runs libmicrohttpd */
    atomic_bool run;          /* libmicrohttpd has work this iteration */
    atomic_uint conns;        /* connections handed to it, not closed */
    unsigned waiting;         /* requests answered elsewhere, pending */
    struct request *answers;  /* answered elsewhere, to send (a stack) */
};

struct ag_http {
    struct ag_http__loop *loops;
    unsigned nloops;
    struct ag_pool *pool; /* the routes that may block */
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

/* The glue's libmicrohttpd callbacks; cls is the loop. */
enum MHD_Result ag_http__handle(void *cls, struct MHD_Connection *conn,
                                const char *url, const char *method,
                                const char *version, const char *upload,
                                size_t *upload_size, void **con_cls);
void ag_http__completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);
size_t ag_http__unescape(void *cls, struct MHD_Connection *conn, char *s);

/* The connection's descriptor, or -1. */
int ag_http__conn_fd(struct MHD_Connection *conn);

/* The loop's hook (ag_http.c): sends what was answered elsewhere, then
 * runs libmicrohttpd; returns the milliseconds until it must run again,
 * or -1. */
int ag_http__loop_hook(void *arg);

/* Empties hl's answer list once its loop and daemon have stopped,
 * freeing the requests the daemon completed while they were listed. */
void ag_http__loop_drop_answers(struct ag_http__loop *hl);

/* The loops' life (ag_http_loop.c). ag_http__loops_start makes n loops,
 * each with its daemon, and starts them: AG_OK, or an error in err with
 * nothing left running. ag_http__loop_add hands an admitted connection
 * to the loop with the fewest (from the accepting thread).
 * ag_http__loops_stop stops the loops, then their daemons, which close
 * what is still open. */
/* A blocking route's request, on the pool (ag_http_pool.c): copies what
 * the handler reads of it (req->copy: url, method, the connection's
 * headers, query and peer), then runs the route's handler on a pool
 * thread into req->resp and req->resp_rc, and posts req->posted to the
 * request's loop. AG_OK, or AG_ENOMEM with nothing submitted. */
int ag_http__offload(struct request *req, const char *url, const char *method);
/* The peer's IP address as text in buf (size bytes), or NULL when
 * libmicrohttpd has none or it is not IP (a unix socket). */
const char *ag_http__peer(struct MHD_Connection *conn, char *buf, size_t size);
/* Frees req->copy and req->resp. */
void ag_http__offload_free(struct request *req);

int ag_http__loops_start(struct ag_http *h, const struct ag_http_options *o,
                         unsigned n, int fd_limit, struct ag_error *err);
void ag_http__loop_add(struct ag_http *h, int fd, const struct sockaddr *sa,
                       socklen_t len);
void ag_http__loops_stop(struct ag_http *h);

#endif
