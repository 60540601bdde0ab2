/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the network files cost a check: everything one request's lookup
 * does (ag_network_lookup: the hold of every file, the country database,
 * the ASN database and every list, and the release) over files given on
 * the command line, timed over a ring of random addresses, half IPv4 and
 * half IPv6. bench/network_cost.sh builds it against the Release
 * libraries and gives it a generated 4-million-network database and a
 * 100 000-prefix list.
 *
 *   network_lookup GEO.mmdb ASN.mmdb LIST [LOOKUPS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ag_error.h"
#include "ag_network.h"

#define RING (1u << 20)

static uint64_t state = 0x9e3779b97f4a7c15ull;

static uint64_t next(void) /* splitmix64 */
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s GEO.mmdb ASN.mmdb LIST [LOOKUPS]\n",
                argv[0]);
        return 2;
    }
    long lookups = argc > 4 ? atol(argv[4]) : 4000000;
    struct ag_network_list_opt list = {"bench", AG_IPLIST_AUTO, argv[3]};
    struct ag_network *n = NULL;
    struct ag_error err;
    if (ag_network_start(&(struct ag_network_opts){.geoip_path = argv[1],
                                                   .asn_path = argv[2],
                                                   .lists = &list,
                                                   .nlists = 1},
                         &n, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    struct ag_ip *ring = calloc(RING, sizeof *ring);
    if (!ring)
        return 1;
    for (size_t i = 0; i < RING; i++) {
        uint64_t a = next(), b = next();
        if (i % 2) {
            ring[i].family = AF_INET6;
            ring[i].addr[0] = 0x20 | (uint8_t)(a & 0x1f); /* 2000::/3 */
            memcpy(ring[i].addr + 1, &a, 7);
            memcpy(ring[i].addr + 8, &b, 8);
        } else {
            ring[i].family = AF_INET;
            memcpy(ring[i].addr, &a, 4);
        }
    }
    unsigned long found = 0;
    struct ag_netinfo ni;
    for (size_t i = 0; i < RING; i++) /* warm */
        ag_network_lookup(n, &ring[i], &ni);
    double t0 = now_ns();
    for (long i = 0; i < lookups; i++) {
        ag_network_lookup(n, &ring[(size_t)i & (RING - 1)], &ni);
        found += ni.asn != 0;
    }
    double ns = (now_ns() - t0) / (double)lookups;
    printf("{\"lookups\": %ld, \"ns_per_check\": %.1f, \"with_asn\": %.3f}\n",
           lookups, ns, (double)found / (double)lookups);
    free(ring);
    ag_network_stop(n);
    return 0;
}
