/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_pipe.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_error.h"
#include "ag_log.h"
#include "ag_loop.h"
#include "ag_metrics.h"
#include "ag_redis_link.h"
#include "ag_redis_pipe_impl.h"
#include "ag_redis_reply.h"
#include "ag_redis_sentinel.h"

#define DISPATCHERS AG_REDIS_PIPE_DISPATCHERS
#define SCRIPTS AG_REDIS_SCRIPTS

/* A job whose sender waits for it (ag_redis_pipe_call). */
struct waiter {
    struct ag_redis_job job; /* first: done's job is the waiter */
    sem_t woken;
};

static void use_library(struct ag_redis_pipe *p, int use, const char *why);
static bool passing(const char *err);
static int load_code(struct ag_redis_pipe *p, struct ag_redis_link **l,
                     bool library, unsigned from, unsigned to);
static struct ag_redis_job *take_batch(struct ag_redis_pipe *p, size_t *n);
static void *dispatch(void *arg);
static void wake(struct ag_redis_job *j, struct ag_redis_conn *c);
static void stop(struct ag_redis_pipe *p);

void ag_redis_pipe__drop(struct ag_redis_link **l)
{
    ag_redis_link_close(*l);
    *l = NULL;
}

/* Counts and logs a failed call on l (NULL: out of memory). */
void ag_redis_pipe__failed(struct ag_redis_pipe *p,
                           const struct ag_redis_link *l)
{
    const char *why = l ? ag_redis_link_error(l) : "out of memory";
    bool timeout = l && ag_redis_link_timed_out(l);
    ag_metrics_count(p->metrics,
                     timeout ? AG_M_REDIS_TIMEOUTS : AG_M_REDIS_ERRORS);
    ag_log(AG_LOG_WARN, timeout ? "redis_timeout" : "redis_error", "%s", why);
}

/* Formats argv and buffers it on *l (connection set-up only); drops *l if
 * that fails. */
bool ag_redis_pipe__append_argv(struct ag_redis_pipe *p,
                                struct ag_redis_link **l, int argc,
                                const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    bool ok = len >= 0 && ag_redis_link_append(*l, cmd, (size_t)len) == AG_OK;
    redisFreeCommand(cmd);
    if (!ok) {
        ag_redis_pipe__failed(p, len >= 0 ? *l : NULL);
        ag_redis_pipe__drop(l);
    }
    return ok;
}

/* Sets whether checks use FCALL (1) or scripts (0), logging a change;
 * why: Redis's words when it refused the library. */
static void use_library(struct ag_redis_pipe *p, int use, const char *why)
{
    if (atomic_exchange(&p->functions, use) == use)
        return;
    if (use)
        ag_log(AG_LOG_INFO, "redis_functions",
               "checks run the function library with FCALL");
    else
        ag_log(AG_LOG_WARN, "redis_functions",
               "FUNCTION LOAD or FCALL refused (%s): checks run scripts with "
               "EVALSHA",
               why);
}

/* Is err a refusal that may pass (Redis busy, loading, out of memory, a
 * failing disk, a replica), not one that will stand? */
static bool passing(const char *err)
{
    static const char *const codes[] = {"BUSY",       "LOADING",   "OOM",
                                        "MISCONF",    "READONLY",  "TRYAGAIN",
                                        "MASTERDOWN", "NOREPLICAS"};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        size_t n = strlen(codes[i]);
        if (strncmp(err, codes[i], n) == 0 && (err[n] == ' ' || !err[n]))
            return true;
    }
    return false;
}

/* Notes what Redis said to FUNCTION LOAD (r): the library is there (loaded
 * now, or "already exists": the name is a hash of the code, so it is this
 * code), refused for good (no FUNCTION: Redis 6, an ACL, rename-command),
 * or refused for now, which changes nothing. True if Redis has it. */
bool ag_redis_pipe__note_library(struct ag_redis_pipe *p, const redisReply *r)
{
    bool err = r->type == REDIS_REPLY_ERROR;
    if (r->type == REDIS_REPLY_STRING ||
        (err && strstr(r->str, "already exists"))) {
        use_library(p, 1, NULL);
        return true;
    }
    if (err && passing(r->str))
        ag_log(AG_LOG_WARN, "redis_functions", "FUNCTION LOAD failed: %s",
               r->str);
    else
        use_library(p, 0, err ? r->str : "unexpected reply");
    return false;
}

bool ag_redis_pipe__note_sha(struct ag_redis_pipe *p, unsigned m,
                             const redisReply *r)
{
    if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        pthread_mutex_lock(&p->lock);
        memcpy(p->sha[m], r->str, 41);
        pthread_mutex_unlock(&p->lock);
        return true;
    }
    ag_log(AG_LOG_ERROR, "redis_error", "SCRIPT LOAD failed: %s",
           r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    return false;
}

/* Loads on *l in one round trip (pipelined): the function library if
 * library is set, then scripts[from..to), noting their SHA1s. A refused
 * library is noted (checks then use the scripts), not a failure; a script
 * that fails to load drops *l. */
static int load_code(struct ag_redis_pipe *p, struct ag_redis_link **l,
                     bool library, unsigned from, unsigned to)
{
    if (!*l)
        return AG_ESTORE;
    if (library) {
        /* Not REPLACE: "already exists" is this code, and answering it
         * costs Redis nothing, where a replacement compiles the library
         * again and goes to the AOF and the replicas. */
        const char *argv[] = {"FUNCTION", "LOAD", p->code->library.text};
        size_t lens[] = {8, 4, p->code->library.len};
        if (!ag_redis_pipe__append_argv(p, l, 3, argv, lens))
            return AG_ESTORE;
    }
    for (unsigned m = from; m < to; m++) {
        const char *argv[] = {"SCRIPT", "LOAD", p->code->scripts[m].text};
        size_t lens[] = {6, 4, p->code->scripts[m].len};
        if (!ag_redis_pipe__append_argv(p, l, 3, argv, lens))
            return AG_ESTORE;
    }
    if (library) {
        redisReply *r = NULL;
        if (ag_redis_link_get_reply(*l, (void **)&r) != AG_OK) {
            ag_redis_pipe__failed(p, *l);
            ag_redis_pipe__drop(l);
            return AG_ESTORE;
        }
        ag_redis_pipe__note_library(p, r);
        ag_redis_reply_free(r);
    }
    bool ok = true;
    for (unsigned m = from; m < to; m++) {
        redisReply *r = NULL;
        if (ag_redis_link_get_reply(*l, (void **)&r) != AG_OK) {
            ag_redis_pipe__failed(p, *l);
            ag_redis_pipe__drop(l);
            return AG_ESTORE;
        }
        /* One failure logged: the others are likely the same. */
        if (ok)
            ok = ag_redis_pipe__note_sha(p, m, r);
        ag_redis_reply_free(r);
    }
    if (!ok)
        ag_redis_pipe__drop(l);
    return ok ? AG_OK : AG_ESTORE;
}

/* Does the server at the end of *l, which a sentinel named, say ROLE
 * master? A sentinel may be behind a failover by a moment; the next
 * connection asks again. Drops *l if not. */
static bool is_master(struct ag_redis_pipe *p, struct ag_redis_link **l)
{
    static const char role[] = "*1\r\n$4\r\nROLE\r\n";
    redisReply *r = NULL;
    bool master = ag_redis_link_append(*l, role, sizeof role - 1) == AG_OK &&
                  ag_redis_link_get_reply(*l, (void **)&r) == AG_OK &&
                  r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;
    if (!master) {
        ag_log(AG_LOG_WARN, "redis_connect",
               "sentinel: the address named for '%s' is not a master (%s)",
               p->addr.master_name,
               r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                       r->element[0]->type == REDIS_REPLY_STRING
                   ? r->element[0]->str
                   : ag_redis_link_error(*l));
        ag_metrics_count(p->metrics, AG_M_REDIS_ERRORS);
        ag_redis_pipe__drop(l);
    }
    ag_redis_reply_free(r);
    return master;
}

/* An answer that says the command did not run because this server is not
 * (or no longer) a writable master: a replica after a failover, or one
 * that lost its master. The connection is dropped and the command may go
 * again, to the master the sentinels name next. */
bool ag_redis_pipe__not_master(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "READONLY", 8) == 0 ||
            strncmp(r->str, "MASTERDOWN", 10) == 0);
}

/* A new connection with the timeouts set, authenticated, on the right
 * database (ag_redis_link_open), with the library and every script loaded
 * (one round trip); NULL if any step fails. */
struct ag_redis_link *ag_redis_pipe__connect(struct ag_redis_pipe *p)
{
    const struct ag_redis_addr *a = &p->addr;
    struct ag_redis_addr master;
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    if (a->tls && !p->tls) {
        ag_error_fill(&err, AG_EINVAL, NULL, "%s", p->tls_error);
    } else if (a->kind == AG_REDIS_SENTINEL &&
               ag_redis_sentinel_master(a, p->tls, p->timeout_ms, &master,
                                        &err) != AG_OK) {
        /* err says why */
    } else {
        if (a->kind == AG_REDIS_SENTINEL)
            a = &master;
        ag_redis_link_open(a, p->tls, p->timeout_ms, &l, &err);
    }
    if (a == &master)
        sodium_memzero(master.password, sizeof master.password);
    if (l && p->addr.kind == AG_REDIS_SENTINEL && !is_master(p, &l))
        return NULL;
    if (!l) {
        ag_log(AG_LOG_WARN, "redis_connect", "%s", err.msg);
        ag_metrics_count(p->metrics, AG_M_REDIS_ERRORS);
        return NULL;
    }
    if (load_code(p, &l, true, 1, SCRIPTS))
        return NULL;
    return l;
}

/* Takes up to AG_REDIS_PIPE_BATCH queued jobs; NULL once stopping and
 * drained. */
static struct ag_redis_job *take_batch(struct ag_redis_pipe *p, size_t *n)
{
    pthread_mutex_lock(&p->lock);
    while (!p->head && !p->stopping)
        pthread_cond_wait(&p->queued, &p->lock);
    struct ag_redis_job *first = p->head, *last = NULL;
    *n = 0;
    for (struct ag_redis_job *j = p->head; j && *n < AG_REDIS_PIPE_BATCH;
         j = j->next) {
        last = j;
        (*n)++;
    }
    if (last) {
        p->head = last->next;
        if (!p->head)
            p->tail = NULL;
        last->next = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    return first;
}

static void *dispatch(void *arg)
{
    struct ag_redis_conn *c = arg;
    struct ag_redis_pipe *p = c->pipe;
    size_t n;
    struct ag_redis_job *batch;
    while ((batch = take_batch(p, &n))) {
        /* Has Redis closed the connection (a restart, a failover, its idle
         * timeout, CLIENT KILL) while it sat idle? A batch written on it
         * would be lost, its commands maybe run and never answered; better
         * to reconnect first. */
        unsigned epoch = atomic_load(&p->epoch);
        if (c->link && (c->epoch != epoch || ag_redis_link_stale(c->link)))
            ag_redis_pipe__drop(&c->link);
        if (!c->link && !ag_redis_breaker_is_open(p->breaker)) {
            c->link = ag_redis_pipe__connect(p);
            c->epoch = epoch;
        }
        bool ok = c->link != NULL;
        for (struct ag_redis_job *j = batch; ok && j; j = j->next)
            ok = (!j->asking ||
                  ag_redis_link_append(c->link, AG_REDIS_PIPE__ASKING,
                                       sizeof AG_REDIS_PIPE__ASKING - 1) ==
                      AG_OK) &&
                 ag_redis_link_append(c->link, j->cmd, j->len) == AG_OK;
        if (!ok)
            ag_redis_pipe__drop(
                &c->link); /* nothing of a half-built batch may be sent */
        /* Once the batch is being written, any command of it may have run
         * in Redis even if its reply never comes (a read timeout), and the
         * first read writes the whole batch: so a failed read leaves every
         * job of the batch sent, not only those before it. */
        bool written = ok, demoted = false;
        for (struct ag_redis_job *j = batch; j; j = j->next) {
            void *reply = NULL;
            j->sent = written;
            j->orphaned = written && !ok;
            /* ASKING's +OK first; anything else and the command after it
             * was refused as if it had been sent without. */
            if (ok && j->asking &&
                ag_redis_link_get_reply(c->link, &reply) == AG_OK) {
                ag_redis_reply_free(reply);
                reply = NULL;
            }
            if (ok && ag_redis_link_get_reply(c->link, &reply) != AG_OK) {
                ag_redis_pipe__failed(p, c->link);
                ag_redis_pipe__drop(&c->link);
                ok = false;
            }
            if (p->addr.kind == AG_REDIS_SENTINEL &&
                ag_redis_pipe__not_master(reply)) {
                ag_log(AG_LOG_WARN, "redis_not_master",
                       "%s; asking the "
                       "sentinels again",
                       ((redisReply *)reply)->str);
                ag_redis_reply_free(reply);
                reply = NULL;
                j->sent = false; /* it did not run: it may go again */
                demoted = true;
            }
            j->reply = reply;
        }
        if (demoted) {
            ag_redis_pipe__drop(&c->link);
            atomic_fetch_add(&p->epoch, 1);
        }
        /* Done last, once every reply is read: a done may free its job or
         * queue it again, and a waiter's lives on its sender's stack. */
        for (struct ag_redis_job *j = batch, *next; j; j = next) {
            next = j->next;
            j->next = NULL;
            j->done(j, c);
        }
    }
    ag_redis_pipe__drop(&c->link);
    return NULL;
}

/* How deep this thread is in ag_redis_pipe_wait_begin: while it is,
 * sends use the shared queue. */
static _Thread_local unsigned waiting;

void ag_redis_pipe_send_shared(struct ag_redis_pipe *p, struct ag_redis_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->queued);
    pthread_mutex_unlock(&p->lock);
}

void ag_redis_pipe_send(struct ag_redis_pipe *p, struct ag_redis_job *j)
{
    struct ag_loop *loop = ag_loop_self();
    if (!loop || waiting || !p->lane_fns || !p->lane_fns->send(p, loop, j))
        ag_redis_pipe_send_shared(p, j);
}

void ag_redis_pipe_wait_begin(void)
{
    waiting++;
}

void ag_redis_pipe_wait_end(void)
{
    waiting--;
}

static void wake(struct ag_redis_job *j, struct ag_redis_conn *c)
{
    (void)c;
    sem_post(&((struct waiter *)j)->woken);
}

redisReply *ag_redis_pipe_call(struct ag_redis_pipe *p, int argc,
                               const char **argv, const size_t *lens,
                               bool *sent)
{
    char *cmd;
    *sent = false;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0)
        return NULL;
    struct waiter w = {.job = {.cmd = cmd, .len = (size_t)len, .done = wake}};
    sem_init(&w.woken, 0, 0);
    /* Shared: on a loop's thread, its lane would wait for this wait. */
    ag_redis_pipe_send_shared(p, &w.job);
    while (sem_wait(&w.woken) != 0 && errno == EINTR)
        ;
    sem_destroy(&w.woken);
    redisFreeCommand(cmd);
    *sent = w.job.sent;
    return w.job.reply;
}

bool ag_redis_pipe_fcall(struct ag_redis_pipe *p)
{
    return atomic_load_explicit(&p->functions, memory_order_relaxed) == 1;
}

void ag_redis_pipe_refuse_library(struct ag_redis_pipe *p, const char *why)
{
    use_library(p, 0, why);
}

void ag_redis_pipe_sha(struct ag_redis_pipe *p, unsigned mask, char sha[41])
{
    pthread_mutex_lock(&p->lock);
    memcpy(sha, p->sha[mask], 41);
    pthread_mutex_unlock(&p->lock);
}

int ag_redis_conn_load(struct ag_redis_conn *c, bool library, unsigned mask)
{
    if (c->lane)
        return c->pipe->lane_fns->load(c, library, mask);
    return load_code(c->pipe, &c->link, library, mask ? mask : 1,
                     mask ? mask + 1 : 1);
}

redisReply *ag_redis_pipe_probe(struct ag_redis_pipe *p, ag_redis_probe_fmt fmt,
                                void *arg)
{
    struct ag_redis_link *l = ag_redis_pipe__connect(p);
    if (!l)
        return NULL;
    char *cmd = NULL;
    long long len = fmt(arg, &cmd);
    void *reply = NULL;
    if (len < 0 || ag_redis_link_append(l, cmd, (size_t)len) != AG_OK) {
        ag_log(AG_LOG_ERROR, "redis_error", "probe: out of memory");
    } else if (ag_redis_link_get_reply(l, &reply) != AG_OK) {
        ag_redis_pipe__failed(p, l);
        reply = NULL;
    }
    free(cmd);
    ag_redis_pipe__drop(&l);
    return reply;
}

/* Stops the dispatchers that started, after the queued jobs. */
static void stop(struct ag_redis_pipe *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->queued);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < DISPATCHERS; i++)
        if (p->conns[i].started)
            pthread_join(p->conns[i].thread, NULL);
}

struct ag_redis_pipe *ag_redis_pipe_new(const struct ag_redis_addr *addr,
                                        unsigned timeout_ms,
                                        const struct ag_redis_code *code,
                                        struct ag_redis_breaker *breaker,
                                        struct ag_metrics *metrics)
{
    struct ag_redis_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->addr = *addr;
    p->timeout_ms = timeout_ms;
    /* Made once, before any dispatcher runs; the dispatchers only read
     * it. A failure (a missing CA file) does not stop the service: its
     * connections fail with the reason, the store answers degraded and
     * /readyz says 503, as with any Redis it cannot reach. */
    struct ag_error err = {0};
    if (addr->tls && ag_redis_tls_new(addr, &p->tls, &err) != AG_OK) {
        snprintf(p->tls_error, sizeof p->tls_error, "%s", err.msg);
        ag_log(AG_LOG_ERROR, "redis_tls", "%s", err.msg);
    }
    p->code = code;
    p->breaker = breaker;
    p->metrics = metrics;
    atomic_init(&p->functions, -1);
    atomic_init(&p->epoch, 0);
    atomic_init(&p->lanes, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->queued, NULL);
    /* Which threads started is kept by index: any of them may fail, and
     * only those that started may be joined. */
    bool all = true;
    for (int i = 0; i < DISPATCHERS; i++) {
        struct ag_redis_conn *c = &p->conns[i];
        c->pipe = p;
        c->started = pthread_create(&c->thread, NULL, dispatch, c) == 0;
        all = all && c->started;
    }
    if (!all) {
        ag_redis_pipe_free(p);
        return NULL;
    }
    return p;
}

void ag_redis_pipe_free(struct ag_redis_pipe *p)
{
    if (!p)
        return;
    /* The lanes first: a job they end may be sent again, to the shared
     * queue, which the dispatchers drain before they stop. */
    if (p->lane_fns)
        p->lane_fns->free_all(p);
    stop(p);
    pthread_cond_destroy(&p->queued);
    pthread_mutex_destroy(&p->lock);
    ag_redis_tls_free(p->tls);
    sodium_memzero(p->addr.password, sizeof p->addr.password);
    free(p);
}
