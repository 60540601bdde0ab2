/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Redis lanes (ag_redis_lane.h) and the link's non-blocking primitives
 * under them, against a fake Redis: a thread on a unix socket that speaks
 * RESP (FUNCTION LOAD, SCRIPT LOAD, PING, ECHO, ASKING, EVALSHA, and HANG
 * and CLOSE, which never answer), logs every command it takes and counts
 * the connections it accepts. The lanes run on a real ag_loop thread;
 * the executable is linked with -Wl,--wrap=send, so __wrap_send counts
 * the writes the links make. Every wait is on a condition with a
 * generous deadline; the only timeout waited for is the pipe's own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "ag_error.h"
#include "ag_loop.h"
#include "ag_metrics.h"
#include "ag_redis_breaker.h"
#include "ag_redis_code.h"
#include "ag_redis_lane.h"
#include "ag_redis_link.h"
#include "ag_redis_pipe.h"
#include "ag_redis_reply.h"

#include "ag_test_fake_redis.h"

#define TIMEOUT_MS 1000 /* the pipe's: each connect step, each reply */

ssize_t __real_send(int fd, const void *buf, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t n, int flags);

static atomic_int sends;

ssize_t __wrap_send(int fd, const void *buf, size_t n, int flags)
{
    atomic_fetch_add(&sends, 1);
    return __real_send(fd, buf, n, flags);
}

/* A job the tests send, and what its done saw. */
struct tjob {
    struct ag_redis_job job; /* first */
    int index;
    struct ag_redis_pipe *pipe;
    bool reload; /* on NOSCRIPT: reload on the connection, send again */
    bool reloaded;
    int load_rc;
    bool called;
    struct ag_loop *ran_on; /* ag_loop_self() in done */
    pthread_t thread;
    bool sent, orphaned;
    int type; /* the reply's, or -1: none */
    char text[64];
};

/* The test's loop, pipe and the dones' record. */
static struct {
    struct ag_loop *loop;
    pthread_t loop_thread;
    struct ag_redis_pipe *pipe;
    struct ag_redis_code code;
    struct ag_redis_breaker breaker;
    struct ag_metrics *metrics;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int order[256];
    int ndone;
    int tasks;
} T;

static void tdone(struct ag_redis_job *j, struct ag_redis_conn *c)
{
    struct tjob *t = (struct tjob *)j;
    redisReply *r = j->reply;
    j->reply = NULL;
    if (t->reload && !t->reloaded && r && r->type == REDIS_REPLY_ERROR &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
        t->reloaded = true;
        t->load_rc = ag_redis_conn_load(c, false, 3);
        ag_redis_reply_free(r);
        ag_redis_pipe_send(t->pipe, j);
        return;
    }
    pthread_mutex_lock(&T.lock);
    t->called = true;
    t->ran_on = ag_loop_self();
    t->thread = pthread_self();
    t->sent = j->sent;
    t->orphaned = j->orphaned;
    t->type = r ? r->type : -1;
    if (r && r->str)
        snprintf(t->text, sizeof t->text, "%s", r->str);
    T.order[T.ndone++] = t->index;
    pthread_cond_broadcast(&T.cond);
    pthread_mutex_unlock(&T.lock);
    ag_redis_reply_free(r);
}

static void tjob_init(struct tjob *t, int index, const char *cmd)
{
    memset(t, 0, sizeof *t);
    t->index = index;
    t->pipe = T.pipe;
    int len = redisFormatCommand(&t->job.cmd, cmd);
    assert_true(len > 0);
    t->job.len = (size_t)len;
    t->job.done = tdone;
}

static void tjob_free(struct tjob *t)
{
    redisFreeCommand(t->job.cmd);
}

static void wait_dones(int n)
{
    struct timespec ts = deadline();
    pthread_mutex_lock(&T.lock);
    int rc = 0;
    while (T.ndone < n && rc == 0)
        rc = pthread_cond_timedwait(&T.cond, &T.lock, &ts);
    pthread_mutex_unlock(&T.lock);
    assert_int_equal(rc, 0);
}

/* Sends jobs on the loop's thread, all in one task (one iteration), and
 * waits until the task has run. */
struct batch {
    struct ag_loop_task task;
    struct tjob **jobs;
    size_t n;
    uint64_t iteration; /* the loop's count while the task ran */
};

static void send_batch(void *arg)
{
    struct batch *b = arg;
    b->iteration = ag_loop_iterations(T.loop);
    T.loop_thread = pthread_self();
    for (size_t i = 0; i < b->n; i++)
        ag_redis_pipe_send(b->jobs[i]->pipe, &b->jobs[i]->job);
    pthread_mutex_lock(&T.lock);
    T.tasks++;
    pthread_cond_broadcast(&T.cond);
    pthread_mutex_unlock(&T.lock);
}

static uint64_t on_loop(struct tjob **jobs, size_t n)
{
    pthread_mutex_lock(&T.lock);
    int before = T.tasks;
    pthread_mutex_unlock(&T.lock);
    struct batch b = {.task = {.fn = send_batch}, .jobs = jobs, .n = n};
    b.task.arg = &b;
    ag_loop_post(T.loop, &b.task);
    struct timespec ts = deadline();
    pthread_mutex_lock(&T.lock);
    int rc = 0;
    while (T.tasks == before && rc == 0)
        rc = pthread_cond_timedwait(&T.cond, &T.lock, &ts);
    pthread_mutex_unlock(&T.lock);
    assert_int_equal(rc, 0);
    return b.iteration;
}

static int setup(void **state)
{
    (void)state;
    fake_start();
    memset(&T, 0, sizeof T);
    pthread_mutex_init(&T.lock, NULL);
    pthread_cond_init(&T.cond, NULL);
    static char lib[] = "#!lua name=fake\n", script[] = "return 1";
    T.code.library = (struct ag_redis_text){lib, sizeof lib - 1};
    for (unsigned m = 0; m < AG_REDIS_SCRIPTS; m++)
        T.code.scripts[m] = (struct ag_redis_text){script, sizeof script - 1};
    ag_redis_breaker_init(&T.breaker, NULL, NULL);
    T.metrics = ag_metrics_new();
    struct ag_redis_addr a;
    memset(&a, 0, sizeof a);
    a.kind = AG_REDIS_UNIX;
    strcpy(a.path, F.path);
    T.pipe = ag_redis_pipe_new(&a, TIMEOUT_MS, &T.code, &T.breaker, T.metrics);
    assert_non_null(T.pipe);
    ag_redis_lane_attach(T.pipe);
    assert_int_equal(ag_loop_new(&T.loop), 0);
    assert_int_equal(ag_loop_start(T.loop), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ag_loop_stop(T.loop);
    ag_redis_pipe_free(T.pipe);
    ag_loop_free(T.loop);
    ag_metrics_free(T.metrics);
    ag_redis_breaker_destroy(&T.breaker);
    pthread_cond_destroy(&T.cond);
    pthread_mutex_destroy(&T.lock);
    fake_stop();
    return 0;
}

/* PINGs on the loop until one is answered on the loop's own thread: the
 * lane connects off the loop, its first jobs going to the dispatchers
 * meanwhile, and is warm afterwards. */
static void warm_up(void)
{
    for (int i = 0; i < 30000; i++) {
        struct tjob w;
        tjob_init(&w, 999, "PING");
        struct tjob *jobs[] = {&w};
        int n = T.ndone;
        on_loop(jobs, 1);
        wait_dones(n + 1);
        assert_string_equal(w.text, "PONG");
        bool on_lane = w.ran_on == T.loop;
        tjob_free(&w);
        if (on_lane)
            return;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    fail_msg("the lane never connected");
}

static void
jobs_of_one_iteration_go_in_one_write_and_end_in_order_on_the_loop(void **state)
{
    (void)state;
    warm_up();
    enum { N = 50 };
    struct tjob t[N];
    struct tjob *jobs[N];
    for (int i = 0; i < N; i++) {
        char cmd[32];
        snprintf(cmd, sizeof cmd, "ECHO w%d", i);
        tjob_init(&t[i], i, cmd);
        jobs[i] = &t[i];
    }
    int accepted = fake_accepted(), n0 = T.ndone;
    atomic_store(&sends, 0);
    on_loop(jobs, N);
    wait_dones(n0 + N);
    assert_int_equal(atomic_load(&sends), 1);
    for (int i = 0; i < N; i++) {
        char want[16];
        snprintf(want, sizeof want, "w%d", i);
        assert_int_equal(T.order[n0 + i], i);
        assert_true(t[i].sent);
        assert_ptr_equal(t[i].ran_on, T.loop);
        assert_true(pthread_equal(t[i].thread, T.loop_thread));
        assert_string_equal(t[i].text, want);
        tjob_free(&t[i]);
    }
    assert_int_equal(fake_accepted(), accepted); /* the lane's, warm */
}

static void job_sent_off_a_loop_goes_through_the_dispatchers(void **state)
{
    (void)state;
    struct tjob t;
    tjob_init(&t, 0, "PING");
    ag_redis_pipe_send(T.pipe, &t.job);
    wait_dones(1);
    assert_string_equal(t.text, "PONG");
    assert_null(t.ran_on);
    assert_false(pthread_equal(t.thread, pthread_self()));
    tjob_free(&t);
    /* The same pipe on the loop: the lane's own connection (warm_up ends
     * with a job answered on the loop's thread), beside a dispatcher's. */
    warm_up();
    assert_true(fake_accepted() >= 2);
}

static void
reply_that_never_comes_times_out_as_sent_and_the_loop_goes_on(void **state)
{
    (void)state;
    warm_up();
    int n0 = T.ndone, a0 = fake_accepted();
    (void)n0;
    struct tjob hang, after;
    tjob_init(&hang, 0, "HANG");
    tjob_init(&after, 1, "PING");
    struct tjob *jobs[] = {&hang, &after};
    on_loop(jobs, 2);
    wait_dones(n0 + 2);
    assert_int_equal(hang.type, -1);
    assert_true(hang.sent);
    assert_false(hang.orphaned);
    assert_int_equal(after.type, -1);
    assert_true(after.sent);
    assert_true(after.orphaned);
    assert_int_equal(ag_metrics_get(T.metrics, AG_M_REDIS_TIMEOUTS), 1);
    /* The loop runs on: the next job connects again and is answered. */
    warm_up();
    assert_true(fake_accepted() > a0); /* the lane again */
    tjob_free(&hang);
    tjob_free(&after);
}

static void redis_closing_fails_the_jobs_in_flight_and_the_next_send_reconnects(
    void **state)
{
    (void)state;
    warm_up();
    int n0 = T.ndone, a0 = fake_accepted();
    (void)n0;
    struct tjob close_it, after;
    tjob_init(&close_it, 0, "CLOSE");
    tjob_init(&after, 1, "PING");
    struct tjob *jobs[] = {&close_it, &after};
    on_loop(jobs, 2);
    wait_dones(n0 + 2);
    assert_int_equal(close_it.type, -1);
    assert_true(close_it.sent);
    assert_false(close_it.orphaned);
    assert_int_equal(after.type, -1);
    assert_true(after.sent);
    assert_true(after.orphaned);
    assert_int_equal(ag_metrics_get(T.metrics, AG_M_REDIS_ERRORS), 1);
    warm_up();
    assert_true(fake_accepted() > a0); /* the lane again */
    tjob_free(&close_it);
    tjob_free(&after);
}

/* A no-op on the loop: the loop's count while it ran. */
static uint64_t loop_iteration(void)
{
    return on_loop(NULL, 0);
}

static void
idle_connection_redis_closed_is_replaced_without_a_failure(void **state)
{
    (void)state;
    warm_up();
    int n0 = T.ndone, a0 = fake_accepted();
    (void)n0;
    uint64_t it = loop_iteration();
    fake_close_all();
    /* The iteration that ran the no-op ends (it + 1); the next one can
     * only be the closed connection's (it + 2). */
    struct timespec ts = deadline();
    while (ag_loop_iterations(T.loop) < it + 2) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        assert_true(now.tv_sec < ts.tv_sec);
        sched_yield();
    }
    warm_up(); /* answered: the closed link was not written on */
    assert_true(fake_accepted() > a0); /* the lane again */
    assert_int_equal(ag_metrics_get(T.metrics, AG_M_REDIS_ERRORS), 0);
}

static void asking_goes_first_and_its_ok_is_not_the_reply(void **state)
{
    (void)state;
    struct tjob t;
    tjob_init(&t, 0, "ECHO asked");
    t.job.asking = true;
    struct tjob *jobs[] = {&t};
    on_loop(jobs, 1);
    wait_dones(1);
    assert_string_equal(t.text, "asked");
    int at = fake_find("ECHO:asked", true);
    assert_true(at > 0);
    assert_int_equal(fake_find("ASKING", true), at - 1);
    tjob_free(&t);
}

static void
noscript_reload_on_a_lane_goes_ahead_of_the_job_sent_again(void **state)
{
    (void)state;
    warm_up();
    int n0 = T.ndone, a0 = fake_accepted();
    char sha[41];
    ag_redis_pipe_sha(T.pipe, 3, sha);
    assert_int_equal(sha[0], 'a');
    pthread_mutex_lock(&F.lock);
    F.script_lost = true;
    F.sha = 'b';
    pthread_mutex_unlock(&F.lock);
    struct tjob t;
    tjob_init(&t, 0, "EVALSHA x 0");
    t.reload = true;
    struct tjob *jobs[] = {&t};
    on_loop(jobs, 1);
    wait_dones(n0 + 1);
    assert_true(t.reloaded);
    assert_int_equal(t.load_rc, AG_OK);
    assert_string_equal(t.text, "RAN");
    assert_ptr_equal(t.ran_on, T.loop);
    int last = fake_find("EVALSHA", true);
    assert_int_equal(fake_find("SCRIPT", true), last - 1);
    assert_int_equal(fake_find("EVALSHA", false), last - 2);
    ag_redis_pipe_sha(T.pipe, 3, sha);
    assert_int_equal(sha[0], 'b');
    assert_int_equal(fake_accepted(), a0); /* on the same connection */
    tjob_free(&t);
}

static void jobs_fail_unsent_while_the_breaker_is_open(void **state)
{
    (void)state;
    atomic_store(&T.breaker.open, true);
    struct tjob t;
    tjob_init(&t, 0, "PING");
    struct tjob *jobs[] = {&t};
    on_loop(jobs, 1);
    wait_dones(1);
    assert_int_equal(t.type, -1);
    assert_false(t.sent);
    assert_ptr_equal(t.ran_on, T.loop);
    assert_int_equal(fake_accepted(), 0); /* no connect tried */
    atomic_store(&T.breaker.open, false);
    tjob_free(&t);
}

static void freeing_the_pipe_ends_a_stopped_loops_jobs_as_sent(void **state)
{
    (void)state;
    warm_up();
    struct tjob hang;
    tjob_init(&hang, 0, "HANG");
    struct tjob *jobs[] = {&hang};
    on_loop(jobs, 1);
    /* Written: the fake has it. */
    struct timespec ts = deadline();
    pthread_mutex_lock(&F.lock);
    int rc = 0;
    while (rc == 0 && (F.nlog == 0 || strcmp(F.log[F.nlog - 1], "HANG")))
        rc = pthread_cond_timedwait(&F.cond, &F.lock, &ts);
    pthread_mutex_unlock(&F.lock);
    assert_int_equal(rc, 0);
    ag_loop_stop(T.loop);
    ag_redis_pipe_free(T.pipe);
    T.pipe = NULL;
    assert_true(hang.called);
    assert_int_equal(hang.type, -1);
    assert_true(hang.sent);
    assert_null(hang.ran_on);
    tjob_free(&hang);
}

/* A hook added before the lane's, which holds the loop's thread when
 * told to: the loop is busy (or off the CPU) while a reply arrives. */
static struct {
    struct ag_loop_hook hook;
    struct ag_loop_task add;
    bool armed, holding, go;
} B;

static int holding_hook(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&T.lock);
    if (B.armed) {
        B.armed = false;
        B.holding = true;
        pthread_cond_broadcast(&T.cond);
        while (!B.go)
            pthread_cond_wait(&T.cond, &T.lock);
        B.holding = false;
    }
    pthread_mutex_unlock(&T.lock);
    return -1;
}

static void add_hook(void *arg)
{
    (void)arg;
    ag_loop_hook(T.loop, &B.hook);
    pthread_mutex_lock(&T.lock);
    T.tasks++;
    pthread_cond_broadcast(&T.cond);
    pthread_mutex_unlock(&T.lock);
}

static void nothing(void *arg)
{
    (void)arg;
}

/* Waits on F's or T's condition for pred, within the deadline. */
#define WAIT_ON(lock, cond, pred)                                              \
    do {                                                                       \
        struct timespec ts_ = deadline();                                      \
        int rc_ = 0;                                                           \
        pthread_mutex_lock(lock);                                              \
        while (!(pred) && rc_ == 0)                                            \
            rc_ = pthread_cond_timedwait(cond, lock, &ts_);                    \
        pthread_mutex_unlock(lock);                                            \
        assert_int_equal(rc_, 0);                                              \
    } while (0)

static void a_reply_in_by_its_deadline_is_read_not_timed_out(void **state)
{
    (void)state;
    memset(&B, 0, sizeof B);
    B.hook.fn = holding_hook;
    B.add = (struct ag_loop_task){.fn = add_hook};
    int tasks = T.tasks;
    ag_loop_post(T.loop, &B.add); /* before the lane's hook, made below */
    WAIT_ON(&T.lock, &T.cond, T.tasks > tasks);
    warm_up();
    struct tjob gate;
    tjob_init(&gate, 0, "GATE");
    struct tjob *jobs[] = {&gate};
    int n = T.ndone;
    on_loop(jobs, 1);
    /* Written: the fake holds it unanswered. */
    WAIT_ON(&F.lock, &F.cond,
            F.nlog > 0 && strcmp(F.log[F.nlog - 1], "GATE") == 0);
    /* The loop's next iteration stops in the first hook... */
    pthread_mutex_lock(&T.lock);
    B.armed = true;
    pthread_mutex_unlock(&T.lock);
    struct ag_loop_task wake = {.fn = nothing};
    ag_loop_post(T.loop, &wake);
    WAIT_ON(&T.lock, &T.cond, B.holding);
    /* ...while the reply arrives, and the deadline passes. */
    pthread_mutex_lock(&F.lock);
    int writes = F.writes;
    F.gate_open = true;
    pthread_cond_broadcast(&F.cond);
    pthread_mutex_unlock(&F.lock);
    WAIT_ON(&F.lock, &F.cond, F.writes > writes);
    struct timespec wait = {TIMEOUT_MS / 1000 + 1, 0};
    nanosleep(&wait, NULL); /* past the deadline, at least */
    pthread_mutex_lock(&T.lock);
    B.go = true;
    pthread_cond_broadcast(&T.cond);
    pthread_mutex_unlock(&T.lock);
    wait_dones(n + 1);
    /* The lane's hook found the reply waiting: no timeout. */
    assert_int_equal(gate.type, REDIS_REPLY_STATUS);
    assert_string_equal(gate.text, "OPEN");
    assert_int_equal(ag_metrics_get(T.metrics, AG_M_REDIS_TIMEOUTS), 0);
    tjob_free(&gate);
}

/* Whether the fake has logged what since entry from; with F.lock held. */
static bool seen_since_locked(const char *what, size_t from)
{
    for (size_t i = from; i < F.nlog; i++)
        if (strcmp(F.log[i], what) == 0)
            return true;
    return false;
}

static void a_lane_connects_off_its_loop(void **state)
{
    (void)state;
    warm_up(); /* the code known, the lane up */
    /* Redis drops every connection, and each new one's code load then
     * waits, as a slow Redis would. */
    pthread_mutex_lock(&F.lock);
    F.hold_load = true;
    size_t logged = F.nlog;
    pthread_mutex_unlock(&F.lock);
    fake_close_all();
    struct tjob t;
    tjob_init(&t, 0, "PING");
    struct tjob *jobs[] = {&t};
    int n0 = T.ndone;
    on_loop(jobs, 1);
    WAIT_ON(&F.lock, &F.cond, seen_since_locked("FUNCTION", logged));
    /* The loop runs on while the lane's connection is being made: a task
     * posted now runs before any connect has failed (one held by the
     * loop would run only after its timeout, counted as an error). */
    on_loop(NULL, 0);
    assert_int_equal(ag_metrics_get(T.metrics, AG_M_REDIS_ERRORS), 0);
    pthread_mutex_lock(&F.lock);
    F.gate_open = true;
    pthread_cond_broadcast(&F.cond);
    pthread_mutex_unlock(&F.lock);
    wait_dones(n0 + 1);
    assert_string_equal(t.text, "PONG");
    tjob_free(&t);
    warm_up(); /* and the lane comes up again */
}

/* The primitives alone: a write without waiting, a read without waiting,
 * whole replies one by one, nothing to read, and the close. */
static void link_writes_and_reads_without_waiting(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    memset(&a, 0, sizeof a);
    a.kind = AG_REDIS_UNIX;
    strcpy(a.path, F.path);
    struct ag_redis_link *l = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_redis_link_open(&a, NULL, TIMEOUT_MS, &l, &err), AG_OK);
    assert_true(ag_redis_link_fd(l) >= 0);
    assert_int_equal(ag_redis_link_read_now(l), AG_EPENDING);
    void *r = NULL;
    assert_int_equal(ag_redis_link_next_reply(l, &r), AG_OK);
    assert_null(r);
    static const char three[] = "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\n"
                                "x\r\n*1\r\n$4\r\nPING\r\n";
    assert_int_equal(ag_redis_link_append(l, three, sizeof three - 1), AG_OK);
    assert_true(ag_redis_link_unwritten(l));
    atomic_store(&sends, 0);
    assert_int_equal(ag_redis_link_write_now(l), AG_OK);
    assert_int_equal(atomic_load(&sends), 1);
    assert_false(ag_redis_link_unwritten(l));
    int got = 0;
    const char *want[] = {"PONG", "x", "PONG"};
    while (got < 3) {
        struct pollfd pfd = {.fd = ag_redis_link_fd(l), .events = POLLIN};
        assert_int_equal(poll(&pfd, 1, DEADLINE_S * 1000), 1);
        assert_int_equal(ag_redis_link_read_now(l), AG_OK);
        while (ag_redis_link_next_reply(l, &r) == AG_OK && r) {
            assert_string_equal(((redisReply *)r)->str, want[got]);
            got++;
            ag_redis_reply_free(r);
        }
    }
    fake_close_all();
    struct pollfd pfd = {.fd = ag_redis_link_fd(l), .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, DEADLINE_S * 1000), 1);
    assert_int_equal(ag_redis_link_read_now(l), AG_ESTORE);
    assert_string_equal(ag_redis_link_error(l), "connection closed by server");
    ag_redis_link_close(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_reply_in_by_its_deadline_is_read_not_timed_out, setup, teardown),
        cmocka_unit_test_setup_teardown(a_lane_connects_off_its_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            jobs_of_one_iteration_go_in_one_write_and_end_in_order_on_the_loop,
            setup, teardown),
        cmocka_unit_test_setup_teardown(
            job_sent_off_a_loop_goes_through_the_dispatchers, setup, teardown),
        cmocka_unit_test_setup_teardown(
            reply_that_never_comes_times_out_as_sent_and_the_loop_goes_on,
            setup, teardown),
        cmocka_unit_test_setup_teardown(
            redis_closing_fails_the_jobs_in_flight_and_the_next_send_reconnects,
            setup, teardown),
        cmocka_unit_test_setup_teardown(
            idle_connection_redis_closed_is_replaced_without_a_failure, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            asking_goes_first_and_its_ok_is_not_the_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(
            noscript_reload_on_a_lane_goes_ahead_of_the_job_sent_again, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            jobs_fail_unsent_while_the_breaker_is_open, setup, teardown),
        cmocka_unit_test_setup_teardown(
            freeing_the_pipe_ends_a_stopped_loops_jobs_as_sent, setup,
            teardown),
        cmocka_unit_test_setup_teardown(link_writes_and_reads_without_waiting,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
