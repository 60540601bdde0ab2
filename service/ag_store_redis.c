/*
 * The Redis store: runs the lua/ code (common.lua, the algorithm files,
 * then the driver check.lua), one round trip per check.
 *
 * On Redis 7 and later it is a function library (FUNCTION LOAD, then FCALL
 * per check): its functions are created once, at load. A script run with
 * EVALSHA creates every function it defines on each run, which costs Redis
 * about a tenth of a login check's instructions (bench/script_cost.sh).
 * The library's name and its function's carry a hash of its text, so
 * instances of two versions share a Redis without replacing each other's
 * code.
 *
 * Where FUNCTION is refused (Redis 6, or an ACL or rename-command that
 * leaves it out) checks run as scripts with EVALSHA: one script per set of
 * algorithms (SCRIPTS of them, all loaded on every connection), so a login
 * check of three sliding logs does not pay for the four algorithms it does
 * not use. Both are loaded on every connection, in one round trip, so a
 * check formatted either way finds its code.
 *
 * Checks are pipelined ("auto-pipelining"): a caller formats its command,
 * queues it and sleeps; DISPATCHERS threads, each with its own hiredis
 * connection (a context is not thread-safe), take everything queued, write
 * it in one go and read the replies in order. While one batch is on the
 * wire the next one gathers, so under load many checks share each write
 * and read system call on both sides, and Redis serves them nearly at its
 * pipelined rate; with one check in flight it is still one round trip.
 */
#include "ag_store.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
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
#include "ag_redis_cmd.h"
#include "ag_redis_reply.h"

#define COMMON_SCRIPT "common.lua"
#define MAIN_SCRIPT "check.lua"
#define DISPATCHERS 2 /* connections, each with its batching thread */
#define BATCH_MAX 256 /* commands written in one go at most */
#define SCRIPTS (1u << AG_ALG_COUNT) /* by algorithm bit mask; 0 unused */
#define VERSION_HEX 16               /* the library's version: hash hex */

/* The circuit breaker: after FAIL_THRESHOLD failed operations in a row it
 * opens, and every operation fails at once, without touching Redis, until
 * the probe thread reaches Redis again. The probe waits PROBE_MIN_MS after
 * opening, then doubles its wait after each failed probe up to
 * PROBE_MAX_MS, so Redis is back in use within about a second of its
 * return. */
#define FAIL_THRESHOLD 3
#define PROBE_MIN_MS 100
#define PROBE_MAX_MS 1000

/* One queued command: formatted RESP, and where its reply goes. A
 * synchronous job lives on its caller's stack while the caller waits on
 * done; an asynchronous check (async != NULL) is on the heap and is
 * finished by the dispatcher, which then calls its callback. */
struct async_check;
struct job {
    char *cmd;
    size_t len;
    redisReply *reply; /* NULL if the command failed */
    bool sent;         /* it may have reached Redis: a failure is not retried */
    bool orphaned;     /* failed because an earlier reply of its batch did:
                          the breaker counted that connection failure once */
    sem_t done;
    struct async_check *async;
    struct job *next;
};

struct async_check {
    struct job job;
    const struct ag_plan *plan;
    struct ag_limit_result *res;
    ag_store_done_fn done;
    void *arg;
    int attempts;
    bool fcall; /* its command is an FCALL (else a script) */
};

struct redis_store;

struct dispatcher {
    struct redis_store *store;
    pthread_t thread;
    redisContext *ctx; /* this thread's only; NULL while disconnected */
};

struct redis_store {
    struct ag_store base;
    struct ag_redis_addr addr;
    struct timeval timeout;
    struct ag_metrics *metrics; /* borrowed; may be NULL */
    struct script {
        char *text; /* composed, NUL-terminated */
        size_t len;
        char sha[41]; /* its SHA1 once Redis told us; under lock */
    } scripts[SCRIPTS];
    struct library {
        char *text; /* "#!lua name=abuseguard_<version>" ... */
        size_t len;
        char function[sizeof "ag_check_" + VERSION_HEX];
    } library;
    atomic_int functions;     /* 1: Redis took the library, checks use FCALL;
                                 0: it refused it; -1: not known yet */
    char instance[17];        /* random hex, makes log members unique */
    atomic_uint_fast64_t seq; /* with instance, a per-check nonce */
    pthread_mutex_t lock;     /* guards the queue, sha, stopping */
    pthread_cond_t queued;    /* dispatchers wait on it */
    struct job *head, *tail;
    bool stopping;
    struct dispatcher dispatchers[DISPATCHERS];
    atomic_int failures; /* failed operations in a row */
    atomic_bool open;    /* the breaker is open */
    pthread_t probe;
    pthread_cond_t wake; /* the probe waits on it */
};

/* The line that makes check.lua the body of the library's function. */
#define DRIVER_HEAD "local function check(KEYS, ARGV)\n"

/* Test only (ag_store_redis_test_new): Lua that replaces common.lua's
 * clock. In the library it reads the time the test last set with the
 * function set_test_clock registers (a top-level local of a library keeps
 * its value from one call to the next); a script, which keeps nothing
 * between runs, refuses to run, so that a test never runs on Redis's own
 * time unawares. */
#define TEST_CLOCK_LUA                                                         \
    "local test_now\n"                                                         \
    "clock = function()\n"                                                     \
    "  return test_now or error('the test clock is not set')\n"                \
    "end\n"                                                                    \
    "local function set_test_clock(keys, args)\n"                              \
    "  test_now = string.match(args[1] or '', '^%d+$') or error('bad time')\n" \
    "  return 'OK'\n"                                                          \
    "end\n"
#define TEST_CLOCK_SCRIPT_LUA                                                  \
    "clock = function()\n"                                                     \
    "  error('the test clock runs only in the function library')\n"            \
    "end\n"

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

/* Lua code for the algorithms in mask (bit a for enum ag_algorithm a):
 * common.lua, <algorithm>.lua for each, then driver_head and the driver
 * check.lua, which sees the others' locals. NUL-terminated, length in
 * *len; NULL if out of memory. */
static char *compose_code(unsigned mask, const char *driver_head, size_t *len)
{
    size_t head = strlen(driver_head);
    size_t total = 1 + head;
    for (size_t i = 0; i < ag_embedded_lua_count; i++)
        total += ag_embedded_lua[i].len + 1;
    char *s = malloc(total);
    if (!s)
        return NULL;
    size_t n = 0;
    int rc = append_file(s, &n, COMMON_SCRIPT);
    for (int a = 0; !rc && a < AG_ALG_COUNT; a++) {
        char name[64];
        snprintf(name, sizeof name, "%s.lua",
                 ag_algorithm_name((enum ag_algorithm)a));
        if (mask & (1u << a))
            rc = append_file(s, &n, name);
    }
    memcpy(s + n, driver_head, head);
    n += head;
    rc = rc ? rc : append_file(s, &n, MAIN_SCRIPT);
    if (rc) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    *len = n;
    return s;
}

/* The function library: every algorithm, and the driver as the body of
 * the function it registers. Named by a hash of that code. test_clock:
 * the test build (ag_store_redis_test_new). */
static int compose_library(struct library *lib, bool test_clock)
{
    size_t n;
    char *code = compose_code(
        SCRIPTS - 1, test_clock ? TEST_CLOCK_LUA DRIVER_HEAD : DRIVER_HEAD, &n);
    if (!code)
        return AG_ENOMEM;
    unsigned char hash[VERSION_HEX / 2];
    char version[VERSION_HEX + 1];
    crypto_generichash(hash, sizeof hash, (const unsigned char *)code, n, NULL,
                       0);
    sodium_bin2hex(version, sizeof version, hash, sizeof hash);
    snprintf(lib->function, sizeof lib->function, "ag_check_%s", version);
    lib->text = malloc(n + 512);
    if (!lib->text) {
        free(code);
        return AG_ENOMEM;
    }
    int head = snprintf(lib->text, 64, "#!lua name=abuseguard_%s\n", version);
    memcpy(lib->text + head, code, n);
    int tail =
        snprintf(lib->text + (size_t)head + n, 128,
                 "end\nredis.register_function('%s', check)\n", lib->function);
    if (test_clock)
        tail += snprintf(lib->text + (size_t)head + n + tail, 128,
                         "redis.register_function('ag_test_clock_%s', "
                         "set_test_clock)\n",
                         version);
    lib->len = (size_t)head + n + (size_t)tail;
    free(code);
    return AG_OK;
}

static void count(struct redis_store *s, atomic_uint_fast64_t *counter)
{
    if (s->metrics)
        atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
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

static void drop(redisContext **ctx)
{
    if (*ctx)
        redisFree(*ctx);
    *ctx = NULL;
}

/* Counts and logs a failed call on ctx. */
static void failed(struct redis_store *s, const redisContext *ctx)
{
    const char *why = ctx ? ctx->errstr : "out of memory";
    bool timeout =
        strstr(why, "temporarily unavailable") || strstr(why, "timed out");
    if (s->metrics)
        count(s, timeout ? &s->metrics->redis_timeouts
                         : &s->metrics->redis_errors);
    ag_log(AG_LOG_WARN, timeout ? "redis_timeout" : "redis_error", "%s", why);
}

/* Runs one command synchronously on ctx (connection set-up only). */
static redisReply *sync_command(struct redis_store *s, redisContext **ctx,
                                int argc, const char **argv, const size_t *lens)
{
    redisReply *r = redisCommandArgv(*ctx, argc, argv, lens);
    if (!r) {
        failed(s, *ctx);
        drop(ctx);
    }
    return r;
}

static int expect_type(struct redis_store *s, redisContext **ctx, int argc,
                       const char **argv, const size_t *lens, int type)
{
    redisReply *r = sync_command(s, ctx, argc, argv, lens);
    if (!r)
        return AG_ESTORE;
    int ok = r->type == type;
    if (!ok)
        ag_log(AG_LOG_ERROR, "redis_error", "%s failed: %s", argv[0],
               r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    ag_redis_reply_free(r);
    if (!ok)
        drop(ctx);
    return ok ? AG_OK : AG_ESTORE;
}

/* Sets whether checks use FCALL (1) or scripts (0), logging a change;
 * why: Redis's words when it refused the library. */
static void use_library(struct redis_store *s, int use, const char *why)
{
    if (atomic_exchange(&s->functions, use) == use)
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
static bool note_library(struct redis_store *s, const redisReply *r)
{
    bool err = r->type == REDIS_REPLY_ERROR;
    if (r->type == REDIS_REPLY_STRING ||
        (err && strstr(r->str, "already exists"))) {
        use_library(s, 1, NULL);
        return true;
    }
    if (err && passing(r->str))
        ag_log(AG_LOG_WARN, "redis_functions", "FUNCTION LOAD failed: %s",
               r->str);
    else
        use_library(s, 0, err ? r->str : "unexpected reply");
    return false;
}

/* Loads on *ctx in one round trip (pipelined): the function library if
 * library is set, then scripts[from..to), noting their SHA1s. A refused
 * library is noted (checks then use the scripts), not a failure; a script
 * that fails to load drops *ctx. */
static int load_scripts(struct redis_store *s, redisContext **ctx, bool library,
                        unsigned from, unsigned to)
{
    if (!*ctx)
        return AG_ESTORE;
    if (library) {
        /* Not REPLACE: "already exists" is this code, and answering it
         * costs Redis nothing, where a replacement compiles the library
         * again and goes to the AOF and the replicas. */
        const char *argv[] = {"FUNCTION", "LOAD", s->library.text};
        size_t lens[] = {8, 4, s->library.len};
        if (redisAppendCommandArgv(*ctx, 3, argv, lens) != REDIS_OK) {
            failed(s, *ctx);
            drop(ctx);
            return AG_ESTORE;
        }
    }
    for (unsigned m = from; m < to; m++) {
        const char *argv[] = {"SCRIPT", "LOAD", s->scripts[m].text};
        size_t lens[] = {6, 4, s->scripts[m].len};
        if (redisAppendCommandArgv(*ctx, 3, argv, lens) != REDIS_OK) {
            failed(s, *ctx);
            drop(ctx);
            return AG_ESTORE;
        }
    }
    if (library) {
        redisReply *r = NULL;
        if (redisGetReply(*ctx, (void **)&r) != REDIS_OK) {
            failed(s, *ctx);
            drop(ctx);
            return AG_ESTORE;
        }
        note_library(s, r);
        ag_redis_reply_free(r);
    }
    bool ok = true;
    for (unsigned m = from; m < to; m++) {
        redisReply *r = NULL;
        if (redisGetReply(*ctx, (void **)&r) != REDIS_OK) {
            failed(s, *ctx);
            drop(ctx);
            return AG_ESTORE;
        }
        if (r->type == REDIS_REPLY_STRING && r->len == 40) {
            pthread_mutex_lock(&s->lock);
            memcpy(s->scripts[m].sha, r->str, 41);
            pthread_mutex_unlock(&s->lock);
        } else if (ok) {
            ag_log(AG_LOG_ERROR, "redis_error", "SCRIPT LOAD failed: %s",
                   r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            ok = false;
        }
        ag_redis_reply_free(r);
    }
    if (!ok)
        drop(ctx);
    return ok ? AG_OK : AG_ESTORE;
}

/* Loads the library and every script on a new connection: one round
 * trip. */
static int load_on(struct redis_store *s, redisContext **ctx)
{
    return load_scripts(s, ctx, true, 1, SCRIPTS);
}

/* What a check's error reply r says about its code: Redis lost the script
 * or the library (a flushed or restarted Redis), or refuses FCALL itself
 * (Redis or its ACL changed under a running service). */
enum lost { LOST_NOTHING, LOST_SCRIPT, LOST_LIBRARY, LOST_FCALL };

static enum lost lost_code(const redisReply *r, bool fcall)
{
    if (!r || r->type != REDIS_REPLY_ERROR)
        return LOST_NOTHING;
    if (strncmp(r->str, "NOSCRIPT", 8) == 0)
        return LOST_SCRIPT;
    if (fcall && strstr(r->str, "Function not found"))
        return LOST_LIBRARY;
    if (fcall && (strstr(r->str, "unknown command") ||
                  strncmp(r->str, "NOPERM", 6) == 0))
        return LOST_FCALL;
    return LOST_NOTHING;
}

/* A new connection with the timeouts set, authenticated, on the right

 * database, with the script loaded; NULL if any step fails. */
static redisContext *connect_redis(struct redis_store *s)
{
    const struct ag_redis_addr *a = &s->addr;
    redisContext *ctx =
        a->kind == AG_REDIS_UNIX
            ? redisConnectUnixWithTimeout(a->path, s->timeout)
            : redisConnectWithTimeout(a->host, a->port, s->timeout);
    if (!ctx || ctx->err) {
        ag_log(AG_LOG_WARN, "redis_connect", "%s",
               ctx ? ctx->errstr : "out of memory");
        if (s->metrics)
            count(s, &s->metrics->redis_errors);
        drop(&ctx);
        return NULL;
    }
    /* Its replies are built by ag_redis_reply (fewer allocations) and freed
     * with ag_redis_reply_free. */
    ctx->reader->fn = &ag_redis_reply_functions;
    if (redisSetTimeout(ctx, s->timeout) != REDIS_OK) {
        drop(&ctx);
        return NULL;
    }
    if (a->password[0]) {
        const char *argv[] = {"AUTH", a->password};
        size_t lens[] = {4, strlen(a->password)};
        if (expect_type(s, &ctx, 2, argv, lens, REDIS_REPLY_STATUS))
            return NULL;
    }
    if (a->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", a->db);
        const char *argv[] = {"SELECT", db};
        size_t lens[] = {6, strlen(db)};
        if (expect_type(s, &ctx, 2, argv, lens, REDIS_REPLY_STATUS))
            return NULL;
    }
    if (load_on(s, &ctx))
        return NULL;
    return ctx;
}

static void enqueue(struct redis_store *s, struct job *j);
static int parse_reply(const redisReply *r, const struct ag_plan *plan,
                       struct ag_limit_result *res);
static int outcome(struct redis_store *s, int rc);
static const struct script *plan_script(const struct redis_store *s,
                                        const struct ag_plan *plan);

/* Whether a check that found its code missing (lost) may go again after
 * reloading it on *ctx, where Redis answered: NOSCRIPT reloads only the
 * check's script (each of a batch's checks may ask); "Function not
 * found" the library. *as_script: it must go again as a script instead,
 * the library being refused (for now, or for good). */
static bool reload(struct redis_store *s, redisContext **ctx, enum lost lost,
                   const struct ag_plan *plan, const redisReply *r,
                   bool *as_script)
{
    *as_script = false;
    if (lost == LOST_SCRIPT) {
        unsigned m = (unsigned)(plan_script(s, plan) - s->scripts);
        return load_scripts(s, ctx, false, m, m + 1) == AG_OK;
    }
    if (lost == LOST_FCALL)
        use_library(s, 0, r->str);
    else if (lost != LOST_LIBRARY || load_scripts(s, ctx, true, 1, 1) != AG_OK)
        return false;
    *as_script = lost == LOST_FCALL || atomic_load(&s->functions) != 1;
    return true;
}

static long long format_check(struct redis_store *s, const struct ag_plan *plan,
                              bool library, char **cmd, bool *fcall);

/* Completes an asynchronous check on the dispatcher thread: retries what
 * never left, reloads code Redis lost, parses, and calls back. */
static void finish_async(struct redis_store *s, struct dispatcher *d,
                         struct async_check *a)
{
    redisReply *r = a->job.reply;
    a->job.reply = NULL;
    a->job.next = NULL;
    bool as_script = false;
    if (a->attempts++ == 0 &&
        ((!r && !a->job.sent) ||
         reload(s, &d->ctx, lost_code(r, a->fcall), a->plan, r, &as_script))) {
        ag_redis_reply_free(r);
        r = NULL;
        long long len = 0;
        if (as_script) {
            free(a->job.cmd);
            len = format_check(s, a->plan, false, &a->job.cmd, &a->fcall);
            a->job.len = (size_t)(len > 0 ? len : 0);
        }
        if (len >= 0) {
            enqueue(s, &a->job);
            return;
        }
        a->job.cmd = NULL; /* out of memory: fail the check */
    }
    int rc = r ? parse_reply(r, a->plan, a->res) : AG_ESTORE;
    if (r && rc)
        ag_log(AG_LOG_ERROR, "redis_script", "%s",
               r->type == REDIS_REPLY_ERROR ? r->str
                                            : "unexpected reply shape");
    ag_redis_reply_free(r);
    if (!a->job.orphaned)
        rc = outcome(s, rc);
    ag_store_done_fn done = a->done;
    void *arg = a->arg;
    free(a->job.cmd);
    free(a);
    done(arg, rc);
}

/* Has Redis closed ctx (a restart, a failover, its idle timeout, CLIENT
 * KILL) while it sat idle? A batch written on it would be lost, its
 * commands maybe run and never answered; better to reconnect first. An
 * idle RESP2 connection has nothing to read unless it was closed. */
static bool stale(const redisContext *ctx)
{
    struct pollfd p = {.fd = ctx->fd, .events = POLLIN};
    return poll(&p, 1, 0) != 0;
}

/* Takes up to BATCH_MAX queued jobs; NULL once stopping and drained. */

static struct job *take_batch(struct redis_store *s, size_t *n)
{
    pthread_mutex_lock(&s->lock);
    while (!s->head && !s->stopping)
        pthread_cond_wait(&s->queued, &s->lock);
    struct job *first = s->head, *last = NULL;
    *n = 0;
    for (struct job *j = s->head; j && *n < BATCH_MAX; j = j->next) {
        last = j;
        (*n)++;
    }
    if (last) {
        s->head = last->next;
        if (!s->head)
            s->tail = NULL;
        last->next = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    return first;
}

static void *dispatch(void *arg)
{
    struct dispatcher *d = arg;
    struct redis_store *s = d->store;
    size_t n;
    struct job *batch;
    while ((batch = take_batch(s, &n))) {
        if (d->ctx && stale(d->ctx))
            drop(&d->ctx);
        if (!d->ctx && !atomic_load(&s->open))
            d->ctx = connect_redis(s);
        bool ok = d->ctx != NULL;
        for (struct job *j = batch; ok && j; j = j->next)
            ok =
                redisAppendFormattedCommand(d->ctx, j->cmd, j->len) == REDIS_OK;
        if (!ok)
            drop(&d->ctx); /* nothing of a half-built batch may be sent */
        /* Once the batch is being written, any command of it may have run
         * in Redis even if its reply never comes (a read timeout), and the
         * first read writes the whole batch: so a failed read leaves every
         * job of the batch sent, not only those before it. */
        bool written = ok;
        for (struct job *j = batch; j; j = j->next) {
            void *reply = NULL;
            j->sent = written;
            j->orphaned = written && !ok;
            if (ok && redisGetReply(d->ctx, &reply) != REDIS_OK) {
                failed(s, d->ctx);
                drop(&d->ctx);
                ok = false;
            }
            j->reply = reply;
        }
        /* Wake the callers last: a job lives on its caller's stack. */
        for (struct job *j = batch, *next; j; j = next) {
            next = j->next;
            if (j->async)
                finish_async(s, d, j->async);
            else
                sem_post(&j->done);
        }
    }
    drop(&d->ctx);
    return NULL;
}

static void enqueue(struct redis_store *s, struct job *j)
{
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = j;
    else
        s->head = j;
    s->tail = j;
    pthread_cond_signal(&s->queued);
    pthread_mutex_unlock(&s->lock);
}

/* Queues cmd and waits for its reply; NULL if it failed, with *sent saying

 * whether it may have reached Redis. The caller frees the reply. */
static redisReply *call(struct redis_store *s, char *cmd, size_t len,
                        bool *sent, bool *orphaned)
{
    struct job j = {.cmd = cmd, .len = len};
    sem_init(&j.done, 0, 0);
    enqueue(s, &j);
    while (sem_wait(&j.done) != 0 && errno == EINTR)

        ;
    sem_destroy(&j.done);
    *sent = j.sent;
    if (orphaned)
        *orphaned = j.orphaned;
    return j.reply;
}

static redisReply *call_argv(struct redis_store *s, int argc, const char **argv,
                             const size_t *lens, bool *sent)
{
    char *cmd;
    *sent = false;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0)
        return NULL;
    redisReply *r = call(s, cmd, (size_t)len, sent, NULL);
    redisFreeCommand(cmd);
    return r;
}

/* The most a check command may take: the whole script (an EVAL before any
 * connection has loaded it) and AG_PLAN_MAX policies' keys and values. */
#define CHECK_CMD_MAX (1u << 20)

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

/* The script for plan's algorithms. */
static const struct script *plan_script(const struct redis_store *s,
                                        const struct ag_plan *plan)
{
    unsigned mask = 0;
    for (size_t i = 0; i < plan->n; i++)
        mask |= 1u << plan->ops[i].policy->algorithm;
    return &s->scripts[mask];
}

/* A policy's spec, one argument (lua/check.lua): "algorithm limit
 * window_ms block_ms charge shadow". The library parses each distinct
 * spec once and remembers it. */
#define SPEC_MAX (6 * (AG_UINT_TEXT + 1))

static size_t spec_uint(char *at, uint64_t v, char sep)
{
    char out[AG_UINT_TEXT];
    size_t len;
    const char *digits = ag_uint_text(out, v, &len);
    memcpy(at, digits, len);
    at[len] = sep;
    return len + 1;
}

static size_t format_spec(char spec[SPEC_MAX], const struct ag_limit_op *op)
{
    const struct ag_policy *p = op->policy;
    size_t n = spec_uint(spec, (uint64_t)p->algorithm, ' ');
    n += spec_uint(spec + n, p->limit, ' ');
    n += spec_uint(spec + n, (uint64_t)p->window_s * 1000, ' ');
    n += spec_uint(spec + n, (uint64_t)p->block_s * 1000, ' ');
    n += spec_uint(spec + n, op->charge, ' ');
    return n + spec_uint(spec + n, op->shadow, '\0') - 1;
}

/* Formats the check of plan as one RESP command (FCALL if library is set
 * and Redis has taken the library; else EVALSHA, or EVAL with the whole
 * script before any connection has loaded it) into *cmd, which the
 * caller frees. Returns its length, or -1. The arguments are laid out as
 * lua/check.lua describes; a block key is passed only for a policy with
 * block_s. Built with ag_redis_cmd: no printf, one growing allocation. */
static long long format_check(struct redis_store *s, const struct ag_plan *plan,
                              bool library, char **cmd, bool *fcall_out)
{
    const struct script *sc = plan_script(s, plan);
    bool fcall = library &&
                 atomic_load_explicit(&s->functions, memory_order_relaxed) == 1;
    *fcall_out = fcall;
    char sha[41];
    pthread_mutex_lock(&s->lock);
    memcpy(sha, sc->sha, sizeof sha);
    pthread_mutex_unlock(&s->lock);
    size_t nkeys = plan->n;
    for (size_t i = 0; i < plan->n; i++)
        nkeys += plan->ops[i].policy->block_s > 0;
    /* The nonce: the instance id, then the sequence number in hex (least
     * significant digit first: unique all the same). */
    char nonce[sizeof s->instance + 16];
    size_t nlen = strlen(s->instance);
    memcpy(nonce, s->instance, nlen);
    uint_fast64_t seq =
        atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
    do {
        nonce[nlen++] = "0123456789abcdef"[seq & 15];
        seq >>= 4;
    } while (seq);

    struct ag_buf b;
    ag_buf_init(&b, CHECK_CMD_MAX);
    /* Room for a typical command (the fixed words and, per policy, a key,
     * a spec and a member: a login check's is about 450 bytes) in one
     * allocation, below 1 KiB for up to four policies, so that malloc
     * serves it from its per-thread cache rather than its shared arena. */
    int rc = ag_buf_reserve(&b, (fcall || sha[0] ? 128 : sc->len + 128) +
                                    192 * plan->n);
    rc |= ag_redis_cmd_command(&b, 3 + nkeys + 2 + 2 * plan->n);
    /* One append per statement: the operands of | run in no set order. */
    if (fcall) {
        rc |= ag_redis_cmd_str(&b, "FCALL");
        rc |= ag_redis_cmd_str(&b, s->library.function);
    } else if (sha[0]) {
        rc |= ag_redis_cmd_str(&b, "EVALSHA");
        rc |= ag_redis_cmd_str(&b, sha);
    } else {
        rc |= ag_redis_cmd_str(&b, "EVAL");
        rc |= ag_redis_cmd_arg(&b, sc->text, sc->len);
    }
    rc |= ag_redis_cmd_uint(&b, nkeys);
    for (size_t i = 0; i < plan->n; i++) {
        const char *key = plan->ops[i].key;
        size_t klen = strlen(key);
        rc |= ag_redis_cmd_arg(&b, key, klen);
        if (plan->ops[i].policy->block_s > 0) {
            char block_key[AG_STORE_KEY_MAX + 2];
            memcpy(block_key, key, klen);
            memcpy(block_key + klen, ":b", 2);
            rc |= ag_redis_cmd_arg(&b, block_key, klen + 2);
        }
    }
    rc |= ag_redis_cmd_arg(&b, nonce, nlen);
    rc |= ag_redis_cmd_str(&b,
                           plan->kind == AG_PLAN_FAILURE ? "record" : "check");
    for (size_t i = 0; i < plan->n; i++) {
        const struct ag_limit_op *op = &plan->ops[i];
        char spec[SPEC_MAX];
        rc |= ag_redis_cmd_arg(&b, spec, format_spec(spec, op));
        rc |= ag_redis_cmd_str(&b, op->member);
    }
    if (rc) {
        ag_buf_free(&b);
        return -1;
    }
    *cmd = b.p;
    return (long long)b.len;
}

/* *orphaned: it failed only because its batch's connection failed on an
 * earlier reply, which the breaker has counted already. */
static int check_once(struct redis_store *s, const struct ag_plan *plan,
                      struct ag_limit_result *res, bool *orphaned)
{
    char *cmd;
    bool fcall;
    long long len = format_check(s, plan, true, &cmd, &fcall);
    if (len < 0)
        return AG_ENOMEM;
    int rc = AG_ESTORE;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool sent;
        redisReply *r = call(s, cmd, (size_t)len, &sent, orphaned);
        /* A check that may have run must not run again: it would be
         * recorded twice. One that never left may try a new connection. */
        if (!r && !sent)
            continue;
        if (!r)
            break;
        enum lost lost = lost_code(r, fcall);
        if (lost != LOST_NOTHING && attempt == 0) {
            /* Code Redis lost is loaded again, and the check tried again:
             * as a script if the library is refused. */
            bool as_script = lost == LOST_FCALL;
            if (as_script)
                use_library(s, 0, r->str);
            ag_redis_reply_free(r);
            const struct script *sc = plan_script(s, plan);
            const char *script[] = {"SCRIPT", "LOAD", sc->text};
            size_t script_lens[] = {6, 4, sc->len};
            const char *library[] = {"FUNCTION", "LOAD", s->library.text};
            size_t library_lens[] = {8, 4, s->library.len};
            if (lost == LOST_SCRIPT) {
                ag_redis_reply_free(
                    call_argv(s, 3, script, script_lens, &sent));
            } else if (lost == LOST_LIBRARY) {
                r = call_argv(s, 3, library, library_lens, &sent);
                as_script = !r || !note_library(s, r);
                ag_redis_reply_free(r);
            }
            if (as_script) {
                free(cmd);
                len = format_check(s, plan, false, &cmd, &fcall);
                if (len < 0)
                    return AG_ENOMEM;
            }
            continue;
        }
        rc = parse_reply(r, plan, res);
        if (rc)
            ag_log(AG_LOG_ERROR, "redis_script", "%s",
                   r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply shape");
        ag_redis_reply_free(r);
        break;
    }
    free(cmd);
    return rc;
}

static int redis_check(struct ag_store *base, const struct ag_plan *plan,
                       struct ag_limit_result *res)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0)
        return AG_OK;
    if (atomic_load(&s->open))
        return AG_ESTORE;
    bool orphaned = false;
    int rc = check_once(s, plan, res, &orphaned);
    return orphaned ? rc : outcome(s, rc);
}

static int redis_check_async(struct ag_store *base, const struct ag_plan *plan,
                             struct ag_limit_result *res, ag_store_done_fn done,
                             void *arg)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0 || atomic_load(&s->open))
        return plan->n == 0 ? AG_EINVAL : AG_ESTORE;
    struct async_check *a = calloc(1, sizeof *a);
    if (!a)
        return AG_ENOMEM;
    long long len = format_check(s, plan, true, &a->job.cmd, &a->fcall);
    if (len < 0) {
        free(a);
        return AG_ENOMEM;
    }
    a->job.len = (size_t)len;
    a->job.async = a;
    a->plan = plan;
    a->res = res;
    a->done = done;
    a->arg = arg;
    enqueue(s, &a->job);
    return AG_OK;
}

/* Runs argv (idempotent: DEL, PING) and expects a reply of type; one retry
 * on a broken connection. */
static int simple(struct redis_store *s, int argc, const char **argv,
                  const size_t *lens, int type)
{
    if (atomic_load(&s->open))
        return AG_ESTORE;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool sent;
        redisReply *r = call_argv(s, argc, argv, lens, &sent);

        if (!r)
            continue;
        int ok = r->type == type;
        ag_redis_reply_free(r);
        return outcome(s, ok ? AG_OK : AG_ESTORE);
    }
    return outcome(s, AG_ESTORE);
}

static int redis_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0)
        return AG_OK;
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
    return simple(s, argc, argv, lens, REDIS_REPLY_INTEGER);
}

static int redis_ping(struct ag_store *base)
{
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    return simple((struct redis_store *)base, 1, argv, lens,
                  REDIS_REPLY_STATUS);
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
        /* connect_redis ends with the script load: Redis answered. */
        redisContext *ctx = connect_redis(s);
        bool up = ctx != NULL;
        drop(&ctx);
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

static void free_scripts(struct redis_store *s)
{
    for (unsigned m = 0; m < SCRIPTS; m++)
        free(s->scripts[m].text);
    free(s->library.text);
}

static void redis_destroy(struct ag_store *base)
{
    struct redis_store *s = (struct redis_store *)base;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->queued);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->probe, NULL);
    for (int i = 0; i < DISPATCHERS; i++)
        pthread_join(s->dispatchers[i].thread, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->queued);
    pthread_mutex_destroy(&s->lock);
    sodium_memzero(s->addr.password, sizeof s->addr.password);
    free_scripts(s);
    free(s);
}

static const struct ag_store_ops redis_ops = {
    .name = "redis",
    .check = redis_check,
    .check_async = redis_check_async,
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
    if (compose_library(&s->library, false)) {
        free(s);
        return NULL;
    }
    for (unsigned m = 1; m < SCRIPTS; m++) {
        s->scripts[m].text = compose_code(m, "", &s->scripts[m].len);
        if (!s->scripts[m].text) {
            free_scripts(s);
            free(s);
            return NULL;
        }
    }
    s->base.ops = &redis_ops;
    s->addr = *addr;
    s->timeout.tv_sec = timeout_ms / 1000;
    s->timeout.tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000;
    s->metrics = metrics;
    unsigned char id[8];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(s->instance, sizeof s->instance, id, sizeof id);
    atomic_init(&s->seq, 0);
    atomic_init(&s->failures, 0);
    atomic_init(&s->open, false);
    atomic_init(&s->functions, -1);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->queued, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    /* Threads that fail to start are not waited for at destroy. */
    int started = 0;
    for (int i = 0; i < DISPATCHERS; i++) {
        s->dispatchers[i].store = s;
        if (pthread_create(&s->dispatchers[i].thread, NULL, dispatch,
                           &s->dispatchers[i]) == 0)
            started++;
    }
    if (started < DISPATCHERS ||
        pthread_create(&s->probe, NULL, probe, s) != 0) {
        /* Out of threads at start: give up cleanly. */
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->queued);
        pthread_mutex_unlock(&s->lock);
        for (int i = 0; i < started; i++)
            pthread_join(s->dispatchers[i].thread, NULL);
        free_scripts(s);
        free(s);
        return NULL;
    }
    return &s->base;
}

/* Test only. Swaps the code of s, which has not connected yet (it connects
 * at its first call), for the test build: the library's clock is the test
 * clock, and every script refuses to run. */
struct ag_store *ag_store_redis_test_new(const struct ag_redis_addr *addr,
                                         unsigned timeout_ms,
                                         char clock_function[AG_TEST_CLOCK_FN])
{
    struct ag_store *base = ag_store_redis_new(addr, timeout_ms, NULL);
    if (!base)
        return NULL;
    struct redis_store *s = (struct redis_store *)base;
    free_scripts(s);
    memset(&s->library, 0, sizeof s->library);
    memset(s->scripts, 0, sizeof s->scripts);
    int rc = compose_library(&s->library, true);
    for (unsigned m = 1; !rc && m < SCRIPTS; m++) {
        s->scripts[m].text =
            compose_code(m, TEST_CLOCK_SCRIPT_LUA, &s->scripts[m].len);
        rc = s->scripts[m].text ? AG_OK : AG_ENOMEM;
    }
    if (rc) {
        ag_store_destroy(base);
        return NULL;
    }
    snprintf(clock_function, AG_TEST_CLOCK_FN, "ag_test_clock_%s",
             s->library.function + strlen("ag_check_"));
    return base;
}
