/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A verdict: what a check, a report or an inspect came to, as data. The
 * service (ag_service) decides it and knows no wire format; the layer
 * that answers renders it (HTTP: ag_http_verdict_render), so the check
 * path sits below HTTP, as nginx's limit_req handler returns a decision
 * (NGX_HTTP_SERVICE_UNAVAILABLE, NGX_DECLINED) and leaves the answer's
 * bytes to the HTTP core.
 *
 * Each kind says which fields hold it; the others are unset. A verdict
 * whose kind is AG_VERDICT_DECIDED, _LISTED or _STORE_DOWN borrows its
 * plan, results, list entry or closed policy from the check that decided
 * it, which also holds the ruleset they point into: it stays valid until
 * ag_verdict_release, which gives that storage back. Release every
 * verdict the service filled, whatever its kind, exactly once.
 *
 * A verdict is used by one thread at a time; it may be released on
 * another thread than the one that decided it.
 */
#ifndef AG_VERDICT_H
#define AG_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "ag_challenge.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_history.h"
#include "ag_limiter.h"
#include "ag_request.h"

struct ag_network;

struct ag_check;
struct ag_list_entry;

enum ag_verdict_kind {
    /* The body was refused: err names the field at fault (a 400). */
    AG_VERDICT_REFUSED,
    /* It cannot be judged now (no policies loaded, too many apply, the
     * fallback out of memory): why is a static sentence (a 503). */
    AG_VERDICT_UNAVAILABLE,
    /* The policies decided: plan, res (one per plan op) and decision;
     * degraded when res came from the fallback, cached when they are the
     * deny cache's denials. */
    AG_VERDICT_DECIDED,
    /* An allow or deny list entry settled it, before any policy. */
    AG_VERDICT_LISTED,
    /* The store could not answer and closed, an enforcing policy of the
     * check, fails closed: denied without a decision (a 503). */
    AG_VERDICT_STORE_DOWN,
    /* A report was recorded; there is nothing to say (a 204). */
    AG_VERDICT_RECORDED,
    /* A login succeeded: the device token for its user, and its life. */
    AG_VERDICT_TOKEN,
};

/* A login check's risk (issue 40): judged when its user's history was
 * read; signals (bit 1u << enum ag_signal) the risk signals it carried,
 * level their level (ag_risk_level), travel what impossible travel's
 * judgement was (ag_history_travel_name), and risky_fallback when a
 * risky-scoped shield acted as untrusted-scoped, its history unread. */
struct ag_verdict_risk {
    bool wanted; /* a login check the service judges the risk of */
    bool judged;
    unsigned signals;
    enum ag_risk_level level;
    enum ag_history_travel travel;
    bool risky_fallback;
};

struct ag_verdict {
    enum ag_verdict_kind kind;
    /* An inspect's (an AG_PLAN_PEEK plan, nothing charged): DECIDED and
     * LISTED only. */
    bool inspected;
    bool trusted;        /* the lane it was judged in (LISTED, STORE_DOWN) */
    bool degraded;       /* DECIDED: results from the fallback store */
    bool cached;         /* DECIDED: the deny cache's denials only */
    struct ag_error err; /* REFUSED */
    const char *why;     /* UNAVAILABLE; static */
    const struct ag_plan *plan;        /* DECIDED; borrowed */
    const struct ag_limit_result *res; /* DECIDED; borrowed */
    struct ag_decision decision;       /* DECIDED */
    /* DECIDED, a check's denial that asks for a challenge: the nonce to
     * bring back as challenge_passed once it is passed; "" otherwise. */
    char nonce[AG_CHALLENGE_LEN + 1];
    const struct ag_list_entry *entry;   /* LISTED; borrowed */
    const struct ag_limit_op *closed;    /* STORE_DOWN; borrowed */
    char token[AG_DEVICE_TOKEN_LEN + 1]; /* TOKEN */
    uint32_t ttl_s;                      /* TOKEN: seconds it lives */
    /* What the network files saw of the request's address (net.looked:
     * a lookup was made), and the network whose list names its bits
     * index; a check's answer carries it as "network". */
    struct ag_request_net net;
    const struct ag_network *network;
    struct ag_verdict_risk risk; /* a login check's */
    /* What the borrowed parts live in; NULL when nothing is borrowed.
     * The service's own: read it through the fields above. */
    struct ag_check *owner;
};

/* Gives back what v borrows (the check that decided it and its ruleset
 * reference). v may then be read only for its kind and its own fields
 * (err, why, token); NULL and a released verdict are allowed. */
void ag_verdict_release(struct ag_verdict *v);

#endif
