/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_request.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ag_error.h"

/* parse()'s kind beside enum ag_request_kind (none of whose values it may
 * be): every field optional. */
#define PARSE_ANY (-1)

/* Reads one identifier the endpoint's table (ag_endpoint) names. */
static int read_field(const json_t *root, const struct ag_endpoint_field *f,
                      bool any, struct ag_request *out, struct ag_error *err)
{
    const char *name = ag_key_kind_name(f->kind);
    const json_t *v = json_object_get(root, name);
    if (!v || json_is_null(v)) {
        if (f->required && !any)
            return ag_error_refuse(err, name, "is required");
        return AG_OK;
    }
    if (!json_is_string(v))
        return ag_error_refuse(err, name, "must be a string");
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    int rc = AG_EINVAL;
    switch (f->kind) {
    case AG_KEY_USER:
        rc = ag_identity_user(s, len, out->user, name, err);
        break;
    case AG_KEY_DEVICE:
        rc = ag_identity_device(s, len, out->device, name, err);
        break;
    case AG_KEY_PHONE:
        rc = ag_identity_phone(s, len, out->phone, name, err);
        /* A number under no assigned calling code reaches no one: an SMS
         * sender has nothing to send it, and the country key nothing to
         * count it under. */
        if (rc == AG_OK && ag_country_code(out->phone, out->country) != AG_OK)
            rc = ag_error_refuse(err, name,
                                 "has no assigned country calling code");
        break;
    case AG_KEY_PASSWORD_FP:
        /* The caller's opaque digest of the password tried, which
         * abuseguard only compares and hashes: any bytes, kept as sent. */
        if (len == 0 || len > AG_PASSWORD_FP_MAX)
            return ag_error_set(err, AG_EINVAL, name,
                                "%s must be a string of 1 to %d bytes", name,
                                AG_PASSWORD_FP_MAX);
        memcpy(out->password_fp, s, len + 1);
        rc = AG_OK;
        break;
    case AG_KEY_IP_PREFIX:
    case AG_KEY_PHONE_PREFIX:
    case AG_KEY_COUNTRY:
    case AG_KEY_SITE:
    case AG_KEY_ASN:
    case AG_KEY_IP_COUNTRY:
        break; /* derived, never read from the body */
    case AG_KEY_DEVICE_TOKEN:
        break; /* the service's to set (ag_request_trust) */
    case AG_KEY_IP:
        /* jansson refuses "\u0000" (no JSON_ALLOW_NUL), so s is all of
         * the string. */
        rc = ag_identity_ip(s, &out->ip, name, err);
        break;
    case AG_KEY_COUNT:
        break;
    }
    if (rc)
        return rc;
    out->have |= 1u << f->kind;
    return AG_OK;
}

/* The device token as sent, if it could be one: clients pass whatever
 * cookie they hold, so anything else (not a string, empty, too long) is
 * simply no token, never a refusal. Whether it is trusted is the
 * service's to decide (ag_device). */
static void read_device_token(const json_t *root, struct ag_request *out)
{
    const json_t *v = json_object_get(root, "device_token");
    size_t len = json_is_string(v) ? json_string_length(v) : 0;
    if (len == 0 || len > AG_DEVICE_TOKEN_TEXT_MAX)
        return;
    memcpy(out->device_token, json_string_value(v), len + 1);
}

/* A failure report's reason: only beside "success": false. */
static int read_reason(const json_t *root, struct ag_request *out,
                       struct ag_error *err)
{
    const json_t *v = json_object_get(root, "reason");
    out->reason = AG_REASON_BAD_PASSWORD;
    if (!v || json_is_null(v))
        return AG_OK;
    if (out->success)
        return ag_error_refuse(err, "reason",
                               "is only for a failure (\"success\": false)");
    int r = json_is_string(v) ? ag_reason_parse(json_string_value(v)) : -1;
    if (r < 0)
        return ag_error_refuse(err, "reason",
                               "must be one of \"bad_password\", "
                               "\"unknown_user\", \"second_factor_failed\"");
    out->reason = (enum ag_reason)r;
    return AG_OK;
}

/* A report's method: "password" (the default) or "recovery", which only
 * a success can be: a recovery that failed is no wrong password, and
 * counting it as one would let the application's own recovery flow lock
 * its user out. */
static int read_method(const json_t *root, struct ag_request *out,
                       struct ag_error *err)
{
    const json_t *v = json_object_get(root, "method");
    out->method = AG_METHOD_PASSWORD;
    if (!v || json_is_null(v))
        return AG_OK;
    int m = json_is_string(v) ? ag_method_parse(json_string_value(v)) : -1;
    if (m < 0)
        return ag_error_refuse(err, "method",
                               "must be \"password\" or \"recovery\"");
    if (m == AG_METHOD_RECOVERY && !out->success)
        return ag_error_refuse(err, "method",
                               "\"recovery\" is only for a success "
                               "(\"success\": true)");
    out->method = (enum ag_method)m;
    return AG_OK;
}
/* The signals of the endpoint (ag_signal) the body carries: each an
 * optional boolean of its name. */
static int read_signals(const json_t *root, struct ag_request *out,
                        struct ag_error *err)
{
    for (int k = 0; k < AG_SIGNAL_COUNT; k++) {
        enum ag_signal sig = (enum ag_signal)k;
        /* A computed signal is the service's to find out: a body field of
         * its name is not read (unknown fields are ignored). */
        if (!ag_signal_on(sig, out->endpoint) || ag_signal_computed(sig))
            continue;
        const char *name = ag_signal_name(sig);
        const json_t *v = json_object_get(root, name);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_boolean(v))
            return ag_error_refuse(err, name, "must be true or false");
        if (json_is_true(v))
            out->signals |= 1u << sig;
    }
    return AG_OK;
}

/* A check's challenge_passed: absent or false, the nonce of the answer
 * that asked for the challenge, or (lenient only) true. */
static int read_pass(const json_t *root, const struct ag_request_opts *opts,
                     struct ag_request *out, struct ag_error *err)
{
    out->pass = AG_PASS_NONE;
    out->pass_nonce[0] = '\0';
    out->challenge_passed = false;
    const json_t *v = json_object_get(root, "challenge_passed");
    if (!v || json_is_null(v) || json_is_false(v))
        return AG_OK;
    /* true: a pass while lenient; while strict, no pass at all (the
     * check is judged as without it), not a 400: an integration that
     * lets a 4xx through would make an injected true a way past every
     * policy, deny ones too. */
    if (json_is_true(v)) {
        out->pass = AG_PASS_TRUE;
        out->challenge_passed = !(opts && opts->strict_pass);
        return AG_OK;
    }
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (!s || !ag_challenge_shape(s, len))
        return ag_error_refuse(err, "challenge_passed",
                               "must be the challenge_nonce of the answer "
                               "that asked for the challenge, true or "
                               "false");
    memcpy(out->pass_nonce, s, len + 1);
    out->pass = AG_PASS_NONCE;
    return AG_OK;
}

/* The caller's ref: 1 to AG_REF_MAX printable ASCII bytes, no space (it
 * is echoed into events verbatim, and nothing there needs quoting
 * rules of its own). */
static int read_ref(const json_t *root, struct ag_request *out,
                    struct ag_error *err)
{
    const json_t *v = json_object_get(root, "ref");
    if (!v || json_is_null(v))
        return AG_OK;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    bool ok = s && len >= 1 && len <= AG_REF_MAX;
    for (size_t i = 0; ok && i < len; i++)
        ok = s[i] > ' ' && s[i] < 0x7f;
    if (!ok)
        return ag_error_set(err, AG_EINVAL, "ref",
                            "ref must be 1 to %d printable ASCII characters "
                            "without spaces",
                            AG_REF_MAX);
    memcpy(out->ref, s, len + 1);
    return AG_OK;
}

static unsigned opt_or(unsigned v, unsigned def)
{
    return v ? v : def;
}

/* Fills the identifiers derived from others: the ip key's network and the
 * prefixes. */
static void derive(struct ag_request *r, const struct ag_request_opts *opts)
{
    static const struct ag_request_opts none = {0};
    if (!opts)
        opts = &none;
    r->have |= 1u << AG_KEY_SITE;
    if (r->have & 1u << AG_KEY_IP) {
        bool v6 = r->ip.family == AF_INET6;
        r->ip_key_bits =
            v6 ? opt_or(opts->ipv6_ip_prefix, AG_IPV6_IP_PREFIX_DEFAULT) : 32;
        unsigned group =
            v6 ? opt_or(opts->ipv6_group_prefix, AG_IPV6_GROUP_PREFIX_DEFAULT)
               : opt_or(opts->ipv4_group_prefix, AG_IPV4_GROUP_PREFIX_DEFAULT);
        ag_identity_ip_net(&r->ip, r->ip_key_bits, r->ip_key);
        ag_identity_ip_net(&r->ip, group, r->ip_prefix);
        r->have |= 1u << AG_KEY_IP_PREFIX;
    }
    if (r->have & 1u << AG_KEY_PHONE) {
        unsigned digits =
            opt_or(opts->phone_prefix_digits, AG_PHONE_PREFIX_DEFAULT);
        ag_identity_phone_prefix(r->phone, digits, r->phone_prefix);
        r->have |= 1u << AG_KEY_PHONE_PREFIX;
        if (r->country[0])
            r->have |= 1u << AG_KEY_COUNTRY;
    }
}

static int parse(int kind, enum ag_endpoint endpoint, const char *body,
                 size_t len, const struct ag_request_opts *opts,
                 struct ag_request *out, struct ag_error *err)
{
    memset(out, 0, sizeof *out);
    out->endpoint = endpoint;
    if (len > AG_BODY_MAX)
        return ag_error_set(err, AG_EINVAL, "body",
                            "body is larger than %d KiB", AG_BODY_MAX / 1024);
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ag_error_set(err, AG_EINVAL, "body",
                            "body is not valid JSON: %s at line %d column %d",
                            jerr.text, jerr.line, jerr.column);
    int rc = AG_OK;
    if (!json_is_object(root)) {
        rc = ag_error_refuse(err, "body", "must be a JSON object");
    } else {
        const struct ag_endpoint_def *def = ag_endpoint_def(endpoint);
        for (size_t i = 0; i < def->nfields && !rc; i++)
            rc = read_field(root, &def->fields[i], kind == PARSE_ANY, out, err);
    }
    if (!rc && kind == AG_REQ_REPORT) {
        const json_t *v = json_object_get(root, "success");
        if (!v || json_is_null(v))
            rc = ag_error_refuse(err, "success", "is required");
        else if (!json_is_boolean(v))
            rc = ag_error_refuse(err, "success", "must be true or false");
        else
            out->success = json_is_true(v);
    }
    if (!rc && kind == AG_REQ_REPORT)
        rc = read_reason(root, out, err);
    if (!rc && kind == AG_REQ_REPORT)
        rc = read_method(root, out, err);
    if (!rc && kind == AG_REQ_OTP_REPORT) {
        const json_t *v = json_object_get(root, "verified");
        if (!v || json_is_null(v))
            rc = ag_error_refuse(err, "verified", "is required");
        else if (!json_is_boolean(v))
            rc = ag_error_refuse(err, "verified", "must be true or false");
        else
            out->verified = json_is_true(v);
    }
    /* A success report may bring the nonce its check passed: the proof
     * that teaches its user's history a new place (ag_history). */
    if (!rc &&
        (kind == AG_REQ_CHECK || (kind == AG_REQ_REPORT && out->success)))
        rc = read_pass(root, opts, out, err);
    if (!rc && (kind == AG_REQ_CHECK || kind == AG_REQ_REPORT))
        rc = read_signals(root, out, err);
    if (!rc)
        rc = read_ref(root, out, err);
    if (!rc)
        read_device_token(root, out);
    json_decref(root);
    if (!rc)
        derive(out, opts);
    return rc;
}

int ag_request_parse_for(enum ag_endpoint endpoint, unsigned need,
                         const char *body, size_t len,
                         const struct ag_request_opts *opts,
                         struct ag_request *out, struct ag_error *err)
{
    int rc = parse(PARSE_ANY, endpoint, body, len, opts, out, err);
    for (int k = 0; !rc && k < AG_KEY_COUNT; k++)
        if ((need & 1u << k) && !(out->have & 1u << k))
            rc = ag_error_refuse(
                err, ag_key_kind_name(ag_key_kind_source((enum ag_key_kind)k)),
                "is required");
    return rc;
}

int ag_request_parse(enum ag_endpoint endpoint, const char *body, size_t len,

                     const struct ag_request_opts *opts, struct ag_request *out,
                     struct ag_error *err)
{
    return parse(AG_REQ_CHECK, endpoint, body, len, opts, out, err);
}

int ag_request_parse_report(const char *body, size_t len,
                            const struct ag_request_opts *opts,
                            struct ag_request *out, struct ag_error *err)
{
    return parse(AG_REQ_REPORT, AG_EP_LOGIN, body, len, opts, out, err);
}

int ag_request_parse_otp_report(const char *body, size_t len,
                                const struct ag_request_opts *opts,
                                struct ag_request *out, struct ag_error *err)
{
    return parse(AG_REQ_OTP_REPORT, AG_EP_OTP, body, len, opts, out, err);
}

void ag_request_network(struct ag_request *req,
                        const struct ag_net_avail *avail, const char *country,
                        uint32_t asn, uint32_t lists, uint32_t lists_special)
{
    struct ag_request_net *n = &req->net;
    n->avail = avail;
    n->looked = true;
    n->lists = lists;
    n->lists_special = lists_special;
    n->country[0] = n->asn[0] = '\0';
    n->asn_n = asn;
    n->placed = false;
    req->have &= ~(1u << AG_KEY_IP_COUNTRY | 1u << AG_KEY_ASN);
    /* On every check's path: no printf. A country is two letters, kept
     * upper case (a policy's countries index by them). */
    if (country && country[0] && ag_identity_ip_country(country, n->country))
        req->have |= 1u << AG_KEY_IP_COUNTRY;
    else
        n->country[0] = '\0';
    if (asn) {
        char digits[10];
        size_t k = 0;
        for (uint32_t v = asn; v; v /= 10)
            digits[k++] = (char)('0' + v % 10);
        for (size_t i = 0; i < k; i++)
            n->asn[i] = digits[k - 1 - i];
        n->asn[k] = '\0';
        req->have |= 1u << AG_KEY_ASN;
    }
}

void ag_request_net_lists(const struct ag_request_net *n, const char *sep,
                          char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0;
         n->avail && i < n->avail->nlists && i < AG_REQUEST_NET_LISTS; i++) {
        if (!(n->lists & 1u << i))
            continue;
        const char *name = n->avail->lists[i];
        size_t need = (at ? strlen(sep) : 0) + strlen(name);
        if (at + need >= cap)
            break; /* whole names only */
        at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? sep : "", name);
    }
}

void ag_request_net_text(const struct ag_request_net *n, char *out, size_t cap)
{
    char lists[AG_REQUEST_NET_TEXT];
    ag_request_net_lists(n, ",", lists, sizeof lists);
    snprintf(out, cap, "%s%s%s%s%s%s", n->country[0] ? " country=" : "",
             n->country, n->asn[0] ? " asn=" : "", n->asn,
             lists[0] ? " lists=" : "", lists);
}

void ag_request_trust(struct ag_request *req, const unsigned char *id)
{
    sodium_bin2hex(req->device_id, sizeof req->device_id, id,
                   AG_DEVICE_ID_BYTES);
    req->trusted = true;
    req->have |= 1u << AG_KEY_DEVICE_TOKEN;
}

const char *ag_request_value(const struct ag_request *req,
                             enum ag_key_kind kind)
{
    if (!(req->have & 1u << kind))
        return NULL;
    switch (kind) {
    case AG_KEY_USER:
        return req->user;
    case AG_KEY_IP:
        return req->ip_key;
    case AG_KEY_PHONE:
        return req->phone;
    case AG_KEY_DEVICE:
        return req->device;
    case AG_KEY_IP_PREFIX:
        return req->ip_prefix;
    case AG_KEY_PHONE_PREFIX:
        return req->phone_prefix;
    case AG_KEY_COUNTRY:
        return req->country;
    case AG_KEY_DEVICE_TOKEN:
        return req->device_id;
    case AG_KEY_SITE:
        return "site";
    case AG_KEY_PASSWORD_FP:
        return req->password_fp;
    case AG_KEY_ASN:
        return req->net.asn;
    case AG_KEY_IP_COUNTRY:
        return req->net.country;
    case AG_KEY_COUNT:
        break;
    }
    return NULL;
}
