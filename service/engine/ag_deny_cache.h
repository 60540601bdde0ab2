/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exact local deny cache (issue 20): remembers, per instance, that
 * Redis denied a policy's key (and, for distinct, one subject of it) until
 * the earliest moment Redis could allow it again, so that a flood of
 * checks for a denied key is answered without a Redis call.
 *
 * Exactness is the caller's contract, kept by three rules. The deadline
 * is taken from this cache's clock (CLOCK_BOOTTIME, which goes on while
 * the host is suspended, as Redis's clock does) read before the Redis
 * call was sent, plus a wait Redis computed later, so it never outlives
 * the moment Redis would allow. Every way a denial can end early (an edit of
 * the policies, an admin reset, a successful login) clears the cache or
 * invalidates the key, here and, through Redis pub/sub (ag_redis_sub), on
 * every instance. And an entry is taken only while the cache is live:
 * while the subscription that brings other instances' invalidations is
 * down, the cache answers nothing and holds nothing, since it could miss
 * one. What no rule can see (an invalidation lost with its connection
 * or dropped while the breaker was open, another shard's data loss, a
 * FLUSHDB, an eviction, Redis's clock slewed) is bounded by a cap: an
 * entry is held at most AG_DENY_CACHE_MAX_HOLD_MS, then Redis is asked
 * again.
 *
 * An insert carries the epoch read before its Redis call was sent; a
 * clear or a change of liveness since, or an invalidation of a key in the
 * insert's own lock stripe (1 in 64 of the others share it), drops the
 * insert, so a denial Redis computed before a reset never lands after the
 * reset's invalidation.
 *
 * The table: a fixed number of slots (a power of two, at least
 * AG_DENY_CACHE_WAYS), set-associative: a key's entries (all its members)
 * live in one bucket of AG_DENY_CACHE_WAYS slots chosen by the key, so
 * invalidating a key touches one bucket. A full bucket gives up its entry
 * with the nearest expiry. Entries hold keyed SipHash digests of the key
 * and of the key and member (a random key per cache), never the key text:
 * 40 bytes each, 2.5 MiB for 65 536. Buckets are guarded by striped mutexes;
 * every function may be called from any thread.
 */
#ifndef AG_DENY_CACHE_H
#define AG_DENY_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AG_DENY_CACHE_ENTRIES 65536 /* slots of the service's cache */
#define AG_DENY_CACHE_WAYS 8        /* slots per bucket */
/* The longest an entry is held, whatever Redis's wait: one Redis call per
 * denied key per this long bounds what the cache cannot see. */
#define AG_DENY_CACHE_MAX_HOLD_MS 10000
/* The Redis pub/sub channel of invalidations: each message is the exact
 * state key an instance cleared (keys hold keyed digests only). */
#define AG_DENY_CACHE_CHANNEL "ag::deny-cache"

/* A clock in microseconds that never goes back and goes on while the
 * host is suspended. */
typedef uint64_t (*ag_deny_cache_clock_fn)(void *ctx);

struct ag_metrics;
struct ag_deny_cache;

struct ag_deny_cache_opts {
    size_t entries; /* rounded up to a power of two, >= AG_DENY_CACHE_WAYS */
    ag_deny_cache_clock_fn clock; /* NULL: CLOCK_BOOTTIME */
    void *clock_ctx;
    /* Hits, misses, evictions, invalidations and the entries gauge; may be
     * NULL. Borrowed: it must outlive the cache. */
    struct ag_metrics *metrics;
};

/* A new, empty cache, not live (ag_deny_cache_set_live). AG_OK with *out
 * (free with ag_deny_cache_free), or AG_ENOMEM. */
int ag_deny_cache_new(const struct ag_deny_cache_opts *o,
                      struct ag_deny_cache **out);
/* NULL is allowed. */
void ag_deny_cache_free(struct ag_deny_cache *c);

/* The cache's clock, microseconds. */
uint64_t ag_deny_cache_now(const struct ag_deny_cache *c);
/* The epoch to pass to ag_deny_cache_insert: read it, with the clock,
 * before the Redis call is sent. */
uint64_t ag_deny_cache_epoch(const struct ag_deny_cache *c);

/* Clears the cache and says whether it answers from now on: live while
 * the invalidation subscription is up. Moves the epoch on. */
void ag_deny_cache_set_live(struct ag_deny_cache *c, bool live);
bool ag_deny_cache_live(const struct ag_deny_cache *c);

/* Remembers that key (and member, "" for none) is denied until until_us
 * of the clock, held until then or for AG_DENY_CACHE_MAX_HOLD_MS if that
 * ends sooner; reset_us is when its window will hold nothing (the
 * reset_after a cached answer reports; until_us if not later). AG_OK;
 * AG_EPENDING when the entry was not taken because a wipe or an
 * invalidation of its stripe came since epoch was read, or the cache is
 * not live, or until_us has passed.
 * An entry for the same key and member is replaced. */
int ag_deny_cache_insert(struct ag_deny_cache *c, uint64_t epoch,
                         const char *key, const char *member, uint64_t until_us,
                         uint64_t reset_us);

/* Whether key and member are denied now: true with *until_us and
 * *reset_us of the entry (either may be NULL). An entry whose deadline
 * or cap has come is no hit (and is dropped). Counts no metric: the caller
 * counts one hit or miss per check (ag_deny_cache_count). */
bool ag_deny_cache_lookup(struct ag_deny_cache *c, const char *key,
                          const char *member, uint64_t *until_us,
                          uint64_t *reset_us);
/* Counts one check answered from the cache (hit) or sent on (miss). */
void ag_deny_cache_count(struct ag_deny_cache *c, bool hit);

/* Drops every entry of key, whatever its member; moves the epoch on and
 * counts one invalidation. */
void ag_deny_cache_invalidate(struct ag_deny_cache *c, const char *key);
/* Drops every entry; moves the epoch on and counts one invalidation. */
void ag_deny_cache_clear(struct ag_deny_cache *c);

/* Entries held now (expired ones not yet dropped included). */
size_t ag_deny_cache_entries(const struct ag_deny_cache *c);

#endif
