/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_surge around its arithmetic (test_redis_surge.c compares that
 * with ag_surge): what the shield's hash holds (counts, times and
 * baselines under the script's field names, nothing else) and its expiry,
 * renewed by every call; shapes that keep a state each and see each other
 * in the registry; Redis TIME as the clock of a call without one; a
 * script Redis forgot sent again with EVAL; a key of another type or a
 * hash of other fields started over; the refusals, with nothing sent; a
 * killed Redis, a prompt AG_ESTORE; and on a Redis Cluster of two masters
 * the cluster store takes a shield's call to its key's node. Starts its
 * own redis-servers (ag_test_redis.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_redis_reply.h"
#include "ag_redis_slot.h"
#include "ag_redis_surge.h"
#include "ag_store_cluster.h"
#include "ag_test_redis.h"

#define W 60000ull
#define T0 (AG_TEST_EPOCH_S * 1000)

static const struct ag_surge_params P = {.window_ms = W,
                                         .baseline_ms = 10 * W,
                                         .block_ms = 2 * W,
                                         .limit = 100,
                                         .factor_milli = 5000,
                                         .failures = true};
#define SHAPE "login.untrusted.failures.all.w60"

/* The hash's fields: window_ms and struct ag_surge_state's. */
static const char *const FIELDS[] = {
    "window_ms",      "window",          "count",
    "attempts",       "passes",          "prev_count",
    "prev_attempts",  "baseline_milli",  "attempt_baseline_milli",
    "taught",         "attempts_taught", "raised",
    "whole",          "tainted",         "by_operator",
    "long_said",      "since_ms",        "until_ms",
    "switch_version", "switch_ms",       "quiet_until_ms",
    "last_ms"};
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])

static struct ag_redis_surge_answer
call_shape(struct ag_store *s, const char *base, const char *shape,
           enum ag_redis_surge_op op, uint64_t now, uint64_t count)
{
    struct ag_redis_surge_call c = {.op = op,
                                    .count = count,
                                    .attempts = count,
                                    .for_ms = W,
                                    .now_ms = now};
    struct ag_redis_surge_answer a;
    int rc = ag_redis_surge(s, base, shape, &P, &c, &a);
    if (rc != AG_OK)
        fail_msg("ag_redis_surge on %s: %d", base, rc);
    return a;
}

static struct ag_redis_surge_answer call_at(struct ag_store *s,
                                            const char *base,
                                            enum ag_redis_surge_op op,
                                            uint64_t now, uint64_t count)
{
    return call_shape(s, base, SHAPE, op, now, count);
}

static redisReply *command(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r)
        fail_msg("redis: %s", c->errstr);
    return r;
}

static bool is_decimal(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Every field of key is one of FIELDS, once, with a decimal value, and
 * each of FIELDS is there. */
static void holds_only_the_fields(const char *key)
{
    redisReply *r = command(ag_env.ctx, "HGETALL %s", key);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2 * NFIELDS);
    bool seen[NFIELDS] = {false};
    for (size_t i = 0; i < r->elements; i += 2) {
        size_t f = 0;
        while (f < NFIELDS && strcmp(FIELDS[f], r->element[i]->str) != 0)
            f++;
        if (f == NFIELDS || seen[f])
            fail_msg("%s holds a field %s", key, r->element[i]->str);
        seen[f] = true;
        if (!is_decimal(r->element[i + 1]->str))
            fail_msg("%s's %s is %s", key, FIELDS[f], r->element[i + 1]->str);
    }
    freeReplyObject(r);
}

static void the_hash_holds_counts_times_and_baselines_and_expires(void **s)
{
    (void)s;
    const char *base = "ag:{surge}:hash";
    const char *key = "ag:{surge}:hash:" SHAPE;
    const enum ag_redis_surge_op ops[] = {AG_SURGE_OP_STEP, AG_SURGE_OP_STEP,
                                          AG_SURGE_OP_RAISE, AG_SURGE_OP_STEP,
                                          AG_SURGE_OP_LOWER};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        /* Every call sets the expiry again, whatever it was. */
        if (i > 0)
            assert_int_equal(ag_env_int("PERSIST %s", key), 1);
        struct ag_redis_surge_answer a =
            call_at(ag_env.store, base, ops[i], T0 + i * W / 2, 7);
        long long ttl = ag_env_int("PTTL %s", key);
        assert_true(ttl > 0 && ttl <= (long long)(2 * P.baseline_ms));
        holds_only_the_fields(key);
        char v[32];
        ag_env_field(key, "count", v, sizeof v);
        assert_int_equal(strtoull(v, NULL, 10), a.state.count);
        ag_env_field(key, "window_ms", v, sizeof v);
        assert_int_equal(strtoull(v, NULL, 10), P.window_ms);
        /* The registry: this shape and the time of its last call. */
        ttl = ag_env_int("PTTL %s", "ag:{surge}:hash:shapes");
        assert_true(ttl > 0 && ttl <= (long long)(2 * P.baseline_ms));
        ag_env_field("ag:{surge}:hash:shapes", SHAPE, v, sizeof v);
        assert_int_equal(strtoull(v, NULL, 10), T0 + i * W / 2);
    }
}

/* Issue 36, item 4: two configurations of one shield (windows of 60 and
 * 30 s, during a rollout) keep a state each, and each call says how many
 * others are in use. (Before, each call deleted the other's hash: a wave
 * of 400 failures over a floor of 100 was never shielded.) */
static void shapes_keep_a_state_each_and_see_each_other(void **s)
{
    (void)s;
    const char *base = "ag:{surge}:shapes";
    const char *other = "login.untrusted.failures.all.w30";
    uint64_t now = T0 + 1;
    struct ag_redis_surge_answer a, b;
    for (int i = 0; i < 8; i++, now += 250) {
        a = call_shape(ag_env.store, base, SHAPE, AG_SURGE_OP_STEP, now, 60);
        b = call_shape(ag_env.store, base, other, AG_SURGE_OP_STEP, now + 1,
                       60);
    }
    assert_int_equal(a.state.count, 480);
    assert_int_equal(b.state.count, 480);
    assert_int_equal(a.others, 1);
    assert_string_equal(a.other, other);
    assert_int_equal(b.others, 1);
    assert_string_equal(b.other, SHAPE);
    /* Once the other has not called for AG_REDIS_SURGE_RECENT_MS, it is
     * no longer in use; after two baseline periods it leaves. */
    now += AG_REDIS_SURGE_RECENT_MS + 2;
    a = call_shape(ag_env.store, base, SHAPE, AG_SURGE_OP_STEP, now, 0);
    assert_int_equal(a.others, 0);
    assert_string_equal(a.other, "");
    now += 2 * P.baseline_ms;
    call_shape(ag_env.store, base, SHAPE, AG_SURGE_OP_STEP, now, 0);
    char field[128];
    ag_env_field("ag:{surge}:shapes:shapes", other, field, sizeof field);
    assert_string_equal(field, "");
    ag_env_field("ag:{surge}:shapes:shapes", SHAPE, field, sizeof field);
    assert_int_equal(strtoull(field, NULL, 10), now);
}

static long long redis_ms(void)
{
    redisReply *t = command(ag_env.ctx, "TIME");
    long long ms =
        atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    return ms;
}

static void redis_time_is_the_clock_of_a_call_without_one(void **s)
{
    (void)s;
    long long before = redis_ms();
    struct ag_redis_surge_answer a =
        call_at(ag_env.store, "ag:{surge}:time", AG_SURGE_OP_STEP, 0, 3);
    assert_int_equal(a.state.last_ms, a.now_ms);
    long long after = redis_ms();
    assert_true((long long)a.now_ms >= before && (long long)a.now_ms <= after);
    assert_int_equal(a.state.window, a.now_ms / W);
    assert_int_equal(a.state.count, 3);
}

static void a_script_redis_forgot_is_sent_again(void **s)
{
    (void)s;
    const char *key = "ag:{surge}:flush";
    call_at(ag_env.store, key, AG_SURGE_OP_STEP, T0 + 1, 2);
    freeReplyObject(command(ag_env.ctx, "SCRIPT FLUSH"));
    freeReplyObject(command(ag_env.ctx, "CONFIG RESETSTAT"));
    struct ag_redis_surge_answer a =
        call_at(ag_env.store, key, AG_SURGE_OP_STEP, T0 + 2, 3);
    /* The state went on, through one EVAL after EVALSHA's NOSCRIPT. */
    assert_int_equal(a.state.count, 5);
    assert_int_equal(ag_env_calls("eval"), 1);
    a = call_at(ag_env.store, key, AG_SURGE_OP_STEP, T0 + 3, 1);
    assert_int_equal(a.state.count, 6);
    assert_int_equal(ag_env_calls("eval"), 1);
    assert_true(ag_env_calls("evalsha") >= 1);
}

static void a_key_of_another_kind_starts_over(void **s)
{
    (void)s;
    const char *base = "ag:{surge}:other";
    const char *key = "ag:{surge}:other:" SHAPE;
    freeReplyObject(command(ag_env.ctx, "SET %s x", key));
    struct ag_redis_surge_answer a =
        call_at(ag_env.store, base, AG_SURGE_OP_STEP, T0 + 1, 4);
    assert_int_equal(a.state.count, 4);
    holds_only_the_fields(key);
    /* A hash of another algorithm's fields (fixed_window's). */
    freeReplyObject(command(ag_env.ctx, "DEL %s", key));
    freeReplyObject(command(ag_env.ctx, "HSET %s i 9 n 9 count 50", key));
    a = call_at(ag_env.store, base, AG_SURGE_OP_STEP, T0 + 2, 4);
    assert_int_equal(a.state.count, 4);
    holds_only_the_fields(key);
    /* One whose flag is out of its range. */
    freeReplyObject(command(ag_env.ctx, "HSET %s tainted 3", key));
    a = call_at(ag_env.store, base, AG_SURGE_OP_STEP, T0 + 3, 1);
    assert_int_equal(a.state.count, 1);
}

static void what_the_script_cannot_take_is_refused_unsent(void **s)
{
    (void)s;
    const char *key = "ag:{surge}:refused";
    struct ag_redis_surge_call c = {.op = AG_SURGE_OP_STEP, .now_ms = T0};
    struct ag_redis_surge_answer a;
    struct ag_surge_params p = P;
    p.window_ms = 0;
    assert_int_equal(ag_redis_surge(ag_env.store, key, SHAPE, &p, &c, &a),
                     AG_ETOOBIG);
    p = P;
    p.baseline_ms = W - 1;
    assert_int_equal(ag_redis_surge(ag_env.store, key, SHAPE, &p, &c, &a),
                     AG_ETOOBIG);
    c.count = 1000000000000000ull;
    assert_int_equal(ag_redis_surge(ag_env.store, key, SHAPE, &P, &c, &a),
                     AG_ETOOBIG);
    c.count = 0;
    c.op = (enum ag_redis_surge_op)7;
    assert_int_equal(ag_redis_surge(ag_env.store, key, SHAPE, &P, &c, &a),
                     AG_ETOOBIG);
    c.op = AG_SURGE_OP_STEP;
    const char *shapes[] = {"", "a b", "a:b",
                            "0123456789012345678901234567890123456789"
                            "0123456789012345678901234567890123456789"
                            "0123456789012345"};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        assert_int_equal(
            ag_redis_surge(ag_env.store, key, shapes[i], &P, &c, &a),
            AG_ETOOBIG);
    assert_int_equal(ag_env_int("EXISTS %s:" SHAPE, key), 0);
    /* A store without Redis. */
    struct ag_store *mem = ag_store_mem_new(16, 16, NULL, NULL);
    assert_non_null(mem);
    assert_int_equal(ag_redis_surge(mem, key, SHAPE, &P, &c, &a), AG_EINVAL);
    ag_store_destroy(mem);
}

/* A redis-server of this test's own, to kill. */
static struct ag_test_server doomed;

static int stop_doomed(void **s)
{
    (void)s;
    ag_test_server_stop(&doomed);
    return 0;
}

static void a_killed_redis_is_a_prompt_store_error(void **s)
{
    (void)s;
    char sock[96];
    assert_int_equal(ag_test_server_dir(&doomed, "ag-surge-down"), 0);
    snprintf(sock, sizeof sock, "%s/redis.sock", doomed.dir);
    const char *args[] = {"--port", "0", "--unixsocket", sock};
    assert_int_equal(ag_test_server_spawn(&doomed, args, 4), 0);
    redisContext *c = ag_test_server_connect(sock, 0);
    assert_non_null(c);
    redisFree(c);
    struct ag_redis_addr addr = {.kind = AG_REDIS_UNIX};
    snprintf(addr.path, sizeof addr.path, "%s", sock);
    struct ag_store *store = ag_store_redis_new(
        &(struct ag_store_redis_opts){.addr = &addr, .timeout_ms = 1000});
    assert_non_null(store);
    call_at(store, "ag:{surge}:down", AG_SURGE_OP_STEP, T0, 1);
    kill(doomed.pid, SIGKILL);
    waitpid(doomed.pid, NULL, 0);
    doomed.pid = 0;
    struct ag_redis_surge_call call = {.op = AG_SURGE_OP_STEP, .count = 1};
    int rcs[5];
    double slowest = 0;
    for (int i = 0; i < 5; i++) {
        struct ag_redis_surge_answer a;
        double t = ag_env_mono_s();
        rcs[i] = ag_redis_surge(store, "ag:{surge}:down", SHAPE, &P, &call, &a);
        double took = ag_env_mono_s() - t;
        slowest = took > slowest ? took : slowest;
    }
    ag_store_destroy(store);
    for (int i = 0; i < 5; i++)
        assert_int_equal(rcs[i], AG_ESTORE);
    /* No wait for an answer that cannot come: at most the store's
     * timeout, and then some for a loaded machine. */
    assert_true(slowest < 3.0);
}

/* A Redis Cluster of two masters, each half the slots. */
static struct {
    struct ag_test_server server[2];
    int port[2], bus[2];
    redisContext *c[2];
} cl;

static int stop_cluster(void **s)
{
    (void)s;
    for (int i = 0; i < 2; i++) {
        redisFree(cl.c[i]);
        cl.c[i] = NULL;
        ag_test_server_stop(&cl.server[i]);
    }
    return 0;
}

/* Whether node i says the cluster is whole: both nodes met, every slot
 * served. */
static bool settled(int i)
{
    redisReply *r = command(cl.c[i], "CLUSTER INFO");
    bool ok = r->type == REDIS_REPLY_STRING;
    ok = ok && strstr(r->str, "cluster_state:ok") &&
         strstr(r->str, "cluster_known_nodes:2");
    freeReplyObject(r);
    return ok;
}

static void start_cluster(void)
{
    int ports[4];
    assert_int_equal(ag_test_spare_ports(ports, 4), 0);
    for (int i = 0; i < 2; i++) {
        cl.port[i] = ports[2 * i];
        cl.bus[i] = ports[2 * i + 1];
        char port[8], bus[8], conf[128];
        assert_int_equal(ag_test_server_dir(&cl.server[i], "ag-surge-cl"), 0);
        snprintf(port, sizeof port, "%d", cl.port[i]);
        snprintf(bus, sizeof bus, "%d", cl.bus[i]);
        snprintf(conf, sizeof conf, "%s/nodes.conf", cl.server[i].dir);
        const char *args[] = {"--port",
                              port,
                              "--bind",
                              "127.0.0.1",
                              "--cluster-enabled",
                              "yes",
                              "--cluster-port",
                              bus,
                              "--cluster-config-file",
                              conf};
        assert_int_equal(ag_test_server_spawn(&cl.server[i], args, 10), 0);
        cl.c[i] = ag_test_server_connect(NULL, cl.port[i]);
        assert_non_null(cl.c[i]);
        redisReply *r = command(cl.c[i], "CLUSTER ADDSLOTSRANGE %d %d",
                                i ? 8192 : 0, i ? AG_REDIS_SLOTS - 1 : 8191);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    redisReply *r =
        command(cl.c[0], "CLUSTER MEET 127.0.0.1 %d %d", cl.port[1], cl.bus[1]);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    double until = ag_env_mono_s() + 30;
    while (!(settled(0) && settled(1)) && ag_env_mono_s() < until)
        usleep(20000);
    assert_true(settled(0) && settled(1));
}

/* A shield key of ours in the slots of node i. */
static void key_on(int i, char *key, size_t size)
{
    for (int n = 0;; n++) {
        snprintf(key, size, "ag:{surge-%d}:site", n);
        if ((ag_redis_slot(key, strlen(key)) >= 8192) == (i == 1))
            return;
    }
}

static void a_cluster_store_takes_a_shield_to_its_key_node(void **s)
{
    (void)s;
    start_cluster();
    /* The store knows node 0 alone, to begin with. */
    struct ag_redis_addr addr = {.kind = AG_REDIS_CLUSTER, .n_seeds = 1};
    snprintf(addr.seeds[0].host, sizeof addr.seeds[0].host, "127.0.0.1");
    addr.seeds[0].port = cl.port[0];
    struct ag_store *store = ag_store_cluster_new(
        &(struct ag_store_redis_opts){.addr = &addr, .timeout_ms = 2000});
    assert_non_null(store);
    double until = ag_env_mono_s() + 30;
    while (ag_store_ping(store) != AG_OK && ag_env_mono_s() < until)
        usleep(20000);
    char key[2][64];
    int rcs[2];
    struct ag_redis_surge_answer a[2];
    for (int i = 0; i < 2; i++) {
        key_on(i, key[i], sizeof key[i]);
        struct ag_redis_surge_call c = {
            .op = AG_SURGE_OP_STEP, .count = 5 + i, .now_ms = T0};
        rcs[i] = ag_redis_surge(store, key[i], SHAPE, &P, &c, &a[i]);
    }
    ag_store_destroy(store);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rcs[i], AG_OK);
        assert_int_equal(a[i].state.count, 5 + i);
        /* On its node, with its registry (one slot: the hash tag), and
         * the other node holds nothing in that slot. */
        uint16_t slot = ag_redis_slot(key[i], strlen(key[i]));
        for (int n = 0; n < 2; n++) {
            redisReply *r =
                command(cl.c[n], "CLUSTER COUNTKEYSINSLOT %u", slot);
            assert_int_equal(r->integer, n == i ? 2 : 0);
            freeReplyObject(r);
        }
        redisReply *r = command(cl.c[i], "HGET %s:" SHAPE " count", key[i]);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_int_equal(atoi(r->str), 5 + i);
        freeReplyObject(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_hash_holds_counts_times_and_baselines_and_expires),
        cmocka_unit_test(shapes_keep_a_state_each_and_see_each_other),
        cmocka_unit_test(redis_time_is_the_clock_of_a_call_without_one),
        cmocka_unit_test(a_script_redis_forgot_is_sent_again),
        cmocka_unit_test(a_key_of_another_kind_starts_over),
        cmocka_unit_test(what_the_script_cannot_take_is_refused_unsent),
    };
    const struct CMUnitTest own[] = {
        cmocka_unit_test_teardown(a_killed_redis_is_a_prompt_store_error,
                                  stop_doomed),
        cmocka_unit_test_teardown(
            a_cluster_store_takes_a_shield_to_its_key_node, stop_cluster),
    };
    int failed = cmocka_run_group_tests(tests, ag_env_start, ag_env_stop);
    failed += cmocka_run_group_tests_name("own servers", own, NULL, NULL);
    return failed;
}
