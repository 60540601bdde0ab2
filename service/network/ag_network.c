/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_network.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ag_clock.h"
#include "ag_log.h"
#include "ag_metrics.h"

_Static_assert(AG_NETWORK_LISTS_MAX <= AG_METRICS_NETWORK_LISTS,
               "every list has its metrics");
_Static_assert(AG_NETWORK_LIST_NAME_MAX <= AG_METRICS_NETWORK_NAME_MAX,
               "every list name is a metrics label");
_Static_assert(AG_NETWORK_LISTS_MAX <= 32, "a list is a bit of uint32_t");

/* The slots: the two databases, then the lists in the order given. */
enum { COUNTRY, ASN, LISTS, SLOTS = LISTS + AG_NETWORK_LISTS_MAX };

#define LIST_FIELD "ip-list"

/* A file as served: what was loaded from it and its readers. */
struct hold {
    struct ag_geo *geo;    /* a database slot's */
    struct ag_iplist *set; /* a list slot's */
    /* Lookups holding it. Only ever raised under the lock while it is
     * served, so that once replaced it only goes down, and 0 then stays 0:
     * the watcher may free it. */
    atomic_uint readers;
    struct hold *next; /* on the retired list */
};

/* What a path named when it was last looked at. */
struct ident {
    int missing; /* stat's errno; 0: the rest is the file's */
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns;
};

/* One file and where it comes from. */
struct slot {
    char *path;       /* NULL: none configured */
    const char *flag; /* "geoip-file", "asn-file" or "ip-list" */
    char name[AG_NETWORK_LIST_NAME_MAX + 1]; /* a list's; "" otherwise */
    enum ag_iplist_format format;
    struct hold *cur;    /* served; swapped under the lock */
    struct ident loaded; /* the file cur came from */
    struct ident failed; /* the last file that failed to load */
    bool has_failed;     /* watcher only, like loaded */
};

struct ag_network {
    struct slot slots[SLOTS];
    size_t nlists;
    bool active;
    struct ag_metrics *metrics;
    pthread_mutex_t lock; /* guards the slots' cur */
    struct hold *retired; /* replaced, still held; watcher only */
    unsigned interval_ms;
    pthread_t thread;
    bool running;
    pthread_mutex_t stop_lock; /* guards stopping */
    pthread_cond_t wake;
    bool stopping;
};

/* ---- --ip-list ---------------------------------------------------------- */

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > AG_NETWORK_LIST_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

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
    if (!name_ok(text, n))
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

static struct ident look(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return (struct ident){.missing = errno ? errno : ENOENT};
    return (struct ident){
        .dev = st.st_dev,
        .ino = st.st_ino,
        .size = st.st_size,
        .mtime_ns =
            (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
    };
}

static bool same(const struct ident *a, const struct ident *b)
{
    if (a->missing || b->missing)
        return a->missing == b->missing;
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns;
}

static bool is_list(const struct ag_network *n, const struct slot *s)
{
    return s >= &n->slots[LISTS];
}

static size_t list_of(const struct ag_network *n, const struct slot *s)
{
    return (size_t)(s - &n->slots[LISTS]);
}

/* The list's own refusal in *e ("ip-list line 7: ...", "ip-list PATH:
 * ...") as "ip-list NAME=PATH: line 7: ..." in err. */
static int name_list(const struct slot *s, const struct ag_error *e,
                     struct ag_error *err)
{
    const char *rest = e->msg;
    size_t f = strlen(LIST_FIELD), p = strlen(s->path);
    const char *sep = "";
    if (strncmp(rest, LIST_FIELD, f) == 0)
        rest += f;
    if (rest[0] == ' ' && strncmp(rest + 1, s->path, p) == 0) {
        rest += 1 + p; /* its path, which the head names already */
    } else if (rest[0] == ' ') {
        rest++;
        sep = ": ";
    }
    return ag_error_set(err, e->code, LIST_FIELD, "%s %s=%s%s%s", LIST_FIELD,
                        s->name, s->path, sep, rest);
}

/* Loads the file at s's path as a new hold; err says what went wrong,
 * naming the flag and the path. */
static int open_hold(const struct ag_network *n, const struct slot *s,
                     struct hold **out, struct ag_error *err)
{
    struct hold *h = calloc(1, sizeof *h);
    if (!h)
        return ag_error_set(err, AG_ENOMEM, s->flag, "%s %s: out of memory",
                            s->flag, s->path);
    int rc;
    if (is_list(n, s)) {
        struct ag_error e = {0};
        rc = ag_iplist_load(s->path, s->format, &h->set, &e);
        if (rc)
            name_list(s, &e, err);
    } else { /* "geoip-file PATH is damaged: ...", its own */
        rc = ag_geo_open(s->path,
                         s == &n->slots[ASN] ? AG_GEO_ASN : AG_GEO_COUNTRY,
                         &h->geo, err);
    }
    if (rc) {
        free(h);
        return rc;
    }
    atomic_init(&h->readers, 0);
    *out = h;
    return AG_OK;
}

static void close_hold(struct hold *h)
{
    ag_geo_close(h->geo);
    ag_iplist_free(h->set);
    free(h);
}

/* Its gauges, and its lines: what it is and, for a list holding special
 * ranges, a warning naming the list and the count (never an address: no
 * log line carries one, ag_log.h). */
static void publish(struct ag_network *n, const struct slot *s,
                    const struct hold *h, const char *event)
{
    if (!is_list(n, s)) {
        uint64_t built = ag_geo_build_epoch(h->geo);
        char made[AG_CLOCK_RFC3339_MAX];
        ag_clock_rfc3339(built * 1000, made);
        ag_log(AG_LOG_INFO, event, "%s %s: %s database built %s, %zu KiB",
               s->flag, s->path,
               ag_geo_type(h->geo)[0] ? ag_geo_type(h->geo) : "an untyped",
               made, ag_geo_bytes(h->geo) / 1024);
        ag_metrics_network_database(n->metrics,
                                    s == &n->slots[ASN]
                                        ? AG_METRICS_NETDB_ASN
                                        : AG_METRICS_NETDB_COUNTRY,
                                    true, built);
        return;
    }
    size_t entries = ag_iplist_entries(h->set);
    size_t special = ag_iplist_special(h->set);
    ag_log(AG_LOG_INFO, event, "%s %s=%s: %zu entries, %zu KiB", s->flag,
           s->name, s->path, entries, ag_iplist_bytes(h->set) / 1024);
    if (special > 0)
        ag_log(AG_LOG_WARN, "ip_list_special",
               "%s %s: %zu of its entries are private, loopback, "
               "link-local or CGNAT ranges; an address in them is a "
               "proxy's or the network's own, not a client's (counted in "
               "abuseguard_network_list_special_only_total)",
               s->flag, s->name, special);
    ag_metrics_network_list(n->metrics, list_of(n, s), true, entries);
}

/* ---- lookups ------------------------------------------------------------ */

static void geo_lookup(struct ag_network *n, const struct hold *h,
                       enum ag_metrics_netdb db, const struct ag_ip *ip,
                       struct ag_netinfo *out)
{
    struct ag_geo_result r;
    /* A database libmaxminddb finds corrupt at this address is a miss. */
    bool found = ag_geo_lookup(h->geo, ip, &r) == AG_OK && r.found;
    ag_metrics_network_lookup(n->metrics, db, found);
    if (!found)
        return;
    if (db == AG_METRICS_NETDB_COUNTRY)
        memcpy(out->country, r.country, sizeof out->country);
    else
        out->asn = r.asn;
}

void ag_network_lookup(struct ag_network *n, const struct ag_ip *ip,
                       struct ag_netinfo *out)
{
    memset(out, 0, sizeof *out);
    if (!n || !n->active)
        return;
    struct hold *held[SLOTS];
    size_t end = LISTS + n->nlists;
    pthread_mutex_lock(&n->lock);
    for (size_t i = 0; i < end; i++) {
        held[i] = n->slots[i].cur;
        if (held[i])
            atomic_fetch_add_explicit(&held[i]->readers, 1,
                                      memory_order_relaxed);
    }
    pthread_mutex_unlock(&n->lock);

    if (held[COUNTRY])
        geo_lookup(n, held[COUNTRY], AG_METRICS_NETDB_COUNTRY, ip, out);
    if (held[ASN])
        geo_lookup(n, held[ASN], AG_METRICS_NETDB_ASN, ip, out);
    for (size_t i = 0; i < n->nlists; i++) {
        if (!held[LISTS + i])
            continue;
        enum ag_iplist_hit hit = ag_iplist_match(held[LISTS + i]->set, ip);
        if (hit == AG_IPLIST_HIT) {
            out->lists |= UINT32_C(1) << i;
        } else if (hit == AG_IPLIST_HIT_SPECIAL) {
            out->lists_special |= UINT32_C(1) << i;
            ag_metrics_network_special_only(n->metrics, i);
        }
    }

    /* Release: the lookup's last read of a file happens before the
     * watcher, which reads 0 with acquire, frees it. */
    for (size_t i = 0; i < end; i++)
        if (held[i])
            atomic_fetch_sub_explicit(&held[i]->readers, 1,
                                      memory_order_release);
}

/* ---- the watcher -------------------------------------------------------- */

/* Frees the replaced files no lookup holds any more. */
static void sweep(struct ag_network *n)
{
    struct hold **pp = &n->retired;
    while (*pp) {
        struct hold *h = *pp;
        if (atomic_load_explicit(&h->readers, memory_order_acquire) == 0) {
            *pp = h->next;
            close_hold(h);
        } else {
            pp = &h->next;
        }
    }
}

/* A replacement of s that cannot be served: logged and counted once for
 * the file now at the path, which is not tried again. */
static void refuse(struct ag_network *n, struct slot *s,
                   const struct ident *now, const char *why)
{
    s->failed = *now;
    s->has_failed = true;
    /* The line first: whoever sees the count finds it written. */
    ag_log(AG_LOG_ERROR, "network_reload_failed",
           "%s; keeping the file loaded before", why);
    if (is_list(n, s))
        ag_metrics_network_list_failure(n->metrics, list_of(n, s));
    else
        ag_metrics_network_db_failure(
            n->metrics, s == &n->slots[ASN] ? AG_METRICS_NETDB_ASN
                                            : AG_METRICS_NETDB_COUNTRY);
}

/* Looks at one path and swaps in the file now there if it is another,
 * or the same one rewritten in place: lookups read a private copy (the
 * databases) or tables (the lists), never the file, so a rewrite is just
 * another file to load. */
static void follow(struct ag_network *n, struct slot *s)
{
    struct ident now = look(s->path);
    if (same(&now, &s->loaded))
        return;
    if (s->has_failed && same(&now, &s->failed))
        return;
    struct ag_error why = {0};
    struct hold *h = NULL;
    if (now.missing) {
        if (is_list(n, s))
            ag_error_fill(&why, AG_EIO, s->flag, "%s %s=%s: %s", s->flag,
                          s->name, s->path, strerror(now.missing));
        else
            ag_error_fill(&why, AG_EIO, s->flag, "%s %s: %s", s->flag, s->path,
                          strerror(now.missing));
        refuse(n, s, &now, why.msg);
        return;
    }
    int rc = open_hold(n, s, &h, &why);
    /* Written to while it was read (a copy in place still going): what
     * was read may be a part, refused or, worse, one that parses. Taken at
     * the next look, once the writer is done; nothing said or counted. */
    struct ident after = look(s->path);
    if (!same(&after, &now)) {
        if (!rc)
            close_hold(h);
        return;
    }
    if (rc) {
        refuse(n, s, &now, why.msg);
        return;
    }
    /* Said and counted first: whoever is answered from the new file finds
     * its line written and its gauges set. */
    publish(n, s, h, "network_reloaded");
    pthread_mutex_lock(&n->lock);
    struct hold *old = s->cur;
    s->cur = h;
    pthread_mutex_unlock(&n->lock);
    if (old) {
        old->next = n->retired;
        n->retired = old;
    }
    s->loaded = now;
    s->has_failed = false;
}

void ag_network_tick(struct ag_network *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < SLOTS; i++)
        if (n->slots[i].path)
            follow(n, &n->slots[i]);
    sweep(n);
}

static void *watch(void *arg)
{
    struct ag_network *n = arg;
    pthread_mutex_lock(&n->stop_lock);
    while (!n->stopping) {
        struct timespec until = ag_clock_deadline(n->interval_ms);
        while (!n->stopping && pthread_cond_timedwait(&n->wake, &n->stop_lock,
                                                      &until) != ETIMEDOUT)
            ;
        if (n->stopping)
            break;
        pthread_mutex_unlock(&n->stop_lock);
        ag_network_tick(n);
        pthread_mutex_lock(&n->stop_lock);
    }
    pthread_mutex_unlock(&n->stop_lock);
    return NULL;
}

/* ---- start and stop ----------------------------------------------------- */

static void free_network(struct ag_network *n)
{
    for (size_t i = 0; i < SLOTS; i++) {
        if (n->slots[i].cur)
            close_hold(n->slots[i].cur);
        free(n->slots[i].path);
    }
    while (n->retired) {
        struct hold *h = n->retired;
        n->retired = h->next;
        close_hold(h);
    }
    pthread_mutex_destroy(&n->lock);
    pthread_mutex_destroy(&n->stop_lock);
    pthread_cond_destroy(&n->wake);
    free(n);
}

/* Sets slot s up for path and loads it. */
static int load_first(struct ag_network *n, struct slot *s, const char *flag,
                      const char *path, struct ag_error *err)
{
    s->flag = flag;
    if (!path || !path[0])
        return ag_error_set(err, AG_EINVAL, flag, "%s %s%shas no path", flag,
                            s->name, s->name[0] ? " " : "");
    s->path = strdup(path);
    if (!s->path)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    s->loaded = look(path);
    return open_hold(n, s, &s->cur, err);
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
        if (!name_ok(name, strlen(name)))
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
        rc =
            load_first(n, &n->slots[COUNTRY], "geoip-file", o->geoip_path, err);
    if (!rc && o->asn_path)
        rc = load_first(n, &n->slots[ASN], "asn-file", o->asn_path, err);
    for (size_t i = 0; !rc && i < o->nlists; i++) {
        struct slot *s = &n->slots[LISTS + i];
        snprintf(s->name, sizeof s->name, "%s", o->lists[i].name);
        s->format = o->lists[i].format;
        rc = load_first(n, s, LIST_FIELD, o->lists[i].path, err);
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
    n->interval_ms = o->interval_ms;
    n->nlists = o->nlists;
    pthread_mutex_init(&n->lock, NULL);
    pthread_mutex_init(&n->stop_lock, NULL);
    ag_clock_cond_init(&n->wake);
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
        if (n->slots[i].cur) {
            publish(n, &n->slots[i], n->slots[i].cur, "network_loaded");
            n->active = true;
        }
    if (n->interval_ms && n->active) {
        if (pthread_create(&n->thread, NULL, watch, n) != 0) {
            free_network(n);
            return ag_error_set(err, AG_ENOMEM, NULL,
                                "cannot start the network files' watcher "
                                "thread");
        }
        n->running = true;
    }
    *out = n;
    return AG_OK;
}

void ag_network_stop(struct ag_network *n)
{
    if (!n)
        return;
    if (n->running) {
        pthread_mutex_lock(&n->stop_lock);
        n->stopping = true;
        pthread_cond_signal(&n->wake);
        pthread_mutex_unlock(&n->stop_lock);
        pthread_join(n->thread, NULL);
    }
    if (n->slots[COUNTRY].cur)
        ag_metrics_network_database(n->metrics, AG_METRICS_NETDB_COUNTRY, false,
                                    0);
    if (n->slots[ASN].cur)
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
    return n && n->slots[COUNTRY].path; /* served from start to stop */
}

bool ag_network_has_asn(const struct ag_network *n)
{
    return n && n->slots[ASN].path;
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
