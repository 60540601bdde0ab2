/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_pwned_hash: MD4 gives RFC 1320's test vectors (block boundaries
 * included); SHA-1 and NTLM of known passwords match the values Pwned
 * Passwords is keyed by, NTLM through UTF-16 (surrogate pairs too); text
 * that is not UTF-8 has no NTLM hash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_pwned_hash.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void md4_matches_rfc_1320_vectors(void **state)
{
    (void)state;
    static const struct {
        const char *in, *md4;
    } v[] = {
        {"", "31d6cfe0d16ae931b73c59d7e0c089c0"},
        {"a", "bde52cb31de33e46245e05fbdbd6fb24"},
        {"abc", "a448017aaf21d8525fc10ae87aa6729d"},
        {"message digest", "d9130a8164549fe818874806e1c7014b"},
        {"abcdefghijklmnopqrstuvwxyz", "d79e1c308aa5bbcdeea8ed63df412da9"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "043f8582f241db351ce627e153e7f0e4"},
        {"1234567890123456789012345678901234567890123456789012345678901234"
         "5678901234567890",
         "e33b4ddc9c38f2199c3e7b164fcc0536"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint8_t out[16];
        char h[33];
        ag_pwned_md4((const uint8_t *)v[i].in, strlen(v[i].in), out);
        hex(out, 16, h);
        assert_string_equal(h, v[i].md4);
    }
}

static void password_hashes_match_pwned_passwords_keys(void **state)
{
    (void)state;
    static const struct {
        enum ag_pwned_mode mode;
        const char *pw, *hash;
    } v[] = {
        {AG_PWNED_SHA1, "password", "5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8"},
        {AG_PWNED_SHA1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {AG_PWNED_NTLM, "password", "8846f7eaee8fb117ad06bdd830b7586c"},
        {AG_PWNED_NTLM, "", "31d6cfe0d16ae931b73c59d7e0c089c0"},
        /* é, one UTF-16 unit: MD4 of e9 00 (OpenSSL's legacy MD4 says
         * the same). */
        {AG_PWNED_NTLM, "\xc3\xa9", "e77286d072c7858e9110cc3a011d2ac8"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint8_t out[20];
        char h[41];
        size_t len = v[i].mode == AG_PWNED_SHA1 ? 20 : 16;
        assert_int_equal(
            ag_pwned_hash_password(v[i].mode, v[i].pw, strlen(v[i].pw), out),
            AG_OK);
        hex(out, len, h);
        assert_string_equal(h, v[i].hash);
    }
}

static void ntlm_is_md4_of_utf16le_with_surrogate_pairs(void **state)
{
    (void)state;
    /* "aé😀": a, U+00E9, U+1F600 (D83D DE00), little-endian. */
    static const uint8_t utf16[] = {0x61, 0x00, 0xe9, 0x00,
                                    0x3d, 0xd8, 0x00, 0xde};
    const char *pw = "a\xc3\xa9\xf0\x9f\x98\x80";
    uint8_t want[16], got[16];
    ag_pwned_md4(utf16, sizeof(utf16), want);
    assert_int_equal(ag_pwned_hash_password(AG_PWNED_NTLM, pw, strlen(pw), got),
                     AG_OK);
    assert_memory_equal(got, want, 16);
}

static void ntlm_refuses_text_that_is_not_utf8(void **state)
{
    (void)state;
    static const char *bad[] = {
        "\xff",         /* never in UTF-8 */
        "\xc3",         /* cut short */
        "\xc0\xaf",     /* overlong '/' */
        "\xed\xa0\x80", /* a surrogate */
        "ok\x80",       /* a lone continuation byte */
    };
    uint8_t out[16];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(
            ag_pwned_hash_password(AG_PWNED_NTLM, bad[i], strlen(bad[i]), out),
            AG_EINVAL);
    /* SHA-1 hashes bytes as they are. */
    assert_int_equal(ag_pwned_hash_password(AG_PWNED_SHA1, "\xff", 1, out),
                     AG_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(md4_matches_rfc_1320_vectors),
        cmocka_unit_test(password_hashes_match_pwned_passwords_keys),
        cmocka_unit_test(ntlm_is_md4_of_utf16le_with_surrogate_pairs),
        cmocka_unit_test(ntlm_refuses_text_that_is_not_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
