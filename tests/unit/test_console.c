/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_console: which paths are the console's, which file each serves with
 * which type, the entity tags a browser revalidates with (a list, a weak
 * tag, "*"), and the refusals (other methods, unknown files, the bare
 * path's redirect), each with the security headers' table behind it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_console.h"
#include "ag_embedded.h"
#include "ag_error.h"

static const char *header(const char *name)
{
    for (const struct ag_console_header *h = ag_console_headers; h->name; h++)
        if (strcmp(h->name, name) == 0)
            return h->value;
    return NULL;
}

static const struct ag_embedded_asset *asset(const char *name)
{
    for (size_t i = 0; i < ag_embedded_console_count; i++)
        if (strcmp(ag_embedded_console[i].name, name) == 0)
            return &ag_embedded_console[i];
    fail_msg("%s is not embedded", name);
    return NULL;
}

static void only_the_ui_prefix_is_a_console_path(void **state)
{
    (void)state;
    assert_true(ag_console_path("/admin/ui"));
    assert_true(ag_console_path("/admin/ui/"));
    assert_true(ag_console_path("/admin/ui/app.js"));
    assert_false(ag_console_path("/admin/uix"));
    assert_false(ag_console_path("/admin/policies"));
    assert_false(ag_console_path("/admin/u"));
    assert_false(ag_console_path("/ui/"));
    struct ag_console_answer a;
    assert_int_equal(ag_console_answer("GET", "/admin/uix", NULL, &a),
                     AG_EINVAL);
}

static void each_file_is_served_whole_with_its_type(void **state)
{
    (void)state;
    static const struct {
        const char *path, *file, *type;
    } cases[] = {
        {"/admin/ui/", "index.html", "text/html; charset=utf-8"},
        {"/admin/ui/index.html", "index.html", "text/html; charset=utf-8"},
        {"/admin/ui/app.js", "app.js", "text/javascript; charset=utf-8"},
        {"/admin/ui/app.css", "app.css", "text/css; charset=utf-8"},
        {"/admin/ui/favicon.svg", "favicon.svg", "image/svg+xml"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ag_console_answer a;
        const char *method = i % 2 ? "HEAD" : "GET";
        assert_int_equal(ag_console_answer(method, cases[i].path, NULL, &a),
                         AG_OK);
        const struct ag_embedded_asset *f = asset(cases[i].file);
        assert_int_equal(a.status, 200);
        assert_ptr_equal(a.body, f->data);
        assert_int_equal(a.len, f->len);
        assert_true(a.len > 0);
        assert_string_equal(a.content_type, cases[i].type);
        assert_string_equal(a.cache, "no-cache");
        assert_string_equal(a.etag, f->etag);
        assert_null(a.allow);
        assert_null(a.location);
    }
}

static void tags_are_quoted_128_bit_hex_and_differ_by_file(void **state)
{
    (void)state;
    assert_true(ag_embedded_console_count >= 3);
    for (size_t i = 0; i < ag_embedded_console_count; i++) {
        const char *t = ag_embedded_console[i].etag;
        assert_int_equal(strlen(t), 34);
        assert_int_equal(t[0], '"');
        assert_int_equal(t[33], '"');
        assert_int_equal(strspn(t + 1, "0123456789abcdef"), 32);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(t, ag_embedded_console[k].etag);
    }
}

static void a_matching_if_none_match_is_a_304(void **state)
{
    (void)state;
    const char *tag = asset("app.js")->etag;
    char list[128], weak[64], spaced[64];
    snprintf(list, sizeof list, "\"aaaa\", %s, \"bbbb\"", tag);
    snprintf(weak, sizeof weak, "W/%s", tag);
    snprintf(spaced, sizeof spaced, " \t%s ,", tag);
    const char *hits[] = {tag, list, weak, spaced, "*"};
    for (size_t i = 0; i < sizeof hits / sizeof hits[0]; i++) {
        struct ag_console_answer a;
        assert_int_equal(
            ag_console_answer("GET", "/admin/ui/app.js", hits[i], &a), AG_OK);
        assert_int_equal(a.status, 304);
        assert_int_equal(a.len, 0);
        assert_string_equal(a.etag, tag);
        assert_string_equal(a.cache, "no-cache");
    }
    /* Another file's tag, a prefix of this one's, an empty header. */
    char prefix[40];
    snprintf(prefix, sizeof prefix, "%.20s\"", tag);
    const char *misses[] = {asset("app.css")->etag, prefix, "", "W/", ","};
    for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
        struct ag_console_answer a;
        ag_console_answer("GET", "/admin/ui/app.js", misses[i], &a);
        assert_int_equal(a.status, 200);
        assert_int_equal(a.len, asset("app.js")->len);
    }
}

static void other_methods_are_405_with_allow(void **state)
{
    (void)state;
    const char *methods[] = {"POST", "PUT", "DELETE", "OPTIONS", "get"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        struct ag_console_answer a;
        assert_int_equal(
            ag_console_answer(methods[i], "/admin/ui/app.js", NULL, &a), AG_OK);
        assert_int_equal(a.status, 405);
        assert_string_equal(a.allow, "GET, HEAD");
        assert_string_equal(a.cache, "no-store");
        assert_string_equal(a.content_type, "application/json");
        assert_non_null(strstr(a.body, "method not allowed"));
    }
}

static void unknown_files_are_404_and_the_bare_path_redirects(void **state)
{
    (void)state;
    const char *paths[] = {"/admin/ui/nope.js",     "/admin/ui/app.js/",
                           "/admin/ui/../policies", "/admin/ui/x/app.js",
                           "/admin/ui/app",         "/admin/ui/.js",
                           "/admin/ui//app.js"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        struct ag_console_answer a;
        assert_int_equal(ag_console_answer("GET", paths[i], NULL, &a), AG_OK);
        assert_int_equal(a.status, 404);
        assert_null(a.etag);
        assert_string_equal(a.cache, "no-store");
        assert_string_equal(a.body, "{\"error\":\"no such console file\"}");
        assert_int_equal(a.len, strlen(a.body));
    }
    struct ag_console_answer a;
    assert_int_equal(ag_console_answer("GET", "/admin/ui", NULL, &a), AG_OK);
    assert_int_equal(a.status, 308);
    assert_string_equal(a.location, "ui/");
    assert_int_equal(a.len, 0);
}

static void every_answer_carries_the_security_headers(void **state)
{
    (void)state;
    const char *csp = header("Content-Security-Policy");
    assert_non_null(csp);
    assert_int_equal(strncmp(csp, "default-src 'self';", 19), 0);
    assert_non_null(strstr(csp, "frame-ancestors 'none'"));
    assert_non_null(strstr(csp, "require-trusted-types-for 'script'"));
    /* Nothing that would let a script or style in from elsewhere. */
    assert_null(strstr(csp, "unsafe"));
    assert_null(strstr(csp, "http"));
    assert_string_equal(header("X-Frame-Options"), "DENY");
    assert_string_equal(header("Referrer-Policy"), "no-referrer");
    assert_string_equal(header("X-Content-Type-Options"), "nosniff");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_the_ui_prefix_is_a_console_path),
        cmocka_unit_test(each_file_is_served_whole_with_its_type),
        cmocka_unit_test(tags_are_quoted_128_bit_hex_and_differ_by_file),
        cmocka_unit_test(a_matching_if_none_match_is_a_304),
        cmocka_unit_test(other_methods_are_405_with_allow),
        cmocka_unit_test(unknown_files_are_404_and_the_bare_path_redirects),
        cmocka_unit_test(every_answer_carries_the_security_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
