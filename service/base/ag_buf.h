/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable byte buffer with a hard cap, after curl's dynbuf: appending past
 * the cap fails with AG_ETOOBIG and leaves the buffer as it was, so a hostile
 * input can never make it grow without bound. The contents are always
 * NUL-terminated. Not thread-safe; one owner at a time.
 *
 * The error is sticky: the first append that fails (AG_ETOOBIG or
 * AG_ENOMEM) records its code, and every later append returns that code
 * and does nothing, until ag_buf_init or ag_buf_reset. A message built by a
 * run of appends is then checked once, with ag_buf_error, at its end: no
 * error codes ORed together, and no half-message that skipped a part.
 */
#ifndef AG_BUF_H
#define AG_BUF_H

#include "ag_error.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ag_buf {
    char *p;    /* contents, NUL-terminated; NULL until the first append */
    size_t len; /* bytes used, without the NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* most bytes len may reach */
    int err;    /* the first failed append's code; 0 while none failed */
};

void ag_buf_init(struct ag_buf *b, size_t max);
/* Frees the contents; the buffer may be reused after ag_buf_init. */
void ag_buf_free(struct ag_buf *b);
/* Empties the buffer, clears its error and keeps its allocation. */
void ag_buf_reset(struct ag_buf *b);
/* AG_OK, or the code of the first append that failed since the last
 * ag_buf_init or ag_buf_reset. */
static inline int ag_buf_error(const struct ag_buf *b)
{
    return b->err;
}
/* Makes room for extra more bytes at once (AG_ETOOBIG past the cap), so
 * the appends of a known-size message do not reallocate one by one. */
int ag_buf_reserve(struct ag_buf *b, size_t extra);
/* The appends are inline, so that an append that fits costs a copy and a
 * literal's length is known where it is written: the check answers are
 * built of a few dozen of them. The rest (growth, the cap, the sticky
 * error) is ag_buf_append_slow. */
int ag_buf_append_slow(struct ag_buf *b, const void *data, size_t len);
static inline int ag_buf_append(struct ag_buf *b, const void *data, size_t len)
{
    /* b->cap is 0 until the first append and never more than b->max + 1,
     * so what fits the allocation is within the cap too. */
    if (b->err || len >= b->cap - b->len)
        return ag_buf_append_slow(b, data, len);
    if (len) /* data may be NULL then */
        memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
    return AG_OK;
}
static inline int ag_buf_puts(struct ag_buf *b, const char *s)
{
    return ag_buf_append(b, s, strlen(s));
}
/* Writes v in decimal at the end of out, without printf, and returns where
 * the digits start; *len is how many there are. */
#define AG_UINT_TEXT 20 /* UINT64_MAX has 20 digits */
const char *ag_uint_text(char out[AG_UINT_TEXT], uint64_t v, size_t *len);
/* Appends v in decimal; the hot paths' cheaper ag_buf_printf("%llu"). */
int ag_buf_uint(struct ag_buf *b, uint64_t v);
int ag_buf_printf(struct ag_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s as a quoted JSON string, escaping quotes, backslashes and
 * control characters. s must be valid UTF-8 (the caller's promise). */
int ag_buf_json_string(struct ag_buf *b, const char *s);

#endif
