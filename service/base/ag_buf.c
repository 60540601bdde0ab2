/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"

void ag_buf_init(struct ag_buf *b, size_t max)
{
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
    b->err = 0;
}

void ag_buf_free(struct ag_buf *b)
{
    free(b->p);
    ag_buf_init(b, b->max);
}

void ag_buf_reset(struct ag_buf *b)
{
    b->len = 0;
    b->err = 0;
    if (b->p)
        b->p[0] = '\0';
}

/* Records rc as the buffer's error if it is the first; returns rc. */
static int keep_error(struct ag_buf *b, int rc)
{
    if (!b->err)
        b->err = rc;
    return rc;
}

int ag_buf_reserve(struct ag_buf *b, size_t extra)
{
    if (b->err)
        return b->err;
    if (extra > b->max - b->len)
        return keep_error(b, AG_ETOOBIG);
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return AG_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p = realloc(b->p, cap);
    if (!p)
        return keep_error(b, AG_ENOMEM);
    b->p = p;
    b->cap = cap;
    return AG_OK;
}

int ag_buf_append_slow(struct ag_buf *b, const void *data, size_t len)
{
    int rc = ag_buf_reserve(b, len);
    if (rc)
        return rc;
    if (len)
        memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
    return AG_OK;
}

const char *ag_uint_text(char out[AG_UINT_TEXT], uint64_t v, size_t *len)
{
    size_t n = AG_UINT_TEXT;
    do {
        out[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    *len = AG_UINT_TEXT - n;
    return out + n;
}

int ag_buf_uint(struct ag_buf *b, uint64_t v)
{
    char out[AG_UINT_TEXT];
    size_t len;
    const char *digits = ag_uint_text(out, v, &len);
    return ag_buf_append(b, digits, len);
}

int ag_buf_printf(struct ag_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->err)
        return b->err;
    if (n < 0)
        return keep_error(b, AG_EINVAL);
    int rc = ag_buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return AG_OK;
}

int ag_buf_json_string(struct ag_buf *b, const char *s)
{
    size_t start = b->len;
    int rc = ag_buf_append(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; !rc && *c; c++) {
        if (*c == '"' || *c == '\\') {
            char esc[2] = {'\\', (char)*c};
            rc = ag_buf_append(b, esc, 2);
        } else if (*c < 0x20 || *c == 0x7f) {
            rc = ag_buf_printf(b, "\\u%04x", *c);
        } else {
            rc = ag_buf_append(b, c, 1);
        }
    }
    if (!rc)
        rc = ag_buf_append(b, "\"", 1);
    if (rc) {
        b->len = start;
        if (b->p)
            b->p[start] = '\0';
    }
    return rc;
}
