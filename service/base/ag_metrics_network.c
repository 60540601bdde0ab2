/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics of the network files (ag_network): lookups and misses by
 * database, the databases' ages, reload failures by file, and each IP
 * list's size and special-only matches. */
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_metrics.h"
#include "ag_metrics_impl.h"

#define LOAD(x) ((uint64_t)atomic_load_explicit(&(x), memory_order_relaxed))
#define BUMP(x) atomic_fetch_add_explicit(&(x), 1, memory_order_relaxed)

static const char *const databases[AG_METRICS_NETDBS] = {
    [AG_METRICS_NETDB_COUNTRY] = "country",
    [AG_METRICS_NETDB_ASN] = "asn",
};
/* The file label of each database's reload failures: the flag's word. */
static const char *const db_files[AG_METRICS_NETDBS] = {
    [AG_METRICS_NETDB_COUNTRY] = "geoip",
    [AG_METRICS_NETDB_ASN] = "asn",
};

/* The engine's enum ag_signal, in order (test_metrics holds them equal). */
static const char *const risk_signals[AG_METRICS_RISK_SIGNALS] = {
    "password_breached", "ip_listed",  "ip_country",        "new_country",
    "new_asn",           "no_history", "impossible_travel",
};
static const char *const risk_levels[3] = {"low", "medium", "high"};

/* The network part of m: its first member (ag_metrics_impl.h). */
static struct ag_metrics_network *part(struct ag_metrics *m)
{
    return (struct ag_metrics_network *)(void *)m;
}

/* List i of m if it is named; NULL otherwise. */
static struct ag_metrics_network *with_list(struct ag_metrics *m, size_t i)
{
    if (!m)
        return NULL;
    struct ag_metrics_network *net = part(m);
    return i < atomic_load_explicit(&net->nlists, memory_order_acquire) ? net
                                                                        : NULL;
}

int ag_metrics_network_name_lists(struct ag_metrics *m,
                                  const char *const *names, size_t n)
{
    if (!m)
        return AG_OK;
    if (n > AG_METRICS_NETWORK_LISTS)
        return AG_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) > AG_METRICS_NETWORK_NAME_MAX)
            return AG_EINVAL;
    struct ag_metrics_network *net = part(m);
    for (size_t i = 0; i < n; i++)
        strcpy(net->list[i].name, names[i]);
    /* Release: a renderer that sees n finds the names written. */
    atomic_store_explicit(&net->nlists, n, memory_order_release);
    return AG_OK;
}

void ag_metrics_network_lookup(struct ag_metrics *m, enum ag_metrics_netdb db,
                               bool found)
{
    if (!m || (unsigned)db >= AG_METRICS_NETDBS)
        return;
    struct ag_metrics_network *net = part(m);
    BUMP(net->db[db].lookups);
    if (!found)
        BUMP(net->db[db].misses);
}

void ag_metrics_network_database(struct ag_metrics *m, enum ag_metrics_netdb db,
                                 bool loaded, uint64_t build_epoch)
{
    if (!m || (unsigned)db >= AG_METRICS_NETDBS)
        return;
    struct ag_metrics_network *net = part(m);
    atomic_store_explicit(&net->db[db].build_epoch, build_epoch,
                          memory_order_relaxed);
    atomic_store_explicit(&net->db[db].loaded, loaded, memory_order_release);
}

void ag_metrics_network_list(struct ag_metrics *m, size_t i, bool loaded,
                             uint64_t entries)
{
    struct ag_metrics_network *net = with_list(m, i);
    if (!net)
        return;
    atomic_store_explicit(&net->list[i].entries, entries, memory_order_relaxed);
    atomic_store_explicit(&net->list[i].loaded, loaded, memory_order_release);
}

void ag_metrics_network_special_only(struct ag_metrics *m, size_t i)
{
    struct ag_metrics_network *net = with_list(m, i);
    if (net)
        BUMP(net->list[i].special_only);
}

void ag_metrics_network_db_failure(struct ag_metrics *m,
                                   enum ag_metrics_netdb db)
{
    if (m && (unsigned)db < AG_METRICS_NETDBS)
        BUMP(part(m)->db[db].failures);
}

void ag_metrics_network_list_failure(struct ag_metrics *m, size_t i)
{
    struct ag_metrics_network *net = with_list(m, i);
    if (net)
        BUMP(net->list[i].failures);
}

static int family(struct ag_buf *b, const char *name, const char *type,
                  const char *help)
{
    return ag_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                         type);
}

/* Lookups and misses of both databases, zeros included, and the age of
 * each one loaded, counted at the scrape from its build so that it grows
 * between reloads. */
static int render_databases(struct ag_metrics_network *net, struct ag_buf *b)
{
    int rc = family(b, "abuseguard_network_lookups_total", "counter",
                    "Addresses looked up, by database.");
    for (int d = 0; !rc && d < AG_METRICS_NETDBS; d++)
        rc = ag_buf_printf(b,
                           "abuseguard_network_lookups_total{database=\"%s\"} "
                           "%" PRIu64 "\n",
                           databases[d], LOAD(net->db[d].lookups));
    rc = rc ? rc
            : family(b, "abuseguard_network_misses_total", "counter",
                     "Addresses the database holds no record for, by "
                     "database.");
    for (int d = 0; !rc && d < AG_METRICS_NETDBS; d++)
        rc = ag_buf_printf(b,
                           "abuseguard_network_misses_total{database=\"%s\"} "
                           "%" PRIu64 "\n",
                           databases[d], LOAD(net->db[d].misses));
    rc = rc ? rc
            : family(b, "abuseguard_network_database_age_seconds", "gauge",
                     "Seconds since the database served was built (its "
                     "build_epoch), by database.");
    uint64_t now_s = ag_clock_wall_ms() / 1000u;
    for (int d = 0; !rc && d < AG_METRICS_NETDBS; d++) {
        if (!atomic_load_explicit(&net->db[d].loaded, memory_order_acquire))
            continue;
        /* 0 for a database built in the future (a clock behind). */
        uint64_t built = LOAD(net->db[d].build_epoch);
        rc = ag_buf_printf(
            b,
            "abuseguard_network_database_age_seconds{database=\"%s\"} "
            "%" PRIu64 "\n",
            databases[d], built < now_s ? now_s - built : 0);
    }
    return rc;
}

const char *ag_metrics_risk_signal_name(unsigned i)
{
    return i < AG_METRICS_RISK_SIGNALS ? risk_signals[i] : NULL;
}

void ag_metrics_risk(struct ag_metrics *m, unsigned signals, unsigned level,
                     bool judged)
{
    if (!m)
        return;
    struct ag_metrics_network *net = part(m);
    for (unsigned i = 0; i < AG_METRICS_RISK_SIGNALS; i++)
        if (signals & 1u << i)
            BUMP(net->risk[i]);
    BUMP(net->risk_level[level < 3 ? level : 2]);
    if (!judged)
        BUMP(net->history_unread);
}

/* The login checks' risk signals and levels, zeros included. */
static int render_risk(struct ag_metrics_network *net, struct ag_buf *b)
{
    int rc = family(b, "abuseguard_risk_signals_total", "counter",
                    "Login checks that carried each risk signal.");
    for (unsigned i = 0; !rc && i < AG_METRICS_RISK_SIGNALS; i++)
        rc = ag_buf_printf(b,
                           "abuseguard_risk_signals_total{signal=\"%s\"} "
                           "%" PRIu64 "\n",
                           risk_signals[i], LOAD(net->risk[i]));
    rc = rc ? rc
            : family(b, "abuseguard_risk_levels_total", "counter",
                     "Login checks judged at each risk level.");
    for (unsigned i = 0; !rc && i < 3; i++)
        rc = ag_buf_printf(b,
                           "abuseguard_risk_levels_total{level=\"%s\"} "
                           "%" PRIu64 "\n",
                           risk_levels[i], LOAD(net->risk_level[i]));
    rc = rc ? rc
            : family(b, "abuseguard_history_unread_total", "counter",
                     "Login checks whose user's history could not be read "
                     "(Redis out, or a Cluster check none of whose slots is "
                     "the history's), judged without it.");
    return rc ? rc
              : ag_buf_printf(b,
                              "abuseguard_history_unread_total %" PRIu64 "\n",
                              LOAD(net->history_unread));
}

int ag_metrics_network_render(struct ag_metrics_network *net, struct ag_buf *b)
{
    size_t n = atomic_load_explicit(&net->nlists, memory_order_acquire);
    int rc = render_risk(net, b);
    rc = rc ? rc : render_databases(net, b);
    rc = rc ? rc
            : family(b, "abuseguard_network_reload_failures_total", "counter",
                     "Replacement network files that could not be loaded "
                     "(the last good one stays), by file.");
    for (int d = 0; !rc && d < AG_METRICS_NETDBS; d++)
        rc = ag_buf_printf(
            b,
            "abuseguard_network_reload_failures_total{file=\"%s\"} %" PRIu64
            "\n",
            db_files[d], LOAD(net->db[d].failures));
    for (size_t i = 0; !rc && i < n; i++)
        rc = ag_buf_printf(
            b,
            "abuseguard_network_reload_failures_total{file=\"%s\"} %" PRIu64
            "\n",
            net->list[i].name, LOAD(net->list[i].failures));
    rc = rc ? rc
            : family(b, "abuseguard_network_list_entries", "gauge",
                     "Entries (addresses and CIDRs) in the IP list served, "
                     "by list.");
    for (size_t i = 0; !rc && i < n; i++)
        if (atomic_load_explicit(&net->list[i].loaded, memory_order_acquire))
            rc = ag_buf_printf(b,
                               "abuseguard_network_list_entries{list=\"%s\"} "
                               "%" PRIu64 "\n",
                               net->list[i].name, LOAD(net->list[i].entries));
    rc = rc ? rc
            : family(b, "abuseguard_network_list_special_only_total", "counter",
                     "Lookups the list matched only in private, loopback, "
                     "link-local or CGNAT ranges (a proxy's own address "
                     "sent for the client's), by list.");
    for (size_t i = 0; !rc && i < n; i++)
        rc = ag_buf_printf(
            b,
            "abuseguard_network_list_special_only_total{list=\"%s\"} "
            "%" PRIu64 "\n",
            net->list[i].name, LOAD(net->list[i].special_only));
    return rc;
}
