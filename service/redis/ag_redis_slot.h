/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Redis Cluster slot routing, which hiredis 0.14 lacks: the key slot of a
 * key, the map of which master owns which slot (built from a CLUSTER SLOTS
 * reply, kept current with MOVED redirections) and the parser of the
 * MOVED and ASK error texts. It follows the Redis Cluster specification
 * ("Key distribution model" and "Hash tags"; keyHashSlot in Redis's
 * cluster.c): a key's slot is CRC16/XMODEM of the key, or of its hash tag,
 * mod 16384. The store will use it to group a check's keys by the master
 * that owns their slot; it is not wired into the store yet.
 *
 * No I/O here. A map is owned by whoever built it and freed with
 * ag_redis_slot_map_free; the strings it hands out are borrowed, valid
 * until the map is next changed or freed. A map is not thread-safe: one
 * thread changes it at a time, and readers on other threads copy it or
 * take the caller's lock. The other functions keep no state.
 */
#ifndef AG_REDIS_SLOT_H
#define AG_REDIS_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "ag_error.h"

#define AG_REDIS_SLOTS 16384
/* A node's host as CLUSTER SLOTS or a redirection names it: an IPv4 or
 * IPv6 address or, on Redis 7, a hostname (at most 255 bytes). */
#define AG_REDIS_HOST_MAX 256
/* Distinct nodes a map names; MOVED to a node past it uncovers the slot. */
#define AG_REDIS_SLOT_NODES_MAX 1024

/* The key slot of the len bytes at key: of the bytes between the first '{'
 * and the first '}' after it if there are any, else of the whole key
 * ("{}x" hashes whole, "a{b}{c}" as "b"). Always below AG_REDIS_SLOTS. */
uint16_t ag_redis_slot(const char *key, size_t len);

/* CRC16/XMODEM (polynomial 0x1021, initial value 0, no reflection), the
 * checksum under ag_redis_slot; exposed for its test. Not a MAC. */
uint16_t ag_redis_slot_crc16(const char *buf, size_t len);

/* Which master owns which slot, and the masters (host, port) without
 * duplicates; node indexes are stable for the life of the map. */
struct ag_redis_slot_map;

/* Builds a map from a CLUSTER SLOTS reply r: an array of entries
 * [start, end, master, replicas...], each master and replica an array
 * [ip, port, node id, ...]. Refuses (AG_EINVAL, err says which entry and
 * why) a reply that is not such an array, a range outside 0..16383 or with
 * start after end, ranges that overlap, a master without a string ip and
 * an integer port in 1..65535, a replica that is not an array; replicas
 * are otherwise not read. An empty ip is kept as the empty string: it means
 * "the address you sent CLUSTER SLOTS to". An empty reply is a map with no
 * slot covered. AG_ENOMEM if out of memory. On success *out is the
 * caller's, freed with ag_redis_slot_map_free; on failure it is NULL. */
int ag_redis_slot_map_from_reply(const redisReply *r,
                                 struct ag_redis_slot_map **out,
                                 struct ag_error *err);

/* Frees m (NULL is fine). */
void ag_redis_slot_map_free(struct ag_redis_slot_map *m);

/* The number of nodes m names; indexes run from 0 below it. */
size_t ag_redis_slot_map_nodes(const struct ag_redis_slot_map *m);
/* Node i's host ("" for the address CLUSTER SLOTS was sent to) and port;
 * i must be below ag_redis_slot_map_nodes. The host is borrowed from m. */
const char *ag_redis_slot_map_host(const struct ag_redis_slot_map *m, size_t i);
int ag_redis_slot_map_port(const struct ag_redis_slot_map *m, size_t i);

/* The index of the node that owns slot, or -1 if no node covers it (or
 * slot is not below AG_REDIS_SLOTS). */
int ag_redis_slot_map_owner(const struct ag_redis_slot_map *m, uint16_t slot);

/* Does some node own every slot? */
bool ag_redis_slot_map_complete(const struct ag_redis_slot_map *m);

/* Applies a MOVED redirection: slot now belongs to host:port, which joins
 * the node list if it is new. An ASK is not applied (it moves one command,
 * not the slot). If the node cannot join (out of memory, a host too long,
 * AG_REDIS_SLOT_NODES_MAX nodes already) the slot becomes uncovered, so
 * the caller fetches a fresh map rather than sending to the old owner.
 * A slot not below AG_REDIS_SLOTS is ignored. */
void ag_redis_slot_map_moved(struct ag_redis_slot_map *m, uint16_t slot,
                             const char *host, int port);

enum ag_redis_redirect_kind {
    AG_REDIS_MOVED = 1, /* the slot lives there now: update the map */
    AG_REDIS_ASK,       /* this once, send ASKING then the command there */
};

struct ag_redis_redirect {
    enum ag_redis_redirect_kind kind;
    uint16_t slot;
    char host[AG_REDIS_HOST_MAX]; /* "": the node that sent the redirect */
    int port;                     /* 1..65535 */
};

/* Parses the text of a redirection error (hiredis's reply->str, without
 * the '-'): "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>",
 * one space apart, nothing after. The port follows the last colon, so an
 * IPv6 host needs no brackets ("::1:6381"); Redis 7 sends an empty host
 * (":6381") when the node's address is the one the client already used.
 * AG_EINVAL for anything else (another error, a slot past 16383, a port
 * outside 1..65535, a host longer than AG_REDIS_HOST_MAX - 1); out is then
 * unspecified. */
int ag_redis_slot_parse_redirect(const char *err, size_t len,
                                 struct ag_redis_redirect *out);

#endif
