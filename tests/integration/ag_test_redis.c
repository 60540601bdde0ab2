/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis store's integration tests' environment: see ag_test_redis.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "ag_test_redis.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_store_redis.h"

struct ag_test_env ag_env;
uint64_t ag_fake_now;

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

struct ag_store *ag_env_store(const struct ag_redis_addr *addr)
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

double ag_env_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t ag_fake_clock(void *ctx)
{
    (void)ctx;
    return ag_fake_now;
}

int ag_test_server_dir(struct ag_test_server *s, const char *name)
{
    s->pid = 0;
    snprintf(s->dir, sizeof s->dir, "/tmp/%s-XXXXXX", name);
    if (mkdtemp(s->dir))
        return 0;
    s->dir[0] = '\0';
    return -1;
}

int ag_test_server_spawn(struct ag_test_server *s, const char *const *args,
                         size_t nargs)
{
    char log[sizeof s->dir + 16];
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    const char *tail[] = {"--save", "",     "--appendonly", "no",
                          "--dir",  s->dir, "--logfile",    log};
    const size_t ntail = sizeof tail / sizeof tail[0];
    const char *argv[32];
    if (1 + nargs + ntail + 1 > sizeof argv / sizeof argv[0])
        return -1;
    size_t n = 0;
    argv[n++] = "redis-server";
    for (size_t i = 0; i < nargs; i++)
        argv[n++] = args[i];
    for (size_t i = 0; i < ntail; i++)
        argv[n++] = tail[i];
    argv[n] = NULL;
    s->pid = fork();
    if (s->pid == 0) {
        execvp("redis-server", (char *const *)argv);
        _exit(127);
    }
    return s->pid > 0 ? 0 : -1;
}

int ag_test_spare_ports(int *ports, size_t n)
{
    int fd[8], rc = -1;
    size_t opened = 0;
    if (n > sizeof fd / sizeof fd[0])
        return -1;
    for (; opened < n; opened++) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof sin;
        fd[opened] = socket(AF_INET, SOCK_STREAM, 0);
        if (fd[opened] < 0)
            goto out;
        /* Each stays bound until all are picked: n different ports. */
        if (bind(fd[opened], (struct sockaddr *)&sin, sizeof sin) ||
            getsockname(fd[opened], (struct sockaddr *)&sin, &len)) {
            opened++;
            goto out;
        }
        ports[opened] = ntohs(sin.sin_port);
    }
    rc = 0;
out:
    for (size_t i = 0; i < opened; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    return rc;
}

redisContext *ag_test_server_connect(const char *path, int port)
{
    for (double until = ag_env_mono_s() + 10; ag_env_mono_s() < until;
         usleep(10000)) {
        redisContext *c =
            path ? redisConnectUnix(path) : redisConnect("127.0.0.1", port);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            bool up = r && r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
            if (up)
                return c;
        }
        redisFree(c);
    }
    return NULL;
}

void ag_test_server_stop(struct ag_test_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
    if (!s->dir[0])
        return;
    char cmd[sizeof s->dir + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s->dir);
}

int ag_env_start(void **state)
{
    (void)state;
    if (ag_test_server_dir(&ag_env.server, "ag-store-redis"))
        return -1;
    snprintf(ag_env.sock, sizeof ag_env.sock, "%s/redis.sock",
             ag_env.server.dir);
    const char *args[] = {"--port", "0", "--unixsocket", ag_env.sock};
    if (ag_test_server_spawn(&ag_env.server, args, sizeof args / sizeof *args))
        return -1;
    ag_env.ctx = ag_test_server_connect(ag_env.sock, 0);
    if (!ag_env.ctx)
        return -1;
    struct ag_redis_addr addr = {.kind = AG_REDIS_UNIX};
    snprintf(addr.path, sizeof addr.path, "%s", ag_env.sock);
    ag_env.store = ag_env_store(&addr);
    /* The ping connects, which loads the library: the clock is there. */
    if (!ag_env.store || ag_store_ping(ag_env.store) != AG_OK)
        return -1;
    return 0;
}

int ag_env_stop(void **state)
{
    (void)state;
    ag_store_destroy(ag_env.store);
    ag_store_destroy(ag_env.mem);
    redisFree(ag_env.ctx);
    ag_test_server_stop(&ag_env.server);
    return 0;
}

void ag_env_set_time(void *ctx, uint64_t t_us)
{
    (void)ctx;
    redisReply *r = redisCommand(ag_env.ctx, "FCALL " CLOCK_FN " 0 %llu",
                                 (unsigned long long)t_us);
    char err[256] = "";
    if (!r || r->type == REDIS_REPLY_ERROR)
        snprintf(err, sizeof err, "%s", r ? r->str : ag_env.ctx->errstr);
    freeReplyObject(r);
    if (err[0])
        fail_msg("setting the test clock: %s", err);
}

long long ag_env_int(const char *fmt, const char *key)
{
    redisReply *r = redisCommand(ag_env.ctx, fmt, key);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        fail_msg("%s %s: not an integer", fmt, key);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

long long ag_env_calls(const char *cmd)
{
    redisReply *r = redisCommand(ag_env.ctx, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING)
        fail_msg("INFO commandstats failed");
    char head[64];
    snprintf(head, sizeof head, "cmdstat_%s:calls=", cmd);
    const char *at = strstr(r->str, head);
    long long n = at ? strtoll(at + strlen(head), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

void ag_env_field(const char *key, const char *field, char *out, size_t size)
{
    redisReply *r = redisCommand(ag_env.ctx, "HGET %s %s", key, field);
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
        fail_msg("HGET %s %s failed", key, field);
    snprintf(out, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

bool ag_env_has(const char *key, const char *member)
{
    redisReply *r = redisCommand(ag_env.ctx, "ZSCORE %s %s", key, member);
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
        fail_msg("ZSCORE %s %s failed", key, member);
    bool has = r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    return has;
}

void ag_snapshot_take(struct ag_snapshot *sn, const char *pattern)
{
    sn->keys = redisCommand(ag_env.ctx, "KEYS %s", pattern);
    if (!sn->keys || sn->keys->type != REDIS_REPLY_ARRAY ||
        sn->keys->elements > 256)
        fail_msg("KEYS %s failed or found too many", pattern);
    for (size_t i = 0; i < sn->keys->elements; i++) {
        const char *k = sn->keys->element[i]->str;
        sn->dumps[i] = redisCommand(ag_env.ctx, "DUMP %s", k);
        sn->expire_ms[i] = ag_env_int("PEXPIRETIME %s", k);
    }
}

void ag_snapshot_free(struct ag_snapshot *sn)
{
    for (size_t i = 0; sn->keys && i < sn->keys->elements; i++)
        freeReplyObject(sn->dumps[i]);
    freeReplyObject(sn->keys);
    sn->keys = NULL;
}

bool ag_snapshot_holds(const struct ag_snapshot *sn, const char *pattern)
{
    redisReply *t = redisCommand(ag_env.ctx, "TIME");
    long long now_ms =
        atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    struct ag_snapshot now = {0};
    ag_snapshot_take(&now, pattern);
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
    ag_snapshot_free(&now);
    return same;
}

void ag_plan_policy(struct ag_policy *p, enum ag_algorithm a, uint32_t limit)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", ag_algorithm_name(a));
    p->endpoint = AG_EP_LOGIN;
    p->key[0] = AG_KEY_USER;
    p->nkeys = 1;
    p->algorithm = a;
    p->limit = limit;
    p->window_s = AG_PLAN_WINDOW_S;
    p->block_growth = 1;
    if (a == AG_ALG_CONVERSION)
        p->min_ratio_ppm = AG_RATIO_ONE / 2;
    p->enabled = true;
}

struct ag_limit_op *ag_plan_op(struct ag_plan *plan, const struct ag_policy *p,
                               const char *test, const char *suffix,
                               const char *member)
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

void ag_plan_run_at(uint64_t t, struct ag_plan *plan, enum ag_plan_kind kind,
                    struct ag_limit_result *res)
{
    ag_env_set_time(NULL, t);
    plan->kind = kind;
    assert_int_equal(ag_store_check(ag_env.store, plan, res), AG_OK);
}

void ag_plan_history(struct ag_policy *p, const char *test, const char *suffix,
                     struct ag_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++)
        ag_plan_op(plan, &p[a], test, suffix, "");
    const char *subjects[] = {"a", "b"};
    uint64_t times[] = {AG_PLAN_BASE_US + 3 * AG_TEST_S_US,
                        AG_PLAN_BASE_US + 11 * AG_TEST_S_US};
    for (int k = 0; k < 2; k++) {
        struct ag_limit_result res[AG_PLAN_MAX];
        snprintf(plan->ops[AG_ALG_DISTINCT].member, sizeof plan->ops[0].member,
                 "%s", subjects[k]);
        ag_plan_run_at(times[k], plan, AG_PLAN_CHECK, res);
        for (size_t i = 0; i < plan->n; i++)
            assert_true(res[i].allowed);
        /* The consecutive policy's failure, alone. */
        struct ag_plan failure = {.kind = AG_PLAN_FAILURE, .n = 1};
        failure.ops[0] = plan->ops[AG_ALG_CONSECUTIVE];
        failure.ops[0].charge = true;
        ag_plan_run_at(times[k], &failure, AG_PLAN_FAILURE, res);
    }
}
