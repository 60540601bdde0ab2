/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

enum { MAX_EVENTS = 256 };

struct ag_loop {
    int epfd;
    struct ag_loop_watch wake; /* the eventfd */
    struct ag_loop_hook *hooks, **hooks_end;
    pthread_t thread;
    bool started;
    bool again; /* the loop's own kick: the next wait does not sleep */
    atomic_bool stopping;
    /* Set by whoever first wants the loop's attention since it last
     * read its eventfd, who then writes the eventfd; the others need
     * not. */
    atomic_bool signalled;
    pthread_mutex_t lock; /* guards the tasks */
    struct ag_loop_task *head, **tail;
    _Atomic uint64_t iterations;
};

static _Thread_local struct ag_loop *self;

struct ag_loop *ag_loop_self(void)
{
    return self;
}

/* Writes the eventfd, unless someone did since the loop last read it. */
static void ring(struct ag_loop *l)
{
    if (!atomic_exchange(&l->signalled, true)) {
        uint64_t one = 1;
        ssize_t w = write(l->wake.fd, &one, sizeof one);
        (void)w;
    }
}

/* The eventfd: the wake-ups are read, then the tasks run. */
static void woken(void *arg, uint32_t events)
{
    (void)events;
    struct ag_loop *l = arg;
    uint64_t n;
    ssize_t r = read(l->wake.fd, &n, sizeof n);
    (void)r;
    atomic_store(&l->signalled, false);
    pthread_mutex_lock(&l->lock);
    struct ag_loop_task *t = l->head;
    l->head = NULL;
    l->tail = &l->head;
    pthread_mutex_unlock(&l->lock);
    while (t) {
        struct ag_loop_task *next = t->next;
        t->fn(t->arg);
        t = next;
    }
}

int ag_loop_new(struct ag_loop **out)
{
    struct ag_loop *l = calloc(1, sizeof *l);
    if (!l)
        return ENOMEM;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wake.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    l->wake.fn = woken;
    l->wake.arg = l;
    l->hooks_end = &l->hooks;
    l->tail = &l->head;
    atomic_init(&l->stopping, false);
    atomic_init(&l->signalled, false);
    atomic_init(&l->iterations, 0);
    pthread_mutex_init(&l->lock, NULL);
    int rc = 0;
    if (l->epfd < 0 || l->wake.fd < 0 || ag_loop_watch(l, &l->wake, EPOLLIN))
        rc = errno ? errno : EIO;
    if (rc) {
        ag_loop_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void ag_loop_free(struct ag_loop *l)
{
    if (!l)
        return;
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->wake.fd >= 0)
        close(l->wake.fd);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* The smallest of the hooks' next times (-1: none), 0 after a kick. */
static int run_hooks(struct ag_loop *l)
{
    int timeout = -1;
    for (struct ag_loop_hook *h = l->hooks; h; h = h->next) {
        int t = h->fn(h->arg);
        if (t >= 0 && (timeout < 0 || t < timeout))
            timeout = t;
    }
    if (l->again) {
        l->again = false;
        timeout = 0;
    }
    return timeout;
}

static void *run(void *arg)
{
    struct ag_loop *l = arg;
    self = l;
    struct epoll_event ev[MAX_EVENTS];
    int timeout = run_hooks(l);
    while (!atomic_load_explicit(&l->stopping, memory_order_relaxed)) {
        int n = epoll_wait(l->epfd, ev, MAX_EVENTS, timeout);
        for (int i = 0; i < n; i++) {
            struct ag_loop_watch *w = ev[i].data.ptr;
            w->fn(w->arg, ev[i].events);
        }
        timeout = run_hooks(l);
        atomic_fetch_add_explicit(&l->iterations, 1, memory_order_relaxed);
    }
    /* What was posted before the stop still runs. */
    woken(l, 0);
    run_hooks(l);
    self = NULL;
    return NULL;
}

int ag_loop_start(struct ag_loop *l)
{
    int rc = pthread_create(&l->thread, NULL, run, l);
    l->started = rc == 0;
    return rc;
}

void ag_loop_stop(struct ag_loop *l)
{
    if (!l->started)
        return;
    atomic_store(&l->stopping, true);
    uint64_t one = 1;
    ssize_t w = write(l->wake.fd, &one, sizeof one);
    (void)w;
    pthread_join(l->thread, NULL);
    l->started = false;
}

int ag_loop_watch(struct ag_loop *l, struct ag_loop_watch *w, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};
    return epoll_ctl(l->epfd, EPOLL_CTL_ADD, w->fd, &ev) == 0 ? 0 : errno;
}

int ag_loop_rewatch(struct ag_loop *l, struct ag_loop_watch *w, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};
    return epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev) == 0 ? 0 : errno;
}

void ag_loop_unwatch(struct ag_loop *l, struct ag_loop_watch *w)
{
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

void ag_loop_hook(struct ag_loop *l, struct ag_loop_hook *h)
{
    h->next = NULL;
    *l->hooks_end = h;
    l->hooks_end = &h->next;
}

void ag_loop_post(struct ag_loop *l, struct ag_loop_task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&l->lock);
    *l->tail = t;
    l->tail = &t->next;
    pthread_mutex_unlock(&l->lock);
    ring(l);
}

void ag_loop_kick(struct ag_loop *l)
{
    /* On its own thread the hooks have yet to run this iteration. */
    if (self == l)
        l->again = true;
    else
        ring(l);
}

uint64_t ag_loop_iterations(const struct ag_loop *l)
{
    return atomic_load_explicit(&l->iterations, memory_order_relaxed);
}
