/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network files the service serves (--geoip-file, --asn-file,
 * --ip-list NAME[:FORMAT]=PATH): each loaded at start and replaced while
 * the service runs when its path names another file, as the breached-
 * password corpora are (ag_pwned_live): a watcher thread looks at each
 * path about once a second (stat(2): device, inode, size, modification
 * time), off the request path, and loads a new file on its own thread.
 * A replacement that cannot be read or is damaged keeps the last good
 * file: one line is logged and abuseguard_network_reload_failures_total
 * counts it, once per file; it is tried again only when the path shows
 * yet another file. The databases are private copies (ag_geo) and the
 * lists are read whole (ag_iplist), so a file rewritten in place changes
 * nothing a lookup reads: the watcher treats it as another file and loads
 * it (a half-written one fails and keeps the last good; one that changes
 * while it is read is taken at the next look instead).
 *
 * A lookup holds every file it reads from for its duration: a replaced
 * file is freed by the watcher once no lookup holds it, never on a
 * check's thread (freeing tens of megabytes is no work for a request).
 *
 * Thread-safety: ag_network_lookup, ag_network_list_index and the
 * accessors from any thread, any number at once; start, tick and stop
 * from one thread.
 */
#ifndef AG_NETWORK_H
#define AG_NETWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_error.h"
#include "ag_geo.h"
#include "ag_identity.h"
#include "ag_iplist.h"
#include "ag_policy.h"
#include "ag_request.h"

#define AG_NETWORK_LISTS_MAX 32 /* --ip-list flags at most */
_Static_assert(AG_NETWORK_LISTS_MAX <= AG_REQUEST_NET_LISTS,
               "a lookup's lists name every list");
/* A list's name: the names a policy's lists hold (ag_policy.h). */
#define AG_NETWORK_LIST_NAME_MAX AG_POLICY_LIST_NAME_MAX
/* How often the watcher looks at the paths. */
#define AG_NETWORK_INTERVAL_MS 1000

struct ag_metrics;
struct ag_network;

/* One --ip-list: its name ([a-z0-9_-], 1 to AG_NETWORK_LIST_NAME_MAX),
 * format and path. */
struct ag_network_list_opt {
    const char *name;
    enum ag_iplist_format format;
    const char *path;
};

struct ag_network_opts {
    const char *geoip_path; /* NULL: none */
    const char *asn_path;   /* NULL: none */
    const struct ag_network_list_opt *lists;
    size_t nlists; /* at most AG_NETWORK_LISTS_MAX, names distinct */
    /* Lookups, misses, database ages, reload failures, special-only list
     * matches; NULL: none. Borrowed. */
    struct ag_metrics *metrics;
    /* 0: no watcher thread, the caller looks with ag_network_tick
     * (tests). */
    unsigned interval_ms;
};

/* What one lookup saw of an address. */
struct ag_netinfo {
    char country[AG_GEO_COUNTRY_LEN + 1]; /* "" if unknown or no database */
    uint32_t asn;                         /* 0 if unknown or no database */
    /* Bit i: list i (in the order given) holds the address in a range
     * that is not special; lists_special: only in special ranges (a
     * private, loopback or CGNAT range: ag_iplist). */
    uint32_t lists;
    uint32_t lists_special;
    /* The country database's location of the address (a City database
     * in MaxMind's layout), coarse; placed false without one. */
    bool placed;
    struct ag_place place;
};

/* Parses one --ip-list value, "NAME=PATH" or "NAME:FORMAT=PATH", into
 * *out (pointing into text, which must outlive it); AG_EINVAL naming
 * "ip-list" otherwise. */
int ag_network_list_opt_parse(char *text, struct ag_network_list_opt *out,
                              struct ag_error *err);

/* Loads every file of o and starts the watcher. A file that cannot be
 * read or is damaged is an error naming its flag and path (AG_EIO,
 * AG_EINVAL): the service refuses to start (exit 2). With no file at all,
 * *out is a network that knows nothing (ag_network_active false) and no
 * thread runs. Free with ag_network_stop. */
int ag_network_start(const struct ag_network_opts *o, struct ag_network **out,
                     struct ag_error *err);
/* Stops the watcher and frees every file; NULL does nothing. No lookup may
 * be running. */
void ag_network_stop(struct ag_network *n);

/* Is any file configured? A check makes no lookup otherwise. */
bool ag_network_active(const struct ag_network *n);
bool ag_network_has_country(const struct ag_network *n);
bool ag_network_has_asn(const struct ag_network *n);

/* Looks ip up in every file served now; fills *out. Counts lookups and
 * misses per database, and special-only list matches per list. One short
 * lock to hold the files; nothing allocated. n NULL: *out is empty. */
void ag_network_lookup(struct ag_network *n, const struct ag_ip *ip,
                       struct ag_netinfo *out);

/* The index of the list named name, or -1; the name of list i. */
int ag_network_list_index(const struct ag_network *n, const char *name);
size_t ag_network_nlists(const struct ag_network *n);
const char *ag_network_list_name(const struct ag_network *n, size_t i);

/* One look of the watcher, now: swaps in what changed and frees what no
 * lookup holds any more. */
void ag_network_tick(struct ag_network *n);

#endif
