/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_conns: the table of open client connections, for the limits
 * libmicrohttpd 0.9.75 cannot enforce by itself.
 *
 * libmicrohttpd resets a connection's timeout on every byte, so a client
 * trickling one header line every few seconds holds a connection for
 * ever; and at its connection limit it stops accepting, so a new client
 * waits in the backlog until it gives up. abuseguard accepts connections
 * itself (ag_http.c) and keeps this table, as nginx keeps its reusable
 * connection queue:
 *
 * - A connection is READY from its accept, and again from the end of each
 *   response, until the request after it has arrived in full (headers and
 *   body): then it is BUSY while the service answers. A READY connection
 *   must finish its request within deadline_ms of becoming ready, however
 *   slowly its bytes come; ag_http_conns_sweep ends those past it.
 * - At max_conns live connections a new one reclaims a READY connection,
 *   as nginx reuses idle connections: the one that has made the least
 *   progress toward a complete request for the longest time, judged on
 *   its current request. A request is arriving from its first byte (or
 *   while bytes wait unread in the kernel) for AG_HTTP_CONNS_RECEIVING_MS;
 *   one not complete by then has stalled. First to go is a connection
 *   that has never completed a request and sends nothing, or whose
 *   request has stalled (a slowloris client's, whether or not it
 *   completed a cheap request before); then one whose first request is
 *   arriving; then one that has completed requests and is idle between
 *   them (a pooled client's); last one whose next request is arriving.
 *   Within each the longest-READY goes. Sparing an arriving request keeps
 *   a client, under a flood of new connections, from losing its
 *   connection between sending its request and its being read. Only when
 *   every live connection is BUSY is the newcomer refused (AG_HTTP_FULL),
 *   at once.
 * - One client address holds at most max_per_ip live connections; an IPv6
 *   address counts by its /64, which one host owns.
 * - "Ending" a connection is shutdown(2) (or opts.shut), done under the
 *   table's lock: libmicrohttpd then sees the end, closes the connection
 *   and calls ag_http_conns_closed before it closes the descriptor, so a
 *   descriptor is never shut after it was reused.
 *
 * Connections are known by their descriptor, which indexes the table.
 * Thread-safety: every function may be called from any thread; the lock
 * is held for a few list operations. ag_http_conns_wire and _tag read
 * fields that only change at admit, so they take no lock (the worker that
 * serves a connection sees them through libmicrohttpd's hand-over).
 */
#ifndef AG_HTTP_CONNS_H
#define AG_HTTP_CONNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ag_http_wire.h"

struct ag_http_conns;

struct ag_http_conns_opts {
    unsigned max_conns;   /* live connections at most */
    unsigned max_per_ip;  /* live connections of one address (IPv6: /64) */
    uint64_t deadline_ms; /* a whole request within this of being ready */
    int fd_limit;         /* every descriptor admitted is below this */
    /* Ends a connection; NULL: shutdown(fd, SHUT_RDWR). Called with the
     * table's lock held: it must not call back into the table. */
    void (*shut)(void *arg, int fd);
    /* Whether bytes wait unread on fd; NULL: ioctl(FIONREAD). Called with
     * the lock held; shut_arg is its argument too. */
    bool (*pending)(void *arg, int fd);
    void *shut_arg;
};

enum ag_http_admit {
    AG_HTTP_ADMITTED,
    AG_HTTP_FULL,        /* max_conns live, none of them READY */
    AG_HTTP_PER_IP_FULL, /* the client address holds max_per_ip */
    AG_HTTP_BAD_FD,      /* outside the table */
};

/* Returns 0 and a new table in *out (free with ag_http_conns_free), or
 * AG_EINVAL / AG_ENOMEM. */
int ag_http_conns_new(const struct ag_http_conns_opts *opts,
                      struct ag_http_conns **out);
void ag_http_conns_free(struct ag_http_conns *c);

/* A connection accepted on listener tag (any small number the caller
 * chooses) from sa (AF_INET, AF_INET6; anything else, such as AF_UNIX,
 * counts against no address). At the cap, reclaims a READY connection
 * first (see above). A slot fd still holds is forgotten first: the kernel
 * reuses a descriptor only once it is closed, so that connection ended
 * without ag_http_conns_closed (libmicrohttpd drops a connection it
 * cannot take without notice). On AG_HTTP_ADMITTED the connection is READY
 * now_ms and its stream validator is fresh. */
enum ag_http_admit ag_http_conns_admit(struct ag_http_conns *c, int fd,
                                       const struct sockaddr *sa, int tag,
                                       uint64_t now_ms);
/* The connection's request has arrived in full: no deadline while it is
 * answered. Does nothing for an unknown or already BUSY connection. */
void ag_http_conns_busy(struct ag_http_conns *c, int fd);
/* Its response is done: READY again, a new deadline from now_ms. */
void ag_http_conns_ready(struct ag_http_conns *c, int fd, uint64_t now_ms);
/* libmicrohttpd closed it (before closing fd); idempotent. */
void ag_http_conns_closed(struct ag_http_conns *c, int fd);
/* Ends every READY connection whose deadline is at or before now_ms and
 * returns how many it ended. */
size_t ag_http_conns_sweep(struct ag_http_conns *c, uint64_t now_ms);

/* How long from its first byte a request counts as arriving (spared at
 * the cap; see the opening): many round trips for the few hundred bytes
 * a client sends at once, short beside any deadline worth setting. */
#define AG_HTTP_CONNS_RECEIVING_MS 1000u

/* Bytes arrived on fd at now_ms (the recv hook): its next request has
 * begun, if this is the first byte since it became READY. Lock-free. */
void ag_http_conns_note_bytes(struct ag_http_conns *c, int fd, uint64_t now_ms);
/* The listener tag given at admit, or -1 for an unknown descriptor. */
int ag_http_conns_tag(const struct ag_http_conns *c, int fd);
/* The connection's stream validator, or NULL for an unknown descriptor.
 * Only the thread serving the connection may use it. */
struct ag_wire *ag_http_conns_wire(struct ag_http_conns *c, int fd);

/* Counts, for /metrics and tests. */
struct ag_http_conns_stats {
    size_t live;      /* admitted and not ended */
    size_t ready;     /* of which READY */
    size_t reclaimed; /* ended at the cap to make room, since start */
    size_t expired;   /* ended by the deadline, since start */
    size_t refused;   /* admits refused, since start */
};
void ag_http_conns_stats(struct ag_http_conns *c,
                         struct ag_http_conns_stats *out);

#endif
