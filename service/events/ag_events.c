/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_events.h"

#include <ctype.h>
#include <errno.h>
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
#include "ag_endpoint.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_reply.h"
#include "ag_store.h"
#include "ag_webhook.h"

static const char *const type_names[AG_EV_COUNT] = {
    [AG_EV_LOCKOUT] = "lockout",
    [AG_EV_BLOCK_ESCALATED] = "block_escalated",
    [AG_EV_CONVERSION_BLOCK] = "conversion_block",
    [AG_EV_RESET] = "reset",
    [AG_EV_POLICY_CHANGED] = "policy_changed",
    [AG_EV_LIST_CHANGED] = "list_changed",
    [AG_EV_BREAKER_OPEN] = "breaker_open",
    [AG_EV_BREAKER_CLOSED] = "breaker_closed",
};

const char *ag_event_type_name(enum ag_event_type t)
{
    return t >= 0 && t < AG_EV_COUNT ? type_names[t] : "unknown";
}

void ag_event_init(struct ag_event *e, enum ag_event_type type)
{
    memset(e, 0, sizeof *e);
    e->type = type;
    e->endpoint = -1;
}

/* Adds key: value to o unless v is NULL (out of memory) */
static int set_new(json_t *o, const char *key, json_t *v)
{
    return v ? json_object_set_new(o, key, v) : -1;
}

char *ag_event_json(const struct ag_event *e)
{
    time_t secs = (time_t)(e->time_ms / 1000);
    struct tm tm;
    char when[32];
    gmtime_r(&secs, &tm);
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03uZ",
             (unsigned)(e->time_ms % 1000));
    json_t *o = json_object();
    int bad = !o;
    bad = bad || set_new(o, "id", json_string(e->id));
    bad = bad || set_new(o, "type", json_string(ag_event_type_name(e->type)));
    bad = bad || set_new(o, "time", json_string(when));
    if (!bad && e->policy[0])
        bad = set_new(o, "policy", json_string(e->policy));
    if (!bad && e->endpoint >= 0 && e->endpoint < AG_EP_COUNT)
        bad = set_new(
            o, "endpoint",
            json_string(ag_endpoint_name((enum ag_endpoint)e->endpoint)));
    if (!bad && e->key[0])
        bad = set_new(o, "key", json_string(e->key));
    if (!bad && e->action[0])
        bad = set_new(o, "action", json_string(e->action));
    if (!bad && e->retry_after_s)
        bad = set_new(o, "retry_after", json_integer(e->retry_after_s));
    if (!bad && e->level)
        bad = set_new(o, "level", json_integer(e->level));
    if (!bad && e->list[0])
        bad = set_new(o, "list", json_string(e->list));
    if (!bad && e->change[0])
        bad = set_new(o, "change", json_string(e->change));
    if (!bad && e->entry)
        bad = set_new(o, "entry", json_integer(e->entry));
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

uint32_t ag_event_level_parse(const char *text, size_t len)
{
    uint32_t n = 0;
    size_t i = 0;
    while (i < len && text[i] >= '0' && text[i] <= '9' && n < 100000000u)
        n = n * 10 + (uint32_t)(text[i++] - '0');
    return i > 0 && i < len && text[i] == ' ' ? n : 0;
}

void ag_event_key_digest(const char *store_key, char *out)
{
    out[0] = '\0';
    const char *d = strrchr(store_key, ':');
    if (!d)
        return;
    d++;
    if (*d == '{')
        d++;
    size_t n = strspn(d, "0123456789abcdef");
    if (n != AG_DIGEST_HEX)
        return;
    memcpy(out, d, n);
    out[n] = '\0';
}

/* A marker this instance set while Redis could not answer: the 64-bit
 * hash of its key and when it lapses. */
struct local_mark {
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
    struct local_mark marks[AG_EVENTS_LOCAL_MARKS];
    /* The markers this instance asked Redis for in the last
     * AG_EVENTS_ASKED_MS: not asked again meanwhile. */
    struct local_mark asked[AG_EVENTS_LOCAL_MARKS];
};

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t ag_events_retry_ms(unsigned failures)
{
    uint64_t ms = AG_EVENTS_RETRY_MIN_MS;
    for (unsigned i = 1; i < failures && ms < AG_EVENTS_RETRY_MAX_MS; i++)
        ms *= 2;
    return ms < AG_EVENTS_RETRY_MAX_MS ? ms : AG_EVENTS_RETRY_MAX_MS;
}

static int flush_backlog(struct ag_events *ev);

/* Sends the backlog whenever it holds events and its retry time has
 * come, until the events are freed. */
static void *retry_main(void *arg)
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
        flush_backlog(ev);
        pthread_mutex_lock(&ev->lock);
    }
    pthread_mutex_unlock(&ev->lock);
    return NULL;
}

/* Has the retry thread send the backlog now, its backoff forgotten: Redis
 * is there again. */
static void retry_now(struct ag_events *ev)
{
    pthread_mutex_lock(&ev->lock);
    ev->failures = 0;
    ev->retry_at_ms = 0;
    pthread_cond_signal(&ev->wake);
    pthread_mutex_unlock(&ev->lock);
}

int ag_events_new(const struct ag_events_opts *o, struct ag_events **out)
{
    struct ag_events *ev = calloc(1, sizeof *ev);
    if (!ev)
        return AG_ENOMEM;
    /* The metrics list every type, zeros too, in this order. */
    ag_metrics_name_events(o->metrics, type_names, AG_EV_COUNT);
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
    if (pthread_create(&ev->retry, NULL, retry_main, ev) != 0) {
        ag_events_free(ev);
        return AG_ENOMEM;
    }
    ev->retry_started = true;
    *out = ev;
    return AG_OK;
}

void ag_events_attach(struct ag_events *ev, struct ag_store *store)
{
    /* A detach is the service stopping: what waits for Redis has one
     * last try while the old store is still there. */
    if (!store)
        flush_backlog(ev);
    pthread_rwlock_wrlock(&ev->store_lock);
    ev->store = store;
    pthread_rwlock_unlock(&ev->store_lock);
    /* What was raised before there was a store goes now, not after the
     * backoff its failures built up. */
    if (store)
        retry_now(ev);
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

/* A command of argc (at most 8) C strings, its key argv[1], to the store
 * attached (AG_ESTORE while none): sent, to end in done(arg), which is
 * not called if this returns an error; or, with store_call, waited for. */
#define STORE_ARGS_MAX 8
static int store_send(struct ag_events *ev, int argc, const char **argv,
                      ag_store_reply_fn done, void *arg)
{
    size_t lens[STORE_ARGS_MAX];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    pthread_rwlock_rdlock(&ev->store_lock);
    int rc = ev->store ? ag_store_command_async(ev->store, argc, argv, lens, 1,
                                                done, arg)
                       : AG_ESTORE;
    pthread_rwlock_unlock(&ev->store_lock);
    return rc;
}

static int store_call(struct ag_events *ev, int argc, const char **argv,
                      void **reply)
{
    size_t lens[STORE_ARGS_MAX];
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
    return store_send(ev, 8, argv, done, arg);
}

/* One XADD of json, waited for: AG_OK, or AG_ESTORE with why filled. */
static int xadd_wait(struct ag_events *ev, const char *json, char *why)
{
    const char *argv[] = {"XADD", AG_EVENTS_STREAM, "MAXLEN", "~", ev->max_len,
                          "*",    "event",          json};
    void *reply = NULL;
    int rc = store_call(ev, 8, argv, &reply);
    const redisReply *r = reply;
    bool ok = rc == AG_OK && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        failure_text(rc == AG_OK ? AG_OK : AG_ESTORE, r, why);
    ag_redis_reply_free(reply);
    return ok ? AG_OK : AG_ESTORE;
}

/* Sends the backlog, oldest first, each XADD waited for, until it is empty
 * (AG_OK) or one fails (AG_ESTORE: the rest waits for the retry). One
 * flusher at a time, so that the stream keeps the backlog's order: a
 * second caller waits for the first to finish, then sends what is left. */
static int flush_backlog(struct ag_events *ev)
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

/* Appends json (owned) to the stream: behind the backlog if one waits
 * (the retry thread sends it), or at once, into the backlog if Redis
 * cannot take it. */
static void append(struct ag_events *ev, char *json)
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
    append(ev, json);
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
static bool table_first(struct ag_events *ev, struct local_mark *tab,
                        const char *key, uint64_t ttl_ms)
{
    uint64_t h = hash_key(key), now = ag_clock_mono_ms();
    size_t at = (size_t)(h % AG_EVENTS_LOCAL_MARKS), victim = at;
    bool first = true;
    pthread_mutex_lock(&ev->lock);
    for (size_t i = 0; i < PROBES; i++) {
        struct local_mark *m = &tab[(at + i) % AG_EVENTS_LOCAL_MARKS];
        if (m->hash == h && m->until_ms > now) {
            first = false;
            break;
        }
        if (m->until_ms < tab[victim].until_ms)
            victim = (at + i) % AG_EVENTS_LOCAL_MARKS;
    }
    if (first)
        tab[victim] = (struct local_mark){h, now + ttl_ms};
    pthread_mutex_unlock(&ev->lock);
    return first;
}

static void table_clear(struct ag_events *ev, struct local_mark *tab,
                        const char *key)
{
    uint64_t h = hash_key(key);
    size_t at = (size_t)(h % AG_EVENTS_LOCAL_MARKS);
    pthread_mutex_lock(&ev->lock);
    for (size_t i = 0; i < PROBES; i++) {
        struct local_mark *m = &tab[(at + i) % AG_EVENTS_LOCAL_MARKS];
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
        if (store_send(m->ev, 2, argv, leveled, m) == AG_OK)
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
        if (res[i].allowed || op->shadow)
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
         * lapses, once the key was allowed again, is a new lockout. */
        m->ttl_ms = res[i].retry_after_ms > 1000 ? res[i].retry_after_ms : 1000;
        struct ag_event *e = &m->e;
        ag_event_init(e, p->algorithm == AG_ALG_CONVERSION
                             ? AG_EV_CONVERSION_BLOCK
                             : AG_EV_LOCKOUT);
        snprintf(e->policy, sizeof e->policy, "%s", p->name);
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
        if (!degraded && store_send(ev, 6, argv, marked, m) == AG_OK)
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
        retry_now(ev);
    ag_events_raise(ev, &e);
}

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
    int rc = store_call(ev, 6, argv, &got);
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
        flush_backlog(ev);
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
