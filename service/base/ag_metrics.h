/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics, exposed at GET /metrics in the Prometheus text format. Opaque:
 * modules record through the functions below, any thread at any time
 * (the counters are atomics, no lock). Per-policy counters
 * live in a fixed table of AG_METRICS_POLICIES names (policy names are an
 * admin's words, never a client's identifiers); names past the table are
 * counted under policy="_other". Labels never carry an identifier.
 *
 * Metrics sit below every module that records into them, so they know no
 * endpoint and no event type: the layers above hand in the label values
 * (ag_metrics_name_endpoints, ag_metrics_name_events) once, at start,
 * before m is shared with the threads that record and render, and
 * /metrics lists them in the order given, zeros included.
 *
 * Site-wide shields come and go with the policies, so they are not named
 * at start: their gauges sit in the same per-policy table as the
 * counters, set by the shields' sync each time it steps one
 * (ag_metrics_shield), and a shield that leaves the active set is
 * unset (then no longer listed).
 */
#ifndef AG_METRICS_H
#define AG_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_buf.h"

#define AG_METRICS_POLICIES 128
#define AG_METRICS_BUCKETS 12
#define AG_METRICS_ENDPOINTS 8 /* endpoint label values at most */
#define AG_METRICS_EVENTS 32   /* event type label values at most */

enum ag_outcome {
    AG_OUT_ALLOWED,
    AG_OUT_DENIED,      /* by a policy (429) or a deny list (403) */
    AG_OUT_UNAVAILABLE, /* fail-closed while the store was down (503) */
    AG_OUT_INVALID,     /* bad input (4xx) */
    AG_OUT_COUNT
};

/* The metrics that are one number each: counters only go up, gauges are
 * set. Their names and help texts are one table in ag_metrics.c. */
enum ag_metric {
    AG_M_REDIS_ERRORS,         /* counter */
    AG_M_REDIS_TIMEOUTS,       /* counter */
    AG_M_BREAKER_OPEN,         /* gauge: 1 while checks skip Redis */
    AG_M_BREAKER_OPENS,        /* counter */
    AG_M_RELOADS,              /* counter */
    AG_M_RELOAD_FAILURES,      /* counter */
    AG_M_POLICIES_STALE,       /* gauge: 1 while the database cannot be read */
    AG_M_POLICIES_INVALID,     /* gauge: policy rows that fail validation */
    AG_M_LIST_ENTRIES_INVALID, /* gauge: list rows that fail validation */
    AG_M_CLUSTER_RELEASES,     /* counter: cluster checks released */
    AG_M_CLUSTER_REDIRECTS,    /* counter: MOVED and ASK followed */
    AG_M_HTTP_CONNECTIONS,     /* gauge: open client connections */
    AG_M_CHECK_LOOPS,          /* gauge: check loops running */
    AG_M_REDIS_LANES,          /* gauge: check loops' Redis links up */
    AG_M_HTTP_RECLAIMED,       /* counter: ready connections ended at the cap */
    AG_M_HTTP_EXPIRED,         /* counter: connections past the deadline */
    AG_M_HTTP_REFUSED,         /* counter: connections refused at accept */
    AG_M_WEBHOOK_DELIVERED,    /* counter: events a receiver took (2xx) */
    AG_M_WEBHOOK_DROPPED,      /* counter: events given up (age, queue) */
    AG_M_WEBHOOK_QUEUED,       /* gauge: events waiting, all receivers */
    AG_M_DENY_CACHE_HITS,      /* counter: checks denied from the cache */
    AG_M_DENY_CACHE_MISSES,    /* counter: checks the cache sent on */
    AG_M_DENY_CACHE_EVICTIONS, /* counter: entries pushed out when full */
    AG_M_DENY_CACHE_INVALIDATIONS, /* counter: keys invalidated, clears */
    AG_M_DENY_CACHE_ENTRIES,       /* gauge: entries held */
    AG_M_PWNED_RELOAD_FAILURES,    /* counter: corpora that failed to load */
    AG_M_FLEET_VERSION,            /* gauge: the fleet record applied last */
    AG_M_FLEET_HEAD,               /* gauge: the fleet's newest, as read */
    AG_M_FLEET_LAG_SECONDS,        /* gauge: behind the fleet for so long */
    AG_M_FLEET_HELD,               /* gauge: 1 while held at a record */
    AG_M_FLEET_DIVERGED,           /* gauge: 1 while diverged */
    AG_M_FLEET_REFUSED,            /* counter: records refused */
    AG_M_FLEET_APPLIED,            /* counter: records applied */
    AG_M_COUNT
};

struct ag_metrics;

/* A new set of metrics, all zero; NULL when out of memory. Free with
 * ag_metrics_free. */
struct ag_metrics *ag_metrics_new(void);
void ag_metrics_free(struct ag_metrics *m);

/* Names the endpoints: names[i] is the endpoint="..." label of
 * ag_metrics_check's endpoint i, in the order /metrics lists them. The
 * array is copied; the strings are borrowed and must outlive m (string
 * constants). For start-up only: before any other thread uses m. AG_OK;
 * AG_EINVAL if n is over AG_METRICS_ENDPOINTS. m == NULL does nothing. */
int ag_metrics_name_endpoints(struct ag_metrics *m, const char *const *names,
                              size_t n);
/* Names the event types that ag_metrics_event counts (type="..."), as
 * ag_metrics_name_endpoints does the endpoints, at most
 * AG_METRICS_EVENTS. */
int ag_metrics_name_events(struct ag_metrics *m, const char *const *names,
                           size_t n);

/* Every recording function takes m == NULL and then does nothing, so a
 * module may run without metrics (tests). */

/* Adds one to a counter. */
void ag_metrics_count(struct ag_metrics *m, enum ag_metric which);
/* Sets a gauge. */
void ag_metrics_set(struct ag_metrics *m, enum ag_metric which, int64_t v);
/* Adds delta (negative: takes away) to a gauge, atomically: for a gauge
 * several threads move at once, where each setting the total it saw
 * could leave a stale one last. */
void ag_metrics_add(struct ag_metrics *m, enum ag_metric which, int64_t delta);
/* One check of endpoint (an index into the names of
 * ag_metrics_name_endpoints; one past them is not counted) took us
 * microseconds and ended in outcome. */
void ag_metrics_check(struct ag_metrics *m, int endpoint,
                      enum ag_outcome outcome, bool degraded, uint64_t us);
/* One OTP code sent (verified false: a check of endpoint otp allowed) or
 * reported verified, for its phone's calling code ("+44"). A calling
 * code is not personal data; at most 999 label values. */
void ag_metrics_otp(struct ag_metrics *m, const char *country, bool verified);
/* One denial by policy name (shadow: a shadow policy's would-be denial). */
void ag_metrics_denial(struct ag_metrics *m, const char *policy, bool shadow);
/* One challenge policy tripped: it asked for a challenge, or (passed) the
 * request had passed one and went on. Counted apart from denials. */
void ag_metrics_challenge(struct ag_metrics *m, const char *policy,
                          bool passed);
/* One request a policy was left out of for the network files: this
 * instance lacks a file it names (not_loaded), or they do not know the
 * address. policy NULL: one past those a plan names, under "_other". */
void ag_metrics_skipped(struct ag_metrics *m, const char *policy,
                        bool not_loaded);
/* A site-wide shield's state as its gauges show it. */
struct ag_metrics_shield {
    bool raised;
    bool local;    /* from this instance's own counts: Redis did not answer */
    uint64_t rate; /* the last full window's count */
    uint64_t baseline_milli; /* the typical count per window, x 1000 */
    uint64_t threshold;
    uint64_t raised_s;      /* how long the raise in force has lasted; 0 */
    bool by_operator;       /* the raise in force is an operator's */
    bool learning;          /* young: learning fast */
    uint64_t others;        /* other configurations in use elsewhere */
    uint64_t disagreements; /* syncs that saw any, in all (a counter) */
};
/* Sets the gauges of the shield of policy (fig NULL: policy is no
 * shield any more, and its gauges are no longer listed). */
void ag_metrics_shield(struct ag_metrics *m, const char *policy,
                       const struct ag_metrics_shield *fig);

/* The breached-password corpora the service serves (GET /range), one of
 * each mode, labelled mode="sha1" and mode="ntlm". */
enum ag_metrics_pwned {
    AG_METRICS_PWNED_SHA1,
    AG_METRICS_PWNED_NTLM,
    AG_METRICS_PWNED_MODES
};
/* One range answered from the corpus of mode. */
void ag_metrics_pwned_lookup(struct ag_metrics *m, enum ag_metrics_pwned mode);
/* The corpus of mode now served: entries hashes, made at created_s (unix
 * seconds), whose age /metrics shows; loaded false: none (its gauges are
 * then not listed). */
void ag_metrics_pwned_corpus(struct ag_metrics *m, enum ag_metrics_pwned mode,
                             bool loaded, uint64_t entries, int64_t created_s);
/* The network files (ag_network): the two databases, labelled
 * database="country" and "asn" (their reload failures file="geoip" and
 * "asn"), and the operator's named IP lists, list="<name>" and
 * file="<name>". The list names are named once, at start, as the
 * endpoints are; they are the operator's flags, so the labels are
 * bounded. */
enum ag_metrics_netdb {
    AG_METRICS_NETDB_COUNTRY,
    AG_METRICS_NETDB_ASN,
    AG_METRICS_NETDBS
};
#define AG_METRICS_NETWORK_LISTS 32    /* lists named at most */
#define AG_METRICS_NETWORK_NAME_MAX 32 /* bytes of a list's name */
/* Names the lists: names[i] labels list i. The names are copied. AG_OK;
 * AG_EINVAL if n is over AG_METRICS_NETWORK_LISTS or a name is longer
 * than AG_METRICS_NETWORK_NAME_MAX. m == NULL does nothing. */
int ag_metrics_network_name_lists(struct ag_metrics *m,
                                  const char *const *names, size_t n);
/* A login check's risk (issue 40): the signals it carried, by their
 * index in the engine's enum ag_signal (whose names, in order, are
 * ag_metrics_risk_signal_name's), and its level (0 low, 1 medium, 2
 * high); judged false: its history could not be read (Redis out, a
 * Cluster check with no slot of the key's), so the history's signals
 * are unknown. */
#define AG_METRICS_RISK_SIGNALS 7
void ag_metrics_risk(struct ag_metrics *m, unsigned signals, unsigned level,
                     bool judged);
const char *ag_metrics_risk_signal_name(unsigned i);
/* One lookup of an address in db; found false: no record holds it (a
 * miss, counted as a lookup too). */
void ag_metrics_network_lookup(struct ag_metrics *m, enum ag_metrics_netdb db,
                               bool found);
/* The database of db now served, built at build_epoch (unix seconds),
 * whose age /metrics shows; loaded false: none (no age listed). */
void ag_metrics_network_database(struct ag_metrics *m, enum ag_metrics_netdb db,
                                 bool loaded, uint64_t build_epoch);
/* List i now served, of entries entries; loaded false: none (its gauge
 * is then not listed). */
void ag_metrics_network_list(struct ag_metrics *m, size_t i, bool loaded,
                             uint64_t entries);
/* One lookup that list i matched in its special ranges only (a private,
 * loopback, link-local or CGNAT address: the integrator sends the wrong
 * one). */
void ag_metrics_network_special_only(struct ag_metrics *m, size_t i);
/* A replacement of db's file, or of list i's, that could not be loaded
 * (the last good one stays). */
void ag_metrics_network_db_failure(struct ag_metrics *m,
                                   enum ag_metrics_netdb db);
void ag_metrics_network_list_failure(struct ag_metrics *m, size_t i);

/* One login reported successful with a password the caller found
 * breached (/report-login "password_breached": true), in the trusted lane
 * or the untrusted one. */
void ag_metrics_breached_login(struct ag_metrics *m, bool trusted);

/* A check that said it passed a challenge (challenge_passed): with a
 * nonce, or with true (the old form, taken while --challenge-pass is
 * lenient, nothing while strict); and what came of it. */
enum ag_metrics_pass_kind {
    AG_METRICS_PASS_NONCE,
    AG_METRICS_PASS_TRUE,
    AG_METRICS_PASS_KINDS
};
enum ag_metrics_pass_result {
    AG_METRICS_PASS_ACCEPTED, /* authentic and live (true: always) */
    AG_METRICS_PASS_EXPIRED,  /* authentic, past its five minutes */
    AG_METRICS_PASS_FORGED,   /* not minted for this subject, lane, key */
    AG_METRICS_PASS_REUSED,   /* authentic, but a check used it already */
    AG_METRICS_PASS_REFUSED,  /* true while --challenge-pass is strict */
    AG_METRICS_PASS_RESULTS
};
void ag_metrics_pass(struct ag_metrics *m, enum ag_metrics_pass_kind kind,
                     enum ag_metrics_pass_result result);

/* One security event raised, of type ("lockout"): one of the names of
 * ag_metrics_name_events; another (or NULL) is not counted. */
void ag_metrics_event(struct ag_metrics *m, const char *type);
/* "allowed", "denied", "unavailable" or "invalid": outcome's label. */
const char *ag_metrics_outcome_name(enum ag_outcome outcome);

/* The current value of a counter or gauge (for tests and probes). */
int64_t ag_metrics_get(struct ag_metrics *m, enum ag_metric which);

/* Appends the Prometheus text exposition to b. */
int ag_metrics_render(struct ag_metrics *m, struct ag_buf *b);

#endif
