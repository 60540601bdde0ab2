/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Monotonic time for the service's timeouts and timed waits: what every
 * thread that sleeps on a condition variable (the reload watcher, the
 * Redis store's probe, the cluster map refresh, the deny cache's
 * subscriber, the events' retries, the webhook deliveries) needs, in one
 * place. CLOCK_MONOTONIC does not jump when the wall clock is set, so a
 * wait is as long as it says. Beside it, the wall clock in milliseconds
 * and its one text form (RFC 3339, UTC, milliseconds), which events,
 * the admin API and logs write. No state; safe from any thread.
 */
#ifndef AG_CLOCK_H
#define AG_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* "2026-12-03T10:01:02.345Z" and its NUL, with room to spare. */
#define AG_CLOCK_RFC3339_MAX 32

/* Milliseconds on CLOCK_MONOTONIC. */
static inline uint64_t ag_clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Milliseconds since the Unix epoch on CLOCK_REALTIME. */
static inline uint64_t ag_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ms since the Unix epoch as RFC 3339 text in UTC with milliseconds
 * ("2026-12-03T10:01:02.345Z") into out. */
static inline void ag_clock_rfc3339(uint64_t ms, char out[AG_CLOCK_RFC3339_MAX])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, AG_CLOCK_RFC3339_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, AG_CLOCK_RFC3339_MAX - n, ".%03uZ",
             (unsigned)(ms % 1000));
}

/* The CLOCK_MONOTONIC time ms from now, for pthread_cond_timedwait on a
 * condition made by ag_clock_cond_init. */
static inline struct timespec ag_clock_deadline(uint64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    return until;
}

/* Initialises c so that its timed waits read CLOCK_MONOTONIC. */
static inline void ag_clock_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
}

#endif
