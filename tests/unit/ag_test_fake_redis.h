/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake Redis for the unit tests of the Redis lanes: a thread on a unix
 * socket that speaks enough RESP for them. It answers FUNCTION LOAD, SCRIPT
 * LOAD (F.sha forty times), PING, ECHO, ASKING and EVALSHA (a NOSCRIPT
 * while F.script_lost, which the next SCRIPT LOAD clears); HANG is never
 * answered, nor anything after it on its connection, as a blocked Redis
 * would; CLOSE closes its connection unanswered; GATE is answered
 * (+OPEN) only once F.gate_open is set (and FUNCTION LOAD too while
 * F.hold_load), and F.writes counts the
 * answers written, so a test knows when one is on its way. It logs every
 * command (ECHO with its argument: "ECHO:x") and counts the connections it
 * accepted; fake_close_all closes them all. Include after <cmocka.h>;
 * one fake a process (F), not thread-safe beyond its lock.
 */
#ifndef AG_TEST_FAKE_REDIS_H
#define AG_TEST_FAKE_REDIS_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEADLINE_S 30 /* the most any condition is waited for */
#define MAXC 8
#define LOG_MAX 4096

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
    bool gate_open;   /* GATE may be answered */
    bool hold_load;   /* FUNCTION LOAD waits for the gate too */
    int writes;       /* answers written */
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
            pthread_cond_broadcast(&F.cond);
            while (F.hold_load && !F.gate_open && !F.stopping)
                pthread_cond_wait(&F.cond, &F.lock);
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
        } else if (strcmp(name, "GATE") == 0) {
            pthread_cond_broadcast(&F.cond);
            while (!F.gate_open && !F.stopping)
                pthread_cond_wait(&F.cond, &F.lock);
            r = "+OPEN\r\n";
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
    if (o) {
        pthread_mutex_lock(&F.lock);
        F.writes++;
        pthread_cond_broadcast(&F.cond);
        pthread_mutex_unlock(&F.lock);
    }
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
    pthread_cond_broadcast(&F.cond);
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

#endif
