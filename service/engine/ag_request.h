/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A check request: the JSON body of POST /check-login or /check-otp turned
 * into normalised, validated identifiers. Any refusal is a client error and
 * its message names the field ("ip is not a valid IPv4 or IPv6 address").
 * Unknown fields are ignored so that clients may send more than this
 * version reads. Pure functions; thread-safe.
 */
#ifndef AG_REQUEST_H
#define AG_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_challenge.h"
#include "ag_country.h"
#include "ag_device.h"
#include "ag_identity.h"
#include "ag_policy.h"
#include "ag_travel.h"

#define AG_BODY_MAX_KIB 64 /* larger bodies are a 413 */
#define AG_BODY_MAX (AG_BODY_MAX_KIB * 1024)
#define AG_DEVICE_TOKEN_TEXT_MAX 512 /* longer "tokens" are no token */
#define AG_PASSWORD_FP_MAX 128       /* bytes of a password fingerprint */
#define AG_REF_MAX 64                /* bytes of a caller's ref */

/* What a check says of a challenge. */
enum ag_pass {
    AG_PASS_NONE,  /* absent or false */
    AG_PASS_TRUE,  /* true: the caller vouches, unproven (a pass if lenient) */
    AG_PASS_NONCE, /* the nonce a challenge answer carried */
};

struct ag_request {
    enum ag_endpoint endpoint;
    unsigned have; /* bit (1u << enum ag_key_kind) per identifier present */
    char user[AG_USER_MAX + 1];
    char device[AG_USER_MAX + 1];
    char phone[AG_PHONE_MAX + 1];
    struct ag_ip ip;                     /* the address as sent */
    char ip_key[AG_IP_PREFIX_MAX];       /* derived: the ip key's network */
    unsigned ip_key_bits;                /* its prefix length */
    char ip_prefix[AG_IP_PREFIX_MAX];    /* derived from ip */
    char phone_prefix[AG_PHONE_MAX + 1]; /* derived from phone */
    char country[AG_COUNTRY_MAX];        /* derived from phone */
    bool success;  /* /report-login only: the login succeeded */
    bool verified; /* /report-otp only: the code sent was verified */
    /* The device token as sent ("" if none, or not one: ag_request never
     * refuses a token, it only drops what cannot be one). */
    char device_token[AG_DEVICE_TOKEN_TEXT_MAX + 1];
    /* Checks: what the caller says of a challenge (challenge_passed):
     * nothing, true (the old form, while --challenge-pass is lenient), or
     * the nonce of the answer that asked for it, as sent. */
    enum ag_pass pass;
    char pass_nonce[AG_CHALLENGE_LEN + 1];
    /* A challenge passed: for AG_PASS_TRUE as soon as parsed, while
     * lenient (strict takes true for nothing); for a nonce, once the
     * service verified it (ag_challenge_verify). Every challenge of the
     * check is waived then. */
    bool challenge_passed;
    /* The lane: set by ag_request_trust once the service verified the
     * token for this user; the parser leaves the request untrusted. */
    bool trusted;
    char device_id[AG_DEVICE_ID_HEX + 1]; /* the token's id, in hex */
    /* The fingerprint of the password tried, as sent (login checks and
     * failure reports; "" if none): the password_fp identifier. */
    char password_fp[AG_PASSWORD_FP_MAX + 1];
    enum ag_reason reason; /* a failure report's; bad_password by default */
    enum ag_method method; /* a report's; password by default */
    /* The signals the body carries (bit 1u << enum ag_signal each), read
     * from checks and login reports of the signal's endpoint. */
    unsigned signals;
    /* The caller's opaque reference for the request (its own user id's
     * hash, say; "" if none), as sent: it only travels back in the events
     * the request causes, so that a backend can tell whose they are
     * without knowing how abuseguard derives its keys. */
    char ref[AG_REF_MAX + 1];
    /* What the service's lookup of ip found (ag_request_network; all
     * empty until then, and without network files): the address's
     * country and autonomous system, and the named IP sets holding it. */
    struct ag_request_net {
        /* The service's files (NULL: none, as without a service); set
         * whether or not a lookup was made. Borrowed. */
        const struct ag_net_avail *avail;
        bool looked;            /* a lookup was made */
        char country[3];        /* ISO 3166-1 alpha-2; "" unknown */
        char asn[11];           /* the AS number in decimal; "" unknown */
        uint32_t lists;         /* bit i: the service's list i holds it */
        uint32_t lists_special; /* ... only in private or CGNAT ranges */
        uint32_t asn_n;         /* asn as a number; 0 unknown */
        /* Where a City database places the address, coarse (ag_travel);
         * for the user's history alone, never logged or answered. */
        bool placed;
        struct ag_place place;
    } net;
};

/* The network files a service has loaded (ag_network), as the engine
 * needs to know them: a policy that needs one it lacks is skipped
 * (ag_limiter_net_missing). Fixed for the life of the service: files are
 * replaced while it runs, never added or dropped. */
/* Lists a lookup can name: the bits of struct ag_request_net's lists. */
#define AG_REQUEST_NET_LISTS 32

struct ag_net_avail {
    bool country; /* a country database (--geoip-file) */
    bool asn;     /* an ASN database (--asn-file) */
    /* The --ip-list names, in the order given: bit i of a lookup's
     * lists is lists[i]. */
    const char *const *lists;
    size_t nlists;
};

/* What a body is for: a check of an endpoint, or a login report. */
enum ag_request_kind { AG_REQ_CHECK, AG_REQ_REPORT, AG_REQ_OTP_REPORT };

/* Each 0 = the default (AG_PHONE_PREFIX_DEFAULT, AG_IPV*_DEFAULT). */
struct ag_request_opts {
    unsigned phone_prefix_digits; /* for phone_prefix */
    unsigned ipv6_ip_prefix;      /* bits of an IPv6 address in its ip key */
    unsigned ipv6_group_prefix;   /* bits of an IPv6 ip_prefix key */
    unsigned ipv4_group_prefix;   /* bits of an IPv4 ip_prefix key */
    /* --challenge-pass strict: only a nonce passes, true passes nothing;
     * lenient (false) takes true as a pass too. */
    bool strict_pass;
};

/* Parses body for endpoint: the identifiers its table in ag_endpoint names
 * (login needs "user" and "ip", "device" optional; otp and otp_verify need
 * "phone" and "ip", "user" optional). opts may be NULL for the defaults.
 * On refusal returns AG_EINVAL and fills err with the field at fault. */
int ag_request_parse(enum ag_endpoint endpoint, const char *body, size_t len,
                     const struct ag_request_opts *opts, struct ag_request *out,
                     struct ag_error *err);
/* Parses the identifiers of endpoint that body holds, all optional, then
 * requires those a key of the kinds in need (a mask of 1u << kind) is made
 * of: for the admin reset of one policy's key. */
int ag_request_parse_for(enum ag_endpoint endpoint, unsigned need,
                         const char *body, size_t len,
                         const struct ag_request_opts *opts,
                         struct ag_request *out, struct ag_error *err);
/* Parses a /report-login body: the login fields, a boolean "success",
 * on a failure only, an optional "reason" (ag_reason), and an optional
 * "method" (ag_method), "recovery" on a success only. A check's body, and
 * a login report's, may carry each signal of its endpoint (ag_signal) as
 * a boolean field of the signal's name; anything else there is refused,
 * naming it. */
int ag_request_parse_report(const char *body, size_t len,
                            const struct ag_request_opts *opts,
                            struct ag_request *out, struct ag_error *err);
/* Parses a /report-otp body: the otp fields (phone, ip; user optional),
 * validated as for /check-otp, and a boolean "verified". */
int ag_request_parse_otp_report(const char *body, size_t len,
                                const struct ag_request_opts *opts,
                                struct ag_request *out, struct ag_error *err);

/* Room for ag_request_net_text's words: each field and every list name
 * (AG_NETWORK_LISTS_MAX of 32 bytes, ag_network.h). */
#define AG_REQUEST_NET_TEXT 1200
/* What n saw, as words for a log line: " country=DE asn=3320
 * lists=tor,hosting", each only if known (the lists only those that hold
 * the address outside the private and CGNAT ranges); "" if nothing.
 * Into out (cap bytes, cut short if it must). No address, city or
 * coordinates. */
void ag_request_net_text(const struct ag_request_net *n, char *out, size_t cap);
/* The names of the lists that hold n's address (outside the private and
 * CGNAT ranges), joined by sep, into out (cap bytes: the names that fit
 * whole); "" for none. */
void ag_request_net_lists(const struct ag_request_net *n, const char *sep,
                          char *out, size_t cap);

/* Puts req in the trusted lane: its device token verified for its user,
 * and id (AG_DEVICE_ID_BYTES) becomes its device_token identifier. */
/* Records what the service's lookup of the request's ip found (country
 * "" and asn 0 when unknown) in the files avail describes: the asn and
 * ip_country identifiers are then present for the policies keyed on
 * them. */
void ag_request_network(struct ag_request *req,
                        const struct ag_net_avail *avail, const char *country,
                        uint32_t asn, uint32_t lists, uint32_t lists_special);

void ag_request_trust(struct ag_request *req, const unsigned char *id);

/* The normalised text of one identifier, or NULL if the request lacks it:
 * for ip, the network of ip_key ("2001:db8:1:2::/64", or an IPv4
 * address). Valid as long as req is. */
const char *ag_request_value(const struct ag_request *req,
                             enum ag_key_kind kind);

#endif
