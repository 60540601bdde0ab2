/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_loop and ag_pool: a watched descriptor's callback, a posted task
 * and a hook all run on the loop's own thread (ag_loop_self says so), in
 * the order the loop promises (callbacks, then hooks in the order added;
 * tasks in the order posted); a hook that asks to run again at 0 ms gets
 * iterations with no event; a kick from another thread runs the hooks;
 * a stop runs what was posted before it. The pool runs every task on a
 * thread of its own, and its free runs what is still queued. Waits are
 * on conditions, with a generous deadline, never on a sleep.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "ag_loop.h"
#include "ag_pool.h"

/* Waits until *v reaches want, for up to 30 s: the test's only clock is
 * this deadline, which a loaded machine never comes near. */
static void wait_for(atomic_int *v, int want)
{
    for (int i = 0; i < 30000 && atomic_load(v) < want; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    assert_int_equal(atomic_load(v), want);
}

struct seen {
    struct ag_loop *loop;
    atomic_int events, on_loop, tasks, hooks;
    int order[64];
    atomic_int norder;
    int fds[2];
};

static void note(struct seen *s, int what)
{
    int i = atomic_fetch_add(&s->norder, 1);
    if (i < 64)
        s->order[i] = what;
}

static void readable(void *arg, uint32_t events)
{
    struct seen *s = arg;
    char c;
    assert_int_equal(read(s->fds[0], &c, 1), 1);
    assert_true(events & EPOLLIN);
    if (ag_loop_self() == s->loop)
        atomic_fetch_add(&s->on_loop, 1);
    note(s, 'e');
    atomic_fetch_add(&s->events, 1);
}

static int counting_hook(void *arg)
{
    struct seen *s = arg;
    if (ag_loop_self() == s->loop)
        atomic_fetch_add(&s->on_loop, 1);
    note(s, 'h');
    atomic_fetch_add(&s->hooks, 1);
    return -1;
}

static void task(void *arg)
{
    struct seen *s = arg;
    if (ag_loop_self() == s->loop)
        atomic_fetch_add(&s->on_loop, 1);
    note(s, 't');
    atomic_fetch_add(&s->tasks, 1);
}

static void callbacks_tasks_and_hooks_run_on_the_loop_in_order(void **state)
{
    (void)state;
    struct seen s = {0};
    assert_int_equal(pipe(s.fds), 0);
    assert_int_equal(ag_loop_new(&s.loop), 0);
    struct ag_loop_watch w = {.fd = s.fds[0], .fn = readable, .arg = &s};
    struct ag_loop_hook h = {.fn = counting_hook, .arg = &s};
    assert_int_equal(ag_loop_watch(s.loop, &w, EPOLLIN), 0);
    ag_loop_hook(s.loop, &h);
    assert_null(ag_loop_self());
    assert_int_equal(ag_loop_start(s.loop), 0);
    wait_for(&s.hooks, 1); /* the first iteration's hooks, before a wait */

    atomic_store(&s.norder, 0);
    int hooks = atomic_load(&s.hooks);
    assert_int_equal(write(s.fds[1], "x", 1), 1);
    wait_for(&s.events, 1);
    wait_for(&s.hooks, hooks + 1);
    /* The event's callback, then the hook of the same iteration. */
    assert_int_equal(s.order[0], 'e');
    assert_int_equal(s.order[1], 'h');

    struct ag_loop_task t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = (struct ag_loop_task){.fn = task, .arg = &s};
        ag_loop_post(s.loop, &t[i]);
    }
    wait_for(&s.tasks, 3);
    ag_loop_stop(s.loop);
    /* Every callback, task and hook ran on the loop's thread. */
    assert_int_equal(atomic_load(&s.on_loop), atomic_load(&s.events) +
                                                  atomic_load(&s.tasks) +
                                                  atomic_load(&s.hooks));
    ag_loop_free(s.loop);
    close(s.fds[0]);
    close(s.fds[1]);
}

struct again {
    struct ag_loop *loop;
    atomic_int calls;
    int zeros; /* the hook asks for 0 ms this many times */
};

static int eager_hook(void *arg)
{
    struct again *a = arg;
    return atomic_fetch_add(&a->calls, 1) < a->zeros ? 0 : -1;
}

static void a_hook_due_at_once_runs_again_without_an_event(void **state)
{
    (void)state;
    struct again a = {.zeros = 5};
    assert_int_equal(ag_loop_new(&a.loop), 0);
    struct ag_loop_hook h = {.fn = eager_hook, .arg = &a};
    ag_loop_hook(a.loop, &h);
    assert_int_equal(ag_loop_start(a.loop), 0);
    /* Five times "at once", then once more, which asks for nothing: six
     * runs, with no descriptor ever ready. */
    wait_for(&a.calls, 6);
    int calls = atomic_load(&a.calls);
    /* A kick from this thread makes it run once more. */
    ag_loop_kick(a.loop);
    wait_for(&a.calls, calls + 1);
    ag_loop_stop(a.loop);
    /* The stop ran the hooks a last time. */
    assert_true(atomic_load(&a.calls) >= calls + 2);
    assert_true(ag_loop_iterations(a.loop) >= 6);
    ag_loop_free(a.loop);
}

static void a_stop_runs_what_was_posted_before_it(void **state)
{
    (void)state;
    struct seen s = {0};
    assert_int_equal(ag_loop_new(&s.loop), 0);
    assert_int_equal(ag_loop_start(s.loop), 0);
    struct ag_loop_task t[16];
    for (int i = 0; i < 16; i++) {
        t[i] = (struct ag_loop_task){.fn = task, .arg = &s};
        ag_loop_post(s.loop, &t[i]);
    }
    ag_loop_stop(s.loop);
    assert_int_equal(atomic_load(&s.tasks), 16);
    assert_int_equal(atomic_load(&s.on_loop), 16);
    ag_loop_free(s.loop);
}

struct pooled {
    pthread_t caller;
    atomic_int ran, elsewhere;
};

static void pool_task(void *arg)
{
    struct pooled *p = arg;
    if (!pthread_equal(pthread_self(), p->caller))
        atomic_fetch_add(&p->elsewhere, 1);
    atomic_fetch_add(&p->ran, 1);
}

static void
the_pool_runs_every_task_off_the_caller_and_free_drains(void **state)
{
    (void)state;
    struct pooled p = {.caller = pthread_self()};
    struct ag_pool *pool;
    assert_int_equal(ag_pool_new(3, &pool), 0);
    struct ag_pool_task t[100];
    for (int i = 0; i < 100; i++) {
        t[i] = (struct ag_pool_task){.fn = pool_task, .arg = &p};
        ag_pool_submit(pool, &t[i]);
    }
    ag_pool_free(pool); /* runs what is queued, then stops */
    assert_int_equal(atomic_load(&p.ran), 100);
    assert_int_equal(atomic_load(&p.elsewhere), 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(callbacks_tasks_and_hooks_run_on_the_loop_in_order),
        cmocka_unit_test(a_hook_due_at_once_runs_again_without_an_event),
        cmocka_unit_test(a_stop_runs_what_was_posted_before_it),
        cmocka_unit_test(
            the_pool_runs_every_task_off_the_caller_and_free_drains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
