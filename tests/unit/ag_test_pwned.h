/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small corpora for test_pwned_live.c and test_http_range.c, written with
 * the corpus writer (ag_pwned_write): a few prefixes, each with its number
 * of hashes, the hashes and counts derived from the prefix, their place
 * and a salt, so that a test knows every line of every range, and a
 * second corpus of another salt differs from the first in each count.
 * Include after <cmocka.h>.
 */
#ifndef AG_TEST_PWNED_H
#define AG_TEST_PWNED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_pwned.h"
#include "ag_pwned_write.h"

struct ag_test_range {
    uint32_t prefix;
    uint32_t n; /* hashes in it */
};

static inline size_t ag_test_hash_len(enum ag_pwned_mode mode)
{
    return mode == AG_PWNED_NTLM ? AG_PWNED_NTLM_LEN : AG_PWNED_SHA1_LEN;
}

/* Hash seq (increasing with seq) of prefix. */
static inline void ag_test_hash(uint8_t *h, size_t len, uint32_t prefix,
                                uint32_t seq)
{
    memset(h, 0, len);
    h[0] = (uint8_t)(prefix >> 12);
    h[1] = (uint8_t)(prefix >> 4);
    h[2] = (uint8_t)((prefix & 0xf) << 4 | ((seq >> 24) & 0xf));
    h[3] = (uint8_t)(seq >> 16);
    h[4] = (uint8_t)(seq >> 8);
    h[5] = (uint8_t)seq;
    for (size_t i = 6; i < len; i++)
        h[i] = (uint8_t)(0x3c ^ i * 7 ^ seq);
}

static inline uint32_t ag_test_count(uint32_t prefix, uint32_t seq,
                                     uint32_t salt)
{
    return prefix % 997 + seq * 13 + salt + 1;
}

/* The line of hash seq of prefix, as the range API writes it. */
static inline void ag_test_line(char *out, size_t size, enum ag_pwned_mode mode,
                                uint32_t prefix, uint32_t seq, uint32_t salt)
{
    uint8_t h[AG_PWNED_SHA1_LEN];
    size_t len = ag_test_hash_len(mode);
    char hex[2 * AG_PWNED_SHA1_LEN + 1];
    ag_test_hash(h, len, prefix, seq);
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02X", h[i]);
    snprintf(out, size, "%s:%u", hex + 5,
             (unsigned)ag_test_count(prefix, seq, salt));
}

/* Writes (renames into place) a corpus of mode at path holding the n
 * ranges of rs (in increasing prefix order), made at created_s. */
static inline void ag_test_corpus(const char *path, enum ag_pwned_mode mode,
                                  const struct ag_test_range *rs, size_t n,
                                  uint32_t salt, int64_t created_s)
{
    struct ag_pwned_writer *w;
    char why[256];
    uint8_t h[AG_PWNED_SHA1_LEN];
    size_t len = ag_test_hash_len(mode);
    if (ag_pwned_writer_open(path, mode, 1, &w, why, sizeof why) != AG_OK)
        fail_msg("writer: %s", why);
    for (size_t k = 0; k < n; k++)
        for (uint32_t s = 0; s < rs[k].n; s++) {
            ag_test_hash(h, len, rs[k].prefix, s);
            if (ag_pwned_writer_add(
                    w, h, ag_test_count(rs[k].prefix, s, salt)) != AG_OK)
                fail_msg("writer: %s", ag_pwned_writer_error(w));
        }
    if (ag_pwned_writer_finish(w, created_s, NULL, why, sizeof why) != AG_OK)
        fail_msg("writer: %s", why);
}

/* Writes size bytes of junk to path, through a renamed temporary file
 * like a real replacement. */
static inline void ag_test_junk(const char *path, size_t size)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s.junk", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        fail_msg("cannot write %s", tmp);
    for (size_t i = 0; i < size; i++)
        fputc((int)(i * 31 % 251), f);
    fclose(f);
    if (rename(tmp, path) != 0)
        fail_msg("cannot rename %s", tmp);
}

#endif
