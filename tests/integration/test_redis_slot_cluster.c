/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_slot against a real Redis Cluster node: a cluster-enabled
 * redis-server of its own (TCP on spare ports of 127.0.0.1, since a node
 * on a unix socket alone reports port 0), given every slot with CLUSTER
 * ADDSLOTSRANGE; the map built from its CLUSTER SLOTS must be complete with
 * one node, and ag_redis_slot must agree with CLUSTER KEYSLOT on 1000
 * random keys, biased towards braces so that hash tags are common.
 * AG_SLOT_SEED picks the keys' seed (default: the time), to replay a run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "ag_redis_reply.h"
#include "ag_redis_slot.h"
#include "ag_test_redis.h"

#define RANDOM_KEYS 1000
#define KEY_MAX 80

struct env {
    struct ag_test_server server;
    int port;
    redisContext *c; /* replies built by ag_redis_reply_functions */
};

static struct env env;

static redisReply *command(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(env.c, fmt, ap);
    va_end(ap);
    if (!r)
        fail_msg("redis: %s", env.c->errstr);
    return r;
}

static int start_redis(void **state)
{
    (void)state;
    int ports[2];
    if (ag_test_server_dir(&env.server, "ag-redis-slot") ||
        ag_test_spare_ports(ports, 2))
        return -1;
    env.port = ports[0];
    int bus = ports[1];
    char port[8], bus_port[8], conf[128];
    snprintf(port, sizeof port, "%d", env.port);
    snprintf(bus_port, sizeof bus_port, "%d", bus);
    snprintf(conf, sizeof conf, "%s/nodes.conf", env.server.dir);
    const char *args[] = {"--port",
                          port,
                          "--bind",
                          "127.0.0.1",
                          "--cluster-enabled",
                          "yes",
                          "--cluster-port",
                          bus_port,
                          "--cluster-config-file",
                          conf};
    if (ag_test_server_spawn(&env.server, args, sizeof args / sizeof *args))
        return -1;
    env.c = ag_test_server_connect(NULL, env.port);
    if (!env.c)
        return -1;
    /* From here on the replies are the service's own objects. */
    env.c->reader->fn = &ag_redis_reply_functions;
    return 0;
}

static int stop_redis(void **state)
{
    (void)state;
    redisFree(env.c);
    ag_test_server_stop(&env.server);
    return 0;
}

static struct ag_redis_slot_map *fetch_map(void)
{
    redisReply *r = command("CLUSTER SLOTS");
    struct ag_redis_slot_map *m = NULL;
    struct ag_error err;
    if (ag_redis_slot_map_from_reply(r, &m, &err))
        fail_msg("CLUSTER SLOTS refused: %s", err.msg);
    ag_redis_reply_free(r);
    return m;
}

static void a_node_with_every_slot_is_a_complete_map_of_one(void **state)
{
    (void)state;
    struct ag_redis_slot_map *m = fetch_map();
    /* Before ADDSLOTSRANGE no slot is served. */
    assert_int_equal(ag_redis_slot_map_nodes(m), 0);
    assert_false(ag_redis_slot_map_complete(m));
    ag_redis_slot_map_free(m);

    redisReply *r = command("CLUSTER ADDSLOTSRANGE 0 16383");
    if (r->type != REDIS_REPLY_STATUS)
        fail_msg("CLUSTER ADDSLOTSRANGE: %s", r->str ? r->str : "?");
    ag_redis_reply_free(r);

    m = fetch_map();
    assert_true(ag_redis_slot_map_complete(m));
    assert_int_equal(ag_redis_slot_map_nodes(m), 1);
    assert_int_equal(ag_redis_slot_map_owner(m, 0), 0);
    assert_int_equal(ag_redis_slot_map_owner(m, 16383), 0);
    assert_int_equal(ag_redis_slot_map_port(m, 0), env.port);
    /* A node that has met no other does not know its own address and
     * reports "" (redis-server 7.0.15): the address we asked. */
    const char *host = ag_redis_slot_map_host(m, 0);
    if (strcmp(host, "") != 0 && strcmp(host, "127.0.0.1") != 0)
        fail_msg("the node's host is \"%s\"", host);
    ag_redis_slot_map_free(m);
}

static uint64_t rng;

static uint64_t next(void)
{
    /* xorshift64*: a seed replays the same keys on any machine. */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

/* A random key: any bytes, but braces one time in eight, and sometimes
 * the shape of abuseguard's own keys. */
static size_t random_key(char *key)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (next() % 4 == 0) {
        n = (size_t)snprintf(key, KEY_MAX, "ag:%s", next() % 2 ? "{" : "");
        for (int i = 0; i < 32; i++)
            key[n++] = hex[next() % 16];
        if (key[3] == '{')
            key[n++] = '}';
        memcpy(key + n, ":b", 2);
        return n + 2 * (size_t)(next() % 2);
    }
    n = (size_t)(next() % KEY_MAX);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = next();
        key[i] = v % 8 == 0 ? "{}"[(v >> 3) % 2] : (char)(v >> 8);
    }
    return n;
}

static void slots_agree_with_cluster_keyslot_on_random_keys(void **state)
{
    (void)state;
    const char *seed = getenv("AG_SLOT_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL);
    if (!rng)
        rng = 1;
    print_message("AG_SLOT_SEED=%llu\n", (unsigned long long)rng);
    static char keys[RANDOM_KEYS][KEY_MAX];
    static size_t lens[RANDOM_KEYS];
    for (size_t i = 0; i < RANDOM_KEYS; i++) {
        lens[i] = random_key(keys[i]);
        const char *argv[] = {"CLUSTER", "KEYSLOT", keys[i]};
        const size_t argl[] = {7, 7, lens[i]};
        assert_int_equal(redisAppendCommandArgv(env.c, 3, argv, argl),
                         REDIS_OK);
    }
    int wrong = 0;
    for (size_t i = 0; i < RANDOM_KEYS; i++) {
        void *reply = NULL;
        if (redisGetReply(env.c, &reply) != REDIS_OK)
            fail_msg("redis: %s", env.c->errstr);
        redisReply *r = reply;
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        uint16_t ours = ag_redis_slot(keys[i], lens[i]);
        if (ours != r->integer && wrong++ < 10) {
            print_error("key %zu (%zu bytes): slot %u, Redis says %lld\n", i,
                        lens[i], ours, r->integer);
        }
        ag_redis_reply_free(r);
    }
    assert_int_equal(wrong, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_node_with_every_slot_is_a_complete_map_of_one),
        cmocka_unit_test(slots_agree_with_cluster_keyslot_on_random_keys),
    };
    return cmocka_run_group_tests(tests, start_redis, stop_redis);
}
