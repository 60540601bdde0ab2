/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_overview.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_clock.h"

#define COUNT_BITS (64 - AG_OVERVIEW_TAG_BITS)
#define COUNT_MASK ((UINT64_C(1) << COUNT_BITS) - 1)
#define TAG_MASK ((UINT64_C(1) << AG_OVERVIEW_TAG_BITS) - 1)
/* Hash slots of each name table: twice its names, a power of two, so
 * that a probe meets a free slot soon. */
#define POLICY_SLOTS (2 * AG_OVERVIEW_POLICIES)
#define SHIELD_SLOTS (2 * AG_OVERVIEW_SHIELDS)
#define OTHER AG_OVERVIEW_POLICIES /* the row of "_other" */

_Static_assert((POLICY_SLOTS & (POLICY_SLOTS - 1)) == 0, "a power of two");
_Static_assert((SHIELD_SLOTS & (SHIELD_SLOTS - 1)) == 0, "a power of two");

/* A name in an open-addressed table: idx is its row plus one, 0 while
 * the slot is free; it is stored (release) once name is written, and
 * never changes after. */
struct name_slot {
    atomic_uint idx;
    char name[AG_POLICY_NAME_MAX + 1];
};

struct name_table {
    struct name_slot *slots;
    size_t nslots, cap;
    size_t n; /* names entered, under the overview's lock */
};

/* One minute's counters: cells of minute tag and count. */
struct minute {
    atomic_uint_fast64_t checks[AG_EP_COUNT][AG_OUT_COUNT];
    atomic_uint_fast64_t trips[AG_OVERVIEW_POLICIES + 1][AG_OVERVIEW_TRIPS];
};

/* One minute's sample of one shield. minute is the sample's minute plus
 * one, 0 while a writer starts it over (a sequence lock: a reader that
 * sees the same minute before and after its reads has read one
 * minute's figures). */
struct sample {
    atomic_uint_fast64_t minute;
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t baseline_milli;
    atomic_uint_fast64_t threshold;
    atomic_bool raised;
};

struct ag_overview {
    pthread_mutex_t lock; /* guards the tables' n: their writers */
    struct name_slot policy_slots[POLICY_SLOTS];
    struct name_slot shield_slots[SHIELD_SLOTS];
    struct name_table policies, shields;
    struct minute ring[AG_OVERVIEW_MINUTES];
    struct sample samples[AG_OVERVIEW_MINUTES][AG_OVERVIEW_SHIELDS];
};

static const char *const trip_names[AG_OVERVIEW_TRIPS] = {
    [AG_OVERVIEW_DENIED] = "denied",
    [AG_OVERVIEW_SHADOW_DENIED] = "shadow_denied",
    [AG_OVERVIEW_CHALLENGED] = "challenged",
    [AG_OVERVIEW_CHALLENGE_PASSED] = "challenge_passed",
};

int ag_overview_new(struct ag_overview **out)
{
    struct ag_overview *o = calloc(1, sizeof *o);
    if (!o)
        return AG_ENOMEM;
    pthread_mutex_init(&o->lock, NULL);
    o->policies = (struct name_table){o->policy_slots, POLICY_SLOTS,
                                      AG_OVERVIEW_POLICIES, 0};
    o->shields = (struct name_table){o->shield_slots, SHIELD_SLOTS,
                                     AG_OVERVIEW_SHIELDS, 0};
    *out = o;
    return AG_OK;
}

void ag_overview_free(struct ag_overview *o)
{
    if (!o)
        return;
    pthread_mutex_destroy(&o->lock);
    free(o);
}

/* FNV-1a. */
static size_t hash(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (size_t)h;
}

/* The row of name in t, or -1. Names are never removed, so a free slot
 * ends the probe. */
static long find(const struct name_table *t, const char *name)
{
    size_t mask = t->nslots - 1;
    size_t h = hash(name) & mask;
    for (size_t i = 0; i < t->nslots; i++, h = (h + 1) & mask) {
        unsigned idx =
            atomic_load_explicit(&t->slots[h].idx, memory_order_acquire);
        if (!idx)
            return -1;
        if (strcmp(t->slots[h].name, name) == 0)
            return (long)idx - 1;
    }
    return -1;
}

/* Enters name in t unless it is there or t is full. Under the lock. */
static void enter(struct name_table *t, const char *name)
{
    if (find(t, name) >= 0 || t->n >= t->cap)
        return;
    size_t mask = t->nslots - 1;
    size_t h = hash(name) & mask;
    while (atomic_load_explicit(&t->slots[h].idx, memory_order_relaxed))
        h = (h + 1) & mask;
    struct name_slot *s = &t->slots[h];
    snprintf(s->name, sizeof s->name, "%s", name);
    atomic_store_explicit(&s->idx, (unsigned)++t->n, memory_order_release);
}

void ag_overview_name_policies(struct ag_overview *o,
                               const struct ag_ruleset *set)
{
    if (!o || !set)
        return;
    pthread_mutex_lock(&o->lock);
    for (size_t i = 0; i < set->count; i++) {
        const struct ag_policy *p = &set->policies[i];
        enter(&o->policies, p->name);
        if (p->algorithm == AG_ALG_SURGE && p->enabled)
            enter(&o->shields, p->name);
    }
    pthread_mutex_unlock(&o->lock);
}

static uint64_t minute_of(uint64_t ms)
{
    return ms / AG_OVERVIEW_MINUTE_MS;
}

static struct minute *bucket(struct ag_overview *o, uint64_t minute)
{
    return &o->ring[minute % AG_OVERVIEW_MINUTES];
}

/* Counts one in cell c for minute. */
static void cell_add(atomic_uint_fast64_t *c, uint64_t minute)
{
    uint64_t tag = minute & TAG_MASK;
    uint_fast64_t v = atomic_load_explicit(c, memory_order_relaxed);
    for (;;) {
        uint64_t have = (uint64_t)v >> COUNT_BITS;
        if (have == tag) {
            atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
            return;
        }
        /* The cell counts a later minute (our clock read is an hour
         * behind another's): this count is dropped, not the cell's. */
        if (((have - tag) & TAG_MASK) < (TAG_MASK >> 1))
            return;
        if (atomic_compare_exchange_weak_explicit(
                c, &v, (uint_fast64_t)(tag << COUNT_BITS | 1),
                memory_order_relaxed, memory_order_relaxed))
            return;
    }
}

/* The count of cell c for minute: 0 if it counts another one. */
static uint64_t cell_get(atomic_uint_fast64_t *c, uint64_t minute)
{
    uint64_t v = (uint64_t)atomic_load_explicit(c, memory_order_relaxed);
    return v >> COUNT_BITS == (minute & TAG_MASK) ? v & COUNT_MASK : 0;
}

void ag_overview_check(struct ag_overview *o, uint64_t now_ms,
                       enum ag_endpoint endpoint, enum ag_outcome outcome)
{
    if (!o || endpoint >= AG_EP_COUNT || outcome >= AG_OUT_COUNT)
        return;
    uint64_t m = minute_of(now_ms);
    cell_add(&bucket(o, m)->checks[endpoint][outcome], m);
}

void ag_overview_trip(struct ag_overview *o, uint64_t now_ms,
                      const char *policy, enum ag_overview_trip trip)
{
    if (!o || trip >= AG_OVERVIEW_TRIPS)
        return;
    long row = find(&o->policies, policy);
    uint64_t m = minute_of(now_ms);
    cell_add(&bucket(o, m)->trips[row < 0 ? OTHER : row][trip], m);
}

void ag_overview_shield(struct ag_overview *o, uint64_t now_ms,
                        const char *policy, const struct ag_overview_shield *s)
{
    if (!o)
        return;
    long row = find(&o->shields, policy);
    if (row < 0)
        return;
    uint64_t m = minute_of(now_ms);
    struct sample *x = &o->samples[m % AG_OVERVIEW_MINUTES][row];
    bool same = atomic_load_explicit(&x->minute, memory_order_relaxed) == m + 1;
    if (!same)
        atomic_store_explicit(&x->minute, 0, memory_order_relaxed);
    /* The figures after the mark (a release fence orders the stores
     * that follow it after the mark's, for a reader's acquire fence). */
    atomic_thread_fence(memory_order_release);
    uint64_t count = s->count;
    if (same)
        count = count > atomic_load_explicit(&x->count, memory_order_relaxed)
                    ? count
                    : atomic_load_explicit(&x->count, memory_order_relaxed);
    atomic_store_explicit(&x->count, count, memory_order_relaxed);
    atomic_store_explicit(&x->baseline_milli, s->baseline_milli,
                          memory_order_relaxed);
    atomic_store_explicit(&x->threshold, s->threshold, memory_order_relaxed);
    bool raised =
        s->raised ||
        (same && atomic_load_explicit(&x->raised, memory_order_relaxed));
    atomic_store_explicit(&x->raised, raised, memory_order_relaxed);
    atomic_store_explicit(&x->minute, m + 1, memory_order_release);
}

/* Reads shield row's sample of minute into *out: false if there is none
 * (or a writer was starting it over). */
static bool read_sample(struct ag_overview *o, size_t row, uint64_t minute,
                        struct ag_overview_shield *out)
{
    struct sample *x = &o->samples[minute % AG_OVERVIEW_MINUTES][row];
    if (atomic_load_explicit(&x->minute, memory_order_acquire) != minute + 1)
        return false;
    out->count = atomic_load_explicit(&x->count, memory_order_relaxed);
    out->baseline_milli =
        atomic_load_explicit(&x->baseline_milli, memory_order_relaxed);
    out->threshold = atomic_load_explicit(&x->threshold, memory_order_relaxed);
    out->raised = atomic_load_explicit(&x->raised, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&x->minute, memory_order_relaxed) == minute + 1;
}

/* Sets key of o to v (taken over); false, and v dropped, on failure. */
static bool put(json_t *o, const char *key, json_t *v)
{
    if (!o || !v) {
        json_decref(v);
        return false;
    }
    return json_object_set_new(o, key, v) == 0;
}

/* Appends v (taken over) to a; false, and v dropped, on failure. */
static bool add(json_t *a, json_t *v)
{
    if (!a || !v) {
        json_decref(v);
        return false;
    }
    return json_array_append_new(a, v) == 0;
}

/* A name table's names by row, "" for rows not entered. */
static void names_by_row(const struct name_table *t,
                         const char *rows[AG_OVERVIEW_POLICIES])
{
    for (size_t i = 0; i < t->cap; i++)
        rows[i] = "";
    for (size_t h = 0; h < t->nslots; h++) {
        unsigned idx =
            atomic_load_explicit(&t->slots[h].idx, memory_order_acquire);
        if (idx)
            rows[idx - 1] = t->slots[h].name;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Row indexes sorted by their names, of those named: how many. */
static size_t sorted_rows(const char *rows[], size_t n, const char *out[])
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i][0])
            out[k++] = rows[i];
    qsort(out, k, sizeof *out, by_name);
    return k;
}

static json_t *checks_json(struct ag_overview *o, uint64_t first)
{
    json_t *all = json_array();
    for (int e = 0; all && e < AG_EP_COUNT; e++) {
        json_t *one = json_pack("{s:s}", "endpoint",
                                ag_endpoint_name((enum ag_endpoint)e));
        for (int k = 0; one && k < AG_OUT_COUNT; k++) {
            json_t *series = json_array();
            for (uint64_t m = first; series && m < first + AG_OVERVIEW_MINUTES;
                 m++)
                if (!add(series, json_integer((json_int_t)cell_get(
                                     &bucket(o, m)->checks[e][k], m)))) {
                    json_decref(series);
                    series = NULL;
                }
            if (!put(one, ag_metrics_outcome_name((enum ag_outcome)k),
                     series)) {
                json_decref(one);
                one = NULL;
            }
        }
        if (!add(all, one)) {
            json_decref(all);
            all = NULL;
        }
    }
    return all;
}

/* The trips of row over the hour from first, or NULL (none, or out of
 * memory: *bad says which). */
static json_t *policy_json(struct ag_overview *o, size_t row, const char *name,
                           uint64_t first, bool *bad)
{
    uint64_t any = 0;
    json_t *one = json_pack("{s:s}", "policy", name);
    for (int k = 0; one && k < AG_OVERVIEW_TRIPS; k++) {
        json_t *series = json_array();
        for (uint64_t m = first; series && m < first + AG_OVERVIEW_MINUTES;
             m++) {
            uint64_t v = cell_get(&bucket(o, m)->trips[row][k], m);
            any += v;
            if (!add(series, json_integer((json_int_t)v))) {
                json_decref(series);
                series = NULL;
            }
        }
        if (!put(one, trip_names[k], series)) {
            json_decref(one);
            one = NULL;
        }
    }
    *bad = !one;
    if (one && !any) {
        json_decref(one);
        one = NULL;
    }
    return one;
}

static json_t *policies_json(struct ag_overview *o, uint64_t first)
{
    const char *rows[AG_OVERVIEW_POLICIES];
    const char *sorted[AG_OVERVIEW_POLICIES];
    names_by_row(&o->policies, rows);
    size_t n = sorted_rows(rows, AG_OVERVIEW_POLICIES, sorted);
    json_t *all = json_array();
    bool bad = !all;
    for (size_t i = 0; !bad && i <= n; i++) {
        size_t row = OTHER;
        const char *name = "_other";
        if (i < n) {
            name = sorted[i];
            row = (size_t)find(&o->policies, name);
        }
        json_t *one = policy_json(o, row, name, first, &bad);
        if (one && !add(all, one))
            bad = true;
    }
    if (bad) {
        json_decref(all);
        all = NULL;
    }
    return all;
}

/* The samples of shield row over the hour from first, or NULL (none, or
 * out of memory: *bad says which). */
static json_t *shield_json(struct ag_overview *o, size_t row, const char *name,
                           uint64_t first, bool *bad)
{
    json_t *count = json_array(), *baseline = json_array(),
           *threshold = json_array(), *raised = json_array();
    bool any = false, ok = count && baseline && threshold && raised;
    for (uint64_t m = first; ok && m < first + AG_OVERVIEW_MINUTES; m++) {
        struct ag_overview_shield s;
        if (!read_sample(o, row, m, &s)) {
            ok = add(count, json_null()) && add(baseline, json_null()) &&
                 add(threshold, json_null()) && add(raised, json_null());
            continue;
        }
        any = true;
        ok = add(count, json_integer((json_int_t)s.count)) &&
             add(baseline, json_real((double)s.baseline_milli / 1000.0)) &&
             add(threshold, json_integer((json_int_t)s.threshold)) &&
             add(raised, json_boolean(s.raised));
    }
    json_t *one = NULL;
    if (ok && any)
        one = json_pack("{s:s, s:o, s:o, s:o, s:o}", "policy", name, "count",
                        count, "baseline", baseline, "threshold", threshold,
                        "raised", raised);
    else {
        json_decref(count);
        json_decref(baseline);
        json_decref(threshold);
        json_decref(raised);
    }
    *bad = !ok || (any && !one);
    return one;
}

static json_t *shields_json(struct ag_overview *o, uint64_t first)
{
    const char *rows[AG_OVERVIEW_POLICIES];
    const char *sorted[AG_OVERVIEW_SHIELDS];
    names_by_row(&o->shields, rows);
    size_t n = sorted_rows(rows, AG_OVERVIEW_SHIELDS, sorted);
    json_t *all = json_array();
    bool bad = !all;
    for (size_t i = 0; !bad && i < n; i++) {
        size_t row = (size_t)find(&o->shields, sorted[i]);
        json_t *one = shield_json(o, row, sorted[i], first, &bad);
        if (one && !add(all, one))
            bad = true;
    }
    if (bad) {
        json_decref(all);
        all = NULL;
    }
    return all;
}

json_t *ag_overview_json(struct ag_overview *o, uint64_t now_ms)
{
    uint64_t now = minute_of(now_ms);
    uint64_t first =
        now >= AG_OVERVIEW_MINUTES ? now + 1 - AG_OVERVIEW_MINUTES : 0;
    json_t *minutes = json_array();
    for (uint64_t m = first; minutes && m < first + AG_OVERVIEW_MINUTES; m++) {
        char at[AG_CLOCK_RFC3339_MAX];
        ag_clock_rfc3339(m * AG_OVERVIEW_MINUTE_MS, at);
        if (!add(minutes, json_string(at))) {
            json_decref(minutes);
            minutes = NULL;
        }
    }
    json_t *checks = checks_json(o, first);
    json_t *policies = policies_json(o, first);
    json_t *shields = shields_json(o, first);
    if (!minutes || !checks || !policies || !shields) {
        json_decref(minutes);
        json_decref(checks);
        json_decref(policies);
        json_decref(shields);
        return NULL;
    }
    return json_pack("{s:s, s:i, s:o, s:o, s:o, s:o}", "scope", "instance",
                     "minute_s", (int)(AG_OVERVIEW_MINUTE_MS / 1000), "minutes",
                     minutes, "checks", checks, "policies", policies, "shields",
                     shields);
}
