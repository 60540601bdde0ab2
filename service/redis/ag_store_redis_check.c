/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store's check (ag_store_redis.h): the check command's wire
 * format and its reply, the one state machine that decides what becomes
 * of a check whose command failed or whose code Redis lost, and the
 * breaker's count of each outcome (the store's other commands that count
 * report here too). The Lua code is composed by ag_redis_code.c, the
 * circuit breaker's rules are ag_redis_breaker.c's, the store around the
 * check is ag_store_redis.c.
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
 *   it connects, and again on the same answer; a check on a loop's
 *   lane stays on it, behind its reload); one
 *   whose FCALL is refused (NOPERM, unknown command) goes again as a
 *   script, and so do all checks after it.
 * - Each check's outcome counts toward the breaker, except a check that
 *   failed only because an earlier command of its batch did: a batch whose
 *   connection fails counts once.
 * - The breaker closes only when its probe's check succeeds (a write, on
 *   a key no policy uses): a Redis that answers but refuses writes, as one
 *   out of memory does, keeps it open.
 */
#include "ag_store_redis_impl.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_breaker.h"
#include "ag_redis_cmd.h"
#include "ag_redis_code.h"
#include "ag_redis_pipe.h"
#include "ag_redis_reply.h"

/* The most a check command may take: the whole script (an EVAL before any
 * connection has loaded it) and AG_PLAN_OPS ops' keys and values. */
#define CHECK_CMD_MAX (1u << 20)
/* A policy's spec, one argument (lua/check.lua): "algorithm limit
 * window_ms block_ms charge shadow", and " growth block_max_ms" for a
 * policy with blocks. */
/* Nine numbers, each with its separator, and the ratio's "r". */
#define SPEC_MAX (9 * (AG_UINT_TEXT + 1) + 1)

/* One check in flight: its job in the pipe, and where its answer goes. A
 * synchronous check lives on its caller's stack, an asynchronous one on
 * the heap (heap), freed when it settles. */
struct check {
    struct ag_redis_job job; /* first: the job's done finds its check */
    struct ag_store_redis__store *store;
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
static long long format_check(struct ag_store_redis__store *s,
                              const struct ag_plan *plan,
                              const struct ag_limit_result *res, bool library,
                              char **cmd, bool *fcall_out);
static long long format_release(struct ag_store_redis__store *s,
                                const struct ag_plan *plan,
                                const struct ag_limit_result *res,
                                const char *nonce, size_t nlen, char **cmd);
static int parse_reply(const redisReply *r, const struct ag_plan *plan,
                       struct ag_limit_result *res);
static enum lost lost_code(const redisReply *r, bool fcall);
static bool reload_lost(struct ag_store_redis__store *s,
                        struct ag_redis_conn *c, enum lost lost,
                        const struct ag_plan *plan, const redisReply *r,
                        bool *as_script);
static void settle(struct ag_redis_job *j, struct ag_redis_conn *c);
static int start_check(struct ag_store_redis__store *s, struct check *k,
                       const struct ag_plan *plan, struct ag_limit_result *res,
                       ag_store_done_fn done, void *arg, bool waited);
static void wake_waiter(void *arg, int rc);

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
static long long format_check(struct ag_store_redis__store *s,
                              const struct ag_plan *plan,
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
    bool hist = plan->history && (plan->kind == AG_PLAN_CHECK || reserve);
    size_t nkeys = plan->n + fp + hist;
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
    if (hist)
        ag_redis_cmd_str(&b, plan->history->key);
    ag_redis_cmd_arg(&b, nonce, nlen);
    ag_redis_cmd_str(&b, record    ? "record"
                         : reserve ? (hist ? "reserve+h" : "reserve")
                         : plan->kind == AG_PLAN_PEEK ? "peek"
                         : hist                       ? "check+h"
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
static long long format_release(struct ag_store_redis__store *s,
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
    struct ag_plan_history *h =
        plan->kind == AG_PLAN_CHECK || plan->kind == AG_PLAN_RESERVE
            ? plan->history
            : NULL;
    if (r->type != REDIS_REPLY_ARRAY ||
        r->elements != w * plan->n + (h ? 2 : 0))
        return AG_ESTORE;
    if (h) {
        /* The history's text, then the check's clock (lua/check.lua). */
        const redisReply *t = r->element[w * plan->n];
        const redisReply *now = r->element[w * plan->n + 1];
        if (t->type != REDIS_REPLY_STRING || now->type != REDIS_REPLY_STRING)
            return AG_ESTORE;
        h->read = t->len < sizeof h->text;
        h->len = h->read ? t->len : 0;
        memcpy(h->text, t->str, h->len);
        h->now_us = strtoull(now->str, NULL, 10);
    }
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
static bool reload_lost(struct ag_store_redis__store *s,
                        struct ag_redis_conn *c, enum lost lost,
                        const struct ag_plan *plan, const redisReply *r,
                        bool *as_script)
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
int ag_store_redis__outcome(struct ag_store_redis__store *s, int rc,
                            bool orphaned)
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
 * thread or its loop's (c, its connection): retries what never left, reloads
 * code Redis lost, once; else parses, records the outcome and calls back. */
static void settle(struct ag_redis_job *j, struct ag_redis_conn *c)
{
    struct check *k = (struct check *)j;
    struct ag_store_redis__store *s = k->store;
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
    if (s->redirect && ag_store_redis__redirected(r)) {
        /* The node answered and ran nothing: no failure to count. */
        s->redirect(s->redirect_arg, r->str);
        ag_store_redis__outcome(s, AG_OK, j->orphaned);
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
            rc = ag_store_redis__outcome(s, rc, j->orphaned);
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
 * returned and done is not called. waited: the caller waits for done, so
 * the check takes the shared queue, never the caller's loop's lane (see
 * ag_redis_pipe_send). */
static int start_check(struct ag_store_redis__store *s, struct check *k,
                       const struct ag_plan *plan, struct ag_limit_result *res,
                       ag_store_done_fn done, void *arg, bool waited)
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
    if (waited)
        ag_redis_pipe_send_shared(s->pipe, &k->job);
    else
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
int ag_store_redis__check(struct ag_store *base, const struct ag_plan *plan,
                          struct ag_limit_result *res)
{
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    /* A check with no policy goes only to read its history. */
    if (plan->n == 0 && !plan->history)
        return AG_OK;
    struct check k = {.heap = false};
    struct waiting w;
    sem_init(&w.woken, 0, 0);
    int rc = start_check(s, &k, plan, res, wake_waiter, &w, true);
    if (rc == AG_OK) {
        while (sem_wait(&w.woken) != 0 && errno == EINTR)
            ;
        rc = w.rc;
    }
    sem_destroy(&w.woken);
    return rc;
}

int ag_store_redis__check_async(struct ag_store *base,
                                const struct ag_plan *plan,
                                struct ag_limit_result *res,
                                ag_store_done_fn done, void *arg)
{
    struct ag_store_redis__store *s = (struct ag_store_redis__store *)base;
    bool empty = plan->n == 0 && !plan->history;
    if (empty || ag_redis_breaker_is_open(&s->breaker))
        return empty ? AG_EINVAL : AG_ESTORE;
    struct check *k = calloc(1, sizeof *k);
    if (!k)
        return AG_ENOMEM;
    k->heap = true;
    int rc = start_check(s, k, plan, res, done, arg, false);
    if (rc)
        free(k);
    return rc;
}

static long long format_probe(void *arg, char **cmd)
{
    struct ag_store_redis__store *s = arg;
    bool fcall;
    return format_check(s, &s->probe_plan, NULL, true, cmd, &fcall);
}

/* Whether Redis runs checks again: the probe's check, formatted as every
 * check is (FCALL, or a script where FUNCTION is refused), on a fresh
 * connection. A PING or the code load would not do: a Redis out of memory
 * (maxmemory with noeviction) answers both and refuses every check, and
 * the breaker would close only to open again a few checks later. */
bool ag_store_redis__probe_check(struct ag_store_redis__store *s)
{
    redisReply *r = ag_redis_pipe_probe(s->pipe, format_probe, s);
    struct ag_limit_result res;
    /* A cluster node that sends the probe's key elsewhere answers all the
     * same (and the store's next refresh finds it a new key). */
    bool up =
        (r && parse_reply(r, &s->probe_plan, &res) == AG_OK && res.allowed) ||
        (s->redirect && ag_store_redis__redirected(r));
    if (r && !up)
        ag_log(AG_LOG_WARN, "redis_probe_failed", "%s",
               r->type == REDIS_REPLY_ERROR ? r->str
                                            : "unexpected reply shape");
    ag_redis_reply_free(r);
    return up;
}
