/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the event source: what ag_events.c (the life cycle, raising,
 * once-per-lockout markers), ag_events_stream.c (the attached store, the
 * backlog and its retry thread) and ag_events_read.c (paging the stream)
 * share, and no other module may use. ag_events_stream.c calls neither of
 * the others; they call it.
 *
 * Thread-safety as in ag_events.h: store is read under store_lock (a
 * read lock) and swapped under its write lock; every other field from
 * lock on is guarded by lock.
 */
#ifndef AG_EVENTS_IMPL_H
#define AG_EVENTS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_events.h"
#include "ag_log.h"
#include "ag_store.h"

/* A marker this instance set while Redis could not answer: the 64-bit
 * hash of its key and when it lapses. */
struct ag_events_mark {
    uint64_t hash;
    uint64_t until_ms;
};

struct ag_events {
    struct ag_metrics *metrics;
    struct ag_webhooks *hooks;
    char max_len[24];         /* the stream's cap, as XADD's argument */
    unsigned max_entries;     /* the same, as a number */
    char instance[17];        /* random hex: ids unique across instances */
    atomic_uint_fast64_t seq; /* with instance, each event's id */
    /* Readers use store; ag_events_attach writes it, so that a detach
     * waits for every call into the old store to return. */
    pthread_rwlock_t store_lock;
    struct ag_store *store;
    pthread_mutex_t lock;             /* guards what follows */
    char *backlog[AG_EVENTS_BACKLOG]; /* a ring of owned JSON texts */
    size_t bl_head, bl_n;
    bool flushing;       /* a flusher sends the head: it stays until done */
    pthread_cond_t idle; /* flushing went false */
    /* The retry thread: it sends the backlog at retry_at_ms (monotonic),
     * failures appends in a row having failed. */
    pthread_cond_t wake;
    pthread_t retry;
    bool retry_started, stopping;
    unsigned failures;
    uint64_t retry_at_ms;
    /* The failure log's gate: when the next line may be written, and the
     * failures not logged since the last one. */
    struct ag_log_gate failure_gate;
    struct ag_events_mark marks[AG_EVENTS_LOCAL_MARKS];
    /* The markers this instance asked Redis for in the last
     * AG_EVENTS_ASKED_MS: not asked again meanwhile. */
    struct ag_events_mark asked[AG_EVENTS_LOCAL_MARKS];
};

/* The retry thread's body (arg: the struct ag_events): sends the backlog
 * whenever it holds events and its retry time has come, until stopping. */
void *ag_events__retry_main(void *arg);
/* Has the retry thread send the backlog now, its backoff forgotten: Redis
 * is there again. */
void ag_events__retry_now(struct ag_events *ev);
/* Sends the backlog, oldest first, each XADD waited for: AG_OK once it is
 * empty, AG_ESTORE when one failed (the rest waits for the retry). */
int ag_events__flush(struct ag_events *ev);
/* Appends json (owned) to the stream: behind the backlog if one waits, or
 * at once, into the backlog if Redis cannot take it. */
void ag_events__append(struct ag_events *ev, char *json);

/* A command of argc (at most AG_EVENTS_ARGS_MAX) C strings, its key
 * argv[1], to the store attached (AG_ESTORE while none): sent, to end in
 * done(arg), which is not called if this returns an error; or, with
 * ag_events__store_call, waited for (*reply: free with
 * ag_redis_reply_free). */
#define AG_EVENTS_ARGS_MAX 8
int ag_events__store_send(struct ag_events *ev, int argc, const char **argv,
                          ag_store_reply_fn done, void *arg);
int ag_events__store_call(struct ag_events *ev, int argc, const char **argv,
                          void **reply);

#endif
