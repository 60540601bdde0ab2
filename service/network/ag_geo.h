/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A geolocation or ASN database in MaxMind's MMDB format, read with
 * libmaxminddb (--geoip-file: GeoLite2 or DB-IP Lite City or Country, or
 * any MMDB with MaxMind's layout, country.iso_code; --asn-file:
 * GeoLite2-ASN or DB-IP ASN Lite, autonomous_system_number, or IPinfo
 * Lite's flat layout, "asn": "AS174" and "country_code").
 *
 * Each database is opened from a private copy: the file's bytes are
 * copied into an anonymous memory file (memfd_create) and libmaxminddb
 * maps that, so an operator's cp over the path, a truncation or a rewrite
 * in place can never change the bytes a lookup reads (a mapping of the
 * path itself would fault mid-lookup). The copy costs the file's size in
 * memory, once per load. Without /proc (needed to hand the memfd to
 * MMDB_open by path), or without memfd_create, the copy is a temporary
 * file in $TMPDIR or /tmp, unlinked as soon as it is mapped.
 *
 * A lookup allocates nothing: MMDB_lookup_sockaddr and MMDB_aget_value
 * read the mapping (MMDB_get_value would calloc its path on every call).
 * An IPv4 address is looked up in an IPv6 database
 * under ::a.b.c.d (the IPv4 subtree), as libmaxminddb does whether or not
 * the database has the IPv4 aliases (::ffff:0:0/96, 2002::/16); an IPv6
 * address in an IPv4-only database is a miss, not an error.
 *
 * Thread-safety: an open database is immutable; any number of threads
 * may look up at once. Open and close from one thread.
 */
#ifndef AG_GEO_H
#define AG_GEO_H

#include <stdbool.h>
#include <stdint.h>

#include "ag_error.h"
#include "ag_identity.h"

#define AG_GEO_COUNTRY_LEN 2 /* ISO 3166-1 alpha-2 */

/* What the database is asked for. */
enum ag_geo_kind {
    AG_GEO_COUNTRY, /* country.iso_code, or IPinfo's country_code */
    AG_GEO_ASN,     /* autonomous_system_number, or IPinfo's "AS<n>" asn */
};

/* What one lookup found: the part of the database's kind only (a country
 * database fills country, an ASN database asn, even where IPinfo Lite's
 * records hold both). A record without country.iso_code has no country:
 * registered_country (where the network's holder registered it) is not
 * read in its place. A code that is not two letters, or an ASN that is
 * not a number or "AS<n>" of 32 bits, is none. */
struct ag_geo_result {
    bool found;                           /* a record for the address */
    char country[AG_GEO_COUNTRY_LEN + 1]; /* upper case; "" if none */
    uint32_t asn;                         /* 0 if none */
    /* ag_geo_locate only, of a City database in MaxMind's layout
     * (location.latitude, .longitude, .accuracy_radius): located when the
     * record has both coordinates, in range; accuracy_km 0 when it has
     * no radius. Country databases and IPinfo Lite have none. */
    bool located;
    double latitude, longitude;
    uint16_t accuracy_km;
};

struct ag_geo;

/* Opens path (a private copy, above) for kind. A file that is not a
 * regular file (a FIFO is refused without waiting for a writer), is
 * empty, is not an MMDB, is damaged, or holds no record of kind's field
 * in the records it samples is an error naming the path (field
 * "geoip-file" or "asn-file"). The sample is the search tree's first
 * records, lowest networks first: the first that holds the field in
 * MaxMind's layout or IPinfo's decides which one lookups read; none in
 * 64 records is "not an ASN database" (a City database given as
 * --asn-file) or "not a country or city database". Returns AG_OK and the
 * database in *out (free with ag_geo_close), AG_EIO (the file cannot be
 * read, or its copy made), AG_EINVAL or AG_ENOMEM; *out is NULL on
 * failure. */
int ag_geo_open(const char *path, enum ag_geo_kind kind, struct ag_geo **out,
                struct ag_error *err);
void ag_geo_close(struct ag_geo *g);

/* Looks ip up; fills *out ({0} on a miss). Nothing allocated. Returns
 * AG_OK, or AG_EIO if libmaxminddb reports the database corrupt (a miss
 * for the caller, counted). */
int ag_geo_lookup(const struct ag_geo *g, const struct ag_ip *ip,
                  struct ag_geo_result *out);

/* ag_geo_lookup, and for a country database in MaxMind's layout the
 * record's location too (struct ag_geo_result): the same walk of the
 * tree, three more reads of the record. Nothing allocated. */
int ag_geo_locate(const struct ag_geo *g, const struct ag_ip *ip,
                  struct ag_geo_result *out);

/* The database's build time (Unix seconds, its metadata's build_epoch),
 * its type ("GeoLite2-City", ...; "" if it has none; valid until
 * ag_geo_close), and the bytes its copy takes. */
uint64_t ag_geo_build_epoch(const struct ag_geo *g);
const char *ag_geo_type(const struct ag_geo *g);
size_t ag_geo_bytes(const struct ag_geo *g);

#endif
