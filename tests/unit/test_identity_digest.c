/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_identity: the keyed digest that turns normalised identifiers into key
 * material: stable for one secret, different for another, separating kinds,
 * parts and their order, lowercase hex that never holds the plaintext.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ag_identity.h"
#include "ag_test_sodium.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
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
