/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store against the shared algorithm vectors, on the test clock,
 * and against the in-process store on one seeded random trace (checks,
 * failure plans with and without password fingerprints, clears, shadow and
 * uncharged policies, blocks and their growth, lowered limits, times on
 * window edges and a day after a block): the two implementations of each
 * algorithm must give the same answer at every step. Starts its own
 * redis-server on a unix socket in a temp dir. AG_DIFF_SEED picks the trace's
 * seed (default: the time), to replay one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_redis_reply.h"
#include "ag_store.h"
#include "ag_store_redis.h"
#include "ag_vectors.h"

/* The test clock: a clock.lua piece (ag_redis_code.h) that replaces
 * common.lua's clock. In the function library it reads the time the test
 * last set with the function it registers (a top-level local of a library
 * keeps its value from one call to the next); a script, which keeps
 * nothing between runs, refuses to run, so that no check of this test runs
 * on Redis's own time unawares. */
#define CLOCK_FN "ag_test_clock"
static const char test_clock_lua[] =
    "local test_now\n"
    "clock = function()\n"
    "  return test_now or error('the test clock is not set')\n"
    "end\n"
    "if redis.register_function then\n"
    "  redis.register_function('" CLOCK_FN "', function(keys, args)\n"
    "    test_now = string.match(args[1] or '', '^%d+$') or error('bad time')\n"
    "    return 'OK'\n"
    "  end)\n"
    "else\n"
    "  clock = function()\n"
    "    error('the test clock runs only in the function library')\n"
    "  end\n"
    "end\n";

/* The embedded lua/ files and the test clock. */
static struct ag_store *test_store(const struct ag_redis_addr *addr)
{
    static struct ag_embedded_file files[64];
    size_t n = ag_embedded_lua_count;
    if (n + 1 > sizeof files / sizeof files[0])
        return NULL;
    memcpy(files, ag_embedded_lua, n * sizeof *files);
    files[n++] = (struct ag_embedded_file){"clock.lua", test_clock_lua,
                                           sizeof test_clock_lua - 1};
    return ag_store_redis_new(&(struct ag_store_redis_opts){
        .addr = addr, .timeout_ms = 2000, .lua = files, .nlua = n});
}

struct env {
    pid_t redis;
    char dir[64];
    char sock[96];
    redisContext *clock_ctx; /* the test's own connection, for the clock */
    struct ag_store *store;
    struct ag_store *mem; /* the differential test's other store */
};

static struct env env;
static json_t *vectors;

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int start_redis(void **state)
{
    (void)state;
    snprintf(env.dir, sizeof env.dir, "/tmp/ag-store-redis-XXXXXX");
    if (!mkdtemp(env.dir))
        return -1;
    snprintf(env.sock, sizeof env.sock, "%s/redis.sock", env.dir);
    env.redis = fork();
    if (env.redis == 0) {
        char log[128];
        snprintf(log, sizeof log, "%s/redis.log", env.dir);
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket",
               env.sock, "--save", "", "--appendonly", "no", "--dir", env.dir,
               "--logfile", log, (char *)NULL);
        _exit(127);
    }
    /* Redis is up once its socket answers a PING. */
    for (double until = wall_s() + 10; wall_s() < until; usleep(10000)) {
        redisContext *c = redisConnectUnix(env.sock);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            if (r && r->type == REDIS_REPLY_STATUS) {
                freeReplyObject(r);
                env.clock_ctx = c;
                break;
            }
            freeReplyObject(r);
        }
        redisFree(c);
    }
    if (!env.clock_ctx)
        return -1;
    struct ag_redis_addr addr = {.kind = AG_REDIS_UNIX};
    snprintf(addr.path, sizeof addr.path, "%s", env.sock);
    env.store = test_store(&addr);
    /* The ping connects, which loads the library: the clock is there. */
    if (!env.store || ag_store_ping(env.store) != AG_OK)
        return -1;
    vectors = ag_vectors_load();
    return 0;
}

static int stop_redis(void **state)
{
    (void)state;
    ag_store_destroy(env.store);
    ag_store_destroy(env.mem);
    redisFree(env.clock_ctx);
    if (env.redis > 0) {
        kill(env.redis, SIGTERM);
        waitpid(env.redis, NULL, 0);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", env.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", env.dir);
    json_decref(vectors);
    return 0;
}

static void set_redis_time(void *ctx, uint64_t t_us)
{
    (void)ctx;
    redisReply *r = redisCommand(env.clock_ctx, "FCALL " CLOCK_FN " 0 %llu",
                                 (unsigned long long)t_us);
    char err[256] = "";
    if (!r || r->type == REDIS_REPLY_ERROR)
        snprintf(err, sizeof err, "%s", r ? r->str : env.clock_ctx->errstr);
    freeReplyObject(r);
    if (err[0])
        fail_msg("setting the test clock: %s", err);
}

static void every_vector_holds_on_redis(void **state)
{
    (void)state;
    size_t i;
    const json_t *v;
    int failed = 0;
    json_array_foreach(json_object_get(vectors, "vectors"), i, v)
    {
        char prefix[32], why[512];
        snprintf(prefix, sizeof prefix, "v%zu", i);
        if (ag_vectors_run(v, env.store, prefix, set_redis_time, NULL, why,
                           sizeof why)) {
            print_error("%s\n", why);
            failed++;
        } else {
            print_message("[       OK ] %s\n",
                          json_string_value(json_object_get(v, "name")));
        }
    }
    assert_int_equal(failed, 0);
}

static long long redis_int(const char *fmt, const char *key);

/* Every key of pattern with its DUMP and PEXPIRETIME, for a comparison
 * that allows for Redis's own expiry: a set's key expires a window after
 * its last add by Redis's clock, not the test's (common.lua's set_add), so
 * between two looks Redis may drop one whatever the test does. */
struct snapshot {
    redisReply *keys;
    redisReply *dumps[256];
    long long expire_ms[256];
};

static void snapshot_take(struct snapshot *sn, const char *pattern)
{
    sn->keys = redisCommand(env.clock_ctx, "KEYS %s", pattern);
    if (!sn->keys || sn->keys->type != REDIS_REPLY_ARRAY ||
        sn->keys->elements > 256)
        fail_msg("KEYS %s failed or found too many", pattern);
    for (size_t i = 0; i < sn->keys->elements; i++) {
        const char *k = sn->keys->element[i]->str;
        sn->dumps[i] = redisCommand(env.clock_ctx, "DUMP %s", k);
        sn->expire_ms[i] = redis_int("PEXPIRETIME %s", k);
    }
}

static void snapshot_free(struct snapshot *sn)
{
    for (size_t i = 0; sn->keys && i < sn->keys->elements; i++)
        freeReplyObject(sn->dumps[i]);
    freeReplyObject(sn->keys);
    sn->keys = NULL;
}

/* Whether Redis holds what sn saw, but for keys its own clock expired. */
static bool snapshot_holds(const struct snapshot *sn, const char *pattern)
{
    redisReply *t = redisCommand(env.clock_ctx, "TIME");
    long long now_ms =
        atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    struct snapshot now = {0};
    snapshot_take(&now, pattern);
    bool same = true;
    for (size_t i = 0; same && i < sn->keys->elements; i++) {
        const char *k = sn->keys->element[i]->str;
        size_t j = 0;
        while (j < now.keys->elements &&
               strcmp(now.keys->element[j]->str, k) != 0)
            j++;
        if (j == now.keys->elements) {
            same = sn->expire_ms[i] >= 0 && sn->expire_ms[i] <= now_ms + 1;
            if (!same)
                print_error("%s is gone and had not expired\n", k);
            continue;
        }
        const redisReply *a = sn->dumps[i], *b = now.dumps[j];
        same = a->len == b->len && memcmp(a->str, b->str, a->len) == 0 &&
               sn->expire_ms[i] == now.expire_ms[j];
        if (!same)
            print_error("%s changed\n", k);
    }
    /* And nothing new. */
    if (same && now.keys->elements > sn->keys->elements) {
        print_error("a key appeared\n");
        same = false;
    }
    snapshot_free(&now);
    return same;
}

/* The differential test. */

static uint64_t rng;

static uint64_t next(void)
{
    /* xorshift64*: a seed replays the same trace on any machine. */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static uint64_t below(uint64_t n)
{
    return next() % n;
}

static uint64_t fake_now;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

#define DIFF_POLICIES 12 /* every algorithm twice */
#define DIFF_FPS 5       /* fingerprints a trace's user tries */
#define DIFF_STEPS 20000
#define DIFF_SECONDS 3.0
#define DIFF_EPOCH_S 4102444800ull /* 2100-01-01: see next_time */

/* The next time of the trace after t. Mostly steps that land on the edges
 * where implementations part: the microseconds around a whole second (every
 * window here is whole seconds, aligned to the epoch), the same microsecond
 * again, a millisecond; sometimes a long gap. */
static uint64_t next_time(uint64_t t)
{
    uint64_t second = (t / 1000000 + 1) * 1000000;
    /* Rarely, about a day on: where a block level is forgotten. */
    if (below(64) == 0)
        return t + (uint64_t)AG_BLOCK_LEVEL_S * 1000000 - 2000000 +
               below(4000000);
    switch (below(8)) {
    case 0:
        return t;
    case 1:
        return t + 1 + below(1000);
    case 2:
        return t + 1000;
    case 3:
        return second - 1 + below(3);
    case 4:
        return second + 999 + below(3);
    case 5:
        return t + below(4000000);
    default:
        return t + below(400000);
    }
}

static void random_policy(struct ag_policy *p, int i)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "p%d", i);
    p->endpoint = AG_EP_LOGIN;
    p->key[0] = AG_KEY_USER;
    p->nkeys = 1;
    /* Every algorithm, twice at least. */
    p->algorithm = (enum ag_algorithm)(
        i < 2 * AG_ALG_COUNT ? i % AG_ALG_COUNT : (int)below(AG_ALG_COUNT));
    p->limit = 1 + (uint32_t)below(6);
    p->window_s = 1 + (uint32_t)below(3);
    p->block_s = below(4) == 0 ? 1 + (uint32_t)below(2) : 0;
    p->block_growth = p->block_s && below(2) ? 2 + (uint32_t)below(2) : 1;
    p->block_max_s = p->block_s + (uint32_t)below(6);
    /* A failure plan of the trace records its verifications. */
    if (p->algorithm == AG_ALG_CONVERSION)
        p->min_ratio_ppm = 1 + (uint32_t)below(AG_RATIO_ONE);
    p->enabled = true;
}

static void say_plan(const struct ag_plan *plan, const struct ag_policy *p)
{
    for (size_t k = 0; k < plan->n; k++) {
        const struct ag_policy *q = plan->ops[k].policy;
        print_error("  op %zu: %s %s limit %u window_s %u block_s %u "
                    "growth %u max %u member '%s' charge %d shadow %d%s\n",
                    k, q->name, ag_algorithm_name(q->algorithm), q->limit,
                    q->window_s, q->block_s, q->block_growth, q->block_max_s,
                    plan->ops[k].member, plan->ops[k].charge,
                    plan->ops[k].shadow,
                    plan->kind == AG_PLAN_FAILURE ? " (failure plan)"
                    : plan->kind == AG_PLAN_PEEK  ? " (peek)"
                                                  : "");
    }
    if (plan->kind == AG_PLAN_FAILURE && plan->fp[0])
        print_error("  fingerprint %s\n", plan->fp);
    (void)p;
}

static void both_stores_agree_on_a_random_trace(void **state)
{
    (void)state;
    const char *env_seed = getenv("AG_DIFF_SEED");
    uint64_t seed = env_seed ? strtoull(env_seed, NULL, 10)
                             : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    rng = seed ? seed : 1;
    print_message("differential seed %llu (AG_DIFF_SEED replays it)\n",
                  (unsigned long long)seed);
    struct ag_store *mem = ag_store_mem_new(1024, 100000, fake_clock, NULL);
    assert_non_null(mem);
    env.mem = mem; /* stop_redis frees it, even after a failure */
    struct ag_policy p[DIFF_POLICIES];
    for (int i = 0; i < DIFF_POLICIES; i++)
        random_policy(&p[i], i);
    uint64_t t = DIFF_EPOCH_S * 1000000 + below(1000000000000ull);
    /* One window for the trace's fingerprints: Redis's expiry of their set
     * runs on its own clock, far behind the trace's, so a shorter window
     * after a longer one would part the stores on when it is freed. */
    uint32_t fp_window_s = 1 + (uint32_t)below(3);
    double until = wall_s() + DIFF_SECONDS;
    size_t step;
    for (step = 0; step < DIFF_STEPS && wall_s() < until; step++) {
        t = next_time(t);
        /* Now and then an admin lowers a limit. Not a distinct one: Redis
         * trims subjects seen in the same microsecond by their hash's
         * order, the fallback by its own (a documented difference). */
        if (below(200) == 0) {
            struct ag_policy *q = &p[below(DIFF_POLICIES)];
            if (q->algorithm != AG_ALG_DISTINCT && q->limit > 1)
                q->limit = 1 + (uint32_t)below(q->limit - 1);
        }
        /* Now and then the admin inspect's peek, which both stores must
         * answer alike and which must leave Redis as it was. */
        enum ag_plan_kind kind = AG_PLAN_CHECK;
        if (below(5) == 0)
            kind = AG_PLAN_FAILURE;
        else if (below(6) == 0)
            kind = AG_PLAN_PEEK;
        struct ag_plan plan = {.kind = kind};
        for (int i = 0; i < DIFF_POLICIES; i++) {
            if (below(3) == 0)
                continue;
            struct ag_limit_op *op = &plan.ops[plan.n++];
            op->policy = &p[i];
            snprintf(op->key, sizeof op->key, "ag:diff%llu:p%d",
                     (unsigned long long)seed, i);
            if (p[i].algorithm == AG_ALG_DISTINCT)
                snprintf(op->member, sizeof op->member, "subject%d",
                         (int)below(5));
            op->charge = below(10) != 0;
            op->shadow = below(10) == 0;
        }
        if (plan.n == 0)
            continue;
        if (plan.kind == AG_PLAN_FAILURE && below(2)) {
            snprintf(plan.fp, sizeof plan.fp, "fp%d", (int)below(DIFF_FPS));
            snprintf(plan.fp_key, sizeof plan.fp_key, "%sdiff%llu",
                     AG_FP_KEY_PREFIX, (unsigned long long)seed);
            plan.fp_window_s = fp_window_s;
        }
        /* Now and then a successful login clears its policies' keys. */
        if (below(50) == 0) {
            plan.kind = AG_PLAN_SUCCESS;
            assert_int_equal(ag_store_clear(mem, &plan), AG_OK);
            assert_int_equal(ag_store_clear(env.store, &plan), AG_OK);
            continue;
        }
        struct ag_limit_result a[AG_PLAN_MAX], b[AG_PLAN_MAX];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        fake_now = t;
        set_redis_time(NULL, t);
        char pattern[64];
        snprintf(pattern, sizeof pattern, "ag:diff%llu:*",
                 (unsigned long long)seed);
        struct snapshot before = {0};
        if (kind == AG_PLAN_PEEK)
            snapshot_take(&before, pattern);
        assert_int_equal(ag_store_check(mem, &plan, a), AG_OK);
        assert_int_equal(ag_store_check(env.store, &plan, b), AG_OK);
        if (kind == AG_PLAN_PEEK) {
            bool held = snapshot_holds(&before, pattern);
            snapshot_free(&before);
            if (!held) {
                print_error("seed %llu step %zu: a peek changed Redis\n",
                            (unsigned long long)seed, step);
                say_plan(&plan, p);
                fail();
            }
        }
        for (size_t k = 0; k < plan.n; k++) {
            if (a[k].allowed == b[k].allowed &&
                a[k].remaining == b[k].remaining &&
                a[k].retry_after_ms == b[k].retry_after_ms &&
                a[k].reset_after_ms == b[k].reset_after_ms &&
                a[k].blocked_ms == b[k].blocked_ms &&
                a[k].block_level == b[k].block_level)
                continue;
            char ta[128], tb[128];
            ag_vectors_result_text(&a[k], ta, sizeof ta);
            ag_vectors_result_text(&b[k], tb, sizeof tb);
            print_error("seed %llu step %zu t_us %llu policy %s: memory %s, "
                        "redis %s\n",
                        (unsigned long long)seed, step, (unsigned long long)t,
                        plan.ops[k].policy->name, ta, tb);
            say_plan(&plan, p);
            fail();
        }
    }
    print_message("%zu steps agree\n", step);
    /* The trace must have run long enough to mean something. */
    assert_true(step >= 500);
}

/* Reserve and release (the cluster store's two halves of a check). */

#define REL_WINDOW_S 10
/* A time aligned to every window here: windows of REL_WINDOW_S start on
 * it. */
#define REL_BASE_US (DIFF_EPOCH_S * 1000000)
#define S_US 1000000ull

static long long redis_int(const char *fmt, const char *key)
{
    redisReply *r = redisCommand(env.clock_ctx, fmt, key);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        fail_msg("%s %s: not an integer", fmt, key);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* A hash field of key as text, "" if it has none. */
static void redis_field(const char *key, const char *field, char *out,
                        size_t size)
{
    redisReply *r = redisCommand(env.clock_ctx, "HGET %s %s", key, field);
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
        fail_msg("HGET %s %s failed", key, field);
    snprintf(out, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

/* Whether member is in key's sorted set. */
static bool redis_has(const char *key, const char *member)
{
    redisReply *r = redisCommand(env.clock_ctx, "ZSCORE %s %s", key, member);
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
        fail_msg("ZSCORE %s %s failed", key, member);
    bool has = r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    return has;
}

static void rel_policy(struct ag_policy *p, enum ag_algorithm a, uint32_t limit)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", ag_algorithm_name(a));
    p->endpoint = AG_EP_LOGIN;
    p->key[0] = AG_KEY_USER;
    p->nkeys = 1;
    p->algorithm = a;
    p->limit = limit;
    p->window_s = REL_WINDOW_S;
    p->block_growth = 1;
    if (a == AG_ALG_CONVERSION)
        p->min_ratio_ppm = AG_RATIO_ONE / 2;
    p->enabled = true;
}

/* Appends an op of p on "ag:<test>:<p's name><suffix>" to plan. */
static struct ag_limit_op *rel_op(struct ag_plan *plan,
                                  const struct ag_policy *p, const char *test,
                                  const char *suffix, const char *member)
{
    struct ag_limit_op *op = &plan->ops[plan->n++];
    op->policy = p;
    if (snprintf(op->key, sizeof op->key, "ag:%s:%s%s", test, p->name,
                 suffix) >= (int)sizeof op->key ||
        snprintf(op->member, sizeof op->member, "%s", member) >=
            (int)sizeof op->member)
        fail_msg("a test key or member too long: %s", test);
    /* As ag_limiter_plan plans a check: a consecutive policy counts
     * failures, and a check does not charge it. */
    op->charge = p->algorithm != AG_ALG_CONSECUTIVE;
    return op;
}

static void run_at(uint64_t t, struct ag_plan *plan, enum ag_plan_kind kind,
                   struct ag_limit_result *res)
{
    set_redis_time(NULL, t);
    plan->kind = kind;
    assert_int_equal(ag_store_check(env.store, plan, res), AG_OK);
}

static void assert_same_answer(const struct ag_limit_result *got,
                               const struct ag_limit_result *want,
                               const char *what)
{
    if (got->allowed == want->allowed && got->remaining == want->remaining &&
        got->retry_after_ms == want->retry_after_ms &&
        got->reset_after_ms == want->reset_after_ms)
        return;
    char tg[128], tw[128];
    ag_vectors_result_text(got, tg, sizeof tg);
    ag_vectors_result_text(want, tw, sizeof tw);
    fail_msg("%s: released %s, never reserved %s", what, tg, tw);
}

/* One plan of every algorithm on keys of suffix, with some history: two
 * checks (of subjects "a" and "b") and a failure for the consecutive
 * policy, in the window before t and in t's own. */
static void rel_history(struct ag_policy *p, const char *test,
                        const char *suffix, struct ag_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    for (int a = 0; a < AG_ALG_COUNT; a++)
        rel_op(plan, &p[a], test, suffix, "");
    const char *subjects[] = {"a", "b"};
    uint64_t times[] = {REL_BASE_US + 3 * S_US, REL_BASE_US + 11 * S_US};
    for (int k = 0; k < 2; k++) {
        struct ag_limit_result res[AG_PLAN_MAX];
        snprintf(plan->ops[AG_ALG_DISTINCT].member, sizeof plan->ops[0].member,
                 "%s", subjects[k]);
        run_at(times[k], plan, AG_PLAN_CHECK, res);
        for (size_t i = 0; i < plan->n; i++)
            assert_true(res[i].allowed);
        /* The consecutive policy's failure, alone. */
        struct ag_plan failure = {.kind = AG_PLAN_FAILURE, .n = 1};
        failure.ops[0] = plan->ops[AG_ALG_CONSECUTIVE];
        failure.ops[0].charge = true;
        run_at(times[k], &failure, AG_PLAN_FAILURE, res);
    }
}

static void
a_released_reserve_leaves_every_algorithm_as_it_found_it(void **state)
{
    (void)state;
    struct ag_policy p[AG_ALG_COUNT];
    for (int a = 0; a < AG_ALG_COUNT; a++)
        rel_policy(&p[a], (enum ag_algorithm)a, 4);
    /* A block on one: the reserve then has a block key, the release none. */
    p[AG_ALG_FIXED_WINDOW].block_s = 5;
    struct ag_plan mine, ref;
    rel_history(p, "rel1", "", &mine);
    rel_history(p, "rel1", ":ref", &ref);
    uint64_t t = REL_BASE_US + 12 * S_US + 500000;
    /* A subject neither has seen. */
    snprintf(mine.ops[AG_ALG_DISTINCT].member, sizeof mine.ops[0].member, "c");
    snprintf(ref.ops[AG_ALG_DISTINCT].member, sizeof ref.ops[0].member, "c");
    snprintf(mine.nonce, sizeof mine.nonce, "rel1-nonce");
    struct ag_limit_result reserved[AG_PLAN_MAX], again[AG_PLAN_MAX];
    memset(reserved, 0, sizeof reserved);
    run_at(t, &mine, AG_PLAN_RESERVE, reserved);
    /* Each algorithm's undo token. */
    uint64_t window_idx = t / (REL_WINDOW_S * S_US);
    uint64_t want_undo[AG_ALG_COUNT];
    for (int a = 0; a < AG_ALG_COUNT; a++)
        want_undo[a] = 1;
    want_undo[AG_ALG_FIXED_WINDOW] = window_idx;
    want_undo[AG_ALG_SLIDING_WINDOW] = window_idx;
    want_undo[AG_ALG_CONVERSION] = window_idx;
    want_undo[AG_ALG_CONSECUTIVE] = 0; /* a check does not charge it */
    for (size_t i = 0; i < mine.n; i++) {
        assert_true(reserved[i].allowed);
        assert_int_equal(reserved[i].undo, want_undo[p[i].algorithm]);
    }
    const char *log_key = mine.ops[AG_ALG_SLIDING_LOG].key;
    const char *set_key = mine.ops[AG_ALG_DISTINCT].key;
    assert_int_equal(redis_int("ZCARD %s", log_key), 3);
    assert_int_equal(redis_int("ZCARD %s", set_key), 3);
    run_at(t, &mine, AG_PLAN_RELEASE, reserved);
    /* The release wrote nothing into the results it read. */
    for (size_t i = 0; i < mine.n; i++)
        assert_int_equal(reserved[i].undo, want_undo[p[i].algorithm]);
    assert_int_equal(redis_int("ZCARD %s", log_key), 2);
    assert_int_equal(redis_int("ZCARD %s", set_key), 2);
    assert_false(redis_has(set_key, "c"));
    /* The same check on both sets of keys, at the same time: the same
     * answers, as if the reserve had never been. */
    mine.nonce[0] = '\0';
    struct ag_limit_result want[AG_PLAN_MAX];
    run_at(t, &ref, AG_PLAN_CHECK, want);
    run_at(t, &mine, AG_PLAN_CHECK, again);
    for (size_t i = 0; i < mine.n; i++)
        assert_same_answer(&again[i], &want[i], p[i].name);
}

static void
a_reserve_whose_group_denies_charges_none_of_its_policies(void **state)
{
    (void)state;
    struct ag_policy p[AG_ALG_COUNT];
    for (int a = 0; a < AG_ALG_COUNT; a++)
        rel_policy(&p[a], (enum ag_algorithm)a, 4);
    struct ag_policy full;
    rel_policy(&full, AG_ALG_FIXED_WINDOW, 1);
    snprintf(full.name, sizeof full.name, "full");
    uint64_t t = REL_BASE_US + 4 * S_US;
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result res[AG_PLAN_MAX];
    rel_op(&plan, &full, "rel2", "", "");
    run_at(t, &plan, AG_PLAN_CHECK, res);
    assert_true(res[0].allowed);
    /* Now the full policy denies, and the group's others are allowed. */
    for (int a = 0; a < AG_ALG_COUNT; a++)
        rel_op(&plan, &p[a], "rel2", "", "s");
    snprintf(plan.nonce, sizeof plan.nonce, "rel2-nonce");
    memset(res, 0xff, sizeof res);
    run_at(t, &plan, AG_PLAN_RESERVE, res);
    assert_false(res[0].allowed);
    for (size_t i = 0; i < plan.n; i++) {
        assert_true(i == 0 || res[i].allowed);
        assert_int_equal(res[i].undo, 0);
    }
    /* Nothing of theirs was written: no key for any of them. */
    for (size_t i = 1; i < plan.n; i++)
        assert_int_equal(redis_int("EXISTS %s", plan.ops[i].key), 0);
    /* And the denying policy still holds its one count. */
    char n[32];
    redis_field(plan.ops[0].key, "n", n, sizeof n);
    assert_string_equal(n, "1");
}

static void releasing_a_known_subject_leaves_it_known(void **state)
{
    (void)state;
    struct ag_policy p;
    rel_policy(&p, AG_ALG_DISTINCT, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result res[AG_PLAN_MAX];
    rel_op(&plan, &p, "rel3", "", "known");
    run_at(REL_BASE_US + 1 * S_US, &plan, AG_PLAN_CHECK, res);
    snprintf(plan.nonce, sizeof plan.nonce, "rel3-nonce");
    run_at(REL_BASE_US + 2 * S_US, &plan, AG_PLAN_RESERVE, res);
    assert_true(res[0].allowed);
    assert_int_equal(res[0].undo, 0);
    run_at(REL_BASE_US + 2 * S_US, &plan, AG_PLAN_RELEASE, res);
    assert_true(redis_has(plan.ops[0].key, "known"));
    assert_int_equal(redis_int("ZCARD %s", plan.ops[0].key), 1);
}

static void
a_fixed_window_release_after_the_window_moved_on_keeps_the_new_one(void **state)
{
    (void)state;
    struct ag_policy p;
    rel_policy(&p, AG_ALG_FIXED_WINDOW, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX], res[AG_PLAN_MAX];
    rel_op(&plan, &p, "rel4", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel4-nonce");
    run_at(REL_BASE_US + 5 * S_US, &plan, AG_PLAN_RESERVE, reserved);
    assert_int_equal(reserved[0].undo, REL_BASE_US / (REL_WINDOW_S * S_US));
    /* The next window counts one check, then the late release comes. */
    run_at(REL_BASE_US + 12 * S_US, &plan, AG_PLAN_CHECK, res);
    assert_int_equal(res[0].remaining, 2);
    run_at(REL_BASE_US + 13 * S_US, &plan, AG_PLAN_RELEASE, reserved);
    char n[32];
    redis_field(plan.ops[0].key, "n", n, sizeof n);
    assert_string_equal(n, "1");
    run_at(REL_BASE_US + 13 * S_US, &plan, AG_PLAN_CHECK, res);
    assert_int_equal(res[0].remaining, 1);
}

static void
a_sliding_window_release_a_window_later_takes_from_the_previous(void **state)
{
    (void)state;
    struct ag_policy p;
    rel_policy(&p, AG_ALG_SLIDING_WINDOW, 4);
    struct ag_plan plan = {.n = 0}, ref = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX], res[AG_PLAN_MAX];
    struct ag_limit_result want[AG_PLAN_MAX];
    rel_op(&plan, &p, "rel9", "", "");
    rel_op(&ref, &p, "rel9", ":ref", "");
    /* Both count one check in window 0. */
    run_at(REL_BASE_US + 1 * S_US, &plan, AG_PLAN_CHECK, res);
    run_at(REL_BASE_US + 1 * S_US, &ref, AG_PLAN_CHECK, res);
    snprintf(plan.nonce, sizeof plan.nonce, "rel9-nonce");
    run_at(REL_BASE_US + 2 * S_US, &plan, AG_PLAN_RESERVE, reserved);
    plan.nonce[0] = '\0';
    /* A check in window 1 moves the hash on: the reserve's count is now
     * its previous window's. */
    run_at(REL_BASE_US + 11 * S_US, &plan, AG_PLAN_CHECK, res);
    run_at(REL_BASE_US + 11 * S_US, &ref, AG_PLAN_CHECK, res);
    char prev[32];
    redis_field(plan.ops[0].key, "p", prev, sizeof prev);
    assert_string_equal(prev, "2");
    snprintf(plan.nonce, sizeof plan.nonce, "rel9-nonce");
    run_at(REL_BASE_US + 12 * S_US, &plan, AG_PLAN_RELEASE, reserved);
    plan.nonce[0] = '\0';
    redis_field(plan.ops[0].key, "p", prev, sizeof prev);
    assert_string_equal(prev, "1");
    run_at(REL_BASE_US + 12 * S_US, &ref, AG_PLAN_CHECK, want);
    run_at(REL_BASE_US + 12 * S_US, &plan, AG_PLAN_CHECK, res);
    assert_same_answer(&res[0], &want[0], "sliding_window");
}

static void a_token_bucket_release_never_fills_it_past_its_limit(void **state)
{
    (void)state;
    struct ag_policy p;
    /* Two tokens, one back every five seconds. */
    rel_policy(&p, AG_ALG_TOKEN_BUCKET, 2);
    struct ag_plan plan = {.n = 0}, fresh = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX], res[AG_PLAN_MAX];
    struct ag_limit_result want[AG_PLAN_MAX];
    rel_op(&plan, &p, "rel5", "", "");
    rel_op(&fresh, &p, "rel5", ":fresh", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel5-nonce");
    uint64_t t = REL_BASE_US + 1 * S_US;
    run_at(t, &plan, AG_PLAN_RESERVE, reserved);
    assert_int_equal(reserved[0].undo, 1);
    assert_int_equal(reserved[0].remaining, 1);
    /* Four seconds on, 1.8 tokens: the one given back would make 2.8. */
    run_at(t + 4 * S_US, &plan, AG_PLAN_RELEASE, reserved);
    char tokens[32];
    redis_field(plan.ops[0].key, "t", tokens, sizeof tokens);
    assert_string_equal(tokens, "2");
    /* So it answers as a full bucket does. */
    run_at(t + 4 * S_US, &fresh, AG_PLAN_CHECK, want);
    run_at(t + 4 * S_US, &plan, AG_PLAN_CHECK, res);
    assert_same_answer(&res[0], &want[0], "token_bucket");
}

static void a_release_with_a_nonce_not_in_the_log_removes_nothing(void **state)
{
    (void)state;
    struct ag_policy p;
    rel_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result reserved[AG_PLAN_MAX];
    rel_op(&plan, &p, "rel6", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel6-reserved");
    run_at(REL_BASE_US + 1 * S_US, &plan, AG_PLAN_RESERVE, reserved);
    assert_int_equal(reserved[0].undo, 1);
    snprintf(plan.nonce, sizeof plan.nonce, "rel6-other");
    run_at(REL_BASE_US + 1 * S_US, &plan, AG_PLAN_RELEASE, reserved);
    assert_int_equal(redis_int("ZCARD %s", plan.ops[0].key), 1);
    assert_true(redis_has(plan.ops[0].key, "rel6-reserved"));
}

/* A peek leaves the library's `peeking` set; the release after it must
 * still tidy as a write does: a key of another type (an edited policy's
 * old algorithm) is deleted. */
static void a_release_after_a_peek_deletes_a_key_of_another_type(void **state)
{
    (void)state;
    struct ag_policy p;
    rel_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.n = 0};
    struct ag_limit_result res[AG_PLAN_MAX];
    rel_op(&plan, &p, "rel11", "", "");
    redisReply *r =
        redisCommand(env.clock_ctx, "SET %s old-type", plan.ops[0].key);
    assert_non_null(r);
    freeReplyObject(r);
    run_at(REL_BASE_US + 1 * S_US, &plan, AG_PLAN_PEEK, res);
    assert_int_equal(redis_int("EXISTS %s", plan.ops[0].key), 1);
    snprintf(plan.nonce, sizeof plan.nonce, "rel11-nonce");
    res[0].undo = 1;
    run_at(REL_BASE_US + 1 * S_US, &plan, AG_PLAN_RELEASE, res);
    assert_int_equal(redis_int("EXISTS %s", plan.ops[0].key), 0);
}

/* A clear (a successful login, an admin reset) deletes every key of each
 * policy: the state, its block and level, and its lockout marker, so that
 * the key's next lockout is an event again. Nothing else. */
static void a_clear_deletes_the_state_block_level_and_marker(void **state)
{
    (void)state;
    struct ag_policy p;
    rel_policy(&p, AG_ALG_FIXED_WINDOW, 3);
    struct ag_plan plan = {.kind = AG_PLAN_SUCCESS};
    rel_op(&plan, &p, "clear1", "", "");
    const char *suffixes[] = {"", AG_BLOCK_SUFFIX, AG_LEVEL_SUFFIX,
                              AG_MARK_SUFFIX, ":other"};
    char keys[5][AG_STORE_KEY_MAX + 8];
    for (size_t i = 0; i < 5; i++) {
        snprintf(keys[i], sizeof keys[i], "%s%s", plan.ops[0].key, suffixes[i]);
        redisReply *r = redisCommand(env.clock_ctx, "SET %s 1", keys[i]);
        assert_non_null(r);
        freeReplyObject(r);
    }
    assert_int_equal(ag_store_clear(env.store, &plan), AG_OK);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(redis_int("EXISTS %s", keys[i]), 0);
    assert_int_equal(redis_int("EXISTS %s", keys[4]), 1);
}

static void a_reserve_or_release_without_a_nonce_is_refused(void **state)
{
    (void)state;
    struct ag_policy p;
    rel_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.kind = AG_PLAN_RESERVE};
    struct ag_limit_result res[AG_PLAN_MAX];
    memset(res, 0, sizeof res);
    rel_op(&plan, &p, "rel7", "", "");
    set_redis_time(NULL, REL_BASE_US);
    assert_int_equal(ag_store_check(env.store, &plan, res), AG_EINVAL);
    res[0].undo = 1;
    plan.kind = AG_PLAN_RELEASE;
    assert_int_equal(ag_store_check(env.store, &plan, res), AG_EINVAL);
    assert_int_equal(redis_int("EXISTS %s", plan.ops[0].key), 0);
}

/* A Redis user that may not use functions: the store runs checks as
 * scripts, and a reserve, which needs the library, is not sent at all. */
static void a_reserve_is_refused_where_redis_refuses_functions(void **state)
{
    (void)state;
    redisReply *r = redisCommand(env.clock_ctx,
                                 "ACL SETUSER nofunctions on >pw ~* &* +@all "
                                 "-fcall -fcall_ro -function");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    struct ag_redis_addr addr = {.kind = AG_REDIS_UNIX};
    snprintf(addr.path, sizeof addr.path, "%s", env.sock);
    snprintf(addr.user, sizeof addr.user, "nofunctions");
    snprintf(addr.password, sizeof addr.password, "pw");
    struct ag_store *scripts = test_store(&addr);
    assert_non_null(scripts);
    int ping = ag_store_ping(scripts);
    struct ag_policy p;
    rel_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.kind = AG_PLAN_RESERVE};
    struct ag_limit_result res[AG_PLAN_MAX];
    memset(res, 0, sizeof res);
    rel_op(&plan, &p, "rel10", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel10-nonce");
    int reserve = ag_store_check(scripts, &plan, res);
    res[0].undo = 1;
    plan.kind = AG_PLAN_RELEASE;
    int release = ag_store_check(scripts, &plan, res);
    ag_store_destroy(scripts);
    assert_int_equal(ping, AG_OK);
    assert_int_equal(reserve, AG_EINVAL);
    assert_int_equal(release, AG_EINVAL);
    assert_int_equal(redis_int("EXISTS %s", plan.ops[0].key), 0);
    /* The store that may use functions reserves on the same key. */
    plan.kind = AG_PLAN_RESERVE;
    run_at(REL_BASE_US, &plan, AG_PLAN_RESERVE, res);
    assert_int_equal(res[0].undo, 1);
}

static void the_memory_store_refuses_a_reserve_and_a_release(void **state)
{
    (void)state;
    struct ag_store *mem = ag_store_mem_new(16, 16, fake_clock, NULL);
    assert_non_null(mem);
    struct ag_policy p;
    rel_policy(&p, AG_ALG_SLIDING_LOG, 3);
    struct ag_plan plan = {.kind = AG_PLAN_RESERVE};
    struct ag_limit_result res[AG_PLAN_MAX];
    memset(res, 0, sizeof res);
    rel_op(&plan, &p, "rel8", "", "");
    snprintf(plan.nonce, sizeof plan.nonce, "rel8-nonce");
    int reserve = ag_store_check(mem, &plan, res);
    plan.kind = AG_PLAN_RELEASE;
    int release = ag_store_check(mem, &plan, res);
    plan.kind = AG_PLAN_CHECK;
    int check = ag_store_check(mem, &plan, res);
    ag_store_destroy(mem);
    assert_int_equal(reserve, AG_EINVAL);
    assert_int_equal(release, AG_EINVAL);
    assert_int_equal(check, AG_OK);
}

/* A command_async's answer, waited for by the test. */
struct answer {
    sem_t done;
    int rc;
    int type;
    char str[64];
};

static void answered(void *arg, int rc, const void *reply)
{
    struct answer *a = arg;
    const redisReply *r = reply;
    a->rc = rc;
    a->type = r ? r->type : -1;
    snprintf(a->str, sizeof a->str, "%s", r && r->str ? r->str : "");
    sem_post(&a->done);
}

static struct answer *send_cmd(int argc, const char **argv)
{
    static struct answer a;
    size_t lens[8];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    sem_init(&a.done, 0, 0);
    assert_int_equal(
        ag_store_command_async(env.store, argc, argv, lens, 1, answered, &a),
        AG_OK);
    sem_wait(&a.done);
    sem_destroy(&a.done);
    return &a;
}

static void a_command_beside_the_limits_answers_its_caller(void **state)
{
    (void)state;
    const char *set[] = {"SET", "ag:cmd:m:e", "1", "NX", "PX", "60000"};
    struct answer *a = send_cmd(6, set);
    assert_int_equal(a->rc, AG_OK);
    assert_int_equal(a->type, REDIS_REPLY_STATUS);
    assert_string_equal(a->str, "OK");
    /* The marker is set: the second SET NX answers nil. */
    a = send_cmd(6, set);
    assert_int_equal(a->rc, AG_OK);
    assert_int_equal(a->type, REDIS_REPLY_NIL);
    /* An error reply is an answer too, for the caller to judge. */
    const char *bad[] = {"INCR", "ag:cmd:m:e", "x"};
    a = send_cmd(3, bad);
    assert_int_equal(a->rc, AG_OK);
    assert_int_equal(a->type, REDIS_REPLY_ERROR);
    /* Waiting: the reply is the caller's. */
    const char *xadd[] = {"XADD", "ag:cmd:s", "*", "event", "{}"};
    size_t xlens[] = {4, 8, 1, 5, 2};
    void *reply = NULL;
    assert_int_equal(ag_store_command(env.store, 5, xadd, xlens, 1, &reply),
                     AG_OK);
    assert_int_equal(((redisReply *)reply)->type, REDIS_REPLY_STRING);
    ag_redis_reply_free(reply);
    /* A store without Redis has no commands. */
    struct ag_store *mem = ag_store_mem_new(16, 16, fake_clock, NULL);
    assert_int_equal(
        ag_store_command_async(mem, 5, xadd, xlens, 1, answered, NULL),
        AG_EINVAL);
    assert_int_equal(ag_store_command(mem, 5, xadd, xlens, 1, &reply),
                     AG_EINVAL);
    ag_store_destroy(mem);
}

/* The admin inspect's peek on every kind of state a check leaves or
 * tidies: each algorithm's, a set with expired members and one over a
 * lowered limit, a running block and its level, a key of another type.
 * Every key's DUMP and expiry are the same after as before, however often
 * and whenever it peeks, while the peek still reads that state (the block
 * shows). */
static void a_peek_leaves_redis_byte_for_byte_as_it_found_it(void **state)
{
    (void)state;
    struct ag_policy p[AG_ALG_COUNT];
    for (int a = 0; a < AG_ALG_COUNT; a++)
        rel_policy(&p[a], (enum ag_algorithm)a, 4);
    struct ag_plan hist;
    rel_history(p, "peek1", "", &hist);
    struct ag_limit_result res[AG_PLAN_MAX];
    /* A third member of the log and the set, in the window after. */
    snprintf(hist.ops[AG_ALG_DISTINCT].member, sizeof hist.ops[0].member, "c");
    run_at(REL_BASE_US + 12 * S_US, &hist, AG_PLAN_CHECK, res);
    /* A policy with growing blocks, full and then blocked. */
    struct ag_policy blocking;
    rel_policy(&blocking, AG_ALG_FIXED_WINDOW, 1);
    snprintf(blocking.name, sizeof blocking.name, "blocking");
    blocking.block_s = 15;
    blocking.block_growth = 2;
    blocking.block_max_s = 60;
    struct ag_plan block = {.kind = AG_PLAN_CHECK};
    rel_op(&block, &blocking, "peek1", "", "");
    run_at(REL_BASE_US + 12 * S_US, &block, AG_PLAN_CHECK, res);
    run_at(REL_BASE_US + 12 * S_US + 1, &block, AG_PLAN_CHECK, res);
    assert_false(res[0].allowed);
    /* The peek: every policy, the log and the set again at a lowered
     * limit (their oldest members trimmed, if a check saw them), and a
     * fixed window on the log's key, a key of another type. */
    struct ag_policy low_log, low_set, other;
    rel_policy(&low_log, AG_ALG_SLIDING_LOG, 1);
    rel_policy(&low_set, AG_ALG_DISTINCT, 1);
    rel_policy(&other, AG_ALG_FIXED_WINDOW, 4);
    struct ag_plan peek = hist;
    peek.ops[peek.n++] = block.ops[0];
    struct ag_limit_op *op = rel_op(&peek, &low_log, "peek1", "", "");
    op = rel_op(&peek, &low_set, "peek1", "", "a");
    op = rel_op(&peek, &other, "peek1", "", "");
    snprintf(op->key, sizeof op->key, "%s", hist.ops[AG_ALG_SLIDING_LOG].key);
    struct snapshot before = {0};
    snapshot_take(&before, "ag:peek1:*");
    assert_true(before.keys->elements >= AG_ALG_COUNT + 2);
    /* While the block runs (from 12 s and 1 us, for 15 s), as the window
     * moves on (the members of 3 s leave it at 13 s), and once all but
     * the level has ended. */
    const uint64_t at[] = {REL_BASE_US + 14 * S_US, REL_BASE_US + 14 * S_US,
                           REL_BASE_US + 23 * S_US + 500000,
                           REL_BASE_US + 40 * S_US};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        memset(res, 0, sizeof res);
        run_at(at[i], &peek, AG_PLAN_PEEK, res);
        assert_true(snapshot_holds(&before, "ag:peek1:*"));
        if (i == 0) {
            assert_false(res[hist.n].allowed);
            /* 13 s and 1 us left, rounded up. */
            assert_int_equal(res[hist.n].blocked_ms, 13001);
            assert_int_equal(res[hist.n].block_level, 1);
        }
    }
    snapshot_free(&before);
    /* And a check after the peeks is as a check without them: the one
     * blocked goes on to the second of its row, 2 x 15 s. */
    run_at(REL_BASE_US + 40 * S_US, &block, AG_PLAN_CHECK, res);
    assert_true(res[0].allowed);
    run_at(REL_BASE_US + 40 * S_US + 1, &block, AG_PLAN_CHECK, res);
    assert_false(res[0].allowed);
    assert_int_equal(res[0].retry_after_ms, 30000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_vector_holds_on_redis),
        cmocka_unit_test(both_stores_agree_on_a_random_trace),
        cmocka_unit_test(
            a_released_reserve_leaves_every_algorithm_as_it_found_it),
        cmocka_unit_test(
            a_reserve_whose_group_denies_charges_none_of_its_policies),
        cmocka_unit_test(releasing_a_known_subject_leaves_it_known),
        cmocka_unit_test(
            a_fixed_window_release_after_the_window_moved_on_keeps_the_new_one),
        cmocka_unit_test(
            a_sliding_window_release_a_window_later_takes_from_the_previous),
        cmocka_unit_test(a_token_bucket_release_never_fills_it_past_its_limit),
        cmocka_unit_test(a_release_with_a_nonce_not_in_the_log_removes_nothing),
        cmocka_unit_test(a_release_after_a_peek_deletes_a_key_of_another_type),
        cmocka_unit_test(a_clear_deletes_the_state_block_level_and_marker),
        cmocka_unit_test(a_reserve_or_release_without_a_nonce_is_refused),
        cmocka_unit_test(a_reserve_is_refused_where_redis_refuses_functions),
        cmocka_unit_test(the_memory_store_refuses_a_reserve_and_a_release),
        cmocka_unit_test(a_command_beside_the_limits_answers_its_caller),
        cmocka_unit_test(a_peek_leaves_redis_byte_for_byte_as_it_found_it),
    };
    return cmocka_run_group_tests(tests, start_redis, stop_redis);
}
