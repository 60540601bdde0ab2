/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_breaker.h"

#include <time.h>

#include "ag_error.h"

static uint64_t monotonic_ms(void *ctx);

static uint64_t monotonic_ms(void *ctx)
{
    (void)ctx;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

void ag_redis_breaker_init(struct ag_redis_breaker *b, ag_redis_clock_fn clock,
                           void *clock_ctx)
{
    atomic_init(&b->failures, 0);
    atomic_init(&b->open, false);
    pthread_mutex_init(&b->lock, NULL);
    b->probe_at_ms = 0;
    b->wait_ms = AG_REDIS_PROBE_MIN_MS;
    b->clock = clock ? clock : monotonic_ms;
    b->clock_ctx = clock ? clock_ctx : NULL;
}

void ag_redis_breaker_destroy(struct ag_redis_breaker *b)
{
    pthread_mutex_destroy(&b->lock);
}

bool ag_redis_breaker_record(struct ag_redis_breaker *b, int rc, bool orphaned)
{
    if (rc == AG_OK) {
        /* A load before the store: every check succeeds this way, and an
         * unconditional store would bounce the cache line between the
         * dispatchers. */
        if (atomic_load_explicit(&b->failures, memory_order_relaxed) != 0)
            atomic_store(&b->failures, 0);
        return false;
    }
    if (orphaned)
        return false;
    if (atomic_fetch_add(&b->failures, 1) + 1 < AG_REDIS_BREAKER_THRESHOLD)
        return false;
    pthread_mutex_lock(&b->lock);
    bool opened = !atomic_exchange(&b->open, true);
    if (opened) {
        b->wait_ms = AG_REDIS_PROBE_MIN_MS;
        b->probe_at_ms = b->clock(b->clock_ctx) + b->wait_ms;
    }
    pthread_mutex_unlock(&b->lock);
    return opened;
}

uint64_t ag_redis_breaker_probe_in(struct ag_redis_breaker *b)
{
    pthread_mutex_lock(&b->lock);
    uint64_t in = UINT64_MAX;
    if (atomic_load(&b->open)) {
        uint64_t now = b->clock(b->clock_ctx);
        in = now >= b->probe_at_ms ? 0 : b->probe_at_ms - now;
    }
    pthread_mutex_unlock(&b->lock);
    return in;
}

bool ag_redis_breaker_probed(struct ag_redis_breaker *b, bool up)
{
    pthread_mutex_lock(&b->lock);
    bool closed = false;
    if (up) {
        atomic_store(&b->failures, 0);
        closed = atomic_exchange(&b->open, false);
    } else if (atomic_load(&b->open)) {
        b->wait_ms = b->wait_ms * 2 > AG_REDIS_PROBE_MAX_MS
                         ? AG_REDIS_PROBE_MAX_MS
                         : b->wait_ms * 2;
        b->probe_at_ms = b->clock(b->clock_ctx) + b->wait_ms;
    }
    pthread_mutex_unlock(&b->lock);
    return closed;
}
