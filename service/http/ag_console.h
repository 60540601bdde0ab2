/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin console: the web page of console/ (compiled into the binary
 * by service/base/embed.cmake), served at /admin/ui/ wherever the admin API is
 * served. The page and its scripts hold no data, so they are answered
 * without a token, before the admin API's token check; every API call the
 * page makes sends the token its user typed.
 *
 * This module decides each console answer as data (status, body,
 * headers), without libmicrohttpd, as ag_http_response does for JSON;
 * ag_http puts it on the wire with ag_console_headers. The admin part
 * registers it with the router (ag_console_page), so that it is served
 * only where the admin API is. Every body and
 * header value is static and read-only, owned by this module: safe from
 * any thread, never freed.
 */
#ifndef AG_CONSOLE_H
#define AG_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_http_route.h"

struct ag_console_header {
    const char *name;
    const char *value;
};

/* The headers of every console answer, a 304, 404 or 405 included,
 * ending with {NULL, NULL}: a Content-Security-Policy that allows only
 * the console's own files (no inline script or style, no other origin,
 * no framing), X-Frame-Options, Referrer-Policy and
 * X-Content-Type-Options. */
extern const struct ag_console_header ag_console_headers[];

struct ag_console_answer {
    int status;               /* 200, 304, 308, 404 or 405 */
    const char *body;         /* empty for 304 and 308 */
    size_t len;               /* bytes of body */
    const char *content_type; /* NULL: no body */
    const char *cache;        /* Cache-Control */
    const char *etag;         /* quoted entity tag; NULL: none */
    const char *allow;        /* a 405's Allow; NULL: none */
    const char *location;     /* a 308's Location; NULL: none */
};

/* Whether path is the console's: "/admin/ui" or below "/admin/ui/". */
bool ag_console_path(const char *path);

/* Fills out with the answer to method on path, a console path;
 * if_none_match is the request's If-None-Match header, or NULL. GET and
 * HEAD only (libmicrohttpd leaves out a HEAD's body itself). Returns
 * AG_EINVAL for a path that is not the console's, else AG_OK. */
int ag_console_answer(const char *method, const char *path,
                      const char *if_none_match, struct ag_console_answer *out);

/* ag_console_answer as a route's page (ag_http_page_fn): req's method,
 * path and If-None-Match header; ctx is unused. Register it for the
 * prefix "/admin/ui" wherever the admin API is served. */
int ag_console_page(void *ctx, const struct ag_http_request *req,
                    struct ag_console_answer *out);

#endif
