/*
 * Metrics, exposed at GET /metrics in the Prometheus text format. Counters
 * are atomics: any thread may bump them without a lock. Per-policy counters
 * live in a fixed table of AG_METRICS_POLICIES names (policy names are an
 * admin's words, never a client's identifiers); names past the table are
 * counted under policy="_other". Labels never carry an identifier.
 */
#ifndef AG_METRICS_H
#define AG_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ag_buf.h"
#include "ag_policy.h"

#define AG_METRICS_POLICIES 128
#define AG_METRICS_BUCKETS 12

enum ag_outcome {
    AG_OUT_ALLOWED,
    AG_OUT_DENIED,      /* by a policy (429) or a deny list (403) */
    AG_OUT_UNAVAILABLE, /* fail-closed while the store was down (503) */
    AG_OUT_INVALID,     /* bad input (4xx) */
    AG_OUT_COUNT
};

struct ag_policy_counters {
    _Atomic(const char *) name; /* interned; NULL while the slot is free */
    atomic_uint_fast64_t denials;
    atomic_uint_fast64_t shadow_denials;
};

struct ag_metrics {
    atomic_uint_fast64_t checks[AG_EP_COUNT][AG_OUT_COUNT];
    atomic_uint_fast64_t degraded[AG_EP_COUNT];
    atomic_uint_fast64_t latency[AG_EP_COUNT][AG_METRICS_BUCKETS + 1];
    atomic_uint_fast64_t latency_sum_us[AG_EP_COUNT];
    atomic_uint_fast64_t redis_errors;
    atomic_uint_fast64_t redis_timeouts;
    atomic_uint_fast64_t breaker_opens;
    atomic_int breaker_open; /* 1 while the circuit breaker is open */
    atomic_uint_fast64_t reloads;
    atomic_uint_fast64_t reload_failures;
    atomic_int policies_stale; /* 1 while the database cannot be read */
    struct ag_policy_counters policies[AG_METRICS_POLICIES];
    struct ag_policy_counters other;
};

void ag_metrics_init(struct ag_metrics *m);
/* Frees the interned policy names. */
void ag_metrics_fini(struct ag_metrics *m);

/* One check of endpoint took us microseconds and ended in outcome. */
void ag_metrics_check(struct ag_metrics *m, enum ag_endpoint endpoint,
                      enum ag_outcome outcome, bool degraded, uint64_t us);
/* The counters of one policy name (created on first use). */
struct ag_policy_counters *ag_metrics_policy(struct ag_metrics *m,
                                             const char *name);

/* Appends the Prometheus text exposition to b. */
int ag_metrics_render(struct ag_metrics *m, struct ag_buf *b);

#endif
