/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event source: its life cycle, raising an event (stamped, counted,
 * logged, pushed to the webhooks, appended to the stream through
 * ag_events_stream.c), and the once-per-lockout markers behind the
 * lockout, conversion_block, password_spray and block_escalated events.
 */
#include "ag_events.h"
#include "ag_challenge.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "ag_clock.h"
#include "ag_events_impl.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_store.h"
#include "ag_webhook.h"

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int ag_events_new(const struct ag_events_opts *o, struct ag_events **out)
{
    struct ag_events *ev = calloc(1, sizeof *ev);
    if (!ev)
        return AG_ENOMEM;
    /* The metrics know no event type: they are handed the names, and
     * list every type, zeros too, in this order. */
    const char *names[AG_EV_COUNT];
    for (int t = 0; t < AG_EV_COUNT; t++)
        names[t] = ag_event_type_name((enum ag_event_type)t);
    ag_metrics_name_events(o->metrics, names, AG_EV_COUNT);
    ev->metrics = o->metrics;
    ev->hooks = o->hooks;
    ev->max_entries = o->max_len ? o->max_len : AG_EVENTS_MAX_LEN_DEFAULT;
    snprintf(ev->max_len, sizeof ev->max_len, "%u", ev->max_entries);
    unsigned char id[8];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(ev->instance, sizeof ev->instance, id, sizeof id);
    atomic_init(&ev->seq, 0);
    pthread_rwlock_init(&ev->store_lock, NULL);
    pthread_mutex_init(&ev->lock, NULL);
    pthread_cond_init(&ev->idle, NULL);
    ag_clock_cond_init(&ev->wake);
    if (pthread_create(&ev->retry, NULL, ag_events__retry_main, ev) != 0) {
        ag_events_free(ev);
        return AG_ENOMEM;
    }
    ev->retry_started = true;
    *out = ev;
    return AG_OK;
}

void ag_events_free(struct ag_events *ev)
{
    if (!ev)
        return;
    if (ev->retry_started) {
        pthread_mutex_lock(&ev->lock);
        ev->stopping = true;
        pthread_cond_signal(&ev->wake);
        pthread_mutex_unlock(&ev->lock);
        pthread_join(ev->retry, NULL);
    }
    pthread_rwlock_wrlock(&ev->store_lock);
    ev->store = NULL;
    pthread_rwlock_unlock(&ev->store_lock);
    if (ev->bl_n)
        ag_log(AG_LOG_WARN, "events_backlog_lost",
               "%zu event(s) never reached the stream", ev->bl_n);
    for (size_t i = 0; i < ev->bl_n; i++)
        free(ev->backlog[(ev->bl_head + i) % AG_EVENTS_BACKLOG]);
    pthread_cond_destroy(&ev->wake);
    pthread_cond_destroy(&ev->idle);
    pthread_mutex_destroy(&ev->lock);
    pthread_rwlock_destroy(&ev->store_lock);
    free(ev);
}

void ag_events_raise(struct ag_events *ev, struct ag_event *e)
{
    if (!ev)
        return;
    uint64_t seq = atomic_fetch_add(&ev->seq, 1) + 1;
    snprintf(e->id, sizeof e->id, "%s-%" PRIu64, ev->instance, seq);
    e->time_ms = wall_ms();
    char *json = ag_event_json(e);
    if (!json) {
        ag_log(AG_LOG_ERROR, "event_lost", "type=%s: out of memory",
               ag_event_type_name(e->type));
        return;
    }
    ag_metrics_event(ev->metrics, ag_event_type_name(e->type));
    ag_log(AG_LOG_INFO, "security_event", "type=%s id=%s policy=%s key=%s",
           ag_event_type_name(e->type), e->id, e->policy[0] ? e->policy : "-",
           e->key[0] ? e->key : "-");
    ag_webhooks_push(ev->hooks, json, strlen(json));
    ag_events__append(ev, json);
}

/* FNV-1a: the local table's hash of a marker key. */
static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h ? h : 1;
}

#define PROBES 8

/* "SET NX PX" in one of this instance's tables (tab, under ev->lock):
 * true if no live marker of key was there (one is then set for ttl_ms).
 * A full neighbourhood overwrites the marker that lapses first: at worst
 * a lockout is told twice, or Redis asked once more. */
static bool table_first(struct ag_events *ev, struct ag_events_mark *tab,
                        const char *key, uint64_t ttl_ms)
{
    uint64_t h = hash_key(key), now = ag_clock_mono_ms();
    size_t at = (size_t)(h % AG_EVENTS_LOCAL_MARKS), victim = at;
    bool first = true;
    pthread_mutex_lock(&ev->lock);
    for (size_t i = 0; i < PROBES; i++) {
        struct ag_events_mark *m = &tab[(at + i) % AG_EVENTS_LOCAL_MARKS];
        if (m->hash == h && m->until_ms > now) {
            first = false;
            break;
        }
        if (m->until_ms < tab[victim].until_ms)
            victim = (at + i) % AG_EVENTS_LOCAL_MARKS;
    }
    if (first)
        tab[victim] = (struct ag_events_mark){h, now + ttl_ms};
    pthread_mutex_unlock(&ev->lock);
    return first;
}

static void table_clear(struct ag_events *ev, struct ag_events_mark *tab,
                        const char *key)
{
    uint64_t h = hash_key(key);
    size_t at = (size_t)(h % AG_EVENTS_LOCAL_MARKS);
    pthread_mutex_lock(&ev->lock);
    for (size_t i = 0; i < PROBES; i++) {
        struct ag_events_mark *m = &tab[(at + i) % AG_EVENTS_LOCAL_MARKS];
        if (m->hash == h)
            m->until_ms = 0;
    }
    pthread_mutex_unlock(&ev->lock);
}

/* The stand-in for the Redis marker while Redis cannot judge. */
static bool local_first(struct ag_events *ev, const char *key, uint64_t ttl_ms)
{
    return table_first(ev, ev->marks, key, ttl_ms);
}

/* A denial waiting for its marker's answer: the event it would raise. */
struct marking {
    struct ag_events *ev;
    char key[AG_STORE_KEY_MAX];   /* the marker's */
    char level[AG_STORE_KEY_MAX]; /* the policy's level key; "": none */
    uint64_t ttl_ms;
    struct ag_event e;
};

/* Raises m's lockout, and block_escalated beside it above level 1. */
static void raise_marked(struct marking *m)
{
    ag_events_raise(m->ev, &m->e);
    if (m->e.level > 1) {
        struct ag_event esc = m->e;
        esc.type = AG_EV_BLOCK_ESCALATED;
        ag_events_raise(m->ev, &esc);
    }
}

/* The level key's answer: the block's level, then the events. */
static void leveled(void *arg, int rc, const void *reply)
{
    struct marking *m = arg;
    const redisReply *r = reply;
    /* Anything but a level (an error, a timeout, no key: it lapsed or was
     * reset meanwhile) leaves the level unknown, as without Redis. */
    m->e.level = rc == AG_OK && r->type == REDIS_REPLY_STRING
                     ? ag_event_level_parse(r->str, r->len)
                     : 0;
    raise_marked(m);
    free(m);
}

/* Asks for the level of m's block where its policy's blocks grow, then
 * raises; raises at once where they do not. Frees m. */
static void raise_lockout(struct marking *m)
{
    if (m->level[0]) {
        /* m may be freed by leveled as soon as the GET is sent. */
        const char *argv[] = {"GET", m->level};
        if (ag_events__store_send(m->ev, 2, argv, leveled, m) == AG_OK)
            return;
        m->e.level = 0; /* not known */
    }
    raise_marked(m);
    free(m);
}

static void marked(void *arg, int rc, const void *reply)
{
    struct marking *m = arg;
    const redisReply *r = reply;
    if (rc == AG_OK && r->type == REDIS_REPLY_STATUS) {
        raise_lockout(m); /* OK: this denial began the lockout */
        return;
    }
    if (rc != AG_OK || r->type == REDIS_REPLY_ERROR) {
        /* Redis did not judge it (gone, or refusing writes): this
         * instance does, as while the breaker is open; the level is not
         * known then. */
        m->e.level = m->level[0] ? 0 : m->e.level;
        if (local_first(m->ev, m->key, m->ttl_ms))
            raise_marked(m);
    }
    free(m);
}

void ag_events_denied(struct ag_events *ev, const struct ag_plan *plan,
                      const struct ag_limit_result *res, bool degraded)
{
    if (!ev)
        return;
    for (size_t i = 0; i < plan->n; i++) {
        const struct ag_limit_op *op = &plan->ops[i];
        const struct ag_policy *p = op->policy;
        /* A nonce used twice is no lockout of anyone: the check is asked
         * for a challenge again, and counted (ag_metrics_pass). */
        if (res[i].allowed || op->shadow || p->algorithm == AG_ALG_SIGNAL ||
            p == ag_challenge_policy())
            continue;
        char key[AG_STORE_KEY_MAX];
        ag_limiter_mark_key(op, key);
        /* A marker asked for within the last AG_EVENTS_ASKED_MS lives on
         * (each lives a second at least), so a flood of denials of one
         * key costs Redis one SET a second, not one each, and nothing is
         * built for it. */
        if (!degraded && !table_first(ev, ev->asked, key, AG_EVENTS_ASKED_MS))
            continue;
        struct marking *m = calloc(1, sizeof *m);
        if (!m)
            continue;
        memcpy(m->key, key, sizeof m->key);
        m->ev = ev;
        /* The marker lives as long as the denial: the next one after it
         * lapses, once the key was allowed again, is a new lockout. A
         * spray's lives a window at least (ag_events.h). */
        bool spray = ag_event_spray_policy(p);
        uint64_t floor_ms = spray ? (uint64_t)p->window_s * 1000 : 1000;
        m->ttl_ms =
            res[i].retry_after_ms > floor_ms ? res[i].retry_after_ms : floor_ms;
        struct ag_event *e = &m->e;
        ag_event_init(e, spray ? AG_EV_PASSWORD_SPRAY
                         : p->algorithm == AG_ALG_CONVERSION
                             ? AG_EV_CONVERSION_BLOCK
                             : AG_EV_LOCKOUT);
        snprintf(e->policy, sizeof e->policy, "%s", p->name);
        memcpy(e->ref, plan->ref, sizeof e->ref);
        ag_event_network(e, &plan->net);
        e->endpoint = (int)p->endpoint;
        ag_event_key_digest(op->key, e->key);
        snprintf(e->action, sizeof e->action, "%s",
                 p->action == AG_ACTION_CHALLENGE ? "challenge" : "deny");
        e->retry_after_s = ag_limiter_seconds(res[i].retry_after_ms);
        /* A block's level: 1 without growth; with it, what the level key
         * says once the marker is set. */
        e->level = p->block_s ? 1 : 0;
        if (p->block_s && p->block_growth > 1)
            ag_limiter_level_key(op, m->level);
        char ttl[24];
        snprintf(ttl, sizeof ttl, "%" PRIu64, m->ttl_ms);
        const char *argv[] = {"SET", m->key, "1", "NX", "PX", ttl};
        if (!degraded && ag_events__store_send(ev, 6, argv, marked, m) == AG_OK)
            continue;
        /* Without Redis the level of a growing block is not known. */
        if (m->level[0])
            e->level = 0;
        if (local_first(ev, m->key, m->ttl_ms))
            raise_marked(m);
        free(m);
    }
}

void ag_events_cleared(struct ag_events *ev, const struct ag_plan *plan)
{
    if (!ev)
        return;
    /* The store's clear deletes the Redis marker with the key's other
     * state, in the same DEL (a reset the store refused is queued and
     * sent later; a success report's refused clear is not, and the marker
     * then lapses with its TTL, as the state does); what this instance
     * remembers of it goes here. */
    for (size_t i = 0; i < plan->n; i++) {
        char key[AG_STORE_KEY_MAX];
        ag_limiter_mark_key(&plan->ops[i], key);
        table_clear(ev, ev->marks, key);
        table_clear(ev, ev->asked, key);
    }
}

void ag_events_breaker(void *arg, bool open)
{
    struct ag_events *ev = arg;
    struct ag_event e;
    ag_event_init(&e, open ? AG_EV_BREAKER_OPEN : AG_EV_BREAKER_CLOSED);
    /* What waited for Redis is sent now rather than after its backoff;
     * this event goes behind it, so that the stream keeps the order in
     * which they happened. */
    if (!open)
        ag_events__retry_now(ev);
    ag_events_raise(ev, &e);
}
