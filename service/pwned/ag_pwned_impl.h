/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The corpus file's layout, shared by the reader (ag_pwned.c) and the
 * writer (ag_pwned_write.c) and by nothing else: docs/pwned.md describes
 * the same bytes for people. Every number is little-endian.
 *
 *   header   AG_PWNED_HEADER_SIZE bytes (the offsets below)
 *   index    AG_PWNED_PREFIXES + 1 uint64: index[p] is the number of the
 *            first entry whose 20-bit prefix is p or more, so prefix p
 *            holds entries index[p] .. index[p + 1] - 1; index[0] is 0
 *            and index[AG_PWNED_PREFIXES] the count of entries
 *   records  entries fixed-size records, in strictly increasing hash
 *            order: the hash's bytes from the third on (the first two and
 *            a half bytes are the prefix; the half byte stays in the
 *            record, so records compare with memcmp), then a uint32 count
 *
 * The header's checksum is BLAKE2b-256 (crypto_generichash) of the
 * records' bytes followed by the index's, so that the writer, which knows
 * the index only at the end, computes it in the one pass that streams the
 * records. The header's own checksum, BLAKE2b-256 of its first
 * AG_PWNED_HDR_SELF bytes, lets open trust the header without reading the
 * rest.
 */
#ifndef AG_PWNED_IMPL_H
#define AG_PWNED_IMPL_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#include "ag_pwned.h"

#define AG_PWNED_MAGIC "AGPWNED\0"
#define AG_PWNED_MAGIC_LEN 8
#define AG_PWNED_VERSION 1u
#define AG_PWNED_HEADER_SIZE 160u
#define AG_PWNED_INDEX_SIZE ((uint64_t)(AG_PWNED_PREFIXES + 1) * 8u)
#define AG_PWNED_INDEX_OFF ((uint64_t)AG_PWNED_HEADER_SIZE)
#define AG_PWNED_RECORDS_OFF (AG_PWNED_INDEX_OFF + AG_PWNED_INDEX_SIZE)
#define AG_PWNED_SKIP 2u /* hash bytes left out of a record */

/* Header field offsets. */
#define AG_PWNED_HDR_MAGIC 0
#define AG_PWNED_HDR_VERSION 8
#define AG_PWNED_HDR_MODE 12
#define AG_PWNED_HDR_SUFFIX_BYTES 16
#define AG_PWNED_HDR_RECORD_SIZE 20
#define AG_PWNED_HDR_ENTRIES 24
#define AG_PWNED_HDR_MIN_COUNT 32
#define AG_PWNED_HDR_RESERVED1 36 /* uint32, zero */
#define AG_PWNED_HDR_CREATED 40
#define AG_PWNED_HDR_INDEX_OFF 48
#define AG_PWNED_HDR_RECORDS_OFF 56
#define AG_PWNED_HDR_FILE_SIZE 64
#define AG_PWNED_HDR_CHECKSUM 72
#define AG_PWNED_HDR_RESERVED2 104 /* 24 bytes, zero */
#define AG_PWNED_HDR_SELF 128      /* bytes the header's checksum covers */
#define AG_PWNED_HDR_SELF_SUM 128

/* The hash's length in bytes for a mode, 0 for no mode. */
static inline unsigned ag_pwned_hash_len(int mode)
{
    if (mode == AG_PWNED_SHA1)
        return AG_PWNED_SHA1_LEN;
    if (mode == AG_PWNED_NTLM)
        return AG_PWNED_NTLM_LEN;
    return 0;
}

/* The 20-bit prefix of a binary hash. */
static inline uint32_t ag_pwned_prefix_of(const uint8_t *hash)
{
    return (uint32_t)hash[0] << 12 | (uint32_t)hash[1] << 4 | hash[2] >> 4;
}

/* memcmp of two hashes of len (at least 8) bytes, by sign: the first
 * eight bytes as one big-endian number decide nearly always, and cost a
 * load each where memcmp costs a call; the import compares every line
 * with the one before it. */
static inline int ag_pwned_hash_cmp(const uint8_t *a, const uint8_t *b,
                                    unsigned len)
{
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    if (x != y)
        return be64toh(x) < be64toh(y) ? -1 : 1;
    return memcmp(a + 8, b + 8, len - 8);
}

static inline void ag_pwned_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void ag_pwned_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t ag_pwned_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t ag_pwned_get64(const uint8_t *p)
{
    return (uint64_t)ag_pwned_get32(p) | (uint64_t)ag_pwned_get32(p + 4) << 32;
}

#endif
