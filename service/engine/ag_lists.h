/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allow and deny lists: entries that settle a check before any policy is
 * evaluated. An entry names an IP address or network (CIDR), a user, a
 * phone, a country calling code or a range of numbers (a phone prefix),
 * or what the operator's network databases say of the address: its
 * autonomous system (asn) or its country (ip_country), for one endpoint
 * or all. Users and phones are kept only as their keyed digests (the same
 * digest their policy keys use), so a list holds no plaintext identifier;
 * calling codes, prefixes, AS numbers and country codes name no one and
 * are kept in plain text, so that an admin can read them.
 *
 * An asn or ip_country entry matches what the service's lookup found
 * (ag_request_network, made before the lists are matched): an address the
 * databases do not know, or a service without them, matches none.
 *
 * An entry of one address matches the way the ip key counts: an IPv6
 * address stands for its /64 (--ipv6-ip-prefix), so denying or allowing
 * it denies or allows the client that owns that /64. A network entry
 * matches by its own prefix, shorter or longer.
 *
 * A request matched by a deny entry is denied; else one matched by an allow
 * entry is allowed; else the policies decide. Deny wins so that one bad
 * user can be shut out of an allow-listed office network.
 * Entries are plain values; matching is a pure function.
 */
#ifndef AG_LISTS_H
#define AG_LISTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_identity.h"
#include "ag_policy.h"
#include "ag_request.h"

#define AG_LISTS_MAX 10000 /* entries, allow and deny together */
#define AG_LIST_NOTE_MAX 200
/* The shortest prefix of an allow network that needs no "force". */
#define AG_LIST_ALLOW_MIN_BITS_V4 8u
#define AG_LIST_ALLOW_MIN_BITS_V6 16u

enum ag_list { AG_LIST_ALLOW, AG_LIST_DENY };
enum ag_list_kind {
    AG_LK_IP,
    AG_LK_USER,
    AG_LK_PHONE,
    AG_LK_COUNTRY,      /* a calling code, "+44", kept as written */
    AG_LK_PHONE_PREFIX, /* "+" and 2 to 15 digits, kept as written: every
                           number that starts with them */
    AG_LK_ASN,          /* an AS number in decimal, "174" */
    AG_LK_IP_COUNTRY,   /* the address's ISO 3166-1 alpha-2 code, "FR" */
};

struct ag_list_entry {
    int64_t id;
    enum ag_list list;
    enum ag_list_kind kind;
    int endpoint; /* enum ag_endpoint, or -1 for every endpoint */
    /* ip: canonical "addr" or "addr/bits"; user, phone: digest hex;
     * country, phone_prefix: "+digits"; asn: decimal digits, no "AS";
     * ip_country: two upper-case letters. */
    char value[AG_IP_PREFIX_MAX > AG_DIGEST_HEX + 1 ? AG_IP_PREFIX_MAX
                                                    : AG_DIGEST_HEX + 1];
    char note[AG_LIST_NOTE_MAX + 1];
    /* The admin body said "force": true (a broad allow network). Not
     * stored with the entry: it reaches the audit row of the addition
     * through ag_list_entry_to_json, and entries read back lack it. */
    bool force;
    /* ip only, for matching: the network and its prefix length. */
    int family;
    unsigned char addr[16];
    unsigned bits;
};

const char *ag_list_name(enum ag_list l);
/* AG_LIST_ALLOW or AG_LIST_DENY for "allow" / "deny"; -1 otherwise. */
int ag_list_parse(const char *s);
const char *ag_list_kind_name(enum ag_list_kind k);

/* Builds an entry of list from an admin body {"kind": "ip"|"user"|"phone"|
 * "country"|"phone_prefix"|"asn"|"ip_country",
 * "value": "...", "endpoint": "login" (optional; "*" is every endpoint,
 * as leaving it out), "note": "..." (optional), "force": true
 * (optional)}, or from an entry as ag_list_entry_to_json wrote it: its
 * "id" is ignored and its "list" must be list (a "hash" is refused: the
 * value it came from is needed). IPs and networks are canonicalised
 * (host bits must be zero); an allow network shorter than
 * AG_LIST_ALLOW_MIN_BITS_V4 or _V6 (0.0.0.0/0 and ::/0 among them) is
 * refused unless forced. Users and phones are normalised and hashed with h,
 * and only the digest is kept. An AS number may be written "AS174" or
 * "174" and is kept as "174"; a country code is taken in either case and
 * kept in upper case. On refusal returns AG_EINVAL with err naming the
 * field. */
int ag_list_entry_from_json(const json_t *obj, enum ag_list list,
                            const struct ag_hasher *h,
                            struct ag_list_entry *out, struct ag_error *err);
/* Rebuilds an entry from stored columns (the value already canonical or a
 * digest: a value in another spelling, "AS174" or "fr", is refused). */
int ag_list_entry_from_row(int64_t id, const char *list, const char *kind,
                           const char *value, const char *endpoint,
                           const char *note, struct ag_list_entry *out);
/* A new JSON object for e, with "force": true if e was forced; caller owns
 * it. NULL only when out of memory. */
json_t *ag_list_entry_to_json(const struct ag_list_entry *e);

/* The entry that settles req, or NULL: the first deny entry that matches,
 * else the first allow entry. user_digest and phone_digest are req's
 * digests (NULL if it has no such identifier); asn and ip_country entries
 * are matched against req->net, so the lookup must come first. */
const struct ag_list_entry *ag_lists_match(const struct ag_list_entry *entries,
                                           size_t n,
                                           const struct ag_request *req,
                                           const char *user_digest,
                                           const char *phone_digest);

#endif
