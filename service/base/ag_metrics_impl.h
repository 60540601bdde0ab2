/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seam between the metrics registry (ag_metrics.c) and its network
 * part (ag_metrics_network.c: the country and ASN databases and the IP
 * lists of ag_network), shared by those two files and nothing else.
 *
 * The network part is the first member of struct ag_metrics, so that
 * ag_metrics_network.c reaches it from m by a cast (a pointer to a
 * struct, converted, points to its first member) instead of a call back
 * into ag_metrics.c: calls between the two go one way, the registry
 * rendering its part (scripts/check_calls.py).
 */
#ifndef AG_METRICS_IMPL_H
#define AG_METRICS_IMPL_H

#include <stdatomic.h>

#include "ag_buf.h"
#include "ag_metrics.h"

struct ag_metrics_network {
    struct {
        atomic_uint_fast64_t lookups;
        atomic_uint_fast64_t misses;
        atomic_uint_fast64_t failures; /* reloads, file="geoip" or "asn" */
        atomic_bool loaded;
        atomic_uint_fast64_t build_epoch; /* unix seconds */
    } db[AG_METRICS_NETDBS];
    struct {
        char name[AG_METRICS_NETWORK_NAME_MAX + 1]; /* written before n */
        atomic_uint_fast64_t failures;
        atomic_uint_fast64_t special_only;
        atomic_bool loaded;
        atomic_uint_fast64_t entries;
    } list[AG_METRICS_NETWORK_LISTS];
    atomic_size_t nlists; /* published (release) after the names */
    atomic_uint_fast64_t risk[AG_METRICS_RISK_SIGNALS];
    atomic_uint_fast64_t risk_level[3];
    atomic_uint_fast64_t history_unread;
};

/* Appends the network families to b. */
int ag_metrics_network_render(struct ag_metrics_network *net, struct ag_buf *b);

#endif
