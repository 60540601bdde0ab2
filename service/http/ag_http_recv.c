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
 * A stream that breaks the rules is answered here, the moment the byte
 * that breaks them arrives: a 400 naming "framing" is written to the
 * socket, and libmicrohttpd is told the client has gone (0 bytes), so it
 * closes the connection without parsing a byte of what came. Answering
 * here, not from the request handler, also answers what libmicrohttpd
 * would never bring to the handler: a request whose lines end in CR
 * alone, for whose LF it would wait. libmicrohttpd reads a connection
 * only while it receives a request (never while a response is on its
 * way), so no answer of its own can be interleaved with this one.
 *
 * Delete this file, and use MHD_OPTION_CLIENT_DISCIPLINE_LVL, once the
 * distribution ships libmicrohttpd 0.9.77 or later.
 */
#undef _FORTIFY_SOURCE /* its inline recv() would clash with this one */
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_http_conns.h"
#include "ag_http_recv.h"
#include "ag_http_response.h"
#include "ag_http_wire.h"

static _Atomic(struct ag_http_conns *) watched;

void ag_http_recv_watch(struct ag_http_conns *conns)
{
    atomic_store_explicit(&watched, conns, memory_order_release);
}

/* What answer_fault reads and drops after the 400, at most: a client's
 * pipelined remainder (the rest of a request, a few more) fits, and a
 * client that keeps streaming costs the worker 64 KiB, not the time until
 * the connection's deadline. */
enum { DRAIN_MAX = 64 * 1024 };

/* Writes the 400 for fault f to fd and ends the sending side; what the
 * client sent after it is read and dropped first, up to DRAIN_MAX, as
 * closing a socket with unread input resets it and may destroy the answer
 * on the way. A client still sending past that gets the reset: it sent
 * more after a framing error than any request holds. The socket is
 * non-blocking: a client that reads nothing may lose the answer, never
 * stall the worker. */
static void answer_fault(int fd, enum ag_wire_fault f)
{
    char text[16384];
    size_t len = 0;
    struct ag_http_response r;
    ag_http_response_init(&r);
    if (ag_http_response_field_error(&r, 400, ag_wire_fault_text(f),
                                     "framing") == AG_OK)
        len = ag_http_response_raw(&r, text, sizeof text);
    ag_http_response_free(&r);
    if (len) {
        ssize_t sent = send(fd, text, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)sent;
    }
    shutdown(fd, SHUT_WR);
    for (size_t drained = 0; drained < DRAIN_MAX;) {
        ssize_t got = recvfrom(fd, text, sizeof text, MSG_DONTWAIT, NULL, NULL);
        if (got <= 0)
            break;
        drained += (size_t)got;
    }
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t n = recvfrom(fd, buf, len, flags, NULL, NULL);
    struct ag_http_conns *c =
        atomic_load_explicit(&watched, memory_order_acquire);
    if (n > 0 && c && !(flags & MSG_PEEK)) {
        struct ag_wire *w = ag_http_conns_wire(c, fd);
        if (w) {
            ag_http_conns_note_bytes(c, fd, ag_clock_mono_ms());
            enum ag_wire_fault was = ag_wire_feed(w, NULL, 0);
            enum ag_wire_fault f = ag_wire_feed(w, buf, (size_t)n);
            if (f != AG_WIRE_OK && f != AG_WIRE_UNTRACKED) {
                /* Answered once; a later read (there should be none)
                 * finds the connection ended all the same. */
                if (f != was)
                    answer_fault(fd, f);
                return 0;
            }
        }
    }
    return n;
}
