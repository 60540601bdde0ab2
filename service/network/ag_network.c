/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_network.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_clock.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_replaceable.h"

_Static_assert(AG_NETWORK_LISTS_MAX <= AG_METRICS_NETWORK_LISTS,
               "every list has its metrics");
_Static_assert(AG_NETWORK_LIST_NAME_MAX <= AG_METRICS_NETWORK_NAME_MAX,
               "every list name is a metrics label");
_Static_assert(AG_NETWORK_LISTS_MAX <= 32, "a list is a bit of uint32_t");

/* The slots: the two databases, then the lists in the order given. */
enum { COUNTRY, ASN, LISTS, SLOTS = LISTS + AG_NETWORK_LISTS_MAX };

#define LIST_FIELD "ip-list"

/* What one slot's file is; the holder has its path and what it loaded
 * (a struct ag_geo for a database, a struct ag_iplist for a list). */
struct slot {
    const char *flag; /* "geoip-file", "asn-file" or "ip-list" */
    char name[AG_NETWORK_LIST_NAME_MAX + 1]; /* a list's; "" otherwise */
    enum ag_iplist_format format;
};

/* The files, held by ag_replaceable, copied (a database into a private
 * copy, a list into tables): slot i of the holder is slots[i]. */
struct ag_network {
    struct slot slots[SLOTS];
    size_t nlists;
    bool active;
    struct ag_metrics *metrics;
    struct ag_replaceable *files;
};

/* ---- --ip-list ---------------------------------------------------------- */

int ag_network_list_opt_parse(char *text, struct ag_network_list_opt *out,
                              struct ag_error *err)
{
    char *eq = strchr(text, '=');
    if (!eq || eq[1] == '\0')
        return ag_error_set(err, AG_EINVAL, LIST_FIELD,
                            "%s '%s' is not NAME=PATH or NAME:FORMAT=PATH",
                            LIST_FIELD, text);
    char *colon = memchr(text, ':', (size_t)(eq - text));
    size_t n = (size_t)((colon ? colon : eq) - text);
    if (!ag_policy_list_name_valid(text, n))
        return ag_error_set(err, AG_EINVAL, LIST_FIELD,
                            "%s name '%.*s' is not 1 to %d of a-z, 0-9, _ "
                            "and -",
                            LIST_FIELD, (int)n, text, AG_NETWORK_LIST_NAME_MAX);
    enum ag_iplist_format f = AG_IPLIST_AUTO;
    if (colon) {
        char word[16];
        size_t w = (size_t)(eq - colon - 1);
        if (w >= sizeof word)
            w = sizeof word - 1; /* too long for any format: refused */
        memcpy(word, colon + 1, w);
        word[w] = '\0';
        if (w == 0 || ag_iplist_format_parse(word, &f) != AG_OK)
            return ag_error_set(err, AG_EINVAL, LIST_FIELD,
                                "%s format '%.*s' is not plain, spamhaus, "
                                "aws, gcp or auto",
                                LIST_FIELD, (int)(eq - colon - 1), colon + 1);
    }
    /* Cut only once it is taken: a refused text is left as it was. */
    text[n] = '\0';
    *out =
        (struct ag_network_list_opt){.name = text, .format = f, .path = eq + 1};
    return AG_OK;
}

/* ---- files -------------------------------------------------------------- */

static bool is_list(size_t slot)
{
    return slot >= LISTS;
}

static enum ag_metrics_netdb netdb(size_t slot)
{
    return slot == ASN ? AG_METRICS_NETDB_ASN : AG_METRICS_NETDB_COUNTRY;
}

/* The list's own refusal in *e ("ip-list line 7: ...", "ip-list PATH:
 * ...") as "ip-list NAME=PATH: line 7: ..." in err. */
static int name_list(const struct slot *s, const char *path,
                     const struct ag_error *e, struct ag_error *err)
{
    const char *rest = e->msg;
    size_t f = strlen(LIST_FIELD), p = strlen(path);
    const char *sep = "";
    if (strncmp(rest, LIST_FIELD, f) == 0)
        rest += f;
    if (rest[0] == ' ' && strncmp(rest + 1, path, p) == 0) {
        rest += 1 + p; /* its path, which the head names already */
    } else if (rest[0] == ' ') {
        rest++;
        sep = ": ";
    }
    return ag_error_set(err, e->code, LIST_FIELD, "%s %s=%s%s%s", LIST_FIELD,
                        s->name, path, sep, rest);
}

/* The holder's load: the file at path, a database or a list by its slot;
 * err says what went wrong, naming the flag and the path. */
static int load(void *ctx, size_t slot, const char *path, void **obj,
                struct ag_error *err)
{
    const struct ag_network *n = ctx;
    const struct slot *s = &n->slots[slot];
    int rc;
    if (is_list(slot)) {
        struct ag_error e = {0};
        struct ag_iplist *set;
        rc = ag_iplist_load(path, s->format, &set, &e);
        if (rc)
            return name_list(s, path, &e, err);
        *obj = set;
    } else { /* "geoip-file PATH is damaged: ...", its own */
        struct ag_geo *geo;
        rc = ag_geo_open(path, slot == ASN ? AG_GEO_ASN : AG_GEO_COUNTRY, &geo,
                         err);
        if (rc)
            return rc;
        *obj = geo;
    }
    return AG_OK;
}

static void close_file(void *ctx, size_t slot, void *obj)
{
    (void)ctx;
    if (is_list(slot))
        ag_iplist_free(obj);
    else
        ag_geo_close(obj);
}

/* Its gauges, and its lines: what it is and, for a list holding special
 * ranges, a warning naming the list and the count (never an address: no
 * log line carries one, ag_log.h). */
static void publish(struct ag_network *n, size_t slot, const char *path,
                    const void *obj, const char *event)
{
    const struct slot *s = &n->slots[slot];
    if (!is_list(slot)) {
        const struct ag_geo *geo = obj;
        uint64_t built = ag_geo_build_epoch(geo);
        char made[AG_CLOCK_RFC3339_MAX];
        ag_clock_rfc3339(built * 1000, made);
        ag_log(AG_LOG_INFO, event, "%s %s: %s database built %s, %zu KiB",
               s->flag, path,
               ag_geo_type(geo)[0] ? ag_geo_type(geo) : "an untyped", made,
               ag_geo_bytes(geo) / 1024);
        ag_metrics_network_database(n->metrics, netdb(slot), true, built);
        return;
    }
    const struct ag_iplist *set = obj;
    size_t entries = ag_iplist_entries(set);
    size_t special = ag_iplist_special(set);
    ag_log(AG_LOG_INFO, event, "%s %s=%s: %zu entries, %zu KiB", s->flag,
           s->name, path, entries, ag_iplist_bytes(set) / 1024);
    if (special > 0)
        ag_log(AG_LOG_WARN, "ip_list_special",
               "%s %s: %zu of its entries are private, loopback, "
               "link-local or CGNAT ranges; an address in them is a "
               "proxy's or the network's own, not a client's (counted in "
               "abuseguard_network_list_special_only_total)",
               s->flag, s->name, special);
    ag_metrics_network_list(n->metrics, slot - LISTS, true, entries);
}

/* A file renamed in (or rewritten in place: lookups read a private copy
 * or tables, never the file) is loaded and about to be served. */
static void replaced(void *ctx, size_t slot, const char *path, const void *obj)
{
    publish(ctx, slot, path, obj, "network_reloaded");
}

/* A replacement that cannot be served: logged and counted once a file. */
static void refused(void *ctx, size_t slot, const struct ag_error *why,
                    bool serving)
{
    struct ag_network *n = ctx;
    (void)serving; /* always: a file is served from start to stop */
    /* The line first: whoever sees the count finds it written. */
    ag_log(AG_LOG_ERROR, "network_reload_failed",
           "%s; keeping the file loaded before", why->msg);
    if (is_list(slot))
        ag_metrics_network_list_failure(n->metrics, slot - LISTS);
    else
        ag_metrics_network_db_failure(n->metrics, netdb(slot));
}

static void name(void *ctx, size_t slot, const char *path, char *out,
                 size_t outlen)
{
    const struct slot *s = &((const struct ag_network *)ctx)->slots[slot];
    if (is_list(slot))
        snprintf(out, outlen, "%s %s=%s", s->flag, s->name, path);
    else
        snprintf(out, outlen, "%s %s", s->flag, path);
}

static const struct ag_replaceable_ops ops = {
    .load = load,
    .free = close_file,
    .replaced = replaced,
    .refused = refused,
    .name = name,
};

/* ---- lookups ------------------------------------------------------------ */

static void geo_lookup(struct ag_network *n, const struct ag_geo *geo,
                       enum ag_metrics_netdb db, const struct ag_ip *ip,
                       struct ag_netinfo *out)
{
    struct ag_geo_result r;
    /* A database libmaxminddb finds corrupt at this address is a miss. */
    bool country = db == AG_METRICS_NETDB_COUNTRY;
    bool found = (country ? ag_geo_locate(geo, ip, &r)
                          : ag_geo_lookup(geo, ip, &r)) == AG_OK &&
                 r.found;
    ag_metrics_network_lookup(n->metrics, db, found);
    if (!found)
        return;
    if (country) {
        memcpy(out->country, r.country, sizeof out->country);
        out->placed = r.located && ag_place_from(r.latitude, r.longitude,
                                                 r.accuracy_km, &out->place);
    } else
        out->asn = r.asn;
}

void ag_network_lookup(struct ag_network *n, const struct ag_ip *ip,
                       struct ag_netinfo *out)
{
    memset(out, 0, sizeof *out);
    if (!n || !n->active)
        return;
    struct ag_replaceable_hold *held[SLOTS];
    size_t end = LISTS + n->nlists;
    ag_replaceable_hold_all(n->files, end, held);

    if (held[COUNTRY])
        geo_lookup(n, ag_replaceable_obj(held[COUNTRY]),
                   AG_METRICS_NETDB_COUNTRY, ip, out);
    if (held[ASN])
        geo_lookup(n, ag_replaceable_obj(held[ASN]), AG_METRICS_NETDB_ASN, ip,
                   out);
    for (size_t i = 0; i < n->nlists; i++) {
        if (!held[LISTS + i])
            continue;
        enum ag_iplist_hit hit =
            ag_iplist_match(ag_replaceable_obj(held[LISTS + i]), ip);
        if (hit == AG_IPLIST_HIT) {
            out->lists |= UINT32_C(1) << i;
        } else if (hit == AG_IPLIST_HIT_SPECIAL) {
            out->lists_special |= UINT32_C(1) << i;
            ag_metrics_network_special_only(n->metrics, i);
        }
    }
    ag_replaceable_release_all(held, end);
}

void ag_network_tick(struct ag_network *n)
{
    if (n)
        ag_replaceable_tick(n->files);
}

/* ---- start and stop ----------------------------------------------------- */

static void free_network(struct ag_network *n)
{
    ag_replaceable_free(n->files);
    free(n);
}

/* Sets slot i up for path and loads it. */
static int load_first(struct ag_network *n, size_t i, const char *flag,
                      const char *path, struct ag_error *err)
{
    struct slot *s = &n->slots[i];
    s->flag = flag;
    if (!path || !path[0])
        return ag_error_set(err, AG_EINVAL, flag, "%s %s%shas no path", flag,
                            s->name, s->name[0] ? " " : "");
    return ag_replaceable_add(n->files, i, path, err);
}

/* The lists of o, checked: names well formed and distinct. */
static int check_lists(const struct ag_network_opts *o, struct ag_error *err)
{
    if (o->nlists > AG_NETWORK_LISTS_MAX)
        return ag_error_set(err, AG_EINVAL, LIST_FIELD,
                            "%s is given more than %d times", LIST_FIELD,
                            AG_NETWORK_LISTS_MAX);
    for (size_t i = 0; i < o->nlists; i++) {
        const char *name = o->lists[i].name ? o->lists[i].name : "";
        if (!ag_policy_list_name_valid(name, strlen(name)))
            return ag_error_set(err, AG_EINVAL, LIST_FIELD,
                                "%s name '%s' is not 1 to %d of a-z, 0-9, _ "
                                "and -",
                                LIST_FIELD, name, AG_NETWORK_LIST_NAME_MAX);
        for (size_t j = 0; j < i; j++)
            if (strcmp(o->lists[j].name, name) == 0)
                return ag_error_set(err, AG_EINVAL, LIST_FIELD,
                                    "%s %s is given twice", LIST_FIELD, name);
    }
    return AG_OK;
}

static int load_all(struct ag_network *n, const struct ag_network_opts *o,
                    struct ag_error *err)
{
    int rc = AG_OK;
    if (o->geoip_path)
        rc = load_first(n, COUNTRY, "geoip-file", o->geoip_path, err);
    if (!rc && o->asn_path)
        rc = load_first(n, ASN, "asn-file", o->asn_path, err);
    for (size_t i = 0; !rc && i < o->nlists; i++) {
        struct slot *s = &n->slots[LISTS + i];
        snprintf(s->name, sizeof s->name, "%s", o->lists[i].name);
        s->format = o->lists[i].format;
        rc = load_first(n, LISTS + i, LIST_FIELD, o->lists[i].path, err);
    }
    return rc;
}

int ag_network_start(const struct ag_network_opts *o, struct ag_network **out,
                     struct ag_error *err)
{
    *out = NULL;
    int rc = check_lists(o, err);
    if (rc)
        return rc;
    struct ag_network *n = calloc(1, sizeof *n);
    if (!n)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    n->metrics = o->metrics;
    n->nlists = o->nlists;
    if (ag_replaceable_new(
            &(struct ag_replaceable_opts){.ops = &ops,
                                          .ctx = n,
                                          .slots = SLOTS,
                                          .read = AG_REPLACEABLE_COPIED},
            &n->files)) {
        free(n);
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    rc = load_all(n, o, err);
    if (rc) {
        free_network(n);
        return rc;
    }
    const char *names[AG_NETWORK_LISTS_MAX];
    for (size_t i = 0; i < n->nlists; i++)
        names[i] = n->slots[LISTS + i].name;
    ag_metrics_network_name_lists(n->metrics, names, n->nlists);
    /* Said once every file is in: a refusal is the start's one line. */
    for (size_t i = 0; i < SLOTS; i++)
        if (ag_replaceable_served(n->files, i)) {
            publish(n, i, ag_replaceable_path(n->files, i),
                    ag_replaceable_served(n->files, i), "network_loaded");
            n->active = true;
        }
    if (ag_replaceable_watch(n->files, o->interval_ms)) {
        free_network(n);
        return ag_error_set(err, AG_ENOMEM, NULL,
                            "cannot start the network files' watcher "
                            "thread");
    }
    *out = n;
    return AG_OK;
}

void ag_network_stop(struct ag_network *n)
{
    if (!n)
        return;
    ag_replaceable_stop(n->files);
    if (ag_replaceable_served(n->files, COUNTRY))
        ag_metrics_network_database(n->metrics, AG_METRICS_NETDB_COUNTRY, false,
                                    0);
    if (ag_replaceable_served(n->files, ASN))
        ag_metrics_network_database(n->metrics, AG_METRICS_NETDB_ASN, false, 0);
    for (size_t i = 0; i < n->nlists; i++)
        ag_metrics_network_list(n->metrics, i, false, 0);
    free_network(n);
}

/* ---- accessors ---------------------------------------------------------- */

bool ag_network_active(const struct ag_network *n)
{
    return n && n->active;
}

bool ag_network_has_country(const struct ag_network *n)
{
    /* Served from start to stop. */
    return n && ag_replaceable_path(n->files, COUNTRY);
}

bool ag_network_has_asn(const struct ag_network *n)
{
    return n && ag_replaceable_path(n->files, ASN);
}

int ag_network_list_index(const struct ag_network *n, const char *name)
{
    for (size_t i = 0; n && name && i < n->nlists; i++)
        if (strcmp(n->slots[LISTS + i].name, name) == 0)
            return (int)i;
    return -1;
}

size_t ag_network_nlists(const struct ag_network *n)
{
    return n ? n->nlists : 0;
}

const char *ag_network_list_name(const struct ag_network *n, size_t i)
{
    return n && i < n->nlists ? n->slots[LISTS + i].name : NULL;
}
