/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_store_redis_new when the system is out of threads: whichever of its
 * threads (two dispatchers, then the probe) fails to start, it returns
 * NULL and waits only for the threads that did start. The executable is
 * linked with -Wl,--wrap=pthread_create, so __wrap_pthread_create below
 * stands in for every pthread_create the store makes, and fails the one a
 * test picks. No Redis is needed: the threads connect only when a command
 * comes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "ag_store.h"
#include "ag_store_redis.h"

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg);

/* Which pthread_create call fails (1 for the first); 0: none. */
static int fail_call;
static int calls;

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg)
{
    if (++calls == fail_call)
        return EAGAIN;
    return __real_pthread_create(thread, attr, start, arg);
}

static struct ag_store *new_store_failing_call(int n)
{
    struct ag_redis_addr addr;
    memset(&addr, 0, sizeof addr);
    addr.kind = AG_REDIS_TCP;
    strcpy(addr.host, "127.0.0.1");
    addr.port = 1; /* never dialled */
    fail_call = n;
    calls = 0;
    return ag_store_redis_new(
        &(struct ag_store_redis_opts){.addr = &addr, .timeout_ms = 100});
}

static void first_dispatcher_failing_to_start_fails_cleanly(void **state)
{
    (void)state;
    assert_null(new_store_failing_call(1));
}

static void second_dispatcher_failing_to_start_fails_cleanly(void **state)
{
    (void)state;
    assert_null(new_store_failing_call(2));
}

static void probe_failing_to_start_fails_cleanly(void **state)
{
    (void)state;
    assert_null(new_store_failing_call(3));
}

static void store_with_every_thread_started_is_made_and_freed(void **state)
{
    (void)state;
    struct ag_store *s = new_store_failing_call(0);
    assert_non_null(s);
    assert_int_equal(calls, 3);
    ag_store_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_dispatcher_failing_to_start_fails_cleanly),
        cmocka_unit_test(second_dispatcher_failing_to_start_fails_cleanly),
        cmocka_unit_test(probe_failing_to_start_fails_cleanly),
        cmocka_unit_test(store_with_every_thread_started_is_made_and_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
