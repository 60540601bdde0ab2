/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_metrics.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics_impl.h"

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

/* The per-policy counters, each a family abuseguard_<name>_total. */
enum policy_counter {
    PC_DENIALS,
    PC_SHADOW_DENIALS,
    PC_CHALLENGES,
    PC_CHALLENGES_PASSED,
    PC_SKIPPED_NOT_LOADED,
    PC_SKIPPED_ADDRESS_UNKNOWN,
    PC_COUNT
};

static const struct {
    const char *name;
    const char *help;
} policy_families[PC_COUNT] = {
    [PC_DENIALS] = {"denials", "Denials"},
    [PC_SHADOW_DENIALS] = {"shadow_denials",
                           "Would-be denials of shadow policies"},
    [PC_CHALLENGES] = {"challenges", "Challenges asked for"},
    [PC_CHALLENGES_PASSED] = {"challenges_passed",
                              "Challenge policies tripped by requests that "
                              "had passed one"},
    [PC_SKIPPED_NOT_LOADED] = {"skipped_not_loaded",
                               "Requests a policy was left out of because "
                               "this instance lacks a network file it names"},
    [PC_SKIPPED_ADDRESS_UNKNOWN] = {"skipped_address_unknown",
                                    "Requests a policy was left out of "
                                    "because the network files do not know "
                                    "the address's country or ASN"},
};

/* A shield's gauges (struct ag_metrics_shield), each an atomic: a
 * scrape may see one step's rate beside the next one's threshold, which
 * a gauge may. */
enum shield_gauge {
    SG_RAISED,
    SG_RATE,
    SG_BASELINE, /* x 1000 */
    SG_THRESHOLD,
    SG_LOCAL,
    SG_RAISED_S,
    SG_OPERATOR,
    SG_LEARNING,
    SG_OTHERS,
    SG_DISAGREEMENTS, /* a counter */
    SG_COUNT
};

static const struct {
    const char *name;
    const char *help;
} shield_families[SG_COUNT] = {
    [SG_RAISED] = {"abuseguard_shield_raised",
                   "1 while the site-wide shield of the policy is raised."},
    [SG_RATE] = {"abuseguard_shield_rate",
                 "The shield's count in its last full window."},
    [SG_BASELINE] = {"abuseguard_shield_baseline",
                     "The shield's typical count per window."},
    [SG_THRESHOLD] = {"abuseguard_shield_threshold",
                      "The count per window above which the shield is "
                      "raised: max(limit, factor x baseline)."},
    [SG_LOCAL] = {"abuseguard_shield_local",
                  "1 while this instance shields from its own counts "
                  "because Redis does not answer."},
    [SG_RAISED_S] = {"abuseguard_shield_raised_seconds",
                     "How long the raise in force has lasted (0 while "
                     "lowered)."},
    [SG_OPERATOR] = {"abuseguard_shield_operator",
                     "1 while the raise in force is an operator's."},
    [SG_LEARNING] = {"abuseguard_shield_learning",
                     "1 while the shield is young: its baseline learns "
                     "fast, at most e-fold an hour."},
    [SG_OTHERS] = {"abuseguard_shield_other_configurations",
                   "Other configurations of the shield that other "
                   "instances use (a rollout in progress)."},
    [SG_DISAGREEMENTS] = {"abuseguard_shield_disagreements_total",
                          "Syncs of this instance that found another "
                          "configuration of the shield in use."},
};

struct policy_counters {
    _Atomic(const char *) name; /* interned; NULL while the slot is free */
    atomic_uint_fast64_t n[PC_COUNT];
    atomic_bool shield; /* its shield's gauges are listed */
    atomic_uint_fast64_t gauge[SG_COUNT];
};

/* Label values a higher layer named (borrowed strings), by index. */
struct labels {
    const char *names[AG_METRICS_EVENTS]; /* the larger of the two caps */
    size_t n;
};
_Static_assert(AG_METRICS_EVENTS >= AG_METRICS_ENDPOINTS,
               "struct labels holds either table");

struct ag_metrics {
    /* First: ag_metrics_network.c reaches it by a cast (ag_metrics_impl.h). */
    struct ag_metrics_network net;
    struct labels endpoints; /* n <= AG_METRICS_ENDPOINTS */
    struct labels types;     /* the event types */
    atomic_uint_fast64_t checks[AG_METRICS_ENDPOINTS][AG_OUT_COUNT];
    atomic_uint_fast64_t degraded[AG_METRICS_ENDPOINTS];
    atomic_uint_fast64_t latency[AG_METRICS_ENDPOINTS][AG_METRICS_BUCKETS + 1];
    atomic_uint_fast64_t latency_sum_us[AG_METRICS_ENDPOINTS];
    atomic_int_fast64_t scalar[AG_M_COUNT];
    struct policy_counters policies[AG_METRICS_POLICIES];
    struct policy_counters other;
    /* OTP codes sent (checks allowed) and verified, by calling code, the
     * code's number as the index (calling codes are 1 to 3 digits). */
    atomic_uint_fast64_t otp[2][1000];
    atomic_uint_fast64_t events[AG_METRICS_EVENTS]; /* by events' index */
    struct {
        atomic_uint_fast64_t lookups;
        atomic_bool loaded;
        atomic_uint_fast64_t entries;
        atomic_int_fast64_t created_s;
    } pwned[AG_METRICS_PWNED_MODES];
    /* Successful logins with a breached password: untrusted, trusted. */
    atomic_uint_fast64_t breached[2];
    atomic_uint_fast64_t passes[AG_METRICS_PASS_KINDS][AG_METRICS_PASS_RESULTS];
};

static const char *const pwned_modes[AG_METRICS_PWNED_MODES] = {
    [AG_METRICS_PWNED_SHA1] = "sha1",
    [AG_METRICS_PWNED_NTLM] = "ntlm",
};

/* The one-number metrics: exposition name, type and help, by enum. */
static const struct {
    const char *name;
    const char *type;
    const char *help;
} scalars[AG_M_COUNT] = {
    [AG_M_REDIS_ERRORS] = {"abuseguard_redis_errors_total", "counter",
                           "Failed Redis calls."},
    [AG_M_REDIS_TIMEOUTS] = {"abuseguard_redis_timeouts_total", "counter",
                             "Redis calls that timed out."},
    [AG_M_BREAKER_OPEN] = {"abuseguard_circuit_breaker_open", "gauge",
                           "1 while checks skip Redis."},
    [AG_M_BREAKER_OPENS] = {"abuseguard_circuit_breaker_opens_total", "counter",
                            "Times the breaker opened."},
    [AG_M_RELOADS] = {"abuseguard_policy_reloads_total", "counter",
                      "Policy sets loaded."},
    [AG_M_RELOAD_FAILURES] = {"abuseguard_policy_reload_failures_total",
                              "counter",
                              "Loads that failed (the last set stays)."},
    [AG_M_POLICIES_STALE] = {"abuseguard_policies_stale", "gauge",
                             "1 while the policy database cannot be read."},
    [AG_M_POLICIES_INVALID] = {"abuseguard_policies_invalid", "gauge",
                               "Policy rows that fail validation (each keeps "
                               "its last valid version, if any)."},
    [AG_M_LIST_ENTRIES_INVALID] = {"abuseguard_list_entries_invalid", "gauge",
                                   "Allow/deny list rows that fail "
                                   "validation (left out)."},
    [AG_M_CLUSTER_RELEASES] = {"abuseguard_cluster_releases_total", "counter",
                               "Redis Cluster checks whose charged slot "
                               "groups were released because another "
                               "denied or failed."},
    [AG_M_CLUSTER_REDIRECTS] = {"abuseguard_cluster_redirects_total", "counter",
                                "MOVED and ASK redirections followed."},
    [AG_M_HTTP_CONNECTIONS] = {"abuseguard_http_connections", "gauge",
                               "Open client connections."},
    [AG_M_CHECK_LOOPS] = {"abuseguard_check_loops", "gauge",
                          "Check loops (threads) running."},
    [AG_M_REDIS_LANES] = {"abuseguard_redis_lanes", "gauge",
                          "Check loops' own Redis connections up (one a "
                          "loop and Redis server)."},
    [AG_M_HTTP_RECLAIMED] = {"abuseguard_http_connections_reclaimed_total",
                             "counter",
                             "Waiting connections closed at --max-conns to "
                             "make room for a new one."},
    [AG_M_HTTP_EXPIRED] = {"abuseguard_http_connections_expired_total",
                           "counter",
                           "Connections closed for not sending a whole "
                           "request within --conn-timeout-s."},
    [AG_M_HTTP_REFUSED] = {"abuseguard_http_connections_refused_total",
                           "counter",
                           "Connections refused with a 503 at accept "
                           "(--max-conns or --max-conns-per-ip)."},
    [AG_M_WEBHOOK_DELIVERED] = {"abuseguard_webhook_delivered_total", "counter",
                                "Security events a webhook receiver took "
                                "(answered 2xx)."},
    [AG_M_WEBHOOK_DROPPED] = {"abuseguard_webhook_dropped_total", "counter",
                              "Security events given up for a receiver: "
                              "older than --webhook-max-age-s, pushed out "
                              "of a full queue, or queued at shutdown."},
    [AG_M_WEBHOOK_QUEUED] = {"abuseguard_webhook_queue_depth", "gauge",
                             "Security events waiting for delivery, over "
                             "every receiver."},
    [AG_M_DENY_CACHE_HITS] = {"abuseguard_deny_cache_hits_total", "counter",
                              "Checks denied from the local deny cache, "
                              "without a Redis call."},
    [AG_M_DENY_CACHE_MISSES] = {"abuseguard_deny_cache_misses_total", "counter",
                                "Checks the deny cache sent on to Redis."},
    [AG_M_DENY_CACHE_EVICTIONS] = {"abuseguard_deny_cache_evictions_total",
                                   "counter",
                                   "Deny cache entries pushed out by a "
                                   "new one (the nearest expiry)."},
    [AG_M_DENY_CACHE_INVALIDATIONS] =
        {"abuseguard_deny_cache_invalidations_total", "counter",
         "Keys invalidated in the deny cache, and whole clears."},
    [AG_M_DENY_CACHE_ENTRIES] = {"abuseguard_deny_cache_entries", "gauge",
                                 "Entries the deny cache holds."},
    [AG_M_PWNED_RELOAD_FAILURES] = {"abuseguard_pwned_reload_failures_total",
                                    "counter",
                                    "Breached-password corpora that failed "
                                    "to load at a replacement (the last good "
                                    "one stays)."},
    [AG_M_FLEET_VERSION] = {"abuseguard_fleet_version", "gauge",
                            "The fleet record this instance applied last."},
    [AG_M_FLEET_HEAD] = {"abuseguard_fleet_head_version", "gauge",
                         "The fleet's newest record, as last read."},
    [AG_M_FLEET_LAG_SECONDS] = {"abuseguard_fleet_lag_seconds", "gauge",
                                "How long this instance has been behind "
                                "the fleet's newest record (0: it is not)."},
    [AG_M_FLEET_HELD] = {"abuseguard_fleet_held", "gauge",
                         "1 while this instance holds at a fleet record it "
                         "cannot apply (a newer schema)."},
    [AG_M_FLEET_DIVERGED] = {"abuseguard_fleet_diverged", "gauge",
                             "1 while this instance's set differs from its "
                             "fleet's and waits for abuseguard fleet init."},
    [AG_M_FLEET_REFUSED] = {"abuseguard_fleet_records_refused_total", "counter",
                            "Fleet records refused: forged, replayed or "
                            "damaged in Redis."},
    [AG_M_FLEET_APPLIED] = {"abuseguard_fleet_records_applied_total", "counter",
                            "Fleet records applied here."},
};

struct ag_metrics *ag_metrics_new(void)
{
    struct ag_metrics *m = calloc(1, sizeof *m);
    if (m)
        atomic_store(&m->other.name, "_other");
    return m;
}

void ag_metrics_free(struct ag_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < AG_METRICS_POLICIES; i++)
        free((char *)atomic_load(&m->policies[i].name));
    free(m);
}

static int name(struct labels *l, size_t max, const char *const *names,
                size_t n)
{
    if (n > max)
        return AG_EINVAL;
    for (size_t i = 0; i < n; i++)
        l->names[i] = names[i];
    l->n = n;
    return AG_OK;
}

int ag_metrics_name_endpoints(struct ag_metrics *m, const char *const *names,
                              size_t n)
{
    return m ? name(&m->endpoints, AG_METRICS_ENDPOINTS, names, n) : AG_OK;
}

int ag_metrics_name_events(struct ag_metrics *m, const char *const *names,
                           size_t n)
{
    return m ? name(&m->types, AG_METRICS_EVENTS, names, n) : AG_OK;
}

void ag_metrics_count(struct ag_metrics *m, enum ag_metric which)
{
    if (m)
        atomic_fetch_add_explicit(&m->scalar[which], 1, memory_order_relaxed);
}

void ag_metrics_set(struct ag_metrics *m, enum ag_metric which, int64_t v)
{
    if (m)
        atomic_store(&m->scalar[which], v);
}

void ag_metrics_add(struct ag_metrics *m, enum ag_metric which, int64_t delta)
{
    if (m)
        atomic_fetch_add(&m->scalar[which], delta);
}

int64_t ag_metrics_get(struct ag_metrics *m, enum ag_metric which)
{
    return m ? (int64_t)atomic_load(&m->scalar[which]) : 0;
}

void ag_metrics_check(struct ag_metrics *m, int endpoint,
                      enum ag_outcome outcome, bool degraded, uint64_t us)
{
    if (!m || endpoint < 0 || (size_t)endpoint >= m->endpoints.n)
        return;
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

static struct policy_counters *counters_of(struct ag_metrics *m,
                                           const char *name)
{
    /* Slots are claimed once, with a compare-and-swap, and never freed
     * while the process runs: a reader never sees a name go away. */
    for (size_t i = 0; i < AG_METRICS_POLICIES; i++) {
        struct policy_counters *c = &m->policies[i];
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

void ag_metrics_denial(struct ag_metrics *m, const char *policy, bool shadow)
{
    if (!m)
        return;
    struct policy_counters *c = counters_of(m, policy);
    atomic_fetch_add_explicit(&c->n[shadow ? PC_SHADOW_DENIALS : PC_DENIALS], 1,
                              memory_order_relaxed);
}

void ag_metrics_challenge(struct ag_metrics *m, const char *policy, bool passed)
{
    if (!m)
        return;
    struct policy_counters *c = counters_of(m, policy);
    atomic_fetch_add_explicit(
        &c->n[passed ? PC_CHALLENGES_PASSED : PC_CHALLENGES], 1,
        memory_order_relaxed);
}

void ag_metrics_skipped(struct ag_metrics *m, const char *policy,
                        bool not_loaded)
{
    if (!m)
        return;
    struct policy_counters *c = policy ? counters_of(m, policy) : &m->other;
    atomic_fetch_add_explicit(
        &c->n[not_loaded ? PC_SKIPPED_NOT_LOADED : PC_SKIPPED_ADDRESS_UNKNOWN],
        1, memory_order_relaxed);
}

void ag_metrics_shield(struct ag_metrics *m, const char *policy,
                       const struct ag_metrics_shield *fig)
{
    if (!m)
        return;
    struct policy_counters *c = counters_of(m, policy);
    /* "_other" holds counters only: a shield past the table is not
     * listed (a gauge summed over policies would mean nothing). */
    if (c == &m->other)
        return;
    if (!fig) {
        atomic_store(&c->shield, false);
        return;
    }
    atomic_store_explicit(&c->gauge[SG_RAISED], fig->raised,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_RATE], fig->rate, memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_BASELINE], fig->baseline_milli,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_THRESHOLD], fig->threshold,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_LOCAL], fig->local,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_RAISED_S], fig->raised_s,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_OPERATOR], fig->by_operator,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_LEARNING], fig->learning,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_OTHERS], fig->others,
                          memory_order_relaxed);
    atomic_store_explicit(&c->gauge[SG_DISAGREEMENTS], fig->disagreements,
                          memory_order_relaxed);
    atomic_store_explicit(&c->shield, true, memory_order_release);
}

const char *ag_metrics_outcome_name(enum ag_outcome outcome)
{
    return outcome >= 0 && outcome < AG_OUT_COUNT ? outcome_names[outcome]
                                                  : "unknown";
}

#define LOAD(x) ((uint64_t)atomic_load_explicit(&(x), memory_order_relaxed))

/* The gauges of every shield set, one family at a time. */
static int render_shields(struct ag_metrics *m, struct ag_buf *b)
{
    int rc = AG_OK;
    for (int k = 0; !rc && k < SG_COUNT; k++) {
        rc = ag_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n",
                           shield_families[k].name, shield_families[k].help,
                           shield_families[k].name,
                           k == SG_DISAGREEMENTS ? "counter" : "gauge");
        for (size_t i = 0; !rc && i < AG_METRICS_POLICIES; i++) {
            const struct policy_counters *c = &m->policies[i];
            const char *name = atomic_load(&c->name);
            if (!name ||
                !atomic_load_explicit(&c->shield, memory_order_acquire))
                continue;
            uint64_t v = LOAD(c->gauge[k]);
            if (k == SG_BASELINE)
                rc = ag_buf_printf(b, "%s{policy=\"%s\"} %.3f\n",
                                   shield_families[k].name, name,
                                   (double)v / 1000.0);
            else
                rc = ag_buf_printf(b, "%s{policy=\"%s\"} %" PRIu64 "\n",
                                   shield_families[k].name, name, v);
        }
    }
    return rc;
}

static int render_policy(struct ag_buf *b, const struct policy_counters *c,
                         enum policy_counter k)
{
    const char *name = atomic_load(&c->name);
    uint64_t v = LOAD(c->n[k]);
    if (!name)
        return AG_OK;

    return ag_buf_printf(b, "abuseguard_%s_total{policy=\"%s\"} %" PRIu64 "\n",
                         policy_families[k].name, name, v);
}

void ag_metrics_otp(struct ag_metrics *m, const char *country, bool verified)
{
    if (!m || !country || country[0] != '+')
        return;
    char *end;
    unsigned long code = strtoul(country + 1, &end, 10);
    if (*end || code == 0 || code >= 1000)
        return;
    atomic_fetch_add_explicit(&m->otp[verified][code], 1, memory_order_relaxed);
}

void ag_metrics_event(struct ag_metrics *m, const char *type)
{
    if (!m || !type)
        return;
    /* A handful of names: a scan costs less than the event's JSON. */
    for (size_t t = 0; t < m->types.n; t++)
        if (strcmp(m->types.names[t], type) == 0) {
            atomic_fetch_add_explicit(&m->events[t], 1, memory_order_relaxed);
            return;
        }
}

void ag_metrics_pwned_lookup(struct ag_metrics *m, enum ag_metrics_pwned mode)
{
    if (m && (unsigned)mode < AG_METRICS_PWNED_MODES)
        atomic_fetch_add_explicit(&m->pwned[mode].lookups, 1,
                                  memory_order_relaxed);
}

void ag_metrics_pwned_corpus(struct ag_metrics *m, enum ag_metrics_pwned mode,
                             bool loaded, uint64_t entries, int64_t created_s)
{
    if (!m || (unsigned)mode >= AG_METRICS_PWNED_MODES)
        return;
    atomic_store_explicit(&m->pwned[mode].entries, entries,
                          memory_order_relaxed);
    atomic_store_explicit(&m->pwned[mode].created_s, created_s,
                          memory_order_relaxed);
    atomic_store_explicit(&m->pwned[mode].loaded, loaded, memory_order_release);
}

/* The corpora's lookups (both modes, zeros included), and the size and
 * age of each one loaded; the age is counted at the scrape, from the
 * corpus's creation, so that it grows between reloads. */
static int render_pwned(struct ag_metrics *m, struct ag_buf *b)
{
    int rc = ag_buf_puts(b, "# HELP abuseguard_pwned_lookups_total Range "
                            "answers (GET /range), by corpus mode.\n"
                            "# TYPE abuseguard_pwned_lookups_total counter\n");
    for (int k = 0; !rc && k < AG_METRICS_PWNED_MODES; k++)
        rc = ag_buf_printf(
            b, "abuseguard_pwned_lookups_total{mode=\"%s\"} %" PRIu64 "\n",
            pwned_modes[k], LOAD(m->pwned[k].lookups));
    static const char *const gauges[2][2] = {
        {"abuseguard_pwned_entries", "Hashes in the corpus served, by mode."},
        {"abuseguard_pwned_corpus_age_seconds",
         "Seconds since the corpus served was made (its import), by mode."},
    };
    int64_t now_s = (int64_t)(ag_clock_wall_ms() / 1000u);
    for (int g = 0; !rc && g < 2; g++) {
        rc = ag_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g][0],
                           gauges[g][1], gauges[g][0]);
        for (int k = 0; !rc && k < AG_METRICS_PWNED_MODES; k++) {
            if (!atomic_load_explicit(&m->pwned[k].loaded,
                                      memory_order_acquire))
                continue;
            /* Any int64 a caller gives (the reader keeps it to 1970 ..
             * 9999): the difference taken unsigned, where it cannot
             * overflow, and 0 for a corpus made in the future. */
            int64_t made = (int64_t)atomic_load_explicit(&m->pwned[k].created_s,
                                                         memory_order_relaxed);
            uint64_t age = made < now_s ? (uint64_t)now_s - (uint64_t)made : 0;
            rc = ag_buf_printf(b, "%s{mode=\"%s\"} %" PRIu64 "\n", gauges[g][0],
                               pwned_modes[k],
                               g == 0 ? LOAD(m->pwned[k].entries) : age);
        }
    }
    return rc;
}
void ag_metrics_breached_login(struct ag_metrics *m, bool trusted)
{
    if (m)
        atomic_fetch_add_explicit(&m->breached[trusted], 1,
                                  memory_order_relaxed);
}

static int render_breached(struct ag_metrics *m, struct ag_buf *b)
{
    return ag_buf_printf(
        b,
        "# HELP abuseguard_breached_password_logins_total Logins reported "
        "successful with a password the caller found breached, by lane.\n"
        "# TYPE abuseguard_breached_password_logins_total counter\n"
        "abuseguard_breached_password_logins_total{lane=\"untrusted\"} "
        "%" PRIu64 "\n"
        "abuseguard_breached_password_logins_total{lane=\"trusted\"} "
        "%" PRIu64 "\n",
        LOAD(m->breached[0]), LOAD(m->breached[1]));
}

void ag_metrics_pass(struct ag_metrics *m, enum ag_metrics_pass_kind kind,
                     enum ag_metrics_pass_result result)
{
    if (m && kind < AG_METRICS_PASS_KINDS && result < AG_METRICS_PASS_RESULTS)
        atomic_fetch_add_explicit(&m->passes[kind][result], 1,
                                  memory_order_relaxed);
}

/* Every nonce result but refused; of true, accepted and refused. */
static int render_passes(struct ag_metrics *m, struct ag_buf *b)
{
    static const char *const kinds[] = {"nonce", "true"};
    static const char *const results[] = {"accepted", "expired", "forged",
                                          "reused", "refused"};
    int rc = ag_buf_puts(
        b, "# HELP abuseguard_challenge_passes_total Checks that said they "
           "passed a challenge, by the form (a nonce, or true) and what "
           "came of it.\n"
           "# TYPE abuseguard_challenge_passes_total counter\n");
    for (int k = 0; !rc && k < AG_METRICS_PASS_KINDS; k++)
        for (int r = 0; !rc && r < AG_METRICS_PASS_RESULTS; r++)
            if ((k == AG_METRICS_PASS_NONCE) !=
                    (r == AG_METRICS_PASS_REFUSED) ||
                r == AG_METRICS_PASS_ACCEPTED)
                rc = ag_buf_printf(b,
                                   "abuseguard_challenge_passes_total{kind="
                                   "\"%s\",result=\"%s\"} %" PRIu64 "\n",
                                   kinds[k], results[r], LOAD(m->passes[k][r]));
    return rc;
}

static int render_events(struct ag_metrics *m, struct ag_buf *b)
{
    int rc = ag_buf_puts(b, "# HELP abuseguard_events_total Security events "
                            "raised, by type.\n"
                            "# TYPE abuseguard_events_total counter\n");
    for (size_t t = 0; !rc && t < m->types.n; t++)
        rc = ag_buf_printf(b,
                           "abuseguard_events_total{type=\"%s\"} %" PRIu64 "\n",
                           m->types.names[t], LOAD(m->events[t]));
    return rc;
}

/* The OTP counters of each calling code seen. */
static int render_otp(struct ag_metrics *m, struct ag_buf *b)
{
    static const char *const family[2][2] = {
        {"abuseguard_otp_sends_total",
         "OTP checks allowed (codes sent), by country calling code."},
        {"abuseguard_otp_verified_total",
         "OTP codes reported verified, by country calling code."},
    };
    int rc = AG_OK;
    for (int k = 0; k < 2 && !rc; k++) {
        rc = ag_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", family[k][0],
                           family[k][1], family[k][0]);
        for (int code = 1; code < 1000 && !rc; code++) {
            uint64_t v = LOAD(m->otp[k][code]);
            if (v)
                rc = ag_buf_printf(b, "%s{country=\"+%d\"} %" PRIu64 "\n",
                                   family[k][0], code, v);
        }
    }
    return rc;
}

int ag_metrics_render(struct ag_metrics *m, struct ag_buf *b)
{
    int rc = ag_buf_puts(
        b, "# HELP abuseguard_build_info Build information.\n"
           "# TYPE abuseguard_build_info gauge\n"
           "abuseguard_build_info{version=\"" AG_VERSION "\"} 1\n"
           "# HELP abuseguard_checks_total Checks by endpoint and outcome.\n"
           "# TYPE abuseguard_checks_total counter\n");
    const struct labels *eps = &m->endpoints;
    for (size_t e = 0; !rc && e < eps->n; e++)
        for (int o = 0; !rc && o < AG_OUT_COUNT; o++)
            rc = ag_buf_printf(
                b,
                "abuseguard_checks_total{endpoint=\"%s\",outcome=\"%s\"} "
                "%" PRIu64 "\n",
                eps->names[e], outcome_names[o], LOAD(m->checks[e][o]));
    rc = rc ? rc
            : ag_buf_puts(b, "# HELP abuseguard_degraded_checks_total Checks "
                             "answered without Redis.\n"
                             "# TYPE abuseguard_degraded_checks_total "
                             "counter\n");
    for (size_t e = 0; !rc && e < eps->n; e++)
        rc = ag_buf_printf(
            b,
            "abuseguard_degraded_checks_total{endpoint=\"%s\"} %" PRIu64 "\n",
            eps->names[e], LOAD(m->degraded[e]));
    for (int k = 0; k < PC_COUNT && !rc; k++) {
        rc = ag_buf_printf(b,
                           "# HELP abuseguard_%s_total %s by policy.\n"
                           "# TYPE abuseguard_%s_total counter\n",
                           policy_families[k].name, policy_families[k].help,
                           policy_families[k].name);
        for (size_t i = 0; !rc && i < AG_METRICS_POLICIES; i++)
            rc = render_policy(b, &m->policies[i], (enum policy_counter)k);
        rc = rc ? rc : render_policy(b, &m->other, (enum policy_counter)k);
    }
    rc = rc ? rc
            : ag_buf_puts(b, "# HELP abuseguard_check_duration_seconds Check "
                             "latency.\n"
                             "# TYPE abuseguard_check_duration_seconds "
                             "histogram\n");
    for (size_t e = 0; !rc && e < eps->n; e++) {
        const char *ep = eps->names[e];
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
    for (int k = 0; !rc && k < AG_M_COUNT; k++)
        rc = ag_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %" PRId64 "\n",
                           scalars[k].name, scalars[k].help, scalars[k].name,
                           scalars[k].type, scalars[k].name,
                           (int64_t)atomic_load(&m->scalar[k]));
    rc = rc ? rc : render_otp(m, b);
    rc = rc ? rc : render_events(m, b);
    rc = rc ? rc : render_breached(m, b);
    rc = rc ? rc : render_passes(m, b);
    rc = rc ? rc : render_shields(m, b);
    rc = rc ? rc : render_pwned(m, b);
    rc = rc ? rc : ag_metrics_network_render(&m->net, b);
    return rc ? rc
              : ag_buf_printf(
                    b,
                    "# HELP abuseguard_log_lines_suppressed_total Log lines "
                    "dropped by the rate cap.\n"
                    "# TYPE abuseguard_log_lines_suppressed_total counter\n"
                    "abuseguard_log_lines_suppressed_total %" PRIu64 "\n",
                    ag_log_suppressed_total());
}
