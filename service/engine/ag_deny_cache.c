/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_deny_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "ag_error.h"
#include "ag_metrics.h"

/* Mutexes the buckets share: enough that two workers rarely wait on one,
 * few enough to take them all for a clear. */
#define STRIPES 64

/* One slot. key_hash 0 marks it empty (a digest of 0 is remapped). */
struct entry {
    uint64_t key_hash; /* SipHash of the key */
    uint64_t id_hash;  /* SipHash of the key, a NUL and the member */
    uint64_t until_us; /* denied until then, the cache's clock */
    uint64_t hold_us;  /* held until then: until_us or the cap, if sooner */
    uint64_t reset_us; /* the window holds nothing from then */
};

struct ag_deny_cache {
    struct ag_deny_cache_opts o;
    size_t nbuckets; /* a power of two */
    struct entry *slots;
    pthread_mutex_t stripes[STRIPES];
    /* The epoch an invalidation of a key in the stripe moved the count
     * to, last; guarded by the stripe's lock. */
    uint64_t invalidated[STRIPES];
    unsigned char hash_key[crypto_shorthash_KEYBYTES];
    /* Moved on by every invalidation and wipe: what an insert's caller
     * reads before its Redis call. */
    atomic_uint_fast64_t epoch;
    /* The epoch the last wipe (a clear, a change of liveness) moved it
     * to. */
    atomic_uint_fast64_t wiped;
    atomic_bool live;
    atomic_size_t entries;
};

/* CLOCK_BOOTTIME, not CLOCK_MONOTONIC: the monotonic clock stops while
 * the host is suspended, and Redis's does not, so a deadline on it would
 * outlive Redis's wait by the time spent asleep. */
static uint64_t boottime_us(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int ag_deny_cache_new(const struct ag_deny_cache_opts *o,
                      struct ag_deny_cache **out)
{
    *out = NULL;
    struct ag_deny_cache *c = calloc(1, sizeof *c);
    if (!c)
        return AG_ENOMEM;
    c->o = *o;
    if (!c->o.clock)
        c->o.clock = boottime_us;
    size_t n = AG_DENY_CACHE_WAYS;
    while (n < o->entries)
        n <<= 1;
    c->nbuckets = n / AG_DENY_CACHE_WAYS;
    c->slots = calloc(n, sizeof *c->slots);
    if (!c->slots) {
        free(c);
        return AG_ENOMEM;
    }
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&c->stripes[i], NULL);
    /* A random key: the bucket of a key cannot be steered from outside
     * (the keys are keyed digests already; this costs nothing more). */
    crypto_shorthash_keygen(c->hash_key);
    atomic_init(&c->epoch, 1);
    atomic_init(&c->wiped, 0);
    atomic_init(&c->live, false);
    atomic_init(&c->entries, 0);
    *out = c;
    return AG_OK;
}

void ag_deny_cache_free(struct ag_deny_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&c->stripes[i]);
    sodium_memzero(c->hash_key, sizeof c->hash_key);
    free(c->slots);
    free(c);
}

uint64_t ag_deny_cache_now(const struct ag_deny_cache *c)
{
    return c->o.clock(c->o.clock_ctx);
}

uint64_t ag_deny_cache_epoch(const struct ag_deny_cache *c)
{
    return atomic_load(&c->epoch);
}

bool ag_deny_cache_live(const struct ag_deny_cache *c)
{
    return atomic_load_explicit(&c->live, memory_order_relaxed);
}

/* Moves the count and the gauge by the same amount, each atomically:
 * setting the gauge to the total one thread saw could leave another
 * thread's older total last. */
static void entries_changed(struct ag_deny_cache *c, size_t added,
                            size_t removed)
{
    if (added)
        atomic_fetch_add(&c->entries, added);
    if (removed)
        atomic_fetch_sub(&c->entries, removed);
    ag_metrics_add(c->o.metrics, AG_M_DENY_CACHE_ENTRIES,
                   (int64_t)added - (int64_t)removed);
}

static uint64_t digest(const struct ag_deny_cache *c, const char *key,
                       const char *member, bool with_member)
{
    /* key, then a NUL that cannot occur in either, then the member. */
    unsigned char in[512];
    size_t kl = strlen(key), ml = with_member ? strlen(member) : 0;
    if (kl + 1 + ml > sizeof in)
        kl = sizeof in - 1 - ml; /* never: both are bounded far below */
    memcpy(in, key, kl);
    in[kl] = '\0';
    memcpy(in + kl + 1, member, ml);
    unsigned char h[crypto_shorthash_BYTES];
    crypto_shorthash(h, in, with_member ? kl + 1 + ml : kl, c->hash_key);
    uint64_t v;
    memcpy(&v, h, sizeof v);
    return v ? v : 1;
}

static struct entry *bucket_of(struct ag_deny_cache *c, uint64_t key_hash,
                               pthread_mutex_t **lock)
{
    size_t b = (size_t)(key_hash & (c->nbuckets - 1));
    *lock = &c->stripes[b % STRIPES];
    return &c->slots[b * AG_DENY_CACHE_WAYS];
}

int ag_deny_cache_insert(struct ag_deny_cache *c, uint64_t epoch,
                         const char *key, const char *member, uint64_t until_us,
                         uint64_t reset_us)
{
    uint64_t now = ag_deny_cache_now(c);
    if (!ag_deny_cache_live(c) || until_us <= now)
        return AG_EPENDING;
    /* Held no longer than the cap: what the cache cannot see (a lost
     * invalidation, a FLUSHDB, an eviction, Redis's clock slewed) then
     * costs at most that long. The answer still reports Redis's wait. */
    uint64_t hold = now + (uint64_t)AG_DENY_CACHE_MAX_HOLD_MS * 1000u;
    if (hold > until_us)
        hold = until_us;
    if (reset_us < until_us)
        reset_us = until_us;
    uint64_t kh = digest(c, key, "", false);
    uint64_t id = digest(c, key, member, true);
    pthread_mutex_t *lock;
    struct entry *e = bucket_of(c, kh, &lock);
    pthread_mutex_lock(lock);
    /* Under the bucket's lock: an invalidation of this key takes the same
     * lock to move the epoch on and note it for the stripe, so either it
     * sees this entry or this insert sees that it came after epoch was
     * read. Only an invalidation of this stripe or a wipe drops it: with
     * resets and successful logins published all over a fleet, one epoch
     * for the whole cache dropped most of a flood's inserts. */
    size_t stripe = (size_t)(lock - c->stripes);
    if (c->invalidated[stripe] > epoch || atomic_load(&c->wiped) > epoch) {
        pthread_mutex_unlock(lock);
        return AG_EPENDING;
    }
    now = ag_deny_cache_now(c);
    struct entry *slot = NULL, *nearest = NULL;
    for (int i = 0; i < AG_DENY_CACHE_WAYS; i++) {
        if (e[i].key_hash == kh && e[i].id_hash == id) {
            slot = &e[i];
            break;
        }
        if (!slot && (!e[i].key_hash || e[i].hold_us <= now))
            slot = &e[i];
        if (!nearest || e[i].hold_us < nearest->hold_us)
            nearest = &e[i];
    }
    bool evicted = !slot;
    size_t added = 0;
    if (!slot)
        slot = nearest;
    else if (!slot->key_hash)
        added = 1;
    slot->key_hash = kh;
    slot->id_hash = id;
    slot->until_us = until_us;
    slot->hold_us = hold;
    slot->reset_us = reset_us;
    pthread_mutex_unlock(lock);
    if (evicted)
        ag_metrics_count(c->o.metrics, AG_M_DENY_CACHE_EVICTIONS);
    if (added)
        entries_changed(c, 1, 0);
    return AG_OK;
}

bool ag_deny_cache_lookup(struct ag_deny_cache *c, const char *key,
                          const char *member, uint64_t *until_us,
                          uint64_t *reset_us)
{
    if (!ag_deny_cache_live(c) ||
        !atomic_load_explicit(&c->entries, memory_order_relaxed))
        return false;
    uint64_t kh = digest(c, key, "", false);
    uint64_t id = digest(c, key, member, true);
    pthread_mutex_t *lock;
    struct entry *e = bucket_of(c, kh, &lock);
    bool hit = false, dropped = false;
    pthread_mutex_lock(lock);
    for (int i = 0; i < AG_DENY_CACHE_WAYS; i++) {
        if (e[i].key_hash != kh || e[i].id_hash != id)
            continue;
        /* Read under the lock, so that an entry is never judged against
         * a clock read before the entry was written. */
        if (ag_deny_cache_now(c) < e[i].hold_us) {
            hit = true;
            if (until_us)
                *until_us = e[i].until_us;
            if (reset_us)
                *reset_us = e[i].reset_us;
        } else {
            memset(&e[i], 0, sizeof e[i]);
            dropped = true;
        }
        break;
    }
    pthread_mutex_unlock(lock);
    if (dropped)
        entries_changed(c, 0, 1);
    return hit;
}

void ag_deny_cache_count(struct ag_deny_cache *c, bool hit)
{
    ag_metrics_count(c->o.metrics,
                     hit ? AG_M_DENY_CACHE_HITS : AG_M_DENY_CACHE_MISSES);
}

void ag_deny_cache_invalidate(struct ag_deny_cache *c, const char *key)
{
    uint64_t kh = digest(c, key, "", false);
    pthread_mutex_t *lock;
    struct entry *e = bucket_of(c, kh, &lock);
    size_t removed = 0;
    pthread_mutex_lock(lock);
    c->invalidated[lock - c->stripes] = atomic_fetch_add(&c->epoch, 1) + 1;
    for (int i = 0; i < AG_DENY_CACHE_WAYS; i++)
        if (e[i].key_hash == kh) {
            memset(&e[i], 0, sizeof e[i]);
            removed++;
        }
    pthread_mutex_unlock(lock);
    ag_metrics_count(c->o.metrics, AG_M_DENY_CACHE_INVALIDATIONS);
    if (removed)
        entries_changed(c, 0, removed);
}

/* Empties every bucket, each under its stripe's lock, after moving the
 * epoch on: an insert that raced it either came first and is wiped, or
 * sees the new epoch. */
static void wipe(struct ag_deny_cache *c)
{
    /* wiped only grows: two wipes at once (a resubscribe and a reload)
     * must not leave it at the older one's epoch, below an insert's. */
    uint_fast64_t mine = atomic_fetch_add(&c->epoch, 1) + 1;
    uint_fast64_t seen = atomic_load(&c->wiped);
    while (seen < mine && !atomic_compare_exchange_weak(&c->wiped, &seen, mine))
        ;
    size_t removed = 0;
    for (int s = 0; s < STRIPES; s++) {
        pthread_mutex_lock(&c->stripes[s]);
        for (size_t b = (size_t)s; b < c->nbuckets; b += STRIPES) {
            struct entry *e = &c->slots[b * AG_DENY_CACHE_WAYS];
            for (int i = 0; i < AG_DENY_CACHE_WAYS; i++)
                if (e[i].key_hash) {
                    memset(&e[i], 0, sizeof e[i]);
                    removed++;
                }
        }
        pthread_mutex_unlock(&c->stripes[s]);
    }
    if (removed)
        entries_changed(c, 0, removed);
}

void ag_deny_cache_clear(struct ag_deny_cache *c)
{
    wipe(c);
    ag_metrics_count(c->o.metrics, AG_M_DENY_CACHE_INVALIDATIONS);
}

void ag_deny_cache_set_live(struct ag_deny_cache *c, bool live)
{
    atomic_store(&c->live, live);
    wipe(c);
}

size_t ag_deny_cache_entries(const struct ag_deny_cache *c)
{
    return atomic_load(&c->entries);
}
