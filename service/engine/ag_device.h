/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device tokens (OWASP's "device cookies"): what /report-login hands a
 * device after a successful login, and what later requests show to be
 * judged in the trusted lane. A token is a MAC, not a session: it proves
 * that this service issued it, for which user and when, and names the
 * device by a random id. It carries no identifier in plaintext and no user
 * digest; the user is bound through the MAC only, so a token shown with
 * another user's name simply fails to verify.
 *
 * Text (78 bytes): "v1." then URL-safe base64 without padding of
 *   issued_at (8 bytes, big-endian Unix seconds) || id (16 random bytes)
 *   || mac (32 bytes)
 * where mac = crypto_auth (HMAC-SHA-512-256) under the device key over
 *   "v1" || issued_at || id || the user's digest (ag_identity_digest of the
 *   normalised user, as its 32 hex characters).
 * The device key is crypto_generichash (BLAKE2b-256) of the fixed context
 * AG_DEVICE_KEY_CONTEXT keyed with the hasher's key: a subkey, so that the
 * identifier hashes and the tokens never share a key. A token expires
 * ttl_s after its issue time, as the verifier is configured now (so a
 * shorter --device-token-ttl-s also shortens tokens already out), and one
 * issued more than AG_DEVICE_SKEW_S in the future is refused too.
 *
 * Verifying is a decision, never an error: anything that is not a valid,
 * live token of that user is "untrusted". The MAC is compared in constant
 * time (crypto_auth_verify). Nothing here allocates.
 *
 * A struct ag_device_key is read-only after ag_device_key_init and safe to
 * share between threads; the functions are otherwise pure (issuing reads
 * libsodium's thread-safe random generator).
 */
#ifndef AG_DEVICE_H
#define AG_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "ag_identity.h"

#define AG_DEVICE_KEY_CONTEXT "abuseguard device token v1"
#define AG_DEVICE_ID_BYTES 16
#define AG_DEVICE_ID_HEX (2 * AG_DEVICE_ID_BYTES)
#define AG_DEVICE_TOKEN_LEN 78 /* "v1." and 75 characters of base64 */
#define AG_DEVICE_SKEW_S 60    /* issue times this far ahead are accepted */
#define AG_DEVICE_TTL_DEFAULT_S 7776000 /* 90 days */

struct ag_device_key {
    unsigned char key[crypto_auth_KEYBYTES];
};

/* Derives the device key from the hasher's key. Needs sodium_init(). */
void ag_device_key_init(struct ag_device_key *k, const struct ag_hasher *h);
void ag_device_key_wipe(struct ag_device_key *k);

/* Writes a token for the user whose digest is user_digest (AG_DIGEST_HEX
 * hex characters), issued at issued_s, into out (AG_DEVICE_TOKEN_LEN + 1
 * bytes). id (AG_DEVICE_ID_BYTES) names the device: NULL draws a new
 * random one, a verified token's id renews that device's token. */
void ag_device_issue(const struct ag_device_key *k, const char *user_digest,
                     const unsigned char *id, uint64_t issued_s, char *out);

/* Why a token is or is not trusted; only AG_DEVICE_TRUSTED trusts it. */
enum ag_device_verdict {
    AG_DEVICE_TRUSTED,
    AG_DEVICE_MALFORMED, /* not the shape of a token: length, prefix, base64 */
    AG_DEVICE_FORGED,    /* the MAC fails: tampered, or another user's */
    AG_DEVICE_EXPIRED,   /* at or past issued_at + ttl_s */
    AG_DEVICE_FUTURE,    /* issued more than AG_DEVICE_SKEW_S ahead of now */
};

/* Judges the token text (len bytes, not NUL-terminated necessarily) for
 * the user whose digest is user_digest at now_s, tokens living ttl_s. When
 * it is trusted and id is not NULL, id (AG_DEVICE_ID_BYTES) receives the
 * device's id. */
enum ag_device_verdict ag_device_verify(const struct ag_device_key *k,
                                        const char *token, size_t len,
                                        const char *user_digest, uint64_t now_s,
                                        uint32_t ttl_s, unsigned char *id);

#endif
