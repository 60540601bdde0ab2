/* SPDX-License-Identifier: Apache-2.0 */
/* The check loops (ag_http_impl.h): one ag_loop a core, each with its
 * own libmicrohttpd daemon in external epoll mode, so that a connection's
 * requests are read, begun, answered and written on its loop's thread,
 * and the Redis lane of that loop (ag_redis_pipe.h) carries their checks
 * without a hand-off between threads. The accepting thread hands each
 * admitted connection to the loop with the fewest, once. */
#include "ag_http.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <microhttpd.h>

#include "ag_http_conns.h"
#include "ag_http_impl.h"
#include "ag_log.h"
#include "ag_metrics.h"

/* An admitted connection on its way to a loop. */
struct handoff {
    struct ag_loop_task task;
    struct ag_http__loop *hl;
    int fd;
    socklen_t len;
    struct sockaddr_storage ss;
};

static void notify_connection(void *cls, struct MHD_Connection *conn,
                              void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
    (void)socket_context;
    struct ag_http__loop *hl = cls;
    /* Called before libmicrohttpd closes the descriptor, so the table
     * never holds a descriptor that may already be another's. */
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        ag_http_conns_closed(hl->h->conns, ag_http__conn_fd(conn));
        atomic_fetch_sub(&hl->conns, 1);
    }
}

/* On the loop: the connection joins its daemon. */
static void take(void *arg)
{
    struct handoff *ho = arg;
    struct ag_http__loop *hl = ho->hl;
    /* On failure libmicrohttpd has closed the descriptor. */
    if (MHD_add_connection(hl->daemon, ho->fd, (struct sockaddr *)&ho->ss,
                           ho->len) != MHD_YES) {
        ag_http_conns_closed(hl->h->conns, ho->fd);
        atomic_fetch_sub(&hl->conns, 1);
    }
    atomic_store(&hl->run, true);
    free(ho);
}

void ag_http__loop_add(struct ag_http *h, int fd, const struct sockaddr *sa,
                       socklen_t len)
{
    struct ag_http__loop *hl = &h->loops[0];
    for (unsigned i = 1; i < h->nloops; i++)
        if (atomic_load(&h->loops[i].conns) < atomic_load(&hl->conns))
            hl = &h->loops[i];
    struct handoff *ho = malloc(sizeof *ho);
    if (!ho || len > sizeof ho->ss) {
        free(ho);
        ag_http_conns_closed(h->conns, fd);
        close(fd);
        return;
    }
    *ho =
        (struct handoff){.task = {.fn = take}, .hl = hl, .fd = fd, .len = len};
    ho->task.arg = ho;
    memcpy(&ho->ss, sa, len);
    atomic_fetch_add(&hl->conns, 1);
    ag_loop_post(hl->loop, &ho->task);
}

/* libmicrohttpd's epoll descriptor is readable: run it this iteration. */
static void mhd_ready(void *arg, uint32_t events)
{
    (void)events;
    struct ag_http__loop *hl = arg;
    atomic_store_explicit(&hl->run, true, memory_order_relaxed);
}

static int start_one(struct ag_http *h, struct ag_http__loop *hl,
                     const struct ag_http_options *o, int fd_limit,
                     struct ag_error *err)
{
    hl->h = h;
    atomic_init(&hl->run, false);
    atomic_init(&hl->conns, 0);
    int rc = ag_loop_new(&hl->loop);
    if (rc)
        return ag_error_set(err, AG_EIO, "listen", "cannot make a loop: %s",
                            strerror(rc));
    /* libmicrohttpd takes connections from the acceptor only; its own
     * limit is the table's size, so that it never refuses one the table
     * admitted. */
    unsigned flags = MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET;
    hl->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, ag_http__handle, hl,
        MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)fd_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)o->max_header_bytes,
        MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_UNESCAPE_CALLBACK,
        ag_http__unescape, NULL, MHD_OPTION_NOTIFY_COMPLETED,
        ag_http__completed, hl, MHD_OPTION_NOTIFY_CONNECTION, notify_connection,
        hl, MHD_OPTION_END);
    const union MHD_DaemonInfo *di =
        hl->daemon ? MHD_get_daemon_info(hl->daemon, MHD_DAEMON_INFO_EPOLL_FD)
                   : NULL;
    if (!di)
        return ag_error_set(err, AG_EIO, "listen",
                            "cannot start the HTTP server: %s",
                            strerror(errno));
    hl->mhd =
        (struct ag_loop_watch){.fd = di->epoll_fd, .fn = mhd_ready, .arg = hl};
    hl->hook = (struct ag_loop_hook){.fn = ag_http__loop_hook, .arg = hl};
    /* The hook first: the checks it begins go out in the same iteration,
     * by the Redis lanes' hooks that the first checks add after it. */
    ag_loop_hook(hl->loop, &hl->hook);
    rc = ag_loop_watch(hl->loop, &hl->mhd, EPOLLIN);
    if (!rc)
        rc = ag_loop_start(hl->loop);
    if (rc)
        return ag_error_set(err, AG_EIO, "listen",
                            "cannot start a check loop: %s", strerror(rc));
    return AG_OK;
}

int ag_http__loops_start(struct ag_http *h, const struct ag_http_options *o,
                         unsigned n, int fd_limit, struct ag_error *err)
{
    h->loops = calloc(n, sizeof *h->loops);
    if (!h->loops)
        return AG_ENOMEM;
    h->nloops = n;
    for (unsigned i = 0; i < n; i++) {
        int rc = start_one(h, &h->loops[i], o, fd_limit, err);
        if (rc) {
            ag_http__loops_stop(h);
            return rc;
        }
    }
    ag_metrics_set(h->metrics, AG_M_CHECK_LOOPS, (int64_t)n);
    return AG_OK;
}

void ag_http__loops_stop(struct ag_http *h)
{
    for (unsigned i = 0; i < h->nloops; i++)
        if (h->loops[i].loop)
            ag_loop_stop(h->loops[i].loop);
    /* No loop runs: each daemon is stopped from here, closing its
     * connections (their requests complete, their checks are given up). */
    for (unsigned i = 0; i < h->nloops; i++) {
        struct ag_http__loop *hl = &h->loops[i];
        if (hl->daemon)
            MHD_stop_daemon(hl->daemon);
        /* An answer listed but never sent: its request completed with
         * the daemon, and is freed here. */
        ag_http__loop_drop_answers(hl);
        ag_loop_free(hl->loop);
    }
    free(h->loops);
    h->loops = NULL;
    h->nloops = 0;
}
