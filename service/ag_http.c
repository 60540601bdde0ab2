#include "ag_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "ag_admin.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"

#include "ag_request.h"

/* The 413's message, from the cap it enforces. */
#define STR(n) #n
#define TOO_LARGE_TEXT(n) "body is larger than " STR(n) " KiB"
#define TOO_LARGE TOO_LARGE_TEXT(AG_BODY_MAX_KIB)

/* A refused body is read and dropped, so that the connection can carry
 * the next request, up to this declared length; past it the answer goes
 * at once and the connection closes, as reading megabytes to save a TCP
 * handshake is a bad trade. */
#define DISCARD_MAX (1024 * 1024)

struct ag_http {
    struct MHD_Daemon *daemon;
    struct ag_service *svc;
    struct ag_metrics *metrics;
    struct ag_admin *admin; /* NULL: the admin API is off (404) */
    atomic_bool draining;   /* stopping: new requests get a 503 */
    atomic_int in_flight;   /* requests begun and not yet completed */
};

enum route {
    R_ERROR, /* an answer decided from the headers alone */
    R_CHECK, /* of the route's endpoint */
    R_REPORT_LOGIN,
    R_HEALTHZ,
    R_READYZ,
    R_METRICS,
    R_ADMIN,
};

struct route_def {
    const char *path;
    enum route route;
    const char *method;        /* the one method served; HEAD also for GET */
    enum ag_endpoint endpoint; /* R_CHECK */
};

static const struct route_def routes[] = {
    {"/check-login", R_CHECK, "POST", AG_EP_LOGIN},
    {"/check-otp", R_CHECK, "POST", AG_EP_OTP},
    {"/check-otp-verify", R_CHECK, "POST", AG_EP_OTP_VERIFY},
    {"/report-login", R_REPORT_LOGIN, "POST", AG_EP_LOGIN},
    {"/healthz", R_HEALTHZ, "GET", AG_EP_LOGIN},
    {"/readyz", R_READYZ, "GET", AG_EP_LOGIN},
    {"/metrics", R_METRICS, "GET", AG_EP_LOGIN},
};

/* Per-request state, from the first handler call to the completed
 * callback. */
struct request {
    enum route route;
    enum ag_endpoint endpoint; /* R_CHECK */
    /* R_ERROR: the answer. libmicrohttpd closes the connection after a
     * response queued before the request was read in full, so even this
     * one waits for the end of the request. */
    int status;
    const char *msg;   /* static */
    const char *field; /* static; NULL: no field at fault */
    const char *allow; /* static; NULL: no Allow header */
    int too_big;       /* the body passed AG_BODY_MAX; it is being discarded */
    int discard;       /* the body is not wanted; it is read and dropped */
    struct ag_buf body;
    /* A check waiting for the store: the service suspends the connection
     * through waiter and resumes it when the answer is ready. */
    struct ag_check *check;
    struct MHD_Connection *conn;
    struct ag_check_waiter waiter;
};

static void add_uint_header(struct MHD_Response *mr, const char *name,
                            uint32_t v)
{
    char out[AG_UINT_TEXT + 1];
    size_t len;
    out[AG_UINT_TEXT] = '\0';
    MHD_add_response_header(mr, name, ag_uint_text(out, v, &len));
}

static enum MHD_Result send_response(struct MHD_Connection *conn,
                                     struct ag_http_response *r)
{
    struct MHD_Response *mr = MHD_create_response_from_buffer(
        r->body.len, r->body.p ? r->body.p : (char *)"", MHD_RESPMEM_MUST_COPY);
    if (!mr)
        return MHD_NO;
    if (r->body.len)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                                r->content_type ? r->content_type
                                                : "application/json");
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r->rate_headers) {
        add_uint_header(mr, "X-RateLimit-Limit", r->rl_limit);
        add_uint_header(mr, "X-RateLimit-Remaining", r->rl_remaining);
        add_uint_header(mr, "X-RateLimit-Reset", r->rl_reset);
    }
    if (r->retry_after)
        add_uint_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after);
    if (r->allow)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (r->www_authenticate)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"abuseguard\"");
    if (r->close)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");

    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r->status, mr);
    MHD_destroy_response(mr);
    return ret;
}

/* Builds and sends a response in one go; the usual end of a request.
 * field (NULL: none) is the part of the request at fault. */
static enum MHD_Result reply_error(struct MHD_Connection *conn, int status,
                                   const char *msg, const char *field,
                                   const char *allow)
{
    struct ag_http_response r;
    ag_http_response_init(&r);
    r.allow = allow;
    enum MHD_Result ret =
        ag_http_response_field_error(&r, status, msg, field) == AG_OK
            ? send_response(conn, &r)
            : MHD_NO;
    ag_http_response_free(&r);
    return ret;
}

/* libmicrohttpd hands the handler the decoded path as a C string, so a
 * %00 would cut it short: /admin/policies/a%00b would name the policy a,
 * /healthz%00abc would be /healthz. A decoded NUL turns the whole string
 * (the path, or one query argument) into NUL_MARK instead, which no
 * route matches and begin() answers with a 400. The mark fits: the
 * string held at least the three bytes of its %00. */
#define NUL_MARK "%00"

static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    size_t len = MHD_http_unescape(s);
    if (!memchr(s, '\0', len))
        return len;
    memcpy(s, NUL_MARK, sizeof NUL_MARK);
    return sizeof NUL_MARK - 1;
}

static const struct route_def *find_route(const char *url)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(url, routes[i].path) == 0)
            return &routes[i];
    return NULL;
}

static enum MHD_Result
serve_probe(struct ag_http *h, struct MHD_Connection *conn, enum route route)
{
    struct ag_http_response r;
    ag_http_response_init(&r);
    int rc;
    if (route == R_HEALTHZ) {
        rc = ag_http_response_status(&r, 200, "ok");
    } else if (route == R_METRICS) {
        r.status = 200;
        r.content_type = "text/plain; version=0.0.4";
        ag_buf_init(&r.body, 1024 * 1024);
        rc = ag_metrics_render(h->metrics, &r.body);
    } else if (ag_service_ready(h->svc))
        rc = ag_http_response_status(&r, 200, "ready");
    else
        rc = ag_http_response_status(&r, 503, "not ready");
    enum MHD_Result ret = rc == AG_OK ? send_response(conn, &r) : MHD_NO;
    ag_http_response_free(&r);
    return ret;
}

static void suspend(void *arg)
{
    struct request *req = arg;
    MHD_suspend_connection(req->conn);
}

/* From a store thread: hands the connection back to its worker, which then
 * calls the handler again to finish the check. */
static void resume(void *arg)
{
    struct request *req = arg;
    MHD_resume_connection(req->conn);
}

static enum MHD_Result
serve_check(struct ag_http *h, struct MHD_Connection *conn, struct request *req)
{
    if (req->too_big)
        return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, TOO_LARGE, NULL,
                           NULL);
    struct ag_http_response r;
    ag_http_response_init(&r);
    const char *body = req->body.p ? req->body.p : "";
    int rc;
    if (req->check) {
        /* Resumed: the store has answered. */
        rc = ag_service_check_finish(req->check, &r);
        req->check = NULL;
    } else if (req->route == R_REPORT_LOGIN) {
        rc = ag_service_report_login(h->svc, body, req->body.len, &r);
    } else {
        req->conn = conn;
        req->waiter = (struct ag_check_waiter){
            .suspend = suspend, .resume = resume, .arg = req};
        rc = ag_service_check_begin(h->svc, req->endpoint, body, req->body.len,
                                    &req->waiter, &req->check, &r);
        if (rc == AG_EPENDING) {
            /* Suspended; the handler runs again once it is resumed. */
            ag_http_response_free(&r);
            return MHD_YES;
        }
    }

    enum MHD_Result ret;
    if (rc == AG_OK) {
        ret = send_response(conn, &r);
    } else {
        ag_log(AG_LOG_ERROR, "response", "could not build a response (%d)", rc);
        ret = reply_error(conn, 500, "internal error", NULL, NULL);
    }
    ag_http_response_free(&r);
    return ret;
}

/* The peer's address as text in buf, for the admin API's throttle and
 * log; NULL when libmicrohttpd has none or it is not IP. */
static const char *client_address(struct MHD_Connection *conn, char *buf,
                                  socklen_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return NULL;
    const struct sockaddr *sa = ci->client_addr;
    const void *addr = NULL;
    if (sa->sa_family == AF_INET)
        addr = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    else if (sa->sa_family == AF_INET6)
        addr = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (!addr || !inet_ntop(sa->sa_family, addr, buf, size))
        return NULL;
    return buf;
}

static enum MHD_Result serve_admin(struct ag_http *h,
                                   struct MHD_Connection *conn, const char *url,
                                   const char *method, struct request *req)
{
    if (req->too_big)
        return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, TOO_LARGE, NULL,
                           NULL);
    char client[INET6_ADDRSTRLEN];
    struct ag_admin_request ar = {
        .method = method,
        .path = url,
        .client = client_address(conn, client, sizeof client),
        .authorization = MHD_lookup_connection_value(
            conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        .limit =
            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "limit"),
        .before =
            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "before"),
        .body = req->body.p,
        .len = req->body.len,
    };
    struct ag_http_response r;
    ag_http_response_init(&r);
    ag_buf_init(&r.body, AG_ADMIN_RESPONSE_MAX);
    enum MHD_Result ret =
        ag_admin_handle(h->admin, &ar, &r) == AG_OK

            ? send_response(conn, &r)
            : reply_error(conn, 500, "internal error", NULL, NULL);
    ag_http_response_free(&r);
    return ret;
}

static struct request *new_request(struct ag_http *h, void **con_cls)
{
    struct request *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    ag_buf_init(&req->body, AG_BODY_MAX);
    *con_cls = req;
    atomic_fetch_add(&h->in_flight, 1);
    return req;
}

static enum MHD_Result defer_error(struct request *req, int status,
                                   const char *msg, const char *field,
                                   const char *allow)
{
    req->route = R_ERROR;
    req->status = status;
    req->msg = msg;
    req->field = field;
    req->allow = allow;
    req->discard = 1;
    return MHD_YES;
}

/* First call for a request: route it. Every answer but the draining 503
 * waits for the end of the request (see struct request). */
static enum MHD_Result begin(struct ag_http *h, struct MHD_Connection *conn,
                             const char *url, const char *method,
                             void **con_cls)
{
    if (atomic_load(&h->draining)) {
        /* Stopping: the client should go to another instance, on another
         * connection. */
        struct ag_http_response r;
        ag_http_response_init(&r);
        r.retry_after = 1;
        r.close = true;
        enum MHD_Result ret =
            ag_http_response_error(&r, 503, "shutting down") == AG_OK
                ? send_response(conn, &r)
                : MHD_NO;
        ag_http_response_free(&r);
        return ret;
    }
    struct request *req = new_request(h, con_cls);
    if (!req)
        return MHD_NO;
    if (strcmp(url, NUL_MARK) == 0)
        return defer_error(req, 400, "path holds an encoded NUL (%00)", "path",
                           NULL);
    if (strncmp(url, "/admin/", 7) == 0) {
        if (!h->admin)
            return defer_error(req, MHD_HTTP_NOT_FOUND,
                               "the admin API is off (no --admin-token-file)",
                               NULL, NULL);
        req->route = R_ADMIN;
        return MHD_YES;
    }
    const struct route_def *rd = find_route(url);
    if (!rd)
        return defer_error(req, MHD_HTTP_NOT_FOUND, "no such path", NULL, NULL);

    int get = strcmp(rd->method, "GET") == 0;
    if (strcmp(method, rd->method) != 0 &&
        !(get && strcmp(method, "HEAD") == 0))
        return defer_error(req, MHD_HTTP_METHOD_NOT_ALLOWED,
                           "method not allowed", NULL,
                           get ? "GET, HEAD" : rd->method);
    req->route = rd->route;
    req->endpoint = rd->endpoint;
    if (get) {
        req->discard = 1;
        return MHD_YES;
    }

    const char *cl = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
    if (declared > DISCARD_MAX)
        return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, TOO_LARGE, NULL,
                           NULL);
    if (declared > AG_BODY_MAX)
        return defer_error(req, MHD_HTTP_CONTENT_TOO_LARGE, TOO_LARGE, NULL,
                           NULL);
    return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    struct ag_http *h = cls;
    struct request *req = *con_cls;
    if (!req)
        return begin(h, conn, url, method, con_cls);
    if (*upload_size) {
        if (!req->too_big && !req->discard &&
            ag_buf_append(&req->body, upload, *upload_size) != AG_OK) {
            req->too_big = 1;
            ag_buf_free(&req->body);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    switch (req->route) {
    case R_ERROR:
        return reply_error(conn, req->status, req->msg, req->field, req->allow);
    case R_HEALTHZ:
    case R_READYZ:
    case R_METRICS:
        return serve_probe(h, conn, req->route);
    case R_ADMIN:
        return serve_admin(h, conn, url, method, req);
    case R_CHECK:
    case R_REPORT_LOGIN:
        break;
    }
    return serve_check(h, conn, req);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    struct ag_http *h = cls;
    struct request *req = *con_cls;
    if (req) {
        ag_buf_free(&req->body);
        /* A check still held here was suspended for Redis when its client
         * went away: resumed, the connection closed without the handler
         * running again to finish it. */
        ag_service_check_abandon(req->check);
        free(req);
        *con_cls = NULL;
        atomic_fetch_sub(&h->in_flight, 1);
    }
}

static unsigned cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* Checks wait for Redis suspended, not blocking their worker; two
 * workers a core measured best (the admin API and probes still block on
 * SQLite or Redis for a moment). */
static unsigned worker_count(const struct ag_config *cfg)
{
    return cfg->threads ? cfg->threads : 2 * cores();
}

int ag_http_reserve_fds(const struct ag_config *cfg, struct ag_error *err)
{
    /* Beyond the connections: the listener, stdio, the Redis dispatchers
     * and probe, the SQLite files of the watcher and the admin API with
     * their journals, with room to spare; and each worker's epoll and
     * wake-up descriptors. */
    enum { FIXED = 64, PER_WORKER = 3 };
    rlim_t need =
        (rlim_t)cfg->max_conns + FIXED + (rlim_t)PER_WORKER * worker_count(cfg);
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
            cfg->max_conns, (unsigned long long)need,
            (unsigned long long)rl.rlim_max);
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return ag_error_set(err, AG_EIO, "max-conns",
                            "cannot raise the open-files limit to %llu: %s",
                            (unsigned long long)need, strerror(errno));
    return AG_OK;
}

int ag_http_start(const struct ag_config *cfg, struct ag_service *svc,
                  struct ag_metrics *metrics, struct ag_admin *admin,
                  struct ag_http **out, struct ag_error *err)
{
    struct ag_http *h = calloc(1, sizeof *h);
    if (!h)
        return AG_ENOMEM;
    h->svc = svc;
    h->metrics = metrics;
    h->admin = admin;

    atomic_init(&h->draining, false);
    atomic_init(&h->in_flight, 0);

    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags =
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;

    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, cfg->listen_host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)cfg->listen_port);
    } else {
        inet_pton(AF_INET6, cfg->listen_host, &v6->sin6_addr);
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)cfg->listen_port);
        flags |= MHD_USE_IPv6;
    }
    unsigned threads = worker_count(cfg);

    h->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->listen_port, NULL, NULL, handle, h,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
        cfg->conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT, cfg->max_conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_conns_per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->max_header_bytes,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_UNESCAPE_CALLBACK,
        unescape, NULL, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
        MHD_OPTION_END);
    if (!h->daemon) {
        ag_error_fill(err, AG_EIO, "listen", "cannot listen on %s:%d: %s",
                      cfg->listen_host, cfg->listen_port, strerror(errno));
        free(h);
        return AG_EIO;
    }
    *out = h;
    return AG_OK;
}

/* Not MHD_quiesce_daemon: with a thread pool on epoll, libmicrohttpd
 * 0.9.75 removes the listening socket from a worker's epoll set from two
 * threads at once when that worker is awake, and aborts on the loser's
 * ENOENT (seen once in a few hundred SIGTERMs under load). */
void ag_http_quiesce(struct ag_http *h)
{
    atomic_store(&h->draining, true);
}

void ag_http_stop(struct ag_http *h)
{
    /* Let requests already begun finish, for up to DRAIN_MS. */
    enum { DRAIN_MS = 10000, STEP_MS = 5 };
    struct timespec step = {0, STEP_MS * 1000000L};
    for (int waited = 0; waited < DRAIN_MS && atomic_load(&h->in_flight) > 0;
         waited += STEP_MS)
        nanosleep(&step, NULL);
    /* Past the drain, a check the store still holds will resume its
     * connection: stopping the daemon first would free what it resumes.
     * The store's timeouts bound this wait. */
    if (ag_service_waiting(h->svc) > 0)
        ag_log(AG_LOG_WARN, "drain_waiting",
               "%zu checks still wait for Redis; stopping when they end",
               ag_service_waiting(h->svc));
    while (ag_service_waiting(h->svc) > 0)
        nanosleep(&step, NULL);
    MHD_stop_daemon(h->daemon);
    free(h);
}
