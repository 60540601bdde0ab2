/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fleet record's seal. A record is a change's body (JSON text) sealed
 * with XChaCha20-Poly1305 under a key only holders of the secret file
 * have, so that write access to Redis can neither read a record (a deny
 * entry's address stays private) nor make one an instance applies.
 *
 * The key: BLAKE2b-256 keyed with the secret (as the identifier hashes
 * take it: ag_hasher's key) over "abuseguard fleet record key 1", a NUL
 * and the fleet's name. The additional data binds the record to its
 * place: "abuseguard fleet record 1", the fleet's name, its epoch, its
 * version, the hash of the record before it and the schema it needs, each
 * on its own line. A record copied to another place, another fleet or
 * another history does not open.
 *
 * A record's hash, the chain's link, is BLAKE2b-256 over the additional
 * data, the nonce and the ciphertext: computed by every reader, never
 * taken from Redis.
 *
 * The blob kept in Redis is base64 (the original alphabet, padded) of
 * the nonce and the ciphertext. Pure functions, thread-safe; sodium_init
 * must have run.
 */
#ifndef AG_FLEET_RECORD_H
#define AG_FLEET_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "ag_fleet_ids.h"

/* The newest record format this binary applies: 1, the first; 2, issue
 * 39's network fields; 3, issue 40's risky scope and history signals
 * (ag_fleet_set_schema). A record is written with
 * the schema its operations need; one that needs a newer one than a
 * binary applies is held there, never skipped (ag_fleet.h). */
#define AG_FLEET_SCHEMA 3
/* A record's body at most, in bytes: a snapshot of every list entry. */
#define AG_FLEET_BODY_MAX (8u * 1024 * 1024)

struct ag_fleet_key {
    unsigned char k[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
};

/* The key of fleet name from the secret's key (secret, len bytes). */
void ag_fleet_key_derive(struct ag_fleet_key *key, const unsigned char *secret,
                         size_t len, const char *name);

/* A record's clear part: where it stands. */
struct ag_fleet_place {
    const char *name;  /* the fleet's */
    const char *epoch; /* AG_FLEET_EPOCH_HEX hex digits */
    int64_t version;   /* 1 or more */
    const char *prev;  /* the hash of the record before, or 64 zeros */
    unsigned schema;   /* the record format it needs */
};

/* The hash a history's first record names as the one before. */
extern const char ag_fleet_genesis_prev[AG_FLEET_HASH_HEX + 1];

/* Seals body (len bytes, at most AG_FLEET_BODY_MAX) at place: *blob is
 * new base64 text the caller frees (free), hash receives the record's.
 * AG_OK; AG_ETOOBIG; AG_ENOMEM. */
int ag_fleet_seal(const struct ag_fleet_key *key,
                  const struct ag_fleet_place *place, const char *body,
                  size_t len, char **blob, char hash[AG_FLEET_HASH_HEX + 1]);

/* Opens blob (len bytes of base64) as the record at place: AG_OK with
 * *body new NUL-terminated text (*len its length) the caller frees, and
 * the record's hash; AG_EINVAL if it does not open (forged, damaged, or
 * of another place or key); AG_ENOMEM. */
int ag_fleet_open(const struct ag_fleet_key *key,
                  const struct ag_fleet_place *place, const char *blob,
                  size_t blob_len, char **body, size_t *len,
                  char hash[AG_FLEET_HASH_HEX + 1]);

#endif
