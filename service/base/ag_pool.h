/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_pool: a few threads that run what may block (a SQLite write, a
 * synchronous Redis call), so that the check loops (ag_loop) never do.
 * The HTTP layer hands it the requests of routes that may block (the
 * admin API, the reports) and gets their answers back on the request's
 * loop. Tasks run in the order submitted, each on whichever thread is
 * free.
 *
 * Thread-safety: ag_pool_submit from any thread; new and free from one.
 */
#ifndef AG_POOL_H
#define AG_POOL_H

struct ag_pool;

/* A task: fn(arg) runs once on a pool thread. The submitter owns the
 * struct until fn runs. */
struct ag_pool_task {
    void (*fn)(void *arg);
    void *arg;
    struct ag_pool_task *next; /* the pool's while queued */
};

/* Starts n threads: 0, or an errno (none left running). */
int ag_pool_new(unsigned n, struct ag_pool **out);
/* Runs what is queued, then stops the threads and frees the pool. */
void ag_pool_free(struct ag_pool *p);
void ag_pool_submit(struct ag_pool *p, struct ag_pool_task *t);

#endif
