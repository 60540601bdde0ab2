/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_loop: an event loop on a thread of its own, one a core, that owns
 * everything a check touches (its HTTP connections and its Redis
 * connections), so that a check is read, sent to Redis, answered and
 * written on one thread: no hand-off, no lock and no wake-up between
 * threads on the way.
 *
 * An iteration waits in epoll_wait(2) for the descriptors watched, runs
 * their callbacks, then runs every hook in the order they were added:
 * each flushes what the iteration produced (the HTTP layer runs
 * libmicrohttpd, the Redis lanes write their pipelines: the HTTP hook is
 * added first, so the checks it begins go out in the same iteration) and
 * says how soon it must run again. Work that other threads hand over
 * (ag_loop_post) and wake-ups (ag_loop_kick) come through one eventfd,
 * written only when the loop may be asleep.
 *
 * Thread-safety: ag_loop_post, ag_loop_kick and ag_loop_stop may be
 * called from any thread; everything else only on the loop's thread, or
 * before ag_loop_start and after ag_loop_stop.
 */
#ifndef AG_LOOP_H
#define AG_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct ag_loop;

/* A descriptor watched: fn(arg, events) runs on the loop's thread with
 * the epoll events that came. The caller owns the struct; it must stay
 * put while watched. */
struct ag_loop_watch {
    int fd;
    void (*fn)(void *arg, uint32_t events);
    void *arg;
};

/* Runs after the callbacks of every iteration; returns the milliseconds
 * until it must run again at the latest, or -1: only when something
 * happens. The caller owns the struct. */
struct ag_loop_hook {
    int (*fn)(void *arg);
    void *arg;
    struct ag_loop_hook *next; /* the loop's */
};

/* Work handed to the loop from another thread: fn(arg) runs once on the
 * loop's thread, in the order posted. The poster owns the struct until
 * fn runs. */
struct ag_loop_task {
    void (*fn)(void *arg);
    void *arg;
    struct ag_loop_task *next; /* the loop's while queued */
};

/* A new loop (its epoll and eventfd; no thread yet): 0, or an errno. */
int ag_loop_new(struct ag_loop **out);
/* Frees a loop that is not running; tasks still queued never run. */
void ag_loop_free(struct ag_loop *l);

/* Starts the loop's thread: 0, or an errno. */
int ag_loop_start(struct ag_loop *l);
/* Ends the loop after its current iteration and joins its thread (from
 * any thread but the loop's own). Tasks posted before it run first. */
void ag_loop_stop(struct ag_loop *l);

/* Watches w->fd for events (EPOLLIN, EPOLLOUT, EPOLLET...): 0 or an errno.
 * ag_loop_rewatch changes the events; ag_loop_unwatch stops (closing the
 * descriptor does too). */
int ag_loop_watch(struct ag_loop *l, struct ag_loop_watch *w, uint32_t events);
int ag_loop_rewatch(struct ag_loop *l, struct ag_loop_watch *w,
                    uint32_t events);
void ag_loop_unwatch(struct ag_loop *l, struct ag_loop_watch *w);

/* Adds h after the hooks already there. */
void ag_loop_hook(struct ag_loop *l, struct ag_loop_hook *h);

/* From any thread: runs t on the loop's thread soon. */
void ag_loop_post(struct ag_loop *l, struct ag_loop_task *t);
/* From any thread: makes the loop run an iteration soon (its hooks). */
void ag_loop_kick(struct ag_loop *l);

/* The loop whose thread this is, or NULL. */
struct ag_loop *ag_loop_self(void);

/* Iterations the loop has run: for tests and the Redis lanes, which
 * tell by it whether their hook has run in this iteration. */
uint64_t ag_loop_iterations(const struct ag_loop *l);

#endif
