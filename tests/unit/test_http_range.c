/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /range/{prefix} (ag_http_range) on corpora written by the writer:
 * each range's exact body (upper case, CRLF between lines, none after the
 * last) in either case of prefix and for either mode; padding to at least
 * 800 lines, then 10 to 199 more, of fresh suffixes with count 0 after the
 * real lines, untouched; the ETag, the 304 for a matching If-None-Match
 * and none for a padded answer; Cache-Control and Vary; the 400s naming
 * prefix or mode, the 404 for a mode without a corpus; lookups counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_http_range.h"
#include "ag_http_response.h"
#include "ag_http_route.h"
#include "ag_metrics.h"
#include "ag_pwned.h"
#include "ag_pwned_live.h"
#include "ag_test_metrics.h"
#include "ag_test_pwned.h"

/* 0x00abc has more lines than a padded answer's floor. */
static const struct ag_test_range ranges[] = {
    {0x00000, 1}, {0x00abc, 900}, {0x21bd1, 7}, {0xfffff, 2}};

struct fx {
    char dir[64];
    char sha1[128], ntlm[128];
    struct ag_metrics *m;
    struct ag_pwned_live *live;
    struct ag_http_response r;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ag_test_range.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->sha1, sizeof f->sha1, "%s/sha1.agp", f->dir);
    snprintf(f->ntlm, sizeof f->ntlm, "%s/ntlm.agp", f->dir);
    ag_test_corpus(f->sha1, AG_PWNED_SHA1, ranges, 4, 0, 1700000000);
    ag_test_corpus(f->ntlm, AG_PWNED_NTLM, ranges + 2, 1, 9, 1700000000);
    f->m = ag_metrics_new();
    const char *paths[] = {f->sha1, f->ntlm};
    struct ag_error err;
    if (ag_pwned_live_start(&(struct ag_pwned_live_opts){.paths = paths,
                                                         .n = 2,
                                                         .metrics = f->m},
                            &f->live, &err))
        fail_msg("%s", err.msg);
    ag_http_response_init(&f->r);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    ag_http_response_free(&f->r);
    ag_pwned_live_stop(f->live);
    ag_metrics_free(f->m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* A request's headers and query: name=value pairs, NULL-terminated. */
struct fake {
    const char *const *headers;
    const char *const *query;
};

static const char *lookup(const char *const *kv, const char *name)
{
    for (size_t i = 0; kv && kv[i]; i += 2)
        if (strcasecmp(kv[i], name) == 0)
            return kv[i + 1];
    return NULL;
}

static const char *fake_header(void *arg, const char *name)
{
    return lookup(((struct fake *)arg)->headers, name);
}

static const char *fake_query(void *arg, const char *name)
{
    return lookup(((struct fake *)arg)->query, name);
}

static const struct ag_http_request_ops fake_ops = {
    .header = fake_header,
    .query = fake_query,
};

/* Answers GET path with the headers and query given into f->r. */
static struct ag_http_response *get(struct fx *f, const char *path,
                                    const char *const *headers,
                                    const char *const *query)
{
    struct fake fk = {headers, query};
    struct ag_http_request req = {
        .method = "GET", .path = path, .ops = &fake_ops, .arg = &fk};
    ag_http_response_free(&f->r);
    ag_http_response_init(&f->r);
    assert_int_equal(ag_http_range(f->live, f->m, &req, &f->r), AG_OK);
    return &f->r;
}

/* The expected body of prefix's first n lines. */
static void expected(struct ag_buf *b, enum ag_pwned_mode mode, uint32_t prefix,
                     uint32_t n, uint32_t salt)
{
    char line[64];
    ag_buf_init(b, 1 << 20);
    for (uint32_t s = 0; s < n; s++) {
        ag_test_line(line, sizeof line, mode, prefix, s, salt);
        if (s)
            ag_buf_puts(b, "\r\n");
        ag_buf_puts(b, line);
    }
    assert_int_equal(ag_buf_error(b), AG_OK);
}

static void assert_body(const struct ag_http_response *r, struct ag_buf *want)
{
    assert_int_equal(r->status, 200);
    assert_int_equal(r->body.len, want->len);
    assert_memory_equal(r->body.p, want->p, want->len);
    ag_buf_free(want);
}

static void each_range_is_its_lines_in_upper_case_between_crlfs(void **state)
{
    struct fx *f = *state;
    struct ag_buf want;
    struct ag_http_response *r = get(f, "/range/21BD1", NULL, NULL);
    expected(&want, AG_PWNED_SHA1, 0x21bd1, 7, 0);
    assert_body(r, &want);
    assert_string_equal(r->content_type, "text/plain; charset=utf-8");
    assert_string_equal(r->cache_control, "public, max-age=3600");
    assert_string_equal(r->vary, "Add-Padding");
    /* No line end after the last line, as the public API. */
    assert_int_not_equal(r->body.p[r->body.len - 1], '\n');

    r = get(f, "/range/21bd1", NULL, (const char *[]){"mode", "sha1", NULL});
    expected(&want, AG_PWNED_SHA1, 0x21bd1, 7, 0);
    assert_body(r, &want);
    r = get(f, "/range/fFfFf", NULL, NULL);
    expected(&want, AG_PWNED_SHA1, 0xfffff, 2, 0);
    assert_body(r, &want);
    r = get(f, "/range/00000", NULL, NULL);
    expected(&want, AG_PWNED_SHA1, 0x00000, 1, 0);
    assert_body(r, &want);
    r = get(f, "/range/00ABC", NULL, NULL);
    expected(&want, AG_PWNED_SHA1, 0x00abc, 900, 0);
    assert_body(r, &want);

    r = get(f, "/range/21bd1", NULL, (const char *[]){"mode", "NTLM", NULL});
    expected(&want, AG_PWNED_NTLM, 0x21bd1, 7, 9);
    assert_body(r, &want);

    /* A range with no hash is an empty 200. */
    r = get(f, "/range/12345", NULL, NULL);
    assert_int_equal(r->status, 200);
    assert_int_equal(r->body.len, 0);
    assert_string_equal(r->content_type, "text/plain; charset=utf-8");
    assert_non_null(
        strstr(ag_test_metrics_text(f->m),
               "abuseguard_pwned_lookups_total{mode=\"sha1\"} 6\n"));
    assert_non_null(
        strstr(ag_test_metrics_text(f->m),
               "abuseguard_pwned_lookups_total{mode=\"ntlm\"} 1\n"));
}

/* Splits r's body into lines (CRLF between them) into lines[], returns
 * how many. */
static size_t split(const struct ag_http_response *r, char (*lines)[64],
                    size_t max)
{
    size_t n = 0;
    const char *p = r->body.p, *end = p + r->body.len;
    while (p < end) {
        const char *e = strstr(p, "\r\n");
        size_t len = (size_t)((e ? e : end) - p);
        assert_true(n < max);
        assert_true(len < 64);
        memcpy(lines[n], p, len);
        lines[n++][len] = '\0';
        p = e ? e + 2 : end;
    }
    return n;
}

static void assert_padding(struct fx *f, const char *path,
                           enum ag_pwned_mode mode, uint32_t prefix,
                           uint32_t real, uint32_t salt)
{
    static char lines[1200][64];
    const char *pad[] = {"Add-Padding", "true", NULL};
    struct ag_pwned_hold *h = ag_pwned_live_hold(f->live, mode);
    const struct ag_pwned *p = ag_pwned_hold_corpus(h);
    size_t hex_len = 2 * ag_test_hash_len(mode) - 5;
    size_t least = real < 800 ? 800 : real;
    size_t sizes[8];
    for (int round = 0; round < 8; round++) {
        const char *q[] = {"mode", mode == AG_PWNED_NTLM ? "ntlm" : "sha1",
                           NULL};
        struct ag_http_response *r = get(f, path, pad, q);
        assert_int_equal(r->status, 200);
        assert_string_equal(r->cache_control, "no-store");
        assert_string_equal(r->etag, "");
        assert_int_not_equal(r->body.p[r->body.len - 1], '\n');
        size_t n = split(r, lines, 1200);
        sizes[round] = n;
        assert_true(n >= least + 10 && n <= least + 199);
        char want[64];
        for (uint32_t s = 0; s < real; s++) {
            ag_test_line(want, sizeof want, mode, prefix, s, salt);
            assert_string_equal(lines[s], want);
        }
        for (size_t i = real; i < n; i++) {
            assert_int_equal(strlen(lines[i]), hex_len + 2);
            assert_string_equal(lines[i] + hex_len, ":0");
            uint8_t hash[AG_PWNED_SHA1_LEN];
            char full[2 * AG_PWNED_SHA1_LEN + 1];
            snprintf(full, sizeof full, "%05X%.*s", (unsigned)prefix,
                     (int)hex_len, lines[i]);
            for (size_t k = 0; k < 2 * ag_test_hash_len(mode); k++)
                assert_non_null(strchr("0123456789ABCDEF", full[k]));
            for (size_t k = 0; k < ag_test_hash_len(mode); k++)
                assert_int_equal(sscanf(full + 2 * k, "%2hhx", &hash[k]), 1);
            assert_int_equal(ag_pwned_lookup(p, hash), 0);
            for (uint32_t s = 0; s < real; s++)
                assert_false(strncmp(lines[s], lines[i], hex_len) == 0);
        }
    }
    /* The count is drawn afresh each time. */
    bool varied = false;
    for (int i = 1; i < 8; i++)
        varied |= sizes[i] != sizes[0];
    assert_true(varied);
    ag_pwned_hold_release(h);
}

static void padding_brings_an_answer_to_800_lines_and_a_few_more(void **state)
{
    struct fx *f = *state;
    assert_padding(f, "/range/21BD1", AG_PWNED_SHA1, 0x21bd1, 7, 0);
    assert_padding(f, "/range/21bd1", AG_PWNED_NTLM, 0x21bd1, 7, 9);
    assert_padding(f, "/range/12345", AG_PWNED_SHA1, 0x12345, 0, 0);
    /* Past 800 already: 10 to 199 lines more. */
    assert_padding(f, "/range/00abc", AG_PWNED_SHA1, 0x00abc, 900, 0);
}

static void only_add_padding_true_pads(void **state)
{
    struct fx *f = *state;
    const char *values[] = {"TRUE", "True", "false", "1", "yes", ""};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        const char *h[] = {"Add-Padding", values[i], NULL};
        struct ag_http_response *r = get(f, "/range/21BD1", h, NULL);
        bool padded = strcasecmp(values[i], "true") == 0;
        assert_int_equal(r->body.len > 7 * 50, padded);
    }
}

static void an_unpadded_answer_has_an_etag_that_a_304_honours(void **state)
{
    struct fx *f = *state;
    struct ag_http_response *r = get(f, "/range/21BD1", NULL, NULL);
    char tag[AG_HTTP_ETAG_MAX];
    snprintf(tag, sizeof tag, "%s", r->etag);
    assert_int_equal(strncmp(tag, "\"sha1-21BD1-", 12), 0);
    assert_int_equal(strlen(tag), 29);
    /* Each prefix and mode has its own. */
    assert_string_not_equal(get(f, "/range/21BD2", NULL, NULL)->etag, tag);
    assert_string_not_equal(
        get(f, "/range/21BD1", NULL, (const char *[]){"mode", "ntlm", NULL})
            ->etag,
        tag);
    char weak[64], list[96];
    snprintf(weak, sizeof weak, "W/%s", tag);
    snprintf(list, sizeof list, "\"x\", %s", tag);
    const char *match[] = {tag, weak, list, "*"};
    for (size_t i = 0; i < 4; i++) {
        const char *h[] = {"If-None-Match", match[i], NULL};
        r = get(f, "/range/21bd1", h, NULL);
        assert_int_equal(r->status, 304);
        assert_int_equal(r->body.len, 0);
        assert_string_equal(r->etag, tag);
        assert_string_equal(r->cache_control, "public, max-age=3600");
    }
    /* Only a lone "*" is any tag; in a list, or with more, it is none. */
    char star_list[96], star_text[96];
    snprintf(star_list, sizeof star_list, "\"x\", *");
    snprintf(star_text, sizeof star_text, "\"x\", *bogus");
    const char *stale_tags[] = {"\"sha1-21BD1-0000000000000000\"", star_list,
                                star_text, "*bogus", "**"};
    for (size_t i = 0; i < 5; i++) {
        const char *stale[] = {"If-None-Match", stale_tags[i], NULL};
        if (get(f, "/range/21BD1", stale, NULL)->status != 200)
            fail_msg("If-None-Match: %s matched", stale_tags[i]);
    }
    const char *spaced[] = {"If-None-Match", " * ", NULL};
    assert_int_equal(get(f, "/range/21BD1", spaced, NULL)->status, 304);
    /* A padded answer is never a 304: its body is new each time. */
    const char *both[] = {"If-None-Match", tag, "Add-Padding", "true", NULL};
    r = get(f, "/range/21BD1", both, NULL);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->etag, "");
}

static void a_replaced_corpus_changes_the_etag(void **state)
{
    struct fx *f = *state;
    char tag[AG_HTTP_ETAG_MAX];
    snprintf(tag, sizeof tag, "%s", get(f, "/range/21BD1", NULL, NULL)->etag);
    ag_test_corpus(f->sha1, AG_PWNED_SHA1, ranges, 4, 3, 1700000000);
    ag_pwned_live_tick(f->live);
    const char *h[] = {"If-None-Match", tag, NULL};
    struct ag_http_response *r = get(f, "/range/21BD1", h, NULL);
    assert_int_equal(r->status, 200);
    assert_string_not_equal(r->etag, tag);
    struct ag_buf want;
    expected(&want, AG_PWNED_SHA1, 0x21bd1, 7, 3);
    assert_body(r, &want);
}

static void refused_naming(struct fx *f, const char *path, const char *mode,
                           int status, const char *field)
{
    const char *q[] = {"mode", mode, NULL};
    struct ag_http_response *r = get(f, path, NULL, mode ? q : NULL);
    assert_int_equal(r->status, status);
    char want[64];
    snprintf(want, sizeof want, "\"field\":\"%s\"", field);
    if (!strstr(r->body.p, want))
        fail_msg("%s?mode=%s: %s", path, mode ? mode : "", r->body.p);
    assert_null(strchr(r->body.p, '\n'));
    assert_null(r->cache_control);
    assert_string_equal(r->etag, "");
}

static void a_bad_prefix_or_mode_is_a_400_naming_it(void **state)
{
    struct fx *f = *state;
    const char *prefixes[] = {"/range",        "/range/",       "/range/21BD",
                              "/range/21BD12", "/range/21BG1",  "/range/ 21BD",
                              "/range/21BD1/", "/range/21BD1/x"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        refused_naming(f, prefixes[i], NULL, 400, "prefix");
    const char *modes[] = {"md5", "", "sha256", "ntlm "};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        refused_naming(f, "/range/21BD1", modes[i], 400, "mode");
}

static void a_mode_without_a_corpus_is_a_404_saying_so(void **state)
{
    struct fx *f = *state;
    ag_pwned_live_stop(f->live);
    const char *paths[] = {f->sha1};
    struct ag_error err;
    assert_int_equal(ag_pwned_live_start(
                         &(struct ag_pwned_live_opts){
                             .paths = paths, .n = 1, .metrics = f->m},
                         &f->live, &err),
                     AG_OK);
    refused_naming(f, "/range/21BD1", "ntlm", 404, "mode");
    assert_non_null(strstr(f->r.body.p, "no NTLM corpus is loaded"));
    struct ag_pwned_live *live = f->live;
    f->live = NULL; /* a service without --pwned-file */
    refused_naming(f, "/range/21BD1", NULL, 404, "mode");
    assert_non_null(strstr(f->r.body.p, "no SHA-1 corpus is loaded"));
    f->live = live;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            each_range_is_its_lines_in_upper_case_between_crlfs, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            padding_brings_an_answer_to_800_lines_and_a_few_more, setup,
            teardown),
        cmocka_unit_test_setup_teardown(only_add_padding_true_pads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            an_unpadded_answer_has_an_etag_that_a_304_honours, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replaced_corpus_changes_the_etag,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_bad_prefix_or_mode_is_a_400_naming_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_mode_without_a_corpus_is_a_404_saying_so, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
