/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The import's line parser: the text the Pwned Passwords downloader
 * writes, fed in buffers, out as binary hashes with their counts.
 *
 * A source is either whole hashes ("HASH:COUNT", the downloader's single
 * file) or the suffixes of one prefix ("SUFFIX:COUNT", one file of its
 * folder form, named for the prefix). Hex digits in either case, lines
 * ending in LF or CRLF, the last one with or without. Anything else is
 * refused with the source's name and the line's number: a malformed line
 * must stop the import, not make the corpus silently shorter.
 *
 * Hashes must come in strictly increasing order across all the sources
 * of one import (both downloader forms are sorted); a hash equal to or
 * lower than the one before it is refused the same way. Lines whose
 * count is below min_count are checked and counted, then dropped.
 *
 * The hot loop allocates nothing and copies nothing: it reads each line
 * in place in the caller's buffer. One parser is one import's, on one
 * thread.
 */
#ifndef AG_PWNED_PARSE_H
#define AG_PWNED_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "ag_pwned.h"

/* Receives each kept hash (the mode's length in bytes; valid only during
 * the call) and its count. A non-zero return stops the parse and comes
 * back from ag_pwned_parse_feed or _end as it is. */
typedef int (*ag_pwned_emit_fn)(void *ctx, const uint8_t *hash, uint32_t count);

#define AG_PWNED_PARSE_ERR_MAX 512

struct ag_pwned_parser {
    enum ag_pwned_mode mode;
    uint32_t min_count;
    ag_pwned_emit_fn emit;
    void *ctx;
    unsigned hash_len;
    uint64_t lines;   /* lines read, all sources */
    uint64_t kept;    /* lines passed to emit */
    uint64_t dropped; /* lines below min_count */
    /* The source being read. */
    const char *name;                /* borrowed until the next _begin */
    uint64_t line;                   /* the line being read, from 1 */
    int prefix;                      /* its prefix, or -1 for whole hashes */
    unsigned digits;                 /* hex digits a line must have */
    uint8_t cur[AG_PWNED_SHA1_LEN];  /* the line's hash */
    uint8_t last[AG_PWNED_SHA1_LEN]; /* the hash before it */
    int have_last;
    char err[AG_PWNED_PARSE_ERR_MAX]; /* why the parse stopped */
};

/* Sets p up for one import; nothing to free. */
void ag_pwned_parser_init(struct ag_pwned_parser *p, enum ag_pwned_mode mode,
                          uint32_t min_count, ag_pwned_emit_fn emit, void *ctx);

/* Starts a source named name (for messages; borrowed): prefix is the
 * 20-bit prefix of a per-prefix file, or -1 for whole hashes. */
void ag_pwned_parse_begin(struct ag_pwned_parser *p, const char *name,
                          int prefix);

/* Parses the complete lines at the start of buf (those that end in '\n')
 * and sets *used to the bytes they take; the caller keeps the rest and
 * passes it again with more text after it. AG_OK, AG_EINVAL for a bad
 * line (p->err names the source and line), or emit's return. */
int ag_pwned_parse_feed(struct ag_pwned_parser *p, const char *buf, size_t len,
                        size_t *used);

/* Ends the source: rest (len bytes, no '\n' in it) is its last line,
 * which had no line end; len 0 when it had one. */
int ag_pwned_parse_end(struct ag_pwned_parser *p, const char *rest, size_t len);

/* "FILE line N: " then the formatted message, into p->err; AG_EINVAL. */
int ag_pwned_parse_fail(struct ag_pwned_parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
