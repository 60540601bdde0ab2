/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Challenge nonces: what a check answer that asks for a challenge (a 429
 * with "action": "challenge") carries as "challenge_nonce", and what the
 * next check brings back as "challenge_passed" once the person passed
 * the CAPTCHA or second factor the caller showed them. A nonce is a MAC,
 * as a device token is (ag_device.h): it proves that this service asked
 * for a challenge of this endpoint's subject in this lane, recently; it
 * names nothing in plaintext. It is single-use: the check that brings it
 * charges it to a sliding log of one in the store, remembered for five
 * minutes from its use (ag_limiter_plan_pass), so a second check with it
 * is asked for a challenge again; while Redis does not answer that log is
 * each instance's own, so a nonce passes once per instance at most,
 * until it expires.
 *
 * Text (51 bytes): "c1." then URL-safe base64 without padding of
 *   expires_at (4 bytes, big-endian Unix seconds) || id (16 bytes)
 *   || mac (16 bytes)
 * where mac = keyed BLAKE2b-128 under the challenge key over
 *   "c1" || endpoint (1 byte) || lane (1 byte: 1 trusted, 0 untrusted)
 *   || the subject's digest (32 hex characters) || expires_at || id.
 * The subject is the user on login, the user or else the phone on the
 * OTP endpoints (ag_digests_subject). The id is 8 random bytes drawn
 * once per key and a 64-bit sequence: unique without a system call per
 * nonce. The challenge key is BLAKE2b-256 of AG_CHALLENGE_KEY_CONTEXT
 * keyed with the hasher's key, a subkey of its own. The MAC is compared
 * in constant time. Nothing here allocates.
 *
 * A key is read-only after ag_challenge_key_init but for its sequence,
 * an atomic: safe to share between threads.
 */
#ifndef AG_CHALLENGE_H
#define AG_CHALLENGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "ag_endpoint.h"
#include "ag_identity.h"
#include "ag_policy.h"

#define AG_CHALLENGE_KEY_CONTEXT "abuseguard challenge nonce v1"
#define AG_CHALLENGE_ID_BYTES 16
#define AG_CHALLENGE_ID_HEX (2 * AG_CHALLENGE_ID_BYTES)
#define AG_CHALLENGE_LEN 51    /* "c1." and 48 characters of base64 */
#define AG_CHALLENGE_TTL_S 300 /* a nonce is good for five minutes */
/* An expiry up to this far past a nonce's life is accepted: one instance
 * minted it, another whose clock is behind may judge it. */
#define AG_CHALLENGE_SKEW_S 60
/* The name its single use is counted under in answers and metrics, a
 * name no policy may take. */
#define AG_CHALLENGE_POLICY AG_POLICY_CHALLENGE_PASS

struct ag_challenge_key {
    unsigned char key[crypto_generichash_KEYBYTES];
    unsigned char prefix[8]; /* the ids' random half */
    atomic_uint_fast64_t seq;
};

/* Derives the key from the hasher's key, and draws the ids' prefix.
 * Needs sodium_init(). */
void ag_challenge_key_init(struct ag_challenge_key *k,
                           const struct ag_hasher *h);
void ag_challenge_key_wipe(struct ag_challenge_key *k);

/* Writes a nonce for a challenge of endpoint's subject subject_digest
 * (AG_DIGEST_HEX hex characters) in the lane trusted, asked at now_s,
 * into out (AG_CHALLENGE_LEN + 1 bytes). */
void ag_challenge_mint(struct ag_challenge_key *k, enum ag_endpoint endpoint,
                       bool trusted, const char *subject_digest, uint64_t now_s,
                       char *out);

/* Is text (len bytes) the shape of a nonce: the length, the prefix, the
 * base64? Whether it is authentic is ag_challenge_verify's. */
bool ag_challenge_shape(const char *text, size_t len);

enum ag_challenge_verdict {
    AG_CHALLENGE_VALID,
    AG_CHALLENGE_MALFORMED, /* not the shape of a nonce */
    /* The MAC fails: tampered, or another subject's, lane's or endpoint's,
     * or this service's secret changed since. */
    AG_CHALLENGE_FORGED,
    AG_CHALLENGE_EXPIRED, /* at or past its expiry */
};

/* Judges text (len bytes) for endpoint's subject subject_digest in the
 * lane trusted at now_s. When valid and id_hex is not NULL, id_hex
 * (AG_CHALLENGE_ID_HEX + 1 bytes) receives its id. */
enum ag_challenge_verdict
ag_challenge_verify(const struct ag_challenge_key *k, const char *text,
                    size_t len, enum ag_endpoint endpoint, bool trusted,
                    const char *subject_digest, uint64_t now_s, char *id_hex);

/* The policy a nonce's single use is charged to: a sliding log of one
 * request over AG_CHALLENGE_TTL_S (its use is remembered for as long as
 * the nonce can live after it, and a window aligned to the clock would
 * let it pass again across its boundary) that asks for a challenge when
 * denied, named AG_CHALLENGE_POLICY. Static; never in a ruleset. */
const struct ag_policy *ag_challenge_policy(void);

#endif
