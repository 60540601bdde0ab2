/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Numbers in text, read whole and strictly: what a flag, a URL's port or
 * database and a listen address have in common. Only decimal digits are
 * accepted ("+5", " 5", "5 ", "0x5" and the empty string are refused, as
 * strtoul alone would not), and a value outside its range is refused,
 * never clamped or wrapped. No state; safe from any thread.
 */
#ifndef AG_PARSE_H
#define AG_PARSE_H

/* A decimal number from min to max, the whole of s, into *out. Returns
 * 0, or AG_EINVAL with *out untouched. */
int ag_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);
/* A TCP port, 1 to 65535, the whole of s. Returns 0, or AG_EINVAL with
 * *port untouched. */
int ag_parse_port(const char *s, int *port);

#endif
