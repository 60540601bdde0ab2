/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_identity: normalisation of users (trimmed, NFKC case-folded, refused
 * when not clean UTF-8 or over 256 bytes) and devices (trimmed, case
 * kept). An address's domain is in test_identity_domain.c, phones in
 * test_identity_phone.c, IP addresses in test_identity_ip.c, the keyed
 * digest in test_identity_digest.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_identity.h"

static int user(const char *in, char *out, struct ag_error *why)
{
    memset(why, 0, sizeof *why);
    return ag_identity_user(in, strlen(in), out, "user", why);
}

static void expect_user_refused(const char *in, size_t len, const char *want)
{
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    int rc = ag_identity_user(in, len, out, "user", &why);
    if (rc != AG_EINVAL)
        fail_msg("user of %zu bytes: rc %d, want AG_EINVAL", len, rc);
    assert_int_equal(why.code, AG_EINVAL);
    if (!strstr(why.msg, want))
        fail_msg("user of %zu bytes: why '%s' lacks '%s'", len, why.msg, want);
}

static void user_is_trimmed_and_case_folded(void **state)
{
    (void)state;
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    assert_int_equal(user(" ANA@Example.COM ", out, &why), AG_OK);
    assert_string_equal(out, "ana@example.com");
    assert_int_equal(user("\t\r\n Bob Smith\v\f\n", out, &why), AG_OK);
    assert_string_equal(out, "bob smith");
}

static void expect_user(const char *in, const char *want)
{
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    int rc = user(in, out, &why);
    if (rc != AG_OK)
        fail_msg("user '%s': rc %d (%s)", in, rc, why.msg);
    if (strcmp(out, want) != 0)
        fail_msg("user '%s' is '%s', want '%s'", in, out, want);
}

static void unicode_spellings_of_one_user_are_one_user(void **state)
{
    (void)state;
    const char *want = "\xc3\xa0na@example.com"; /* "àna@example.com" */
    expect_user("\xc3\x80NA@example.com", want); /* "ÀNA", composed */
    expect_user("\xc3\xa0na@example.com", want);
    expect_user("a\xcc\x80na@example.com", want); /* NFD: a, U+0300 */
    expect_user("A\xcc\x80NA@EXAMPLE.COM", want);
    /* Fullwidth "ａｎａ" and "＠" (U+FF41, U+FF4E, U+FF20). */
    expect_user("\xef\xbd\x81\xef\xbd\x8e\xef\xbd\x81@example.com",
                "ana@example.com");
    expect_user("\xef\xbc\xa1NA\xef\xbc\xa0"
                "example.com",
                "ana@example.com");
    /* A zero-width space, joiner and soft hyphen inside. */
    expect_user("an\xe2\x80\x8b"
                "a@example.com",
                "ana@example.com");
    expect_user("a\xe2\x80\x8dn\xc2\xad"
                "a@example.com",
                "ana@example.com");
    /* NBSP before, U+3000 ideographic space after, U+2003 em space. */
    expect_user("\xc2\xa0"
                "ana@example.com\xe3\x80\x80",
                "ana@example.com");
    expect_user("\xe2\x80\x83"
                "ANA@example.com\t",
                "ana@example.com");
    /* Case folding, not lower-casing: the sharp s folds to "ss". */
    expect_user("STRA\xc3\x9f"
                "E",
                "strasse");
    expect_user("strasse", "strasse");
}

static void user_plus_tags_and_dots_are_kept(void **state)
{
    (void)state;
    expect_user("Ana+Shop@example.com", "ana+shop@example.com");
    expect_user("a.na@example.com", "a.na@example.com");
    expect_user("ana@example.com.", "ana@example.com.");
    expect_user("ana..@example.com", "ana..@example.com");
}

static void user_inner_unicode_space_becomes_a_space(void **state)
{
    (void)state;
    expect_user("Bob\xc2\xa0Smith", "bob smith");
    expect_user("Bob\xe3\x80\x80Smith", "bob smith");
}

static void user_of_invalid_utf8_is_refused(void **state)
{
    (void)state;
    expect_user_refused("ana\xff", 4, "UTF-8");
    expect_user_refused("ana\xc3", 4, "UTF-8"); /* cut short */
    expect_user_refused("\x80"
                        "ana",
                        4, "UTF-8"); /* lone continuation */
    expect_user_refused("\xc0\xaf"
                        "ana",
                        5, "UTF-8"); /* overlong '/' */
    expect_user_refused("\xed\xa0\x80"
                        "a",
                        4, "UTF-8");                     /* a surrogate */
    expect_user_refused("\xf4\x90\x80\x80", 4, "UTF-8"); /* past U+10FFFF */
}

static void user_with_c1_control_is_refused(void **state)
{
    (void)state;
    expect_user_refused("ana\xc2\x85x", 6, "control"); /* NEL */
    expect_user_refused("ana\xc2\x9b", 5, "control");  /* CSI */
    expect_user_refused("\xc2\x85"
                        "ana",
                        5, "control");
    expect_user_refused("ana\xc2\x80", 5, "control");
}

static void user_with_line_or_paragraph_separator_is_refused(void **state)
{
    (void)state;
    expect_user_refused("ana\xe2\x80\xa8x", 7, "separator");
    expect_user_refused("ana\xe2\x80\xa9", 6, "separator");
    /* Not trimmed either, though they are white space. */
    expect_user_refused("\xe2\x80\xa8"
                        "ana",
                        6, "separator");
}

static void user_with_bidi_control_is_refused(void **state)
{
    (void)state;
    static const char *const bidi[] = {
        "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad",
        "\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8",
        "\xe2\x81\xa9", "\xe2\x80\x8e", "\xe2\x80\x8f", "\xd8\x9c",
    };
    for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++) {
        char in[32];
        int n = snprintf(in, sizeof in, "an%sa@example.com", bidi[i]);
        expect_user_refused(in, (size_t)n, "bidirectional");
    }
}

static void user_with_unassigned_code_point_is_refused(void **state)
{
    (void)state;
    expect_user_refused("ana\xcd\xb8", 5, "unassigned");     /* U+0378 */
    expect_user_refused("ana\xef\xb7\x90", 6, "unassigned"); /* U+FDD0 */
    expect_user_refused("\xf4\x8f\xbf\xbf"
                        "a",
                        5, "unassigned"); /* U+10FFFF */
}

static void user_made_only_of_ignorables_is_refused(void **state)
{
    (void)state;
    expect_user_refused("\xe2\x80\x8b\xc2\xad", 5, "empty");
    expect_user_refused("\xc2\xa0\xe3\x80\x80", 5, "empty");
}

static void user_longer_than_256_bytes_once_folded_is_refused(void **state)
{
    (void)state;
    /* U+0149 is two bytes and folds to three (U+02BC 'n'): 200 bytes in,
     * 300 out. */
    char in[201];
    for (size_t i = 0; i < 200; i += 2)
        memcpy(in + i, "\xc5\x89", 2);
    in[200] = '\0';
    expect_user_refused(in, 200, "256");
}

static void fullwidth_user_of_256_letters_is_accepted(void **state)
{
    (void)state;
    /* 768 bytes of U+FF41 are the 256 bytes of "aaa...". */
    char in[3 * AG_USER_MAX + 1];
    for (size_t i = 0; i < 3 * AG_USER_MAX; i += 3)
        memcpy(in + i, "\xef\xbd\x81", 3);
    in[3 * AG_USER_MAX] = '\0';
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    assert_int_equal(user(in, out, &why), AG_OK);
    assert_int_equal(strlen(out), AG_USER_MAX);
    assert_int_equal(out[0], 'a');
    assert_int_equal(out[AG_USER_MAX - 1], 'a');
}

static void user_over_1024_bytes_is_refused_before_folding(void **state)
{
    (void)state;
    char in[4 * AG_USER_MAX + 2];
    memset(in, 'a', sizeof in - 1);
    in[sizeof in - 1] = '\0';
    expect_user_refused(in, sizeof in - 1, "256");
}

/* Puts c into out as UTF-8; its length. */
static size_t utf8_of(unsigned c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3f));
    out[2] = (char)(0x80 | (c >> 6 & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

static void normalising_twice_equals_once_for_every_code_point(void **state)
{
    (void)state;
    /* Each code point alone, after a letter, and before a combining mark
     * (where reordering and composition happen). */
    static const char *const around[][2] = {
        {"", ""}, {"A", "b"}, {"", "\xcc\x81"}, {"\xc2\xa8", "\xcd\x85"}};
    size_t accepted = 0;
    for (unsigned c = 0; c <= 0x10ffff; c++) {
        if (c >= 0xd800 && c <= 0xdfff)
            continue;
        for (size_t a = 0; a < sizeof around / sizeof around[0]; a++) {
            char in[16];
            size_t n = strlen(around[a][0]);
            memcpy(in, around[a][0], n);
            n += utf8_of(c, in + n);
            size_t m = strlen(around[a][1]);
            memcpy(in + n, around[a][1], m);
            n += m;
            char once[AG_USER_MAX + 1], twice[AG_USER_MAX + 1];
            struct ag_error why;
            if (ag_identity_user(in, n, once, "user", &why) != AG_OK)
                continue;
            accepted++;
            if (ag_identity_user(once, strlen(once), twice, "user", &why) !=
                AG_OK)
                fail_msg("U+%04X (%zu): '%s' refused: %s", c, a, once, why.msg);
            if (strcmp(once, twice) != 0)
                fail_msg("U+%04X (%zu): '%s' then '%s'", c, a, once, twice);
        }
    }
    /* Most of Unicode is assigned: the loop did test something. */
    assert_true(accepted > 500000);
}

static void user_of_256_bytes_is_accepted(void **state)
{
    (void)state;
    char in[AG_USER_MAX + 4];
    in[0] = ' ';
    memset(in + 1, 'A', AG_USER_MAX);
    in[AG_USER_MAX + 1] = ' ';
    in[AG_USER_MAX + 2] = '\0';
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    /* The limit applies after trimming. */
    assert_int_equal(user(in, out, &why), AG_OK);
    assert_int_equal(strlen(out), AG_USER_MAX);
    for (size_t i = 0; i < AG_USER_MAX; i++)
        assert_int_equal(out[i], 'a');
}

static void user_of_257_bytes_is_refused(void **state)
{
    (void)state;
    char in[AG_USER_MAX + 2];
    memset(in, 'a', AG_USER_MAX + 1);
    in[AG_USER_MAX + 1] = '\0';
    expect_user_refused(in, AG_USER_MAX + 1, "256");
}

static void user_with_control_character_is_refused(void **state)
{
    (void)state;
    expect_user_refused("ana\x01x", 5, "control");
    expect_user_refused("ana\tx", 5, "control");
    expect_user_refused("ana\nx", 5, "control");
    expect_user_refused("ana\x7f", 4, "control");
    expect_user_refused("ana\0x", 5, "control");
    expect_user_refused("\x1b[31m", 5, "control");
}

static void user_empty_after_trim_is_refused(void **state)
{
    (void)state;
    expect_user_refused("", 0, "empty");
    expect_user_refused("   ", 3, "empty");
    expect_user_refused("\t\r\n", 3, "empty");
}

static void user_length_argument_bounds_the_input(void **state)
{
    (void)state;
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    assert_int_equal(ag_identity_user("AnaXYZ", 3, out, "user", &why), AG_OK);
    assert_string_equal(out, "ana");
}

/* ag_identity_user's ASCII shortcut gives what the Unicode path gives:
 * every byte below 0x80 alone and between letters, around spaces, and
 * seeded random strings of every length to past the cap. */
static void ascii_shortcut_agrees_with_the_unicode_path(void **state)
{
    (void)state;
    char in[AG_USER_MAX + 64];
    char a[AG_USER_MAX + 1], u[AG_USER_MAX + 1];
    struct ag_error ea, eu;
    unsigned seed = 12345;
    for (int round = 0; round < 3000; round++) {
        size_t len;
        if (round < 128) {
            len = (size_t)snprintf(in, sizeof in, " Ab%cZ ", (char)round);
            if (round == 0)
                in[3] = '\0'; /* a NUL inside, with its length */
        } else {
            len = (size_t)(round % (AG_USER_MAX + 40));
            for (size_t i = 0; i < len; i++) {
                seed = seed * 1103515245u + 12345u;
                in[i] = (char)((seed >> 16) % 0x80);
            }
        }
        memset(&ea, 0, sizeof ea);
        memset(&eu, 0, sizeof eu);
        int ra = ag_identity_user(in, len, a, "user", &ea);
        int ru = ag_identity_user_unicode(in, len, u, "user", &eu);
        if (ra != ru)
            fail_msg("round %d (len %zu): shortcut %d, unicode %d (%s)", round,
                     len, ra, ru, ru ? eu.msg : ea.msg);
        if (ra == AG_OK)
            assert_string_equal(a, u);
        else
            assert_string_equal(ea.msg, eu.msg);
    }
}

static void device_is_trimmed_and_keeps_case(void **state)
{
    (void)state;
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    const char *in = "  DevICE-42\n";
    assert_int_equal(ag_identity_device(in, strlen(in), out, "device", &why),
                     AG_OK);
    assert_string_equal(out, "DevICE-42");
    assert_int_equal(ag_identity_device(" \t", 2, out, "device", &why),
                     AG_EINVAL);
    assert_int_equal(why.code, AG_EINVAL);
    assert_int_equal(ag_identity_device("a\x01", 2, out, "device", &why),
                     AG_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ascii_shortcut_agrees_with_the_unicode_path),
        cmocka_unit_test(user_is_trimmed_and_case_folded),
        cmocka_unit_test(unicode_spellings_of_one_user_are_one_user),
        cmocka_unit_test(user_plus_tags_and_dots_are_kept),
        cmocka_unit_test(user_inner_unicode_space_becomes_a_space),
        cmocka_unit_test(user_of_invalid_utf8_is_refused),
        cmocka_unit_test(user_with_c1_control_is_refused),
        cmocka_unit_test(user_with_line_or_paragraph_separator_is_refused),
        cmocka_unit_test(user_with_bidi_control_is_refused),
        cmocka_unit_test(user_with_unassigned_code_point_is_refused),
        cmocka_unit_test(user_made_only_of_ignorables_is_refused),
        cmocka_unit_test(user_longer_than_256_bytes_once_folded_is_refused),
        cmocka_unit_test(fullwidth_user_of_256_letters_is_accepted),
        cmocka_unit_test(user_over_1024_bytes_is_refused_before_folding),
        cmocka_unit_test(normalising_twice_equals_once_for_every_code_point),
        cmocka_unit_test(user_of_256_bytes_is_accepted),
        cmocka_unit_test(user_of_257_bytes_is_refused),
        cmocka_unit_test(user_with_control_character_is_refused),
        cmocka_unit_test(user_empty_after_trim_is_refused),
        cmocka_unit_test(user_length_argument_bounds_the_input),
        cmocka_unit_test(device_is_trimmed_and_keeps_case),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
