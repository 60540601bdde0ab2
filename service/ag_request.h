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

#include "ag_identity.h"
#include "ag_policy.h"

#define AG_BODY_MAX (64 * 1024) /* larger bodies are a 413 */

struct ag_request {
    enum ag_endpoint endpoint;
    unsigned have; /* bit (1u << enum ag_key_kind) per identifier present */
    char user[AG_USER_MAX + 1];
    char device[AG_USER_MAX + 1];
    char phone[AG_PHONE_MAX + 1];
    struct ag_ip ip;
};

/* Parses body for endpoint. Login needs "user" and "ip" ("device"
 * optional); otp needs "phone" and "ip" ("user" optional). On refusal
 * returns AG_EINVAL with a message in err naming the field. */
int ag_request_parse(enum ag_endpoint endpoint, const char *body, size_t len,
                     struct ag_request *out, char *err, size_t errsz);

/* The normalised text of one identifier, or NULL if the request lacks it.
 * Valid as long as req is. */
const char *ag_request_value(const struct ag_request *req,
                             enum ag_key_kind kind);

#endif
