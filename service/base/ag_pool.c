/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct ag_pool {
    pthread_mutex_t lock; /* guards the queue and stopping */
    pthread_cond_t queued;
    struct ag_pool_task *head, **tail;
    bool stopping;
    unsigned n; /* threads running */
    pthread_t threads[];
};

static void *work(void *arg)
{
    struct ag_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->queued, &p->lock);
        struct ag_pool_task *t = p->head;
        if (!t)
            break; /* stopping, and nothing left */
        p->head = t->next;
        if (!p->head)
            p->tail = &p->head;
        pthread_mutex_unlock(&p->lock);
        t->fn(t->arg);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int ag_pool_new(unsigned n, struct ag_pool **out)
{
    struct ag_pool *p = calloc(1, sizeof *p + n * sizeof(pthread_t));
    if (!p)
        return ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->queued, NULL);
    p->tail = &p->head;
    for (; p->n < n; p->n++) {
        int rc = pthread_create(&p->threads[p->n], NULL, work, p);
        if (rc) {
            ag_pool_free(p);
            return rc;
        }
    }
    *out = p;
    return 0;
}

void ag_pool_free(struct ag_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->queued);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->queued);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void ag_pool_submit(struct ag_pool *p, struct ag_pool_task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&p->lock);
    *p->tail = t;
    p->tail = &t->next;
    pthread_cond_signal(&p->queued);
    pthread_mutex_unlock(&p->lock);
}
