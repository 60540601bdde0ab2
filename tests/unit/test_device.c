/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_device: a token issued for a user verifies for that user while it
 * lives, and everything else (tampered, expired, from the future, another
 * user's, another secret's, garbage, empty, oversized) is untrusted; the
 * text holds no identifier and its MAC is the documented construction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "ag_device.h"
#include "ag_identity.h"

#define NOW 1800000000u /* a Unix time in 2027 */
#define TTL 7776000u

struct fixture {
    struct ag_hasher hasher;
    struct ag_device_key key;
    char ana[AG_DIGEST_HEX + 1]; /* the digest of user "ana@example.com" */
    char bo[AG_DIGEST_HEX + 1];
    char token[AG_DEVICE_TOKEN_LEN + 1];
};

static void fixture_init(struct fixture *f, unsigned char fill)
{
    unsigned char secret[32];
    memset(secret, fill, sizeof secret);
    ag_hasher_init(&f->hasher, secret, sizeof secret);
    ag_device_key_init(&f->key, &f->hasher);
    ag_identity_digest(&f->hasher, AG_KEY_USER, "ana@example.com", f->ana);
    ag_identity_digest(&f->hasher, AG_KEY_USER, "bo@example.com", f->bo);
    ag_device_issue(&f->key, f->ana, NULL, NOW, f->token);
}

/* Does the n bytes at hay hold the m bytes at needle anywhere? */
static bool contains(const unsigned char *hay, size_t n,
                     const unsigned char *needle, size_t m)
{
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0)
            return true;
    return false;
}

static enum ag_device_verdict verify(const struct fixture *f, const char *t,
                                     const char *user, uint64_t now)
{
    return ag_device_verify(&f->key, t, strlen(t), user, now, TTL, NULL);
}

static void issued_token_is_trusted_for_its_user(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    assert_int_equal(strlen(f.token), AG_DEVICE_TOKEN_LEN);
    assert_memory_equal(f.token, "v1.", 3);
    assert_int_equal(verify(&f, f.token, f.ana, NOW), AG_DEVICE_TRUSTED);
    assert_int_equal(verify(&f, f.token, f.ana, NOW + TTL - 1),
                     AG_DEVICE_TRUSTED);
}

static void text_is_url_safe_and_holds_no_user_digest(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    for (const char *c = f.token + 3; *c; c++)
        assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                               "vwxyz0123456789-_",
                               *c));
    assert_null(strstr(f.token, "ana"));
    assert_null(strstr(f.token, f.ana));
    /* Nor the digest's bytes, in the decoded token. */
    unsigned char raw[64], digest[AG_DIGEST_BYTES];
    size_t n = 0;
    assert_int_equal(
        sodium_base642bin(raw, sizeof raw, f.token + 3, strlen(f.token) - 3,
                          NULL, &n, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING),
        0);
    assert_int_equal(n, 56);
    assert_int_equal(sodium_hex2bin(digest, sizeof digest, f.ana, AG_DIGEST_HEX,
                                    NULL, NULL, NULL),
                     0);
    assert_false(contains(raw, n, digest, sizeof digest));
}

static void two_tokens_name_two_devices(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    char other[AG_DEVICE_TOKEN_LEN + 1];
    ag_device_issue(&f.key, f.ana, NULL, NOW, other);
    unsigned char id1[AG_DEVICE_ID_BYTES], id2[AG_DEVICE_ID_BYTES];
    assert_int_equal(ag_device_verify(&f.key, f.token, strlen(f.token), f.ana,
                                      NOW, TTL, id1),
                     AG_DEVICE_TRUSTED);
    assert_int_equal(
        ag_device_verify(&f.key, other, strlen(other), f.ana, NOW, TTL, id2),
        AG_DEVICE_TRUSTED);
    assert_memory_not_equal(id1, id2, sizeof id1);
}

static void renewed_token_keeps_the_device_id(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    unsigned char id[AG_DEVICE_ID_BYTES], again[AG_DEVICE_ID_BYTES];
    assert_int_equal(
        ag_device_verify(&f.key, f.token, strlen(f.token), f.ana, NOW, TTL, id),
        AG_DEVICE_TRUSTED);
    char renewed[AG_DEVICE_TOKEN_LEN + 1];
    ag_device_issue(&f.key, f.ana, id, NOW + 1000, renewed);
    assert_string_not_equal(renewed, f.token);
    assert_int_equal(ag_device_verify(&f.key, renewed, strlen(renewed), f.ana,
                                      NOW + TTL + 500, TTL, again),
                     AG_DEVICE_TRUSTED);
    assert_memory_equal(id, again, sizeof id);
}

static void another_users_token_is_forged(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    assert_int_equal(verify(&f, f.token, f.bo, NOW), AG_DEVICE_FORGED);
}

static void another_secrets_token_is_forged(void **state)
{
    (void)state;
    struct fixture f, g;
    fixture_init(&f, 7);
    fixture_init(&g, 8);
    /* The same user under g's secret: g's digest, f's token. */
    assert_int_equal(verify(&g, f.token, g.ana, NOW), AG_DEVICE_FORGED);
}

static void every_tampered_character_is_refused(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    for (size_t i = 0; i < AG_DEVICE_TOKEN_LEN; i++) {
        char t[AG_DEVICE_TOKEN_LEN + 1];
        memcpy(t, f.token, sizeof t);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        if (verify(&f, t, f.ana, NOW) == AG_DEVICE_TRUSTED)
            fail_msg("changed character %zu still verifies: %s", i, t);
    }
}

static void expired_token_is_untrusted(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    assert_int_equal(verify(&f, f.token, f.ana, NOW + TTL), AG_DEVICE_EXPIRED);
    /* A shorter ttl now also shortens a token issued under a longer one. */
    assert_int_equal(ag_device_verify(&f.key, f.token, strlen(f.token), f.ana,
                                      NOW + 3600, 3600, NULL),
                     AG_DEVICE_EXPIRED);
}

static void token_from_the_future_is_untrusted_beyond_the_skew(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    assert_int_equal(verify(&f, f.token, f.ana, NOW - AG_DEVICE_SKEW_S),
                     AG_DEVICE_TRUSTED);
    assert_int_equal(verify(&f, f.token, f.ana, NOW - AG_DEVICE_SKEW_S - 1),
                     AG_DEVICE_FUTURE);
}

static void garbage_empty_and_oversized_tokens_are_malformed(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    char longer[AG_DEVICE_TOKEN_LEN + 2];
    memcpy(longer, f.token, AG_DEVICE_TOKEN_LEN);
    memcpy(longer + AG_DEVICE_TOKEN_LEN, "A", 2);
    char v2[AG_DEVICE_TOKEN_LEN + 1];
    memcpy(v2, f.token, sizeof v2);
    v2[1] = '2';
    char bad64[AG_DEVICE_TOKEN_LEN + 1];
    memcpy(bad64, f.token, sizeof bad64);
    bad64[10] = '+'; /* standard base64, not the URL-safe kind */
    const char *const bad[] = {"",     "v1.", "garbage", "v1.AAAA",
                               longer, v2,    bad64};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (verify(&f, bad[i], f.ana, NOW) != AG_DEVICE_MALFORMED)
            fail_msg("not refused as malformed: \"%s\"", bad[i]);
    /* One byte short of the token is malformed too. */
    assert_int_equal(ag_device_verify(&f.key, f.token, AG_DEVICE_TOKEN_LEN - 1,
                                      f.ana, NOW, TTL, NULL),
                     AG_DEVICE_MALFORMED);
}

static void mac_is_hmac_sha512_256_under_the_derived_key(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 7);
    /* The key is BLAKE2b-256 of the context, keyed with the hasher's key:
     * not the hasher's key itself. */
    unsigned char key[crypto_auth_KEYBYTES];
    crypto_generichash(
        key, sizeof key, (const unsigned char *)AG_DEVICE_KEY_CONTEXT,
        strlen(AG_DEVICE_KEY_CONTEXT), f.hasher.key, f.hasher.keylen);
    assert_memory_equal(key, f.key.key, sizeof key);
    assert_memory_not_equal(key, f.hasher.key, sizeof key);
    unsigned char raw[56];
    size_t n = 0;
    assert_int_equal(
        sodium_base642bin(raw, sizeof raw, f.token + 3, strlen(f.token) - 3,
                          NULL, &n, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING),
        0);
    uint64_t issued = 0;
    for (int i = 0; i < 8; i++)
        issued = issued << 8 | raw[i];
    assert_int_equal(issued, NOW);
    unsigned char msg[2 + 24 + AG_DIGEST_HEX], mac[crypto_auth_BYTES];
    memcpy(msg, "v1", 2);
    memcpy(msg + 2, raw, 24);
    memcpy(msg + 26, f.ana, AG_DIGEST_HEX);
    crypto_auth_hmacsha512256(mac, msg, sizeof msg, key);
    assert_memory_equal(mac, raw + 24, sizeof mac);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(issued_token_is_trusted_for_its_user),
        cmocka_unit_test(text_is_url_safe_and_holds_no_user_digest),
        cmocka_unit_test(two_tokens_name_two_devices),
        cmocka_unit_test(renewed_token_keeps_the_device_id),
        cmocka_unit_test(another_users_token_is_forged),
        cmocka_unit_test(another_secrets_token_is_forged),
        cmocka_unit_test(every_tampered_character_is_refused),
        cmocka_unit_test(expired_token_is_untrusted),
        cmocka_unit_test(token_from_the_future_is_untrusted_beyond_the_skew),
        cmocka_unit_test(garbage_empty_and_oversized_tokens_are_malformed),
        cmocka_unit_test(mac_is_hmac_sha512_256_under_the_derived_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
