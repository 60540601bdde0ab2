/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_wire.h"

/*
 * One byte at a time, with everything a line needs carried in struct
 * ag_wire, so that a request split at any byte is judged as if it had
 * arrived whole. Each state below is where the stream stands before the
 * next byte; the three *_CR states hold a CR whose LF is still to come,
 * and which line it ends.
 */
enum state {
    PRE_LINE = 0, /* at the start of a line before a request line */
    PRE_CR,       /* an empty line before a request line, its CR seen */
    REQUEST_LINE, /* inside the request line */
    LINE_CR,      /* the request line or a header line, its CR seen */
    FIELD_START,  /* at the start of a header line or the empty line */
    FIELD_NAME,   /* inside a name that may still be a framing header */
    OTHER_NAME,   /* inside a name that is no framing header */
    FIELD_OTHER,  /* the rest of a line that is not judged further */
    CL_OWS,       /* a Content-Length value, before its digits */
    CL_DIGITS,    /* a Content-Length value, inside its digits */
    CL_TAIL,      /* a Content-Length value, white space after its digits */
    TE_OWS,       /* a Transfer-Encoding value, before its first byte */
    TE_WORD,      /* a Transfer-Encoding value that may be "chunked" */
    TE_TAIL,      /* a Transfer-Encoding value, white space after chunked */
    HEAD_END_CR,  /* the empty line that ends a head, its CR seen */
    BODY,         /* body_left bytes of a body still to pass over */
    /* A chunked body (RFC 9112 7.1): size lines, data, trailer lines. */
    CHUNK_START,    /* at the start of a chunk-size line */
    CHUNK_SIZE,     /* inside the chunk size's hexadecimal digits */
    CHUNK_EXT,      /* a chunk extension, up to the line's end */
    CHUNK_CR,       /* a chunk-size line, its CR seen */
    CHUNK_DATA,     /* body_left bytes of chunk data still to pass over */
    DATA_END,       /* after chunk data, before its CRLF */
    DATA_CR,        /* after chunk data, its CR seen */
    TRAILER_START,  /* at the start of a trailer line or the empty line */
    TRAILER_LINE,   /* inside a trailer line */
    TRAILER_CR,     /* a trailer line, its CR seen */
    TRAILER_END_CR, /* the empty line that ends the body, its CR seen */
};

/* The framing headers, matched case-insensitively and whole; Host too,
 * which a request must hold once (RFC 9112 3.2). */
#define KIND_CL 1u
#define KIND_TE 2u
#define KIND_HOST 4u
static const char CL_NAME[] = "content-length";
static const char TE_NAME[] = "transfer-encoding";
static const char HOST_NAME[] = "host";
#define CL_LEN (sizeof CL_NAME - 1)
#define TE_LEN (sizeof TE_NAME - 1)
#define HOST_LEN (sizeof HOST_NAME - 1)
#define ALL_KINDS (KIND_CL | KIND_TE | KIND_HOST)

/* The one transfer coding followed, and the value that names it alone. */
static const char CHUNKED[] = "chunked";
#define CHUNKED_LEN (sizeof CHUNKED - 1)

/* 2^63 - 1: a larger Content-Length or chunk size is refused, so that
 * it fits in an int64_t (off_t) wherever it goes next. */
#define CL_MAX UINT64_C(0x7fffffffffffffff)

void ag_wire_init(struct ag_wire *w)
{
    w->state = PRE_LINE;
    w->fault = AG_WIRE_OK;
    w->name_pos = 0;
    w->name_kind = 0;
    w->cl_seen = 0;
    w->te_seen = 0;
    w->te_chunked = 0;
    w->host_seen = 0;
    w->cl = 0;
    w->body_left = 0;
    w->requests = 0;
}

static int is_ows(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A head has ended with its empty line: follow it into its body, or stop
 * following the stream (AG_WIRE_UNTRACKED) if the body's length is not
 * known: a Transfer-Encoding other than plain "chunked", or one beside a
 * Content-Length (ag_http refuses both and closes the connection). */
static enum ag_wire_fault end_head(struct ag_wire *w)
{
    w->requests++;
    if (w->te_seen && (w->cl_seen || !w->te_chunked))
        return AG_WIRE_UNTRACKED;
    w->body_left = w->cl_seen ? w->cl : 0;
    if (w->te_seen)
        w->state = CHUNK_START;
    else
        w->state = w->body_left ? BODY : PRE_LINE;
    w->cl_seen = 0;
    w->te_seen = 0;
    w->te_chunked = 0;
    w->host_seen = 0;
    w->cl = 0;
    return AG_WIRE_OK;
}

/* Narrows the names a header name may still be by its next byte c. */
static void match_name(struct ag_wire *w, unsigned char c)
{
    unsigned char l = lower(c);
    if (w->name_pos >= CL_LEN || CL_NAME[w->name_pos] != l)
        w->name_kind &= (uint8_t)~KIND_CL;
    if (w->name_pos >= TE_LEN || TE_NAME[w->name_pos] != l)
        w->name_kind &= (uint8_t)~KIND_TE;
    if (w->name_pos >= HOST_LEN || HOST_NAME[w->name_pos] != l)
        w->name_kind &= (uint8_t)~KIND_HOST;
    w->name_pos++;
    if (!w->name_kind)
        w->state = OTHER_NAME;
}

/* The colon after a header name: is the name one of ours, whole? */
static enum ag_wire_fault end_name(struct ag_wire *w)
{
    if ((w->name_kind & KIND_CL) && w->name_pos == CL_LEN) {
        if (w->cl_seen)
            return AG_WIRE_CL_DUP;
        w->cl_seen = 1;
        w->cl = 0;
        w->state = CL_OWS;
    } else if ((w->name_kind & KIND_TE) && w->name_pos == TE_LEN) {
        /* Two would be read as one list by some parsers and as the
         * first or the last by others. */
        if (w->te_seen)
            return AG_WIRE_TE_DUP;
        w->te_seen = 1;
        w->name_pos = 0; /* now the bytes of "chunked" matched */
        w->state = TE_OWS;
    } else if ((w->name_kind & KIND_HOST) && w->name_pos == HOST_LEN) {
        if (w->host_seen)
            return AG_WIRE_HOST_DUP;
        w->host_seen = 1;
        w->state = FIELD_OTHER;
    } else {
        w->state = FIELD_OTHER;
    }
    return AG_WIRE_OK;
}

/* The next byte of a Content-Length value (never CR, LF or NUL). */
static enum ag_wire_fault cl_byte(struct ag_wire *w, unsigned char c)
{
    if (is_ows(c)) {
        if (w->state == CL_DIGITS)
            w->state = CL_TAIL;
        return AG_WIRE_OK;
    }
    if (c < '0' || c > '9' || w->state == CL_TAIL)
        return AG_WIRE_CL_BAD;
    unsigned d = (unsigned)(c - '0');
    if (w->cl > (CL_MAX - d) / 10)
        return AG_WIRE_CL_BAD;
    w->cl = w->cl * 10 + d;
    w->state = CL_DIGITS;
    return AG_WIRE_OK;
}

/* The next byte of a Transfer-Encoding value (never CR, LF or NUL):
 * te_chunked is set at the line's end if the value was "chunked" alone,
 * in any case, with white space around it. */
static void te_byte(struct ag_wire *w, unsigned char c)
{
    if (w->state == TE_OWS && is_ows(c))
        return;
    if (w->state != TE_TAIL && w->name_pos < CHUNKED_LEN &&
        lower(c) == (unsigned char)CHUNKED[w->name_pos]) {
        w->name_pos++;
        w->state = TE_WORD;
    } else if (w->state != TE_OWS && w->name_pos == CHUNKED_LEN && is_ows(c)) {
        w->state = TE_TAIL;
    } else {
        w->state = FIELD_OTHER; /* not plain chunked */
    }
}

/* One byte of a head (or of the empty lines before one). */
static enum ag_wire_fault head_byte(struct ag_wire *w, unsigned char c)
{
    switch (w->state) {
    case PRE_CR:
    case LINE_CR:
    case HEAD_END_CR:
        if (c != '\n')
            return AG_WIRE_BARE_CR;
        if (w->state == PRE_CR)
            w->state = PRE_LINE;
        else if (w->state == LINE_CR)
            w->state = FIELD_START;
        else
            return end_head(w);
        return AG_WIRE_OK;
    default:
        break;
    }
    if (c == '\n')
        return AG_WIRE_BARE_LF;
    if (c == '\0')
        return AG_WIRE_NUL;
    if (c == '\r') {
        switch (w->state) {
        case PRE_LINE:
            w->state = PRE_CR;
            break;
        case FIELD_START:
            w->state = HEAD_END_CR;
            break;
        case CL_OWS:
            return AG_WIRE_CL_BAD; /* no digits at all */
        case TE_WORD:
        case TE_TAIL:
            w->te_chunked = w->name_pos == CHUNKED_LEN;
            w->state = LINE_CR;
            break;
        default:
            w->state = LINE_CR;
            break;
        }
        return AG_WIRE_OK;
    }
    switch (w->state) {
    case PRE_LINE:
        w->state = REQUEST_LINE;
        break;
    case FIELD_START:
        if (is_ows(c))
            return AG_WIRE_OBS_FOLD;
        w->name_pos = 0;
        w->name_kind = ALL_KINDS;
        w->state = FIELD_NAME;
        if (c == ':')
            return end_name(w);
        match_name(w, c);
        break;
    case FIELD_NAME:
    case OTHER_NAME:
        /* "Content-Length : 5" is read as Content-Length by some
         * parsers and as another name by others (RFC 9112 5.1). */
        if (is_ows(c))
            return AG_WIRE_NAME_SPACE;
        if (c == ':') {
            if (w->state == OTHER_NAME) {
                w->state = FIELD_OTHER;
                return AG_WIRE_OK;
            }
            return end_name(w);
        }
        if (w->state == FIELD_NAME)
            match_name(w, c);
        break;
    case CL_OWS:
    case CL_DIGITS:
    case CL_TAIL:
        return cl_byte(w, c);
    case TE_OWS:
    case TE_WORD:
    case TE_TAIL:
        te_byte(w, c);
        break;
    default: /* REQUEST_LINE, FIELD_OTHER */
        break;
    }
    return AG_WIRE_OK;
}

/* One byte of a chunked body outside chunk data: its size lines, the
 * CRLF after each chunk's data, and the trailer section after the last
 * chunk. Chunk extensions and trailer fields are passed over, but their
 * lines end in CRLF like every other. */
static enum ag_wire_fault chunk_byte(struct ag_wire *w, unsigned char c)
{
    switch (w->state) {
    case CHUNK_CR:
    case DATA_CR:
    case TRAILER_CR:
    case TRAILER_END_CR:
        if (c != '\n')
            return AG_WIRE_BARE_CR;
        if (w->state == CHUNK_CR)
            w->state = w->body_left ? CHUNK_DATA : TRAILER_START;
        else if (w->state == DATA_CR)
            w->state = CHUNK_START;
        else if (w->state == TRAILER_CR)
            w->state = TRAILER_START;
        else
            w->state = PRE_LINE; /* the request has ended */
        return AG_WIRE_OK;
    default:
        break;
    }
    if (c == '\n')
        return AG_WIRE_BARE_LF;
    if (c == '\0')
        return AG_WIRE_NUL;
    int d = hex_value(c);
    switch (w->state) {
    case CHUNK_START:
    case CHUNK_SIZE:
        if (d >= 0) {
            if (w->body_left > (CL_MAX - (unsigned)d) / 16)
                return AG_WIRE_CHUNK_BAD;
            w->body_left = w->body_left * 16 + (unsigned)d;
            w->state = CHUNK_SIZE;
        } else if (w->state == CHUNK_SIZE && c == ';') {
            w->state = CHUNK_EXT;
        } else if (w->state == CHUNK_SIZE && c == '\r') {
            w->state = CHUNK_CR;
        } else {
            return AG_WIRE_CHUNK_BAD; /* no digits, or not a digit */
        }
        return AG_WIRE_OK;
    case CHUNK_EXT:
        if (c == '\r')
            w->state = CHUNK_CR;
        return AG_WIRE_OK;
    case DATA_END:
        if (c != '\r')
            return AG_WIRE_CHUNK_BAD; /* more data than the size said */
        w->state = DATA_CR;
        return AG_WIRE_OK;
    case TRAILER_START:
        if (is_ows(c))
            return AG_WIRE_OBS_FOLD;
        w->state = c == '\r' ? TRAILER_END_CR : TRAILER_LINE;
        return AG_WIRE_OK;
    default: /* TRAILER_LINE */
        if (c == '\r')
            w->state = TRAILER_CR;
        return AG_WIRE_OK;
    }
}

enum ag_wire_fault ag_wire_feed(struct ag_wire *w, const char *p, size_t n)
{
    /* p may be NULL when n is 0, and NULL + 0 is undefined in C. */
    if (!n)
        return (enum ag_wire_fault)w->fault;
    const unsigned char *c = (const unsigned char *)p;
    const unsigned char *end = c + n;
    while (!w->fault && c < end) {
        if (w->state == BODY || w->state == CHUNK_DATA) {
            size_t have = (size_t)(end - c);
            size_t skip = w->body_left < have ? (size_t)w->body_left : have;
            c += skip;
            w->body_left -= skip;
            if (!w->body_left)
                w->state = w->state == BODY ? PRE_LINE : DATA_END;
            continue;
        }
        w->fault = (uint8_t)(w->state >= CHUNK_START ? chunk_byte(w, *c++)
                                                     : head_byte(w, *c++));
    }
    return (enum ag_wire_fault)w->fault;
}

const char *ag_wire_fault_text(enum ag_wire_fault f)
{
    switch (f) {
    case AG_WIRE_OK:
        return "the request stream is well framed";
    case AG_WIRE_BARE_LF:
        return "a line of the request ends with a bare LF (CRLF is required)";
    case AG_WIRE_BARE_CR:
        return "the request holds a CR that is not followed by LF";
    case AG_WIRE_OBS_FOLD:
        return "a header line starts with white space (obs-fold is not "
               "accepted)";
    case AG_WIRE_NUL:
        return "a line of the request (the request line, a header, a "
               "chunk-size or trailer line) holds a NUL byte";
    case AG_WIRE_CL_DUP:
        return "more than one Content-Length header";
    case AG_WIRE_NAME_SPACE:
        return "a header name holds white space (none is allowed before "
               "the colon)";
    case AG_WIRE_CL_BAD:
        return "Content-Length is not a decimal number below 2^63";
    case AG_WIRE_HOST_DUP:
        return "more than one Host header";
    case AG_WIRE_TE_DUP:
        return "more than one Transfer-Encoding header";
    case AG_WIRE_CHUNK_BAD:
        return "a chunk of the body is malformed: its size is not a "
               "hexadecimal number below 2^63, or its data is not followed "
               "by CRLF";
    case AG_WIRE_UNTRACKED:
        return "the request uses a Transfer-Encoding other than chunked, or "
               "with Content-Length, so the stream is not followed past its "
               "head";
    }
    return "the request stream is malformed";
}
