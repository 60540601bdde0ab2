/* SPDX-License-Identifier: Apache-2.0 */
/* The server's life (ag_http_impl.h): the listeners, the accepting
 * thread that admits connections to the table (ag_http_conns) and hands
 * them to the check loops (ag_http_loop.c), the pool for the routes that
 * may block, and the start, quiesce and stop of it all. Each request
 * then belongs to the glue (ag_http.c). */
/* accept4(2) and pipe2(2) */
#define _GNU_SOURCE

#include "ag_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_http_conns.h"
#include "ag_http_impl.h"
#include "ag_http_recv.h"
#include "ag_http_response.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_service.h"

/* A connection table that a failed start could not free (ag_http_start). */
static struct ag_http_conns *kept_conns;

static unsigned cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* One check loop a core: a loop never blocks (what may runs on the
 * pool), so a second one a core would only share the core. */
static unsigned loop_count(const struct ag_http_options *o)
{
    return o->threads ? o->threads : cores();
}

/* The pool runs the admin API, the reports and the probes, which block
 * on SQLite or on a Redis round trip: two threads a core keep a core
 * busy while the other waits. */
static unsigned pool_size(void)
{
    return 2 * cores();
}

int ag_http_reserve_fds(const struct ag_http_options *o, struct ag_error *err)
{
    /* Beyond the connections: the listener, stdio, the Redis dispatchers
     * and probe, the SQLite files of the watcher and the admin API with
     * their journals, with room to spare; and each loop's epoll and
     * wake-up descriptors, its daemon's epoll and its Redis lanes. */
    enum { FIXED = 64, PER_LOOP = 8 };
    rlim_t need =
        (rlim_t)o->max_conns + FIXED + (rlim_t)PER_LOOP * loop_count(o);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return ag_error_set(err, AG_EIO, "max-conns",
                            "cannot read the open-files limit: %s",
                            strerror(errno));
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return AG_OK;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        return ag_error_set(
            err, AG_EINVAL, "max-conns",
            "--max-conns %u needs %llu open files, but the hard limit "
            "(ulimit -Hn) is %llu; lower --max-conns or raise the limit",
            o->max_conns, (unsigned long long)need,
            (unsigned long long)rl.rlim_max);
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return ag_error_set(err, AG_EIO, "max-conns",
                            "cannot raise the open-files limit to %llu: %s",
                            (unsigned long long)need, strerror(errno));
    return AG_OK;
}

static void build_refusal(struct ag_http__refusal *r, const char *why)
{
    struct ag_http_response resp;
    ag_http_response_init(&resp);
    resp.retry_after = 1;
    r->len = ag_http_response_error(&resp, 503, why) == AG_OK
                 ? ag_http_response_raw(&resp, r->text, sizeof r->text)
                 : 0;
    ag_http_response_free(&resp);
}

/* Answers a connection the table refused without libmicrohttpd: one
 * non-blocking send of a canned 503 (a fresh socket's buffer takes it
 * whole), then the end. What the client sent already is read first, as
 * closing a socket with unread input resets it and may destroy the
 * answer on the way. */
static void refuse(const struct ag_http__refusal *r, int fd)
{
    ssize_t sent = send(fd, r->text, r->len, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)sent;
    shutdown(fd, SHUT_WR);
    char sink[4096];
    while (read(fd, sink, sizeof sink) > 0)
        ;
    close(fd);
}

/* Accepts what is waiting on one listener, in a bounded batch. Returns
 * false when the process is out of descriptors. */
static bool accept_batch(struct ag_http *h, enum ag_http__listener l)
{
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(h->listen_fd[l], (struct sockaddr *)&ss, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            return !(errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                     errno == ENOMEM);
        }
        switch (ag_http_conns_admit(h->conns, fd, (struct sockaddr *)&ss,
                                    (int)l, ag_clock_mono_ms())) {
        case AG_HTTP_ADMITTED:
            ag_http__loop_add(h, fd, (struct sockaddr *)&ss, len);
            break;
        case AG_HTTP_FULL:
            refuse(&h->full, fd);
            break;
        case AG_HTTP_PER_IP_FULL:
            refuse(&h->per_ip, fd);
            break;
        case AG_HTTP_BAD_FD:
            close(fd);
            break;
        }
    }
    return true;
}

static void publish_conn_stats(struct ag_http *h)
{
    struct ag_http_conns_stats st;
    ag_http_conns_stats(h->conns, &st);
    ag_metrics_set(h->metrics, AG_M_HTTP_CONNECTIONS, (int64_t)st.live);
    ag_metrics_set(h->metrics, AG_M_HTTP_RECLAIMED, (int64_t)st.reclaimed);
    ag_metrics_set(h->metrics, AG_M_HTTP_EXPIRED, (int64_t)st.expired);
    ag_metrics_set(h->metrics, AG_M_HTTP_REFUSED, (int64_t)st.refused);
}

/* The accepting thread: takes new connections to the table and
 * libmicrohttpd, and ends those past their deadline, every SWEEP_MS. */
static void *acceptor_main(void *arg)
{
    struct ag_http *h = arg;
    enum { SWEEP_MS = 100, PAUSE_MS = 50 };
    bool paused = false; /* out of descriptors: listeners not polled */
    for (;;) {
        struct pollfd p[AG_HTTP__LISTENERS + 1];
        nfds_t n = 0;
        enum ag_http__listener which[AG_HTTP__LISTENERS];
        p[n++] = (struct pollfd){.fd = h->wake[0], .events = POLLIN};
        for (int l = 0; l < AG_HTTP__LISTENERS && !paused; l++)
            if (h->listen_fd[l] >= 0) {
                which[n - 1] = (enum ag_http__listener)l;
                p[n++] =
                    (struct pollfd){.fd = h->listen_fd[l], .events = POLLIN};
            }
        int ready = poll(p, n, paused ? PAUSE_MS : SWEEP_MS);
        if (ready > 0 && (p[0].revents & POLLIN))
            break;
        ag_http_conns_sweep(h->conns, ag_clock_mono_ms());
        paused = false;
        for (nfds_t i = 1; i < n && ready > 0; i++)
            if ((p[i].revents & POLLIN) && !accept_batch(h, which[i - 1])) {
                /* A descriptor frees when a connection closes; until
                 * then a readable listener would spin this loop. */
                paused = true;
                ag_log(AG_LOG_WARN, "accept_paused",
                       "out of file descriptors; accepting again in %d ms",
                       PAUSE_MS);
            }
        publish_conn_stats(h);
    }
    return NULL;
}

static int open_listener(const struct ag_http_listen *a, const char *flag,
                         char unix_path[108], int *out, struct ag_error *err)
{
    int fd = -1;
    if (!a->host[0]) {
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        snprintf(un.sun_path, sizeof un.sun_path, "%s", a->path);
        /* A socket left by an earlier run is replaced; anything else at
         * the path is not touched. */
        struct stat st;
        if (lstat(a->path, &st) == 0 && S_ISSOCK(st.st_mode))
            unlink(a->path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        /* Only the service's user may connect: the token is the admin
         * API's lock, the file mode its fence. */
        mode_t old = umask(0177);
        int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&un, sizeof un);
        umask(old);
        if (rc == 0 && listen(fd, 1024) == 0) {
            snprintf(unix_path, 108, "%s", a->path);
            *out = fd;
            return AG_OK;
        }
        ag_error_fill(err, AG_EIO, flag, "--%s: cannot listen on unix://%s: %s",
                      flag, a->path, strerror(errno));
    } else {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        socklen_t len;
        struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, a->host, &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons((uint16_t)a->port);
            len = sizeof *v4;
        } else {
            inet_pton(AF_INET6, a->host, &v6->sin6_addr);
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons((uint16_t)a->port);
            len = sizeof *v6;
        }
        fd =
            socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (ss.ss_family == AF_INET6)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        }
        if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) == 0 &&
            listen(fd, 1024) == 0) {
            *out = fd;
            return AG_OK;
        }
        ag_error_fill(err, AG_EIO, flag, "--%s: cannot listen on %s:%d: %s",
                      flag, a->host, a->port, strerror(errno));
    }
    if (fd >= 0)
        close(fd);
    return AG_EIO;
}

static void close_listeners(struct ag_http *h)
{
    for (int l = 0; l < AG_HTTP__LISTENERS; l++) {
        if (h->listen_fd[l] >= 0)
            close(h->listen_fd[l]);
        h->listen_fd[l] = -1;
        if (h->unix_path[l][0])
            unlink(h->unix_path[l]);
        h->unix_path[l][0] = '\0';
    }
}

static void free_http(struct ag_http *h)
{
    close_listeners(h);
    if (h->wake[0] >= 0) {
        close(h->wake[0]);
        close(h->wake[1]);
    }
    ag_http_conns_free(h->conns);
    free(h->routes);
    free(h);
}

int ag_http_start(const struct ag_http_options *o, struct ag_service *svc,
                  struct ag_metrics *metrics, struct ag_http **out,
                  struct ag_error *err)
{
    struct ag_http *h = calloc(1, sizeof *h);
    if (!h)
        return AG_ENOMEM;
    h->svc = svc;
    h->metrics = metrics;
    h->pwned = o->pwned;
    h->listen_fd[AG_HTTP__PUBLIC] = h->listen_fd[AG_HTTP__ADMIN] = -1;
    h->wake[0] = h->wake[1] = -1;
    atomic_init(&h->draining, false);
    atomic_init(&h->in_flight, 0);
    build_refusal(&h->full, "too many connections; try again");
    build_refusal(&h->per_ip, "too many connections from this address");
    if (ag_http__routes(h, o->routes, o->nroutes, o->admin_apart)) {
        free(h);
        return AG_ENOMEM;
    }

    /* The table is indexed by descriptor, so it spans the open-files
     * limit that ag_http_reserve_fds set. */
    struct rlimit rl;
    int fd_limit = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fd_limit = rl.rlim_cur < 1048576 ? (int)rl.rlim_cur : 1048576;
    int rc = ag_http_conns_new(
        &(struct ag_http_conns_opts){
            .max_conns = o->max_conns,
            .max_per_ip = o->max_conns_per_ip,
            .deadline_ms = (uint64_t)o->conn_timeout_s * 1000u,
            .fd_limit = fd_limit,
        },
        &h->conns);
    if (rc) {
        free(h->routes);
        free(h);
        return rc;
    }
    if (pipe2(h->wake, O_CLOEXEC) != 0) {
        h->wake[0] = h->wake[1] = -1;
        free_http(h);
        return ag_error_set(err, AG_EIO, "listen", "pipe: %s", strerror(errno));
    }
    if (open_listener(&o->listen, "listen", h->unix_path[AG_HTTP__PUBLIC],
                      &h->listen_fd[AG_HTTP__PUBLIC], err) ||
        (o->admin_apart && open_listener(&o->admin_listen, "admin-listen",
                                         h->unix_path[AG_HTTP__ADMIN],
                                         &h->listen_fd[AG_HTTP__ADMIN], err))) {
        free_http(h);
        return AG_EIO;
    }

    rc = ag_pool_new(pool_size(), &h->pool);
    if (rc) {
        free_http(h);
        return ag_error_set(err, AG_EIO, "listen", "cannot start the pool: %s",
                            strerror(rc));
    }
    rc = ag_http__loops_start(h, o, loop_count(o), fd_limit, err);
    if (rc) {
        ag_pool_free(h->pool);
        free_http(h);
        return rc;
    }
    ag_http_recv_watch(h->conns);
    if (pthread_create(&h->acceptor, NULL, acceptor_main, h) != 0) {
        ag_http_recv_watch(NULL);
        ag_pool_free(h->pool);
        ag_http__loops_stop(h);
        /* Watched a moment, so a recv on a store or webhook thread may be
         * reading the table still: it is kept (the process is about to
         * exit), where ag_http_free would free it after those threads. */
        kept_conns = h->conns;
        h->conns = NULL;
        free_http(h);
        return ag_error_set(err, AG_EIO, "listen",
                            "cannot start the accepting thread");
    }
    h->acceptor_running = true;
    *out = h;
    return AG_OK;
}

/* Stops accepting: the acceptor ends and the listeners close, so a load
 * balancer's next connection goes elsewhere at once; requests on open
 * connections get a 503 with Connection: close. */
void ag_http_quiesce(struct ag_http *h)
{
    atomic_store(&h->draining, true);
    if (h->acceptor_running) {
        char one = 1;
        ssize_t w = write(h->wake[1], &one, 1);
        (void)w;
        pthread_join(h->acceptor, NULL);
        h->acceptor_running = false;
    }
    close_listeners(h);
}

void ag_http_stop(struct ag_http *h)
{
    ag_http_quiesce(h);
    /* Let requests already begun finish, for up to DRAIN_MS. */
    enum { DRAIN_MS = 10000, STEP_MS = 5 };
    struct timespec step = {0, STEP_MS * 1000000L};
    for (int waited = 0; waited < DRAIN_MS && atomic_load(&h->in_flight) > 0;
         waited += STEP_MS)
        nanosleep(&step, NULL);
    /* Past the drain, a check the store still holds will resume its
     * connection: better answered than given up. The store's timeouts
     * bound this wait. */
    if (ag_service_waiting(h->svc) > 0)
        ag_log(AG_LOG_WARN, "drain_waiting",
               "%zu checks still wait for Redis; stopping when they end",
               ag_service_waiting(h->svc));
    while (ag_service_waiting(h->svc) > 0)
        nanosleep(&step, NULL);
    /* The pool's requests end (and post their answers to the loops, which
     * still run), then the loops and their daemons. */
    ag_pool_free(h->pool);
    h->pool = NULL;
    ag_http__loops_stop(h);
    /* Unwatched now, but a recv on another thread may have read the
     * table just before: it is freed by ag_http_free, after them. */
    ag_http_recv_watch(NULL);
    close_listeners(h);
}

void ag_http_free(struct ag_http *h)
{
    if (h)
        free_http(h);
}
