/*
 * The Redis store: runs the composed lua/ script (every algorithm file, then
 * check.lua) with EVALSHA, one round trip per check. hiredis contexts are
 * not thread-safe, so each thread that calls in gets its own connection,
 * found through a pthread key; all connections are also on a list so that
 * destroy can close them.
 */
#include "ag_store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"

#define COMMON_SCRIPT "common.lua"
#define MAIN_SCRIPT "check.lua"

struct redis_store;

struct conn {
    struct redis_store *store;
    redisContext *ctx; /* NULL while disconnected */
    char sha[41];      /* SHA1 of the script as loaded on this connection */
    struct conn *next;
};

/* The circuit breaker: after FAIL_THRESHOLD failed operations in a row it
 * opens, and every operation fails at once, without touching Redis, until
 * the probe thread reaches Redis again. The probe waits PROBE_MIN_MS after
 * opening, then doubles its wait after each failed probe up to
 * PROBE_MAX_MS, so Redis is back in use within about a second of its
 * return. */
#define FAIL_THRESHOLD 3
#define PROBE_MIN_MS 100
#define PROBE_MAX_MS 1000

struct redis_store {
    struct ag_store base;
    struct ag_redis_addr addr;
    struct timeval timeout;
    struct ag_metrics *metrics; /* borrowed; may be NULL */
    char *script;               /* the composed script, NUL-terminated */
    size_t script_len;
    char instance[17];        /* random hex, makes log members unique */
    atomic_uint_fast64_t seq; /* with instance, a per-check nonce */
    pthread_key_t key;
    pthread_mutex_t lock; /* guards conns, and the probe's wait */
    struct conn *conns;
    atomic_int failures; /* failed operations in a row */
    atomic_bool open;    /* the breaker is open */
    pthread_t probe;
    pthread_cond_t wake; /* the probe waits on it */
    bool stopping;       /* under lock */
};

/* Appends one embedded lua/ file, by name, to s at *n. */
static int append_file(char *s, size_t *n, const char *name)
{
    for (size_t i = 0; i < ag_embedded_lua_count; i++) {
        const struct ag_embedded_file *f = &ag_embedded_lua[i];
        if (strcmp(f->name, name) == 0) {
            memcpy(s + *n, f->data, f->len);
            *n += f->len;
            s[(*n)++] = '\n';
            return AG_OK;
        }
    }
    return AG_ENOTFOUND;
}

/* The one script a check runs: common.lua, every algorithm file, then the
 * driver check.lua, which sees the others' locals. */
static char *compose_script(size_t *len)
{
    size_t total = 1;
    for (size_t i = 0; i < ag_embedded_lua_count; i++)
        total += ag_embedded_lua[i].len + 1;
    char *s = malloc(total);
    if (!s)
        return NULL;
    size_t n = 0;
    int rc = append_file(s, &n, COMMON_SCRIPT);
    for (size_t i = 0; !rc && i < ag_embedded_lua_count; i++) {
        const char *name = ag_embedded_lua[i].name;
        if (strcmp(name, COMMON_SCRIPT) && strcmp(name, MAIN_SCRIPT))
            rc = append_file(s, &n, name);
    }
    rc = rc ? rc : append_file(s, &n, MAIN_SCRIPT);
    if (rc) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    *len = n;
    return s;
}

static void drop(struct conn *c)
{
    if (c->ctx)
        redisFree(c->ctx);
    c->ctx = NULL;
    c->sha[0] = '\0';
}

/* Runs a command that must not fail; drops the connection if it does. */
static void count(struct redis_store *s, atomic_uint_fast64_t *counter)
{
    if (s->metrics)
        atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static redisReply *command(struct conn *c, int argc, const char **argv,
                           const size_t *lens)
{
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, lens);
    if (!r) {
        struct redis_store *s = c->store;
        const char *why = c->ctx->errstr;
        bool timeout =
            strstr(why, "temporarily unavailable") || strstr(why, "timed out");
        if (s->metrics)
            count(s, timeout ? &s->metrics->redis_timeouts
                             : &s->metrics->redis_errors);
        ag_log(AG_LOG_WARN, timeout ? "redis_timeout" : "redis_error", "%s",
               why);
        drop(c);
    }
    return r;
}

/* Records how an operation went; opens the breaker after too many
 * failures in a row. Returns rc. */
static int outcome(struct redis_store *s, int rc)
{
    if (rc == AG_OK) {
        atomic_store(&s->failures, 0);
        return rc;
    }
    if (atomic_fetch_add(&s->failures, 1) + 1 >= FAIL_THRESHOLD &&
        !atomic_exchange(&s->open, true)) {
        ag_log(AG_LOG_ERROR, "redis_breaker_open",
               "Redis failing: checks use the fallback until it answers");
        if (s->metrics) {
            count(s, &s->metrics->breaker_opens);
            atomic_store(&s->metrics->breaker_open, 1);
        }
        pthread_mutex_lock(&s->lock);
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
    }
    return rc;
}

static int load_script(struct redis_store *s, struct conn *c)
{
    const char *argv[] = {"SCRIPT", "LOAD", s->script};
    size_t lens[] = {6, 4, s->script_len};
    redisReply *r = command(c, 3, argv, lens);
    if (!r)
        return AG_ESTORE;
    int rc = AG_ESTORE;
    if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(c->sha, r->str, 41);
        rc = AG_OK;
    } else {
        ag_log(AG_LOG_ERROR, "redis_script_load", "%s",
               r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    freeReplyObject(r);
    return rc;
}

static int expect_ok(struct conn *c, int argc, const char **argv,
                     const char *what)
{
    size_t lens[2];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r = command(c, argc, argv, lens);
    if (!r)
        return AG_ESTORE;
    int ok = r->type == REDIS_REPLY_STATUS;
    if (!ok)
        ag_log(AG_LOG_ERROR, "redis_error", "%s failed: %s", what,
               r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    if (!ok)
        drop(c);
    return ok ? AG_OK : AG_ESTORE;
}

static int connect_conn(struct redis_store *s, struct conn *c)
{
    const struct ag_redis_addr *a = &s->addr;
    c->ctx = a->kind == AG_REDIS_UNIX
                 ? redisConnectUnixWithTimeout(a->path, s->timeout)
                 : redisConnectWithTimeout(a->host, a->port, s->timeout);
    if (!c->ctx || c->ctx->err) {
        ag_log(AG_LOG_WARN, "redis_connect", "%s",
               c->ctx ? c->ctx->errstr : "out of memory");
        if (s->metrics)
            count(s, &s->metrics->redis_errors);

        drop(c);
        return AG_ESTORE;
    }
    if (redisSetTimeout(c->ctx, s->timeout) != REDIS_OK) {
        drop(c);
        return AG_ESTORE;
    }
    if (a->password[0]) {
        const char *argv[] = {"AUTH", a->password};
        if (expect_ok(c, 2, argv, "AUTH"))
            return AG_ESTORE;
    }
    if (a->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", a->db);
        const char *argv[] = {"SELECT", db};
        if (expect_ok(c, 2, argv, "SELECT"))
            return AG_ESTORE;
    }
    return load_script(s, c);
}

/* The calling thread's connection, connected; NULL if Redis is not
 * reachable now. *fresh says whether it was connected by this call: a
 * connection that was open before may have gone stale (a restarted Redis),
 * and is worth one retry on a new connection. */
static struct conn *thread_conn(struct redis_store *s, bool *fresh)
{
    struct conn *c = pthread_getspecific(s->key);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return NULL;
        c->store = s;
        pthread_mutex_lock(&s->lock);
        c->next = s->conns;
        s->conns = c;
        pthread_mutex_unlock(&s->lock);
        pthread_setspecific(s->key, c);
    }
    *fresh = !c->ctx;
    if (!c->ctx && connect_conn(s, c))
        return NULL;
    return c;
}

/* Space for one EVALSHA: six fixed words, two keys and seven values each. */
#define ARGS_MAX (6 + AG_PLAN_MAX * 9)
#define NUM_MAX 24

static int parse_reply(const redisReply *r, const struct ag_plan *plan,
                       struct ag_limit_result *res)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 * plan->n)
        return AG_ESTORE;
    for (size_t i = 0; i < 4 * plan->n; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER ||
            r->element[i]->integer < 0)
            return AG_ESTORE;
    for (size_t i = 0; i < plan->n; i++) {
        redisReply **e = r->element + 4 * i;
        res[i].allowed = e[0]->integer != 0;
        res[i].remaining = (uint32_t)e[1]->integer;
        res[i].retry_after_ms = (uint64_t)e[2]->integer;
        res[i].reset_after_ms = (uint64_t)e[3]->integer;
    }
    return AG_OK;
}

static int check_once(struct redis_store *s, const struct ag_plan *plan,
                      struct ag_limit_result *res)
{
    bool fresh;
    struct conn *c = thread_conn(s, &fresh);
    if (!c)
        return AG_ESTORE;

    const char *argv[ARGS_MAX];
    size_t lens[ARGS_MAX];
    char block_keys[AG_PLAN_MAX][AG_STORE_KEY_MAX + 2];
    char nums[AG_PLAN_MAX * 4 + 2][NUM_MAX];
    int argc = 0, k = 0;
#define ARG(str) (lens[argc] = strlen(str), argv[argc++] = (str))
#define NUM(fmt, v) (snprintf(nums[k], NUM_MAX, fmt, v), ARG(nums[k]), k++)
    ARG("EVALSHA");
    ARG(c->sha);
    NUM("%zu", 2 * plan->n);
    for (size_t i = 0; i < plan->n; i++) {
        snprintf(block_keys[i], sizeof block_keys[i], "%s:b", plan->ops[i].key);
        ARG(plan->ops[i].key);
        ARG(block_keys[i]);
    }
    char nonce[48];
    snprintf(nonce, sizeof nonce, "%s%" PRIxFAST64, s->instance,
             atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed));
    ARG(nonce);
    NUM("%zu", plan->n);
    ARG(plan->kind == AG_PLAN_FAILURE ? "record" : "check");
    for (size_t i = 0; i < plan->n; i++) {
        const struct ag_limit_op *op = &plan->ops[i];
        const struct ag_policy *p = op->policy;
        NUM("%d", (int)p->algorithm);
        NUM("%" PRIu32, p->limit);
        NUM("%" PRIu64, (uint64_t)p->window_s * 1000);
        NUM("%" PRIu64, (uint64_t)p->block_s * 1000);
        ARG(op->charge ? "1" : "0");
        ARG(op->shadow ? "1" : "0");
        ARG(op->member);
    }
#undef ARG
#undef NUM

    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r = command(c, argc, argv, lens);
        if (!r && !fresh && attempt == 0) {
            /* A stale connection: reconnect (and reload) once. */
            if (!(c = thread_conn(s, &fresh)))
                return AG_ESTORE;
            argv[1] = c->sha;
            continue;
        }
        if (!r)
            return AG_ESTORE;
        if (r->type == REDIS_REPLY_ERROR &&
            strncmp(r->str, "NOSCRIPT", 8) == 0 && attempt == 0) {
            freeReplyObject(r);
            if (load_script(s, c))
                return AG_ESTORE;
            argv[1] = c->sha;
            continue;
        }
        int rc = parse_reply(r, plan, res);
        if (rc)
            ag_log(AG_LOG_ERROR, "redis_script", "%s",
                   r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply shape");
        freeReplyObject(r);
        return rc;
    }
    return AG_ESTORE;
}

static int redis_check(struct ag_store *base, const struct ag_plan *plan,
                       struct ag_limit_result *res)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0)
        return AG_OK;
    if (atomic_load(&s->open))
        return AG_ESTORE;
    return outcome(s, check_once(s, plan, res));
}

static int clear_once(struct redis_store *s, const struct ag_plan *plan)
{
    const char *argv[1 + 2 * AG_PLAN_MAX];
    size_t lens[1 + 2 * AG_PLAN_MAX];
    char block_keys[AG_PLAN_MAX][AG_STORE_KEY_MAX + 2];
    int argc = 0;
    argv[argc] = "DEL";
    lens[argc++] = 3;
    for (size_t i = 0; i < plan->n; i++) {
        snprintf(block_keys[i], sizeof block_keys[i], "%s:b", plan->ops[i].key);
        argv[argc] = plan->ops[i].key;
        lens[argc++] = strlen(plan->ops[i].key);
        argv[argc] = block_keys[i];
        lens[argc++] = strlen(block_keys[i]);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        bool fresh;
        struct conn *c = thread_conn(s, &fresh);
        if (!c)
            return AG_ESTORE;
        redisReply *r = command(c, argc, argv, lens);
        if (!r && !fresh)
            continue;
        if (!r)
            return AG_ESTORE;
        int ok = r->type == REDIS_REPLY_INTEGER;
        freeReplyObject(r);
        return ok ? AG_OK : AG_ESTORE;
    }
    return AG_ESTORE;
}

static int redis_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0)
        return AG_OK;
    if (atomic_load(&s->open))
        return AG_ESTORE;
    return outcome(s, clear_once(s, plan));
}

static int ping_once(struct redis_store *s)
{
    const char *argv[] = {"PING"};
    bool fresh;
    struct conn *c = thread_conn(s, &fresh);
    if (!c)
        return AG_ESTORE;
    if (expect_ok(c, 1, argv, "PING") == AG_OK)
        return AG_OK;
    if (fresh || !(c = thread_conn(s, &fresh)))
        return AG_ESTORE;
    return expect_ok(c, 1, argv, "PING");
}

static int redis_ping(struct ag_store *base)
{
    struct redis_store *s = (struct redis_store *)base;
    if (atomic_load(&s->open))
        return AG_ESTORE;
    return outcome(s, ping_once(s));
}

/* The probe thread: while the breaker is open, tries a fresh connection
 * (with AUTH, SELECT and the script load) and a PING, backing off, and
 * closes the breaker when they succeed. */
static void *probe(void *arg)
{
    struct redis_store *s = arg;
    unsigned wait_ms = PROBE_MIN_MS;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        if (!atomic_load(&s->open)) {
            wait_ms = PROBE_MIN_MS;
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)wait_ms * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (!s->stopping &&
               pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
            ;
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->lock);
        struct conn c = {.store = s};
        const char *argv[] = {"PING"};
        bool up = connect_conn(s, &c) == AG_OK &&
                  expect_ok(&c, 1, argv, "PING") == AG_OK;
        drop(&c);
        pthread_mutex_lock(&s->lock);
        if (up) {
            atomic_store(&s->failures, 0);
            atomic_store(&s->open, false);
            if (s->metrics)
                atomic_store(&s->metrics->breaker_open, 0);
            ag_log(AG_LOG_WARN, "redis_breaker_closed", "Redis answers again");
        } else if (wait_ms < PROBE_MAX_MS) {
            wait_ms = wait_ms * 2 > PROBE_MAX_MS ? PROBE_MAX_MS : wait_ms * 2;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void redis_destroy(struct ag_store *base)
{
    struct redis_store *s = (struct redis_store *)base;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->probe, NULL);
    pthread_cond_destroy(&s->wake);
    struct conn *c = s->conns;
    while (c) {
        struct conn *next = c->next;
        drop(c);
        free(c);
        c = next;
    }
    pthread_key_delete(s->key);
    pthread_mutex_destroy(&s->lock);
    sodium_memzero(s->addr.password, sizeof s->addr.password);
    free(s->script);
    free(s);
}

static const struct ag_store_ops redis_ops = {
    .name = "redis",
    .check = redis_check,
    .clear = redis_clear,
    .ping = redis_ping,
    .destroy = redis_destroy,
};

struct ag_store *ag_store_redis_new(const struct ag_redis_addr *addr,
                                    unsigned timeout_ms,
                                    struct ag_metrics *metrics)
{
    struct redis_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->script = compose_script(&s->script_len);
    if (!s->script || pthread_key_create(&s->key, NULL)) {
        free(s->script);
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    s->metrics = metrics;
    atomic_init(&s->failures, 0);
    atomic_init(&s->open, false);
    if (pthread_create(&s->probe, NULL, probe, s)) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        pthread_key_delete(s->key);
        free(s->script);
        free(s);
        return NULL;
    }
    s->base.ops = &redis_ops;

    s->addr = *addr;
    s->timeout.tv_sec = timeout_ms / 1000;
    s->timeout.tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000;
    unsigned char id[8];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(s->instance, sizeof s->instance, id, sizeof id);
    atomic_init(&s->seq, 0);
    return &s->base;
}
