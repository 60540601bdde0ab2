/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fleet's history in Redis (lua/fleet.lua), each step one atomic script
 * run with ag_redis_script: its head (the
 * epoch, version and hash of the last record), its log of sealed records,
 * its base (a sealed snapshot the log is trimmed behind) and the
 * members' heartbeats, on a connection of the fleet's own
 * (ag_redis_direct), so that a Redis that does not answer never holds a
 * check behind the fleet's traffic. The records' contents are not this layer's:
 * it moves their places and opaque blobs (ag_fleet_record.h seals them).
 *
 * Keys "ag::fleet:{<name>}:head", ":log", ":base" and ":members": one
 * hash tag, so that a Cluster keeps them on one node; a change is
 * published on the channel "ag::fleet:<name>" ("<epoch> <version>"),
 * which an ACL user needs (&ag::fleet:*) to hear it at once rather than
 * at the next poll. Two fleets' names never share a key.
 *
 * Every function returns AG_OK; AG_ESTORE when Redis did not answer or
 * refused (its error logged); AG_EINVAL for an argument out of shape.
 * Thread-safe.
 */
#ifndef AG_REDIS_FLEET_H
#define AG_REDIS_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_fleet_ids.h"

struct ag_redis_direct;

#define AG_REDIS_FLEET_CHANNEL "ag::fleet:" /* and the fleet's name */

struct ag_redis_fleet_head {
    bool exists;
    char epoch[AG_FLEET_EPOCH_HEX + 1];
    int64_t version;
    char hash[AG_FLEET_HASH_HEX + 1];
    bool seed;               /* the fleet's set is still a seed */
    uint64_t settle_left_ms; /* no change taken for this long */
    int64_t base_version;    /* the base's, 0: none */
    int64_t first_version;   /* the log's first record's, 0: empty */
    uint64_t now_ms;         /* Redis TIME, Unix ms */
};

/* One record as Redis holds it: its place, taken as Redis gives it (the
 * reader checks each against its own chain), and its blob. */
struct ag_redis_fleet_record {
    int64_t version;
    char epoch[AG_FLEET_EPOCH_HEX + 1];
    char prev[AG_FLEET_HASH_HEX + 1]; /* "" for a base */
    char hash[AG_FLEET_HASH_HEX + 1];
    unsigned schema;
    const char *blob; /* borrowed from the list that holds it */
    size_t blob_len;
    bool bad; /* a field of the wrong shape: no record of ours */
};

/* Records read; free with ag_redis_fleet_records_free. */
struct ag_redis_fleet_records {
    struct ag_redis_fleet_record *r;
    size_t n;
    int64_t first_version, base_version; /* as in the head */
    void *reply;                         /* the blobs' owner */
};
void ag_redis_fleet_records_free(struct ag_redis_fleet_records *rs);

/* Where the caller saw the head: a compare-and-set's condition. */
struct ag_redis_fleet_seen {
    bool exists;
    const char *epoch, *hash;
    int64_t version;
};

int ag_redis_fleet_head(struct ag_redis_direct *redis, const char *name,
                        struct ag_redis_fleet_head *out);

/* Appends rec (its prev the head's hash, its version one past the
 * head's); seed: the fleet's set stays a seed. AG_OK; AG_ECONFLICT if the
 * head moved (another change came first: read it and try again);
 * AG_EPENDING with *settle_ms while a restored history settles. */
int ag_redis_fleet_append(struct ag_redis_direct *redis, const char *name,
                          const struct ag_redis_fleet_record *rec, bool seed,
                          uint64_t *settle_ms);

/* Begins a history with rec, its first record, if the head is as seen:
 * the log and the base start over. AG_ECONFLICT if it moved. */
int ag_redis_fleet_found(struct ag_redis_direct *redis, const char *name,
                         const struct ag_redis_fleet_seen *seen,
                         const struct ag_redis_fleet_record *rec, bool seed);

/* Puts a history back (a Redis that lost it, or one behind this
 * instance) if the head is as seen: rec, a sealed snapshot at its
 * version, becomes the base, the log starts over after it, and no change
 * is taken for settle_ms; seed as ag_redis_fleet_append's. AG_ECONFLICT
 * if it moved. */
int ag_redis_fleet_restore(struct ag_redis_direct *redis, const char *name,
                           const struct ag_redis_fleet_seen *seen,
                           const struct ag_redis_fleet_record *rec, bool seed,
                           uint64_t settle_ms);

/* Makes rec, a sealed snapshot of the head's history, the base if it is
 * newer than the base, and trims the log to the keep records before it.
 * AG_ECONFLICT if it is not (nothing done). */
int ag_redis_fleet_compact(struct ag_redis_direct *redis, const char *name,
                           const struct ag_redis_fleet_record *rec,
                           int64_t keep);

/* The log's records after version after, count at most (1 to 1000). */
int ag_redis_fleet_read(struct ag_redis_direct *redis, const char *name,
                        int64_t after, unsigned count,
                        struct ag_redis_fleet_records *out);

/* The base (out->n 0 if there is none, else 1). */
int ag_redis_fleet_base(struct ag_redis_direct *redis, const char *name,
                        struct ag_redis_fleet_records *out);

/* This instance's heartbeat (json, text of at most 4096 bytes); those
 * older than keep_ms go. *now_ms: Redis TIME. */
int ag_redis_fleet_beat(struct ag_redis_direct *redis, const char *name,
                        const char *instance, const char *json,
                        uint64_t keep_ms, uint64_t *now_ms);

/* One heartbeat. */
struct ag_redis_fleet_member {
    const char *id, *json; /* borrowed from the list */
    uint64_t at_ms;
};
struct ag_redis_fleet_members {
    struct ag_redis_fleet_member *m;
    size_t n;
    uint64_t now_ms;
    void *reply;
};
int ag_redis_fleet_members(struct ag_redis_direct *redis, const char *name,
                           struct ag_redis_fleet_members *out);
void ag_redis_fleet_members_free(struct ag_redis_fleet_members *ms);

#endif
