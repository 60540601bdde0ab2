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
#include "ag_redis_link.h"
#include "ag_redis_pipe.h"
#include "ag_redis_reply.h"

#define TIMEOUT_MS 1000 /* the pipe's: each connect step, each reply */
#define DEADLINE_S 30   /* the most any condition is waited for */
#define MAXC 8
#define LOG_MAX 4096

ssize_t __real_send(int fd, const void *buf, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t n, int flags);

static atomic_int sends;

ssize_t __wrap_send(int fd, const void *buf, size_t n, int flags)
{
    atomic_fetch_add(&sends, 1);
    return __real_send(fd, buf, n, flags);
}

struct fconn {
    int fd;    /* -1: free */
    bool hung; /* a HANG came: nothing more is answered, as Redis would */
    char in[65536];
    size_t len;
};

struct fake {
    char dir[64];
    char path[108];
    int lfd;
    int wake[2];
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct fconn c[MAXC];
    int accepted;
    char log[LOG_MAX][40];
    size_t nlog;
    char sha;         /* SCRIPT LOAD answers it 40 times */
    bool script_lost; /* EVALSHA is a NOSCRIPT until the next SCRIPT LOAD */
    bool close_all;   /* asked: close every connection */
    bool stopping;
};

static struct fake F;

/* One whole command at in: its bytes, or 0 if not whole yet. */
static size_t parse(const char *in, size_t len, int *argc, const char **argv,
                    size_t *lens)
{
    const char *p = in, *end = in + len;
    if (len < 1 || *p != '*')
        return 0;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
        return 0;
    int n = atoi(p + 1);
    p = nl + 1;
    for (int i = 0; i < n; i++) {
        if (p >= end || *p != '$' || !(nl = memchr(p, '\n', (size_t)(end - p))))
            return 0;
        size_t l = strtoul(p + 1, NULL, 10);
        p = nl + 1;
        if ((size_t)(end - p) < l + 2)
            return 0;
        if (i < 4) {
            argv[i] = p;
            lens[i] = l;
        }
        p += l + 2;
    }
    *argc = n;
    return (size_t)(p - in);
}

static void note(const char *what, const char *arg, size_t alen)
{
    if (F.nlog < LOG_MAX)
        snprintf(F.log[F.nlog++], sizeof F.log[0], "%s%s%.*s", what,
                 arg ? ":" : "", (int)alen, arg ? arg : "");
}

/* Answers every whole command c holds; false once it must close. */
static bool answer(struct fconn *c)
{
    char out[8192];
    size_t o = 0, at = 0;
    bool open = true;
    for (;;) {
        int argc = 0;
        const char *argv[4];
        size_t lens[4];
        size_t used = parse(c->in + at, c->len - at, &argc, argv, lens);
        if (!used || argc < 1)
            break;
        at += used;
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)lens[0], argv[0]);
        pthread_mutex_lock(&F.lock);
        const char *r = "-ERR unknown\r\n";
        char buf[128];
        if (c->hung) {
            note(name, NULL, 0);
            r = "";
        } else if (strcmp(name, "ECHO") == 0) {
            note(name, argv[1], lens[1]);
            snprintf(buf, sizeof buf, "$%zu\r\n%.*s\r\n", lens[1], (int)lens[1],
                     argv[1]);
            r = buf;
        } else {
            note(name, NULL, 0);
        }
        if (c->hung) {
            /* nothing */
        } else if (strcmp(name, "FUNCTION") == 0) {
            r = "$3\r\nlib\r\n";
        } else if (strcmp(name, "SCRIPT") == 0) {
            snprintf(buf, sizeof buf, "$40\r\n%.40s\r\n",
                     "0000000000000000000000000000000000000000");
            memset(buf + 5, F.sha, 40);
            r = buf;
            F.script_lost = false;
        } else if (strcmp(name, "PING") == 0) {
            r = "+PONG\r\n";
        } else if (strcmp(name, "ASKING") == 0) {
            r = "+OK\r\n";
        } else if (strcmp(name, "EVALSHA") == 0) {
            r = F.script_lost ? "-NOSCRIPT No matching script.\r\n"
                              : "+RAN\r\n";
        } else if (strcmp(name, "HANG") == 0) {
            r = "";
            c->hung = true;
        } else if (strcmp(name, "CLOSE") == 0) {
            r = "";
            open = false;
        }
        pthread_cond_broadcast(&F.cond);
        pthread_mutex_unlock(&F.lock);
        size_t rl = strlen(r);
        if (o + rl <= sizeof out) {
            memcpy(out + o, r, rl);
            o += rl;
        }
        if (!open)
            break;
    }
    memmove(c->in, c->in + at, c->len - at);
    c->len -= at;
    if (o && write(c->fd, out, o) < 0)
        return false;
    return open;
}

static void fclose_conn(struct fconn *c)
{
    close(c->fd);
    c->fd = -1;
    c->len = 0;
    c->hung = false;
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd pfd[2 + MAXC];
        pfd[0] = (struct pollfd){.fd = F.lfd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = F.wake[0], .events = POLLIN};
        for (int i = 0; i < MAXC; i++)
            pfd[2 + i] = (struct pollfd){.fd = F.c[i].fd, .events = POLLIN};
        if (poll(pfd, 2 + MAXC, -1) < 0 && errno != EINTR)
            return NULL;
        if (pfd[1].revents) {
            char b[16];
            ssize_t n = read(F.wake[0], b, sizeof b);
            (void)n;
            pthread_mutex_lock(&F.lock);
            bool stop = F.stopping;
            if (F.close_all) {
                for (int i = 0; i < MAXC; i++)
                    if (F.c[i].fd >= 0)
                        fclose_conn(&F.c[i]);
                F.close_all = false;
                pthread_cond_broadcast(&F.cond);
            }
            pthread_mutex_unlock(&F.lock);
            if (stop)
                break;
        }
        if (pfd[0].revents) {
            int fd = accept(F.lfd, NULL, NULL);
            for (int i = 0; fd >= 0 && i < MAXC; i++)
                if (F.c[i].fd < 0) {
                    F.c[i].fd = fd;
                    fd = -1;
                }
            if (fd >= 0)
                close(fd);
            pthread_mutex_lock(&F.lock);
            F.accepted++;
            pthread_mutex_unlock(&F.lock);
        }
        for (int i = 0; i < MAXC; i++) {
            struct fconn *c = &F.c[i];
            if (c->fd < 0 || !pfd[2 + i].revents || pfd[2 + i].fd != c->fd)
                continue;
            ssize_t n = read(c->fd, c->in + c->len, sizeof c->in - c->len);
            if (n <= 0 || (c->len += (size_t)n, !answer(c)))
                fclose_conn(c);
        }
    }
    for (int i = 0; i < MAXC; i++)
        if (F.c[i].fd >= 0)
            fclose_conn(&F.c[i]);
    return NULL;
}

static void poke(void)
{
    char b = 1;
    assert_int_equal(write(F.wake[1], &b, 1), 1);
}

static void fake_start(void)
{
    memset(&F, 0, sizeof F);
    for (int i = 0; i < MAXC; i++)
        F.c[i].fd = -1;
    F.sha = 'a';
    strcpy(F.dir, "/tmp/ag-lane-XXXXXX");
    assert_non_null(mkdtemp(F.dir));
    snprintf(F.path, sizeof F.path, "%s/s", F.dir);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    strcpy(sun.sun_path, F.path);
    F.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(F.lfd >= 0);
    assert_int_equal(bind(F.lfd, (struct sockaddr *)&sun, sizeof sun), 0);
    assert_int_equal(listen(F.lfd, 8), 0);
    assert_int_equal(pipe(F.wake), 0);
    pthread_mutex_init(&F.lock, NULL);
    pthread_cond_init(&F.cond, NULL);
    assert_int_equal(pthread_create(&F.thread, NULL, serve, NULL), 0);
}

static void fake_stop(void)
{
    pthread_mutex_lock(&F.lock);
    F.stopping = true;
    pthread_mutex_unlock(&F.lock);
    poke();
    pthread_join(F.thread, NULL);
    close(F.lfd);
    close(F.wake[0]);
    close(F.wake[1]);
    unlink(F.path);
    rmdir(F.dir);
    pthread_cond_destroy(&F.cond);
    pthread_mutex_destroy(&F.lock);
}

static struct timespec deadline(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += DEADLINE_S;
    return ts;
}

/* Closes every connection the fake holds, and waits until it has. */
static void fake_close_all(void)
{
    pthread_mutex_lock(&F.lock);
    F.close_all = true;
    pthread_mutex_unlock(&F.lock);
    poke();
    struct timespec ts = deadline();
    pthread_mutex_lock(&F.lock);
    int rc = 0;
    while (F.close_all && rc == 0)
        rc = pthread_cond_timedwait(&F.cond, &F.lock, &ts);
    pthread_mutex_unlock(&F.lock);
    assert_int_equal(rc, 0);
}

static int fake_accepted(void)
{
    pthread_mutex_lock(&F.lock);
    int n = F.accepted;
    pthread_mutex_unlock(&F.lock);
    return n;
}

/* Where the fake logged what (from the end when last), or -1. */
static int fake_find(const char *what, bool last)
{
    pthread_mutex_lock(&F.lock);
    int at = -1;
    for (size_t i = 0; i < F.nlog; i++)
        if (strcmp(F.log[i], what) == 0 && (last || at < 0))
            at = (int)i;
    pthread_mutex_unlock(&F.lock);
    return at;
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

/* A PING on the loop: the lane connects, and is warm afterwards. */
static void warm_up(void)
{
    struct tjob w;
    tjob_init(&w, 999, "PING");
    struct tjob *jobs[] = {&w};
    int n = T.ndone;
    on_loop(jobs, 1);
    wait_dones(n + 1);
    assert_string_equal(w.text, "PONG");
    tjob_free(&w);
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
    atomic_store(&sends, 0);
    on_loop(jobs, N);
    wait_dones(1 + N);
    assert_int_equal(atomic_load(&sends), 1);
    for (int i = 0; i < N; i++) {
        char want[16];
        snprintf(want, sizeof want, "w%d", i);
        assert_int_equal(T.order[1 + i], i);
        assert_true(t[i].sent);
        assert_ptr_equal(t[i].ran_on, T.loop);
        assert_true(pthread_equal(t[i].thread, T.loop_thread));
        assert_string_equal(t[i].text, want);
        tjob_free(&t[i]);
    }
    assert_int_equal(fake_accepted(), 1);
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
    /* The same pipe on the loop: the lane's own connection. */
    warm_up();
    assert_int_equal(fake_accepted(), 2); /* a dispatcher's, the lane's */
}

static void
reply_that_never_comes_times_out_as_sent_and_the_loop_goes_on(void **state)
{
    (void)state;
    warm_up();
    struct tjob hang, after;
    tjob_init(&hang, 0, "HANG");
    tjob_init(&after, 1, "PING");
    struct tjob *jobs[] = {&hang, &after};
    on_loop(jobs, 2);
    wait_dones(3);
    assert_int_equal(hang.type, -1);
    assert_true(hang.sent);
    assert_false(hang.orphaned);
    assert_int_equal(after.type, -1);
    assert_true(after.sent);
    assert_true(after.orphaned);
    assert_int_equal(ag_metrics_get(T.metrics, AG_M_REDIS_TIMEOUTS), 1);
    /* The loop runs on: the next job connects again and is answered. */
    warm_up();
    assert_int_equal(fake_accepted(), 2);
    tjob_free(&hang);
    tjob_free(&after);
}

static void redis_closing_fails_the_jobs_in_flight_and_the_next_send_reconnects(
    void **state)
{
    (void)state;
    warm_up();
    struct tjob close_it, after;
    tjob_init(&close_it, 0, "CLOSE");
    tjob_init(&after, 1, "PING");
    struct tjob *jobs[] = {&close_it, &after};
    on_loop(jobs, 2);
    wait_dones(3);
    assert_int_equal(close_it.type, -1);
    assert_true(close_it.sent);
    assert_false(close_it.orphaned);
    assert_int_equal(after.type, -1);
    assert_true(after.sent);
    assert_true(after.orphaned);
    assert_int_equal(ag_metrics_get(T.metrics, AG_M_REDIS_ERRORS), 1);
    warm_up();
    assert_int_equal(fake_accepted(), 2);
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
    assert_int_equal(fake_accepted(), 2);
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
    wait_dones(2);
    assert_true(t.reloaded);
    assert_int_equal(t.load_rc, AG_OK);
    assert_string_equal(t.text, "RAN");
    assert_ptr_equal(t.ran_on, T.loop);
    int last = fake_find("EVALSHA", true);
    assert_int_equal(fake_find("SCRIPT", true), last - 1);
    assert_int_equal(fake_find("EVALSHA", false), last - 2);
    ag_redis_pipe_sha(T.pipe, 3, sha);
    assert_int_equal(sha[0], 'b');
    assert_int_equal(fake_accepted(), 1); /* on the same connection */
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
