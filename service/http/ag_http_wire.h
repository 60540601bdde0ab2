/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_wire: the framing of one connection's request stream, judged on
 * the bytes exactly as they arrive, before libmicrohttpd parses them.
 *
 * libmicrohttpd 0.9.75 (Debian 12) accepts bare-LF line ends, obs-fold
 * continuation lines and a NUL inside the request line or a header, and
 * hands the application only the parsed result, where none of them can be
 * seen any more; it also takes the first of two Host or Transfer-Encoding
 * headers, and waits for ever for the LF of a line ended by CR alone.
 * Behind a proxy that reads the same bytes differently, each is a way to
 * smuggle a request. This module is a streaming validator that sees
 * them: ag_http_recv feeds it every byte a client connection receives,
 * and answers a stream that broke the rules with a 400 at once, closing
 * the connection.
 *
 * It follows requests one after another on a keep-alive connection: a
 * request head (request line, header lines, the empty line), then a body
 * of the head's Content-Length bytes or a chunked body (size lines, data,
 * trailer lines), then the next head. Any number of empty lines (CRLF)
 * before a request line are allowed (RFC 9112 2.2). Every line, a chunk's
 * and a trailer's too, must end in CRLF. A head whose body length cannot
 * be known (a Transfer-Encoding other than plain "chunked", or one beside
 * Content-Length, both of which abuseguard refuses, closing the
 * connection) cannot be followed further: the validator stops judging
 * and reports AG_WIRE_UNTRACKED.
 *
 * Pure: no I/O, no allocation, no locks; one ag_wire per connection, fed
 * from one thread at a time.
 */
#ifndef AG_HTTP_WIRE_H
#define AG_HTTP_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum ag_wire_fault {
    AG_WIRE_OK = 0,
    AG_WIRE_BARE_LF,    /* a line ended by LF without CR before it */
    AG_WIRE_BARE_CR,    /* a CR not followed by LF */
    AG_WIRE_OBS_FOLD,   /* a header line beginning with SP or HTAB */
    AG_WIRE_NUL,        /* a NUL byte in the request line or a header */
    AG_WIRE_CL_DUP,     /* more than one Content-Length header */
    AG_WIRE_NAME_SPACE, /* white space in a header name, before its colon */
    AG_WIRE_CL_BAD,     /* a Content-Length value that is not OWS 1*DIGIT
                           OWS, or is 2^63 or more */
    AG_WIRE_HOST_DUP,   /* more than one Host header */
    AG_WIRE_TE_DUP,     /* more than one Transfer-Encoding header */
    AG_WIRE_CHUNK_BAD,  /* a chunk size that is not 1*HEXDIG below 2^63
                           (then ";" and an extension, or CRLF), or chunk
                           data not followed by CRLF */
    AG_WIRE_UNTRACKED,  /* a body of unknown length: not a fault in
                           itself, but nothing after that head is judged;
                           the last of the enum */
};

/* The state of one connection's stream. Opaque in spirit; in the header
 * so that it can live inside a connection's slot without an allocation. */
struct ag_wire {
    uint8_t state;      /* where in a head or body the stream is */
    uint8_t fault;      /* enum ag_wire_fault; sticky */
    uint8_t name_pos;   /* bytes of a header name matched so far; in a
                           Transfer-Encoding value, of "chunked" */
    uint8_t name_kind;  /* which framing headers the name may still be */
    uint8_t cl_seen;    /* a Content-Length header in this head */
    uint8_t te_seen;    /* a Transfer-Encoding header in this head */
    uint8_t te_chunked; /* its value was "chunked" alone */
    uint8_t host_seen;  /* a Host header in this head */
    uint64_t cl;        /* the head's Content-Length */
    uint64_t body_left; /* body or chunk bytes still to pass over; in a
                           chunk-size line, the size so far */
    uint64_t requests;  /* complete heads seen */
};

void ag_wire_init(struct ag_wire *w);
/* Feeds the next n bytes received on the connection. Returns the first
 * fault seen on the stream so far (AG_WIRE_OK if none): once set, a fault
 * stays, and later bytes are not judged. With n 0, p may be NULL: the
 * call only returns the fault so far. */
enum ag_wire_fault ag_wire_feed(struct ag_wire *w, const char *p, size_t n);
/* The fault's meaning, for a 400's message ("request line or header ends
 * with a bare LF"); a static string. */
const char *ag_wire_fault_text(enum ag_wire_fault f);

#endif
