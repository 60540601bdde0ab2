/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seam between an IP list's formats (ag_iplist_formats.c: which
 * bytes of a file are entries) and its tables (ag_iplist.c: what an
 * entry means, merging, lookup), shared by those two files and nothing
 * else. The tables call the formats and hand them their add function:
 * calls go one way (scripts/check_calls.py), as ag_pwned_parse hands its
 * lines to an emit function.
 */
#ifndef AG_IPLIST_IMPL_H
#define AG_IPLIST_IMPL_H

#include <stddef.h>

#include "ag_error.h"
#include "ag_iplist.h"

#define AG_IPLIST_FIELD "ip-list" /* the field every refusal names */

/* Takes the address or CIDR s (n bytes, blanks trimmed, no NUL needed)
 * found at where ("line 7", "prefixes[3].ip_prefix"). Returns AG_OK, or
 * AG_EINVAL or AG_ENOMEM with the error (the one given to
 * ag_iplist_read) filled: "ip-list line 7: '10.0.0.0/33' is not an
 * address or CIDR". */
typedef int (*ag_iplist_add_fn)(void *ctx, const char *where, const char *s,
                                size_t n);

/* Finds every entry of text (len bytes, no NUL needed) in format f and
 * hands it to add(ctx, ...), stopping at the first refusal; a text that
 * is not of the format is refused in err, naming the line. A text without
 * entries is not refused here (ag_iplist_parse does that). */
int ag_iplist_read(const char *text, size_t len, enum ag_iplist_format f,
                   ag_iplist_add_fn add, void *ctx, struct ag_error *err);

#endif
