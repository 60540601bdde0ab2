/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_admin_routes.h"

#include <netinet/in.h>

#include "ag_admin.h"
#include "ag_buf.h"
#include "ag_console.h"
#include "ag_http_response.h"

/* An admin API request, read from the HTTP request: the headers and query
 * arguments the handlers use, and the peer's address for the throttle of
 * failed tokens and the log. */
static int serve_api(void *ctx, const struct ag_http_request *req,
                     struct ag_http_response *resp)
{
    char client[INET6_ADDRSTRLEN];
    struct ag_admin_request ar = {
        .method = req->method,
        .path = req->path,
        .client = ag_http_request_client(req, client, sizeof client),
        .authorization = ag_http_request_header(req, "Authorization"),
        .limit = ag_http_request_query(req, "limit"),
        .before = ag_http_request_query(req, "before"),
        .by = ag_http_request_query(req, "by"),
        .window_s = ag_http_request_query(req, "window_s"),
        .after = ag_http_request_query(req, "after"),
        .format = ag_http_request_query(req, "format"),
        .if_match = ag_http_request_header(req, "If-Match"),
        .body = req->body,
        .len = req->len,
    };
    ag_buf_init(&resp->body, AG_ADMIN_RESPONSE_MAX);
    return ag_admin_handle(ctx, &ar, resp);
}

static int serve_off(void *ctx, const struct ag_http_request *req,
                     struct ag_http_response *resp)
{
    (void)ctx;
    (void)req;
    return ag_http_response_error(
        resp, 404, "the admin API is off (no --admin-token-file)");
}

size_t ag_admin_routes(struct ag_admin *a,
                       struct ag_http_route out[AG_ADMIN_ROUTES])
{
    if (!a) {
        out[0] = (struct ag_http_route){.path = "/admin/",
                                        .prefix = true,
                                        .admin = true,
                                        .handle = serve_off};
        return 1;
    }
    /* The console's page holds no data: it is served before, and
     * without, the token check of every other admin route. */
    out[0] = (struct ag_http_route){.path = "/admin/ui",
                                    .prefix = true,
                                    .admin = true,
                                    .page = ag_console_page};
    out[1] = (struct ag_http_route){.path = "/admin/",
                                    .prefix = true,
                                    .body = true,
                                    .admin = true,
                                    .blocking = true,
                                    .handle = serve_api,
                                    .ctx = a};
    return 2;
}
