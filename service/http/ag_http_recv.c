/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The recv(2) that libmicrohttpd calls: the bytes each client connection
 * receives pass through the connection's framing validator
 * (ag_http_wire) on their way to libmicrohttpd's parser, which in 0.9.75
 * neither rejects bare LF, obs-fold or NUL nor lets the application see
 * the bytes that held them. libmicrohttpd reads client sockets with
 * recv(2) and nothing else; this definition, in the executable, comes
 * first in the dynamic linker's lookup, so it is the one libmicrohttpd
 * binds. Descriptors the connection table does not know (and every call
 * before ag_http_recv_watch) pass straight through to recvfrom(2).
 *
 * Delete this file, and use MHD_OPTION_CLIENT_DISCIPLINE_LVL, once the
 * distribution ships libmicrohttpd 0.9.77 or later.
 */
#undef _FORTIFY_SOURCE /* its inline recv() would clash with this one */
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "ag_http_conns.h"
#include "ag_http_recv.h"

static _Atomic(struct ag_http_conns *) watched;

void ag_http_recv_watch(struct ag_http_conns *conns)
{
    atomic_store_explicit(&watched, conns, memory_order_release);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t n = recvfrom(fd, buf, len, flags, NULL, NULL);
    struct ag_http_conns *c =
        atomic_load_explicit(&watched, memory_order_acquire);
    if (n > 0 && c && !(flags & MSG_PEEK)) {
        struct ag_wire *w = ag_http_conns_wire(c, fd);
        if (w) {
            ag_http_conns_note_bytes(c, fd);
            ag_wire_feed(w, buf, (size_t)n);
        }
    }
    return n;
}
