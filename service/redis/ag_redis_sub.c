/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_sub.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "ag_clock.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_cmd.h"
#include "ag_redis_link.h"
#include "ag_redis_reply.h"
#include "ag_redis_sentinel.h"

/* How long one wait for a message lasts: the longest a stop waits. */
#define WAIT_MS 100
/* A PING this often on the subscribed connection, which must be answered
 * within the Redis timeout but never less than PONG_MIN_MS: a Redis that
 * stopped answering (frozen, or cut off without the connection closing)
 * could be missing other instances' invalidations. */
#define PING_MS 500
#define PONG_MIN_MS 1000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000
/* A failure to subscribe is logged at once, then at most this often while
 * Redis stays out of reach (the retries go on every second), each line
 * saying how many it stands for. */
#define FAIL_LOG_EVERY_MS 30000

#define LOG_MAX 32
#define WHAT_MAX 64

struct ag_redis_sub {
    struct ag_redis_addr addr; /* a copy; its password wiped at stop */
    unsigned timeout_ms;
    char channel[AG_REDIS_SUB_CHANNEL_MAX + 1];
    char ev_fail[LOG_MAX + 16], ev_up[LOG_MAX + 16], ev_down[LOG_MAX + 16];
    char what[WHAT_MAX + 1];
    void (*message)(void *ctx, const char *text, size_t len);
    void (*live)(void *ctx, bool live);
    void *ctx;
    struct ag_metrics *metrics;
    struct ag_redis_tls *tls;     /* NULL without TLS */
    int next_seed;                /* cluster: the seed node to try next */
    struct ag_log_gate fail_gate; /* the subscriber thread's alone */
    pthread_t thread;
    pthread_mutex_t lock; /* guards stopping */
    pthread_cond_t wake;
    bool stopping;
};

static bool stopping(struct ag_redis_sub *s)
{
    pthread_mutex_lock(&s->lock);
    bool stop = s->stopping;
    pthread_mutex_unlock(&s->lock);
    return stop;
}

/* Sleeps ms unless stopped first; returns whether stopping. */
static bool nap(struct ag_redis_sub *s, unsigned ms)
{
    struct timespec until = ag_clock_deadline(ms);
    pthread_mutex_lock(&s->lock);
    while (!s->stopping &&
           pthread_cond_timedwait(&s->wake, &s->lock, &until) == 0)
        ;
    bool stop = s->stopping;
    pthread_mutex_unlock(&s->lock);
    return stop;
}

/* Logs why a subscription failed, through the gate. */
static void log_failure(struct ag_redis_sub *s, const char *prefix,
                        const char *why)
{
    unsigned long held = 0;
    if (!ag_log_gate_open(&s->fail_gate, ag_clock_mono_ms(), FAIL_LOG_EVERY_MS,
                          &held))
        return;
    if (held)
        ag_log(AG_LOG_WARN, s->ev_fail,
               "%s%s (and %lu more failure(s) since the last line; retried "
               "every second)",
               prefix, why, held);
    else
        ag_log(AG_LOG_WARN, s->ev_fail,
               "%s%s (retried every second; logged again in 30 s at most)",
               prefix, why);
}

/* A connection to where the channel can be heard; NULL (logged) if
 * none. */
static struct ag_redis_link *connect_sub(struct ag_redis_sub *s)
{
    struct ag_redis_addr a = s->addr;
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    int rc = AG_OK;
    if (a.kind == AG_REDIS_SENTINEL) {
        rc =
            ag_redis_sentinel_master(&s->addr, s->tls, s->timeout_ms, &a, &err);
    } else if (a.kind == AG_REDIS_CLUSTER) {
        const struct ag_redis_hostport *seed =
            &s->addr.seeds[s->next_seed++ % s->addr.n_seeds];
        a.kind = AG_REDIS_TCP;
        memcpy(a.host, seed->host, sizeof a.host);
        a.port = seed->port;
        a.db = 0;
    }
    if (rc == AG_OK)
        rc = ag_redis_link_open(&a, s->tls, s->timeout_ms, &l, &err);
    sodium_memzero(a.password, sizeof a.password);
    if (rc) {
        log_failure(s, "", err.msg);
        ag_metrics_count(s->metrics, AG_M_REDIS_ERRORS);
        return NULL;
    }
    return l;
}

/* Is r a pub/sub push of kind ("subscribe", "message") on the channel? */
static bool push_of(const struct ag_redis_sub *s, const redisReply *r,
                    const char *kind)
{
    return r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
           r->element[0]->type == REDIS_REPLY_STRING &&
           strcmp(r->element[0]->str, kind) == 0 &&
           r->element[1]->type == REDIS_REPLY_STRING &&
           strcmp(r->element[1]->str, s->channel) == 0;
}

/* Subscribes l; true once Redis confirms. */
static bool subscribe(struct ag_redis_sub *s, struct ag_redis_link *l)
{
    struct ag_buf cmd;
    ag_buf_init(&cmd, 256);
    ag_redis_cmd_command(&cmd, 2);
    ag_redis_cmd_str(&cmd, "SUBSCRIBE");
    ag_redis_cmd_str(&cmd, s->channel);
    redisReply *r = NULL;
    bool ok = !ag_buf_error(&cmd) &&
              ag_redis_link_append(l, cmd.p, cmd.len) == AG_OK &&
              ag_redis_link_get_reply(l, (void **)&r) == AG_OK &&
              push_of(s, r, "subscribe");
    ag_buf_free(&cmd);
    if (!ok) {
        char prefix[AG_REDIS_SUB_CHANNEL_MAX + 32];
        snprintf(prefix, sizeof prefix, "SUBSCRIBE %s refused: ", s->channel);
        bool err = r && r->type == REDIS_REPLY_ERROR;
        char why[512];
        /* An ACL without the channel: say what to grant, and what is off
         * meanwhile. */
        if (err && strncmp(r->str, "NOPERM", 6) == 0)
            snprintf(why, sizeof why,
                     "%s; grant the ACL user the channel (&%s) for %s", r->str,
                     s->channel, s->what);
        else
            snprintf(why, sizeof why, "%s",
                     err ? r->str : ag_redis_link_error(l));
        log_failure(s, prefix, why);
    }
    ag_redis_reply_free(r);
    return ok;
}

/* A subscribed connection's answer to PING: ["pong", ""]. */
static bool pong(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
           r->element[0]->type == REDIS_REPLY_STRING &&
           strcmp(r->element[0]->str, "pong") == 0;
}

/* Takes messages until the link fails, Redis stops answering its PING,
 * or a stop is asked for. */
static void listen_on(struct ag_redis_sub *s, struct ag_redis_link *l)
{
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    uint64_t pong_ms =
        s->timeout_ms > PONG_MIN_MS ? s->timeout_ms : PONG_MIN_MS;
    uint64_t last = ag_clock_mono_ms(),
             sent = 0; /* sent: 0 while none is out */
    const char *why = NULL;
    while (!why && !stopping(s)) {
        uint64_t now = ag_clock_mono_ms();
        if (!sent && now - last >= PING_MS) {
            if (ag_redis_link_append(l, ping, sizeof ping - 1) != AG_OK) {
                why = "cannot send PING";
                break;
            }
            sent = now;
        } else if (sent && now - sent > pong_ms) {
            why = "no answer to PING";
            break;
        }
        redisReply *r = NULL;
        if (ag_redis_link_wait_reply(l, WAIT_MS, (void **)&r) != AG_OK) {
            why = ag_redis_link_error(l);
            break;
        }
        if (pong(r)) {
            sent = 0;
            last = ag_clock_mono_ms();
        } else if (push_of(s, r, "message") &&
                   r->element[2]->type == REDIS_REPLY_STRING) {
            s->message(s->ctx, r->element[2]->str, r->element[2]->len);
        }
        ag_redis_reply_free(r);
    }
    if (why)
        ag_log(AG_LOG_WARN, s->ev_down, "%s: %s is off until subscribed again",
               why, s->what);
}

static void *run(void *arg)
{
    struct ag_redis_sub *s = arg;
    unsigned backoff = BACKOFF_MIN_MS;
    while (!stopping(s)) {
        struct ag_redis_link *l = connect_sub(s);
        if (l && subscribe(s, l)) {
            /* Whatever was sent before this moment may have been missed. */
            s->live(s->ctx, true);
            /* With the failures not logged since the last line, and the
             * gate reset: the next outage's first failure is logged at
             * once. */
            ag_log(AG_LOG_INFO, s->ev_up,
                   "messages on %s (%lu failed attempt(s) not logged before)",
                   s->channel, s->fail_gate.held);
            s->fail_gate = (struct ag_log_gate){0};
            backoff = BACKOFF_MIN_MS;
            listen_on(s, l);
            s->live(s->ctx, false);
        }
        ag_redis_link_close(l);
        if (nap(s, backoff))
            break;
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    return NULL;
}

int ag_redis_sub_start(const struct ag_redis_addr *addr, unsigned timeout_ms,
                       const struct ag_redis_sub_opts *o,
                       struct ag_redis_sub **out, struct ag_error *err)
{
    *out = NULL;
    if (strlen(o->channel) > AG_REDIS_SUB_CHANNEL_MAX ||
        strlen(o->log) > LOG_MAX || strlen(o->what) > WHAT_MAX)
        return ag_error_set(err, AG_EINVAL, NULL,
                            "a subscriber's channel or names are too long");
    struct ag_redis_sub *s = calloc(1, sizeof *s);
    if (!s)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    s->addr = *addr;
    s->timeout_ms = timeout_ms;
    snprintf(s->channel, sizeof s->channel, "%s", o->channel);
    snprintf(s->ev_fail, sizeof s->ev_fail, "%s_subscribe", o->log);
    snprintf(s->ev_up, sizeof s->ev_up, "%s_subscribed", o->log);
    snprintf(s->ev_down, sizeof s->ev_down, "%s_unsubscribed", o->log);
    snprintf(s->what, sizeof s->what, "%s", o->what);
    s->message = o->message;
    s->live = o->live;
    s->ctx = o->ctx;
    s->metrics = o->metrics;
    if (addr->tls && ag_redis_tls_new(addr, &s->tls, err) != AG_OK) {
        /* As the store does: the service runs (degraded, the store's log
         * says why), and the owner is never live. */
        ag_log(AG_LOG_WARN, s->ev_fail, "%s: %s stays off", err->msg, s->what);
        sodium_memzero(&s->addr, sizeof s->addr);
        free(s);
        return AG_OK;
    }
    pthread_mutex_init(&s->lock, NULL);
    ag_clock_cond_init(&s->wake);
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        ag_redis_tls_free(s->tls);
        sodium_memzero(&s->addr, sizeof s->addr);
        free(s);
        return ag_error_set(err, AG_ENOMEM, NULL,
                            "cannot start the subscriber of %s", o->channel);
    }
    *out = s;
    return AG_OK;
}

void ag_redis_sub_stop(struct ag_redis_sub *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->live(s->ctx, false);
    ag_redis_tls_free(s->tls);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    sodium_memzero(&s->addr, sizeof s->addr);
    free(s);
}
