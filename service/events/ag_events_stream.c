/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The events' writer to the Redis Stream: the store attached, the XADD
 * of each event, the bounded backlog of appends Redis could not take, and
 * the retry thread that sends it, in order, after a backoff. Calls nothing
 * else of the event source.
 */
#include "ag_events.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_clock.h"
#include "ag_events_impl.h"
#include "ag_log.h"
#include "ag_redis_reply.h"
#include "ag_store.h"

uint64_t ag_events_retry_ms(unsigned failures)
{
    uint64_t ms = AG_EVENTS_RETRY_MIN_MS;
    for (unsigned i = 1; i < failures && ms < AG_EVENTS_RETRY_MAX_MS; i++)
        ms *= 2;
    return ms < AG_EVENTS_RETRY_MAX_MS ? ms : AG_EVENTS_RETRY_MAX_MS;
}

void *ag_events__retry_main(void *arg)
{
    struct ag_events *ev = arg;
    pthread_mutex_lock(&ev->lock);
    while (!ev->stopping) {
        uint64_t now = ag_clock_mono_ms();
        if (!ev->bl_n || ev->flushing) {
            pthread_cond_wait(&ev->wake, &ev->lock);
            continue;
        }
        if (now < ev->retry_at_ms) {
            uint64_t ms = ev->retry_at_ms - now;
            struct timespec until = ag_clock_deadline(ms);
            pthread_cond_timedwait(&ev->wake, &ev->lock, &until);
            continue;
        }
        pthread_mutex_unlock(&ev->lock);
        ag_events__flush(ev);
        pthread_mutex_lock(&ev->lock);
    }
    pthread_mutex_unlock(&ev->lock);
    return NULL;
}

void ag_events__retry_now(struct ag_events *ev)
{
    pthread_mutex_lock(&ev->lock);
    ev->failures = 0;
    ev->retry_at_ms = 0;
    pthread_cond_signal(&ev->wake);
    pthread_mutex_unlock(&ev->lock);
}

void ag_events_attach(struct ag_events *ev, struct ag_store *store)
{
    /* A detach is the service stopping: what waits for Redis has one
     * last try while the old store is still there. */
    if (!store)
        ag_events__flush(ev);
    pthread_rwlock_wrlock(&ev->store_lock);
    ev->store = store;
    pthread_rwlock_unlock(&ev->store_lock);
    /* What was raised before there was a store goes now, not after the
     * backoff its failures built up. */
    if (store)
        ag_events__retry_now(ev);
}

/* Keeps json (owned) for a later append, dropping the oldest if full.
 * With ev->lock held. */
static char *backlog_push_locked(struct ag_events *ev, char *json)
{
    char *dropped = NULL;
    /* While a flush sends the head, a full backlog drops the newest
     * instead: the head stays until its answer. */
    if (ev->bl_n == AG_EVENTS_BACKLOG && ev->flushing)
        return json;
    if (ev->bl_n == AG_EVENTS_BACKLOG) {
        dropped = ev->backlog[ev->bl_head];
        ev->bl_head = (ev->bl_head + 1) % AG_EVENTS_BACKLOG;
        ev->bl_n--;
    }
    ev->backlog[(ev->bl_head + ev->bl_n) % AG_EVENTS_BACKLOG] = json;
    ev->bl_n++;
    return dropped;
}

static void dropped_one(char *dropped)
{
    if (!dropped)
        return;
    ag_log(AG_LOG_WARN, "events_backlog_full",
           "an event waiting for Redis was dropped from the backlog (the "
           "webhooks had it)");
    free(dropped);
}

/* Why an append failed, into why (AG_EVENTS_WHY_MAX bytes): Redis's error
 * reply, or that it did not answer. */
#define AG_EVENTS_WHY_MAX 160
static void failure_text(int rc, const redisReply *r, char *why)
{
    if (rc == AG_OK && r && r->type == REDIS_REPLY_ERROR)
        snprintf(why, AG_EVENTS_WHY_MAX, "Redis answered: %.*s",
                 (int)(r->len < 120 ? r->len : 120), r->str);
    else
        snprintf(why, AG_EVENTS_WHY_MAX,
                 "Redis did not answer (a timeout, a lost connection, or the "
                 "breaker open)");
}

/* An append failed (with ev->lock held): the backlog is tried again after
 * the backoff, and the failure is logged unless one was within
 * AG_EVENTS_LOG_EVERY_MS; true if the caller is to log it. */
static bool failed_locked(struct ag_events *ev, unsigned long *unlogged)
{
    uint64_t now = ag_clock_mono_ms();
    ev->failures++;
    ev->retry_at_ms = now + ag_events_retry_ms(ev->failures);
    pthread_cond_signal(&ev->wake);
    return ag_log_gate_open(&ev->failure_gate, now, AG_EVENTS_LOG_EVERY_MS,
                            unlogged);
}

static void log_failure(const char *why, size_t waiting, unsigned long unlogged)
{
    ag_log(AG_LOG_WARN, "events_append_failed",
           "an event did not reach the stream (%zu waiting, retried with "
           "backoff; %lu more failure(s) since the last line): %s",
           waiting, unlogged, why);
}

int ag_events__store_send(struct ag_events *ev, int argc, const char **argv,
                          ag_store_reply_fn done, void *arg)
{
    size_t lens[AG_EVENTS_ARGS_MAX];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    pthread_rwlock_rdlock(&ev->store_lock);
    int rc = ev->store ? ag_store_command_async(ev->store, argc, argv, lens, 1,
                                                done, arg)
                       : AG_ESTORE;
    pthread_rwlock_unlock(&ev->store_lock);
    return rc;
}

int ag_events__store_call(struct ag_events *ev, int argc, const char **argv,
                          void **reply)
{
    size_t lens[AG_EVENTS_ARGS_MAX];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    pthread_rwlock_rdlock(&ev->store_lock);
    int rc = ev->store ? ag_store_command(ev->store, argc, argv, lens, 1, reply)
                       : AG_ESTORE;
    pthread_rwlock_unlock(&ev->store_lock);
    return rc;
}

/* Sends one XADD of json, calling done(arg) when Redis answers; an error
 * if it could not be sent (done is then not called). */
static int send_xadd(struct ag_events *ev, const char *json,
                     ag_store_reply_fn done, void *arg)
{
    const char *argv[] = {"XADD", AG_EVENTS_STREAM, "MAXLEN", "~", ev->max_len,
                          "*",    "event",          json};
    return ag_events__store_send(ev, 8, argv, done, arg);
}

/* One XADD of json, waited for: AG_OK, or AG_ESTORE with why filled. */
static int xadd_wait(struct ag_events *ev, const char *json, char *why)
{
    const char *argv[] = {"XADD", AG_EVENTS_STREAM, "MAXLEN", "~", ev->max_len,
                          "*",    "event",          json};
    void *reply = NULL;
    int rc = ag_events__store_call(ev, 8, argv, &reply);
    const redisReply *r = reply;
    bool ok = rc == AG_OK && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        failure_text(rc == AG_OK ? AG_OK : AG_ESTORE, r, why);
    ag_redis_reply_free(reply);
    return ok ? AG_OK : AG_ESTORE;
}

/* One flusher at a time, so that the stream keeps the backlog's order: a
 * second caller waits for the first to finish, then sends what is left. */
int ag_events__flush(struct ag_events *ev)
{
    pthread_mutex_lock(&ev->lock);
    while (ev->flushing)
        pthread_cond_wait(&ev->idle, &ev->lock);
    ev->flushing = true;
    int rc = AG_OK;
    size_t sent = 0;
    char why[AG_EVENTS_WHY_MAX];
    while (ev->bl_n) {
        /* The head stays in place while flushing is set
         * (backlog_push_locked never drops it), so it is read here
         * without the lock. */
        char *head = ev->backlog[ev->bl_head];
        pthread_mutex_unlock(&ev->lock);
        rc = xadd_wait(ev, head, why);
        pthread_mutex_lock(&ev->lock);
        if (rc)
            break;
        free(head);
        ev->bl_head = (ev->bl_head + 1) % AG_EVENTS_BACKLOG;
        ev->bl_n--;
        sent++;
    }
    bool log = false, recovered = false;
    unsigned long unlogged = 0;
    size_t waiting = ev->bl_n;
    if (rc) {
        log = failed_locked(ev, &unlogged);
    } else {
        recovered = ev->failures > 0 && sent > 0;
        ev->failures = 0;
        ev->retry_at_ms = 0;
        /* The gate stays as it is: a Redis that flaps still gets one
         * failure line an interval, the next saying how many it held. */
    }
    ev->flushing = false;
    pthread_cond_broadcast(&ev->idle);
    pthread_mutex_unlock(&ev->lock);
    if (log)
        log_failure(why, waiting, unlogged);
    if (recovered)
        ag_log(AG_LOG_INFO, "events_append_recovered",
               "%zu waiting event(s) reached the stream", sent);
    return rc;
}

struct appending {
    struct ag_events *ev;
    char *json; /* owned */
};

/* Into the backlog, for the retry thread, after a failure. */
static void backlog_failed(struct ag_events *ev, char *json, int rc,
                           const redisReply *r)
{
    char why[AG_EVENTS_WHY_MAX];
    failure_text(rc, r, why);
    unsigned long unlogged = 0;
    pthread_mutex_lock(&ev->lock);
    char *dropped = backlog_push_locked(ev, json);
    bool log = failed_locked(ev, &unlogged);
    size_t waiting = ev->bl_n;
    pthread_mutex_unlock(&ev->lock);
    dropped_one(dropped);
    if (log)
        log_failure(why, waiting, unlogged);
}

static void appended(void *arg, int rc, const void *reply)
{
    struct appending *a = arg;
    const redisReply *r = reply;
    if (rc == AG_OK && r->type != REDIS_REPLY_ERROR)
        free(a->json);
    else
        backlog_failed(a->ev, a->json, rc, r);
    free(a);
}

/* Behind the backlog, the retry thread sends it. */
void ag_events__append(struct ag_events *ev, char *json)
{
    pthread_mutex_lock(&ev->lock);
    if (ev->bl_n || ev->flushing) {
        char *dropped = backlog_push_locked(ev, json);
        pthread_cond_signal(&ev->wake);
        pthread_mutex_unlock(&ev->lock);
        dropped_one(dropped);
        return;
    }
    pthread_mutex_unlock(&ev->lock);
    struct appending *a = malloc(sizeof *a);
    if (!a) {
        ag_log(AG_LOG_ERROR, "event_lost",
               "out of memory: an event reached the webhooks only");
        free(json);
        return;
    }
    *a = (struct appending){ev, json};
    int rc = send_xadd(ev, json, appended, a);
    if (rc != AG_OK) {
        free(a);
        backlog_failed(ev, json, rc, NULL);
    }
}
