/* SPDX-License-Identifier: Apache-2.0 */
/* accept4(2) and pipe2(2) */
#define _GNU_SOURCE

#include "ag_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include "ag_admin.h"
#include "ag_clock.h"
#include "ag_console.h"
#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_http_conns.h"
#include "ag_http_recv.h"
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

/* A connection table that a failed start could not free (ag_http_start). */
static struct ag_http_conns *kept_conns;

/* The listeners, as tagged in the connection table. */
enum listener { L_PUBLIC, L_ADMIN, L_COUNT };

/* The canned answers of the accepting thread, which refuses a connection
 * before libmicrohttpd ever sees it. */
struct refusal {
    char text[512];
    size_t len;
};

struct ag_http {
    struct MHD_Daemon *daemon;
    struct ag_service *svc;
    struct ag_metrics *metrics;
    struct ag_admin *admin; /* NULL: the admin API is off (404) */
    bool admin_apart;       /* --admin-listen: admin only on L_ADMIN */
    atomic_bool draining;   /* stopping: new requests get a 503 */
    atomic_int in_flight;   /* requests begun and not yet completed */
    struct ag_http_conns *conns;
    int listen_fd[L_COUNT];       /* -1: none */
    char unix_path[L_COUNT][108]; /* unix sockets to unlink at stop */
    int wake[2];                  /* a pipe that stops the acceptor */
    pthread_t acceptor;
    bool acceptor_running;
    struct refusal full, per_ip; /* 503s for the two refusals */
};

enum route {
    R_ERROR, /* an answer decided from the headers alone */
    R_CHECK, /* of the route's endpoint */
    R_REPORT_LOGIN,
    R_REPORT_OTP,
    R_HEALTHZ,
    R_READYZ,
    R_METRICS,
    R_OPENAPI,
    R_ADMIN,
    R_CONSOLE, /* the admin console's page: no token */
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
    {"/report-otp", R_REPORT_OTP, "POST", AG_EP_OTP},
    {"/healthz", R_HEALTHZ, "GET", AG_EP_LOGIN},
    {"/readyz", R_READYZ, "GET", AG_EP_LOGIN},
    {"/metrics", R_METRICS, "GET", AG_EP_LOGIN},
    {"/openapi.json", R_OPENAPI, "GET", AG_EP_LOGIN},
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
    if (r->rl_policy_field.len) {
        MHD_add_response_header(mr, "RateLimit-Policy", r->rl_policy_field.p);
        MHD_add_response_header(mr, "RateLimit", r->rl_field.p);
    }
    if (r->allow)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (r->www_authenticate)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"abuseguard\"");
    /* The stream after a chunked body is not followed by the framing
     * validator (ag_http_wire), so such a connection ends with its
     * request. */
    if (r->close ||
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_TRANSFER_ENCODING))
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONNECTION, "close");

    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r->status, mr);
    MHD_destroy_response(mr);
    return ret;
}

/* Builds and sends a response in one go; the usual end of a request.
 * field (NULL: none) is the part of the request at fault. */
static enum MHD_Result reply(struct MHD_Connection *conn, int status,
                             const char *msg, const char *field,
                             const char *allow, bool close)
{
    struct ag_http_response r;
    ag_http_response_init(&r);
    r.allow = allow;
    r.close = close;
    enum MHD_Result ret =
        ag_http_response_field_error(&r, status, msg, field) == AG_OK
            ? send_response(conn, &r)
            : MHD_NO;
    ag_http_response_free(&r);
    return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, int status,
                                   const char *msg, const char *field,
                                   const char *allow)
{
    return reply(conn, status, msg, field, allow, false);
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

/* api/openapi.json as compiled in, or NULL in a tree without it. */
static const struct ag_embedded_file *openapi_file(void)
{
    for (size_t i = 0; i < ag_embedded_api_count; i++)
        if (strcmp(ag_embedded_api[i].name, "openapi.json") == 0)
            return &ag_embedded_api[i];
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
    } else if (route == R_OPENAPI) {
        const struct ag_embedded_file *f = openapi_file();
        if (!f) {
            rc = ag_http_response_error(&r, 404, "no such path");
        } else {
            r.status = 200;
            ag_buf_init(&r.body, f->len + 1);
            rc = ag_buf_append(&r.body, f->data, f->len);
        }
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
    const char *body = req->body.p ? req->body.p : "";
    struct ag_verdict v;
    int rc;
    if (req->check) {
        /* Resumed: the store has answered. */
        rc = ag_service_check_finish(req->check, &v);
        req->check = NULL;
    } else if (req->route == R_REPORT_LOGIN) {
        rc = ag_service_report_login(h->svc, body, req->body.len, &v);
    } else if (req->route == R_REPORT_OTP) {
        rc = ag_service_report_otp(h->svc, body, req->body.len, &v);
    } else {
        req->conn = conn;
        req->waiter = (struct ag_check_waiter){
            .suspend = suspend, .resume = resume, .arg = req};
        rc = ag_service_check_begin(h->svc, req->endpoint, body, req->body.len,
                                    &req->waiter, &req->check, &v);
        if (rc == AG_EPENDING)
            return MHD_YES; /* the handler runs again once resumed */
    }
    struct ag_http_response r;
    ag_http_response_init(&r);
    if (rc == AG_OK)
        rc = ag_http_response_verdict(&r, &v);
    ag_verdict_release(&v);

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
        .by = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "by"),
        .window_s = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
                                                "window_s"),
        .after =
            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after"),
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

/* A console file, its answer decided by ag_console. The body is static:
 * libmicrohttpd sends it without a copy. */
static enum MHD_Result serve_console(struct MHD_Connection *conn,
                                     const char *url, const char *method)
{
    struct ag_console_answer a;
    if (ag_console_answer(
            method, url,
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                        MHD_HTTP_HEADER_IF_NONE_MATCH),
            &a) != AG_OK)
        return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such path", NULL,
                           NULL);
    struct MHD_Response *mr = MHD_create_response_from_buffer(
        a.len, (void *)a.body, MHD_RESPMEM_PERSISTENT);
    if (!mr)
        return MHD_NO;
    for (const struct ag_console_header *h = ag_console_headers; h->name; h++)
        MHD_add_response_header(mr, h->name, h->value);
    if (a.status != 304 && a.content_type)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                                a.content_type);
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, a.cache);
    if (a.etag)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_ETAG, a.etag);
    if (a.allow)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, a.allow);
    if (a.location)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_LOCATION, a.location);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)a.status, mr);
    MHD_destroy_response(mr);
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

static int conn_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* Why the request's framing is refused, or NULL. Checked before anything
 * else: a request whose framing is in doubt must not be served, because a
 * proxy in front may have read the same bytes as another request. */
static const char *framing_fault(struct ag_http *h, struct MHD_Connection *conn,
                                 int fd)
{
    struct ag_wire *w = ag_http_conns_wire(h->conns, fd);
    enum ag_wire_fault f = w ? ag_wire_feed(w, NULL, 0) : AG_WIRE_OK;
    if (f != AG_WIRE_OK && f != AG_WIRE_UNTRACKED)
        return ag_wire_fault_text(f);
    if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_TRANSFER_ENCODING) &&
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_CONTENT_LENGTH))
        return "Content-Length together with Transfer-Encoding";
    return NULL;
}

/* An answer at once, closing the connection after it: for requests whose
 * body cannot be trusted to end where it claims. */
static enum MHD_Result reply_closing(struct MHD_Connection *conn, int status,
                                     const char *msg, const char *field)
{
    return reply(conn, status, msg, field, NULL, true);
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
    int fd = conn_fd(conn);
    const char *bad = framing_fault(h, conn, fd);
    if (bad)
        return reply_closing(conn, 400, bad, "framing");
    const char *te = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (te && strcasecmp(te, "chunked") != 0)
        return reply_closing(conn, 501,
                             "Transfer-Encoding other than chunked is not "
                             "supported",
                             "Transfer-Encoding");
    /* Past DISCARD_MAX the answer goes at once, whatever the route: every
     * other answer waits for the body, which a client may never send. */
    const char *cl = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
    if (declared > DISCARD_MAX)
        return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, TOO_LARGE, NULL,
                           NULL);
    struct request *req = new_request(h, con_cls);
    if (!req)
        return MHD_NO;
    if (strcmp(url, NUL_MARK) == 0)
        return defer_error(req, 400, "path holds an encoded NUL (%00)", "path",
                           NULL);
    int tag = ag_http_conns_tag(h->conns, fd);
    bool admin_path = strncmp(url, "/admin/", 7) == 0;
    if (h->admin_apart && (tag == L_ADMIN) != admin_path)
        return defer_error(req, MHD_HTTP_NOT_FOUND,
                           admin_path ? "the admin API is on --admin-listen"
                                      : "only /admin/ is served here",
                           NULL, NULL);
    if (admin_path) {
        if (!h->admin)
            return defer_error(req, MHD_HTTP_NOT_FOUND,
                               "the admin API is off (no --admin-token-file)",
                               NULL, NULL);
        if (ag_console_path(url)) {
            /* The page holds no data: it is served before, and without,
             * the token check of every other admin route. */
            req->route = R_CONSOLE;
            req->discard = 1;
            return MHD_YES;
        }
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
    /* The whole request is in: its deadline stops while it is answered. */
    ag_http_conns_busy(h->conns, conn_fd(conn));
    switch (req->route) {
    case R_ERROR:
        return reply_error(conn, req->status, req->msg, req->field, req->allow);
    case R_HEALTHZ:
    case R_READYZ:
    case R_METRICS:
    case R_OPENAPI:
        return serve_probe(h, conn, req->route);
    case R_ADMIN:
        return serve_admin(h, conn, url, method, req);
    case R_CONSOLE:
        return serve_console(conn, url, method);
    case R_CHECK:
    case R_REPORT_LOGIN:
    case R_REPORT_OTP:
        break;
    }
    return serve_check(h, conn, req);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct ag_http *h = cls;
    /* The next request's deadline starts now. */
    ag_http_conns_ready(h->conns, conn_fd(conn), ag_clock_mono_ms());
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

static void notify_connection(void *cls, struct MHD_Connection *conn,
                              void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
    (void)socket_context;
    struct ag_http *h = cls;
    /* Called before libmicrohttpd closes the descriptor, so the table
     * never holds a descriptor that may already be another's. */
    if (code == MHD_CONNECTION_NOTIFY_CLOSED)
        ag_http_conns_closed(h->conns, conn_fd(conn));
}

static void build_refusal(struct refusal *r, const char *why)
{
    char body[256];
    int blen = snprintf(body, sizeof body, "{\"error\":\"%s\"}", why);
    int n = snprintf(r->text, sizeof r->text,
                     "HTTP/1.1 503 Service Unavailable\r\n"
                     "Content-Type: application/json\r\n"
                     "Cache-Control: no-store\r\n"
                     "Retry-After: 1\r\n"
                     "Connection: close\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     blen, body);
    r->len = n > 0 ? (size_t)n : 0;
}

/* Answers a connection the table refused without libmicrohttpd: one
 * non-blocking send of a canned 503 (a fresh socket's buffer takes it
 * whole), then the end. What the client sent already is read first, as
 * closing a socket with unread input resets it and may destroy the
 * answer on the way. */
static void refuse(const struct refusal *r, int fd)
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
static bool accept_batch(struct ag_http *h, enum listener l)
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
            /* On failure libmicrohttpd has closed fd. */
            if (MHD_add_connection(h->daemon, fd, (struct sockaddr *)&ss,
                                   len) != MHD_YES)
                ag_http_conns_closed(h->conns, fd);
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
        struct pollfd p[L_COUNT + 1];
        nfds_t n = 0;
        enum listener which[L_COUNT];
        p[n++] = (struct pollfd){.fd = h->wake[0], .events = POLLIN};
        for (int l = 0; l < L_COUNT && !paused; l++)
            if (h->listen_fd[l] >= 0) {
                which[n - 1] = (enum listener)l;
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

static int open_listener(const struct ag_listen_addr *a, const char *flag,
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
    for (int l = 0; l < L_COUNT; l++) {
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
    free(h);
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
    h->admin_apart = cfg->admin_listen_set;
    h->listen_fd[L_PUBLIC] = h->listen_fd[L_ADMIN] = -1;
    h->wake[0] = h->wake[1] = -1;
    atomic_init(&h->draining, false);
    atomic_init(&h->in_flight, 0);
    build_refusal(&h->full, "too many connections; try again");
    build_refusal(&h->per_ip, "too many connections from this address");

    /* The table is indexed by descriptor, so it spans the open-files
     * limit that ag_http_reserve_fds set. */
    struct rlimit rl;
    int fd_limit = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fd_limit = rl.rlim_cur < 1048576 ? (int)rl.rlim_cur : 1048576;
    int rc = ag_http_conns_new(
        &(struct ag_http_conns_opts){
            .max_conns = cfg->max_conns,
            .max_per_ip = cfg->max_conns_per_ip,
            .deadline_ms = (uint64_t)cfg->conn_timeout_s * 1000u,
            .fd_limit = fd_limit,
        },
        &h->conns);
    if (rc) {
        free(h);
        return rc;
    }
    if (pipe2(h->wake, O_CLOEXEC) != 0) {
        h->wake[0] = h->wake[1] = -1;
        free_http(h);
        return ag_error_set(err, AG_EIO, "listen", "pipe: %s", strerror(errno));
    }
    if (open_listener(&cfg->listen, "listen", h->unix_path[L_PUBLIC],
                      &h->listen_fd[L_PUBLIC], err) ||
        (cfg->admin_listen_set &&
         open_listener(&cfg->admin_listen, "admin-listen",
                       h->unix_path[L_ADMIN], &h->listen_fd[L_ADMIN], err))) {
        free_http(h);
        return AG_EIO;
    }

    /* libmicrohttpd takes connections from the acceptor only; its own
     * limit is the table's size, so that it never refuses one the table
     * admitted. */
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, h, MHD_OPTION_THREAD_POOL_SIZE,
        worker_count(cfg), MHD_OPTION_CONNECTION_TIMEOUT, cfg->conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)fd_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->max_header_bytes,
        MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_UNESCAPE_CALLBACK, unescape,
        NULL, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, notify_connection, h, MHD_OPTION_END);
    if (!h->daemon) {
        ag_error_fill(err, AG_EIO, "listen", "cannot start the HTTP server: %s",
                      strerror(errno));
        free_http(h);
        return AG_EIO;
    }
    ag_http_recv_watch(h->conns);
    if (pthread_create(&h->acceptor, NULL, acceptor_main, h) != 0) {
        ag_http_recv_watch(NULL);
        MHD_stop_daemon(h->daemon);
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
     * connection: stopping the daemon first would free what it resumes.
     * The store's timeouts bound this wait. */
    if (ag_service_waiting(h->svc) > 0)
        ag_log(AG_LOG_WARN, "drain_waiting",
               "%zu checks still wait for Redis; stopping when they end",
               ag_service_waiting(h->svc));
    while (ag_service_waiting(h->svc) > 0)
        nanosleep(&step, NULL);
    MHD_stop_daemon(h->daemon);
    h->daemon = NULL;
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
