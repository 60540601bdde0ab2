/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_route.h"

#include <string.h>

#include "ag_error.h"
#include "ag_request.h"

const char *ag_http_request_header(const struct ag_http_request *r,
                                   const char *name)
{
    return r->ops && r->ops->header ? r->ops->header(r->arg, name) : NULL;
}

const char *ag_http_request_query(const struct ag_http_request *r,
                                  const char *name)
{
    return r->ops && r->ops->query ? r->ops->query(r->arg, name) : NULL;
}

const char *ag_http_request_client(const struct ag_http_request *r, char *buf,
                                   size_t size)
{
    return r->ops && r->ops->client ? r->ops->client(r->arg, buf, size) : NULL;
}

/* p past spaces and tabs. */
static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

bool ag_http_etag_matches(const char *if_none_match, const char *etag)
{
    size_t elen = strlen(etag);
    /* "*" is the whole field or nothing (RFC 9110 13.1.2): in a list it
     * is no entity tag, and "*bogus" none either. */
    const char *p = skip_ows(if_none_match);
    if (*p == '*' && !*skip_ows(p + 1))
        return true;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            return false;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, ", \t");
        if (n == elen && strncmp(p, etag, n) == 0)
            return true;
        p += n;
    }
}

static bool serves(const struct ag_http_route *r, const char *path)
{
    size_t n = strlen(r->path);
    if (!r->prefix || n == 0)
        return strcmp(path, r->path) == 0;
    if (strncmp(path, r->path, n) != 0)
        return false;
    return r->path[n - 1] == '/' || path[n] == '\0' || path[n] == '/';
}

const struct ag_http_route *ag_http_route_find(const struct ag_http_router *rt,
                                               const char *path)
{
    for (size_t i = 0; i < rt->n; i++)
        if (serves(&rt->routes[i], path))
            return &rt->routes[i];
    return NULL;
}

static void refuse(struct ag_http_routing *out, int status, const char *msg,
                   const char *allow)
{
    out->route = NULL;
    out->status = status;
    out->msg = msg;
    out->allow = allow;
    out->discard = true;
}

void ag_http_route(const struct ag_http_router *rt, const char *path,
                   const char *method, bool on_admin,
                   unsigned long long declared, struct ag_http_routing *out)
{
    const struct ag_http_route *r = ag_http_route_find(rt, path);
    bool admin = r && r->admin;
    if (rt->admin_apart && on_admin != admin) {
        refuse(out, 404,
               admin ? "the admin API is on --admin-listen"
                     : "only /admin/ is served here",
               NULL);
        return;
    }
    if (!r) {
        refuse(out, 404, "no such path", NULL);
        return;
    }
    if (r->method) {
        bool get = strcmp(r->method, "GET") == 0;
        if (strcmp(method, r->method) != 0 &&
            !(get && strcmp(method, "HEAD") == 0)) {
            refuse(out, 405, "method not allowed",
                   get ? "GET, HEAD" : r->method);
            return;
        }
    }
    if (r->body && declared > AG_BODY_MAX) {
        refuse(out, 413, AG_HTTP_TOO_LARGE, NULL);
        return;
    }
    out->route = r;
    out->status = 0;
    out->msg = NULL;
    out->allow = NULL;
    out->discard = !r->body;
}
