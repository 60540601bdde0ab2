/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_device.h"

#include <string.h>

#define PREFIX "v1."
#define PREFIX_LEN (sizeof PREFIX - 1)
#define VERSION "v1" /* the first bytes the MAC covers */
#define TIME_BYTES 8
#define BODY_BYTES (TIME_BYTES + AG_DEVICE_ID_BYTES)
#define RAW_BYTES (BODY_BYTES + crypto_auth_BYTES)
#define B64 sodium_base64_VARIANT_URLSAFE_NO_PADDING

_Static_assert(PREFIX_LEN + sodium_base64_ENCODED_LEN(RAW_BYTES, B64) - 1 ==
                   AG_DEVICE_TOKEN_LEN,
               "AG_DEVICE_TOKEN_LEN is the length of the text");

void ag_device_key_init(struct ag_device_key *k, const struct ag_hasher *h)
{
    static const char context[] = AG_DEVICE_KEY_CONTEXT;
    crypto_generichash(k->key, sizeof k->key, (const unsigned char *)context,
                       sizeof context - 1, h->key, h->keylen);
}

void ag_device_key_wipe(struct ag_device_key *k)
{
    sodium_memzero(k, sizeof *k);
}

#define MSG_BYTES (sizeof VERSION - 1 + BODY_BYTES + AG_DIGEST_HEX)

/* What the MAC covers: the version, a token's issue time and id (body),
 * and the user's digest. */
static void message_of(const unsigned char *body, const char *user_digest,
                       unsigned char *msg)
{
    memcpy(msg, VERSION, sizeof VERSION - 1);
    memcpy(msg + sizeof VERSION - 1, body, BODY_BYTES);
    memcpy(msg + sizeof VERSION - 1 + BODY_BYTES, user_digest, AG_DIGEST_HEX);
}

void ag_device_issue(const struct ag_device_key *k, const char *user_digest,
                     const unsigned char *id, uint64_t issued_s, char *out)
{
    unsigned char raw[RAW_BYTES];
    for (int i = 0; i < TIME_BYTES; i++)
        raw[i] = (unsigned char)(issued_s >> (8 * (TIME_BYTES - 1 - i)));
    if (id)
        memcpy(raw + TIME_BYTES, id, AG_DEVICE_ID_BYTES);
    else
        randombytes_buf(raw + TIME_BYTES, AG_DEVICE_ID_BYTES);
    unsigned char msg[MSG_BYTES];
    message_of(raw, user_digest, msg);
    crypto_auth(raw + BODY_BYTES, msg, sizeof msg, k->key);
    memcpy(out, PREFIX, PREFIX_LEN);
    sodium_bin2base64(out + PREFIX_LEN, AG_DEVICE_TOKEN_LEN - PREFIX_LEN + 1,
                      raw, sizeof raw, B64);
}

enum ag_device_verdict ag_device_verify(const struct ag_device_key *k,
                                        const char *token, size_t len,
                                        const char *user_digest, uint64_t now_s,
                                        uint32_t ttl_s, unsigned char *id)
{
    /* The length first: most garbage is refused before any decoding. */
    if (len != AG_DEVICE_TOKEN_LEN || memcmp(token, PREFIX, PREFIX_LEN) != 0)
        return AG_DEVICE_MALFORMED;
    unsigned char raw[RAW_BYTES];
    size_t raw_len = 0;
    const char *end = NULL;
    if (sodium_base642bin(raw, sizeof raw, token + PREFIX_LEN, len - PREFIX_LEN,
                          NULL, &raw_len, &end, B64) != 0 ||
        raw_len != sizeof raw || end != token + len)
        return AG_DEVICE_MALFORMED;
    unsigned char msg[MSG_BYTES];
    message_of(raw, user_digest, msg);
    if (crypto_auth_verify(raw + BODY_BYTES, msg, sizeof msg, k->key) != 0)
        return AG_DEVICE_FORGED;
    /* Only an authentic token's time is worth reading. */
    uint64_t issued = 0;
    for (int i = 0; i < TIME_BYTES; i++)
        issued = issued << 8 | raw[i];
    if (issued > now_s + AG_DEVICE_SKEW_S)
        return AG_DEVICE_FUTURE;
    if (now_s >= issued && now_s - issued >= ttl_s)
        return AG_DEVICE_EXPIRED;
    if (id)
        memcpy(id, raw + TIME_BYTES, AG_DEVICE_ID_BYTES);
    return AG_DEVICE_TRUSTED;
}
