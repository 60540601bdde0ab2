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
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
#include "ag_store.h"
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
                    plan->kind == AG_PLAN_FAILURE ? " (failure plan)" : "");
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
        struct ag_plan plan = {.kind = below(5) == 0 ? AG_PLAN_FAILURE
                                                     : AG_PLAN_CHECK};
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
        assert_int_equal(ag_store_check(mem, &plan, a), AG_OK);
        assert_int_equal(ag_store_check(env.store, &plan, b), AG_OK);
        for (size_t k = 0; k < plan.n; k++) {
            if (a[k].allowed == b[k].allowed &&
                a[k].remaining == b[k].remaining &&
                a[k].retry_after_ms == b[k].retry_after_ms &&
                a[k].reset_after_ms == b[k].reset_after_ms)
                continue;
            char ta[96], tb[96];
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_vector_holds_on_redis),
        cmocka_unit_test(both_stores_agree_on_a_random_trace),
    };
    return cmocka_run_group_tests(tests, start_redis, stop_redis);
}
