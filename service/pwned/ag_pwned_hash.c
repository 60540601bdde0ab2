/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Password hashes for Pwned Passwords (ag_pwned_hash.h): SHA-1 through
 * OpenSSL's EVP, MD4 after RFC 1320, and the UTF-8 to UTF-16LE step that
 * NTLM puts before MD4, streamed into MD4 so that nothing is allocated.
 */
#include "ag_pwned_hash.h"

#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "ag_error.h"

struct md4 {
    uint32_t s[4];
    uint64_t len;      /* bytes so far */
    uint8_t block[64]; /* a partial block */
};

static uint32_t rotl(uint32_t x, unsigned n)
{
    return x << n | x >> (32 - n);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void md4_block(uint32_t *s, const uint8_t *p)
{
    /* The order of the words in rounds 2 and 3, and the shifts. */
    static const uint8_t k2[16] = {0, 4, 8,  12, 1, 5, 9,  13,
                                   2, 6, 10, 14, 3, 7, 11, 15};
    static const uint8_t k3[16] = {0, 8, 4, 12, 2, 10, 6, 14,
                                   1, 9, 5, 13, 3, 11, 7, 15};
    static const uint8_t r1[4] = {3, 7, 11, 19};
    static const uint8_t r2[4] = {3, 5, 9, 13};
    static const uint8_t r3[4] = {3, 9, 11, 15};
    uint32_t x[16], a = s[0], b = s[1], c = s[2], d = s[3], t;

    for (int i = 0; i < 16; i++)
        x[i] = le32(p + 4 * i);
    /* Each step updates one of a, d, c, b in turn; rotating the four
     * names after each step keeps the step's text the same. */
    for (int i = 0; i < 16; i++) {
        t = rotl(a + ((b & c) | (~b & d)) + x[i], r1[i & 3]);
        a = d, d = c, c = b, b = t;
    }
    for (int i = 0; i < 16; i++) {
        t = rotl(a + ((b & c) | (b & d) | (c & d)) + x[k2[i]] + 0x5a827999u,
                 r2[i & 3]);
        a = d, d = c, c = b, b = t;
    }
    for (int i = 0; i < 16; i++) {
        t = rotl(a + (b ^ c ^ d) + x[k3[i]] + 0x6ed9eba1u, r3[i & 3]);
        a = d, d = c, c = b, b = t;
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
    /* The words are the password's (NTLM's input is one): wiped, as the
     * caller wipes the state. */
    sodium_memzero(x, sizeof(x));
}

static void md4_init(struct md4 *m)
{
    m->s[0] = 0x67452301u;
    m->s[1] = 0xefcdab89u;
    m->s[2] = 0x98badcfeu;
    m->s[3] = 0x10325476u;
    m->len = 0;
}

static void md4_update(struct md4 *m, const uint8_t *p, size_t n)
{
    size_t have = (size_t)(m->len & 63);
    m->len += n;
    if (have) {
        size_t k = 64 - have < n ? 64 - have : n;
        memcpy(m->block + have, p, k);
        p += k;
        n -= k;
        if (have + k < 64)
            return;
        md4_block(m->s, m->block);
    }
    for (; n >= 64; p += 64, n -= 64)
        md4_block(m->s, p);
    memcpy(m->block, p, n);
}

static void md4_final(struct md4 *m, uint8_t *out)
{
    static const uint8_t pad[64] = {0x80};
    uint8_t bits[8];
    uint64_t nbits = m->len * 8;
    size_t have = (size_t)(m->len & 63);

    for (int i = 0; i < 8; i++)
        bits[i] = (uint8_t)(nbits >> (8 * i));
    md4_update(m, pad, have < 56 ? 56 - have : 120 - have);
    md4_update(m, bits, 8);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(m->s[i] >> (8 * j));
}

void ag_pwned_md4(const uint8_t *data, size_t len, uint8_t *out)
{
    struct md4 m;
    md4_init(&m);
    md4_update(&m, data, len);
    md4_final(&m, out);
    sodium_memzero(&m, sizeof(m));
}

/* The next code point of UTF-8 text at *p (before end), moving *p past
 * it; -1 for a malformed, overlong or surrogate sequence. */
static int32_t next_code_point(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *s = *p;
    uint32_t c = s[0];
    int n;
    uint32_t min;

    if (c < 0x80) {
        *p = s + 1;
        return (int32_t)c;
    }
    if ((c & 0xe0) == 0xc0)
        n = 1, min = 0x80, c &= 0x1f;
    else if ((c & 0xf0) == 0xe0)
        n = 2, min = 0x800, c &= 0x0f;
    else if ((c & 0xf8) == 0xf0)
        n = 3, min = 0x10000, c &= 0x07;
    else
        return -1;
    if (end - s <= n)
        return -1;
    for (int i = 1; i <= n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return -1;
    *p = s + n + 1;
    return (int32_t)c;
}

static int ntlm(const char *pw, size_t len, uint8_t *out)
{
    const uint8_t *p = (const uint8_t *)pw, *end = p + len;
    uint8_t u[4];
    struct md4 m;

    int rc = AG_OK;
    md4_init(&m);
    while (p < end) {
        int32_t c = next_code_point(&p, end);
        if (c < 0) {
            rc = AG_EINVAL;
            break;
        }
        if (c < 0x10000) {
            u[0] = (uint8_t)c;
            u[1] = (uint8_t)(c >> 8);
            md4_update(&m, u, 2);
        } else {
            uint32_t v = (uint32_t)c - 0x10000;
            uint32_t hi = 0xd800 | v >> 10, lo = 0xdc00 | (v & 0x3ff);
            u[0] = (uint8_t)hi;
            u[1] = (uint8_t)(hi >> 8);
            u[2] = (uint8_t)lo;
            u[3] = (uint8_t)(lo >> 8);
            md4_update(&m, u, 4);
        }
    }
    if (rc == AG_OK)
        md4_final(&m, out);
    /* The state's partial block and u hold the password's UTF-16. */
    sodium_memzero(&m, sizeof(m));
    sodium_memzero(u, sizeof(u));
    return rc;
}

int ag_pwned_hash_password(enum ag_pwned_mode mode, const char *pw, size_t len,
                           uint8_t *out)
{
    if (mode == AG_PWNED_NTLM)
        return ntlm(pw, len, out);
    if (mode != AG_PWNED_SHA1)
        return AG_EINVAL;
    unsigned n = 0;
    if (!EVP_Digest(pw, len, out, &n, EVP_sha1(), NULL) ||
        n != AG_PWNED_SHA1_LEN)
        return AG_EIO;
    return AG_OK;
}
