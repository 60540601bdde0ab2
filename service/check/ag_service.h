/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service core: what a check does, from request body to verdict,
 * independent of HTTP. It owns the active ruleset (swapped atomically: a
 * check holds a reference to the set it started with, so it never sees
 * half an edit) and the lifecycle of every check: it parses, plans, applies
 * the lists, starts the store call itself and decides. Each answer is a
 * verdict (ag_verdict.h), data that the layer above renders: the HTTP
 * layer hands over the body, parks its connection while the store
 * answers (struct ag_check_waiter) and turns the verdict into a response.
 * Opaque: other modules use the functions below, never its fields.
 *
 * Three files hold it: ag_service.c the core (the ruleset, lanes, plans,
 * the queue of resets), ag_service_check.c checks and reports,
 * ag_service_admin.c resets and inspects (ag_service_impl.h).
 *
 * When the store (Redis) cannot answer, each policy does as its "fail"
 * says: if any enforcing policy of the check fails closed, the check is
 * denied with a 503 (reason "store_unavailable"); otherwise every policy is
 * evaluated in the fallback store (in-process, per instance) and the
 * answer says "degraded": true.
 *
 * Lanes: a request that carries a device token (ag_device) which verifies
 * for its user is put in the trusted lane before it is planned, so that
 * its policies, its device_token identifier and its answer ("device":
 * "trusted") follow; any other token is simply untrusted, never refused.
 * Tokens are verified only when one is sent. A successful /report-login
 * answers with a new token, renewing the device's id when the report
 * carried a trusted one.
 *
 * Site-wide shields (ag_shields.h): every check and failed login is also
 * counted in the surge policies of its endpoint and lane; while one of
 * them is raised, a check it judges is answered at once, without the
 * store (a challenge passed goes on to the store as usual).
 *
 * The overview (ag_overview.h): every check answered is counted in this
 * instance's minute by endpoint and outcome, and every policy that
 * tripped by policy, beside the metrics and as cheaply (atomics only).
 *
 * Every function may be called from many threads at once.
 */
#ifndef AG_SERVICE_H
#define AG_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_identity.h"
#include "ag_policy.h"
#include "ag_request.h"
#include "ag_verdict.h"

struct ag_events;
struct ag_deny_cache;
struct ag_metrics;
struct ag_overview;
struct ag_service;
struct ag_shields;
struct ag_store;

/* What a service is made of. Everything is borrowed: it must outlive the
 * service. */
struct ag_service_opts {
    const struct ag_hasher *hasher;
    struct ag_store *store;         /* Redis */
    struct ag_store *fallback;      /* in-process, for fail-open policies */
    struct ag_metrics *metrics;     /* may be NULL */
    struct ag_request_opts request; /* how requests are normalised */
    /* Seconds a device token lives; 0: AG_DEVICE_TTL_DEFAULT_S. */
    uint32_t device_token_ttl_s;
    /* Keys carry their digest as a hash tag (struct ag_digests), as a
     * Redis Cluster store needs. */
    bool tagged_keys;
    struct ag_events *events; /* security events; may be NULL */
    /* The network files (ag_network): each request's address is looked
     * up in them before its plan (the asn and ip_country keys) and the
     * answer says what was seen. NULL, or one without files: no lookup. */
    struct ag_network *network;
    /* The user's usual places (ag_history): days a history is kept (0:
     * none kept or read), the lists (bit i: network list i) whose
     * addresses are anonymising, and the impossible speed (0: the
     * default). */
    uint32_t history_days;
    uint32_t anonymising_lists;
    uint32_t travel_speed_kmh;
    /* The local deny cache (issue 20); NULL: off. Denials Redis gives
     * are remembered in it until Redis could allow again, and later
     * checks they cover are answered from it; a new ruleset clears it,
     * and a reset or a successful login invalidates the keys it clears,
     * here and (PUBLISH on AG_DENY_CACHE_CHANNEL) on every instance. */
    struct ag_deny_cache *deny_cache;
    /* How often the site-wide shields are stepped (ag_shields.h), in ms;
     * 0: no sync thread (tests step them with ag_shields_sync). */
    unsigned shield_sync_ms;
    /* The shields' wall clock, in ms (ag_shields_opts); NULL: the real
     * one. Tests pass their own. */
    uint64_t (*shield_clock_ms)(void *ctx);
    void *shield_clock_ctx;
};

/* A new service with no ruleset (checks are unavailable until one is set).
 * Returns AG_OK, or AG_ENOMEM. Free with ag_service_free once no thread
 * uses it. */
int ag_service_new(const struct ag_service_opts *opts, struct ag_service **out);
/* Drops the ruleset and every pending reset; the borrowed parts stay the
 * caller's. NULL is allowed. */
void ag_service_free(struct ag_service *s);

/* Room for ag_service_net_missing's sentence. */
#define AG_SERVICE_NET_WHY 256
/* Does p need a network file this instance has not loaded? True, with a
 * sentence for people in why (cap bytes) naming the flag that loads it;
 * false for a policy that needs none, or a disabled one. The service
 * logs it once when a set brings such a policy, and the admin API warns
 * with it when an edit writes one. */
bool ag_service_net_missing(const struct ag_service *s,
                            const struct ag_policy *p, char *why, size_t cap);

/* Publishes set as the active one; takes over the caller's reference. */
void ag_service_set_ruleset(struct ag_service *s, struct ag_ruleset *set);
/* A new reference to the active set (NULL if none); unref when done. */
struct ag_ruleset *ag_service_ruleset(struct ag_service *s);
/* The site-wide shields of the active set (ag_shields.h), which the
 * service owns: for the admin API and tests. */
struct ag_shields *ag_service_shields(struct ag_service *s);
/* The operator's overview of the last hour on this instance
 * (ag_overview.h), which the service owns and its checks and shields
 * feed: for the admin API and tests. */
struct ag_overview *ag_service_overview(struct ag_service *s);

/* How a check that waits for the store parks its caller. suspend (NULL:
 * none) is called on the calling thread before the store call starts;
 * resume exactly once afterwards, from any thread (a check loop's own
 * Redis lane, a store thread, or the calling thread itself before
 * ag_service_check_begin returns), when the answer is ready for
 * ag_service_check_finish; never after ag_service_check_abandon. */
struct ag_check_waiter {
    void (*suspend)(void *arg);
    void (*resume)(void *arg);
    void *arg;
};

/* A check in progress (opaque). */
struct ag_check;

/* Starts a check of endpoint with body. Returns AG_OK when v already
 * holds the verdict (a refusal, a list match, a cached denial, no policy
 * of the store's; the waiter is not used), or AG_EPENDING: *out is the
 * check, the waiter
 * was suspended and will be resumed once; then call
 * ag_service_check_finish (or, if the client went away,
 * ag_service_check_abandon). Another error (AG_ENOMEM) means no verdict
 * could be reached and v holds nothing to release. Release v
 * (ag_verdict_release) once it is rendered.
 *
 * Signal policies (ag_limiter_plan_signals) are judged here, never by the
 * store: each that the body's signals trip is added to the decision as
 * any policy's denial, so deny still beats challenge whoever asks; a
 * check one of them denies is sent to the store charging nothing (a
 * denied check records nothing), to learn whether the store's policies
 * deny it too. */
int ag_service_check_begin(struct ag_service *s, enum ag_endpoint endpoint,
                           const char *body, size_t len,
                           const struct ag_check_waiter *w,
                           struct ag_check **out, struct ag_verdict *v);
/* Decides a resumed check into v (a decision, or the store down while a
 * policy fails closed), which takes the check over: release v once it is
 * rendered, which frees the check. Returns AG_OK. */
int ag_service_check_finish(struct ag_check *c, struct ag_verdict *v);
/* Gives up a check whose client went away without its answer, resumed or
 * not: the waiter is not resumed after this returns, and the check is
 * freed now or when the store answers; what the store recorded stays
 * recorded. */
void ag_service_check_abandon(struct ag_check *c);

/* Records a login outcome (/report-login): a failure charges the
 * failure-counting login policies of its lane; a success clears those of
 * its lane keyed on both user and ip, and, when the body says
 * password_breached, raises breached_password_login (the user's digest,
 * the lane) and counts it. v is AG_VERDICT_TOKEN (a device
 * token for its user) for a success, _RECORDED for a failure, _REFUSED
 * or _UNAVAILABLE. Returns AG_OK; release v. Waits for the store. */
int ag_service_report_login(struct ag_service *s, const char *body, size_t len,
                            struct ag_verdict *v);

/* Records an OTP outcome (/report-otp): a code verified counts in the
 * conversion policies of its lane (their verified share); one that
 * expired unverified ("verified": false) changes nothing, since a send
 * already counted. v is AG_VERDICT_RECORDED, _REFUSED (naming the field)
 * or _UNAVAILABLE. Returns AG_OK; release v. Waits for the store. */
int ag_service_report_otp(struct ag_service *s, const char *body, size_t len,
                          struct ag_verdict *v);

/* The OTP conversion figures (ag_otp_stats_report) of the last window_s
 * seconds by country or phone_prefix: AG_OK and *out (the caller decrefs
 * it), or AG_ESTORE while Redis cannot answer. */
int ag_service_conversion(struct ag_service *s, int by, uint32_t window_s,
                          json_t **out);

/* Clears policy p's counters and block for the identifiers in body (the
 * support desk's unlock), in the store and in the fallback, so that a
 * reset during an outage also frees the user from the fallback's limits.
 * key (AG_STORE_KEY_MAX bytes) receives the cleared key, hashed. Returns
 * AG_OK when both are cleared; AG_EUNKNOWN when the store was sent the
 * clear and never answered (the fallback is cleared; the store's is not
 * sent again); AG_EPENDING when the store could not be asked: the
 * fallback is cleared and this instance tries the store again before each
 * check, report or ready probe it sends it, until the store takes it;
 * AG_ETOOBIG when too many resets already wait for the store (nothing
 * cleared); AG_EINVAL (err names the field) when body lacks what p's key
 * needs (a device_token key needs a live token of the body's user), or p
 * is a signal policy, which keeps nothing (err names "policy"). */
#define AG_SERVICE_PENDING_RESETS 256
int ag_service_reset(struct ag_service *s, const struct ag_policy *p,
                     const char *body, size_t len, char *key,
                     struct ag_error *err);

/* The keys an inspect read (hashed, "ag:<policy>:<digest>"), for its
 * audit row: never an identifier. */
struct ag_inspect_keys {
    size_t n;
    char key[AG_PLAN_OPS][AG_STORE_KEY_MAX];
};

/* The user's usual places (issue 40) for operators. The body names a
 * login's user ("user"; anything else of a login's is ignored). VIEW:
 * what inspect shows (the countries and networks remembered, each with
 * the day last seen, and the last success's time and country, not its
 * place); EXPORT: everything kept, the coarse place too (a data-subject
 * access request); FORGET: the history deleted (erasure), *out
 * {"forgotten": whether there was one}. *out is JSON null when there is
 * no history; the caller owns it. digest receives the user's keyed
 * digest (AG_DIGEST_HEX + 1 bytes), for the audit. AG_EINVAL (err names
 * the field), AG_ESTORE while Redis does not answer, AG_ENOMEM; for VIEW
 * AG_ENOTFOUND where no history is kept (--history-days 0, no network
 * files, or a body without the address they need). */
enum ag_history_op { AG_HISTORY_VIEW, AG_HISTORY_EXPORT, AG_HISTORY_FORGET };
int ag_service_history(struct ag_service *s, const char *body, size_t len,
                       enum ag_history_op op, json_t **out, char *digest,
                       struct ag_error *err);

/* The support desk's "why can't this customer log in?": what a check of
 * endpoint with body would be answered now, from the store's state, with
 * nothing charged, blocked or written (an AG_PLAN_PEEK). body is parsed
 * and laned exactly as a check's; v is _REFUSED naming the field,
 * _UNAVAILABLE (no policies loaded; too many apply; the fallback out of
 * memory), or an inspected (v->inspected) _DECIDED of the peek plan or
 * _LISTED of the entry that settles it (rendered as the check's body
 * with "inspected": true: ag_http_response_inspect). While the store
 * cannot answer the fallback is peeked (v->degraded; fail-closed
 * policies are then unknown). keys receives the plan's keys. Metrics and
 * logs count no check. Returns AG_OK, or AG_ENOMEM (v holds nothing to
 * release); release v. Waits for the store. */
int ag_service_inspect(struct ag_service *s, enum ag_endpoint endpoint,
                       const char *body, size_t len,
                       struct ag_inspect_keys *keys, struct ag_verdict *v);

/* How many checks wait for the store, their waiters not yet resumed. A
 * waiter (an HTTP connection) must outlive its check's wait: before the
 * HTTP layer stops it waits for this to reach 0, which the store's
 * timeouts bound. */
size_t ag_service_waiting(struct ag_service *s);

/* The security events the service raises (its opts' events, may be
 * NULL), for the admin API's. */
struct ag_events *ag_service_events(struct ag_service *s);

/* Ready: a ruleset loaded and the store answering. */
bool ag_service_ready(struct ag_service *s);

#endif
