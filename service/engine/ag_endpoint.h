/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The endpoints and what their bodies carry: one table that the request
 * parser reads to know which identifiers to read (and which are required),
 * and that the policy validator reads to know which key kinds a policy of
 * an endpoint may be made of. Nothing else restates it.
 *
 * Read-only data; thread-safe.
 */
#ifndef AG_ENDPOINT_H
#define AG_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_identity.h"

/* The endpoints a policy can apply to: /check-login (and /report-login),
 * /check-otp, /check-otp-verify. */
enum ag_endpoint { AG_EP_LOGIN, AG_EP_OTP, AG_EP_OTP_VERIFY, AG_EP_COUNT };

#define AG_ENDPOINT_FIELDS_MAX 4

/* One identifier a body of the endpoint may carry. */
struct ag_endpoint_field {
    enum ag_key_kind kind; /* its JSON name is ag_key_kind_name(kind) */
    bool required;
};

struct ag_endpoint_def {
    const char *name; /* "login": the policy record's "endpoint" */
    /* The identifiers a body carries, in the order refusals are reported. */
    struct ag_endpoint_field fields[AG_ENDPOINT_FIELDS_MAX];
    size_t nfields;
    enum ag_key_kind subject; /* what a "distinct" policy counts */
};

const struct ag_endpoint_def *ag_endpoint_def(enum ag_endpoint e);
const char *ag_endpoint_name(enum ag_endpoint e);
/* What a "distinct" policy counts on an endpoint: users for login, phones
 * for otp and otp_verify. */
enum ag_key_kind ag_endpoint_subject(enum ag_endpoint e);
/* The key kinds a request to e can supply (bit 1u << kind each): its
 * fields, what is derived from them (ip_prefix from ip, phone_prefix
 * from phone), device_token, which every endpoint accepts, and site,
 * which every request has. */
unsigned ag_endpoint_keys(enum ag_endpoint e);
/* The identifier a key kind is read from: ip for ip_prefix, phone for
 * phone_prefix, the kind itself otherwise. */
enum ag_key_kind ag_key_kind_source(enum ag_key_kind k);
/* Why a login failed, as a failure report says (/report-login "reason"):
 * a wrong password (the default), an account that does not exist (which
 * stuffing lists are full of and real users rarely are), or a right
 * password whose second factor failed. */
enum ag_reason {
    AG_REASON_BAD_PASSWORD,
    AG_REASON_UNKNOWN_USER,
    AG_REASON_SECOND_FACTOR_FAILED,
    AG_REASON_COUNT
};
/* The reason's name in the contract ("bad_password"). */
const char *ag_reason_name(enum ag_reason r);
/* Returns the reason named s, or -1. */
int ag_reason_parse(const char *s);

/* How a login succeeded, as a success report says (/report-login
 * "method"): a password checked (the default), or the application's own
 * account recovery (an e-mailed link, say), which is how a user without a
 * trusted device gets past the consecutive cap. Both clear alike; a
 * recovery is also a security event. */
enum ag_method { AG_METHOD_PASSWORD, AG_METHOD_RECOVERY, AG_METHOD_COUNT };
/* The method's name in the contract ("recovery"). */
const char *ag_method_name(enum ag_method m);
/* Returns the method named s, or -1. */
int ag_method_parse(const char *s);
/* A signal: a fact about an attempt that a signal policy (algorithm
 * "signal") trips on. abuseguard judges nothing of the caller's own: it
 * only acts on them. Two kinds:
 *   - sent: the caller found it out by itself and sends it as a boolean
 *     field of its body, named as the signal (true: the attempt carries
 *     it). password_breached (login checks and reports): the caller's own
 *     range lookup (GET /range, or HIBP's) found the password tried in a
 *     breach corpus.
 *   - computed: the service finds it out from the request's address and
 *     its network files (ag_request_net), never from a body field of
 *     that name. ip_listed: one of the policy's "lists" (--ip-list names)
 *     holds the address; ip_country: the address's country (--geoip-file)
 *     is one of the policy's "countries".
 *   - computed from the user's history (ag_history, login checks only,
 *     once the store has read it): new_country, new_asn, no_history,
 *     impossible_travel.
 */
enum ag_signal {
    AG_SIGNAL_PASSWORD_BREACHED,
    AG_SIGNAL_IP_LISTED,
    AG_SIGNAL_IP_COUNTRY,
    AG_SIGNAL_NEW_COUNTRY,
    AG_SIGNAL_NEW_ASN,
    AG_SIGNAL_NO_HISTORY,
    AG_SIGNAL_IMPOSSIBLE_TRAVEL,
    AG_SIGNAL_COUNT
};
/* The signal's name: a signal policy's "signal", and a sent one's body
 * field. */
const char *ag_signal_name(enum ag_signal s);
/* Returns the signal named s, or -1. */
int ag_signal_parse(const char *s);
/* Can a policy of endpoint e use the signal: a sent one on the endpoint
 * whose bodies carry it, a computed one on every endpoint that knows the
 * address. */
bool ag_signal_on(enum ag_signal s, enum ag_endpoint e);
/* Does the service compute it (true) or the caller send it (false)? */
bool ag_signal_computed(enum ag_signal s);
/* Is s known only once the user's history is read (new_country,
 * new_asn, no_history, impossible_travel)? */
bool ag_signal_history(enum ag_signal s);

/* Returns the endpoint named s, or -1. */
int ag_endpoint_parse(const char *s);

#endif
