/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_fleet_record: a sealed record opens to its body and its hash at its
 * own place only; a change to any field of the place, to any bit of the
 * blob, to the fleet's name or to the secret makes it not open; text that
 * is not a blob is refused without a crash; each seal takes a new nonce.
 * One vector sealed by the integration harness's own Python code
 * (tests/integration/fleet_harness.py) holds the key derivation, the
 * additional data, the blob and the hash to an independent implementation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_fleet_record.h"
#include "ag_test_sodium.h"

#define BODY "{\"actor\": \"admin-api\", \"ops\": []}"
#define EPOCH "0123456789abcdef0123456789abcdef"
#define PREV "abababababababababababababababababababababababababababababababab"

static const unsigned char secret[] = "a fleet secret of some length";

static struct ag_fleet_place place_at(void)
{
    struct ag_fleet_place p = {"eu-west.1", EPOCH, 7, PREV, AG_FLEET_SCHEMA};
    return p;
}

static struct ag_fleet_key key_of(const unsigned char *s, size_t n,
                                  const char *name)
{
    struct ag_fleet_key k;
    ag_fleet_key_derive(&k, s, n, name);
    return k;
}

/* Seals BODY at p under k; fails the test if it does not seal. */
static char *sealed(const struct ag_fleet_key *k,
                    const struct ag_fleet_place *p, char hash[65])
{
    char *blob = NULL;
    assert_int_equal(ag_fleet_seal(k, p, BODY, strlen(BODY), &blob, hash),
                     AG_OK);
    assert_non_null(blob);
    return blob;
}

/* Whether blob (n bytes) opens at p under k; on success the body must be
 * BODY. */
static int opens(const struct ag_fleet_key *k, const struct ag_fleet_place *p,
                 const char *blob, size_t n)
{
    char *body = NULL;
    size_t len = 0;
    char hash[AG_FLEET_HASH_HEX + 1] = "";
    int rc = ag_fleet_open(k, p, blob, n, &body, &len, hash);
    if (rc == AG_OK) {
        assert_non_null(body);
        free(body);
    } else {
        assert_null(body);
    }
    return rc;
}

static void round_trip_gives_body_and_seal_hash(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    char h1[AG_FLEET_HASH_HEX + 1], h2[AG_FLEET_HASH_HEX + 1] = "";
    char *blob = sealed(&k, &p, h1);
    assert_int_equal(strlen(h1), AG_FLEET_HASH_HEX);
    char *body = NULL;
    size_t len = 0;
    assert_int_equal(ag_fleet_open(&k, &p, blob, strlen(blob), &body, &len, h2),
                     AG_OK);
    assert_int_equal(len, strlen(BODY));
    assert_string_equal(body, BODY);
    assert_string_equal(h1, h2);
    free(body);
    free(blob);
}

static void binary_and_empty_bodies_keep_their_length(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    static const char bin[] = {'a', '\0', 'b', '\0'};
    const size_t lens[] = {sizeof bin, 0};
    for (size_t i = 0; i < 2; i++) {
        char h[AG_FLEET_HASH_HEX + 1], *blob = NULL, *body = NULL;
        size_t len = 99;
        assert_int_equal(ag_fleet_seal(&k, &p, bin, lens[i], &blob, h), AG_OK);
        assert_int_equal(
            ag_fleet_open(&k, &p, blob, strlen(blob), &body, &len, h), AG_OK);
        assert_int_equal(len, lens[i]);
        assert_memory_equal(body, bin, lens[i]);
        assert_int_equal(body[len], '\0');
        free(body);
        free(blob);
    }
}

static void widest_place_seals_and_opens(void **state)
{
    (void)state;
    const char *name = "abcdefghijklmnopqrstuvwxyz012345"; /* 32 */
    struct ag_fleet_key k = key_of(secret, sizeof secret, name);
    struct ag_fleet_place p = {name, EPOCH, INT64_MAX, PREV, UINT_MAX};
    char h[AG_FLEET_HASH_HEX + 1];
    char *blob = sealed(&k, &p, h);
    assert_int_equal(opens(&k, &p, blob, strlen(blob)), AG_OK);
    free(blob);
}

static void any_changed_place_field_does_not_open(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    char h[AG_FLEET_HASH_HEX + 1];
    char *blob = sealed(&k, &p, h);
    size_t n = strlen(blob);
    struct ag_fleet_place q[6];
    for (size_t i = 0; i < 6; i++)
        q[i] = p;
    q[0].name = "eu-west.2";
    q[1].epoch = "0123456789abcdef0123456789abcdee";
    q[2].version = 8;
    q[3].prev = ag_fleet_genesis_prev;
    q[4].schema = AG_FLEET_SCHEMA + 1;
    q[5].version = 6;
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(opens(&k, &q[i], blob, n), AG_EINVAL);
    assert_int_equal(opens(&k, &p, blob, n), AG_OK);
    free(blob);
}

static void place_of_wrong_shape_is_refused(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    char h[AG_FLEET_HASH_HEX + 1];
    char *blob = sealed(&k, &p, h);
    struct ag_fleet_place q[6];
    for (size_t i = 0; i < 6; i++)
        q[i] = p;
    q[0].name = "eu west";
    q[1].name = "";
    q[2].epoch = "0123456789ABCDEF0123456789ABCDEF";
    q[3].prev = "00";
    q[4].version = 0;
    q[5].version = -7;
    for (size_t i = 0; i < 6; i++) {
        char *none = NULL;
        assert_int_equal(ag_fleet_seal(&k, &q[i], BODY, strlen(BODY), &none, h),
                         AG_EINVAL);
        assert_null(none);
        assert_int_equal(opens(&k, &q[i], blob, strlen(blob)), AG_EINVAL);
    }
    free(blob);
}

static void every_flipped_bit_does_not_open(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    char h[AG_FLEET_HASH_HEX + 1];
    char *blob = sealed(&k, &p, h);
    size_t n = strlen(blob);
    /* Every bit of the base64 text, the top bit of a '/' too: libsodium
     * 1.0.18 (Debian 12) decodes every byte from 0x80 up as '/', which
     * opened until the alphabet was checked first. */
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++) {
            blob[i] ^= (char)(1 << b);
            int rc = opens(&k, &p, blob, n);
            blob[i] ^= (char)(1 << b);
            if (rc != AG_EINVAL)
                fail_msg("character %zu bit %d flipped: %d", i, b, rc);
        }
    /* Every bit of the nonce, the ciphertext and the tag, re-encoded. */
    unsigned char nc[256];
    size_t nclen = 0;
    assert_int_equal(sodium_base642bin(nc, sizeof nc, blob, n, NULL, &nclen,
                                       NULL, sodium_base64_VARIANT_ORIGINAL),
                     0);
    char b64[400];
    for (size_t i = 0; i < nclen; i++)
        for (int b = 0; b < 8; b++) {
            nc[i] ^= (unsigned char)(1 << b);
            sodium_bin2base64(b64, sizeof b64, nc, nclen,
                              sodium_base64_VARIANT_ORIGINAL);
            assert_int_equal(opens(&k, &p, b64, strlen(b64)), AG_EINVAL);
            nc[i] ^= (unsigned char)(1 << b);
        }
    assert_int_equal(opens(&k, &p, blob, n), AG_OK);
    free(blob);
}

static void another_fleet_or_secret_key_does_not_open(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    char h[AG_FLEET_HASH_HEX + 1];
    char *blob = sealed(&k, &p, h);
    size_t n = strlen(blob);
    unsigned char other[sizeof secret];
    memcpy(other, secret, sizeof other);
    other[0] ^= 1;
    struct ag_fleet_key wrong[] = {
        key_of(secret, sizeof secret, "eu-west.2"),
        key_of(secret, sizeof secret, "main"),
        key_of(other, sizeof other, "eu-west.1"),
        key_of(secret, sizeof secret - 1, "eu-west.1"),
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        assert_memory_not_equal(wrong[i].k, k.k, sizeof k.k);
        assert_int_equal(opens(&wrong[i], &p, blob, n), AG_EINVAL);
    }
    struct ag_fleet_key same = key_of(secret, sizeof secret, "eu-west.1");
    assert_memory_equal(same.k, k.k, sizeof k.k);
    assert_int_equal(opens(&same, &p, blob, n), AG_OK);
    free(blob);
}

static void text_that_is_not_a_blob_is_refused(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    /* 39 bytes: one short of a nonce and a tag; then exactly 40 zeros. */
    unsigned char zeros[40] = {0};
    char short39[80], zero40[80];
    sodium_bin2base64(short39, sizeof short39, zeros, 39,
                      sodium_base64_VARIANT_ORIGINAL);
    sodium_bin2base64(zero40, sizeof zero40, zeros, 40,
                      sodium_base64_VARIANT_ORIGINAL);
    const char *bad[] = {
        "",         "=",  "A",     "AAAA", "!!!!", "not base64 at all",
        "AAA=AAAA", "\n", short39, zero40};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(opens(&k, &p, bad[i], strlen(bad[i])), AG_EINVAL);

    char h[AG_FLEET_HASH_HEX + 1];
    char *blob = sealed(&k, &p, h);
    size_t n = strlen(blob);
    /* Cut short, or with a byte after its end. */
    assert_int_equal(opens(&k, &p, blob, n - 4), AG_EINVAL);
    char *longer = malloc(n + 2);
    assert_non_null(longer);
    memcpy(longer, blob, n);
    memcpy(longer + n, "AA", 2);
    assert_int_equal(opens(&k, &p, longer, n + 2), AG_EINVAL);
    free(longer);
    free(blob);
}

static void oversized_blob_and_body_are_refused(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    size_t big = AG_FLEET_BODY_MAX + 1;
    char *buf = malloc(big / 3 * 4 + 64);
    assert_non_null(buf);
    memset(buf, 'A', big / 3 * 4 + 64);
    char h[AG_FLEET_HASH_HEX + 1], *blob = NULL;
    assert_int_equal(ag_fleet_seal(&k, &p, buf, big, &blob, h), AG_ETOOBIG);
    assert_null(blob);
    assert_int_equal(opens(&k, &p, buf, big / 3 * 4 + 64), AG_EINVAL);
    free(buf);
}

static void two_seals_differ_and_both_open(void **state)
{
    (void)state;
    struct ag_fleet_key k = key_of(secret, sizeof secret, "eu-west.1");
    struct ag_fleet_place p = place_at();
    char h1[AG_FLEET_HASH_HEX + 1], h2[AG_FLEET_HASH_HEX + 1];
    char *b1 = sealed(&k, &p, h1);
    char *b2 = sealed(&k, &p, h2);
    assert_int_equal(strlen(b1), strlen(b2));
    assert_string_not_equal(b1, b2);
    /* The nonces (the first 32 base64 characters hold 24 bytes) differ. */
    assert_memory_not_equal(b1, b2, 32);
    assert_string_not_equal(h1, h2);
    assert_int_equal(opens(&k, &p, b1, strlen(b1)), AG_OK);
    assert_int_equal(opens(&k, &p, b2, strlen(b2)), AG_OK);
    free(b1);
    free(b2);
}

/*
 * Sealed by tests/integration/fleet_harness.py (fleet_key, seal,
 * open_record: hashlib for the key and the hash, libsodium through ctypes
 * for the cipher) with os.urandom replaced to give the nonce a0..b7:
 *   python3 /tmp/fleetvec/vector.py
 * where the script imports fleet_harness, writes the secret to a file for
 * fleet_key("eu-west.1"), seals the body at epoch EPOCH, version 7, prev
 * "ab" * 32, schema 1, and checks open_record gives it back. lkey is
 * fleet_key of the 100-byte secret 00..63 (longer than a BLAKE2b key, so
 * prehashed).
 */
static void python_harness_vector_opens(void **state)
{
    (void)state;
    static const char body[] = "{\"actor\": \"admin-api\", \"ops\": [{\"op\": "
                               "\"policy_delete\", \"name\": \"login.ip\"}]}";
    static const char key_hex[] =
        "f774280cadb4b129698f113492f5ee543a780486f8ab1db1448ad7df9451cad3";
    static const char lkey_hex[] =
        "5b51a749f8f7112f25ad8704198d2159d3fff2f8e52d357d439f48132ac96f06";
    static const char blob[] =
        "oKGio6SlpqeoqaqrrK2ur7CxsrO0tba33DFU0iht/lVxq02DKbX1uMqrKJXpQM6uYEZe"
        "NofOxeh/O9l/cG/bA4sNgHQukj/WqlzWUvu9klkREu2fe2qUIAfP77AtzxLbD3hGf248"
        "cosfRiTUekGHXK6egn8=";
    static const char hash[] =
        "98e772ef9d280022393dd5a5bf481b12c5ffdeb3c6374229b3fc0bebd8968fb4";
    unsigned char s[100];
    for (size_t i = 0; i < sizeof s; i++)
        s[i] = (unsigned char)i;
    char hex[2 * crypto_aead_xchacha20poly1305_ietf_KEYBYTES + 1];
    struct ag_fleet_key lk = key_of(s, sizeof s, "eu-west.1");
    sodium_bin2hex(hex, sizeof hex, lk.k, sizeof lk.k);
    assert_string_equal(hex, lkey_hex);
    for (size_t i = 0; i < 32; i++)
        s[i] = (unsigned char)(i + 1);
    struct ag_fleet_key k = key_of(s, 32, "eu-west.1");
    sodium_bin2hex(hex, sizeof hex, k.k, sizeof k.k);
    assert_string_equal(hex, key_hex);

    struct ag_fleet_place p = place_at();
    p.schema = 1; /* as the vector was sealed */
    char *out = NULL, h[AG_FLEET_HASH_HEX + 1] = "";
    size_t len = 0;
    assert_int_equal(ag_fleet_open(&k, &p, blob, strlen(blob), &out, &len, h),
                     AG_OK);
    assert_int_equal(len, strlen(body));
    assert_string_equal(out, body);
    assert_string_equal(h, hash);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_gives_body_and_seal_hash),
        cmocka_unit_test(binary_and_empty_bodies_keep_their_length),
        cmocka_unit_test(widest_place_seals_and_opens),
        cmocka_unit_test(any_changed_place_field_does_not_open),
        cmocka_unit_test(place_of_wrong_shape_is_refused),
        cmocka_unit_test(every_flipped_bit_does_not_open),
        cmocka_unit_test(another_fleet_or_secret_key_does_not_open),
        cmocka_unit_test(text_that_is_not_a_blob_is_refused),
        cmocka_unit_test(oversized_blob_and_body_are_refused),
        cmocka_unit_test(two_seals_differ_and_both_open),
        cmocka_unit_test(python_harness_vector_opens),
    };
    return cmocka_run_group_tests(tests, init_sodium, NULL);
}
