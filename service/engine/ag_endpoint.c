/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_endpoint.h"

#include <string.h>

static const struct ag_endpoint_def defs[AG_EP_COUNT] = {
    [AG_EP_LOGIN] = {"login",
                     {{AG_KEY_USER, true},
                      {AG_KEY_IP, true},
                      {AG_KEY_DEVICE, false},
                      {AG_KEY_PASSWORD_FP, false}},
                     4,
                     AG_KEY_USER},
    [AG_EP_OTP] = {"otp",
                   {{AG_KEY_PHONE, true},
                    {AG_KEY_IP, true},
                    {AG_KEY_USER, false}},
                   3,
                   AG_KEY_PHONE},
    [AG_EP_OTP_VERIFY] = {"otp_verify",
                          {{AG_KEY_PHONE, true},
                           {AG_KEY_IP, true},
                           {AG_KEY_USER, false}},
                          3,
                          AG_KEY_PHONE},
};

const struct ag_endpoint_def *ag_endpoint_def(enum ag_endpoint e)
{
    return &defs[e];
}

const char *ag_endpoint_name(enum ag_endpoint e)
{
    return defs[e].name;
}

enum ag_key_kind ag_endpoint_subject(enum ag_endpoint e)
{
    return defs[e].subject;
}

enum ag_key_kind ag_key_kind_source(enum ag_key_kind k)
{
    if (k == AG_KEY_IP_PREFIX || k == AG_KEY_ASN || k == AG_KEY_IP_COUNTRY)
        return AG_KEY_IP;
    if (k == AG_KEY_PHONE_PREFIX || k == AG_KEY_COUNTRY)
        return AG_KEY_PHONE;
    return k;
}

unsigned ag_endpoint_keys(enum ag_endpoint e)
{
    unsigned sent = 0, keys = 0;
    for (size_t i = 0; i < defs[e].nfields; i++)
        sent |= 1u << defs[e].fields[i].kind;
    for (int k = 0; k < AG_KEY_COUNT; k++)
        if (sent & 1u << ag_key_kind_source((enum ag_key_kind)k))
            keys |= 1u << k;
    /* Every endpoint takes a device token, which the service verifies,
     * and is a site of its own. */
    return keys | 1u << AG_KEY_DEVICE_TOKEN | 1u << AG_KEY_SITE;
}

int ag_endpoint_parse(const char *s)
{
    for (int e = 0; e < AG_EP_COUNT; e++)
        if (strcmp(defs[e].name, s) == 0)
            return e;
    return -1;
}

static const char *const reason_names[AG_REASON_COUNT] = {
    [AG_REASON_BAD_PASSWORD] = "bad_password",
    [AG_REASON_UNKNOWN_USER] = "unknown_user",
    [AG_REASON_SECOND_FACTOR_FAILED] = "second_factor_failed",
};

const char *ag_reason_name(enum ag_reason r)
{
    return reason_names[r];
}

int ag_reason_parse(const char *s)
{
    for (int r = 0; r < AG_REASON_COUNT; r++)
        if (strcmp(reason_names[r], s) == 0)
            return r;
    return -1;
}

static const char *const method_names[AG_METHOD_COUNT] = {
    [AG_METHOD_PASSWORD] = "password",
    [AG_METHOD_RECOVERY] = "recovery",
};

const char *ag_method_name(enum ag_method m)
{
    return method_names[m];
}

int ag_method_parse(const char *s)
{
    for (int m = 0; m < AG_METHOD_COUNT; m++)
        if (strcmp(method_names[m], s) == 0)
            return m;
    return -1;
}
/* The signals: the endpoints (bit 1u << enum ag_endpoint each) whose
 * policies may use each, and whether the service computes it. */
#define EP(e) (1u << (e))
static const struct {
    const char *name;
    unsigned endpoints;
    bool computed;
} signals[AG_SIGNAL_COUNT] = {
    [AG_SIGNAL_PASSWORD_BREACHED] = {"password_breached", EP(AG_EP_LOGIN),
                                     false},
    [AG_SIGNAL_IP_LISTED] = {"ip_listed",
                             EP(AG_EP_LOGIN) | EP(AG_EP_OTP) |
                                 EP(AG_EP_OTP_VERIFY),
                             true},
    [AG_SIGNAL_IP_COUNTRY] = {"ip_country",
                              EP(AG_EP_LOGIN) | EP(AG_EP_OTP) |
                                  EP(AG_EP_OTP_VERIFY),
                              true},
    [AG_SIGNAL_NEW_COUNTRY] = {"new_country", EP(AG_EP_LOGIN), true},
    [AG_SIGNAL_NEW_ASN] = {"new_asn", EP(AG_EP_LOGIN), true},
    [AG_SIGNAL_NO_HISTORY] = {"no_history", EP(AG_EP_LOGIN), true},
    [AG_SIGNAL_IMPOSSIBLE_TRAVEL] = {"impossible_travel", EP(AG_EP_LOGIN),
                                     true},
};

const char *ag_signal_name(enum ag_signal s)
{
    return signals[s].name;
}

int ag_signal_parse(const char *s)
{
    for (int i = 0; i < AG_SIGNAL_COUNT; i++)
        if (strcmp(signals[i].name, s) == 0)
            return i;
    return -1;
}

bool ag_signal_on(enum ag_signal s, enum ag_endpoint e)
{
    return (signals[s].endpoints & EP(e)) != 0;
}

bool ag_signal_history(enum ag_signal s)
{
    return s == AG_SIGNAL_NEW_COUNTRY || s == AG_SIGNAL_NEW_ASN ||
           s == AG_SIGNAL_NO_HISTORY || s == AG_SIGNAL_IMPOSSIBLE_TRAVEL;
}

bool ag_signal_computed(enum ag_signal s)
{
    return signals[s].computed;
}
