/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_fleet_record.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"

#define KEY_CONTEXT "abuseguard fleet record key 1"
#define AD_HEAD "abuseguard fleet record 1"
/* The additional data at most: its head, the name, the epoch, a version,
 * a hash and a schema, each on its line. */
#define AD_MAX                                                                 \
    (sizeof AD_HEAD + AG_FLEET_NAME_MAX + AG_FLEET_EPOCH_HEX + 24 +            \
     AG_FLEET_HASH_HEX + 16)
#define NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG crypto_aead_xchacha20poly1305_ietf_ABYTES
#define B64 sodium_base64_VARIANT_ORIGINAL

const char ag_fleet_genesis_prev[AG_FLEET_HASH_HEX + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

void ag_fleet_key_derive(struct ag_fleet_key *key, const unsigned char *secret,
                         size_t len, const char *name)
{
    unsigned char k0[crypto_generichash_KEYBYTES_MAX];
    const unsigned char *k = secret;
    if (len > sizeof k0) {
        crypto_generichash(k0, sizeof k0, secret, len, NULL, 0);
        k = k0;
        len = sizeof k0;
    }
    crypto_generichash_state st;
    crypto_generichash_init(&st, k, len, sizeof key->k);
    crypto_generichash_update(&st, (const unsigned char *)KEY_CONTEXT,
                              sizeof KEY_CONTEXT); /* with its NUL */
    crypto_generichash_update(&st, (const unsigned char *)name, strlen(name));
    crypto_generichash_final(&st, key->k, sizeof key->k);
    sodium_memzero(k0, sizeof k0);
    sodium_memzero(&st, sizeof st);
}

/* The additional data of place into ad; its length, or 0 if place is
 * not one (a name, an epoch or a hash of the wrong shape). */
static size_t additional(const struct ag_fleet_place *p, char ad[AD_MAX])
{
    if (!ag_fleet_name_valid(p->name) ||
        !ag_fleet_hex_valid(p->epoch, AG_FLEET_EPOCH_HEX) ||
        !ag_fleet_hex_valid(p->prev, AG_FLEET_HASH_HEX) || p->version < 1)
        return 0;
    int n = snprintf(ad, AD_MAX, "%s\n%s\n%s\n%" PRId64 "\n%s\n%u", AD_HEAD,
                     p->name, p->epoch, p->version, p->prev, p->schema);
    return n > 0 && (size_t)n < AD_MAX ? (size_t)n : 0;
}

static void record_hash(const char *ad, size_t adlen, const unsigned char *nc,
                        size_t nclen, char hash[AG_FLEET_HASH_HEX + 1])
{
    unsigned char h[AG_FLEET_HASH_HEX / 2];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    crypto_generichash_update(&st, (const unsigned char *)ad, adlen);
    crypto_generichash_update(&st, nc, nclen);
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(hash, AG_FLEET_HASH_HEX + 1, h, sizeof h);
}

int ag_fleet_seal(const struct ag_fleet_key *key,
                  const struct ag_fleet_place *place, const char *body,
                  size_t len, char **blob, char hash[AG_FLEET_HASH_HEX + 1])
{
    char ad[AD_MAX];
    size_t adlen = additional(place, ad);
    if (!adlen)
        return AG_EINVAL;
    if (len > AG_FLEET_BODY_MAX)
        return AG_ETOOBIG;
    size_t nclen = NONCE + len + TAG;
    unsigned char *nc = malloc(nclen);
    size_t b64len = sodium_base64_encoded_len(nclen, B64);
    char *b64 = malloc(b64len);
    if (!nc || !b64) {
        free(nc);
        free(b64);
        return AG_ENOMEM;
    }
    randombytes_buf(nc, NONCE);
    unsigned long long clen = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
        nc + NONCE, &clen, (const unsigned char *)body, len,
        (const unsigned char *)ad, adlen, NULL, nc, key->k);
    record_hash(ad, adlen, nc, nclen, hash);
    sodium_bin2base64(b64, b64len, nc, nclen, B64);
    free(nc);
    *blob = b64;
    return AG_OK;
}

int ag_fleet_open(const struct ag_fleet_key *key,
                  const struct ag_fleet_place *place, const char *blob,
                  size_t blob_len, char **body, size_t *len,
                  char hash[AG_FLEET_HASH_HEX + 1])
{
    char ad[AD_MAX];
    size_t adlen = additional(place, ad);
    /* Base64 of the largest record, and a little. */
    if (!adlen || blob_len > (AG_FLEET_BODY_MAX + NONCE + TAG) / 3 * 4 + 8)
        return AG_EINVAL;
    /* Base64's alphabet alone: libsodium 1.0.18 decodes any byte from
     * 0x80 up as '/', which would open two different texts as one
     * record. */
    for (size_t i = 0; i < blob_len; i++) {
        unsigned char c = (unsigned char)blob[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='))
            return AG_EINVAL;
    }
    size_t cap = blob_len / 4 * 3 + 3;
    unsigned char *nc = malloc(cap);
    if (!nc)
        return AG_ENOMEM;
    size_t nclen = 0;
    if (sodium_base642bin(nc, cap, blob, blob_len, NULL, &nclen, NULL, B64) !=
            0 ||
        nclen < NONCE + TAG) {
        free(nc);
        return AG_EINVAL;
    }
    char *out = malloc(nclen - NONCE - TAG + 1);
    unsigned long long mlen = 0;
    int rc = AG_OK;
    if (!out)
        rc = AG_ENOMEM;
    else if (crypto_aead_xchacha20poly1305_ietf_decrypt(
                 (unsigned char *)out, &mlen, NULL, nc + NONCE, nclen - NONCE,
                 (const unsigned char *)ad, adlen, nc, key->k) != 0)
        rc = AG_EINVAL;
    if (!rc) {
        record_hash(ad, adlen, nc, nclen, hash);
        out[mlen] = '\0';
        *body = out;
        *len = (size_t)mlen;
    } else {
        free(out);
    }
    free(nc);
    return rc;
}
