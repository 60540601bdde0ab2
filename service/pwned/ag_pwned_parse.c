/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The import's line parser (ag_pwned_parse.h). A line is read in one
 * straight pass that assumes it is well formed, checking as it goes
 * with a table lookup per character; only a line that fails that pass
 * is read again, slowly, to say what is wrong with it. The caller's
 * buffer always holds a '\n' at or after the end of the line, so no scan
 * runs past it.
 */
#include "ag_pwned_parse.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_pwned_impl.h"

/* A hex digit's value with bit 4 set; 0 for anything else, so that the
 * AND of a line's entries keeps bit 4 only if every one was a digit. */
static const uint8_t hexv[256] = {
    ['0'] = 0x10, ['1'] = 0x11, ['2'] = 0x12, ['3'] = 0x13, ['4'] = 0x14,
    ['5'] = 0x15, ['6'] = 0x16, ['7'] = 0x17, ['8'] = 0x18, ['9'] = 0x19,
    ['A'] = 0x1a, ['B'] = 0x1b, ['C'] = 0x1c, ['D'] = 0x1d, ['E'] = 0x1e,
    ['F'] = 0x1f, ['a'] = 0x1a, ['b'] = 0x1b, ['c'] = 0x1c, ['d'] = 0x1d,
    ['e'] = 0x1e, ['f'] = 0x1f,
};

/* The longest last line without a line end worth reading: a whole SHA-1
 * hash, ':', ten digits and '\r', with room to spare. */
#define LAST_LINE_MAX 120

static const char *mode_name(enum ag_pwned_mode m)
{
    return m == AG_PWNED_NTLM ? "ntlm" : "sha1";
}

void ag_pwned_parser_init(struct ag_pwned_parser *p, enum ag_pwned_mode mode,
                          uint32_t min_count, ag_pwned_emit_fn emit, void *ctx)
{
    memset(p, 0, sizeof(*p));
    p->mode = mode;
    p->min_count = min_count;
    p->emit = emit;
    p->ctx = ctx;
    p->hash_len = ag_pwned_hash_len((int)mode);
    p->prefix = -1;
    p->name = "";
}

void ag_pwned_parse_begin(struct ag_pwned_parser *p, const char *name,
                          int prefix)
{
    p->name = name;
    p->line = 0;
    p->prefix = prefix;
    p->digits = p->hash_len * 2 - (prefix >= 0 ? 5 : 0);
    if (prefix >= 0) {
        uint8_t pre[3];
        pre[0] = (uint8_t)(prefix >> 12);
        pre[1] = (uint8_t)(prefix >> 4);
        pre[2] = (uint8_t)((prefix & 0xf) << 4);
        memcpy(p->cur, pre, sizeof(pre));
    }
}

int ag_pwned_parse_fail(struct ag_pwned_parser *p, const char *fmt, ...)
{
    int n = snprintf(p->err, sizeof(p->err), "%s line %" PRIu64 ": ", p->name,
                     p->line);
    if (n >= 0 && (size_t)n < sizeof(p->err)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, sizeof(p->err) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return AG_EINVAL;
}

/* Says what is wrong with the hash part of line s, which the fast pass
 * refused. */
static int bad_hash(struct ag_pwned_parser *p, const unsigned char *s)
{
    unsigned k = 0;
    while (hexv[s[k]])
        k++;
    unsigned char ch = s[k];
    const char *what = p->prefix >= 0 ? "suffix" : "hash";

    if (k == 0 && (ch == '\n' || (ch == '\r' && s[1] == '\n')))
        return ag_pwned_parse_fail(p, "empty line");
    if (ch == ':' || ch == '\n' || ch == '\r') {
        if (k != p->digits) {
            if (p->prefix >= 0)
                return ag_pwned_parse_fail(
                    p,
                    "the suffix has %u hex digits, a --mode %s prefix "
                    "file's have %u",
                    k, mode_name(p->mode), p->digits);
            return ag_pwned_parse_fail(
                p, "the hash has %u hex digits, --mode %s needs %u", k,
                mode_name(p->mode), p->digits);
        }
        return ag_pwned_parse_fail(p, "no ':' and count after the %s", what);
    }
    char shown[16];
    if (ch > 0x20 && ch < 0x7f)
        snprintf(shown, sizeof(shown), "'%c'", ch);
    else
        snprintf(shown, sizeof(shown), "byte 0x%02X", ch);
    if (k == p->digits)
        return ag_pwned_parse_fail(p,
                                   "character %u (%s) should be the ':' "
                                   "after the %s",
                                   k + 1, shown, what);
    return ag_pwned_parse_fail(
        p, "character %u (%s) is not a hex digit (%s:COUNT expected)", k + 1,
        shown, p->prefix >= 0 ? "SUFFIX" : "HASH");
}

static int bad_order(struct ag_pwned_parser *p, int cmp)
{
    return ag_pwned_parse_fail(
        p,
        "the hash is %s the hash before it: the input must be in "
        "strictly increasing hash order, as the downloader writes it "
        "(to sort a file: tr a-f A-F < IN | LC_ALL=C sort; see "
        "docs/pwned.md)",
        cmp == 0 ? "the same as" : "lower than");
}

/* Parses the line at *sp (with a '\n' at or before end) and moves *sp
 * past its '\n'. */
static int parse_line(struct ag_pwned_parser *p, const unsigned char **sp,
                      const unsigned char *end)
{
    const unsigned char *s = *sp;
    const unsigned char *c = s;
    uint8_t *h = p->cur;
    unsigned ok = 0x10, b = 0;

    p->line++;
    p->lines++;
    /* Room for the digits and the ':' before the buffer's last '\n'. */
    if ((size_t)(end - s) < p->digits)
        return bad_hash(p, s);
    if (p->prefix >= 0) {
        /* A suffix starts with the prefix's byte's low half. */
        uint8_t v = hexv[*c++];
        ok &= v;
        h[2] = (uint8_t)((h[2] & 0xf0) | (v & 0xf));
        b = 3;
    }
    for (; b < p->hash_len; b++, c += 2) {
        uint8_t hi = hexv[c[0]], lo = hexv[c[1]];
        ok &= hi & lo;
        h[b] = (uint8_t)(hi << 4 | (lo & 0xf));
    }
    if (!(ok & 0x10) || *c != ':')
        return bad_hash(p, s);
    const unsigned char *d0 = ++c;
    uint64_t count = 0;
    /* Eleven digits at most, so that the sum cannot overflow. */
    while ((unsigned)(*c - '0') < 10 && c - d0 < 11)
        count = count * 10 + (unsigned)(*c++ - '0');
    if (c == d0)
        return ag_pwned_parse_fail(p, "no count after ':' (a decimal "
                                      "number expected)");
    if ((unsigned)(*c - '0') < 10 || count > UINT32_MAX)
        return ag_pwned_parse_fail(p, "the count is larger than %" PRIu32,
                                   UINT32_MAX);
    if (*c == '\r')
        c++;
    if (*c != '\n')
        return ag_pwned_parse_fail(p,
                                   "character %u is neither a digit of the "
                                   "count nor the line's end",
                                   (unsigned)(c - s) + 1);
    *sp = c + 1;

    if (p->have_last) {
        int cmp = ag_pwned_hash_cmp(h, p->last, p->hash_len);
        if (cmp <= 0)
            return bad_order(p, cmp);
    }
    memcpy(p->last, h, p->hash_len);
    p->have_last = 1;
    if (count < p->min_count) {
        p->dropped++;
        return AG_OK;
    }
    p->kept++;
    return p->emit(p->ctx, h, (uint32_t)count);
}

/* The last '\n' of buf, or NULL: memrchr is a GNU extension. */
static const char *last_newline(const char *buf, size_t len)
{
    for (size_t i = len; i > 0; i--)
        if (buf[i - 1] == '\n')
            return buf + i - 1;
    return NULL;
}

int ag_pwned_parse_feed(struct ag_pwned_parser *p, const char *buf, size_t len,
                        size_t *used)
{
    *used = 0;
    const char *last = last_newline(buf, len);
    if (!last)
        return AG_OK;
    const unsigned char *s = (const unsigned char *)buf;
    const unsigned char *end = (const unsigned char *)last;
    while (s <= end) {
        int rc = parse_line(p, &s, end);
        if (rc != AG_OK)
            return rc;
    }
    *used = (size_t)(last + 1 - buf);
    return AG_OK;
}

int ag_pwned_parse_end(struct ag_pwned_parser *p, const char *rest, size_t len)
{
    char line[LAST_LINE_MAX + 1];
    size_t used;

    if (!len)
        return AG_OK;
    if (len > LAST_LINE_MAX) {
        p->line++;
        return ag_pwned_parse_fail(p,
                                   "a line of %zu bytes without a line "
                                   "end: not a HASH:COUNT file",
                                   len);
    }
    memcpy(line, rest, len);
    line[len] = '\n';
    return ag_pwned_parse_feed(p, line, len + 1, &used);
}
