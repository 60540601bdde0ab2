/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_range.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_metrics.h"
#include "ag_pwned.h"
#include "ag_pwned_live.h"

/* An unpadded answer may be kept this long by a cache. The public API
 * says 31 days, behind a CDN it purges when the corpus changes; nothing
 * purges a cache in front of abuseguard when an operator renames a new
 * corpus over the old one, so a cache serves the old range for an hour at
 * most, then asks again with the ETag (a 304 when nothing changed). */
#define CACHE_CONTROL "public, max-age=3600"

/* Padding lines beyond AG_HTTP_RANGE_PADDED_LINES: 10 to 199, as the
 * public API's Worker adds (randomInt(10, 200)). */
#define PAD_EXTRA_MIN 10
#define PAD_EXTRA_SPAN 190

/* Bytes of one line at most: a suffix, ':', a count (32 bits: 10 digits)
 * and the CRLF before the next. */
#define RANGE_LINE_MAX (AG_PWNED_SUFFIX_HEX_MAX + 1 + 10 + 2)

static const char hex_digits[] = "0123456789ABCDEF";

/* The 5 hex digits of path after AG_HTTP_RANGE_PATH "/" as a number. */
static int parse_prefix(const char *path, uint32_t *out)
{
    const char *s = path + strlen(AG_HTTP_RANGE_PATH);
    if (*s++ != '/')
        return AG_EINVAL;
    uint32_t v = 0;
    for (int i = 0; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return AG_EINVAL;
        v = v << 4 | (uint32_t)d;
    }
    if (s[5])
        return AG_EINVAL;
    *out = v;
    return AG_OK;
}

/* The padding's random bytes: a ChaCha20 keystream under a key from the
 * system's generator, one getrandom(2) an answer however long it is. */
struct pad_rng {
    unsigned char key[crypto_stream_chacha20_KEYBYTES];
    uint64_t block; /* the nonce of the next refill */
    unsigned char buf[1024];
    size_t at; /* bytes of buf used */
};

static void rng_init(struct pad_rng *g)
{
    randombytes_buf(g->key, sizeof g->key);
    g->block = 0;
    g->at = sizeof g->buf;
}

static void rng_take(struct pad_rng *g, unsigned char *out, size_t n)
{
    while (n) {
        if (g->at == sizeof g->buf) {
            unsigned char nonce[crypto_stream_chacha20_NONCEBYTES] = {0};
            for (size_t i = 0; i < sizeof nonce; i++)
                nonce[i] = (unsigned char)(g->block >> (8 * i));
            g->block++;
            crypto_stream_chacha20(g->buf, sizeof g->buf, nonce, g->key);
            g->at = 0;
        }
        size_t k = sizeof g->buf - g->at;
        k = k < n ? k : n;
        memcpy(out, g->buf + g->at, k);
        g->at += k;
        out += k;
        n -= k;
    }
}

/* A random hash of the range that the corpus does not hold, as its
 * suffix's hex digits (2 * hash_len - 5 of them) into out. */
static void pad_suffix(struct pad_rng *g, const struct ag_pwned *p,
                       uint32_t prefix, size_t hash_len, char *out)
{
    unsigned char h[AG_PWNED_SHA1_LEN];
    do {
        rng_take(g, h, hash_len);
        h[0] = (unsigned char)(prefix >> 12);
        h[1] = (unsigned char)(prefix >> 4);
        h[2] = (unsigned char)((prefix & 0xf) << 4 | (h[2] & 0x0f));
    } while (ag_pwned_lookup(p, h) != 0);
    ag_pwned_suffix_hex(h + 2, hash_len - 2, out);
}

static void count_text(struct ag_buf *b, uint32_t count)
{
    char digits[AG_UINT_TEXT];
    size_t len;
    const char *d = ag_uint_text(digits, count, &len);
    ag_buf_append(b, ":", 1);
    ag_buf_append(b, d, len);
}

/* The range's lines, then, padded, the random ones. */
static int range_body(struct ag_http_response *r, const struct ag_pwned *p,
                      uint32_t prefix, bool padded)
{
    struct ag_pwned_range rg;
    ag_pwned_range(p, prefix, &rg);
    bool ntlm = ag_pwned_info(p)->mode == AG_PWNED_NTLM;
    size_t hash_len = ntlm ? AG_PWNED_NTLM_LEN : AG_PWNED_SHA1_LEN;
    size_t hex_len = 2 * hash_len - 5;
    struct pad_rng g;
    uint64_t pad = 0;
    if (padded) {
        rng_init(&g);
        unsigned char b[4];
        rng_take(&g, b, sizeof b);
        uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 |
                     (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        pad = PAD_EXTRA_MIN + v % PAD_EXTRA_SPAN;
        if (rg.n < AG_HTTP_RANGE_PADDED_LINES)
            pad += AG_HTTP_RANGE_PADDED_LINES - rg.n;
    }
    /* One allocation, sized for the answer: a range is a slice of the
     * corpus (about a thousand lines in the full one), never the corpus. */
    size_t max = (size_t)(rg.n + pad) * RANGE_LINE_MAX;
    ag_buf_init(&r->body, max);
    if (max && ag_buf_reserve(&r->body, max))
        return ag_buf_error(&r->body);
    struct ag_buf *b = &r->body;
    char hex[AG_PWNED_SUFFIX_HEX_MAX + 1];
    for (uint64_t i = 0; i < rg.n; i++) {
        uint32_t count = ag_pwned_range_entry(&rg, i, hex);
        if (i)
            ag_buf_append(b, "\r\n", 2);
        ag_buf_append(b, hex, hex_len);
        count_text(b, count);
    }
    for (uint64_t i = 0; i < pad; i++) {
        pad_suffix(&g, p, prefix, hash_len, hex);
        if (rg.n || i)
            ag_buf_append(b, "\r\n", 2);
        ag_buf_append(b, hex, hex_len);
        ag_buf_append(b, ":0", 2);
    }
    if (padded)
        sodium_memzero(&g, sizeof g);
    r->status = 200;
    r->content_type = "text/plain; charset=utf-8";
    return ag_buf_error(b);
}

/* The answer's entity tag: the mode, the prefix and the first 8 bytes of
 * the corpus's checksum, "sha1-21BD1-0123456789abcdef" in quotes. */
static void entity_tag(char out[AG_HTTP_ETAG_MAX], const struct ag_pwned *p,
                       uint32_t prefix)
{
    const struct ag_pwned_info *in = ag_pwned_info(p);
    size_t n = 0;
    out[n++] = '"';
    const char *mode = in->mode == AG_PWNED_NTLM ? "ntlm-" : "sha1-";
    memcpy(out + n, mode, 5);
    n += 5;
    for (int shift = 16; shift >= 0; shift -= 4)
        out[n++] = hex_digits[(prefix >> shift) & 0xf];
    out[n++] = '-';
    for (int i = 0; i < 8; i++) {
        out[n++] = "0123456789abcdef"[in->checksum[i] >> 4];
        out[n++] = "0123456789abcdef"[in->checksum[i] & 0x0f];
    }
    out[n++] = '"';
    out[n] = '\0';
}

/* Whether the request asks for padding: Add-Padding: true, in any case,
 * as the public API reads it. */
static bool wants_padding(const struct ag_http_request *req)
{
    const char *v = ag_http_request_header(req, "Add-Padding");
    return v && strcasecmp(v, "true") == 0;
}

int ag_http_range(struct ag_pwned_live *live, struct ag_metrics *metrics,
                  const struct ag_http_request *req, struct ag_http_response *r)
{
    uint32_t prefix;
    if (parse_prefix(req->path, &prefix))
        return ag_http_response_field_error(
            r, 400,
            "prefix must be 5 hexadecimal digits, the start of the hash: "
            "/range/21BD1",
            "prefix");
    const char *m = ag_http_request_query(req, "mode");
    enum ag_pwned_mode mode;
    if (!m || strcasecmp(m, "sha1") == 0)
        mode = AG_PWNED_SHA1;
    else if (strcasecmp(m, "ntlm") == 0)
        mode = AG_PWNED_NTLM;
    else
        return ag_http_response_field_error(r, 400, "mode must be sha1 or ntlm",
                                            "mode");
    struct ag_pwned_hold *h = ag_pwned_live_hold(live, mode);
    if (!h)
        return ag_http_response_field_error(
            r, 404,
            mode == AG_PWNED_NTLM
                ? "mode ntlm: no NTLM corpus is loaded (--pwned-file)"
                : "mode sha1: no SHA-1 corpus is loaded (--pwned-file)",
            "mode");
    const struct ag_pwned *p = ag_pwned_hold_corpus(h);
    /* The same URL answers padded and unpadded. */
    r->vary = "Add-Padding";
    int rc;
    if (wants_padding(req)) {
        r->cache_control = "no-store";
        rc = range_body(r, p, prefix, true);
    } else {
        entity_tag(r->etag, p, prefix);
        r->cache_control = CACHE_CONTROL;
        const char *inm = ag_http_request_header(req, "If-None-Match");
        if (inm && ag_http_etag_matches(inm, r->etag)) {
            r->status = 304;
            rc = AG_OK;
        } else {
            rc = range_body(r, p, prefix, false);
        }
    }
    ag_pwned_hold_release(h);
    if (rc == AG_OK)
        ag_metrics_pwned_lookup(metrics, mode == AG_PWNED_NTLM
                                             ? AG_METRICS_PWNED_NTLM
                                             : AG_METRICS_PWNED_SHA1);
    return rc;
}
