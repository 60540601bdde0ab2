/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_route: which route serves a path (exact paths, prefixes and
 * what lies below them, the first match), and the routing of a request's
 * head: 404 for a path no route serves, 405 with Allow for a method the
 * route does not serve (HEAD with GET), the admin listener's fence when
 * it is apart, 413 for a declared body past the cap where the body is
 * read, and the request's accessors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ag_console.h"
#include "ag_error.h"
#include "ag_http_route.h"
#include "ag_request.h"

static int answer(void *ctx, const struct ag_http_request *req,
                  struct ag_http_response *resp)
{
    (void)ctx;
    (void)req;
    return ag_http_response_status(resp, 200, "ok");
}

/* The shape abuseguard serves: its own routes, then the admin part's. */
static const struct ag_http_route table[] = {
    {.path = "/check-login", .method = "POST", .body = true, .handle = answer},
    {.path = "/healthz", .method = "GET", .handle = answer},
    {.path = "/admin/ui",
     .prefix = true,
     .admin = true,
     .page = ag_console_page},
    {.path = "/admin/",
     .prefix = true,
     .body = true,
     .admin = true,
     .handle = answer},
};

static struct ag_http_router router(bool admin_apart)
{
    return (struct ag_http_router){
        .routes = table,
        .n = sizeof table / sizeof table[0],
        .admin_apart = admin_apart,
    };
}

static void paths_match_exactly_and_prefixes_below_them(void **state)
{
    (void)state;
    struct ag_http_router rt = router(false);
    assert_ptr_equal(ag_http_route_find(&rt, "/check-login"), &table[0]);
    assert_null(ag_http_route_find(&rt, "/check-login/"));
    assert_null(ag_http_route_find(&rt, "/check-loginx"));
    assert_null(ag_http_route_find(&rt, "/"));
    /* A prefix without a trailing slash: itself and below "/". */
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/ui"), &table[2]);
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/ui/"), &table[2]);
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/ui/app.js"), &table[2]);
    /* One with it: whatever starts so; the first match wins. */
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/uix"), &table[3]);
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/"), &table[3]);
    assert_ptr_equal(ag_http_route_find(&rt, "/admin/policies/a"), &table[3]);
    assert_null(ag_http_route_find(&rt, "/admin"));
    assert_null(ag_http_route_find(&rt, "/adminx"));
}

/* The console's own idea of its paths and its route's agree. */
static void the_console_route_serves_the_console_paths(void **state)
{
    (void)state;
    struct ag_http_router rt = router(false);
    static const char *const paths[] = {
        "/admin/ui", "/admin/ui/", "/admin/ui/app.js", "/admin/uix", "/admin/u",
        "/admin/",   "/ui/",       "/admin/ui/a/b",
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        bool routed = ag_http_route_find(&rt, paths[i]) == &table[2];
        if (routed != ag_console_path(paths[i]))
            fail_msg("%s: the route and ag_console_path disagree", paths[i]);
    }
}

static void expect_refused(const struct ag_http_routing *to, int status,
                           const char *msg, const char *allow)
{
    assert_null(to->route);
    assert_int_equal(to->status, status);
    assert_string_equal(to->msg, msg);
    if (allow)
        assert_string_equal(to->allow, allow);
    else
        assert_null(to->allow);
    assert_true(to->discard);
}

static void an_unknown_path_is_a_404(void **state)
{
    (void)state;
    struct ag_http_router rt = router(false);
    struct ag_http_routing to;
    ag_http_route(&rt, "/nope", "GET", false, 0, &to);
    expect_refused(&to, 404, "no such path", NULL);
    ag_http_route(&rt, "/admin", "GET", false, 0, &to);
    expect_refused(&to, 404, "no such path", NULL);
}

static void a_method_the_route_does_not_serve_is_a_405_with_allow(void **state)
{
    (void)state;
    struct ag_http_router rt = router(false);
    struct ag_http_routing to;
    ag_http_route(&rt, "/check-login", "GET", false, 0, &to);
    expect_refused(&to, 405, "method not allowed", "POST");
    ag_http_route(&rt, "/healthz", "POST", false, 0, &to);
    expect_refused(&to, 405, "method not allowed", "GET, HEAD");
    /* HEAD goes with GET. */
    ag_http_route(&rt, "/healthz", "HEAD", false, 0, &to);
    assert_ptr_equal(to.route, &table[1]);
    /* A route of every method: its handler answers each. */
    ag_http_route(&rt, "/admin/policies/a", "PATCH", false, 0, &to);
    assert_ptr_equal(to.route, &table[3]);
}

static void a_route_reads_its_body_or_has_it_dropped(void **state)
{
    (void)state;
    struct ag_http_router rt = router(false);
    struct ag_http_routing to;
    ag_http_route(&rt, "/check-login", "POST", false, AG_BODY_MAX, &to);
    assert_ptr_equal(to.route, &table[0]);
    assert_false(to.discard);
    ag_http_route(&rt, "/healthz", "GET", false, 0, &to);
    assert_ptr_equal(to.route, &table[1]);
    assert_true(to.discard);
    ag_http_route(&rt, "/admin/ui/", "GET", false, 0, &to);
    assert_true(to.discard);
}

static void a_declared_body_past_the_cap_is_a_413_where_it_is_read(void **state)
{
    (void)state;
    struct ag_http_router rt = router(false);
    struct ag_http_routing to;
    ag_http_route(&rt, "/check-login", "POST", false, AG_BODY_MAX + 1, &to);
    expect_refused(&to, 413, "body is larger than 64 KiB", NULL);
    ag_http_route(&rt, "/admin/reset", "POST", false, AG_BODY_MAX + 1, &to);
    expect_refused(&to, 413, AG_HTTP_TOO_LARGE, NULL);
    /* Dropped anyway: no reason to refuse it. */
    ag_http_route(&rt, "/healthz", "GET", false, AG_BODY_MAX + 1, &to);
    assert_ptr_equal(to.route, &table[1]);
    /* The path and the method are judged first. */
    ag_http_route(&rt, "/nope", "POST", false, AG_BODY_MAX + 1, &to);
    assert_int_equal(to.status, 404);
    ag_http_route(&rt, "/check-login", "PUT", false, AG_BODY_MAX + 1, &to);
    assert_int_equal(to.status, 405);
}

static void an_admin_listener_apart_serves_the_admin_routes_alone(void **state)
{
    (void)state;
    struct ag_http_router apart = router(true);
    struct ag_http_routing to;
    /* The public listener: no admin route, however it is reached. */
    ag_http_route(&apart, "/admin/policies", "GET", false, 0, &to);
    expect_refused(&to, 404, "the admin API is on --admin-listen", NULL);
    ag_http_route(&apart, "/admin/ui/", "GET", false, 0, &to);
    expect_refused(&to, 404, "the admin API is on --admin-listen", NULL);
    ag_http_route(&apart, "/healthz", "GET", false, 0, &to);
    assert_ptr_equal(to.route, &table[1]);
    /* The admin listener: nothing else, not even an unknown path's 404
     * or a wrong method's 405. */
    ag_http_route(&apart, "/admin/policies", "GET", true, 0, &to);
    assert_ptr_equal(to.route, &table[3]);
    ag_http_route(&apart, "/healthz", "GET", true, 0, &to);
    expect_refused(&to, 404, "only /admin/ is served here", NULL);
    ag_http_route(&apart, "/check-login", "GET", true, 0, &to);
    expect_refused(&to, 404, "only /admin/ is served here", NULL);
    ag_http_route(&apart, "/nope", "GET", true, 0, &to);
    expect_refused(&to, 404, "only /admin/ is served here", NULL);
    /* One listener: both kinds there. */
    struct ag_http_router one = router(false);
    ag_http_route(&one, "/admin/policies", "GET", false, 0, &to);
    assert_ptr_equal(to.route, &table[3]);
}

static const char *test_header(void *arg, const char *name)
{
    return strcmp(name, "Authorization") == 0 ? arg : NULL;
}

static const char *test_query(void *arg, const char *name)
{
    (void)arg;
    return strcmp(name, "limit") == 0 ? "5" : NULL;
}

static void a_request_is_read_through_its_ops(void **state)
{
    (void)state;
    char buf[64];
    struct ag_http_request bare = {.method = "GET", .path = "/"};
    assert_null(ag_http_request_header(&bare, "Authorization"));
    assert_null(ag_http_request_query(&bare, "limit"));
    assert_null(ag_http_request_client(&bare, buf, sizeof buf));
    static const struct ag_http_request_ops ops = {
        .header = test_header,
        .query = test_query,
    };
    char auth[] = "Bearer x";
    struct ag_http_request r = {
        .method = "GET", .path = "/", .ops = &ops, .arg = auth};
    assert_string_equal(ag_http_request_header(&r, "Authorization"), auth);
    assert_null(ag_http_request_header(&r, "If-None-Match"));
    assert_string_equal(ag_http_request_query(&r, "limit"), "5");
    /* No client op: no address. */
    assert_null(ag_http_request_client(&r, buf, sizeof buf));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths_match_exactly_and_prefixes_below_them),
        cmocka_unit_test(the_console_route_serves_the_console_paths),
        cmocka_unit_test(an_unknown_path_is_a_404),
        cmocka_unit_test(a_method_the_route_does_not_serve_is_a_405_with_allow),
        cmocka_unit_test(a_route_reads_its_body_or_has_it_dropped),
        cmocka_unit_test(
            a_declared_body_past_the_cap_is_a_413_where_it_is_read),
        cmocka_unit_test(an_admin_listener_apart_serves_the_admin_routes_alone),
        cmocka_unit_test(a_request_is_read_through_its_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
