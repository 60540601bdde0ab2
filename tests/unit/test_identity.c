/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_identity: normalisation of users, devices, phones and IP addresses,
 * and the keyed digest that turns them into key material.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_identity.h"

static int init_sodium(void **state)
{
    (void)state;
    return sodium_init() < 0 ? -1 : 0;
}

static int user(const char *in, char *out, struct ag_error *why)
{
    memset(why, 0, sizeof *why);
    return ag_identity_user(in, strlen(in), out, "user", why);
}

static int phone(const char *in, char *out, struct ag_error *why)
{
    memset(why, 0, sizeof *why);
    return ag_identity_phone(in, strlen(in), out, "phone", why);
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

static void expect_phone(const char *in, const char *want)
{
    char out[AG_PHONE_MAX + 1];
    struct ag_error why = {0};
    int rc = phone(in, out, &why);
    if (rc != AG_OK)
        fail_msg("phone '%s': rc %d (%s)", in, rc, why.msg);
    assert_string_equal(out, want);
}

static void expect_phone_refused(const char *in)
{
    char out[AG_PHONE_MAX + 1];
    struct ag_error why = {0};
    int rc = phone(in, out, &why);
    if (rc != AG_EINVAL)
        fail_msg("phone '%s': rc %d, want AG_EINVAL", in, rc);
    assert_int_equal(why.code, AG_EINVAL);
}

static void expect_ip(const char *in, int family, const char *text)
{
    struct ag_ip ip;
    struct ag_error why = {0};
    int rc = ag_identity_ip(in, &ip, "ip", &why);
    if (rc != AG_OK)
        fail_msg("ip '%s': rc %d (%s)", in, rc, why.msg);
    assert_int_equal(ip.family, family);
    assert_string_equal(ip.text, text);
}

static void expect_ip_refused(const char *in)
{
    struct ag_ip ip;
    struct ag_error why = {0};
    int rc = ag_identity_ip(in, &ip, "ip", &why);
    if (rc != AG_EINVAL)
        fail_msg("ip '%s': rc %d, want AG_EINVAL", in, rc);
    assert_int_equal(why.code, AG_EINVAL);
}

/* Users and devices. */

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

/* Phones. */

static void phone_spaces_are_removed(void **state)
{
    (void)state;
    expect_phone("+48 600 100 200", "+48600100200");
    expect_phone(" +48600100200 ", "+48600100200");
}

static void phone_dashes_dots_and_parentheses_are_removed(void **state)
{
    (void)state;
    expect_phone("+1 (415) 555-0100", "+14155550100");
    expect_phone("+48.600.100.200", "+48600100200");
    expect_phone("+48 (600) 100-200", "+48600100200");
}

static void phone_trunk_zero_after_country_code_is_dropped(void **state)
{
    (void)state;
    expect_phone("+44 (0)7911 123456", "+447911123456");
    expect_phone("+44(0)7911123456", "+447911123456");
    expect_phone("+44 (0) 7911 123456", "+447911123456");
    expect_phone("+49 (0)30 1234567", "+49301234567");
    expect_phone("+7(0)9161234567", "+79161234567");
    expect_phone("+358 (0)40 1234567", "+358401234567");
}

static void phone_zero_elsewhere_in_parentheses_is_kept(void **state)
{
    (void)state;
    /* Past the country code a "(0)" is a digit of the number. */
    expect_phone("+44 7911 (0)23456", "+447911023456");
    expect_phone("+4479 (0)11123456", "+4479011123456");
    /* Only the exact "(0)" is a trunk zero. */
    expect_phone("+44 (00)7911 12345", "+4400791112345");
    expect_phone("+44 ( 0 )7911 123456", "+4407911123456");
}

static void phone_without_plus_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("48600100200");
    expect_phone_refused("0048600100200");
    expect_phone_refused("");
    expect_phone_refused("+");
}

static void phone_with_plus_not_first_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("48+600100200");
    expect_phone_refused("+48+600100200");
    expect_phone_refused("++48600100200");
}

static void phone_country_code_starting_with_zero_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("+048600100200");
}

static void phone_digit_count_must_be_8_to_15(void **state)
{
    (void)state;
    expect_phone_refused("+1234567");
    expect_phone("+12345678", "+12345678");
    expect_phone("+123456789012345", "+123456789012345");
    expect_phone("+1 234 567 890 123 45", "+123456789012345");
    expect_phone_refused("+1234567890123456");
    expect_phone_refused("+1 234 567 890 123 456");
    expect_phone_refused("+12345678901234567890123456789");
}

static void phone_with_letters_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("+48 600 CALL ME");
    expect_phone_refused("+4860010020a");
    expect_phone_refused("+48600100200x1");
}

/* IP addresses. */

static void ipv4_mapped_ipv6_becomes_ipv4(void **state)
{
    (void)state;
    expect_ip("::FFFF:1.2.3.4", AF_INET, "1.2.3.4");
    expect_ip("::ffff:0a00:0001", AF_INET, "10.0.0.1");
    struct ag_ip ip;
    struct ag_error why = {0};
    assert_int_equal(ag_identity_ip("::ffff:1.2.3.4", &ip, "ip", &why), AG_OK);
    const unsigned char want[16] = {1, 2, 3, 4};
    assert_memory_equal(ip.addr, want, sizeof want);
}

static void ipv6_is_printed_canonically(void **state)
{
    (void)state;
    expect_ip("2001:DB8::0:1", AF_INET6, "2001:db8::1");
    expect_ip("2001:0db8:0000:0000:0000:0000:0000:0001", AF_INET6,
              "2001:db8::1");
    expect_ip("::1", AF_INET6, "::1");
    struct ag_ip ip;
    struct ag_error why = {0};
    assert_int_equal(ag_identity_ip("2001:db8::1", &ip, "ip", &why), AG_OK);
    const unsigned char want[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                    0,    0,    0,    0,    0, 0, 0, 1};
    assert_memory_equal(ip.addr, want, sizeof want);
}

static void ipv4_is_kept(void **state)
{
    (void)state;
    expect_ip("192.168.0.1", AF_INET, "192.168.0.1");
    expect_ip("0.0.0.0", AF_INET, "0.0.0.0");
    expect_ip("255.255.255.255", AF_INET, "255.255.255.255");
}

/* Every IPv4 address's text is the one inet_ntop writes: each octet value
 * in each position, with the others varied. The service formats IPv4 by
 * hand (ag_identity.c); inet_ntop is the reference. */
static void ipv4_text_matches_inet_ntop(void **state)
{
    (void)state;
    for (unsigned pos = 0; pos < 4; pos++) {
        for (unsigned v = 0; v < 256; v++) {
            unsigned char a[4] = {(unsigned char)(v * 7), (unsigned char)v,
                                  (unsigned char)(255 - v),
                                  (unsigned char)(v / 3)};
            a[pos] = (unsigned char)v;
            char want[INET_ADDRSTRLEN];
            assert_non_null(inet_ntop(AF_INET, a, want, sizeof want));
            struct ag_ip ip;
            struct ag_error why = {0};
            assert_int_equal(ag_identity_ip(want, &ip, "ip", &why), AG_OK);
            assert_string_equal(ip.text, want);
            char prefix[AG_IP_PREFIX_MAX], want_prefix[INET_ADDRSTRLEN + 3];
            unsigned char net[4] = {a[0], a[1], a[2], 0};
            assert_non_null(inet_ntop(AF_INET, net, want_prefix, sizeof want));
            strcat(want_prefix, "/24");
            ag_identity_ip_net(&ip, 24, prefix);
            assert_string_equal(prefix, want_prefix);
        }
    }
}

static void malformed_ip_is_refused(void **state)
{
    (void)state;
    expect_ip_refused("1.2.3");
    expect_ip_refused("1.2.3.256");
    expect_ip_refused("1.2.3.4.5");
    expect_ip_refused("fe80::1%eth0");
    expect_ip_refused("");
    expect_ip_refused(" 1.2.3.4");
    expect_ip_refused("1.2.3.4 ");
    expect_ip_refused("1.2.3.4/24");
    expect_ip_refused("2001:db8:::1");
    expect_ip_refused("[::1]");
    expect_ip_refused("localhost");
    expect_ip_refused("0x7f.0.0.1");
}

/* The keyed digest. */

static void hasher_from(struct ag_hasher *h, unsigned char fill, size_t len)
{
    unsigned char secret[128];
    assert_true(len <= sizeof secret);
    memset(secret, fill, len);
    ag_hasher_init(h, secret, len);
}

static void digest_of(const struct ag_hasher *h, const char *kind,
                      const char *value, char *out)
{
    struct ag_ident_part p = {kind, value};
    ag_hasher_digest(h, &p, 1, out);
}

static void same_input_gives_same_digest(void **state)
{
    (void)state;
    struct ag_hasher h1, h2;
    hasher_from(&h1, 0x5a, 32);
    hasher_from(&h2, 0x5a, 32);
    char a[AG_DIGEST_HEX + 1], b[AG_DIGEST_HEX + 1], c[AG_DIGEST_HEX + 1];
    digest_of(&h1, "user", "ana@example.com", a);
    digest_of(&h2, "user", "ana@example.com", b);
    digest_of(&h1, "user", "ana@example.com", c);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    digest_of(&h1, "user", "bob@example.com", c);
    assert_string_not_equal(a, c);
}

static void different_secret_gives_different_digest(void **state)
{
    (void)state;
    struct ag_hasher h1, h2, none;
    hasher_from(&h1, 0x5a, 32);
    hasher_from(&h2, 0x5b, 32);
    hasher_from(&none, 0, 0);
    char a[AG_DIGEST_HEX + 1], b[AG_DIGEST_HEX + 1], c[AG_DIGEST_HEX + 1];
    digest_of(&h1, "user", "ana@example.com", a);
    digest_of(&h2, "user", "ana@example.com", b);
    digest_of(&none, "user", "ana@example.com", c);
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, c);
}

static void whole_long_secret_keys_the_digest(void **state)
{
    (void)state;
    /* Secrets over 64 bytes are compressed, not truncated: two that differ
     * only in their last byte give different digests. */
    unsigned char s1[100], s2[100];
    memset(s1, 0x11, sizeof s1);
    memcpy(s2, s1, sizeof s2);
    s2[99] ^= 1;
    struct ag_hasher h1, h2;
    ag_hasher_init(&h1, s1, sizeof s1);
    ag_hasher_init(&h2, s2, sizeof s2);
    assert_int_equal(h1.keylen, crypto_generichash_KEYBYTES_MAX);
    char a[AG_DIGEST_HEX + 1], b[AG_DIGEST_HEX + 1];
    digest_of(&h1, "ip", "1.2.3.4", a);
    digest_of(&h2, "ip", "1.2.3.4", b);
    assert_string_not_equal(a, b);
}

static void kind_tag_changes_the_digest(void **state)
{
    (void)state;
    struct ag_hasher h;
    hasher_from(&h, 0x42, 32);
    char a[AG_DIGEST_HEX + 1], b[AG_DIGEST_HEX + 1];
    digest_of(&h, "user", "x", a);
    digest_of(&h, "ip", "x", b);
    assert_string_not_equal(a, b);
    digest_of(&h, "user", "1.2.3.4", a);
    digest_of(&h, "ip", "1.2.3.4", b);
    assert_string_not_equal(a, b);
}

static void part_boundaries_change_the_digest(void **state)
{
    (void)state;
    struct ag_hasher h;
    hasher_from(&h, 0x42, 32);
    char a[AG_DIGEST_HEX + 1], b[AG_DIGEST_HEX + 1];
    const struct ag_ident_part p1[] = {{"user", "ab"}, {"user", "c"}};
    const struct ag_ident_part p2[] = {{"user", "a"}, {"user", "bc"}};
    ag_hasher_digest(&h, p1, 2, a);
    ag_hasher_digest(&h, p2, 2, b);
    assert_string_not_equal(a, b);
    /* Nor may a value's bytes slide into the kind tag. */
    const struct ag_ident_part p3[] = {{"user", "x"}};
    const struct ag_ident_part p4[] = {{"use", "rx"}};
    ag_hasher_digest(&h, p3, 1, a);
    ag_hasher_digest(&h, p4, 1, b);
    assert_string_not_equal(a, b);
}

static void part_order_changes_the_digest(void **state)
{
    (void)state;
    struct ag_hasher h;
    hasher_from(&h, 0x42, 32);
    char a[AG_DIGEST_HEX + 1], b[AG_DIGEST_HEX + 1];
    const struct ag_ident_part p1[] = {{"user", "ana"}, {"ip", "1.2.3.4"}};
    const struct ag_ident_part p2[] = {{"ip", "1.2.3.4"}, {"user", "ana"}};
    ag_hasher_digest(&h, p1, 2, a);
    ag_hasher_digest(&h, p2, 2, b);
    assert_string_not_equal(a, b);
    /* A part list and its prefix differ too. */
    ag_hasher_digest(&h, p1, 1, b);
    assert_string_not_equal(a, b);
}

static void digest_is_lowercase_hex_without_plaintext(void **state)
{
    (void)state;
    struct ag_hasher h;
    hasher_from(&h, 0x42, 32);
    /* A plaintext made of hex digits, so that it could appear. */
    const char *plain = "deadbeef";
    char out[AG_DIGEST_HEX + 8];
    memset(out, 'Z', sizeof out);
    digest_of(&h, "user", plain, out);
    assert_int_equal(strlen(out), AG_DIGEST_HEX);
    assert_int_equal(AG_DIGEST_HEX, 32);
    for (size_t i = 0; i < AG_DIGEST_HEX; i++) {
        char c = out[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            fail_msg("digest %s has '%c' at %zu", out, c, i);
    }
    assert_null(strstr(out, plain));
    /* Nothing past the NUL is written. */
    assert_int_equal(out[AG_DIGEST_HEX + 1], 'Z');
}

static void wiped_hasher_holds_no_key(void **state)
{
    (void)state;
    struct ag_hasher h;
    hasher_from(&h, 0x42, 32);
    ag_hasher_wipe(&h);
    assert_int_equal(h.keylen, 0);
    unsigned char zero[sizeof h.key] = {0};
    assert_memory_equal(h.key, zero, sizeof zero);
}

static void expect_ip_net(const char *in, unsigned bits, const char *want)
{
    struct ag_ip ip;
    struct ag_error why = {0};
    char out[AG_IP_PREFIX_MAX];
    assert_int_equal(ag_identity_ip(in, &ip, "ip", &why), AG_OK);
    ag_identity_ip_net(&ip, bits, out);
    if (strcmp(out, want) != 0)
        fail_msg("%s/%u is '%s', want '%s'", in, bits, out, want);
}

static void ip_net_is_the_network_of_the_given_prefix(void **state)
{
    (void)state;
    expect_ip_net("203.0.113.77", 24, "203.0.113.0/24");
    expect_ip_net("::ffff:198.51.100.200", 24, "198.51.100.0/24");
    expect_ip_net("2001:db8:1:2:ffff::9", 64, "2001:db8:1:2::/64");
    expect_ip_net("2001:db8:1:2:ffff::9", 48, "2001:db8:1::/48");
    /* Prefixes that end inside a byte. */
    expect_ip_net("203.0.113.77", 20, "203.0.112.0/20");
    expect_ip_net("2001:db8:1:2ff::9", 56, "2001:db8:1:200::/56");
    expect_ip_net("2001:db8:abcd::1", 36, "2001:db8:a000::/36");
}

static void ip_net_of_a_whole_address_is_the_address(void **state)
{
    (void)state;
    /* An IPv4 ip key stays the address, as before IPv6 counted by /64. */
    expect_ip_net("192.0.2.1", 32, "192.0.2.1");
    expect_ip_net("2001:db8::1", 128, "2001:db8::1");
}

static void phone_prefix_keeps_the_first_digits(void **state)
{
    (void)state;
    char out[AG_PHONE_MAX + 1];
    ag_identity_phone_prefix("+48600100200", 5, out);
    assert_string_equal(out, "+48600");
    ag_identity_phone_prefix("+48600100200", 15, out);
    assert_string_equal(out, "+48600100200");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ascii_shortcut_agrees_with_the_unicode_path),
        cmocka_unit_test(ip_net_is_the_network_of_the_given_prefix),
        cmocka_unit_test(ip_net_of_a_whole_address_is_the_address),
        cmocka_unit_test(phone_prefix_keeps_the_first_digits),
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
        cmocka_unit_test(phone_spaces_are_removed),
        cmocka_unit_test(phone_dashes_dots_and_parentheses_are_removed),
        cmocka_unit_test(phone_trunk_zero_after_country_code_is_dropped),
        cmocka_unit_test(phone_zero_elsewhere_in_parentheses_is_kept),
        cmocka_unit_test(phone_without_plus_is_refused),
        cmocka_unit_test(phone_with_plus_not_first_is_refused),
        cmocka_unit_test(phone_country_code_starting_with_zero_is_refused),
        cmocka_unit_test(phone_digit_count_must_be_8_to_15),
        cmocka_unit_test(phone_with_letters_is_refused),
        cmocka_unit_test(ipv4_mapped_ipv6_becomes_ipv4),
        cmocka_unit_test(ipv6_is_printed_canonically),
        cmocka_unit_test(ipv4_is_kept),
        cmocka_unit_test(ipv4_text_matches_inet_ntop),
        cmocka_unit_test(malformed_ip_is_refused),
        cmocka_unit_test(same_input_gives_same_digest),
        cmocka_unit_test(different_secret_gives_different_digest),
        cmocka_unit_test(whole_long_secret_keys_the_digest),
        cmocka_unit_test(kind_tag_changes_the_digest),
        cmocka_unit_test(part_boundaries_change_the_digest),
        cmocka_unit_test(part_order_changes_the_digest),
        cmocka_unit_test(digest_is_lowercase_hex_without_plaintext),
        cmocka_unit_test(wiped_hasher_holds_no_key),
    };
    return cmocka_run_group_tests(tests, init_sodium, NULL);
}
