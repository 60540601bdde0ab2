/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the in-process store (ag_store_mem.c): what its three files share
 * and no other module may use. ag_store_mem_table.c is the bounded key
 * table (a Redis keyspace in miniature: slots found by hashing, expiry,
 * eviction, the kind of value a key holds); ag_store_mem_algs.c the
 * algorithms, one peek and one charge each as lua/ has them, over that
 * table; ag_store_mem.c the check that drives them (lua/check.lua), the
 * blocks and fingerprints of lua/common.lua, and the store's life cycle.
 * Calls go that way only: the store calls the algorithms and the table,
 * the algorithms call the table.
 *
 * Everything here runs under the store's one lock (ag_mem_store.lock),
 * which mem_check and mem_clear take.
 */
#ifndef AG_STORE_MEM_IMPL_H
#define AG_STORE_MEM_IMPL_H

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_limiter.h"
#include "ag_store.h"

#define AG_MEM_PROBE 8 /* slots a key's hash may land in */

struct ag_mem_member {
    uint64_t id; /* distinct: the subject's hash; sliding_log: 0 */
    uint64_t at; /* microseconds: the sorted set's score */
};

/* A password fingerprint digest in a user's set, scored by when. */
struct ag_mem_fp {
    uint64_t at;
    char digest[AG_DIGEST_HEX + 1];
};

/* What a key holds, as a Redis key has a type. AG_MEM_KIND_NONE: a block or a
 * block level, whose slot's fields say all. */
enum ag_mem_kind {
    AG_MEM_KIND_NONE,
    AG_MEM_KIND_SET,
    AG_MEM_KIND_HASH,
    AG_MEM_KIND_FPS
};

struct ag_mem_slot {
    char key[AG_STORE_KEY_MAX];
    uint64_t expire; /* microseconds; 0 = free */
    enum ag_mem_kind kind;
    unsigned
        fields; /* AG_MEM_KIND_HASH: bit a once algorithm a stored its own */
    /* The hash's fields, each algorithm's as lua/ names them; numbers as
     * Lua holds them. */
    struct {
        double i, n; /* window index, count */
    } fixed;
    struct {
        double w, c, p; /* window index, its count, the previous count */
    } sliding;
    struct {
        double t, ts; /* tokens (14 digits), time of the last update */
    } bucket;
    struct {
        double f, l; /* failures in a row, time of the last one */
    } consecutive;
    /* conversion's two counters, each a sliding window's: index, count,
     * previous count; has_* false while the field is absent (nil). */
    struct {
        double sw, s, sp, vw, v, vp;
        bool has_s, has_v;
    } conversion;
    struct {
        uint64_t n, end; /* blocks in a row, when the last one ends (us) */
    } level;
    struct ag_mem_member *set; /* AG_MEM_KIND_SET */
    struct ag_mem_fp *fps;     /* AG_MEM_KIND_FPS: AG_FP_KEEP of them */
    uint32_t n, cap;           /* members (or fps) used, allocated */
    uint64_t pin; /* the check (ag_mem_store.check) that holds it, if any */
};

struct ag_mem_store {
    struct ag_store base;
    pthread_mutex_t lock;
    struct ag_mem_slot *slots;
    size_t nslots;
    size_t members; /* member slots allocated, in all sets */
    size_t max_members;
    ag_clock_fn clock;
    void *clock_ctx;
    /* The check under way (the lock holds it): its slots are pinned, so
     * that making room for one of its keys never evicts another's slot it
     * still reads. */
    uint64_t check;
    /* Where a key goes when every slot of its probe window is pinned: its
     * state lives for this check only (not recorded), and is emptied when
     * the check ends. */
    struct ag_mem_slot scratch;
};

/* The slot table (ag_store_mem_table.c). */

/* The 64-bit hash of a key, or of a distinct subject. */
uint64_t ag_mem__hash(const char *s);
/* Empties sl, freeing what it holds and giving its members back. */
void ag_mem__release(struct ag_mem_store *s, struct ag_mem_slot *sl);
/* The live slot for key, or NULL. Expired slots met on the way are freed. */
struct ag_mem_slot *ag_mem__find(struct ag_mem_store *s, const char *key,
                                 uint64_t now);
/* Marks sl (may be NULL) as held by the check under way; returns sl. */
struct ag_mem_slot *ag_mem__pin(struct ag_mem_store *s, struct ag_mem_slot *sl);
/* The slot for key, created empty if absent (evicting the slot of the probe
 * window closest to expiry if none is free, never one the check under way
 * holds), pinned. */
struct ag_mem_slot *ag_mem__claim(struct ag_mem_store *s, const char *key,
                                  uint64_t now);
/* The slot's expiry for PEXPIREAT at `at` microseconds: Redis rounds it up
 * to a millisecond and keeps the key through that millisecond. */
uint64_t ag_mem__expiry_at(double at);
/* The slot of key if it holds state of kind; state of the other kind is
 * dropped, as common.lua's read drops a key of the wrong type. */
struct ag_mem_slot *ag_mem__state_of(struct ag_mem_store *s, const char *key,
                                     enum ag_mem_kind kind, uint64_t now);
/* The slot of key for a peek: as ag_mem__state_of finds it, but state of
 * the other kind is left where it is (a peek drops nothing) and reads as
 * none. */
struct ag_mem_slot *ag_mem__state_seen(struct ag_mem_store *s, const char *key,
                                       enum ag_mem_kind kind, uint64_t now);
/* A peek's own copy of slot sl (NULL: none) in copy, which *out then
 * points to: the algorithms' peeks drop a set's expired members and trim
 * it to its limit as they count, which a peek must not do to the table.
 * Only the members are copied (a peek reads no fingerprints); the caller
 * frees copy->set. False when out of memory. */
bool ag_mem__snapshot(const struct ag_mem_slot *sl, struct ag_mem_slot *copy,
                      struct ag_mem_slot **out);

/* The algorithms (ag_store_mem_algs.c). */

/* One policy of the plan between its peek and its charge: the Lua
 * driver's out[] (res) and kept[] (the values peek hands charge, named
 * here) for one policy. */
struct ag_mem_eval {
    const struct ag_limit_op *op;
    double limit, window;   /* the window in microseconds */
    struct ag_mem_slot *sl; /* NULL while the key holds nothing of ours */
    uint64_t member;        /* distinct: the subject's hash */
    double count, idx, cc, pc, est, tokens;
    bool record; /* the plan records reported events (check.lua's mode) */
    bool known;
    bool reset_known; /* false: the Lua's reset_ms false, left to reset */
    struct ag_limit_result *res;
};

/* Microseconds to whole milliseconds, rounded up (common.lua's ms); what
 * Redis makes of the Lua number, an integer. */
static inline uint64_t ag_mem__ms(double us)
{
    double m = ceil(us / 1000);
    return m > 0 ? (uint64_t)m : 0;
}

/* One algorithm, as an entry of lua/common.lua's `algorithms`. kind is the
 * type of Redis key it keeps; reset is NULL where peek always knows
 * reset_ms; records_blocked as the Lua table's flag (a failure plan
 * records it even while its key is blocked). */
struct ag_mem_algorithm {
    enum ag_mem_kind kind;
    bool records_blocked;
    void (*peek)(struct ag_mem_eval *e, double now);
    void (*charge)(struct ag_mem_store *s, struct ag_mem_eval *e, double now);
    uint64_t (*reset)(const struct ag_mem_eval *e, double now);
};

/* The algorithms by enum ag_algorithm, as lua/common.lua's by ARGV code. */
extern const struct ag_mem_algorithm ag_mem__algorithms[AG_ALG_STORE_COUNT];

#endif
