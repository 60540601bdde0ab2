/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the Redis store's C integration tests share: a redis-server of
 * their own in a temp dir (ag_test_server, which test_redis_slot_cluster
 * uses too); the Redis store on it, on a unix socket, on the test clock (a
 * clock.lua piece that replaces common.lua's, so that every check runs at
 * a time the test sets, never on Redis's own unawares); reads of Redis for
 * assertions; snapshots that prove a call left Redis as it was; and plans
 * on test keys at test times. Each executable of the store has one
 * environment, ag_env, set up and torn down around its group by
 * ag_env_start and ag_env_stop.
 *
 * Test code: not thread-safe (but for the store, which is), and a failed
 * read of Redis fails the running cmocka test. Include after <cmocka.h>.
 */
#ifndef AG_TEST_REDIS_H
#define AG_TEST_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "ag_limiter.h"
#include "ag_policy.h"
#include "ag_redis_addr.h"
#include "ag_store.h"

/* 2100-01-01T00:00:00Z in seconds: a whole day, so that every window of
 * whole seconds starts there, and far enough ahead that Redis's own
 * expiry of a key set by the test clock never runs during a test. */
#define AG_TEST_EPOCH_S 4102444800ull
#define AG_TEST_S_US 1000000ull
/* The window of the policies ag_plan_policy makes, and a time that every
 * window of it starts on. */
#define AG_PLAN_WINDOW_S 10
#define AG_PLAN_BASE_US (AG_TEST_EPOCH_S * AG_TEST_S_US)

/* A redis-server of a test's own, its files (and log) in a temp dir of
 * its own. */
struct ag_test_server {
    pid_t pid; /* 0: none */
    char dir[64];
};

/* Makes s's temp dir, /tmp/<name>-XXXXXX: 0, or -1. */
int ag_test_server_dir(struct ag_test_server *s, const char *name);
/* Starts redis-server in s's dir with args (nargs of them) and, after
 * them, no persistence and its log in the dir: 0, or -1. */
int ag_test_server_spawn(struct ag_test_server *s, const char *const *args,
                         size_t nargs);
/* n spare TCP ports of 127.0.0.1 into ports: the kernel's pick, released
 * just before redis-server binds them (a small race, which fails the
 * start). 0, or -1. */
int ag_test_spare_ports(int *ports, size_t n);
/* A connection to the redis-server at path (a unix socket) or, where path
 * is NULL, at 127.0.0.1:port, once it answers a PING (within 10 s);
 * caller frees with redisFree. NULL if it never does. */
redisContext *ag_test_server_connect(const char *path, int port);
/* Stops s's redis-server, if started, and removes its dir. */
void ag_test_server_stop(struct ag_test_server *s);

struct ag_test_env {
    struct ag_test_server server;
    char sock[96];
    redisContext *ctx;      /* the test's own connection: clock, reads */
    struct ag_store *store; /* the Redis store on the test clock */
    struct ag_store *mem;   /* a test's in-process store, if any: freed by
                               ag_env_stop, even after a failure */
};

extern struct ag_test_env ag_env;

/* cmocka group setup and teardown: start redis-server and connect the
 * store (which loads the library, and with it the test clock); stop
 * both and remove the temp dir. */
int ag_env_start(void **state);
int ag_env_stop(void **state);

/* A Redis store at addr with the embedded lua/ files and the test clock;
 * caller frees with ag_store_destroy. NULL on failure. */
struct ag_store *ag_env_store(const struct ag_redis_addr *addr);

/* Sets the test clock, microseconds since the epoch (ctx unused: an
 * ag_vectors_time_fn). */
void ag_env_set_time(void *ctx, uint64_t t_us);
/* The monotonic clock in seconds, for a test's own time budget. */
double ag_env_mono_s(void);

/* fmt (one %s, for key) answered with an integer. */
long long ag_env_int(const char *fmt, const char *key);
/* The calls Redis counts of command cmd so far (cmdstat_<cmd> of INFO
 * commandstats; a script's nested commands count too), 0 if none. */
long long ag_env_calls(const char *cmd);
/* A hash field of key as text into out, "" if it has none. */
void ag_env_field(const char *key, const char *field, char *out, size_t size);
/* Whether member is in key's sorted set. */
bool ag_env_has(const char *key, const char *member);

/* Every key of a pattern with its DUMP and PEXPIRETIME, for a comparison
 * that allows for Redis's own expiry: a set's key expires a window after
 * its last add by Redis's clock, not the test's (common.lua's set_add),
 * so between two looks Redis may drop one whatever the test does. */
struct ag_snapshot {
    redisReply *keys;
    redisReply *dumps[256];
    long long expire_ms[256];
};

void ag_snapshot_take(struct ag_snapshot *sn, const char *pattern);
void ag_snapshot_free(struct ag_snapshot *sn);
/* Whether Redis holds what sn saw, but for keys its own clock expired. */
bool ag_snapshot_holds(const struct ag_snapshot *sn, const char *pattern);

/* An in-process store's clock (ag_store_mem_new), reading ag_fake_now. */
extern uint64_t ag_fake_now;
uint64_t ag_fake_clock(void *ctx);

/* A policy of algorithm a named after it, on the user, with limit and
 * AG_PLAN_WINDOW_S, no block. */
void ag_plan_policy(struct ag_policy *p, enum ag_algorithm a, uint32_t limit);
/* Appends an op of p on "ag:<test>:<p's name><suffix>" to plan, charged
 * as ag_limiter_plan charges a check's (a consecutive policy is not). */
struct ag_limit_op *ag_plan_op(struct ag_plan *plan, const struct ag_policy *p,
                               const char *test, const char *suffix,
                               const char *member);
/* Runs plan as kind at time t through ag_env.store; the results into
 * res. */
void ag_plan_run_at(uint64_t t, struct ag_plan *plan, enum ag_plan_kind kind,
                    struct ag_limit_result *res);
/* One plan of every algorithm (p, AG_ALG_STORE_COUNT of them) on keys of
 * suffix, with some history: two checks (of subjects "a" and "b") and a
 * failure for the consecutive policy, 3 s and 11 s after AG_PLAN_BASE_US,
 * one in each of its first two windows. */
void ag_plan_history(struct ag_policy *p, const char *test, const char *suffix,
                     struct ag_plan *plan);

#endif
