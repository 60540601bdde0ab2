/* SPDX-License-Identifier: Apache-2.0 */
/* The request glue (ag_http_impl.h): each request from its first
 * handler call to its completion, routed (ag_http_route), answered by its
 * route's handler, and its response put on the wire; and the HTTP
 * layer's own routes. */
#include "ag_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "ag_buf.h"
#include "ag_clock.h"
#include "ag_console.h"
#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_http_conns.h"
#include "ag_http_impl.h"
#include "ag_http_range.h"
#include "ag_http_response.h"
#include "ag_http_route.h"
#include "ag_http_verdict.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_request.h"
#include "ag_service.h"
#include "ag_verdict.h"

/* A refused body is read and dropped, so that the connection can carry
 * the next request, up to this declared length; past it the answer goes
 * at once and the connection closes, as reading megabytes to save a TCP
 * handshake is a bad trade. */
#define DISCARD_MAX (1024 * 1024)

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
    if (r->body.len || r->content_type)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                                r->content_type ? r->content_type
                                                : "application/json");
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL,
                            r->cache_control ? r->cache_control : "no-store");
    if (r->etag[0])
        MHD_add_response_header(mr, MHD_HTTP_HEADER_ETAG, r->etag);
    if (r->vary)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_VARY, r->vary);
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
    /* A connection ends with a chunked request: were the framing
     * validator's reading of a chunked body and libmicrohttpd's ever to
     * differ, no second request could follow the body on it. */
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

size_t ag_http__unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    size_t len = MHD_http_unescape(s);
    if (!memchr(s, '\0', len))
        return len;
    memcpy(s, NUL_MARK, sizeof NUL_MARK);
    return sizeof NUL_MARK - 1;
}

/* api/openapi.json as compiled in, or NULL in a tree without it. */
static const struct ag_embedded_file *openapi_file(void)
{
    for (size_t i = 0; i < ag_embedded_api_count; i++)
        if (strcmp(ag_embedded_api[i].name, "openapi.json") == 0)
            return &ag_embedded_api[i];
    return NULL;
}

/* The HTTP layer's own routes. Each runs on a worker thread; ctx is the
 * server, req->arg the request's state. */

static int healthz(void *ctx, const struct ag_http_request *req,
                   struct ag_http_response *r)
{
    (void)ctx;
    (void)req;
    return ag_http_response_status(r, 200, "ok");
}

static int readyz(void *ctx, const struct ag_http_request *req,
                  struct ag_http_response *r)
{
    (void)req;
    struct ag_http *h = ctx;
    if (ag_service_ready(h->svc))
        return ag_http_response_status(r, 200, "ready");
    return ag_http_response_status(r, 503, "not ready");
}

static int metrics(void *ctx, const struct ag_http_request *req,
                   struct ag_http_response *r)
{
    (void)req;
    struct ag_http *h = ctx;
    r->status = 200;
    r->content_type = "text/plain; version=0.0.4";
    ag_buf_init(&r->body, 1024 * 1024);
    return ag_metrics_render(h->metrics, &r->body);
}

static int openapi(void *ctx, const struct ag_http_request *req,
                   struct ag_http_response *r)
{
    (void)ctx;
    (void)req;
    const struct ag_embedded_file *f = openapi_file();
    if (!f)
        return ag_http_response_error(r, 404, "no such path");
    r->status = 200;
    ag_buf_init(&r->body, f->len + 1);
    return ag_buf_append(&r->body, f->data, f->len);
}

static int range(void *ctx, const struct ag_http_request *req,
                 struct ag_http_response *r)
{
    struct ag_http *h = ctx;
    return ag_http_range(h->pwned, h->metrics, req, r);
}

/* An answer made elsewhere is ready: req goes on its loop's list, which
 * the loop's hook sends from. On the loop's thread. */
static void list_answer(struct request *req)
{
    struct ag_http__loop *hl = req->hl;
    req->listed = true;
    req->next = hl->answers;
    hl->answers = req;
    atomic_store_explicit(&hl->run, true, memory_order_relaxed);
    ag_loop_kick(hl->loop);
}

/* Frees req, its check given up (ag_http__completed). */
static void free_request(struct request *req)
{
    ag_buf_free(&req->body);
    ag_http__offload_free(req);
    free(req);
}

/* An answer made on another thread (the pool's, a store dispatcher's)
 * reaches the loop. */
static void posted_answer(void *arg)
{
    struct request *req = arg;
    atomic_store(&req->post_due, false);
    if (req->closed)
        free_request(req); /* its client went away meanwhile */
    else
        list_answer(req);
}

/* The store has answered req's check: on the loop's own thread (its
 * Redis lane) the request is listed at once; from another thread (a
 * dispatcher's, when the check could not use the lane) it is posted to
 * the loop. Inside ag_service_check_begin it is answered there. */
static void resume(void *arg)
{
    struct request *req = arg;
    if (ag_loop_self() != req->hl->loop) {
        atomic_store(&req->post_due, true);
        ag_loop_post(req->hl->loop, &req->posted);
    } else if (req->beginning)
        req->early = true;
    else
        list_answer(req);
}

/* A check of endpoint: begun, left waiting while the store answers, and
 * finished when its answer is sent (ag_http__loop_hook runs the handler
 * again); its verdict rendered. */
static int check(struct ag_http *h, const struct ag_http_request *hr,
                 enum ag_endpoint endpoint, struct ag_http_response *r)
{
    struct request *req = hr->arg;
    struct ag_verdict v;
    int rc;
    if (!req->check) {
        req->waiter = (struct ag_check_waiter){.resume = resume, .arg = req};
        req->beginning = true;
        rc = ag_service_check_begin(h->svc, endpoint, hr->body ? hr->body : "",
                                    hr->len, &req->waiter, &req->check, &v);
        req->beginning = false;
        /* A store that answered at once (an error before the call left)
         * resumed it inside the begin. */
        if (rc == AG_EPENDING && !req->early)
            return rc;
    }
    if (req->check) {
        rc = ag_service_check_finish(req->check, &v);
        req->check = NULL;
    }
    if (rc == AG_OK)
        rc = ag_http_verdict_render(r, &v);
    ag_verdict_release(&v);
    return rc;
}

static int check_login(void *ctx, const struct ag_http_request *req,
                       struct ag_http_response *r)
{
    return check(ctx, req, AG_EP_LOGIN, r);
}

static int check_otp(void *ctx, const struct ag_http_request *req,
                     struct ag_http_response *r)
{
    return check(ctx, req, AG_EP_OTP, r);
}

static int check_otp_verify(void *ctx, const struct ag_http_request *req,
                            struct ag_http_response *r)
{
    return check(ctx, req, AG_EP_OTP_VERIFY, r);
}

static int report_login(void *ctx, const struct ag_http_request *req,
                        struct ag_http_response *r)
{
    struct ag_http *h = ctx;
    struct ag_verdict v;
    int rc = ag_service_report_login(h->svc, req->body ? req->body : "",
                                     req->len, &v);
    if (rc == AG_OK)
        rc = ag_http_verdict_render(r, &v);
    ag_verdict_release(&v);
    return rc;
}

static int report_otp(void *ctx, const struct ag_http_request *req,
                      struct ag_http_response *r)
{
    struct ag_http *h = ctx;
    struct ag_verdict v;
    int rc =
        ag_service_report_otp(h->svc, req->body ? req->body : "", req->len, &v);
    if (rc == AG_OK)
        rc = ag_http_verdict_render(r, &v);
    ag_verdict_release(&v);
    return rc;
}

/* Looked up before the routes the options add; ctx is set to the server
 * when the table is built. */
static const struct ag_http_route own_routes[] = {
    {.path = "/check-login",
     .method = "POST",
     .body = true,
     .handle = check_login},
    {.path = "/check-otp", .method = "POST", .body = true, .handle = check_otp},
    {.path = "/check-otp-verify",
     .method = "POST",
     .body = true,
     .handle = check_otp_verify},
    {.path = "/report-login",
     .method = "POST",
     .body = true,
     .blocking = true,
     .handle = report_login},
    {.path = "/report-otp",
     .method = "POST",
     .body = true,
     .blocking = true,
     .handle = report_otp},
    {.path = "/healthz", .method = "GET", .handle = healthz},
    {.path = "/readyz", .method = "GET", .blocking = true, .handle = readyz},
    {.path = "/metrics", .method = "GET", .handle = metrics},
    {.path = "/openapi.json", .method = "GET", .handle = openapi},
    {.path = AG_HTTP_RANGE_PATH,
     .prefix = true,
     .method = "GET",
     .handle = range},
};

#define OWN_ROUTES (sizeof own_routes / sizeof own_routes[0])

int ag_http__routes(struct ag_http *h, const struct ag_http_route *extra,
                    size_t n, bool admin_apart)
{
    struct ag_http_route *t = calloc(OWN_ROUTES + n, sizeof *t);
    if (!t)
        return AG_ENOMEM;
    for (size_t i = 0; i < OWN_ROUTES; i++) {
        t[i] = own_routes[i];
        t[i].ctx = h;
    }
    for (size_t i = 0; i < n; i++)
        t[OWN_ROUTES + i] = extra[i];
    h->routes = t;
    h->router = (struct ag_http_router){
        .routes = t, .n = OWN_ROUTES + n, .admin_apart = admin_apart};
    return AG_OK;
}

/* What a handler reads of its request, from libmicrohttpd. */

static const char *header(void *arg, const char *name)
{
    struct request *req = arg;
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

static const char *query(void *arg, const char *name)
{
    struct request *req = arg;
    const char *v = NULL;
    size_t len;
    /* libmicrohttpd gives "?mode" a NULL value, which its plain lookup
     * cannot tell from no "mode" at all. */
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name,
                                      strlen(name), &v, &len) != MHD_YES)
        return NULL;
    return v ? v : "";
}

/* The peer's address as text in buf, for the admin API's throttle and
 * log; NULL when libmicrohttpd has none or it is not IP. */
static const char *client(void *arg, char *buf, size_t size)
{
    struct request *req = arg;
    return ag_http__peer(req->conn, buf, size);
}

static const struct ag_http_request_ops request_ops = {
    .header = header,
    .query = query,
    .client = client,
};

/* A static page, its answer decided by the route (ag_console). The body
 * is static: libmicrohttpd sends it without a copy. */
static enum MHD_Result serve_page(struct MHD_Connection *conn,
                                  const struct ag_http_route *route,
                                  const struct ag_http_request *hr)
{
    struct ag_console_answer a;
    if (route->page(route->ctx, hr, &a) != AG_OK)
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

/* req's answer is being made elsewhere (the store, the pool): it waits,
 * and the hook sends the answer for url and method. */
static void wait_elsewhere(struct request *req, const char *url,
                           const char *method)
{
    req->url = url;
    req->method = method;
    req->waiting = true;
    req->hl->waiting++;
}

/* The request is in: its route answers it. */
static enum MHD_Result serve(struct MHD_Connection *conn, const char *url,
                             const char *method, struct request *req)
{
    const struct ag_http_route *route = req->route;
    if (req->too_big)
        return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, AG_HTTP_TOO_LARGE,
                           NULL, NULL);
    struct ag_http_request hr = {
        .method = method,
        .path = url,
        .body = req->body.p,
        .len = req->body.len,
        .ops = &request_ops,
        .arg = req,
    };
    if (route->page)
        return serve_page(conn, route, &hr);
    if (route->blocking && !req->pooled) {
        /* Off the loop; the answer comes back to the hook. */
        if (ag_http__offload(req, url, method) != AG_OK)
            return reply_error(conn, 500, "internal error", NULL, NULL);
        wait_elsewhere(req, url, method);
        return MHD_YES;
    }
    struct ag_http_response r;
    int rc;
    if (req->pooled) { /* the pool's answer, taken over */
        r = req->resp;
        rc = req->resp_rc;
        ag_http_response_init(&req->resp);
    } else {
        ag_http_response_init(&r);
        rc = route->handle(route->ctx, &hr, &r);
    }
    enum MHD_Result ret;
    if (rc == AG_EPENDING) {
        /* Waiting for the store: its answer is sent by the hook. */
        wait_elsewhere(req, url, method);
        ret = MHD_YES;
    } else if (rc == AG_OK) {
        ret = send_response(conn, &r);
    } else {
        ag_log(AG_LOG_ERROR, "response", "could not build a response (%d)", rc);
        ret = reply_error(conn, 500, "internal error", NULL, NULL);
    }
    ag_http_response_free(&r);
    return ret;
}

static struct request *new_request(struct ag_http__loop *hl,
                                   struct MHD_Connection *conn, void **con_cls)
{
    struct ag_http *h = hl->h;
    struct request *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    ag_buf_init(&req->body, AG_BODY_MAX);
    req->hl = hl;
    req->conn = conn;
    /* Set before anything may post it: a store thread may answer before
     * ag_service_check_begin has returned. */
    req->posted = (struct ag_loop_task){.fn = posted_answer, .arg = req};
    *con_cls = req;
    atomic_fetch_add(&h->in_flight, 1);
    return req;
}

static enum MHD_Result defer_error(struct request *req, int status,
                                   const char *msg, const char *field,
                                   const char *allow)
{
    req->route = NULL;
    req->status = status;
    req->msg = msg;
    req->field = field;
    req->allow = allow;
    req->discard = 1;
    return MHD_YES;
}

int ag_http__conn_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* Why the request's framing is refused, or NULL. Checked before anything
 * else: a request whose framing is in doubt must not be served, because a
 * proxy in front may have read the same bytes as another request. Faults
 * in the bytes themselves never get this far: the framing validator
 * answers them as they arrive (ag_http_recv). */
static const char *framing_fault(struct MHD_Connection *conn)
{
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

/* First call for a request: route it. Every answer but the draining 503,
 * the framing's and an oversized body's waits for the end of the request
 * (see struct request). */
static enum MHD_Result begin(struct ag_http__loop *hl,
                             struct MHD_Connection *conn, const char *url,
                             const char *method, void **con_cls)
{
    struct ag_http *h = hl->h;
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
    int fd = ag_http__conn_fd(conn);
    const char *bad = framing_fault(conn);
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
        return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, AG_HTTP_TOO_LARGE,
                           NULL, NULL);
    struct request *req = new_request(hl, conn, con_cls);
    if (!req)
        return MHD_NO;
    if (strcmp(url, NUL_MARK) == 0)
        return defer_error(req, 400, "path holds an encoded NUL (%00)", "path",
                           NULL);
    struct ag_http_routing to;
    ag_http_route(&h->router, url, method,
                  ag_http_conns_tag(h->conns, fd) == AG_HTTP__ADMIN, declared,
                  &to);
    if (!to.route)
        return defer_error(req, to.status, to.msg, NULL, to.allow);
    req->route = to.route;
    req->discard = to.discard;
    return MHD_YES;
}

enum MHD_Result ag_http__handle(void *cls, struct MHD_Connection *conn,
                                const char *url, const char *method,
                                const char *version, const char *upload,
                                size_t *upload_size, void **con_cls)
{
    (void)version;
    struct ag_http__loop *hl = cls;
    struct ag_http *h = hl->h;
    struct request *req = *con_cls;
    if (!req)
        return begin(hl, conn, url, method, con_cls);
    /* Answered elsewhere: the hook sends it (libmicrohttpd calls again
     * each time it runs, until then). */
    if (req->waiting)
        return MHD_YES;
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
    ag_http_conns_busy(h->conns, ag_http__conn_fd(conn));
    if (!req->route)
        return reply_error(conn, req->status, req->msg, req->field, req->allow);
    return serve(conn, url, method, req);
}

void ag_http__completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct ag_http__loop *hl = cls;
    struct ag_http *h = hl->h;
    /* The next request's deadline starts now. */
    ag_http_conns_ready(h->conns, ag_http__conn_fd(conn), ag_clock_mono_ms());
    struct request *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    atomic_fetch_sub(&h->in_flight, 1);
    if (req->waiting)
        hl->waiting--;
    req->waiting = false;
    req->conn = NULL;
    /* A check the store still holds when its client went away is given
     * up (freed when the store answers); one answered is freed now. */
    ag_service_check_abandon(req->check);
    req->check = NULL;
    /* An answer on its way from another thread, or listed for the hook,
     * still points at req: its arrival frees it. */
    if (req->listed || atomic_load(&req->post_due))
        req->closed = true;
    else
        free_request(req);
}

/* Sends the answer made elsewhere for req, outside libmicrohttpd's run:
 * libmicrohttpd (0.9.75, without a thread of its own) takes a response
 * queued from outside the handler for a request read in full, and the
 * run that follows writes it. */
static void send_answer(struct request *req)
{
    struct ag_http__loop *hl = req->hl;
    req->waiting = false;
    hl->waiting--;
    /* Were the response refused, the connection is ended: the request
     * would otherwise wait for its deadline. */
    if (serve(req->conn, req->url, req->method, req) != MHD_YES)
        shutdown(ag_http__conn_fd(req->conn), SHUT_RDWR);
}

void ag_http__loop_drop_answers(struct ag_http__loop *hl)
{
    while (hl->answers) {
        struct request *req = hl->answers;
        hl->answers = req->next;
        if (req->closed)
            free_request(req);
        else
            req->listed = false; /* still libmicrohttpd's (not stopped) */
    }
}

int ag_http__loop_hook(void *arg)
{
    struct ag_http__loop *hl = arg;
    while (hl->answers) {
        struct request *req = hl->answers;
        hl->answers = req->next;
        req->listed = false;
        if (req->closed)
            free_request(req); /* its client went away meanwhile */
        else
            send_answer(req);
    }
    if (atomic_exchange_explicit(&hl->run, false, memory_order_relaxed))
        MHD_run(hl->daemon);
    /* Requests waiting keep libmicrohttpd's timeout at 0 (they stay on
     * its ready list), so its timeout cannot tell whether other work is
     * left without an event (a pipelined request read with the one
     * before it): libmicrohttpd runs again within WAITING_MS, else that
     * work would wait for the next answer, as long as Redis or the pool
     * takes. */
    enum { WAITING_MS = 10, IDLE_MS = 1000 };
    if (hl->waiting) {
        atomic_store_explicit(&hl->run, true, memory_order_relaxed);
        return WAITING_MS;
    }
    MHD_UNSIGNED_LONG_LONG t;
    if (MHD_get_timeout(hl->daemon, &t) != MHD_YES || t > IDLE_MS)
        t = IDLE_MS;
    /* Its work left (a timeout due, a connection with bytes read and
     * not yet parsed) needs a run without any event. */
    if (t == 0)
        atomic_store_explicit(&hl->run, true, memory_order_relaxed);
    return (int)t;
}
