/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Security events: a lockout began, a block escalated, an admin reset a
 * key, changed a policy or a list, the Redis circuit breaker opened or
 * closed, the OTP conversion algorithm blocked a number range, a password
 * was sprayed across many users, a site-wide shield was raised or
 * lowered, a user came back through the application's account recovery,
 * a login succeeded with a breached password. Each event
 * is one JSON object (ag_event_json), appended to a capped Redis Stream
 * (AG_EVENTS_STREAM, "XADD ... MAXLEN ~ max_len") and pushed to the
 * webhook receivers (ag_webhook.h), which send it as it is or render it
 * (as an OCSF event: ag_ocsf.h); GET /admin/events
 * pages through the stream (ag_events_read), which always holds our JSON.
 *
 * An event names no identifier: a key is its keyed digest, the one in the
 * policy's Redis key. Nothing here waits for Redis on a check's path:
 * the lockout marker and the append are sent without waiting.
 *
 * "Once per lockout" across instances: a denial by an enforcing policy
 * (deny or challenge) sends "SET <its state key>:e 1 NX PX <retry_after>"
 * (the marker shares the state key's slot, hash tag included), and only
 * the instance whose SET answers OK raises the event; each instance asks
 * once per AG_EVENTS_ASKED_MS per key at most, however many denials.
 * The marker lives as long as the denial's retry_after; a spray's at
 * least its policy's window, since a spray policy without block_s under a
 * sustained spray denies in short spells, each ending as the oldest user
 * of its set ages out and the next sprayed one fills the place: one spray
 * is one event a window, not one per spell.
 * While Redis cannot answer, a small table in this instance stands in
 * (AG_EVENTS_LOCAL_MARKS markers): the lockout is then once per instance.
 * An append Redis cannot take (an error answer, a timeout, the breaker
 * open) waits in a bounded backlog (AG_EVENTS_BACKLOG, oldest dropped
 * first), and later events wait behind it. This module's own retry thread
 * sends it, in order, one XADD at a time, after a backoff
 * (ag_events_retry_ms) that restarts when the breaker closes; a read of
 * the stream sends it first, and a detach tries once more. A failed
 * append is logged with Redis's answer, one line per
 * AG_EVENTS_LOG_EVERY_MS at most. An append that timed out may have
 * reached Redis and is sent again: the stream may then hold an event
 * twice, with one id (dedupe on it, as for the webhooks). The webhooks
 * get every event at once either way.
 *
 * Thread-safety: every function from any thread, once ag_events_attach
 * has run; callbacks arrive on store threads, retries on the retry
 * thread, which ag_events_new starts and ag_events_free joins.
 */
#ifndef AG_EVENTS_H
#define AG_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_fleet_ids.h"
#include "ag_identity.h"
#include "ag_limiter.h"
#include "ag_policy.h"

/* The stream's key; the empty policy name keeps it apart from every
 * policy's "ag:<policy>:..." key (as AG_FP_KEY_PREFIX). */
#define AG_EVENTS_STREAM "ag::events"
#define AG_EVENTS_MAX_LEN_DEFAULT 10000 /* stream entries kept, about */
#define AG_EVENTS_BACKLOG 256           /* appends waiting for Redis at most */
#define AG_EVENTS_LOCAL_MARKS 4096      /* markers kept while Redis is down */
/* A key's marker is asked of Redis once in this long at most, per
 * instance: no marker lives shorter. */
#define AG_EVENTS_ASKED_MS 1000
/* The backlog's retries: the first after this long, doubling with each
 * failure in a row, at most the second. */
#define AG_EVENTS_RETRY_MIN_MS 200
#define AG_EVENTS_RETRY_MAX_MS 5000
/* One "events_append_failed" line in this long at most. */
#define AG_EVENTS_LOG_EVERY_MS 10000
#define AG_EVENTS_PAGE_MAX 1000 /* events in one GET /admin/events */
#define AG_EVENTS_PAGE_DEFAULT 100
/* "<16 hex digits of the instance>-<sequence>" and its NUL. */
#define AG_EVENT_ID_MAX 40

enum ag_event_type {
    AG_EV_LOCKOUT,          /* a policy began denying a key */
    AG_EV_BLOCK_ESCALATED,  /* a block with growth began above level 1 */
    AG_EV_CONVERSION_BLOCK, /* a conversion policy began denying a key */
    AG_EV_PASSWORD_SPRAY,   /* a spray policy began denying a fingerprint */
    AG_EV_RESET,            /* POST /admin/reset */
    AG_EV_POLICY_CHANGED,   /* PUT or DELETE /admin/policies/{name} */
    AG_EV_LIST_CHANGED,     /* POST or DELETE /admin/lists/... */
    AG_EV_BREAKER_OPEN,     /* this instance stopped using Redis */
    AG_EV_BREAKER_CLOSED,   /* and uses it again */
    AG_EV_SHIELD_RAISED,    /* a site-wide shield went up */
    AG_EV_SHIELD_LOWERED,   /* and came down */
    AG_EV_RECOVERED,        /* a user came back by account recovery */
    /* A login succeeded with a password the caller found breached
     * (/report-login "password_breached": true): the application should
     * have its user change it. */
    AG_EV_BREACHED_PASSWORD_LOGIN,
    /* A shield raised by its counts has held for AG_SURGE_LONG_HOLDS
     * holds: longer than a normal wave, worth a look. */
    AG_EV_SHIELD_LONG,
    /* The fleet (ag_fleet.h): this instance has been behind the fleet
     * for more than AG_FLEET_LAG_EVENT_S; a record in Redis did not open
     * (forged, replayed, damaged) and was refused; this instance's set
     * differs from its fleet's, or its history forked from the fleet's;
     * it holds at a record it cannot apply (a newer schema). */
    AG_EV_FLEET_LAGGING,
    AG_EV_FLEET_RECORD_REFUSED,
    AG_EV_FLEET_DIVERGED,
    AG_EV_FLEET_HELD,
    /* A login succeeded from a country not among its user's usual ones,
     * or after an impossible journey from the last success (issue 40):
     * the application may tell its user of a new sign-in. */
    AG_EV_NEW_COUNTRY_LOGIN,
    AG_EV_IMPOSSIBLE_TRAVEL,
    AG_EV_COUNT
};

/* "lockout", "block_escalated", ...: the event's "type". */
const char *ag_event_type_name(enum ag_event_type t);

/* A shield's figures when it was raised or lowered (ag_shields.h): what
 * shield_raised and shield_lowered carry. Counts of the whole site, no
 * identifier. */
struct ag_event_shield {
    uint64_t rate;           /* the last full window's count */
    uint64_t current;        /* the current window's, so far */
    uint64_t baseline_milli; /* the typical count per window, x 1000 */
    uint64_t threshold;      /* max(limit, factor x baseline) */
    /* Unix ms: since it was raised; until it holds at least (raised), or
     * when it came down (lowered). */
    uint64_t since_ms, until_ms;
    bool local;       /* this instance's own counts: Redis did not answer */
    bool by_operator; /* the operator's switch, not the counts */
    /* A raise this instance made from its own counts while Redis did not
     * answer, taken back to the shared state once it did. */
    bool resumed;
};

/* The fleet's figures (ag_fleet.h): what its events carry. */
struct ag_event_fleet {
    int64_t version;  /* the record this instance applied last */
    int64_t head;     /* the fleet's newest */
    int64_t record;   /* the record refused or held at; 0 */
    uint64_t lag_s;   /* how long behind */
    char reason[128]; /* why, in a sentence */
    char instance[AG_FLEET_INSTANCE_HEX + 1]; /* this instance's id */
};

/* new_country_login and impossible_travel: the last success's country
 * and this one's, and for a journey its distance (whole km, the radii
 * not taken off) and the speed it needed (km/h; 0: no time at all). No
 * place finer than a country. */
struct ag_event_travel {
    char from[3];
    char to[3];
    uint32_t km;
    uint32_t kmh;
    bool instant; /* no time between: an infinite speed */
};

/* One event. What does not apply is left empty (""), 0 or -1, and is
 * left out of its JSON. */
/* What the network files saw of the causing request's address
 * (ag_request_net): its country, AS number and the lists holding it
 * (names joined by ","; those that fit), each "" when unknown. */
#define AG_EVENT_LISTS_TEXT 200
struct ag_event_network {
    char country[3];
    char asn[11];
    char lists[AG_EVENT_LISTS_TEXT];
};

struct ag_event {
    enum ag_event_type type;
    char policy[AG_POLICY_NAME_MAX + 1];
    int endpoint;                /* enum ag_endpoint, or -1 */
    char key[AG_DIGEST_HEX + 1]; /* the key's digest */
    uint32_t retry_after_s;      /* until the key is allowed again */
    uint32_t level;              /* the block's level (1: the first) */
    char action[12];             /* lockouts: "deny" or "challenge" */
    char list[8];                /* list_changed: "allow" or "deny" */
    char change[8];              /* "put", "delete" or "add" */
    char lane[12]; /* breached_password_login: "trusted", "untrusted" */
    int64_t entry; /* list_changed: the entry's id, or 0 */
    char ref[AG_REF_MAX + 1];      /* the causing request's ref (ag_request) */
    struct ag_event_network net;   /* the causing request's network */
    struct ag_event_shield shield; /* shield_raised, _lowered and _long */
    struct ag_event_fleet fleet;   /* the fleet_* events */
    struct ag_event_travel travel; /* new_country_login, impossible_travel */
    /* Set by ag_events_raise: */
    char id[AG_EVENT_ID_MAX]; /* unique across instances: dedupe on it */
    uint64_t time_ms;         /* Unix time in milliseconds */
};

/* An event with nothing set but its type. */
void ag_event_init(struct ag_event *e, enum ag_event_type type);
/* Sets e's network from what a lookup saw (n->looked; nothing
 * otherwise). */
void ag_event_network(struct ag_event *e, const struct ag_request_net *n);

/* The event as compact JSON: {"id", "type", "time" (RFC 3339, UTC, ms),
 * then what applies of "policy", "endpoint", "key", "action",
 * "retry_after", "level", "list", "change", "entry", "lane", "ref",
 * "network" ({"country", "asn" (a number), "lists"}: what is known)}, and for a
 * shield's events its figures: "rate", "current", "baseline" (a number),
 * "threshold", "since", "until" (RFC 3339), "source" ("shared" or
 * "local"), "operator" (true or false) and, only when true, "resumed".
 * Caller frees with free();
 * NULL when out of memory. */
char *ag_event_json(const struct ag_event *e);

/* The block level a policy's level key holds ("<n> <end_us>", its n
 * blocks in a row: lua/common.lua), or 0 if text is not one. */
uint32_t ag_event_level_parse(const char *text, size_t len);

/* Is p a password spray policy: a distinct one keyed on password_fp,
 * which counts the users a fingerprint failed for? Its denials raise
 * password_spray instead of lockout. */
bool ag_event_spray_policy(const struct ag_policy *p);

/* The digest in a policy's store key ("ag:<policy>:<digest>" or
 * "ag:<policy>:{<digest>}") into out (AG_DIGEST_HEX + 1 bytes); "" if the
 * key has none. */
void ag_event_key_digest(const char *store_key, char *out);

struct ag_metrics;
struct ag_store;
struct ag_webhooks;
struct ag_events;

struct ag_events_opts {
    struct ag_metrics *metrics; /* borrowed; may be NULL */
    struct ag_webhooks *hooks;  /* borrowed; NULL: no webhooks */
    unsigned max_len;           /* the stream's cap; 0: the default */
};

/* The wait before the backlog's next try after failures appends failed in
 * a row (1 or more): AG_EVENTS_RETRY_MIN_MS, doubling, at most
 * AG_EVENTS_RETRY_MAX_MS. */
uint64_t ag_events_retry_ms(unsigned failures);

/* A new event source, not yet attached to a store (events are then only
 * pushed to the webhooks). AG_OK and *out, or AG_ENOMEM. Free with
 * ag_events_free. */
int ag_events_new(const struct ag_events_opts *o, struct ag_events **out);
/* Sends markers and appends to store (borrowed) from now on; NULL
 * detaches it, after one last try to send the backlog (one Redis timeout
 * at most), and returns once no call into the old store is running, so
 * that the store may then be destroyed. */
void ag_events_attach(struct ag_events *ev, struct ag_store *store);
/* Frees ev (detached first); what waits in the backlog is lost. NULL is
 * allowed. */
void ag_events_free(struct ag_events *ev);

/* Stamps e (id, time), counts it, appends it and pushes it. NULL ev does
 * nothing. */
void ag_events_raise(struct ag_events *ev, struct ag_event *e);

/* A check of plan was denied with results res (degraded: the store did
 * not answer, the fallback did). Each enforcing policy that denied (a
 * challenge one too: it turns the key away until a challenge is passed)
 * raises lockout (conversion_block for a conversion policy,
 * password_spray for a spray policy: ag_event_spray_policy), and
 * block_escalated beside it when its block's level is above 1, once per
 * lockout. A signal policy raises none: it holds nothing (the next check
 * without its signal passes), so no lockout begins, and a marker for it
 * would cost Redis a call the signal never makes. Returns without
 * waiting. */
void ag_events_denied(struct ag_events *ev, const struct ag_plan *plan,
                      const struct ag_limit_result *res, bool degraded);
/* The keys of plan were cleared (a reset, a successful login): their
 * markers go, so that their next lockout is an event again. */
void ag_events_cleared(struct ag_events *ev, const struct ag_plan *plan);
/* The store's breaker callback (ag_store_redis_opts): arg is the
 * struct ag_events. */
void ag_events_breaker(void *arg, bool open);

/* A page of the stream, once the backlog was sent (if Redis takes it):
 * up to limit events after stream id after (NULL: from the start) as
 * {"events": [<event> + "stream_id"], "next_after": <the last entry's
 * stream id, or after>}. Entries that hold no event are paged past, and
 * the read goes on past them (up to the stream's cap), so that a page is
 * empty only at the end of the stream; after the largest stream id is
 * such an end. Waits for Redis. AG_OK and *out (the caller decrefs it);
 * AG_EINVAL (err names "after" or "limit"); AG_ESTORE while Redis cannot
 * answer or refuses (err says which, with Redis's words); AG_ENOMEM. */
int ag_events_read(struct ag_events *ev, const char *after, long long limit,
                   json_t **out, struct ag_error *err);

#endif
