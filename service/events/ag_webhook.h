/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Webhook delivery of the security events (ag_events): each receiver
 * (--webhook-url) has its own bounded queue and its own delivery thread
 * with one libcurl handle, so that each receiver gets its events in the
 * order they were pushed, one POST in flight at a time, and a slow or dead
 * receiver holds up nobody else and never a check (pushing is a copy
 * under the receiver's lock).
 *
 * Every POST carries the event's JSON as its body, and
 * "X-Abuseguard-Signature: t=<Unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>">" keyed by the webhook secret: the time is signed with the
 * body (Stripe's and Slack's scheme), so that a receiver can refuse a
 * delivery replayed later (docs/events.md tells it to allow 5 minutes).
 * Each try is signed afresh with its own time, as Stripe does: a retry
 * an hour later is not refused as a replay. Delivery is at least once: an event
 * stays at the head of its queue until the receiver answers 2xx; a failure (a
 * non-2xx answer, a refused connection, a timeout of AG_WEBHOOK_TIMEOUT_MS) is
 * retried after ag_webhook_backoff_ms, until the event is older than
 * max_age_s: it is then dropped and counted. A full queue drops its oldest
 * event (counted) to make room: during an attack the newest events matter
 * most, and the oldest are the nearest their age limit. What is queued at
 * shutdown is dropped (counted); the stream keeps every event.
 *
 * Thread-safety: ag_webhooks_push from any thread; new and free from one.
 * The queue type is not thread-safe (its receiver's lock guards it); it is
 * public for the unit tests of its bounds.
 */
#ifndef AG_WEBHOOK_H
#define AG_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_error.h"

#define AG_WEBHOOKS_MAX 8          /* --webhook-url given at most */
#define AG_WEBHOOK_URL_MAX 1024    /* bytes of one URL, with its NUL */
#define AG_WEBHOOK_QUEUE_MAX 10000 /* events queued per receiver at most */
/* Connect and whole-request timeout of one POST: small, so that a hung
 * receiver costs a retry, and a shutdown waits this long at most. */
#define AG_WEBHOOK_TIMEOUT_MS 2000
#define AG_WEBHOOK_BACKOFF_MIN_MS 500
#define AG_WEBHOOK_BACKOFF_MAX_MS 30000
/* "webhook_queue_full" and "webhook_dropped" are each written once in this
 * long per receiver at most (with a count of those held back); the
 * dropped counter counts every one. */
#define AG_WEBHOOK_LOG_EVERY_MS 10000
/* "t=", at most 20 digits, ",v1=" and 64 hex digits, without the NUL. */
#define AG_WEBHOOK_SIGNATURE_MAX (2 + 20 + 4 + 64)

struct ag_metrics;
struct ag_webhooks;

struct ag_webhook_opts {
    const char *const *urls;  /* copied */
    size_t n;                 /* 1 to AG_WEBHOOKS_MAX */
    const unsigned char *key; /* the HMAC key, copied (and wiped on free) */
    size_t key_len;
    unsigned max_age_s;         /* an event older is dropped, not retried */
    size_t queue_max;           /* 0: AG_WEBHOOK_QUEUE_MAX */
    struct ag_metrics *metrics; /* borrowed, may be NULL */
    /* The body sent for a body pushed, made on the delivery thread at each
     * try (a check's thread only copies): a malloc'd string, NULL when out
     * of memory (tried again after a back-off). NULL render: the body as
     * pushed. The signature covers the body sent. */
    char *(*render)(const char *body, size_t len);
};

/* Starts one delivery thread per URL. AG_OK and *out, AG_EINVAL (a bad
 * count or an empty key), or AG_ENOMEM (memory, threads, libcurl). Free
 * with ag_webhooks_free. */
int ag_webhooks_new(const struct ag_webhook_opts *o, struct ag_webhooks **out);
/* Queues a copy of body for every receiver; never waits for one. NULL w
 * does nothing. */
void ag_webhooks_push(struct ag_webhooks *w, const char *body, size_t len);
/* Stops every thread (a POST in flight is abandoned) and frees w; what is
 * still queued is counted as dropped. NULL is allowed. */
void ag_webhooks_free(struct ag_webhooks *w);

/* Judges url as a receiver's address before anything is delivered, with
 * libcurl's URL parser, the one each POST goes through: it must hold no
 * control character (a newline would end the request line), be http://
 * or https:// with a non-empty host, and give a port, if any, of 1 to
 * 65535. AG_OK, with *credential set when it holds a user or a password
 * (which a file that others can read must not hold); or AG_EINVAL, with
 * err's field flag and a message "--<flag>: <why>" that quotes no part of
 * url (it may hold a credential). */
int ag_webhook_url_check(const char *url, const char *flag, bool *credential,
                         struct ag_error *err);

/* Writes the signature of body sent at t (Unix seconds) into out, which
 * holds AG_WEBHOOK_SIGNATURE_MAX + 1 bytes: "t=<t>,v1=" and the hex
 * HMAC-SHA256 of "<t>.<body>" keyed by key. */
void ag_webhook_sign(const unsigned char *key, size_t key_len, uint64_t t,
                     const char *body, size_t len,
                     char out[AG_WEBHOOK_SIGNATURE_MAX + 1]);

/* The wait before the next try after failures failed ones in a row (1 or
 * more): AG_WEBHOOK_BACKOFF_MIN_MS, doubling, at most
 * AG_WEBHOOK_BACKOFF_MAX_MS. */
uint64_t ag_webhook_backoff_ms(unsigned failures);

/* A bounded FIFO of bodies, each with the time it was queued. */
struct ag_webhook_queue;

/* NULL when out of memory; max is at least 1. */
struct ag_webhook_queue *ag_webhook_queue_new(size_t max);
void ag_webhook_queue_free(struct ag_webhook_queue *q);
/* Appends a copy of body queued at at_ms; returns how many of the oldest
 * were dropped to make room (0 or 1), or AG_ENOMEM (nothing changed). */
int ag_webhook_queue_push(struct ag_webhook_queue *q, const char *body,
                          size_t len, uint64_t at_ms);
/* The oldest entry, borrowed until the next push or pop: false if
 * empty. seq numbers entries in push order, so that a sender can tell
 * whether the head it sent is still the head. */
bool ag_webhook_queue_peek(const struct ag_webhook_queue *q, const char **body,
                           size_t *len, uint64_t *at_ms, uint64_t *seq);
/* Drops the oldest entry (nothing if empty). */
void ag_webhook_queue_pop(struct ag_webhook_queue *q);
size_t ag_webhook_queue_len(const struct ag_webhook_queue *q);

#endif
