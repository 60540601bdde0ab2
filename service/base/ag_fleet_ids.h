/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet's identifiers (service/fleet/ag_fleet.h), as text, shared by
 * the layers that keep them: Redis's keys and records (redis/), the
 * database's fleet row (db/) and the records' seal (fleet/). Sizes are
 * without the NUL.
 */
#ifndef AG_FLEET_IDS_H
#define AG_FLEET_IDS_H

#include <stdbool.h>
#include <string.h>

/* A fleet's name (--fleet-name): 1 to 32 of [A-Za-z0-9_.-]. It is part
 * of every fleet key and channel, so two fleets on one Redis never meet. */
#define AG_FLEET_NAME_MAX 32
/* An epoch, the id of one history: 16 random bytes in hex. */
#define AG_FLEET_EPOCH_HEX 32
/* A record's hash (BLAKE2b-256) in hex: the chain's links. */
#define AG_FLEET_HASH_HEX 64
/* An instance's id, made once per database: 8 random bytes in hex. */
#define AG_FLEET_INSTANCE_HEX 16
/* The default --fleet-name. */
#define AG_FLEET_NAME_DEFAULT "main"

static inline bool ag_fleet_name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > AG_FLEET_NAME_MAX)
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-") == n;
}

/* Is s exactly n lowercase hex digits? */
static inline bool ag_fleet_hex_valid(const char *s, size_t n)
{
    return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

#endif
