/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's overview of the last hour, kept by each instance in
 * memory for itself (nothing is shared: an instance's overview counts the
 * checks it answered): a ring of AG_OVERVIEW_MINUTES one-minute buckets
 * of checks by endpoint and outcome, of the policies that tripped
 * (denials, shadow denials, challenges asked for and passed) by policy,
 * and of each site-wide shield's figures, sampled by the shields' sync.
 * GET /admin/overview renders it (ag_overview_json) for the console's
 * charts.
 *
 * A check's cost is O(1) atomic work and nothing else: no lock, no
 * allocation, no clearing of old buckets. Each counter is one 64-bit
 * atomic holding the minute it counts (its top AG_OVERVIEW_TAG_BITS)
 * and its count (the rest); a count that finds an older minute there
 * starts the cell over with a compare-and-swap, and a reader counts a
 * cell only for the minute it holds. A count that lands as the minute
 * turns may be counted in the next minute, and one from a clock an hour
 * behind is dropped: an overview may be off by that, never corrupt.
 *
 * Policies and shields are found by name in fixed tables filled when a
 * ruleset is published (ag_overview_name_policies), so that a check
 * never copies a name: a policy named in no table yet (a check of a set
 * published a moment before its names) counts under "_other", as do
 * names past AG_OVERVIEW_POLICIES. Names stay for the process's life,
 * as the metrics' do.
 *
 * Shield samples have one writer at a time (the shields' lock) and any
 * number of readers.
 *
 * Thread-safety: every function from any thread, but ag_overview_free.
 */
#ifndef AG_OVERVIEW_H
#define AG_OVERVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_endpoint.h"
#include "ag_error.h"
#include "ag_metrics.h"
#include "ag_policy.h"

#define AG_OVERVIEW_MINUTES 60   /* buckets in the ring: the last hour */
#define AG_OVERVIEW_POLICIES 128 /* policy names, "_other" besides */
#define AG_OVERVIEW_SHIELDS 16   /* shield names; more are not sampled */
#define AG_OVERVIEW_MINUTE_MS 60000u
/* A counter's minute tag: minutes since the Unix epoch, modulo 2^28
 * (510 years); the other 36 bits count (6.8e10 a minute). */
#define AG_OVERVIEW_TAG_BITS 28

/* How a policy tripped on a check, as the metrics count it apart. */
enum ag_overview_trip {
    AG_OVERVIEW_DENIED,           /* an enforcing policy denied */
    AG_OVERVIEW_SHADOW_DENIED,    /* a shadow policy would have */
    AG_OVERVIEW_CHALLENGED,       /* a challenge was asked for */
    AG_OVERVIEW_CHALLENGE_PASSED, /* one had been passed: it went on */
    AG_OVERVIEW_TRIPS
};

/* One sample of a shield. */
struct ag_overview_shield {
    uint64_t count;          /* its current window's count, so far */
    uint64_t baseline_milli; /* the typical count per window, x 1000 */
    uint64_t threshold;
    bool raised;
};

struct ag_overview;

/* A new, empty overview (about 300 KiB): AG_OK and *out, or AG_ENOMEM.
 * Free with ag_overview_free. */
int ag_overview_new(struct ag_overview **out);
/* NULL is allowed. */
void ag_overview_free(struct ag_overview *o);

/* Enters the names of set's policies (and, for its surge policies, of
 * their shields) in the tables, those not there yet, while there is
 * room. Call it before set is published to the checks. set and o may
 * be NULL. */
void ag_overview_name_policies(struct ag_overview *o,
                               const struct ag_ruleset *set);

/* A check of endpoint, answered at now_ms (Unix ms) with outcome. o may
 * be NULL (then nothing). */
void ag_overview_check(struct ag_overview *o, uint64_t now_ms,
                       enum ag_endpoint endpoint, enum ag_outcome outcome);
/* The policy named policy tripped, as trip says, at now_ms. */
void ag_overview_trip(struct ag_overview *o, uint64_t now_ms,
                      const char *policy, enum ag_overview_trip trip);
/* A sample of the shield of policy at now_ms: the minute keeps the
 * highest count sampled in it, whether it was raised at any sample, and
 * the last baseline and threshold. One writer at a time. */
void ag_overview_shield(struct ag_overview *o, uint64_t now_ms,
                        const char *policy, const struct ag_overview_shield *s);

/* The last AG_OVERVIEW_MINUTES minutes up to the one of now_ms, oldest
 * first:
 *   {"scope": "instance", "minute_s": 60,
 *    "minutes": ["<RFC 3339 start of each minute>", ...],
 *    "checks": [{"endpoint": "login", "allowed": [n, ...], "denied",
 *                "unavailable", "invalid"}, ...every endpoint],
 *    "policies": [{"policy": "login.ip", "denied": [...],
 *                  "shadow_denied", "challenged", "challenge_passed"},
 *                 ...each that tripped in the hour, by name],
 *    "shields": [{"policy": "login.site_failures", "count": [n|null],
 *                 "baseline": [x|null], "threshold": [n|null],
 *                 "raised": [bool|null]}, ...each sampled in the hour]}
 * every series AG_OVERVIEW_MINUTES long; a shield's minute without a
 * sample is null. A new reference (the caller decrefs it), or NULL when
 * out of memory. */
json_t *ag_overview_json(struct ag_overview *o, uint64_t now_ms);

#endif
