/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shield's shared state (ag_redis_surge.h): lua/surge.lua run through
 * the store's command path (ag_redis_script).
 */
#include "ag_redis_surge.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_error.h"
#include "ag_log.h"
#include "ag_redis_reply.h"
#include "ag_redis_script.h"

#define SCRIPT_PIECE "surge.lua"
#define NARGS 18   /* two keys and lua/surge.lua's 16 ARGV */
#define FIELDS 21  /* struct ag_surge_state's, in the reply's order */
#define REPLY_N 26 /* the fields, changed, now_ms, threshold, others, other */
#define NUM_MAX 1000000000000000ull /* lua/surge.lua takes 15 digits */
#define NUM_TEXT 24                 /* a uint64_t in decimal, and its NUL */
#define KEY_TEXT (AG_STORE_KEY_MAX + 1 + AG_SURGE_SHAPE_MAX + 1)

/* Is shape a name the registry takes? */
static bool shape_ok(const char *shape)
{
    size_t n = strlen(shape);
    if (n == 0 || n > AG_SURGE_SHAPE_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = shape[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '+' ||
              c == '-'))
            return false;
    }
    return true;
}

/* Whether lua/surge.lua can take p and call: a window, a baseline of one
 * window at least (ag_surge.c divides by their quotient), and every number
 * exact in Lua's doubles. */
static bool takes(const struct ag_surge_params *p,
                  const struct ag_redis_surge_call *call)
{
    const uint64_t n[] = {p->window_ms,       p->baseline_ms,
                          p->block_ms,        p->limit,
                          p->factor_milli,    call->count,
                          call->attempts,     call->for_ms,
                          call->now_ms,       call->resume.for_ms,
                          call->resume.known, call->resume.raised_at_ms};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        if (n[i] >= NUM_MAX)
            return false;
    return p->window_ms > 0 && p->baseline_ms >= p->window_ms &&
           p->factor_milli >= AG_FACTOR_ONE && call->op >= AG_SURGE_OP_STEP &&
           call->op <= AG_SURGE_OP_LOWER;
}

/* The answer of reply r, if it is lua/surge.lua's: FIELDS and four more
 * non-negative integers (the flags 0 or 1, tainted 0 to 2), and the
 * latest other shape. */
static bool parse(const redisReply *r, struct ag_redis_surge_answer *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != REPLY_N)
        return false;
    uint64_t v[REPLY_N - 1];
    for (size_t i = 0; i < REPLY_N - 1; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_INTEGER || e->integer < 0)
            return false;
        v[i] = (uint64_t)e->integer;
    }
    const redisReply *other = r->element[REPLY_N - 1];
    if (other->type != REDIS_REPLY_STRING || other->len > AG_SURGE_SHAPE_MAX)
        return false;
    if (v[10] > 1 || v[11] > 1 || v[12] > AG_SURGE_BY_HAND || v[13] > 1 ||
        v[14] > 1 ||
        v[FIELDS] > (AG_SURGE_RAISED | AG_SURGE_LOWERED | AG_SURGE_LONG |
                     AG_SURGE_RESUMED))
        return false;
    struct ag_surge_state *st = &out->state;
    *st = (struct ag_surge_state){
        .window = v[0],
        .count = v[1],
        .attempts = v[2],
        .passes = v[3],
        .prev_count = v[4],
        .prev_attempts = v[5],
        .baseline_milli = v[6],
        .attempt_baseline_milli = v[7],
        .taught = v[8],
        .attempts_taught = v[9],
        .raised = v[10] == 1,
        .whole = v[11] == 1,
        .tainted = (uint8_t)v[12],
        .by_operator = v[13] == 1,
        .long_said = v[14] == 1,
        .since_ms = v[15],
        .until_ms = v[16],
        .switch_version = v[17],
        .switch_ms = v[18],
        .quiet_until_ms = v[19],
        .last_ms = v[20],
    };
    out->changed = (unsigned)v[FIELDS];
    out->now_ms = v[FIELDS + 1];
    out->threshold = v[FIELDS + 2];
    out->others = v[FIELDS + 3];
    memcpy(out->other, other->str, other->len);
    out->other[other->len] = '\0';
    return true;
}

int ag_redis_surge(struct ag_store *store, const char *base, const char *shape,
                   const struct ag_surge_params *p,
                   const struct ag_redis_surge_call *call,
                   struct ag_redis_surge_answer *out)
{
    static const char *const ops[] = {
        [AG_SURGE_OP_STEP] = "step",
        [AG_SURGE_OP_RAISE] = "raise",
        [AG_SURGE_OP_LOWER] = "lower",
    };
    if (!takes(p, call) || !shape_ok(shape) || strlen(base) >= AG_STORE_KEY_MAX)
        return AG_ETOOBIG;
    bool step = call->op == AG_SURGE_OP_STEP;
    const uint64_t nums[] = {p->window_ms,
                             p->baseline_ms,
                             p->block_ms,
                             p->limit,
                             p->factor_milli,
                             p->failures,
                             step ? call->count : 0,
                             step ? call->attempts : 0,
                             step ? call->passes : 0,
                             step ? call->resume.for_ms : call->for_ms,
                             step ? call->resume.known : 0,
                             step ? call->resume.raised_at_ms : 0};
    enum { NUMS = sizeof nums / sizeof nums[0] };
    char text[1 + NUMS + 1][NUM_TEXT];
    /* 0: Redis TIME, one clock for every instance. */
    text[0][0] = '\0';
    if (call->now_ms)
        snprintf(text[0], NUM_TEXT, "%llu", (unsigned long long)call->now_ms);
    for (size_t i = 0; i < NUMS; i++)
        snprintf(text[1 + i], NUM_TEXT, "%llu", (unsigned long long)nums[i]);
    snprintf(text[1 + NUMS], NUM_TEXT, "%d", AG_REDIS_SURGE_RECENT_MS);
    char state_key[KEY_TEXT], registry_key[KEY_TEXT];
    snprintf(state_key, sizeof state_key, "%s:%s", base, shape);
    snprintf(registry_key, sizeof registry_key, "%s:shapes", base);
    const char *argv[NARGS] = {state_key, registry_key, text[0], ops[call->op]};
    for (size_t i = 0; i < NUMS; i++)
        argv[4 + i] = text[1 + i];
    argv[4 + NUMS] = shape;
    argv[5 + NUMS] = text[1 + NUMS];
    size_t lens[NARGS];
    for (int i = 0; i < NARGS; i++)
        lens[i] = strlen(argv[i]);

    redisReply *r = NULL;
    int rc = ag_redis_script_run(store, SCRIPT_PIECE, 2, NARGS, argv, lens,
                                 (void **)&r);
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
