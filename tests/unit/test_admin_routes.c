/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_admin_routes: the routes the admin part hands the HTTP router. Off,
 * one route answers every /admin/ path 404 saying why, without reading a
 * body; on, the console's page (no token) comes before the admin API,
 * whose handler reads the token, the query and the peer's address
 * through the request's ops and answers with the admin's body cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_admin.h"
#include "ag_admin_auth.h"
#include "ag_admin_routes.h"
#include "ag_console.h"
#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_http_route.h"
#include "ag_test_db.h"

#define TOKEN "tok-0123456789abcdef"

/* A request's headers and query as the HTTP glue would give them. */
struct fake_request {
    const char *authorization;
    const char *if_none_match;
    const char *limit;
    const char *client;
};

static const char *fake_header(void *arg, const char *name)
{
    struct fake_request *f = arg;
    if (strcmp(name, "Authorization") == 0)
        return f->authorization;
    if (strcmp(name, "If-None-Match") == 0)
        return f->if_none_match;
    return NULL;
}

static const char *fake_query(void *arg, const char *name)
{
    struct fake_request *f = arg;
    return strcmp(name, "limit") == 0 ? f->limit : NULL;
}

static const char *fake_client(void *arg, char *buf, size_t size)
{
    struct fake_request *f = arg;
    if (!f->client)
        return NULL;
    snprintf(buf, size, "%s", f->client);
    return buf;
}

static const struct ag_http_request_ops fake_ops = {
    .header = fake_header,
    .query = fake_query,
    .client = fake_client,
};

static struct ag_http_request request(const char *method, const char *path,
                                      struct fake_request *f)
{
    return (struct ag_http_request){
        .method = method, .path = path, .ops = &fake_ops, .arg = f};
}

/* Runs route's handler for method on path; returns the status. */
static int run(const struct ag_http_route *route, const char *method,
               const char *path, struct fake_request *f,
               struct ag_http_response *r)
{
    ag_http_response_free(r);
    ag_http_response_init(r);
    struct ag_http_request req = request(method, path, f);
    assert_int_equal(route->handle(route->ctx, &req, r), AG_OK);
    return r->status;
}

static bool body_has(const struct ag_http_response *r, const char *s)
{
    return r->body.p && strstr(r->body.p, s);
}

static void off_every_admin_path_is_a_404_saying_why(void **state)
{
    (void)state;
    struct ag_http_route out[AG_ADMIN_ROUTES];
    assert_int_equal(ag_admin_routes(NULL, out), 1);
    assert_string_equal(out[0].path, "/admin/");
    assert_true(out[0].prefix);
    assert_true(out[0].admin);
    assert_null(out[0].method);
    assert_false(out[0].body); /* refused without reading it */
    struct ag_http_router rt = {.routes = out, .n = 1};
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/policies"), &out[0]);
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/ui/"), &out[0]);
    struct fake_request f = {0};
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run(&out[0], "POST", "/admin/reset", &f, &r), 404);
    assert_string_equal(
        r.body.p,
        "{\"error\":\"the admin API is off (no --admin-token-file)\"}");
    ag_http_response_free(&r);
}

static struct ag_admin *admin_new(void **state, struct ag_hasher *hasher)
{
    struct tmpdb *t = *state;
    unsigned char secret[32] = {3};
    ag_hasher_init(hasher, secret, sizeof secret);
    struct ag_admin *a = NULL;
    struct ag_error err;
    if (ag_admin_new(t->path, TOKEN, NULL, hasher, NULL, NULL, &a, &err))
        fail_msg("admin: %s", err.msg);
    return a;
}

static void on_the_console_comes_before_the_api(void **state)
{
    struct ag_hasher hasher;
    struct ag_admin *a = admin_new(state, &hasher);
    struct ag_http_route out[AG_ADMIN_ROUTES];
    assert_int_equal(ag_admin_routes(a, out), 2);
    assert_string_equal(out[0].path, "/admin/ui");
    assert_true(out[0].prefix && out[0].admin);
    assert_false(out[0].body);
    assert_ptr_equal(out[0].page, ag_console_page);
    assert_null(out[0].handle);
    assert_string_equal(out[1].path, "/admin/");
    assert_true(out[1].prefix && out[1].admin && out[1].body);
    assert_ptr_equal(out[1].ctx, a);
    struct ag_http_router rt = {.routes = out, .n = 2};
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/ui/app.js"), &out[0]);
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/uix"), &out[1]);
    /* The page, no token asked; If-None-Match read through the ops. */
    struct fake_request f = {0};
    struct ag_http_request req = request("GET", "/admin/ui/", &f);
    struct ag_console_answer page;
    assert_int_equal(out[0].page(out[0].ctx, &req, &page), AG_OK);
    assert_int_equal(page.status, 200);
    f.if_none_match = "*";
    assert_int_equal(out[0].page(out[0].ctx, &req, &page), AG_OK);
    assert_int_equal(page.status, 304);
    ag_admin_free(a);
    ag_hasher_wipe(&hasher);
}

static void the_api_reads_token_query_and_client_through_the_ops(void **state)
{
    struct ag_hasher hasher;
    struct ag_admin *a = admin_new(state, &hasher);
    struct ag_http_route out[AG_ADMIN_ROUTES];
    ag_admin_routes(a, out);
    const struct ag_http_route *api = &out[1];
    struct ag_http_response r;
    ag_http_response_init(&r);
    /* No token: 401, and the admin's cap on the body. */
    struct fake_request f = {.client = "192.0.2.7"};
    assert_int_equal(run(api, "GET", "/admin/audit", &f, &r), 401);
    assert_true(r.www_authenticate);
    assert_int_equal(r.body.max, AG_ADMIN_RESPONSE_MAX);
    /* The token: the query argument reaches the handler. */
    f.authorization = "Bearer " TOKEN;
    f.limit = "0";
    assert_int_equal(run(api, "GET", "/admin/audit", &f, &r), 400);
    assert_true(body_has(&r, "\"field\":\"limit\""));
    assert_int_equal(run(api, "GET", "/admin/nope", &f, &r), 404);
    assert_true(body_has(&r, "no such admin path"));
    /* Failures are counted by the peer's address: this one is throttled,
     * another is not. */
    f.authorization = "Bearer wrong";
    f.client = "192.0.2.9";
    for (int i = 0; i < AG_ADMIN_AUTH_FAILS; i++)
        assert_int_equal(run(api, "GET", "/admin/audit", &f, &r), 401);
    assert_int_equal(run(api, "GET", "/admin/audit", &f, &r), 429);
    assert_true(r.retry_after > 0);
    f.client = "192.0.2.8";
    assert_int_equal(run(api, "GET", "/admin/audit", &f, &r), 401);
    ag_http_response_free(&r);
    ag_admin_free(a);
    ag_hasher_wipe(&hasher);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(off_every_admin_path_is_a_404_saying_why),
        cmocka_unit_test_setup_teardown(on_the_console_comes_before_the_api,
                                        tmpdb_setup, tmpdb_teardown),
        cmocka_unit_test_setup_teardown(
            the_api_reads_token_query_and_client_through_the_ops, tmpdb_setup,
            tmpdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
