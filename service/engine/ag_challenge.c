/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_challenge.h"

#include <string.h>

#define PREFIX "c1."
#define PREFIX_LEN (sizeof PREFIX - 1)
#define VERSION "c1" /* the first bytes the MAC covers */
#define TIME_BYTES 4
#define BODY_BYTES (TIME_BYTES + AG_CHALLENGE_ID_BYTES)
#define MAC_BYTES 16
#define RAW_BYTES (BODY_BYTES + MAC_BYTES)
#define B64 sodium_base64_VARIANT_URLSAFE_NO_PADDING
#define MSG_BYTES (sizeof VERSION - 1 + 2 + AG_DIGEST_HEX + BODY_BYTES)

_Static_assert(PREFIX_LEN + sodium_base64_ENCODED_LEN(RAW_BYTES, B64) - 1 ==
                   AG_CHALLENGE_LEN,
               "AG_CHALLENGE_LEN is the length of the text");

void ag_challenge_key_init(struct ag_challenge_key *k,
                           const struct ag_hasher *h)
{
    static const char context[] = AG_CHALLENGE_KEY_CONTEXT;
    crypto_generichash(k->key, sizeof k->key, (const unsigned char *)context,
                       sizeof context - 1, h->key, h->keylen);
    randombytes_buf(k->prefix, sizeof k->prefix);
    atomic_init(&k->seq, 0);
}

void ag_challenge_key_wipe(struct ag_challenge_key *k)
{
    sodium_memzero(k->key, sizeof k->key);
}

/* The MAC of body (expiry and id) for endpoint, lane and subject. */
static void mac_of(const struct ag_challenge_key *k, const unsigned char *body,
                   enum ag_endpoint endpoint, bool trusted,
                   const char *subject_digest, unsigned char *mac)
{
    unsigned char msg[MSG_BYTES];
    size_t n = sizeof VERSION - 1;
    memcpy(msg, VERSION, n);
    msg[n++] = (unsigned char)endpoint;
    msg[n++] = trusted ? 1 : 0;
    memcpy(msg + n, subject_digest, AG_DIGEST_HEX);
    memcpy(msg + n + AG_DIGEST_HEX, body, BODY_BYTES);
    crypto_generichash(mac, MAC_BYTES, msg, sizeof msg, k->key, sizeof k->key);
}

void ag_challenge_mint(struct ag_challenge_key *k, enum ag_endpoint endpoint,
                       bool trusted, const char *subject_digest, uint64_t now_s,
                       char *out)
{
    unsigned char raw[RAW_BYTES];
    uint64_t expires = now_s + AG_CHALLENGE_TTL_S;
    for (int i = 0; i < TIME_BYTES; i++)
        raw[i] = (unsigned char)(expires >> (8 * (TIME_BYTES - 1 - i)));
    memcpy(raw + TIME_BYTES, k->prefix, sizeof k->prefix);
    uint64_t seq = atomic_fetch_add_explicit(&k->seq, 1, memory_order_relaxed);
    for (int i = 0; i < 8; i++)
        raw[TIME_BYTES + 8 + i] = (unsigned char)(seq >> (8 * (7 - i)));
    mac_of(k, raw, endpoint, trusted, subject_digest, raw + BODY_BYTES);
    memcpy(out, PREFIX, PREFIX_LEN);
    sodium_bin2base64(out + PREFIX_LEN, AG_CHALLENGE_LEN - PREFIX_LEN + 1, raw,
                      sizeof raw, B64);
}

/* text decoded into raw, if it has a nonce's shape. */
static bool decode(const char *text, size_t len, unsigned char *raw)
{
    if (len != AG_CHALLENGE_LEN || memcmp(text, PREFIX, PREFIX_LEN) != 0)
        return false;
    size_t raw_len = 0;
    const char *end = NULL;
    return sodium_base642bin(raw, RAW_BYTES, text + PREFIX_LEN,
                             len - PREFIX_LEN, NULL, &raw_len, &end,
                             B64) == 0 &&
           raw_len == RAW_BYTES && end == text + len;
}

bool ag_challenge_shape(const char *text, size_t len)
{
    unsigned char raw[RAW_BYTES];
    return decode(text, len, raw);
}

enum ag_challenge_verdict
ag_challenge_verify(const struct ag_challenge_key *k, const char *text,
                    size_t len, enum ag_endpoint endpoint, bool trusted,
                    const char *subject_digest, uint64_t now_s, char *id_hex)
{
    unsigned char raw[RAW_BYTES];
    if (!decode(text, len, raw))
        return AG_CHALLENGE_MALFORMED;
    unsigned char mac[MAC_BYTES];
    mac_of(k, raw, endpoint, trusted, subject_digest, mac);
    if (sodium_memcmp(mac, raw + BODY_BYTES, MAC_BYTES) != 0)
        return AG_CHALLENGE_FORGED;
    uint64_t expires = 0;
    for (int i = 0; i < TIME_BYTES; i++)
        expires = expires << 8 | raw[i];
    /* One from further ahead than a nonce lives (and the instances'
     * clocks may differ) was not minted here. */
    if (expires > now_s + AG_CHALLENGE_TTL_S + AG_CHALLENGE_SKEW_S)
        return AG_CHALLENGE_FORGED;
    if (now_s >= expires)
        return AG_CHALLENGE_EXPIRED;
    if (id_hex)
        sodium_bin2hex(id_hex, AG_CHALLENGE_ID_HEX + 1, raw + TIME_BYTES,
                       AG_CHALLENGE_ID_BYTES);
    return AG_CHALLENGE_VALID;
}

static const struct ag_policy pass_policy = {
    .name = AG_CHALLENGE_POLICY,
    .endpoint = AG_EP_LOGIN,
    .key = {AG_KEY_USER},
    .nkeys = 1,
    .algorithm = AG_ALG_SLIDING_LOG,
    .limit = 1,
    .window_s = AG_CHALLENGE_TTL_S,
    .block_growth = 1,
    .counts = AG_COUNTS_ATTEMPTS,
    .fail = AG_FAIL_OPEN,
    .mode = AG_MODE_ENFORCE,
    .applies_to = AG_LANE_ALL,
    .action = AG_ACTION_CHALLENGE,
    .enabled = true,
};

const struct ag_policy *ag_challenge_policy(void)
{
    return &pass_policy;
}
