/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store (ag_store_redis.h): the store function table over the
 * pipeline (ag_redis_pipe.c), its making and its end, the circuit
 * breaker's probe thread, and the commands beside the limits (clear,
 * ping, the OTP figures, the security events' commands, PUBLISH). The
 * check, its wire format and the state machine that settles it are
 * ag_store_redis_check.c's.
 *
 * Every command here is refused at once (AG_ESTORE) while the breaker is
 * open. Those whose outcome tells whether Redis is failing (clear, ping)
 * count toward the breaker, as checks do, and are never sent twice once
 * they may have reached Redis; the rest (figures, events, PUBLISH) are
 * not counted.
 */
#include "ag_store_redis_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "ag_clock.h"
#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_breaker.h"
#include "ag_redis_code.h"
#include "ag_redis_lane.h"
#include "ag_redis_pipe.h"
#include "ag_redis_reply.h"

/* The key the breaker's probe checks. Policy names are not empty, so no
 * policy's "ag:<policy>:<digest>" key can be it (as AG_FP_KEY_PREFIX). */
#define PROBE_KEY "ag::probe"

/* Runs argv (DEL, PING) and expects a reply of type; one retry on a new
 * connection if it never left. One that may have reached Redis is not
 * sent again, like a check: a DEL run twice could forgive what was
 * counted in between. AG_EUNKNOWN then: it may have been done. */
static int simple(struct ag_store_redis__store *s, int argc, const char **argv,
                  const size_t *lens, int type)
{
    if (ag_redis_breaker_is_open(&s->breaker))
        return AG_ESTORE;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool sent;
        redisReply *r = ag_redis_pipe_call(s->pipe, argc, argv, lens, &sent);
        if (!r && !sent)
            continue;
        if (!r) {
            ag_store_redis__outcome(s, AG_ESTORE, false);
            return AG_EUNKNOWN;
        }
        if (s->redirect && ag_store_redis__redirected(r)) {
            /* A cluster node that does not hold the keys: nothing ran,
             * and the node answered (see ag_store.h). The callback runs
             * on this, the caller's, thread. */
            s->redirect(s->redirect_arg, r->str);
            ag_redis_reply_free(r);
            ag_store_redis__outcome(s, AG_OK, false);
            return AG_EREDIRECT;
        }
        int ok = r->type == type;
        ag_redis_reply_free(r);
        return ag_store_redis__outcome(s, ok ? AG_OK : AG_ESTORE, false);
    }
    return ag_store_redis__outcome(s, AG_ESTORE, false);
}

static int redis_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    if (plan->n == 0)
        return AG_OK;
    /* Every key of each op, whatever its policy says now: an admin may
     * have turned its blocks or their growth off since they were set. The
     * lockout marker goes with them, so that the key's next lockout is an
     * event again; all four share the key's hash tag. */
    const char *argv[1 + 4 * AG_PLAN_OPS];
    size_t lens[1 + 4 * AG_PLAN_OPS];
    char block_keys[AG_PLAN_OPS][AG_STORE_KEY_MAX];
    char level_keys[AG_PLAN_OPS][AG_STORE_KEY_MAX];
    char mark_keys[AG_PLAN_OPS][AG_STORE_KEY_MAX];
    int argc = 0;
    argv[argc] = "DEL";
    lens[argc++] = 3;
    for (size_t i = 0; i < plan->n; i++) {
        argv[argc] = plan->ops[i].key;
        lens[argc++] = strlen(plan->ops[i].key);
        argv[argc] = block_keys[i];
        lens[argc++] = ag_limiter_block_key(&plan->ops[i], block_keys[i]);
        argv[argc] = level_keys[i];
        lens[argc++] = ag_limiter_level_key(&plan->ops[i], level_keys[i]);
        argv[argc] = mark_keys[i];
        lens[argc++] = ag_limiter_mark_key(&plan->ops[i], mark_keys[i]);
    }
    return simple(s, argc, argv, lens, REDIS_REPLY_INTEGER);
}

static int redis_ping(struct ag_store *base)
{
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    return simple((struct ag_store_redis__store *)base, 1, argv, lens,
                  REDIS_REPLY_STATUS);
}

/* The probe thread: while the breaker is open, runs the probe's check on
 * the breaker's schedule, and closes the breaker when one succeeds. */
static void *probe(void *arg)
{
    struct ag_store_redis__store *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        uint64_t in = ag_redis_breaker_probe_in(&s->breaker);
        if (in == UINT64_MAX) {
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        if (in > 0) {
            struct timespec until = ag_clock_deadline(in);
            pthread_cond_timedwait(&s->wake, &s->lock, &until);
            continue;
        }
        pthread_mutex_unlock(&s->lock);
        bool up = ag_store_redis__probe_check(s);
        pthread_mutex_lock(&s->lock);
        if (ag_redis_breaker_probed(&s->breaker, up)) {
            ag_metrics_set(s->metrics, AG_M_BREAKER_OPEN, 0);
            ag_log(AG_LOG_WARN, "redis_breaker_closed", "Redis answers again");
            /* Told without the lock: the listener may send commands. */
            if (s->breaker_fn) {
                pthread_mutex_unlock(&s->lock);
                s->breaker_fn(s->breaker_arg, false);
                pthread_mutex_lock(&s->lock);
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void stop_probe(struct ag_store_redis__store *s)
{
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->probe, NULL);
}

/* Frees what ag_store_redis_new made; the probe is stopped already (or
 * never started). */
static void free_store(struct ag_store_redis__store *s)
{
    ag_redis_pipe_free(s->pipe);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    ag_redis_breaker_destroy(&s->breaker);
    ag_redis_code_free(&s->code);
    free(s);
}

static void redis_destroy(struct ag_store *base)
{
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    stop_probe(s);
    free_store(s);
}

/* A job nobody waits for: its done frees it. */
static void fire_done(struct ag_redis_job *j, struct ag_redis_conn *c)
{
    (void)c;
    ag_redis_reply_free(j->reply);
    redisFreeCommand(j->cmd);
    free(j);
}

static void fire(struct ag_store_redis__store *s, int argc, const char **argv)
{
    size_t lens[4];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    struct ag_redis_job *j = calloc(1, sizeof *j);
    long long len = j ? redisFormatCommandArgv(&j->cmd, argc, argv, lens) : -1;
    if (len < 0) {
        free(j);
        return;
    }
    j->len = (size_t)len;
    j->done = fire_done;
    ag_redis_pipe_send(s->pipe, j);
}

static void redis_tally(struct ag_store *base, const char *key,
                        const char *field, const char *name_field,
                        const char *name, unsigned ttl_s)
{
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    if (ag_redis_breaker_is_open(&s->breaker))
        return;
    char ttl[AG_UINT_TEXT + 1];
    snprintf(ttl, sizeof ttl, "%u", ttl_s);
    fire(s, 4, (const char *[]){"HINCRBY", key, field, "1"});
    fire(s, 4, (const char *[]){"HSET", key, name_field, name});
    fire(s, 3, (const char *[]){"EXPIRE", key, ttl});
}

static int redis_read_hash(struct ag_store *base, const char *key, void **reply)
{
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    if (ag_redis_breaker_is_open(&s->breaker))
        return AG_ESTORE;
    bool sent;
    redisReply *r =
        ag_redis_pipe_call(s->pipe, 2, (const char *[]){"HGETALL", key},
                           (size_t[]){7, strlen(key)}, &sent);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        ag_redis_reply_free(r);
        return AG_ESTORE;
    }
    *reply = r;
    return AG_OK;
}

/* A command_async in flight: its job, its store, and whom to tell. */
struct command {
    struct ag_redis_job job; /* first: the job's done finds it */
    struct ag_store_redis__store *s;
    ag_store_reply_fn done;
    void *arg;
};

static void command_done(struct ag_redis_job *j, struct ag_redis_conn *c)
{
    (void)c;
    struct command *k = (struct command *)j;
    /* A Cluster node that no longer holds the key: the cluster store
     * reads its map again now, not at its next timed refresh. The caller
     * gets the answer as it came. */
    if (k->s->redirect && ag_store_redis__redirected(j->reply))
        k->s->redirect(k->s->redirect_arg, j->reply->str);
    if (k->done)
        k->done(k->arg, j->reply ? AG_OK : AG_ESTORE, j->reply);
    ag_redis_reply_free(j->reply);
    redisFreeCommand(j->cmd);
    free(k);
}

static int redis_command_async(struct ag_store *base, int argc,
                               const char **argv, const size_t *lens,
                               int key_at, ag_store_reply_fn done, void *arg)
{
    (void)key_at;
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    if (ag_redis_breaker_is_open(&s->breaker))
        return AG_ESTORE;
    struct command *k = calloc(1, sizeof *k);
    long long len =
        k ? redisFormatCommandArgv(&k->job.cmd, argc, argv, lens) : -1;
    if (len < 0) {
        free(k);
        return AG_ENOMEM;
    }
    k->job.len = (size_t)len;
    k->job.done = command_done;
    k->s = s;
    k->done = done;
    k->arg = arg;
    ag_redis_pipe_send(s->pipe, &k->job);
    return AG_OK;
}

static int redis_command(struct ag_store *base, int argc, const char **argv,
                         const size_t *lens, int key_at, void **reply)
{
    (void)key_at;
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    if (ag_redis_breaker_is_open(&s->breaker))
        return AG_ESTORE;
    bool sent;
    redisReply *r = ag_redis_pipe_call(s->pipe, argc, argv, lens, &sent);
    if (!r)
        return AG_ESTORE;
    if (s->redirect && ag_store_redis__redirected(r)) {
        /* Nothing ran: the cluster store follows it (ag_store.h). */
        s->redirect(s->redirect_arg, r->str);
        ag_redis_reply_free(r);
        return AG_EREDIRECT;
    }
    *reply = r;
    return AG_OK;
}

static void redis_publish(struct ag_store *base, const char *channel,
                          const char *message)
{
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    if (ag_redis_breaker_is_open(&s->breaker))
        return;
    fire(s, 3, (const char *[]){"PUBLISH", channel, message});
}

static const struct ag_store_ops redis_ops = {
    .name = "redis",
    .check = ag_store_redis__check,
    .check_async = ag_store_redis__check_async,
    .clear = redis_clear,
    .ping = redis_ping,
    .tally = redis_tally,
    .read_hash = redis_read_hash,
    .command_async = redis_command_async,
    .command = redis_command,
    .publish = redis_publish,
    .destroy = redis_destroy,
};

struct ag_store *ag_store_redis_new(const struct ag_store_redis_opts *o)
{
    struct ag_store_redis__store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    const struct ag_embedded_file *lua = o->lua ? o->lua : ag_embedded_lua;
    size_t nlua = o->lua ? o->nlua : ag_embedded_lua_count;
    if (ag_redis_code_init(&s->code, lua, nlua)) {
        free(s);
        return NULL;
    }
    s->base.ops = &redis_ops;
    s->metrics = o->metrics;
    unsigned char id[8];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(s->instance, sizeof s->instance, id, sizeof id);
    atomic_init(&s->seq, 0);
    ag_redis_breaker_init(&s->breaker, NULL, NULL);
    s->probe_policy = (struct ag_policy){.algorithm = AG_ALG_FIXED_WINDOW,
                                         .limit = 1000000000,
                                         .window_s = 1,
                                         .block_growth = 1};
    s->probe_plan.kind = AG_PLAN_CHECK;
    s->probe_plan.n = 1;
    s->probe_plan.ops[0].policy = &s->probe_policy;
    s->probe_plan.ops[0].charge = true;
    snprintf(s->probe_plan.ops[0].key, sizeof s->probe_plan.ops[0].key, "%s",
             o->probe_key ? o->probe_key : PROBE_KEY);
    s->redirect = o->redirect;
    s->redirect_arg = o->redirect_arg;
    s->breaker_fn = o->breaker;
    s->breaker_arg = o->breaker_arg;
    memcpy(s->probe_plan.ops[0].member, "probe", sizeof "probe");
    pthread_mutex_init(&s->lock, NULL);
    ag_clock_cond_init(&s->wake);
    s->pipe = ag_redis_pipe_new(o->addr, o->timeout_ms, &s->code, &s->breaker,
                                o->metrics);
    /* A check begun on a loop's thread goes out on that loop's own
     * connection (ag_redis_lane.h). */
    if (s->pipe)
        ag_redis_lane_attach(s->pipe);
    /* Out of threads at start: give up cleanly. */
    if (!s->pipe || pthread_create(&s->probe, NULL, probe, s) != 0) {
        free_store(s);
        return NULL;
    }
    return &s->base;
}
