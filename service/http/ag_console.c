/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_console.h"

#include <string.h>

#include "ag_embedded.h"
#include "ag_error.h"

#define PREFIX "/admin/ui"

const struct ag_console_header ag_console_headers[] = {
    /* Trusted Types make the browser refuse a string where markup would
     * be parsed (innerHTML and the like), so that data can only ever
     * reach the page as text. */
    {"Content-Security-Policy",
     "default-src 'self'; base-uri 'none'; form-action 'none'; "
     "frame-ancestors 'none'; require-trusted-types-for 'script'"},
    {"X-Frame-Options", "DENY"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Content-Type-Options", "nosniff"},
    {NULL, NULL},
};

/* Served file types, by the name's extension: a file of console/ with
 * another extension is embedded but never served. */
static const struct {
    const char *ext;
    const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
};

static const char NOT_FOUND[] = "{\"error\":\"no such console file\"}";
static const char NOT_ALLOWED[] = "{\"error\":\"method not allowed\"}";

bool ag_console_path(const char *path)
{
    size_t n = strlen(PREFIX);
    return strncmp(path, PREFIX, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static const char *type_of(const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t el = strlen(types[i].ext);
        if (len > el && strcmp(name + len - el, types[i].ext) == 0)
            return types[i].type;
    }
    return NULL;
}

static void error(struct ag_console_answer *out, int status, const char *body,
                  size_t len)
{
    out->status = status;
    out->body = body;
    out->len = len;
    out->content_type = "application/json";
    out->cache = "no-store";
}

int ag_console_answer(const char *method, const char *path,
                      const char *if_none_match, struct ag_console_answer *out)
{
    memset(out, 0, sizeof *out);
    if (!ag_console_path(path))
        return AG_EINVAL;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        error(out, 405, NOT_ALLOWED, sizeof NOT_ALLOWED - 1);
        out->allow = "GET, HEAD";
        return AG_OK;
    }
    const char *name = path + strlen(PREFIX);
    if (!*name) {
        /* Relative, so that it holds behind a proxy that mounts the
         * service under a path of its own; the page's own links are
         * relative to "/admin/ui/" for the same reason. */
        out->status = 308;
        out->body = "";
        out->cache = "no-store";
        out->location = "ui/";
        return AG_OK;
    }
    name++;
    if (!*name)
        name = "index.html";
    const char *type = type_of(name);
    for (size_t i = 0; type && i < ag_embedded_console_count; i++) {
        const struct ag_embedded_asset *a = &ag_embedded_console[i];
        if (strcmp(a->name, name) != 0)
            continue;
        /* The files change only with the binary: a browser keeps them but
         * asks each time, and an unchanged one costs a 304. */
        out->cache = "no-cache";
        out->etag = a->etag;
        out->content_type = type;
        if (if_none_match && ag_http_etag_matches(if_none_match, a->etag)) {
            out->status = 304;
            out->body = "";
            return AG_OK;
        }
        out->status = 200;
        out->body = a->data;
        out->len = a->len;
        return AG_OK;
    }
    error(out, 404, NOT_FOUND, sizeof NOT_FOUND - 1);
    return AG_OK;
}

int ag_console_page(void *ctx, const struct ag_http_request *req,
                    struct ag_console_answer *out)
{
    (void)ctx;
    return ag_console_answer(req->method, req->path,
                             ag_http_request_header(req, "If-None-Match"), out);
}
