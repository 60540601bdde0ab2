/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /admin/events: paging through the stream (XRANGE), after the
 * backlog was sent, past entries that hold no event.
 */
#include "ag_events.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_events_impl.h"
#include "ag_redis_reply.h"

/* Parses a stream id "ms-seq" (both decimal); false if it is not one. */
static bool parse_id(const char *s, uint64_t *ms, uint64_t *seq)
{
    char *end;
    if (!isdigit((unsigned char)s[0]))
        return false;
    errno = 0;
    *ms = strtoull(s, &end, 10);
    if (errno || *end != '-' || !isdigit((unsigned char)end[1]))
        return false;
    *seq = strtoull(end + 1, &end, 10);
    return !errno && !*end;
}

/* One stream entry [id, [field, value, ...]] as its event with its
 * stream_id, or NULL if it holds none that parses. */
static json_t *entry_event(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_ARRAY)
        return NULL;
    const redisReply *f = r->element[1];
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        if (f->element[i]->type != REDIS_REPLY_STRING ||
            strcmp(f->element[i]->str, "event") != 0 ||
            f->element[i + 1]->type != REDIS_REPLY_STRING)
            continue;
        json_t *e =
            json_loadb(f->element[i + 1]->str, f->element[i + 1]->len, 0, NULL);
        if (json_is_object(e) &&
            json_object_set_new(e, "stream_id",
                                json_string(r->element[0]->str)) == 0)
            return e;
        json_decref(e);
    }
    return NULL;
}

/* XRANGE of up to count entries from start: AG_OK and *reply (an array),
 * or AG_ESTORE with err saying why. */
static int xrange(struct ag_events *ev, const char *start, long long count,
                  redisReply **reply, struct ag_error *err)
{
    char n[24];
    snprintf(n, sizeof n, "%lld", count);
    const char *argv[] = {"XRANGE", AG_EVENTS_STREAM, start, "+", "COUNT", n};
    void *got = NULL;
    int rc = ag_events__store_call(ev, 6, argv, &got);
    redisReply *r = got;
    if (rc == AG_OK && r->type == REDIS_REPLY_ARRAY) {
        *reply = r;
        return AG_OK;
    }
    /* Redis's own words where it answered (a stream key of another
     * type, say): "does not answer" would send the operator elsewhere. */
    if (rc == AG_OK && r->type == REDIS_REPLY_ERROR)
        ag_error_fill(err, AG_ESTORE, NULL,
                      "the event stream cannot be read: Redis answered %.*s",
                      (int)(r->len < 120 ? r->len : 120), r->str);
    else
        ag_error_fill(err, AG_ESTORE, NULL,
                      "the event stream cannot be read while Redis does not "
                      "answer");
    ag_redis_reply_free(got);
    return AG_ESTORE;
}

/* The stream id just after ms-seq into out (48 bytes): XRANGE's "(" needs
 * Redis 6.2. False if there is none (ms-seq is the largest id). */
static bool id_after(uint64_t ms, uint64_t seq, char *out)
{
    if (seq < UINT64_MAX)
        snprintf(out, 48, "%" PRIu64 "-%" PRIu64, ms, seq + 1);
    else if (ms < UINT64_MAX)
        snprintf(out, 48, "%" PRIu64 "-0", ms + 1);
    else
        return false;
    return true;
}

int ag_events_read(struct ag_events *ev, const char *after, long long limit,
                   json_t **out, struct ag_error *err)
{
    *out = NULL;
    uint64_t ms = 0, seq = 0;
    if (after && !parse_id(after, &ms, &seq))
        return ag_error_set(err, AG_EINVAL, "after",
                            "after must be a stream id such as "
                            "1700000000000-0 (a next_after)");
    if (limit < 1 || limit > AG_EVENTS_PAGE_MAX)
        return ag_error_set(err, AG_EINVAL, "limit",
                            "limit must be an integer from 1 to %d",
                            AG_EVENTS_PAGE_MAX);
    /* What waits in the backlog first, so that a reader sees every event
     * Redis can take now; if it cannot, the page is still what it holds. */
    pthread_mutex_lock(&ev->lock);
    bool waiting = ev->bl_n > 0;
    pthread_mutex_unlock(&ev->lock);
    if (waiting)
        ag_events__flush(ev);
    json_t *events = json_array();
    char start[48], last[48];
    snprintf(last, sizeof last, "%s", after ? after : "0-0");
    bool more = true;
    if (!after)
        snprintf(start, sizeof start, "-");
    else
        more = id_after(ms, seq, start);
    /* Entries that hold no event (not written by abuseguard) are skipped
     * but paged past, and the read goes on past them: a page is empty only
     * at the end of the stream. The stream's cap bounds the skipping. */
    size_t skipped = 0;
    while (events && more && json_array_size(events) == 0 &&
           skipped <= ev->max_entries) {
        redisReply *r = NULL;
        if (xrange(ev, start, limit, &r, err)) {
            json_decref(events);
            return AG_ESTORE;
        }
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *x = r->element[i];
            json_t *e = entry_event(x);
            if (e)
                json_array_append_new(events, e);
            else
                skipped++;
            if (x->type == REDIS_REPLY_ARRAY && x->elements == 2 &&
                x->element[0]->type == REDIS_REPLY_STRING)
                snprintf(last, sizeof last, "%s", x->element[0]->str);
        }
        more = r->elements == (size_t)limit && parse_id(last, &ms, &seq) &&
               id_after(ms, seq, start);
        ag_redis_reply_free(r);
    }
    *out = events ? json_pack("{s:o,s:s}", "events", events, "next_after", last)
                  : NULL;
    return *out ? AG_OK : ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
}
