/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shield's shared state (ag_redis_surge.h): lua/surge.lua sent with
 * EVALSHA through the store's command path, and with EVAL once when Redis
 * answers NOSCRIPT (a restart, SCRIPT FLUSH, a failover: NOSCRIPT means
 * nothing ran, so this is no re-send). The script's SHA1 is computed once,
 * from the embedded text.
 */
#include "ag_redis_surge.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_redis_reply.h"

#define SCRIPT_PIECE "surge.lua"
#define ARGC 14    /* EVALSHA sha 1 key and lua/surge.lua's ten ARGV */
#define KEY_AT 3   /* the key's index in argv */
#define REPLY_N 16 /* the state's 13 fields, changed, now_ms, threshold */
#define NUM_MAX 1000000000000000ull /* lua/surge.lua takes 15 digits */
#define NUM_TEXT 24                 /* a uint64_t in decimal, and its NUL */

/* The script and its SHA1, found once: the text is compiled in, so either
 * both are there for the process's life or neither is. */
static pthread_once_t script_once = PTHREAD_ONCE_INIT;
static const struct ag_embedded_file *script;
static char script_sha[41];

static void find_script(void)
{
    for (size_t i = 0; i < ag_embedded_lua_count; i++) {
        const struct ag_embedded_file *f = &ag_embedded_lua[i];
        if (strcmp(f->name, SCRIPT_PIECE) != 0)
            continue;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (EVP_Digest(f->data, f->len, md, &mdlen, EVP_sha1(), NULL) == 1 &&
            mdlen == 20) {
            sodium_bin2hex(script_sha, sizeof script_sha, md, mdlen);
            script = f;
        }
        return;
    }
}

/* Whether lua/surge.lua can take p and call: a window, a baseline of one
 * window at least (ag_surge.c divides by their quotient), and every number
 * exact in Lua's doubles. */
static bool takes(const struct ag_surge_params *p,
                  const struct ag_redis_surge_call *call)
{
    const uint64_t n[] = {p->window_ms,   p->baseline_ms,  p->block_ms,
                          p->limit,       p->factor_milli, call->count,
                          call->attempts, call->for_ms,    call->now_ms};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        if (n[i] >= NUM_MAX)
            return false;
    return p->window_ms > 0 && p->baseline_ms >= p->window_ms &&
           call->op >= AG_SURGE_OP_STEP && call->op <= AG_SURGE_OP_LOWER;
}

/* The answer of reply r, if it is lua/surge.lua's: REPLY_N non-negative
 * integers, raised and tainted 0 or 1. */
static bool parse(const redisReply *r, struct ag_redis_surge_answer *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != REPLY_N)
        return false;
    uint64_t v[REPLY_N];
    for (size_t i = 0; i < REPLY_N; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_INTEGER || e->integer < 0)
            return false;
        v[i] = (uint64_t)e->integer;
    }
    if (v[8] > 1 || v[9] > 1 || v[13] > (AG_SURGE_RAISED | AG_SURGE_LOWERED))
        return false;
    struct ag_surge_state *st = &out->state;
    st->window = v[0];
    st->count = v[1];
    st->attempts = v[2];
    st->prev_count = v[3];
    st->prev_attempts = v[4];
    st->baseline_milli = v[5];
    st->attempt_baseline_milli = v[6];
    st->taught = v[7];
    st->raised = v[8] == 1;
    st->tainted = v[9] == 1;
    st->since_ms = v[10];
    st->until_ms = v[11];
    st->peak_attempts = v[12];
    out->changed = (unsigned)v[13];
    out->now_ms = v[14];
    out->threshold = v[15];
    return true;
}

/* Runs argv (EVALSHA, or EVAL) through the store: AG_OK and *reply, which
 * the caller frees; AG_EINVAL for a store without Redis; else AG_ESTORE
 * (a Cluster node's redirection too: the cluster store follows MOVED). */
static int run(struct ag_store *store, const char **argv, const size_t *lens,
               redisReply **reply)
{
    void *r = NULL;
    int rc = ag_store_command(store, ARGC, argv, lens, KEY_AT, &r);
    if (rc == AG_EINVAL)
        return rc;
    if (rc != AG_OK || !r)
        return AG_ESTORE;
    *reply = r;
    return AG_OK;
}

int ag_redis_surge(struct ag_store *store, const char *key,
                   const struct ag_surge_params *p,
                   const struct ag_redis_surge_call *call,
                   struct ag_redis_surge_answer *out)
{
    static const char *const ops[] = {
        [AG_SURGE_OP_STEP] = "step",
        [AG_SURGE_OP_RAISE] = "raise",
        [AG_SURGE_OP_LOWER] = "lower",
    };
    pthread_once(&script_once, find_script);
    if (!script || !takes(p, call))
        return AG_EINVAL;
    bool step = call->op == AG_SURGE_OP_STEP;
    const uint64_t nums[] = {p->window_ms,
                             p->baseline_ms,
                             p->block_ms,
                             p->limit,
                             p->factor_milli,
                             step ? call->count : 0,
                             step ? call->attempts : 0,
                             call->op == AG_SURGE_OP_RAISE ? call->for_ms : 0};
    char text[1 + sizeof nums / sizeof nums[0]][NUM_TEXT];
    /* 0: Redis TIME, one clock for every instance. */
    text[0][0] = '\0';
    if (call->now_ms)
        snprintf(text[0], NUM_TEXT, "%llu", (unsigned long long)call->now_ms);
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        snprintf(text[1 + i], NUM_TEXT, "%llu", (unsigned long long)nums[i]);
    const char *argv[ARGC] = {"EVALSHA", script_sha, "1",
                              key,       text[0],    ops[call->op]};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        argv[6 + i] = text[1 + i];
    size_t lens[ARGC];
    for (int i = 0; i < ARGC; i++)
        lens[i] = strlen(argv[i]);

    redisReply *r = NULL;
    int rc = run(store, argv, lens, &r);
    if (rc == AG_OK && r->type == REDIS_REPLY_ERROR &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
        ag_redis_reply_free(r);
        r = NULL;
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = script->data;
        lens[1] = script->len;
        rc = run(store, argv, lens, &r);
    }
    if (rc != AG_OK)
        return rc;
    /* Refused (a script error, a replica's READONLY, OOM) or an answer
     * of another shape (another version's script?): a failure the caller
     * handles as Redis down. */
    if (r->type == REDIS_REPLY_ERROR) {
        ag_log(AG_LOG_WARN, "redis_error", "surge: %s", r->str);
        rc = AG_ESTORE;
    } else if (!parse(r, out)) {
        ag_log(AG_LOG_WARN, "redis_error", "surge: an answer of another shape");
        rc = AG_ESTORE;
    }
    ag_redis_reply_free(r);
    return rc;
}
