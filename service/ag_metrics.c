#include "ag_metrics.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_log.h"

/* Upper bounds of the latency buckets, in microseconds. */
static const uint64_t bucket_us[AG_METRICS_BUCKETS] = {
    100,   250,   500,   1000,   2500,   5000,
    10000, 25000, 50000, 100000, 250000, 1000000};

static const char *const outcome_names[AG_OUT_COUNT] = {
    [AG_OUT_ALLOWED] = "allowed",
    [AG_OUT_DENIED] = "denied",
    [AG_OUT_UNAVAILABLE] = "unavailable",
    [AG_OUT_INVALID] = "invalid",
};

void ag_metrics_init(struct ag_metrics *m)
{
    memset(m, 0, sizeof *m);
    atomic_store(&m->other.name, "_other");
}

void ag_metrics_fini(struct ag_metrics *m)
{
    for (size_t i = 0; i < AG_METRICS_POLICIES; i++)
        free((char *)atomic_load(&m->policies[i].name));
}

void ag_metrics_check(struct ag_metrics *m, enum ag_endpoint endpoint,
                      enum ag_outcome outcome, bool degraded, uint64_t us)
{
    atomic_fetch_add_explicit(&m->checks[endpoint][outcome], 1,
                              memory_order_relaxed);
    if (degraded)
        atomic_fetch_add_explicit(&m->degraded[endpoint], 1,
                                  memory_order_relaxed);
    size_t b = 0;
    while (b < AG_METRICS_BUCKETS && us > bucket_us[b])
        b++;
    atomic_fetch_add_explicit(&m->latency[endpoint][b], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&m->latency_sum_us[endpoint], us,
                              memory_order_relaxed);
}

struct ag_policy_counters *ag_metrics_policy(struct ag_metrics *m,
                                             const char *name)
{
    /* Slots are claimed once, with a compare-and-swap, and never freed
     * while the process runs: a reader never sees a name go away. */
    for (size_t i = 0; i < AG_METRICS_POLICIES; i++) {
        struct ag_policy_counters *c = &m->policies[i];
        const char *have = atomic_load(&c->name);
        if (have && strcmp(have, name) == 0)
            return c;
        if (have)
            continue;
        char *copy = strdup(name);
        if (!copy)
            return &m->other;
        const char *expected = NULL;
        if (atomic_compare_exchange_strong(&c->name, &expected, copy))
            return c;
        free(copy);
        if (strcmp(expected, name) == 0)
            return c;
    }
    return &m->other;
}

#define LOAD(x) ((uint64_t)atomic_load_explicit(&(x), memory_order_relaxed))

static int render_policy(struct ag_buf *b, const struct ag_policy_counters *c,
                         bool shadow)
{
    const char *name = atomic_load(&c->name);
    uint64_t v = shadow ? LOAD(c->shadow_denials) : LOAD(c->denials);
    if (!name)
        return AG_OK;

    return ag_buf_printf(b, "abuseguard_%s_total{policy=\"%s\"} %" PRIu64 "\n",
                         shadow ? "shadow_denials" : "denials", name, v);
}

int ag_metrics_render(struct ag_metrics *m, struct ag_buf *b)
{
    int rc = ag_buf_puts(
        b, "# HELP abuseguard_build_info Build information.\n"
           "# TYPE abuseguard_build_info gauge\n"
           "abuseguard_build_info{version=\"" AG_VERSION "\"} 1\n"
           "# HELP abuseguard_checks_total Checks by endpoint and outcome.\n"
           "# TYPE abuseguard_checks_total counter\n");
    for (int e = 0; !rc && e < AG_EP_COUNT; e++)
        for (int o = 0; !rc && o < AG_OUT_COUNT; o++)
            rc = ag_buf_printf(
                b,
                "abuseguard_checks_total{endpoint=\"%s\",outcome=\"%s\"} "
                "%" PRIu64 "\n",
                ag_endpoint_name((enum ag_endpoint)e), outcome_names[o],
                LOAD(m->checks[e][o]));
    rc = rc ? rc
            : ag_buf_puts(b, "# HELP abuseguard_degraded_checks_total Checks "
                             "answered without Redis.\n"
                             "# TYPE abuseguard_degraded_checks_total "
                             "counter\n");
    for (int e = 0; !rc && e < AG_EP_COUNT; e++)
        rc = ag_buf_printf(
            b,
            "abuseguard_degraded_checks_total{endpoint=\"%s\"} %" PRIu64 "\n",
            ag_endpoint_name((enum ag_endpoint)e), LOAD(m->degraded[e]));
    for (int shadow = 0; shadow < 2 && !rc; shadow++) {
        rc = ag_buf_printf(b,
                           "# HELP abuseguard_%s_total %s by policy.\n"
                           "# TYPE abuseguard_%s_total counter\n",
                           shadow ? "shadow_denials" : "denials",
                           shadow ? "Would-be denials of shadow policies"
                                  : "Denials",
                           shadow ? "shadow_denials" : "denials");
        for (size_t i = 0; !rc && i < AG_METRICS_POLICIES; i++)
            rc = render_policy(b, &m->policies[i], shadow);
        rc = rc ? rc : render_policy(b, &m->other, shadow);
    }
    rc = rc ? rc
            : ag_buf_puts(b, "# HELP abuseguard_check_duration_seconds Check "
                             "latency.\n"
                             "# TYPE abuseguard_check_duration_seconds "
                             "histogram\n");
    for (int e = 0; !rc && e < AG_EP_COUNT; e++) {
        const char *ep = ag_endpoint_name((enum ag_endpoint)e);
        uint64_t cum = 0;
        for (int k = 0; !rc && k <= AG_METRICS_BUCKETS; k++) {
            cum += LOAD(m->latency[e][k]);
            if (k < AG_METRICS_BUCKETS)
                rc = ag_buf_printf(
                    b,
                    "abuseguard_check_duration_seconds_bucket{endpoint=\"%s\","
                    "le=\"%g\"} %" PRIu64 "\n",
                    ep, (double)bucket_us[k] / 1e6, cum);
            else
                rc = ag_buf_printf(
                    b,
                    "abuseguard_check_duration_seconds_bucket{endpoint=\"%s\","
                    "le=\"+Inf\"} %" PRIu64 "\n"
                    "abuseguard_check_duration_seconds_count{endpoint=\"%s\"}"
                    " %" PRIu64 "\n"
                    "abuseguard_check_duration_seconds_sum{endpoint=\"%s\"} "
                    "%.6f\n",
                    ep, cum, ep, cum, ep,
                    (double)LOAD(m->latency_sum_us[e]) / 1e6);
        }
    }
    return rc ? rc
              : ag_buf_printf(
                    b,
                    "# HELP abuseguard_redis_errors_total Failed Redis "
                    "calls.\n"
                    "# TYPE abuseguard_redis_errors_total counter\n"
                    "abuseguard_redis_errors_total %" PRIu64 "\n"
                    "# HELP abuseguard_redis_timeouts_total Redis calls that "
                    "timed out.\n"
                    "# TYPE abuseguard_redis_timeouts_total counter\n"
                    "abuseguard_redis_timeouts_total %" PRIu64 "\n"
                    "# HELP abuseguard_circuit_breaker_open 1 while checks "
                    "skip Redis.\n"
                    "# TYPE abuseguard_circuit_breaker_open gauge\n"
                    "abuseguard_circuit_breaker_open %d\n"
                    "# HELP abuseguard_circuit_breaker_opens_total Times the "
                    "breaker opened.\n"
                    "# TYPE abuseguard_circuit_breaker_opens_total counter\n"
                    "abuseguard_circuit_breaker_opens_total %" PRIu64 "\n"
                    "# HELP abuseguard_policy_reloads_total Policy sets "
                    "loaded.\n"
                    "# TYPE abuseguard_policy_reloads_total counter\n"
                    "abuseguard_policy_reloads_total %" PRIu64 "\n"
                    "# HELP abuseguard_policy_reload_failures_total Loads "
                    "that failed (the last set stays).\n"
                    "# TYPE abuseguard_policy_reload_failures_total counter\n"
                    "abuseguard_policy_reload_failures_total %" PRIu64 "\n"
                    "# HELP abuseguard_policies_stale 1 while the policy "
                    "database cannot be read.\n"
                    "# TYPE abuseguard_policies_stale gauge\n"
                    "abuseguard_policies_stale %d\n"
                    "# HELP abuseguard_log_lines_suppressed_total Log lines "
                    "dropped by the rate cap.\n"
                    "# TYPE abuseguard_log_lines_suppressed_total counter\n"
                    "abuseguard_log_lines_suppressed_total %" PRIu64 "\n",
                    LOAD(m->redis_errors), LOAD(m->redis_timeouts),
                    atomic_load(&m->breaker_open), LOAD(m->breaker_opens),
                    LOAD(m->reloads), LOAD(m->reload_failures),
                    atomic_load(&m->policies_stale), ag_log_suppressed_total());
}
