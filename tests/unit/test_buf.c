/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_buf: the hard cap is enforced and a refused append leaves the buffer
 * exactly as it was; the first failure sticks, so later appends do nothing
 * until a reset; JSON strings come out escaped and parse back to the
 * original text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ag_buf.h"
#include "ag_error.h"

/* Parses b's contents as one JSON string value and returns a copy of its
 * text; the caller frees it. Fails the test if it is not a JSON string. */
static char *json_string_back(const struct ag_buf *b)
{
    json_error_t jerr;
    json_t *v = json_loadb(b->p, b->len, JSON_DECODE_ANY, &jerr);
    if (!v)
        fail_msg("not JSON (%s): %s", jerr.text, b->p);
    assert_true(json_is_string(v));
    char *s = strdup(json_string_value(v));
    assert_non_null(s);
    json_decref(v);
    return s;
}

static void appends_concatenate_and_stay_nul_terminated(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 64);
    assert_int_equal(ag_buf_append(&b, "abc", 3), AG_OK);
    assert_int_equal(ag_buf_puts(&b, "de"), AG_OK);
    assert_int_equal(ag_buf_printf(&b, "%d-%s", 42, "x"), AG_OK);
    assert_int_equal(b.len, 9);
    assert_string_equal(b.p, "abcde42-x");
    assert_int_equal(b.p[b.len], '\0');
    ag_buf_free(&b);
}

static void reserve_makes_room_without_changing_contents(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 1000);
    assert_int_equal(ag_buf_puts(&b, "abc"), AG_OK);
    assert_int_equal(ag_buf_reserve(&b, 900), AG_OK);
    assert_true(b.cap >= 3 + 900 + 1);
    char *p = b.p;
    for (int i = 0; i < 90; i++)
        assert_int_equal(ag_buf_puts(&b, "0123456789"), AG_OK);
    assert_ptr_equal(b.p, p); /* no reallocation after the reserve */
    assert_int_equal(b.len, 903);
    assert_memory_equal(b.p, "abc0123456789", 13);
    assert_int_equal(ag_buf_reserve(&b, 98), AG_ETOOBIG);
    assert_int_equal(b.len, 903);
    ag_buf_free(&b);
}

static void append_exactly_to_cap_succeeds(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 8);
    assert_int_equal(ag_buf_append(&b, "abcd", 4), AG_OK);
    assert_int_equal(ag_buf_append(&b, "efgh", 4), AG_OK);
    assert_int_equal(b.len, 8);
    assert_string_equal(b.p, "abcdefgh");
    ag_buf_free(&b);
}

static void append_past_cap_fails_and_leaves_buffer_unchanged(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 8);
    assert_int_equal(ag_buf_append(&b, "abcdef", 6), AG_OK);
    const char *before = b.p;
    assert_int_equal(ag_buf_append(&b, "xyz", 3), AG_ETOOBIG);
    assert_int_equal(b.len, 6);
    assert_string_equal(b.p, "abcdef");
    assert_ptr_equal(b.p, before);
    assert_int_equal(ag_buf_error(&b), AG_ETOOBIG);
    ag_buf_free(&b);
}

static void appends_after_a_failure_do_nothing_and_keep_its_code(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 8);
    assert_int_equal(ag_buf_puts(&b, "abcdef"), AG_OK);
    assert_int_equal(ag_buf_error(&b), AG_OK);
    assert_int_equal(ag_buf_puts(&b, "xyz"), AG_ETOOBIG);
    /* Each of these would fit, but the message already lost a part. */
    assert_int_equal(ag_buf_puts(&b, "x"), AG_ETOOBIG);
    assert_int_equal(ag_buf_uint(&b, 7), AG_ETOOBIG);
    assert_int_equal(ag_buf_printf(&b, "%d", 1), AG_ETOOBIG);
    assert_int_equal(ag_buf_json_string(&b, ""), AG_ETOOBIG);
    assert_int_equal(ag_buf_reserve(&b, 1), AG_ETOOBIG);
    assert_int_equal(b.len, 6);
    assert_string_equal(b.p, "abcdef");
    assert_int_equal(ag_buf_error(&b), AG_ETOOBIG);
    ag_buf_free(&b);
}

static void reset_clears_the_error(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 4);
    assert_int_equal(ag_buf_puts(&b, "hello"), AG_ETOOBIG);
    ag_buf_reset(&b);
    assert_int_equal(ag_buf_error(&b), AG_OK);
    assert_int_equal(ag_buf_puts(&b, "hell"), AG_OK);
    assert_string_equal(b.p, "hell");
    ag_buf_free(&b);
}

static void init_after_free_clears_the_error(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 4);
    assert_int_equal(ag_buf_puts(&b, "hello"), AG_ETOOBIG);
    ag_buf_free(&b);
    assert_int_equal(ag_buf_error(&b), AG_OK);
    ag_buf_init(&b, 8);
    assert_int_equal(ag_buf_puts(&b, "hello"), AG_OK);
    ag_buf_free(&b);
}

static void first_append_past_cap_allocates_nothing(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 4);
    assert_int_equal(ag_buf_puts(&b, "hello"), AG_ETOOBIG);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    ag_buf_free(&b);
}

static void printf_past_cap_fails_and_leaves_buffer_unchanged(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 10);
    assert_int_equal(ag_buf_puts(&b, "abc"), AG_OK);
    assert_int_equal(ag_buf_printf(&b, "%d", 12345678), AG_ETOOBIG);
    assert_int_equal(b.len, 3);
    assert_string_equal(b.p, "abc");
    ag_buf_reset(&b);
    assert_int_equal(ag_buf_printf(&b, "abc%d", 1234567), AG_OK);
    assert_string_equal(b.p, "abc1234567");
    ag_buf_free(&b);
}

static void buffer_grows_past_first_allocation_keeping_contents(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 100000);
    char chunk[100];
    for (int i = 0; i < 50; i++) {
        memset(chunk, 'a' + i % 26, sizeof chunk);
        assert_int_equal(ag_buf_append(&b, chunk, sizeof chunk), AG_OK);
    }
    assert_int_equal(b.len, 5000);
    assert_true(b.cap > b.len);
    assert_true(b.cap <= b.max + 1);
    for (size_t i = 0; i < b.len; i++)
        assert_int_equal(b.p[i], 'a' + (int)(i / 100) % 26);
    assert_int_equal(b.p[b.len], '\0');
    ag_buf_free(&b);
}

static void allocation_never_exceeds_cap_plus_nul(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 300);
    char chunk[300];
    memset(chunk, 'x', sizeof chunk);
    assert_int_equal(ag_buf_append(&b, chunk, 200), AG_OK);
    assert_int_equal(ag_buf_append(&b, chunk, 100), AG_OK);
    assert_int_equal(b.len, 300);
    assert_int_equal(b.cap, 301);
    ag_buf_free(&b);
}

static void reset_empties_and_keeps_allocation(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 64);
    assert_int_equal(ag_buf_puts(&b, "something"), AG_OK);
    const char *p = b.p;
    size_t cap = b.cap;
    ag_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    assert_ptr_equal(b.p, p);
    assert_int_equal(b.cap, cap);
    assert_int_equal(ag_buf_puts(&b, "new"), AG_OK);
    assert_string_equal(b.p, "new");
    ag_buf_free(&b);
}

static void free_releases_contents_and_keeps_cap(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 16);
    assert_int_equal(ag_buf_puts(&b, "abc"), AG_OK);
    ag_buf_free(&b);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    assert_int_equal(b.max, 16);
}

static void json_string_escapes_quotes_and_backslashes(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 256);
    assert_int_equal(ag_buf_json_string(&b, "a\"b\\c"), AG_OK);
    assert_string_equal(b.p, "\"a\\\"b\\\\c\"");
    char *back = json_string_back(&b);
    assert_string_equal(back, "a\"b\\c");
    free(back);
    ag_buf_free(&b);
}

static void json_string_escapes_control_characters(void **state)
{
    (void)state;
    const char *in = "l1\nl2\r\t\x01\x1f\x7f end";
    struct ag_buf b;
    ag_buf_init(&b, 256);
    assert_int_equal(ag_buf_json_string(&b, in), AG_OK);
    for (size_t i = 0; i < b.len; i++) {
        unsigned char c = (unsigned char)b.p[i];
        if (c < 0x20 || c == 0x7f)
            fail_msg("raw control byte 0x%02x at %zu in %s", c, i, b.p);
    }
    char *back = json_string_back(&b);
    assert_string_equal(back, in);
    free(back);
    ag_buf_free(&b);
}

static void json_string_passes_utf8_through(void **state)
{
    (void)state;
    const char *in = "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87 \xe2\x82\xac";
    struct ag_buf b;
    ag_buf_init(&b, 256);
    assert_int_equal(ag_buf_json_string(&b, in), AG_OK);
    assert_int_equal(b.len, strlen(in) + 2);
    assert_int_equal(b.p[0], '"');
    assert_memory_equal(b.p + 1, in, strlen(in));
    assert_int_equal(b.p[b.len - 1], '"');
    ag_buf_free(&b);
}

static void json_string_of_empty_text_is_two_quotes(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 16);
    assert_int_equal(ag_buf_json_string(&b, ""), AG_OK);
    assert_string_equal(b.p, "\"\"");
    ag_buf_free(&b);
}

static void json_string_appends_after_existing_content(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 64);
    assert_int_equal(ag_buf_puts(&b, "{\"k\":"), AG_OK);
    assert_int_equal(ag_buf_json_string(&b, "v"), AG_OK);
    assert_int_equal(ag_buf_puts(&b, "}"), AG_OK);
    assert_string_equal(b.p, "{\"k\":\"v\"}");
    ag_buf_free(&b);
}

/* A buffer of cap 10 holding "ab", and json_string(text) refused on it:
 * the buffer is left as it was. */
static void assert_json_string_refused(const char *text)
{
    struct ag_buf b;
    ag_buf_init(&b, 10);
    assert_int_equal(ag_buf_puts(&b, "ab"), AG_OK);
    assert_int_equal(ag_buf_json_string(&b, text), AG_ETOOBIG);
    assert_int_equal(b.len, 2);
    assert_string_equal(b.p, "ab");
    assert_int_equal(ag_buf_error(&b), AG_ETOOBIG);
    ag_buf_free(&b);
}

static void json_string_past_cap_leaves_buffer_unchanged(void **state)
{
    (void)state;
    /* Fails part-way through the characters. */
    assert_json_string_refused("abcdefghij");
    /* Fails on the second escape sequence. */
    assert_json_string_refused("\x01\x01");
    /* Fails only on the closing quote. */
    assert_json_string_refused("abcdefg");
    /* What fits exactly is written whole. */
    struct ag_buf b;
    ag_buf_init(&b, 10);
    assert_int_equal(ag_buf_puts(&b, "ab"), AG_OK);
    assert_int_equal(ag_buf_json_string(&b, "abcdef"), AG_OK);
    assert_int_equal(b.len, 10);
    assert_string_equal(b.p, "ab\"abcdef\"");
    ag_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_concatenate_and_stay_nul_terminated),
        cmocka_unit_test(append_exactly_to_cap_succeeds),
        cmocka_unit_test(reserve_makes_room_without_changing_contents),
        cmocka_unit_test(append_past_cap_fails_and_leaves_buffer_unchanged),
        cmocka_unit_test(appends_after_a_failure_do_nothing_and_keep_its_code),
        cmocka_unit_test(reset_clears_the_error),
        cmocka_unit_test(init_after_free_clears_the_error),
        cmocka_unit_test(first_append_past_cap_allocates_nothing),
        cmocka_unit_test(printf_past_cap_fails_and_leaves_buffer_unchanged),
        cmocka_unit_test(buffer_grows_past_first_allocation_keeping_contents),
        cmocka_unit_test(allocation_never_exceeds_cap_plus_nul),
        cmocka_unit_test(reset_empties_and_keeps_allocation),
        cmocka_unit_test(free_releases_contents_and_keeps_cap),
        cmocka_unit_test(json_string_escapes_quotes_and_backslashes),
        cmocka_unit_test(json_string_escapes_control_characters),
        cmocka_unit_test(json_string_passes_utf8_through),
        cmocka_unit_test(json_string_of_empty_text_is_two_quotes),
        cmocka_unit_test(json_string_appends_after_existing_content),
        cmocka_unit_test(json_string_past_cap_leaves_buffer_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
