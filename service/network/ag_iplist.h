/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A named IP set from a file the operator downloads (--ip-list
 * NAME=PATH): the Tor bulk exit list, FireHOL's .netset files, X4BNet's
 * datacenter and VPN lists (one address or CIDR a line, '#' comments),
 * Spamhaus DROP's JSON lines, AWS ip-ranges.json, Google Cloud's
 * cloud.json. Parsed once per load into two sorted tables of disjoint
 * ranges (IPv4 and IPv6; overlapping and adjacent entries merged), which
 * a lookup searches by bisection: no allocation, O(log n), well under a
 * microsecond for 100 000 prefixes.
 *
 * Ranges inside private (RFC 1918, fc00::/7), loopback, link-local or
 * carrier-grade NAT (100.64.0.0/10) space are "special": a list holding
 * one (FireHOL level1 holds 10.0.0.0/8 from its bogons part) would match
 * a load balancer's own address, so the loader counts them and a match
 * says whether only special ranges matched (ag_iplist_match), for the
 * metric that tells an integrator who sends the wrong address.
 *
 * Thread-safety: a loaded list is immutable; any number of threads may
 * match against it at once. Load and free from one thread.
 */
#ifndef AG_IPLIST_H
#define AG_IPLIST_H

#include <stddef.h>

#include "ag_error.h"
#include "ag_identity.h"

/* A list file's format; AG_IPLIST_AUTO detects it from the first
 * non-blank, non-comment bytes: '{' then a "prefixes" key (AWS, Google)
 * or one JSON object a line with "cidr" (Spamhaus), else plain lines. */
enum ag_iplist_format {
    AG_IPLIST_AUTO,
    AG_IPLIST_PLAIN,    /* one address or CIDR a line, '#' or ';' comments */
    AG_IPLIST_SPAMHAUS, /* drop_v4.json, drop_v6.json: {"cidr": ...} lines */
    AG_IPLIST_AWS,      /* ip-ranges.json: prefixes[].ip_prefix,
                           ipv6_prefixes[].ipv6_prefix */
    AG_IPLIST_GCP,      /* cloud.json: prefixes[].ipv4Prefix, .ipv6Prefix */
};

/* What a match found. */
enum ag_iplist_hit {
    AG_IPLIST_MISS = 0,
    AG_IPLIST_HIT,         /* a range that is not special holds it */
    AG_IPLIST_HIT_SPECIAL, /* only special ranges hold it */
};

struct ag_iplist;

/* "plain", "spamhaus", "aws", "gcp" or "auto" into *out; AG_EINVAL for
 * anything else. */
int ag_iplist_format_parse(const char *name, enum ag_iplist_format *out);

/* Parses len bytes of text (no NUL needed) in format f. A line or entry
 * that is not an address or CIDR is an error naming its line (field
 * "ip-list"; an AWS or Google entry is named by its place,
 * "prefixes[3].ip_prefix"), as is a file with no entry at all; a CIDR
 * whose host bits are set is taken as its network, and an IPv4-mapped
 * one (::ffff:a.b.c.d/96 or longer) as the IPv4 CIDR it names. Returns
 * AG_OK and the list in *out (the caller's: free it with
 * ag_iplist_free), AG_EINVAL or AG_ENOMEM. */
int ag_iplist_parse(const char *text, size_t len, enum ag_iplist_format f,
                    struct ag_iplist **out, struct ag_error *err);
/* The largest file ag_iplist_load reads: the largest real lists (FireHOL's
 * biggest sets, AWS ip-ranges.json) are a few MiB, and a list's tables
 * during loading take up to ten times its size. */
#define AG_IPLIST_FILE_MAX (128u << 20)

/* Reads path whole and parses it (AG_EIO if it cannot be read; AG_EINVAL
 * if it is larger than AG_IPLIST_FILE_MAX). The list in *out is the
 * caller's: free it with ag_iplist_free. */
int ag_iplist_load(const char *path, enum ag_iplist_format f,
                   struct ag_iplist **out, struct ag_error *err);
void ag_iplist_free(struct ag_iplist *l);

/* Does l hold ip? An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is looked
 * up as its IPv4 address. Nothing allocated. */
enum ag_iplist_hit ag_iplist_match(const struct ag_iplist *l,
                                   const struct ag_ip *ip);

/* The entries read (before merging), and those that were special. */
size_t ag_iplist_entries(const struct ag_iplist *l);
size_t ag_iplist_special(const struct ag_iplist *l);
/* The bytes its tables take. */
size_t ag_iplist_bytes(const struct ag_iplist *l);

#endif
