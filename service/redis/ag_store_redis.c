/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store: the store function table over the pipeline
 * (ag_redis_pipe.c), the check command's wire format and its reply, and
 * the one state machine that decides what becomes of a check whose
 * command failed or whose code Redis lost. The Lua code is composed by
 * ag_redis_code.c, the circuit breaker's rules are ag_redis_breaker.c's.
 *
 * On Redis 7 and later a check is an FCALL of the function library; where
 * FUNCTION is refused it runs as a script with EVALSHA (see
 * ag_redis_code.h for why both exist, ag_redis_pipe.h for how each
 * connection loads them).
 *
 * The rules, in settle, for the synchronous check (the asynchronous one
 * and a wait on the caller's side) and the asynchronous one alike:
 * - A check whose command never left is tried once more (a new
 *   connection). One that may have reached Redis is never sent again: it
 *   could be counted twice.
 * - A check Redis answered with NOSCRIPT, or "Function not found", has its
 *   code loaded again on the connection that answered, and is queued once
 *   more (any dispatcher may take it: each connection loads the code when
 *   it connects, and again on the same answer); one
 *   whose FCALL is refused (NOPERM, unknown command) goes again as a
 *   script, and so do all checks after it.
 * - Each check's outcome counts toward the breaker, except a check that
 *   failed only because an earlier command of its batch did: a batch whose
 *   connection fails counts once.
 * - The breaker closes only when its probe's check succeeds (a write, on
 *   a key no policy uses): a Redis that answers but refuses writes, as one
 *   out of memory does, keeps it open.
 */
#include "ag_store_redis.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
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
#include "ag_redis_cmd.h"
#include "ag_redis_code.h"
#include "ag_redis_pipe.h"
#include "ag_redis_reply.h"

/* The most a check command may take: the whole script (an EVAL before any
 * connection has loaded it) and AG_PLAN_MAX policies' keys and values. */
#define CHECK_CMD_MAX (1u << 20)
/* A policy's spec, one argument (lua/check.lua): "algorithm limit
 * window_ms block_ms charge shadow", and " growth block_max_ms" for a
 * policy with blocks. */
/* Nine numbers, each with its separator, and the ratio's "r". */
#define SPEC_MAX (9 * (AG_UINT_TEXT + 1) + 1)
/* The key the breaker's probe checks. Policy names are not empty, so no
 * policy's "ag:<policy>:<digest>" key can be it (as AG_FP_KEY_PREFIX). */
#define PROBE_KEY "ag::probe"

struct redis_store {
    struct ag_store base;
    struct ag_redis_code code;
    struct ag_redis_breaker breaker;
    struct ag_redis_pipe *pipe;
    struct ag_metrics *metrics; /* borrowed; may be NULL */
    char instance[17];          /* random hex, makes log members unique */
    atomic_uint_fast64_t seq;   /* with instance, a per-check nonce */
    pthread_mutex_t lock;       /* guards stopping, for the probe */
    pthread_cond_t wake;        /* the probe waits on it */
    bool stopping;
    pthread_t probe;
    /* The probe's check: one fixed-window policy on PROBE_KEY, one second
     * long, so that its key expires within a second, with a limit no
     * number of instances probing reaches, so that it is always allowed
     * and so always written. */
    struct ag_policy probe_policy;
    struct ag_plan probe_plan;
    void (*redirect)(void *arg, const char *text); /* see ag_store_redis.h */
    void *redirect_arg;
    void (*breaker_fn)(void *arg, bool open); /* see ag_store_redis.h */
    void *breaker_arg;
};

/* One check in flight: its job in the pipe, and where its answer goes. A
 * synchronous check lives on its caller's stack, an asynchronous one on
 * the heap (heap), freed when it settles. */
struct check {
    struct ag_redis_job job; /* first: the job's done finds its check */
    struct redis_store *store;
    const struct ag_plan *plan;
    struct ag_limit_result *res;
    ag_store_done_fn done;
    void *arg;
    int attempts;
    bool fcall; /* its command is an FCALL (else a script) */
    bool heap;
};

/* What a check's error reply says about its code: Redis lost the script
 * or the library (a flushed or restarted Redis), or refuses FCALL itself
 * (Redis or its ACL changed under a running service). */
enum lost { LOST_NOTHING, LOST_SCRIPT, LOST_LIBRARY, LOST_FCALL };

/* The caller's side of a synchronous check. */
struct waiting {
    sem_t woken;
    int rc;
};

static unsigned plan_mask(const struct ag_plan *plan);
static size_t spec_uint(char *at, uint64_t v, char sep);
static size_t format_spec(char spec[SPEC_MAX], const struct ag_limit_op *op);
static bool grows(const struct ag_limit_op *op);
static long long format_check(struct redis_store *s, const struct ag_plan *plan,
                              const struct ag_limit_result *res, bool library,
                              char **cmd, bool *fcall_out);
static long long format_release(struct redis_store *s,
                                const struct ag_plan *plan,
                                const struct ag_limit_result *res,
                                const char *nonce, size_t nlen, char **cmd);
static int parse_reply(const redisReply *r, const struct ag_plan *plan,
                       struct ag_limit_result *res);
static enum lost lost_code(const redisReply *r, bool fcall);
static bool reload_lost(struct redis_store *s, struct ag_redis_conn *c,
                        enum lost lost, const struct ag_plan *plan,
                        const redisReply *r, bool *as_script);
static int outcome(struct redis_store *s, int rc, bool orphaned);
static void settle(struct ag_redis_job *j, struct ag_redis_conn *c);
static int start_check(struct redis_store *s, struct check *k,
                       const struct ag_plan *plan, struct ag_limit_result *res,
                       ag_store_done_fn done, void *arg);
static void wake_waiter(void *arg, int rc);
static int redis_check(struct ag_store *base, const struct ag_plan *plan,
                       struct ag_limit_result *res);
static int redis_check_async(struct ag_store *base, const struct ag_plan *plan,
                             struct ag_limit_result *res, ag_store_done_fn done,
                             void *arg);
static int simple(struct redis_store *s, int argc, const char **argv,
                  const size_t *lens, int type);
static int redis_clear(struct ag_store *base, const struct ag_plan *plan);
static int redis_ping(struct ag_store *base);
static long long format_probe(void *arg, char **cmd);
static bool probe_check(struct redis_store *s);
static void *probe(void *arg);
static void stop_probe(struct redis_store *s);
static void free_store(struct redis_store *s);
static void redis_destroy(struct ag_store *base);

/* The script for plan's algorithms: their bit mask. */
static unsigned plan_mask(const struct ag_plan *plan)
{
    unsigned mask = 0;
    for (size_t i = 0; i < plan->n; i++)
        mask |= 1u << plan->ops[i].policy->algorithm;
    return mask;
}

static size_t spec_uint(char *at, uint64_t v, char sep)
{
    char out[AG_UINT_TEXT];
    size_t len;
    const char *digits = ag_uint_text(out, v, &len);
    memcpy(at, digits, len);
    at[len] = sep;
    return len + 1;
}

/* The library parses each distinct spec once and remembers it. Only a
 * policy with blocks carries their growth, and only a conversion policy its
 * min_ratio (" r<ppm>", last): the specs of the others, and so a login
 * check's command, stay as short as before either existed. */
static size_t format_spec(char spec[SPEC_MAX], const struct ag_limit_op *op)
{
    const struct ag_policy *p = op->policy;
    bool ratio = p->algorithm == AG_ALG_CONVERSION;
    size_t n = spec_uint(spec, (uint64_t)p->algorithm, ' ');
    n += spec_uint(spec + n, p->limit, ' ');
    n += spec_uint(spec + n, (uint64_t)p->window_s * 1000, ' ');
    n += spec_uint(spec + n, (uint64_t)p->block_s * 1000, ' ');
    n += spec_uint(spec + n, op->charge, ' ');
    if (p->block_s == 0) {
        n += spec_uint(spec + n, op->shadow, ratio ? ' ' : '\0');
    } else {
        n += spec_uint(spec + n, op->shadow, ' ');
        n += spec_uint(spec + n, p->block_growth, ' ');
        n += spec_uint(spec + n, (uint64_t)p->block_max_s * 1000,
                       ratio ? ' ' : '\0');
    }
    if (ratio) {
        spec[n++] = 'r';
        n += spec_uint(spec + n, p->min_ratio_ppm, '\0');
    }
    return n - 1;
}

/* Whether op's blocks grow, and so pass their level key. */
static bool grows(const struct ag_limit_op *op)
{
    return op->policy->block_s > 0 && op->policy->block_growth > 1;
}

/* Formats the check of plan as one RESP command (FCALL if library is set
 * and Redis has taken the library; else EVALSHA, or EVAL with the whole
 * script before any connection has loaded it) into *cmd, which the
 * caller frees. Returns its length, or AG_ENOMEM, or AG_EINVAL for a
 * reserve or a release that would go as a script (none holds release.lua,
 * and cluster mode requires Redis 7 functions) or comes without its
 * nonce; those are logged. The arguments are laid out as lua/check.lua
 * describes (lua/release.lua for a release, whose undo tokens are read
 * from res); a block key is passed only for a policy with block_s, a
 * level key only for one whose blocks grow, the fingerprint set only for
 * a failure with a fingerprint. Built with ag_redis_cmd: no printf, one
 * growing allocation. */
static long long format_check(struct redis_store *s, const struct ag_plan *plan,
                              const struct ag_limit_result *res, bool library,
                              char **cmd, bool *fcall_out)
{
    unsigned mask = plan_mask(plan);
    const struct ag_redis_text *sc = &s->code.scripts[mask];
    bool fcall = library && ag_redis_pipe_fcall(s->pipe);
    *fcall_out = fcall;
    bool reserve = plan->kind == AG_PLAN_RESERVE;
    bool cluster = reserve || plan->kind == AG_PLAN_RELEASE;
    if (cluster && !fcall) {
        ag_log(AG_LOG_ERROR, "redis_reserve_refused",
               "a reserve or release needs Redis functions (FCALL), which "
               "this Redis refuses: it is not sent as a script");
        return AG_EINVAL;
    }
    if (!memchr(plan->nonce, '\0', sizeof plan->nonce) ||
        (cluster && !plan->nonce[0])) {
        ag_log(AG_LOG_ERROR, "redis_reserve_refused",
               "a reserve or release needs its caller's nonce, and a nonce "
               "ends within AG_NONCE_MAX");
        return AG_EINVAL;
    }
    /* An FCALL names the library's function: no SHA1 to look up. */
    char sha[41];
    sha[0] = '\0';
    if (!fcall)
        ag_redis_pipe_sha(s->pipe, mask, sha);
    bool record = plan->kind == AG_PLAN_FAILURE;
    bool fp = record && plan->fp[0];
    size_t nkeys = plan->n + fp;
    for (size_t i = 0; i < plan->n; i++)
        nkeys += (plan->ops[i].policy->block_s > 0) + grows(&plan->ops[i]);
    /* The nonce: the caller's, or the instance id, then the sequence
     * number in hex (least significant digit first: unique all the
     * same). */
    char made[sizeof s->instance + 16];
    const char *nonce = plan->nonce;
    size_t nlen = 0;
    if (nonce[0]) {
        nlen = strlen(nonce);
    } else {
        nlen = strlen(s->instance);
        memcpy(made, s->instance, nlen);
        uint_fast64_t seq =
            atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
        do {
            made[nlen++] = "0123456789abcdef"[seq & 15];
            seq >>= 4;
        } while (seq);
        nonce = made;
    }
    if (plan->kind == AG_PLAN_RELEASE)
        return format_release(s, plan, res, nonce, nlen, cmd);

    struct ag_buf b;
    ag_buf_init(&b, CHECK_CMD_MAX);
    /* Room for a typical command (the fixed words and, per policy, a key,
     * a spec and a member: a login check's is about 450 bytes) in one
     * allocation, below 1 KiB for up to four policies, so that malloc
     * serves it from its per-thread cache rather than its shared arena. */
    ag_buf_reserve(&b, (fcall || sha[0] ? 128 : sc->len + 128) + 192 * plan->n);
    ag_redis_cmd_command(&b, 3 + nkeys + 2 + 2 * record + 2 * plan->n);
    if (fcall) {
        ag_redis_cmd_str(&b, "FCALL");
        ag_redis_cmd_str(&b, s->code.function);
    } else if (sha[0]) {
        ag_redis_cmd_str(&b, "EVALSHA");
        ag_redis_cmd_str(&b, sha);
    } else {
        ag_redis_cmd_str(&b, "EVAL");
        ag_redis_cmd_arg(&b, sc->text, sc->len);
    }
    ag_redis_cmd_uint(&b, nkeys);
    for (size_t i = 0; i < plan->n; i++) {
        const char *key = plan->ops[i].key;
        size_t klen = strlen(key);
        ag_redis_cmd_arg(&b, key, klen);
        if (plan->ops[i].policy->block_s > 0) {
            char block_key[AG_STORE_KEY_MAX];
            size_t blen = ag_limiter_block_key(&plan->ops[i], block_key);
            ag_redis_cmd_arg(&b, block_key, blen);
        }
        if (grows(&plan->ops[i])) {
            char level_key[AG_STORE_KEY_MAX];
            size_t llen = ag_limiter_level_key(&plan->ops[i], level_key);
            ag_redis_cmd_arg(&b, level_key, llen);
        }
    }
    if (fp)
        ag_redis_cmd_str(&b, plan->fp_key);
    ag_redis_cmd_arg(&b, nonce, nlen);
    ag_redis_cmd_str(&b, record                       ? "record"
                         : reserve                    ? "reserve"
                         : plan->kind == AG_PLAN_PEEK ? "peek"
                                                      : "check");
    if (record) {
        ag_redis_cmd_str(&b, fp ? plan->fp : "");
        ag_redis_cmd_uint(&b, fp ? (uint64_t)plan->fp_window_s * 1000 : 0);
    }
    for (size_t i = 0; i < plan->n; i++) {
        const struct ag_limit_op *op = &plan->ops[i];
        char spec[SPEC_MAX];
        ag_redis_cmd_arg(&b, spec, format_spec(spec, op));
        ag_redis_cmd_str(&b, op->member);
    }
    /* The buffer kept the first error of the appends above, if any. */
    if (ag_buf_error(&b) != AG_OK) {
        ag_buf_free(&b);
        return AG_ENOMEM;
    }
    *cmd = b.p;
    return (long long)b.len;
}

/* A release (lua/release.lua): an FCALL of the library's release function
 * with each policy's state key, then the nonce, then per policy its spec,
 * its member and the undo token its reserve reported in res. */
static long long format_release(struct redis_store *s,
                                const struct ag_plan *plan,
                                const struct ag_limit_result *res,
                                const char *nonce, size_t nlen, char **cmd)
{
    struct ag_buf b;
    ag_buf_init(&b, CHECK_CMD_MAX);
    ag_buf_reserve(&b, 128 + 192 * plan->n);
    ag_redis_cmd_command(&b, 3 + plan->n + 1 + 3 * plan->n);
    ag_redis_cmd_str(&b, "FCALL");
    ag_redis_cmd_str(&b, s->code.release);
    ag_redis_cmd_uint(&b, plan->n);
    for (size_t i = 0; i < plan->n; i++)
        ag_redis_cmd_str(&b, plan->ops[i].key);
    ag_redis_cmd_arg(&b, nonce, nlen);
    for (size_t i = 0; i < plan->n; i++) {
        const struct ag_limit_op *op = &plan->ops[i];
        char spec[SPEC_MAX];
        ag_redis_cmd_arg(&b, spec, format_spec(spec, op));
        ag_redis_cmd_str(&b, op->member);
        ag_redis_cmd_uint(&b, res[i].undo);
    }
    if (ag_buf_error(&b) != AG_OK) {
        ag_buf_free(&b);
        return AG_ENOMEM;
    }
    *cmd = b.p;
    return (long long)b.len;
}

/* Fills res from a check's reply: four integers per policy, five for a
 * reserve (its undo token last; 0 in every other plan's results), six for
 * a peek (its running block's milliseconds and its block level last). A
 * release answers one integer, the policies it undid something for, and
 * fills nothing: its res holds its reserve's results. */
static int parse_reply(const redisReply *r, const struct ag_plan *plan,
                       struct ag_limit_result *res)
{
    if (plan->kind == AG_PLAN_RELEASE)
        return r->type == REDIS_REPLY_INTEGER && r->integer >= 0 &&
                       (unsigned long long)r->integer <= plan->n
                   ? AG_OK
                   : AG_ESTORE;
    bool peek = plan->kind == AG_PLAN_PEEK;
    size_t w = plan->kind == AG_PLAN_RESERVE ? 5 : peek ? 6 : 4;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != w * plan->n)
        return AG_ESTORE;
    for (size_t i = 0; i < w * plan->n; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER ||
            r->element[i]->integer < 0)
            return AG_ESTORE;
    for (size_t i = 0; i < plan->n; i++) {
        redisReply **e = r->element + w * i;
        res[i].allowed = e[0]->integer != 0;
        res[i].remaining = (uint32_t)e[1]->integer;
        res[i].retry_after_ms = (uint64_t)e[2]->integer;
        res[i].reset_after_ms = (uint64_t)e[3]->integer;
        res[i].undo = w == 5 ? (uint64_t)e[4]->integer : 0;
        res[i].blocked_ms = peek ? (uint64_t)e[4]->integer : 0;
        res[i].block_level = peek ? (uint32_t)e[5]->integer : 0;
    }
    return AG_OK;
}

/* A Redis Cluster redirection: MOVED (the slot lives elsewhere) or ASK
 * (it is moving there). Either way the command did not run. */
static bool redirected(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "MOVED ", 6) == 0 ||
            strncmp(r->str, "ASK ", 4) == 0);
}

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

/* Whether a check that found its code missing (lost) may go again after
 * reloading it on c, where Redis answered: NOSCRIPT reloads only the
 * check's script (each of a batch's checks may ask); "Function not
 * found" the library. *as_script: it must go again as a script instead,
 * the library being refused (for now, or for good). */
static bool reload_lost(struct redis_store *s, struct ag_redis_conn *c,
                        enum lost lost, const struct ag_plan *plan,
                        const redisReply *r, bool *as_script)
{
    *as_script = false;
    if (lost == LOST_SCRIPT)
        return ag_redis_conn_load(c, false, plan_mask(plan)) == AG_OK;
    if (lost == LOST_FCALL)
        ag_redis_pipe_refuse_library(s->pipe, r->str);
    else if (lost != LOST_LIBRARY || ag_redis_conn_load(c, true, 0) != AG_OK)
        return false;
    *as_script = lost == LOST_FCALL || !ag_redis_pipe_fcall(s->pipe);
    return true;
}

/* Records how an operation went with the breaker, logging and counting
 * its opening and waking the probe. Returns rc. */
static int outcome(struct redis_store *s, int rc, bool orphaned)
{
    if (!ag_redis_breaker_record(&s->breaker, rc, orphaned))
        return rc;
    ag_log(AG_LOG_ERROR, "redis_breaker_open",
           "Redis failing: checks use the fallback until it answers");
    ag_metrics_count(s->metrics, AG_M_BREAKER_OPENS);
    ag_metrics_set(s->metrics, AG_M_BREAKER_OPEN, 1);
    pthread_mutex_lock(&s->lock);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    if (s->breaker_fn)
        s->breaker_fn(s->breaker_arg, true);
    return rc;
}

/* The state machine, run as each check's job is done on a dispatcher
 * thread (c, its connection): retries what never left, reloads code Redis
 * lost, once; else parses, records the outcome and calls back. */
static void settle(struct ag_redis_job *j, struct ag_redis_conn *c)
{
    struct check *k = (struct check *)j;
    struct redis_store *s = k->store;
    redisReply *r = j->reply;
    j->reply = NULL;
    bool as_script = false;
    int failed = AG_ESTORE; /* the check's error if it has no reply */
    if (k->attempts++ == 0 &&
        ((!r && !j->sent) ||
         reload_lost(s, c, lost_code(r, k->fcall), k->plan, r, &as_script))) {
        ag_redis_reply_free(r);
        r = NULL;
        long long len = 0;
        if (as_script) {
            free(j->cmd);
            len = format_check(s, k->plan, k->res, false, &j->cmd, &k->fcall);
            j->len = (size_t)(len > 0 ? len : 0);
        }
        if (len >= 0) {
            ag_redis_pipe_send(s->pipe, j);
            return;
        }
        /* Out of memory, or a reserve or release that may not go as a
         * script: fail the check. */
        j->cmd = NULL;
        failed = (int)len;
    }
    int rc;
    if (s->redirect && redirected(r)) {
        /* The node answered and ran nothing: no failure to count. */
        s->redirect(s->redirect_arg, r->str);
        outcome(s, AG_OK, j->orphaned);
        rc = AG_EREDIRECT;
    } else {
        rc = r ? parse_reply(r, k->plan, k->res) : failed;
        if (r && rc)
            ag_log(AG_LOG_ERROR, "redis_script", "%s",
                   r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply shape");
        /* A refusal is the caller's (or the deployment's) to fix, not
         * Redis failing: the breaker does not count it. */
        if (rc != AG_EINVAL)
            rc = outcome(s, rc, j->orphaned);
    }
    ag_redis_reply_free(r);
    /* k is not touched after done: a synchronous caller's returns. */
    ag_store_done_fn done = k->done;
    void *arg = k->arg;
    free(j->cmd);
    if (k->heap)
        free(k);
    done(arg, rc);
}

/* Formats plan's check into k and sends it; settle calls done. An error
 * (the breaker open, out of memory, a reserve or release refused) is
 * returned and done is not called. */
static int start_check(struct redis_store *s, struct check *k,
                       const struct ag_plan *plan, struct ag_limit_result *res,
                       ag_store_done_fn done, void *arg)
{
    if (ag_redis_breaker_is_open(&s->breaker))
        return AG_ESTORE;
    long long len = format_check(s, plan, res, true, &k->job.cmd, &k->fcall);
    if (len < 0)
        return (int)len;
    k->job.len = (size_t)len;
    k->job.asking = plan->asking;
    k->job.done = settle;
    k->store = s;
    k->plan = plan;
    k->res = res;
    k->done = done;
    k->arg = arg;
    ag_redis_pipe_send(s->pipe, &k->job);
    return AG_OK;
}

static void wake_waiter(void *arg, int rc)
{
    struct waiting *w = arg;
    w->rc = rc;
    sem_post(&w->woken);
}

/* The asynchronous check and a wait: the same rules, in settle. */
static int redis_check(struct ag_store *base, const struct ag_plan *plan,
                       struct ag_limit_result *res)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0)
        return AG_OK;
    struct check k = {.heap = false};
    struct waiting w;
    sem_init(&w.woken, 0, 0);
    int rc = start_check(s, &k, plan, res, wake_waiter, &w);
    if (rc == AG_OK) {
        while (sem_wait(&w.woken) != 0 && errno == EINTR)
            ;
        rc = w.rc;
    }
    sem_destroy(&w.woken);
    return rc;
}

static int redis_check_async(struct ag_store *base, const struct ag_plan *plan,
                             struct ag_limit_result *res, ag_store_done_fn done,
                             void *arg)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0 || ag_redis_breaker_is_open(&s->breaker))
        return plan->n == 0 ? AG_EINVAL : AG_ESTORE;
    struct check *k = calloc(1, sizeof *k);
    if (!k)
        return AG_ENOMEM;
    k->heap = true;
    int rc = start_check(s, k, plan, res, done, arg);
    if (rc)
        free(k);
    return rc;
}

/* Runs argv (DEL, PING) and expects a reply of type; one retry on a new
 * connection if it never left. One that may have reached Redis is not
 * sent again, like a check: a DEL run twice could forgive what was
 * counted in between. AG_EUNKNOWN then: it may have been done. */
static int simple(struct redis_store *s, int argc, const char **argv,
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
            outcome(s, AG_ESTORE, false);
            return AG_EUNKNOWN;
        }
        if (s->redirect && redirected(r)) {
            /* A cluster node that does not hold the keys: nothing ran,
             * and the node answered (see ag_store.h). The callback runs
             * on this, the caller's, thread. */
            s->redirect(s->redirect_arg, r->str);
            ag_redis_reply_free(r);
            outcome(s, AG_OK, false);
            return AG_EREDIRECT;
        }
        int ok = r->type == type;
        ag_redis_reply_free(r);
        return outcome(s, ok ? AG_OK : AG_ESTORE, false);
    }
    return outcome(s, AG_ESTORE, false);
}

static int redis_clear(struct ag_store *base, const struct ag_plan *plan)
{
    struct redis_store *s = (struct redis_store *)base;
    if (plan->n == 0)
        return AG_OK;
    /* Every key of each op, whatever its policy says now: an admin may
     * have turned its blocks or their growth off since they were set. The
     * lockout marker goes with them, so that the key's next lockout is an
     * event again; all four share the key's hash tag. */
    const char *argv[1 + 4 * AG_PLAN_MAX];
    size_t lens[1 + 4 * AG_PLAN_MAX];
    char block_keys[AG_PLAN_MAX][AG_STORE_KEY_MAX];
    char level_keys[AG_PLAN_MAX][AG_STORE_KEY_MAX];
    char mark_keys[AG_PLAN_MAX][AG_STORE_KEY_MAX];
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
    return simple((struct redis_store *)base, 1, argv, lens,
                  REDIS_REPLY_STATUS);
}

static long long format_probe(void *arg, char **cmd)
{
    struct redis_store *s = arg;
    bool fcall;
    return format_check(s, &s->probe_plan, NULL, true, cmd, &fcall);
}

/* Whether Redis runs checks again: the probe's check, formatted as every
 * check is (FCALL, or a script where FUNCTION is refused), on a fresh
 * connection. A PING or the code load would not do: a Redis out of memory
 * (maxmemory with noeviction) answers both and refuses every check, and
 * the breaker would close only to open again a few checks later. */
static bool probe_check(struct redis_store *s)
{
    redisReply *r = ag_redis_pipe_probe(s->pipe, format_probe, s);
    struct ag_limit_result res;
    /* A cluster node that sends the probe's key elsewhere answers all the
     * same (and the store's next refresh finds it a new key). */
    bool up =
        (r && parse_reply(r, &s->probe_plan, &res) == AG_OK && res.allowed) ||
        (s->redirect && redirected(r));
    if (r && !up)
        ag_log(AG_LOG_WARN, "redis_probe_failed", "%s",
               r->type == REDIS_REPLY_ERROR ? r->str
                                            : "unexpected reply shape");
    ag_redis_reply_free(r);
    return up;
}

/* The probe thread: while the breaker is open, runs the probe's check on
 * the breaker's schedule, and closes the breaker when one succeeds. */
static void *probe(void *arg)
{
    struct redis_store *s = arg;
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
        bool up = probe_check(s);
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

static void stop_probe(struct redis_store *s)
{
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->probe, NULL);
}

/* Frees what ag_store_redis_new made; the probe is stopped already (or
 * never started). */
static void free_store(struct redis_store *s)
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
    struct redis_store *s = (struct redis_store *)base;
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

static void fire(struct redis_store *s, int argc, const char **argv)
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
    struct redis_store *s = (struct redis_store *)base;
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
    struct redis_store *s = (struct redis_store *)base;
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
    struct redis_store *s;
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
    if (k->s->redirect && redirected(j->reply))
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
    struct redis_store *s = (struct redis_store *)base;
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
    struct redis_store *s = (struct redis_store *)base;
    if (ag_redis_breaker_is_open(&s->breaker))
        return AG_ESTORE;
    bool sent;
    redisReply *r = ag_redis_pipe_call(s->pipe, argc, argv, lens, &sent);
    if (!r)
        return AG_ESTORE;
    if (s->redirect && redirected(r)) {
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
    struct redis_store *s = (struct redis_store *)base;
    if (ag_redis_breaker_is_open(&s->breaker))
        return;
    fire(s, 3, (const char *[]){"PUBLISH", channel, message});
}

static const struct ag_store_ops redis_ops = {
    .name = "redis",
    .check = redis_check,
    .check_async = redis_check_async,
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
    struct redis_store *s = calloc(1, sizeof *s);
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
    /* Out of threads at start: give up cleanly. */
    if (!s->pipe || pthread_create(&s->probe, NULL, probe, s) != 0) {
        free_store(s);
        return NULL;
    }
    return &s->base;
}
