/* SPDX-License-Identifier: Apache-2.0 */
/* The routes that may block (ag_http_impl.h): their handlers run on the
 * pool, off the check loops, reading their request from a copy. */
#include "ag_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>
#include <sodium.h>

#include "ag_error.h"
#include "ag_http_impl.h"

struct collect {
    struct ag_http__copy *c;
    size_t cap;
    bool failed;
};

static enum MHD_Result keep(void *cls, enum MHD_ValueKind kind, const char *key,
                            const char *value)
{
    struct collect *k = cls;
    struct ag_http__copy *c = k->c;
    if (c->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 16;
        void *v = realloc(c->v, cap * sizeof *c->v);
        if (!v) {
            k->failed = true;
            return MHD_NO;
        }
        c->v = v;
        k->cap = cap;
    }
    /* "?mode" has no value, which reads as "" (ag_http_route.h). */
    char *kk = strdup(key), *vv = strdup(value ? value : "");
    if (!kk || !vv) {
        free(kk);
        free(vv);
        k->failed = true;
        return MHD_NO;
    }
    c->v[c->n].kind = (int)kind;
    c->v[c->n].key = kk;
    c->v[c->n].value = vv;
    c->n++;
    return MHD_YES;
}

const char *ag_http__peer(struct MHD_Connection *conn, char *buf, size_t size)
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
    if (!addr || !inet_ntop(sa->sa_family, addr, buf, (socklen_t)size))
        return NULL;
    return buf;
}

/* The peer's address as text, copied, or NULL (a unix socket). */
static char *peer(struct MHD_Connection *conn)
{
    char buf[INET6_ADDRSTRLEN];
    return ag_http__peer(conn, buf, sizeof buf) ? strdup(buf) : NULL;
}

static int take_copy(struct request *req, const char *url, const char *method)
{
    struct ag_http__copy *c = &req->copy;
    struct collect k = {.c = c};
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, keep, &k);
    if (!k.failed)
        MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, keep, &k);
    c->method = strdup(method);
    c->path = strdup(url);
    c->client = peer(req->conn);
    return k.failed || !c->method || !c->path ? AG_ENOMEM : AG_OK;
}

static const char *find(struct request *req, int kind, const char *name)
{
    const struct ag_http__copy *c = &req->copy;
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].kind == kind && strcasecmp(c->v[i].key, name) == 0)
            return c->v[i].value;
    return NULL;
}

static const char *header(void *arg, const char *name)
{
    return find(arg, MHD_HEADER_KIND, name);
}

static const char *query(void *arg, const char *name)
{
    return find(arg, MHD_GET_ARGUMENT_KIND, name);
}

static const char *client(void *arg, char *buf, size_t size)
{
    struct request *req = arg;
    if (!req->copy.client || strlen(req->copy.client) >= size)
        return NULL;
    memcpy(buf, req->copy.client, strlen(req->copy.client) + 1);
    return buf;
}

static const struct ag_http_request_ops copy_ops = {
    .header = header,
    .query = query,
    .client = client,
};

/* On a pool thread. */
static void work(void *arg)
{
    struct request *req = arg;
    struct ag_http_request hr = {
        .method = req->copy.method,
        .path = req->copy.path,
        .body = req->body.p,
        .len = req->body.len,
        .ops = &copy_ops,
        .arg = req,
    };
    req->resp_rc = req->route->handle(req->route->ctx, &hr, &req->resp);
    ag_loop_post(req->hl->loop, &req->posted);
}

int ag_http__offload(struct request *req, const char *url, const char *method)
{
    ag_http_response_init(&req->resp);
    if (take_copy(req, url, method) != AG_OK)
        return AG_ENOMEM;
    req->pooled = true;
    atomic_store(&req->post_due, true);
    req->work = (struct ag_pool_task){.fn = work, .arg = req};
    ag_pool_submit(req->hl->h->pool, &req->work);
    return AG_OK;
}

void ag_http__offload_free(struct request *req)
{
    struct ag_http__copy *c = &req->copy;
    /* A header may carry the admin token. */
    for (size_t i = 0; i < c->n; i++) {
        sodium_memzero(c->v[i].value, strlen(c->v[i].value));
        free(c->v[i].key);
        free(c->v[i].value);
    }
    free(c->v);
    free(c->method);
    free(c->path);
    free(c->client);
    memset(c, 0, sizeof *c);
    if (req->pooled)
        ag_http_response_free(&req->resp);
}
