/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_conns.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "ag_error.h"

enum state {
    S_FREE = 0,
    S_READY, /* in a ready list, oldest first */
    S_BUSY,
    S_ENDED, /* shut by the table; waiting for libmicrohttpd to close it */
};

/* The two ready lists: connections that have not completed a request
 * yet, and those that have (kept alive for the next one). At the cap the
 * first list gives up a connection before the second is looked at. */
enum { L_FRESH = 0, L_SERVED = 1, LISTS };

/* A client address as counted: the family and the address's first bytes
 * (IPv4: 4, IPv6: the /64, 8). family 0: counts against nothing. */
struct addr_key {
    uint8_t family;
    uint8_t bytes[8];
};

struct slot {
    /* enum state; changed under the lock, read without it by _tag and
     * _wire */
    _Atomic uint8_t state;
    int tag;
    struct addr_key key;
    uint64_t ready_ms; /* when it last became READY */
    int prev, next;    /* its ready list, by descriptor; -1 ends it */
    /* It has completed a request (L_SERVED): which ready list holds it.
     * Set only while it is not in a list. */
    uint8_t served;
    struct ag_wire wire;
    /* When the first byte since it became READY was read
     * (ag_http_conns_note_bytes): its next request began then. NO_BYTES
     * while none has been. Written by the thread serving the connection,
     * and under the lock by list_push; read by victim. */
    _Atomic uint64_t first_byte_ms;
};

#define NO_BYTES UINT64_MAX

/* Live connections per address: open addressing with linear probing and
 * backward-shift deletion; a count of 0 is an empty bucket. */
struct bucket {
    struct addr_key key;
    uint32_t count;
};

struct ag_http_conns {
    struct ag_http_conns_opts o;
    pthread_mutex_t lock;
    struct slot *slots; /* o.fd_limit of them */
    /* The ready lists, each longest-READY first. */
    struct {
        int head, tail;
    } lists[LISTS];
    struct bucket *buckets;
    size_t mask; /* buckets - 1, a power of two minus one */
    size_t live, ready;
    size_t reclaimed, expired, refused;
};

static void default_shut(void *arg, int fd)
{
    (void)arg;
    shutdown(fd, SHUT_RDWR);
}

static bool default_pending(void *arg, int fd)
{
    (void)arg;
    int n = 0;
    return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

int ag_http_conns_new(const struct ag_http_conns_opts *opts,
                      struct ag_http_conns **out)
{
    if (!opts || opts->fd_limit <= 0 || !opts->max_conns || !opts->max_per_ip)
        return AG_EINVAL;
    struct ag_http_conns *c = calloc(1, sizeof *c);
    if (!c)
        return AG_ENOMEM;
    c->o = *opts;
    if (!c->o.shut)
        c->o.shut = default_shut;
    if (!c->o.pending)
        c->o.pending = default_pending;
    /* Twice the most addresses there can be keeps the probes short. */
    size_t n = 16;
    while (n < 2 * (size_t)opts->fd_limit)
        n *= 2;
    c->mask = n - 1;
    c->slots = calloc((size_t)opts->fd_limit, sizeof *c->slots);
    c->buckets = calloc(n, sizeof *c->buckets);
    if (!c->slots || !c->buckets || pthread_mutex_init(&c->lock, NULL)) {
        free(c->slots);
        free(c->buckets);
        free(c);
        return AG_ENOMEM;
    }
    for (int l = 0; l < LISTS; l++)
        c->lists[l].head = c->lists[l].tail = -1;
    *out = c;
    return AG_OK;
}

void ag_http_conns_free(struct ag_http_conns *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c->buckets);
    free(c);
}

static struct addr_key key_of(const struct sockaddr *sa)
{
    struct addr_key k;
    memset(&k, 0, sizeof k);
    if (!sa)
        return k;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const void *)sa;
        k.family = 4;
        memcpy(k.bytes, &v4->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const void *)sa;
        const uint8_t *a = v6->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
                                           0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, sizeof mapped) == 0) {
            k.family = 4; /* ::ffff:a.b.c.d is the IPv4 client a.b.c.d */
            memcpy(k.bytes, a + 12, 4);
        } else {
            k.family = 6;
            memcpy(k.bytes, a, 8);
        }
    }
    return k;
}

static size_t hash_key(const struct addr_key *k)
{
    /* FNV-1a: addresses are not chosen against this table's hash in a
     * way that matters, as a probe run is bounded by the live count. */
    uint64_t h = 1469598103934665603ull ^ k->family;
    for (size_t i = 0; i < sizeof k->bytes; i++) {
        h ^= k->bytes[i];
        h *= 1099511628211ull;
    }
    return (size_t)(h ^ (h >> 29));
}

static bool same_key(const struct addr_key *a, const struct addr_key *b)
{
    return a->family == b->family &&
           memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

/* The bucket holding k, or the empty one where it would go. */
static size_t find_bucket(const struct ag_http_conns *c,
                          const struct addr_key *k)
{
    size_t i = hash_key(k) & c->mask;
    while (c->buckets[i].count && !same_key(&c->buckets[i].key, k))
        i = (i + 1) & c->mask;
    return i;
}

static uint32_t address_count(const struct ag_http_conns *c,
                              const struct addr_key *k)
{
    return c->buckets[find_bucket(c, k)].count;
}

static void address_add(struct ag_http_conns *c, const struct addr_key *k)
{
    size_t i = find_bucket(c, k);
    c->buckets[i].key = *k;
    c->buckets[i].count++;
}

static void address_drop(struct ag_http_conns *c, const struct addr_key *k)
{
    size_t i = find_bucket(c, k);
    if (!c->buckets[i].count || --c->buckets[i].count)
        return;
    /* Emptied: shift later members of its probe run back into the hole,
     * so that no lookup stops early at it. */
    size_t hole = i;
    for (size_t j = (i + 1) & c->mask; c->buckets[j].count;
         j = (j + 1) & c->mask) {
        size_t home = hash_key(&c->buckets[j].key) & c->mask;
        /* j may move to hole unless its home lies cyclically in
         * (hole, j]. */
        bool stays =
            hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        c->buckets[hole] = c->buckets[j];
        c->buckets[j].count = 0;
        hole = j;
    }
}

/* Appends fd to the ready list its served flag names. */
static void list_push(struct ag_http_conns *c, int fd, uint64_t now_ms)
{
    struct slot *s = &c->slots[fd];
    int *head = &c->lists[s->served].head, *tail = &c->lists[s->served].tail;
    s->state = S_READY;
    atomic_store_explicit(&s->first_byte_ms, NO_BYTES, memory_order_relaxed);
    s->ready_ms = now_ms;
    s->next = -1;
    s->prev = *tail;
    if (*tail >= 0)
        c->slots[*tail].next = fd;
    else
        *head = fd;
    *tail = fd;
    c->ready++;
}

static void list_remove(struct ag_http_conns *c, int fd)
{
    struct slot *s = &c->slots[fd];
    int *head = &c->lists[s->served].head, *tail = &c->lists[s->served].tail;
    if (s->prev >= 0)
        c->slots[s->prev].next = s->next;
    else
        *head = s->next;
    if (s->next >= 0)
        c->slots[s->next].prev = s->prev;
    else
        *tail = s->prev;
    s->prev = s->next = -1;
    c->ready--;
}

/* The connection READY longest of both lists, or -1 if none is. */
static int oldest_ready(const struct ag_http_conns *c)
{
    int a = c->lists[L_FRESH].head, b = c->lists[L_SERVED].head;
    if (a < 0 || b < 0)
        return a < 0 ? b : a;
    return c->slots[b].ready_ms < c->slots[a].ready_ms ? b : a;
}

/* Ends a READY connection: out of the list and the live count; its slot
 * and address count stay until libmicrohttpd reports it closed. */
static void end_ready(struct ag_http_conns *c, int fd)
{
    list_remove(c, fd);
    c->slots[fd].state = S_ENDED;
    c->live--;
    c->o.shut(c->o.shut_arg, fd);
}

static bool known(const struct ag_http_conns *c, int fd)
{
    return fd >= 0 && fd < c->o.fd_limit && c->slots[fd].state != S_FREE;
}

/* Frees fd's slot, whatever its state. Called with the lock held. */
static void forget(struct ag_http_conns *c, int fd)
{
    struct slot *s = &c->slots[fd];
    if (s->state == S_READY)
        list_remove(c, fd);
    if (s->state != S_ENDED)
        c->live--;
    if (s->key.family)
        address_drop(c, &s->key);
    s->state = S_FREE;
}

/* How a READY connection ranks at the cap, the first to go first. A
 * request "arriving" began (its first byte read, or bytes waiting in the
 * kernel unread) less than AG_HTTP_CONNS_RECEIVING_MS ago; one that began
 * earlier has stalled, which counts as no progress at all. */
enum rank {
    NO_PROGRESS,     /* no request arriving and none ever completed, or a
                        request stalled, in either list */
    ARRIVING_FRESH,  /* a first request arriving */
    IDLE_SERVED,     /* completed a request, idle since its answer */
    ARRIVING_SERVED, /* completed a request, the next one arriving */
    RANKS,
};

static enum rank rank_of(const struct ag_http_conns *c, int fd, uint64_t now_ms)
{
    const struct slot *s = &c->slots[fd];
    uint64_t first =
        atomic_load_explicit(&s->first_byte_ms, memory_order_relaxed);
    if (first != NO_BYTES && now_ms >= first + AG_HTTP_CONNS_RECEIVING_MS)
        return NO_PROGRESS; /* stalled */
    bool arriving = first != NO_BYTES || c->o.pending(c->o.shut_arg, fd);
    if (s->served == L_SERVED)
        return arriving ? ARRIVING_SERVED : IDLE_SERVED;
    return arriving ? ARRIVING_FRESH : NO_PROGRESS;
}

/* The READY connection to reclaim: the one that has made the least
 * progress toward a complete request for the longest time. First one
 * that has made none (never completed a request and sends nothing now,
 * or whose request stalled), then one whose first request is arriving,
 * then an idle one that completed requests (an auth backend's pooled
 * connection waits idle between its requests, while a slowloris
 * client's never finishes one), and last one that completed requests
 * and whose next one is arriving. Within a rank, the longest-READY. Each
 * list is looked at as far as its first REAP_SCAN connections; both are
 * in the order their connections became READY, so the first of a rank
 * met in a list is that list's longest-READY of the rank. Called with
 * the lock held; some connection is READY. */
static int victim(const struct ag_http_conns *c, uint64_t now_ms)
{
    enum { REAP_SCAN = 64 };
    int best[RANKS];
    for (int r = 0; r < RANKS; r++)
        best[r] = -1;
    for (int l = 0; l < LISTS; l++) {
        int fd = c->lists[l].head;
        for (int i = 0; fd >= 0 && i < REAP_SCAN; i++) {
            enum rank r = rank_of(c, fd, now_ms);
            if (best[r] < 0 ||
                c->slots[fd].ready_ms < c->slots[best[r]].ready_ms)
                best[r] = fd;
            if (r == NO_PROGRESS)
                break; /* none later in this list goes before it */
            fd = c->slots[fd].next;
        }
    }
    for (int r = 0; r < RANKS; r++)
        if (best[r] >= 0)
            return best[r];
    return oldest_ready(c);
}

enum ag_http_admit ag_http_conns_admit(struct ag_http_conns *c, int fd,
                                       const struct sockaddr *sa, int tag,
                                       uint64_t now_ms)
{
    if (fd < 0 || fd >= c->o.fd_limit)
        return AG_HTTP_BAD_FD;
    struct addr_key k = key_of(sa);
    enum ag_http_admit verdict = AG_HTTP_ADMITTED;
    pthread_mutex_lock(&c->lock);
    /* The kernel has just handed out fd, so whatever the table still
     * holds under it was closed without a word (libmicrohttpd drops a
     * connection it cannot take without NOTIFY_CLOSED): forget it, or the
     * number would be refused from now on and later shut under another
     * descriptor's feet. */
    if (c->slots[fd].state != S_FREE)
        forget(c, fd);
    if (k.family && address_count(c, &k) >= c->o.max_per_ip) {
        verdict = AG_HTTP_PER_IP_FULL;
    } else if (c->live >= c->o.max_conns) {
        if (!c->ready) {
            verdict = AG_HTTP_FULL;
        } else {
            end_ready(c, victim(c, now_ms));
            c->reclaimed++;
        }
    }
    if (verdict == AG_HTTP_ADMITTED) {
        struct slot *s = &c->slots[fd];
        s->tag = tag;
        s->key = k;
        s->served = L_FRESH;
        ag_wire_init(&s->wire);
        if (k.family)
            address_add(c, &k);
        list_push(c, fd, now_ms);
        c->live++;
    } else if (verdict != AG_HTTP_BAD_FD) {
        c->refused++;
    }
    pthread_mutex_unlock(&c->lock);
    return verdict;
}

void ag_http_conns_busy(struct ag_http_conns *c, int fd)
{
    pthread_mutex_lock(&c->lock);
    if (known(c, fd) && c->slots[fd].state == S_READY) {
        list_remove(c, fd);
        c->slots[fd].state = S_BUSY;
    }
    pthread_mutex_unlock(&c->lock);
}

void ag_http_conns_ready(struct ag_http_conns *c, int fd, uint64_t now_ms)
{
    pthread_mutex_lock(&c->lock);
    if (known(c, fd) && c->slots[fd].state == S_BUSY) {
        c->slots[fd].served = L_SERVED;
        list_push(c, fd, now_ms);
    }
    pthread_mutex_unlock(&c->lock);
}

void ag_http_conns_closed(struct ag_http_conns *c, int fd)
{
    pthread_mutex_lock(&c->lock);
    if (known(c, fd))
        forget(c, fd);
    pthread_mutex_unlock(&c->lock);
}

size_t ag_http_conns_sweep(struct ag_http_conns *c, uint64_t now_ms)
{
    size_t n = 0;
    pthread_mutex_lock(&c->lock);
    /* Each list is in the order its connections became READY, so the
     * expired ones are at their heads. */
    for (int fd = oldest_ready(c);
         fd >= 0 && c->slots[fd].ready_ms + c->o.deadline_ms <= now_ms;
         fd = oldest_ready(c)) {
        end_ready(c, fd);
        n++;
    }
    c->expired += n;
    pthread_mutex_unlock(&c->lock);
    return n;
}

int ag_http_conns_tag(const struct ag_http_conns *c, int fd)
{
    return known(c, fd) ? c->slots[fd].tag : -1;
}

void ag_http_conns_note_bytes(struct ag_http_conns *c, int fd, uint64_t now_ms)
{
    if (!known(c, fd))
        return;
    /* Only the serving thread writes it while the connection is READY,
     * so a load and then a store need no compare-and-swap. */
    _Atomic uint64_t *first = &c->slots[fd].first_byte_ms;
    if (atomic_load_explicit(first, memory_order_relaxed) == NO_BYTES)
        atomic_store_explicit(first, now_ms, memory_order_relaxed);
}

struct ag_wire *ag_http_conns_wire(struct ag_http_conns *c, int fd)
{
    return known(c, fd) ? &c->slots[fd].wire : NULL;
}

void ag_http_conns_stats(struct ag_http_conns *c,
                         struct ag_http_conns_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = (struct ag_http_conns_stats){
        .live = c->live,
        .ready = c->ready,
        .reclaimed = c->reclaimed,
        .expired = c->expired,
        .refused = c->refused,
    };
    pthread_mutex_unlock(&c->lock);
}
