/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_challenge: a nonce minted for a challenge of a subject, endpoint and
 * lane verifies for exactly those until it expires, five minutes on;
 * anything else (another subject, lane or endpoint, another secret,
 * tampered, expired, from too far ahead, not the shape of one) is no
 * pass; each nonce has an id of its own; the text holds no identifier and
 * its MAC is the documented construction. The single-use op goes into a
 * plan under the policy no ruleset may hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "ag_challenge.h"
#include "ag_identity.h"
#include "ag_limiter.h"
#include "ag_store.h"

#define NOW 1800000000u /* a Unix time in 2027 */

struct fixture {
    struct ag_hasher hasher;
    struct ag_challenge_key key;
    char ana[AG_DIGEST_HEX + 1]; /* the digest of user "ana@example.com" */
    char bo[AG_DIGEST_HEX + 1];
};

static void fixture_init(struct fixture *f, unsigned char fill)
{
    unsigned char secret[32];
    memset(secret, fill, sizeof secret);
    ag_hasher_init(&f->hasher, secret, sizeof secret);
    ag_challenge_key_init(&f->key, &f->hasher);
    ag_identity_digest(&f->hasher, AG_KEY_USER, "ana@example.com", f->ana);
    ag_identity_digest(&f->hasher, AG_KEY_USER, "bo@example.com", f->bo);
}

static enum ag_challenge_verdict verify(const struct fixture *f,
                                        const char *text, enum ag_endpoint ep,
                                        bool trusted, const char *subject,
                                        uint64_t now, char *id)
{
    return ag_challenge_verify(&f->key, text, strlen(text), ep, trusted,
                               subject, now, id);
}

static void a_nonce_verifies_for_what_it_was_minted_for(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 1);
    char n[AG_CHALLENGE_LEN + 1];
    ag_challenge_mint(&f.key, AG_EP_LOGIN, false, f.ana, NOW, n);
    assert_int_equal(strlen(n), AG_CHALLENGE_LEN);
    assert_memory_equal(n, "c1.", 3);
    assert_true(ag_challenge_shape(n, strlen(n)));
    char id[AG_CHALLENGE_ID_HEX + 1];
    assert_int_equal(verify(&f, n, AG_EP_LOGIN, false, f.ana, NOW, id),
                     AG_CHALLENGE_VALID);
    assert_int_equal(strlen(id), AG_CHALLENGE_ID_HEX);
    assert_int_equal(verify(&f, n, AG_EP_LOGIN, false, f.ana,
                            NOW + AG_CHALLENGE_TTL_S - 1, NULL),
                     AG_CHALLENGE_VALID);
    /* Another subject, lane, endpoint: forged for them. */
    assert_int_equal(verify(&f, n, AG_EP_LOGIN, false, f.bo, NOW, NULL),
                     AG_CHALLENGE_FORGED);
    assert_int_equal(verify(&f, n, AG_EP_LOGIN, true, f.ana, NOW, NULL),
                     AG_CHALLENGE_FORGED);
    assert_int_equal(verify(&f, n, AG_EP_OTP, false, f.ana, NOW, NULL),
                     AG_CHALLENGE_FORGED);
    /* Five minutes on, it has expired. */
    assert_int_equal(verify(&f, n, AG_EP_LOGIN, false, f.ana,
                            NOW + AG_CHALLENGE_TTL_S, NULL),
                     AG_CHALLENGE_EXPIRED);
    /* Another secret's service made none of it. */
    struct fixture g;
    fixture_init(&g, 2);
    assert_int_equal(ag_challenge_verify(&g.key, n, strlen(n), AG_EP_LOGIN,
                                         false, f.ana, NOW, NULL),
                     AG_CHALLENGE_FORGED);
    ag_challenge_key_wipe(&f.key);
    ag_challenge_key_wipe(&g.key);
}

static void every_nonce_has_an_id_of_its_own(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3);
    char a[AG_CHALLENGE_LEN + 1], b[AG_CHALLENGE_LEN + 1];
    char ia[AG_CHALLENGE_ID_HEX + 1], ib[AG_CHALLENGE_ID_HEX + 1];
    ag_challenge_mint(&f.key, AG_EP_LOGIN, false, f.ana, NOW, a);
    ag_challenge_mint(&f.key, AG_EP_LOGIN, false, f.ana, NOW, b);
    assert_string_not_equal(a, b);
    verify(&f, a, AG_EP_LOGIN, false, f.ana, NOW, ia);
    verify(&f, b, AG_EP_LOGIN, false, f.ana, NOW, ib);
    assert_string_not_equal(ia, ib);
    /* Two keys of one secret (two instances) draw other ids. */
    struct fixture g;
    fixture_init(&g, 3);
    ag_challenge_mint(&g.key, AG_EP_LOGIN, false, f.ana, NOW, b);
    assert_int_equal(verify(&f, b, AG_EP_LOGIN, false, f.ana, NOW, ib),
                     AG_CHALLENGE_VALID);
    assert_string_not_equal(ia, ib);
    assert_memory_not_equal(ia, ib, 16);
}

static void what_is_not_one_is_no_pass(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 4);
    char n[AG_CHALLENGE_LEN + 1];
    ag_challenge_mint(&f.key, AG_EP_OTP, false, f.ana, NOW, n);
    /* Each character changed in turn: never valid. */
    for (size_t i = 0; i < AG_CHALLENGE_LEN; i++) {
        char t[AG_CHALLENGE_LEN + 1];
        memcpy(t, n, sizeof t);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        assert_int_not_equal(verify(&f, t, AG_EP_OTP, false, f.ana, NOW, NULL),
                             AG_CHALLENGE_VALID);
    }
    const char *bad[] = {"", "c1.", "true", "c1.!", n + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(ag_challenge_shape(bad[i], strlen(bad[i])));
        assert_int_equal(verify(&f, bad[i], AG_EP_OTP, false, f.ana, NOW, NULL),
                         AG_CHALLENGE_MALFORMED);
    }
    /* Minted far in the future (a clock gone wrong, or forged): no. */
    char ahead[AG_CHALLENGE_LEN + 1];
    ag_challenge_mint(&f.key, AG_EP_OTP, false, f.ana, NOW + 3600, ahead);
    assert_int_equal(verify(&f, ahead, AG_EP_OTP, false, f.ana, NOW, NULL),
                     AG_CHALLENGE_FORGED);
}

/* The documented construction, recomputed here: keyed BLAKE2b-128 of
 * "c1" || endpoint || lane || subject || expiry || id under BLAKE2b-256 of
 * the context keyed with the secret. */
static void the_mac_is_the_documented_construction(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 5);
    char n[AG_CHALLENGE_LEN + 1];
    ag_challenge_mint(&f.key, AG_EP_OTP_VERIFY, true, f.bo, NOW, n);
    unsigned char raw[36];
    size_t len = 0;
    assert_int_equal(
        sodium_base642bin(raw, sizeof raw, n + 3, strlen(n) - 3, NULL, &len,
                          NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING),
        0);
    assert_int_equal(len, 36);
    uint32_t expires = (uint32_t)raw[0] << 24 | (uint32_t)raw[1] << 16 |
                       (uint32_t)raw[2] << 8 | raw[3];
    assert_int_equal(expires, NOW + AG_CHALLENGE_TTL_S);
    unsigned char key[32];
    const char *ctx = AG_CHALLENGE_KEY_CONTEXT;
    crypto_generichash(key, sizeof key, (const unsigned char *)ctx, strlen(ctx),
                       f.hasher.key, f.hasher.keylen);
    unsigned char msg[2 + 2 + AG_DIGEST_HEX + 20];
    memcpy(msg, "c1", 2);
    msg[2] = (unsigned char)AG_EP_OTP_VERIFY;
    msg[3] = 1;
    memcpy(msg + 4, f.bo, AG_DIGEST_HEX);
    memcpy(msg + 4 + AG_DIGEST_HEX, raw, 20);
    unsigned char mac[16];
    crypto_generichash(mac, sizeof mac, msg, sizeof msg, key, sizeof key);
    assert_memory_equal(mac, raw + 20, 16);
    /* Nothing of the subject is in the text. */
    assert_null(strstr(n, f.bo));
}

static void its_single_use_joins_a_plan(void **state)
{
    (void)state;
    struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
    const char *id = "00112233445566778899aabbccddeeff";
    assert_int_equal(ag_limiter_plan_pass(&plan, id, true), AG_OK);
    assert_int_equal(plan.n, 1);
    const struct ag_limit_op *op = &plan.ops[0];
    assert_ptr_equal(op->policy, ag_challenge_policy());
    assert_string_equal(op->policy->name, "challenge_pass");
    assert_string_equal(op->key, "ag:challenge_pass:{"
                                 "00112233445566778899aabbccddeeff"
                                 "}");
    assert_true(op->charge);
    assert_false(op->shadow);
    assert_int_equal(op->policy->limit, 1);
    assert_int_equal(op->policy->window_s, AG_CHALLENGE_TTL_S);
    assert_int_equal(op->policy->algorithm, AG_ALG_SLIDING_LOG);
    assert_int_equal(op->policy->action, AG_ACTION_CHALLENGE);
    assert_false(ag_policy_name_valid("challenge_pass"));
    /* It takes no policy's place: a plan of AG_PLAN_MAX policies takes
     * it, a full one does not. */
    plan.n = AG_PLAN_MAX;
    assert_int_equal(ag_limiter_plan_pass(&plan, id, false), AG_OK);
    assert_int_equal(ag_limiter_plan_pass(&plan, id, false), AG_ETOOBIG);
}

static uint64_t clock_us;

static uint64_t test_clock(void *ctx)
{
    (void)ctx;
    return clock_us;
}

/* Whether a check of the nonce id alone passes at clock_us. */
static bool passes_at(struct ag_store *st, uint64_t at_s)
{
    clock_us = at_s * 1000000;
    struct ag_plan plan = {.kind = AG_PLAN_CHECK, .n = 0};
    assert_int_equal(
        ag_limiter_plan_pass(&plan, "0123456789abcdef0123456789abcdef", false),
        AG_OK);
    struct ag_limit_result res[AG_PLAN_OPS];
    assert_int_equal(ag_store_check(st, &plan, res), AG_OK);
    return res[0].allowed;
}

/* The review's boundary: a use 8 s before a multiple of five minutes and
 * another just after it. A window aligned to the clock let both pass; the
 * use is remembered five minutes from itself, the nonce's whole life
 * after it (the Lua runs the same algorithm, held to it by the vectors). */
static void a_nonce_passes_once_across_any_boundary(void **state)
{
    (void)state;
    struct ag_store *st = ag_store_mem_new(16, 16, test_clock, NULL);
    assert_non_null(st);
    uint64_t t = 1800000000u / AG_CHALLENGE_TTL_S * AG_CHALLENGE_TTL_S - 8;
    assert_true(passes_at(st, t));
    assert_false(passes_at(st, t + 1));
    assert_false(passes_at(st, t + 10));
    assert_false(passes_at(st, t + AG_CHALLENGE_TTL_S - 1));
    ag_store_destroy(st);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_nonce_verifies_for_what_it_was_minted_for),
        cmocka_unit_test(every_nonce_has_an_id_of_its_own),
        cmocka_unit_test(what_is_not_one_is_no_pass),
        cmocka_unit_test(the_mac_is_the_documented_construction),
        cmocka_unit_test(its_single_use_joins_a_plan),
        cmocka_unit_test(a_nonce_passes_once_across_any_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
