/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost of an IP list lookup (service/network/ag_iplist.h): builds a
 * list of 100 000 random prefixes shaped like the real lists (75 000
 * IPv4: four in ten single hosts, three in ten /24s, the rest /12 to
 * /31; 25 000 IPv6 in 2000::/3, /32 to /64 and single hosts), parses it
 * as plain text, then times 10 million IPv4 and 10 million IPv6 lookups,
 * half of them inside a listed prefix and half anywhere, and prints the
 * nanoseconds a lookup takes. The seed is fixed: the same list and the
 * same addresses every run.
 *
 *   gcc -std=c17 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
 *       -Iservice/base -Iservice/engine -Iservice/network \
 *       $(pkg-config --cflags jansson libsodium) \
 *       bench/iplist_bench.c service/network/ag_iplist.c \
 *       service/network/ag_iplist_formats.c service/base/ag_error.c \
 *       $(pkg-config --libs jansson) \
 *       -o /tmp/iplist_bench && /tmp/iplist_bench
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_iplist.h"

#define PREFIXES 100000
#define V4_PREFIXES 75000
#define LOOKUPS 10000000
#define RING (1u << 20) /* addresses made ahead, read round and round */

static uint64_t state = 0x2545f4914f6cdd1dull;

static uint64_t next(void) /* splitmix64 */
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct prefix {
    unsigned char addr[16];
    unsigned bits;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void random_bytes(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)next();
}

/* An address inside p (random host bits), or anywhere when p is NULL. */
static void address_in(const struct prefix *p, int family, struct ag_ip *ip)
{
    size_t len = family == AF_INET ? 4 : 16;
    memset(ip, 0, sizeof(*ip));
    ip->family = family;
    random_bytes(ip->addr, len);
    if (family == AF_INET6 && !p)
        ip->addr[0] = (unsigned char)(0x20 | (ip->addr[0] & 0x1f));
    if (!p)
        return;
    for (unsigned b = 0; b < p->bits; b++) {
        unsigned char bit = (unsigned char)(0x80 >> (b % 8));
        ip->addr[b / 8] =
            (unsigned char)((ip->addr[b / 8] & ~bit) | (p->addr[b / 8] & bit));
    }
}

static double time_lookups(const struct ag_iplist *l, const struct ag_ip *ring,
                           size_t *hits)
{
    size_t h = 0;
    double t0 = now();
    for (size_t i = 0; i < LOOKUPS; i++)
        h += ag_iplist_match(l, &ring[i & (RING - 1)]) != AG_IPLIST_MISS;
    double t = now() - t0;
    *hits = h;
    return t * 1e9 / LOOKUPS;
}

int main(void)
{
    static struct prefix pre[PREFIXES];
    size_t cap = (size_t)PREFIXES * 64, len = 0;
    char *text = malloc(cap);
    struct ag_ip *ring = malloc(RING * sizeof(*ring));
    if (!text || !ring)
        return 1;

    for (size_t i = 0; i < PREFIXES; i++) {
        struct prefix *p = &pre[i];
        char a[INET6_ADDRSTRLEN];
        uint64_t r = next() % 10;
        memset(p, 0, sizeof(*p));
        if (i < V4_PREFIXES) {
            random_bytes(p->addr, 4);
            p->bits = r < 4 ? 32 : r < 7 ? 24 : 12 + (unsigned)(next() % 20);
            inet_ntop(AF_INET, p->addr, a, sizeof(a));
        } else {
            random_bytes(p->addr, 16);
            p->addr[0] = (unsigned char)(0x20 | (p->addr[0] & 0x1f));
            p->bits = r < 3 ? 128 : 32 + (unsigned)(next() % 33);
            inet_ntop(AF_INET6, p->addr, a, sizeof(a));
        }
        len += (size_t)snprintf(text + len, cap - len, "%s/%u\n", a, p->bits);
    }

    struct ag_iplist *l;
    struct ag_error err;
    double t0 = now();
    if (ag_iplist_parse(text, len, AG_IPLIST_PLAIN, &l, &err) != AG_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double parse_ms = (now() - t0) * 1e3;
    printf("list: %zu prefixes (%zu special), %zu bytes of tables, parsed "
           "in %.1f ms\n",
           ag_iplist_entries(l), ag_iplist_special(l), ag_iplist_bytes(l),
           parse_ms);

    for (int v6 = 0; v6 < 2; v6++) {
        int family = v6 ? AF_INET6 : AF_INET;
        size_t first = v6 ? V4_PREFIXES : 0;
        size_t n = v6 ? PREFIXES - V4_PREFIXES : V4_PREFIXES;
        for (size_t i = 0; i < RING; i++) {
            const struct prefix *p = i % 2 ? &pre[first + next() % n] : NULL;
            address_in(p, family, &ring[i]);
        }
        size_t hits;
        time_lookups(l, ring, &hits); /* warm the caches */
        double ns = time_lookups(l, ring, &hits);
        printf("%s: %d lookups, %.1f ns a lookup, %.1f%% hits\n",
               v6 ? "IPv6" : "IPv4", LOOKUPS, ns, 100.0 * hits / LOOKUPS);
    }
    ag_iplist_free(l);
    free(ring);
    free(text);
    return 0;
}
