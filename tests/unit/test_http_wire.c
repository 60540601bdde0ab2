/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_http_wire: each framing rule is judged on the bytes of the head and
 * of a chunked body's lines, never on body data; pipelined requests are
 * followed through their bodies, Content-Length or chunked; and a stream
 * gets the same verdict however it is cut into pieces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_http_wire.h"

/* A stream with its length, so that it may hold NUL bytes. */
#define S(lit) lit, sizeof lit - 1

struct verdict {
    enum ag_wire_fault fault;
    uint64_t requests;
};

static struct verdict whole(const char *p, size_t n)
{
    struct ag_wire w;
    ag_wire_init(&w);
    struct verdict v = {ag_wire_feed(&w, p, n), 0};
    v.requests = w.requests;
    return v;
}

/* Feeds p in three pieces: [0, i), [i, j), [j, n). */
static struct verdict in_three(const char *p, size_t n, size_t i, size_t j)
{
    struct ag_wire w;
    ag_wire_init(&w);
    ag_wire_feed(&w, p, i);
    ag_wire_feed(&w, p + i, j - i);
    struct verdict v = {ag_wire_feed(&w, p + j, n - j), 0};
    v.requests = w.requests;
    return v;
}

static struct verdict byte_by_byte(const char *p, size_t n)
{
    struct ag_wire w;
    ag_wire_init(&w);
    enum ag_wire_fault f = ag_wire_feed(&w, p, 0);
    for (size_t i = 0; i < n; i++)
        f = ag_wire_feed(&w, p + i, 1);
    struct verdict v = {f, w.requests};
    return v;
}

static enum ag_wire_fault verdict_of(const char *p, size_t n)
{
    return whole(p, n).fault;
}

struct stream {
    const char *name;
    const char *bytes;
    size_t len;
    enum ag_wire_fault fault;
    uint64_t requests; /* complete heads seen */
};

static const struct stream streams[] = {
    {"one GET", S("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), AG_WIRE_OK, 1},
    {"no headers", S("GET / HTTP/1.1\r\n\r\n"), AG_WIRE_OK, 1},
    {"leading empty lines",
     S("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"
       "\r\nGET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_OK, 2},
    {"pipelined with bodies",
     S("POST / HTTP/1.1\r\nContent-Length: 6\r\n\r\nab\n\0\rc"
       "POST / HTTP/1.1\r\ncontent-LENGTH:2\r\n\r\n\n\n"
       "GET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_OK, 3},
    {"content-length with ows",
     S("POST / HTTP/1.1\r\nContent-Length: \t 3 \t\r\n\r\n\0\0\0"
       "GET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_OK, 2},
    {"content-length with leading zeros",
     S("POST / HTTP/1.1\r\nContent-Length: 007\r\n\r\n\n\n\n\n\n\n\n"),
     AG_WIRE_OK, 1},
    {"content-length zero",
     S("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
       "GET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_OK, 2},
    {"content-length of 2^63 - 1",
     S("POST / HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n\r\n\n"),
     AG_WIRE_OK, 1},
    {"a partial head", S("GET / HTTP/1.1\r\nHost: a\r"), AG_WIRE_OK, 0},
    {"an empty value and a colon-less line",
     S("GET / HTTP/1.1\r\nX:\r\nnocolon\r\n: v\r\n\r\n"), AG_WIRE_OK, 1},
    {"transfer-encoding other than chunked",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
       "0\r\n\r\n\n\0 x\r\n"),
     AG_WIRE_UNTRACKED, 1},
    {"chunked as the start of a longer value",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunkedx\r\n\r\n\n"),
     AG_WIRE_UNTRACKED, 1},
    {"transfer-encoding with content-length",
     S("POST / HTTP/1.1\r\nContent-Length: 3\r\ntransfer-ENCODING: x\r\n"
       "\r\nabc\n"),
     AG_WIRE_UNTRACKED, 1},
    {"chunked with content-length",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
       "Content-Length: 3\r\n\r\n\n"),
     AG_WIRE_UNTRACKED, 1},
    {"a chunked body is followed to the next head",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
       "3\r\na\n\r\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_OK, 2},
    {"chunk extensions, trailers, hex in either case",
     S("POST / HTTP/1.1\r\ntransfer-encoding:  Chunked \t\r\n\r\n"
       "a;x=1\r\n0123456789\r\nB\r\n0123456789a\r\n00;y\r\nT: 1\r\n"
       "U:\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_OK, 2},
    {"chunk size of 2^63 - 1",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
       "7fffffffffffffff\r\n\n"),
     AG_WIRE_OK, 1},
    {"bare lf after a chunk size",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf after a chunk extension",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;x\nab"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf after chunk data",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf after the last chunk",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\n\r\n"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf after a trailer",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 1\n"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf ending the trailers",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\n"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf where a chunk size belongs",
     S("GET / HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\nTransfer-Encoding: "
       "chunked\r\n\r\n\n"),
     AG_WIRE_BARE_LF, 2},
    {"bare cr after a chunk size",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\rab"),
     AG_WIRE_BARE_CR, 1},
    {"bare cr after chunk data",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\rx"),
     AG_WIRE_BARE_CR, 1},
    {"bare cr ending the trailers",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\rX"),
     AG_WIRE_BARE_CR, 1},
    {"nul in a chunk extension",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;\0"),
     AG_WIRE_NUL, 1},
    {"nul in a trailer",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT\0"),
     AG_WIRE_NUL, 1},
    {"obs-fold in the trailers",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 1"
       "\r\n 2\r\n\r\n"),
     AG_WIRE_OBS_FOLD, 1},
    {"chunk data longer than its size",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n"),
     AG_WIRE_CHUNK_BAD, 1},
    {"no chunk size",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n;x\r\n"),
     AG_WIRE_CHUNK_BAD, 1},
    {"an empty chunk-size line",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\r\n"),
     AG_WIRE_CHUNK_BAD, 1},
    {"a chunk size that is not hexadecimal",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2g\r\n"),
     AG_WIRE_CHUNK_BAD, 1},
    {"white space after a chunk size",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2 \r\n"),
     AG_WIRE_CHUNK_BAD, 1},
    {"chunk size of 2^63",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
       "8000000000000000\r\n"),
     AG_WIRE_CHUNK_BAD, 1},
    {"transfer-encoding twice",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
       "transfer-encoding: chunked\r\n\r\n"),
     AG_WIRE_TE_DUP, 0},
    {"host twice", S("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nHOST: a\r\n\r\n"),
     AG_WIRE_HOST_DUP, 0},
    {"host once in each of two requests",
     S("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
     AG_WIRE_OK, 2},
    {"hostx and x-host are not host",
     S("GET / HTTP/1.1\r\nHostx: a\r\nX-Host: a\r\nHos: a\r\nHost: a\r\n"
       "\r\n"),
     AG_WIRE_OK, 1},
    {"a fault before transfer-encoding's head ends",
     S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\n"), AG_WIRE_BARE_LF,
     0},
    {"content-lengthx is not content-length",
     S("POST / HTTP/1.1\r\nContent-Lengthx: 3\r\n\r\n\n\n\n"), AG_WIRE_BARE_LF,
     1},
    {"x-content-length is not content-length",
     S("POST / HTTP/1.1\r\nX-Content-Length: 3\r\n\r\n\n\n\n"), AG_WIRE_BARE_LF,
     1},
    {"content-lengt is not content-length",
     S("POST / HTTP/1.1\r\nContent-Lengt: 3\r\n\r\n\n\n\n"), AG_WIRE_BARE_LF,
     1},
    {"transfer-encodingx is not transfer-encoding",
     S("POST / HTTP/1.1\r\nTransfer-Encodingx: chunked\r\n\r\n\n"),
     AG_WIRE_BARE_LF, 1},
    {"content-length in a value is not a header",
     S("POST / HTTP/1.1\r\nX: Content-Length: 3\r\n\r\n\n\n\n"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf in the request line", S("GET / HTTP/1.1\nHost: a\r\n\r\n"),
     AG_WIRE_BARE_LF, 0},
    {"bare lf after a header", S("GET / HTTP/1.1\r\nHost: a\n\r\n"),
     AG_WIRE_BARE_LF, 0},
    {"bare lf as the empty line", S("GET / HTTP/1.1\r\nHost: a\r\n\n"),
     AG_WIRE_BARE_LF, 0},
    {"bare lf before the request line", S("\nGET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_BARE_LF, 0},
    {"bare lf after a body",
     S("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nabGET / HTTP/1.1\n"),
     AG_WIRE_BARE_LF, 1},
    {"bare lf in a content-length value",
     S("POST / HTTP/1.1\r\nContent-Length: 2\n\r\n"), AG_WIRE_BARE_LF, 0},
    {"bare cr in the request line", S("GET / HTTP/1.1\rHost: a\r\n\r\n"),
     AG_WIRE_BARE_CR, 0},
    {"bare cr in a header", S("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n"),
     AG_WIRE_BARE_CR, 0},
    {"bare cr as the empty line", S("GET / HTTP/1.1\r\nHost: a\r\n\rX"),
     AG_WIRE_BARE_CR, 0},
    {"cr cr lf", S("GET / HTTP/1.1\r\r\n\r\n"), AG_WIRE_BARE_CR, 0},
    {"bare cr before the request line", S("\r\rGET / HTTP/1.1\r\n\r\n"),
     AG_WIRE_BARE_CR, 0},
    {"a cr before a nul is a bare cr", S("GET /\r\0"), AG_WIRE_BARE_CR, 0},
    {"obs-fold with sp", S("GET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n"),
     AG_WIRE_OBS_FOLD, 0},
    {"obs-fold with htab", S("GET / HTTP/1.1\r\nHost: a\r\n\tb\r\n\r\n"),
     AG_WIRE_OBS_FOLD, 0},
    {"white space before the first header",
     S("GET / HTTP/1.1\r\n Host: a\r\n\r\n"), AG_WIRE_OBS_FOLD, 0},
    {"obs-fold after content-length",
     S("POST / HTTP/1.1\r\nContent-Length: 1\r\n 2\r\n\r\n"), AG_WIRE_OBS_FOLD,
     0},
    {"nul in the request line", S("GET /\0 HTTP/1.1\r\n\r\n"), AG_WIRE_NUL, 0},
    {"nul first", S("\0GET / HTTP/1.1\r\n\r\n"), AG_WIRE_NUL, 0},
    {"nul in a header name", S("GET / HTTP/1.1\r\nHo\0st: a\r\n\r\n"),
     AG_WIRE_NUL, 0},
    {"nul in a header value", S("GET / HTTP/1.1\r\nHost: a\0\r\n\r\n"),
     AG_WIRE_NUL, 0},
    {"nul in a content-length value",
     S("POST / HTTP/1.1\r\nContent-Length: 1\0\r\n\r\n"), AG_WIRE_NUL, 0},
    {"nul at the start of a header line", S("GET / HTTP/1.1\r\n\0\r\n\r\n"),
     AG_WIRE_NUL, 0},
    {"white space before the colon of content-length",
     S("POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello"),
     AG_WIRE_NAME_SPACE, 0},
    {"white space before the colon of another header",
     S("GET / HTTP/1.1\r\nX-Thing\t: a\r\n\r\n"), AG_WIRE_NAME_SPACE, 0},
    {"white space inside a header name",
     S("GET / HTTP/1.1\r\nX Thing: a\r\n\r\n"), AG_WIRE_NAME_SPACE, 0},
    {"white space after the colon is the value's",
     S("GET / HTTP/1.1\r\nX-Thing:  a b \r\n\r\n"), AG_WIRE_OK, 1},
    {"content-length twice, equal",
     S("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n"),
     AG_WIRE_CL_DUP, 0},
    {"content-length twice, other case",
     S("POST / HTTP/1.1\r\nContent-Length: 2\r\nHost: a\r\n"
       "CONTENT-length: 3\r\n\r\n"),
     AG_WIRE_CL_DUP, 0},
    {"content-length once in each of two requests",
     S("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"
       "POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\ny"),
     AG_WIRE_OK, 2},
    {"content-length empty", S("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n"),
     AG_WIRE_CL_BAD, 0},
    {"content-length only white space",
     S("POST / HTTP/1.1\r\nContent-Length: \t \r\n\r\n"), AG_WIRE_CL_BAD, 0},
    {"content-length with a plus",
     S("POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n"), AG_WIRE_CL_BAD, 0},
    {"content-length negative",
     S("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n"), AG_WIRE_CL_BAD, 0},
    {"content-length list",
     S("POST / HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n"), AG_WIRE_CL_BAD, 0},
    {"content-length two numbers",
     S("POST / HTTP/1.1\r\nContent-Length: 2 2\r\n\r\n"), AG_WIRE_CL_BAD, 0},
    {"content-length with a letter",
     S("POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\n"), AG_WIRE_CL_BAD, 0},
    {"content-length in hex",
     S("POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n"), AG_WIRE_CL_BAD, 0},
    {"content-length of 2^63",
     S("POST / HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n"),
     AG_WIRE_CL_BAD, 0},
    {"content-length of 2^64",
     S("POST / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n"),
     AG_WIRE_CL_BAD, 0},
};

#define N_STREAMS (sizeof streams / sizeof streams[0])

static void assert_verdict(const struct stream *s, struct verdict v,
                           const char *how)
{
    if (v.fault != s->fault || v.requests != s->requests)
        fail_msg("%s, fed %s: fault %d after %llu requests, expected %d "
                 "after %llu",
                 s->name, how, (int)v.fault, (unsigned long long)v.requests,
                 (int)s->fault, (unsigned long long)s->requests);
}

static void each_stream_fed_whole_gets_its_verdict(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_STREAMS; k++)
        assert_verdict(&streams[k], whole(streams[k].bytes, streams[k].len),
                       "whole");
}

static void a_request_split_at_every_byte_is_judged_the_same(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_STREAMS; k++) {
        const struct stream *s = &streams[k];
        char how[64];
        for (size_t i = 0; i <= s->len; i++) {
            snprintf(how, sizeof how, "split at %zu", i);
            assert_verdict(s, in_three(s->bytes, s->len, i, i), how);
        }
        assert_verdict(s, byte_by_byte(s->bytes, s->len), "byte by byte");
    }
}

static void a_request_cut_in_three_anywhere_is_judged_the_same(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_STREAMS; k++) {
        const struct stream *s = &streams[k];
        char how[64];
        for (size_t i = 0; i <= s->len; i++) {
            for (size_t j = i; j <= s->len; j++) {
                snprintf(how, sizeof how, "cut at %zu and %zu", i, j);
                assert_verdict(s, in_three(s->bytes, s->len, i, j), how);
            }
        }
    }
}

static void bare_lf_in_the_request_line_is_a_fault(void **state)
{
    (void)state;
    assert_int_equal(verdict_of(S("GET / HTTP/1.1\n\r\n")), AG_WIRE_BARE_LF);
    assert_int_equal(verdict_of(S("GET / HTTP/1.1\r\n\r\n")), AG_WIRE_OK);
}

static void bare_cr_is_a_fault_once_the_next_byte_is_not_lf(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    /* The CR ends a piece: its LF may still come. */
    assert_int_equal(ag_wire_feed(&w, S("GET / HTTP/1.1\r")), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("Host: a\r\n\r\n")), AG_WIRE_BARE_CR);
}

static void a_header_line_starting_with_white_space_is_obs_fold(void **state)
{
    (void)state;
    assert_int_equal(verdict_of(S("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n")),
                     AG_WIRE_OBS_FOLD);
    /* The request line is not a header line. */
    assert_int_equal(verdict_of(S("\r\n GET / HTTP/1.1\r\n\r\n")), AG_WIRE_OK);
}

static void a_nul_in_the_head_is_a_fault(void **state)
{
    (void)state;
    assert_int_equal(verdict_of(S("GET / HTTP/1.1\r\nA: \0\r\n\r\n")),
                     AG_WIRE_NUL);
}

static void body_bytes_are_not_judged(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(
        ag_wire_feed(&w, S("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n")),
        AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("\0\n\r \t\n")), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("\r\r\n\0\n\n")), AG_WIRE_OK);
    assert_int_equal(w.requests, 1);
    /* The body is over: the next byte belongs to a head again. */
    assert_int_equal(ag_wire_feed(&w, S("\n")), AG_WIRE_BARE_LF);
}

static void pipelined_requests_are_followed_through_their_bodies(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    /* Three requests in one piece; the second body ends in a CR whose LF
     * would be a head's if the body were miscounted. */
    assert_int_equal(
        ag_wire_feed(&w, S("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                           "POST /b HTTP/1.1\r\nContent-Length: 4\r\n\r\nxy\r\r"
                           "GET /c HTTP/1.1\r\n\r\n")),
        AG_WIRE_OK);
    assert_int_equal(w.requests, 3);
    assert_int_equal(w.body_left, 0);
    /* A fourth head begins and its body is split across pieces. */
    assert_int_equal(
        ag_wire_feed(&w, S("POST /d HTTP/1.1\r\nContent-Length: 5\r\n\r\nab")),
        AG_WIRE_OK);
    assert_int_equal(w.requests, 4);
    assert_int_equal(w.body_left, 3);
    assert_int_equal(ag_wire_feed(&w, S("c\nd")), AG_WIRE_OK);
    assert_int_equal(w.body_left, 0);
    assert_int_equal(ag_wire_feed(&w, S("GET / HTTP/1.1\n")), AG_WIRE_BARE_LF);
}

static void a_second_content_length_is_a_fault_even_when_equal(void **state)
{
    (void)state;
    assert_int_equal(verdict_of(S("POST / HTTP/1.1\r\nContent-Length: 1\r\n"
                                  "content-length: 1\r\n\r\nx")),
                     AG_WIRE_CL_DUP);
}

static void content_length_with_ows_is_accepted(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(
        ag_wire_feed(&w, S("POST / HTTP/1.1\r\nContent-Length:\t 42 \t\r\n")),
        AG_WIRE_OK);
    assert_int_equal(w.cl, 42);
    assert_int_equal(ag_wire_feed(&w, S("\r\n")), AG_WIRE_OK);
    assert_int_equal(w.body_left, 42);
}

static void content_length_digits_split_across_pieces_add_up(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(ag_wire_feed(&w, S("POST / HTTP/1.1\r\nContent-Le")),
                     AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("ngth: 12")), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("34\r")), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("\n\r\n")), AG_WIRE_OK);
    assert_int_equal(w.body_left, 1234);
}

static void content_length_that_is_not_one_number_is_a_fault(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        " ",
        "+1",
        "-1",
        "1,1",
        "2, 2",
        "1 1",
        "1x",
        "x",
        "1.0",
        "9223372036854775808",
        "99999999999999999999999",
    };
    char head[128];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n =
            snprintf(head, sizeof head,
                     "POST / HTTP/1.1\r\nContent-Length: %s\r\n\r\n", bad[i]);
        if (verdict_of(head, (size_t)n) != AG_WIRE_CL_BAD)
            fail_msg("Content-Length: '%s' was not refused", bad[i]);
    }
}

static void
transfer_encoding_other_than_chunked_stops_judging_after_its_head(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(
        ag_wire_feed(&w, S("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n")),
        AG_WIRE_OK);
    /* The head has not ended: its lines are still judged. */
    struct ag_wire copy = w;
    assert_int_equal(ag_wire_feed(&copy, S(" x\r\n")), AG_WIRE_OBS_FOLD);
    assert_int_equal(ag_wire_feed(&w, S("\r\n")), AG_WIRE_UNTRACKED);
    assert_int_equal(w.requests, 1);
    assert_int_equal(ag_wire_feed(&w, S("5\n\0\rGET / HTTP/1.1\n\r\n")),
                     AG_WIRE_UNTRACKED);
    assert_int_equal(w.requests, 1);
}

static void a_chunked_body_is_followed_across_pieces(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(
        ag_wire_feed(&w, S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                           "\r\n1")),
        AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("0\r")), AG_WIRE_OK);
    /* The LF ends the size line: then 10 bytes of 16 that look like lines. */
    assert_int_equal(ag_wire_feed(&w, S("\n\n\n\0\0\r\r 0\r\n")), AG_WIRE_OK);
    assert_int_equal(w.body_left, 6);
    assert_int_equal(ag_wire_feed(&w, S("abcdef\r")), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("\n0\r\n\r")), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("\nGET / HTTP/1.1\r\n")), AG_WIRE_OK);
    assert_int_equal(w.requests, 1);
    assert_int_equal(ag_wire_feed(&w, S("Host: a\r\nHost: b\r\n")),
                     AG_WIRE_HOST_DUP);
}

static void leading_empty_lines_are_allowed(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(ag_wire_feed(&w, S("\r\n\r\n\r")), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("\nGET / HTTP/1.1\r\n\r\n\r\n")),
                     AG_WIRE_OK);
    assert_int_equal(w.requests, 1);
    assert_int_equal(ag_wire_feed(&w, S("\r\nGET / HTTP/1.1\r\n\r\n")),
                     AG_WIRE_OK);
    assert_int_equal(w.requests, 2);
}

static void header_names_match_whole_and_in_any_case(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(
        ag_wire_feed(&w, S("POST / HTTP/1.1\r\ncOnTeNt-LeNgTh: 3\r\n\r\n")),
        AG_WIRE_OK);
    assert_int_equal(w.body_left, 3);
    ag_wire_init(&w);
    assert_int_equal(
        ag_wire_feed(&w, S("POST / HTTP/1.1\r\nContent-Length-X: 3\r\n\r\n")),
        AG_WIRE_OK);
    assert_int_equal(w.body_left, 0);
    ag_wire_init(&w);
    assert_int_equal(
        ag_wire_feed(&w, S("POST / HTTP/1.1\r\nX-Content-Length: 3\r\n\r\n")),
        AG_WIRE_OK);
    assert_int_equal(w.body_left, 0);
}

static void a_fault_sticks(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    /* The first fault in a piece wins over a later one in the same piece. */
    assert_int_equal(ag_wire_feed(&w, S("GET / HTTP/1.1\r\n a\r\n\0\n")),
                     AG_WIRE_OBS_FOLD);
    assert_int_equal(ag_wire_feed(&w, S("\n")), AG_WIRE_OBS_FOLD);
    assert_int_equal(ag_wire_feed(&w, S("\r\nGET / HTTP/1.1\r\n\r\n")),
                     AG_WIRE_OBS_FOLD);
    assert_int_equal(ag_wire_feed(&w, NULL, 0), AG_WIRE_OBS_FOLD);
    assert_int_equal(w.requests, 0);
}

static void ag_wire_init_starts_a_clean_stream(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(ag_wire_feed(&w, S("\0")), AG_WIRE_NUL);
    ag_wire_init(&w);
    assert_int_equal(ag_wire_feed(&w, S("GET / HTTP/1.1\r\n\r\n")), AG_WIRE_OK);
    assert_int_equal(w.requests, 1);
}

static void each_fault_has_its_own_text(void **state)
{
    (void)state;
    for (int f = AG_WIRE_OK; f <= AG_WIRE_UNTRACKED; f++) {
        const char *t = ag_wire_fault_text((enum ag_wire_fault)f);
        assert_non_null(t);
        assert_true(strlen(t) > 10);
        for (int g = AG_WIRE_OK; g < f; g++)
            assert_string_not_equal(t,
                                    ag_wire_fault_text((enum ag_wire_fault)g));
    }
    assert_non_null(strstr(ag_wire_fault_text(AG_WIRE_BARE_LF), "bare LF"));
    assert_non_null(strstr(ag_wire_fault_text(AG_WIRE_OBS_FOLD), "obs-fold"));
    assert_non_null(strstr(ag_wire_fault_text(AG_WIRE_NUL), "NUL"));
    assert_non_null(
        strstr(ag_wire_fault_text(AG_WIRE_CL_DUP), "Content-Length"));
    assert_non_null(strstr(ag_wire_fault_text(AG_WIRE_HOST_DUP), "Host"));
    assert_non_null(
        strstr(ag_wire_fault_text(AG_WIRE_TE_DUP), "Transfer-Encoding"));
    assert_non_null(strstr(ag_wire_fault_text(AG_WIRE_CHUNK_BAD), "chunk"));
}

/* The recv hook asks for the fault so far by feeding nothing, with no
 * buffer: NULL + 0 is undefined behaviour in C (clang's UBSan stops on
 * it), so an empty feed must not touch the pointer. */
static void
an_empty_feed_without_a_buffer_returns_the_fault_so_far(void **state)
{
    (void)state;
    struct ag_wire w;
    ag_wire_init(&w);
    assert_int_equal(ag_wire_feed(&w, NULL, 0), AG_WIRE_OK);
    assert_int_equal(ag_wire_feed(&w, S("GET / HTTP/1.1\n")), AG_WIRE_BARE_LF);
    assert_int_equal(ag_wire_feed(&w, NULL, 0), AG_WIRE_BARE_LF);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_stream_fed_whole_gets_its_verdict),
        cmocka_unit_test(a_request_split_at_every_byte_is_judged_the_same),
        cmocka_unit_test(a_request_cut_in_three_anywhere_is_judged_the_same),
        cmocka_unit_test(bare_lf_in_the_request_line_is_a_fault),
        cmocka_unit_test(bare_cr_is_a_fault_once_the_next_byte_is_not_lf),
        cmocka_unit_test(a_header_line_starting_with_white_space_is_obs_fold),
        cmocka_unit_test(a_nul_in_the_head_is_a_fault),
        cmocka_unit_test(body_bytes_are_not_judged),
        cmocka_unit_test(pipelined_requests_are_followed_through_their_bodies),
        cmocka_unit_test(a_second_content_length_is_a_fault_even_when_equal),
        cmocka_unit_test(content_length_with_ows_is_accepted),
        cmocka_unit_test(content_length_digits_split_across_pieces_add_up),
        cmocka_unit_test(content_length_that_is_not_one_number_is_a_fault),
        cmocka_unit_test(
            transfer_encoding_other_than_chunked_stops_judging_after_its_head),
        cmocka_unit_test(a_chunked_body_is_followed_across_pieces),
        cmocka_unit_test(leading_empty_lines_are_allowed),
        cmocka_unit_test(header_names_match_whole_and_in_any_case),
        cmocka_unit_test(a_fault_sticks),
        cmocka_unit_test(ag_wire_init_starts_a_clean_stream),
        cmocka_unit_test(each_fault_has_its_own_text),
        cmocka_unit_test(
            an_empty_feed_without_a_buffer_returns_the_fault_so_far),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
