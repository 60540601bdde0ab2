/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_lists.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_limiter.h"

static const char *const list_names[] = {
    [AG_LIST_ALLOW] = "allow", [AG_LIST_DENY] = "deny"};
static const char *const kind_names[] = {
    [AG_LK_IP] = "ip",
    [AG_LK_USER] = "user",
    [AG_LK_PHONE] = "phone",
    [AG_LK_COUNTRY] = "country",
    [AG_LK_PHONE_PREFIX] = "phone_prefix",
    [AG_LK_ASN] = "asn",
    [AG_LK_IP_COUNTRY] = "ip_country",
};

/* The refusal of a malformed value of each kind kept in plain text. */
static const char *const plain_refusal[] = {
    [AG_LK_COUNTRY] = "must be an assigned country calling code such as +44",
    [AG_LK_PHONE_PREFIX] = "must be + and 2 to 15 digits, such as +4479",
    [AG_LK_ASN] = "must be an AS number from 1 to 4294967295, such as AS174 "
                  "or 174",
    [AG_LK_IP_COUNTRY] = "must be a two-letter country code such as FR (the "
                         "address's country; a phone's calling code is kind "
                         "country)",
};

/* "+" and min to 15 digits, the first not 0. */
static bool plus_digits(const char *s, size_t min)
{
    size_t n = s[0] == '+' ? strspn(s + 1, "0123456789") : 0;
    return n >= min && n <= AG_PHONE_DIGITS_MAX && s[1 + n] == '\0' &&
           s[1] != '0';
}

/* An AS number from 1 to 2^32 - 1, "AS" (either case, as IPinfo writes
 * it) and its digits or the digits alone, into its decimal text. No sign,
 * space or leading zero: one number, one spelling. */
static bool asn_value(const char *s, char *out)
{
    if ((s[0] == 'A' || s[0] == 'a') && (s[1] == 'S' || s[1] == 's'))
        s += 2;
    size_t n = strspn(s, "0123456789");
    if (n < 1 || n > 10 || s[n] != '\0' || s[0] == '0' ||
        strtoull(s, NULL, 10) > UINT32_MAX)
        return false;
    memcpy(out, s, n + 1);
    return true;
}

#define PLAIN_MAX 16 /* bytes: "+" and 15 digits, the longest */
_Static_assert(sizeof((struct ag_list_entry *)0)->value > PLAIN_MAX,
               "a plain value fits an entry");

/* The canonical text of a value of a kind kept in plain text (country,
 * phone_prefix, asn, ip_country) in out (PLAIN_MAX + 1 bytes), or
 * false if s is no such value. Calling codes and prefixes are kept as
 * written: they have one spelling already. */
static bool plain_value(enum ag_list_kind k, const char *s, char *out)
{
    if (strlen(s) > PLAIN_MAX)
        return false;
    switch (k) {
    case AG_LK_COUNTRY:
    case AG_LK_PHONE_PREFIX:
        if (k == AG_LK_COUNTRY ? !ag_country_code_valid(s) : !plus_digits(s, 2))
            return false;
        strcpy(out, s);
        return true;
    case AG_LK_ASN:
        return asn_value(s, out);
    case AG_LK_IP_COUNTRY:
        return ag_identity_ip_country(s, out);
    default:
        return false;
    }
}

const char *ag_list_name(enum ag_list l)
{
    return list_names[l];
}

int ag_list_parse(const char *s)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(s, list_names[i]) == 0)
            return i;
    return -1;
}

const char *ag_list_kind_name(enum ag_list_kind k)
{
    return kind_names[k];
}

static int kind_parse(const char *s)
{
    for (int i = 0; i < (int)(sizeof kind_names / sizeof kind_names[0]); i++)
        if (strcmp(s, kind_names[i]) == 0)
            return i;
    return -1;
}

/* Parses "addr" or "addr/bits" into e (family, addr, bits, value). */
static int parse_network(const char *s, struct ag_list_entry *e)
{
    char text[AG_IP_PREFIX_MAX];
    if (strlen(s) >= sizeof text)
        return AG_EINVAL;
    strcpy(text, s);
    char *slash = strchr(text, '/');
    if (slash)
        *slash = '\0';
    struct ag_ip ip;
    if (ag_identity_ip(text, &ip, "value", NULL))
        return AG_EINVAL;
    unsigned max = ip.family == AF_INET ? 32 : 128;
    /* A mapped address (::ffff:a.b.c.d) was written as IPv6: its prefix
     * counts the 96 bits of the mapping. */
    unsigned mapped = strchr(text, ':') && ip.family == AF_INET ? 96 : 0;
    unsigned bits = max;
    if (slash) {
        /* One to three digits: strtoul alone takes a sign (and wraps a
         * negative) and leading white space. */
        size_t digits = strspn(slash + 1, "0123456789");
        if (digits < 1 || digits > 3 || slash[1 + digits])
            return AG_EINVAL;
        unsigned long b = strtoul(slash + 1, NULL, 10);
        if (b < mapped || b > max + mapped)
            return AG_EINVAL;
        bits = (unsigned)b - mapped;
    }

    /* Host bits must be zero, so that one network has one spelling. */
    for (unsigned i = bits; i < max; i++)
        if (ip.addr[i / 8] & (0x80 >> (i % 8)))
            return AG_EINVAL;
    e->family = ip.family;
    memcpy(e->addr, ip.addr, sizeof e->addr);
    e->bits = bits;
    if (bits == max)
        snprintf(e->value, sizeof e->value, "%s", ip.text);
    else
        snprintf(e->value, sizeof e->value, "%s/%u", ip.text, bits);
    return AG_OK;
}

/* An allow entry exempts its network from every policy: one this broad is
 * far more likely a slip (0.0.0.0/0 for 10.0.0.0/8) than an intent, and
 * would switch the limiter off for most of the Internet. A deny entry
 * may be broad: its mistake is loud, not silent. */
static bool too_broad(const struct ag_list_entry *e)
{
    return e->bits < (e->family == AF_INET ? AG_LIST_ALLOW_MIN_BITS_V4
                                           : AG_LIST_ALLOW_MIN_BITS_V6);
}

int ag_list_entry_from_json(const json_t *obj, enum ag_list list,
                            const struct ag_hasher *h,
                            struct ag_list_entry *out, struct ag_error *err)
{
    /* id, list and hash are what an entry read back adds: id and list
     * are taken (so that it can be posted again as read), hash is named
     * in its own refusal below. */
    static const char *const known[] = {"kind",  "value", "endpoint", "note",
                                        "force", "id",    "list",     "hash"};
    static const size_t nknown = sizeof known / sizeof *known;
    struct ag_list_entry e;
    memset(&e, 0, sizeof e);
    memset(err, 0, sizeof *err);
    e.list = list;
    e.endpoint = -1;
    if (!json_is_object(obj))
        return ag_error_refuse(err, "entry", "must be a JSON object");
    const char *field;
    json_t *v;
    json_object_foreach((json_t *)obj, field, v)
    {
        size_t i = 0;
        while (i < nknown && strcmp(field, known[i]) != 0)
            i++;
        if (i == nknown)
            return ag_error_refuse(
                err, "entry",
                "has an unknown field (kind, value, endpoint, note, "
                "force, and an entry's id and list are allowed)");
    }
    /* Read back, an entry has the id of its row: a new row gets its own,
     * and the id is checked only for its shape. */
    v = json_object_get(obj, "id");
    if (v && (!json_is_integer(v) || json_integer_value(v) < 1))
        return ag_error_refuse(err, "id",
                               "must be a positive integer (it is ignored: "
                               "a new entry gets its own)");
    v = json_object_get(obj, "list");
    if (v && (!json_is_string(v) ||
              ag_list_parse(json_string_value(v)) != (int)list))
        return ag_error_set(err, AG_EINVAL, "list",
                            "list must be \"%s\", the list posted to, or "
                            "left out",
                            list_names[list]);
    if (json_object_get(obj, "hash"))
        return ag_error_refuse(err, "hash",
                               "cannot be posted: a user or phone entry is "
                               "kept as its keyed digest only, so give its "
                               "value");
    v = json_object_get(obj, "force");
    if (v && !json_is_boolean(v))
        return ag_error_refuse(err, "force", "must be true or false");
    e.force = json_is_true(v);
    v = json_object_get(obj, "kind");
    int kind = json_is_string(v) ? kind_parse(json_string_value(v)) : -1;
    if (kind < 0)
        return ag_error_refuse(err, "kind",
                               "must be \"ip\", \"user\", \"phone\", "
                               "\"country\", \"phone_prefix\", \"asn\" "
                               "or \"ip_country\"");
    e.kind = (enum ag_list_kind)kind;
    /* "*" is every endpoint, as an entry read back says, and the same as
     * leaving the field out. */
    v = json_object_get(obj, "endpoint");
    if (v && !json_is_null(v) &&
        !(json_is_string(v) && strcmp(json_string_value(v), "*") == 0)) {
        e.endpoint =
            json_is_string(v) ? ag_endpoint_parse(json_string_value(v)) : -1;
        if (e.endpoint < 0)
            return ag_error_refuse(
                err, "endpoint",
                "must be \"*\" (every endpoint, the default), \"login\", "
                "\"otp\" or \"otp_verify\"");
    }
    v = json_object_get(obj, "note");
    if (v) {
        if (!json_is_string(v) || json_string_length(v) > AG_LIST_NOTE_MAX)
            return ag_error_set(err, AG_EINVAL, "note",
                                "note must be a string of at most %d bytes",
                                AG_LIST_NOTE_MAX);
        snprintf(e.note, sizeof e.note, "%s", json_string_value(v));
    }
    v = json_object_get(obj, "value");
    if (!json_is_string(v))
        return ag_error_refuse(err, "value", "must be a string");
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    char norm[AG_USER_MAX + 1];
    switch (e.kind) {
    case AG_LK_IP:
        if (parse_network(s, &e))
            return ag_error_refuse(err, "value",
                                   "must be an IP address or a network such as "
                                   "203.0.113.0/24 (host bits zero)");
        if (list == AG_LIST_ALLOW && too_broad(&e) && !e.force)
            return ag_error_set(
                err, AG_EINVAL, "value",
                "value %s would exempt %s from every policy; an allow "
                "entry shorter than /%u (IPv4) or /%u (IPv6) needs "
                "\"force\": true",
                e.value, e.bits ? "a large part of the Internet" : "everyone",
                AG_LIST_ALLOW_MIN_BITS_V4, AG_LIST_ALLOW_MIN_BITS_V6);
        break;
    case AG_LK_USER:
    case AG_LK_PHONE:
        if (e.kind == AG_LK_USER
                ? ag_identity_user(s, len, norm, "value", err)
                : ag_identity_phone(s, len, norm, "value", err))
            return AG_EINVAL;
        /* A check of such a phone is refused before the lists (no SMS
         * reaches it): an entry for it could never match. */
        char cc[AG_COUNTRY_MAX];
        if (e.kind == AG_LK_PHONE && ag_country_code(norm, cc) != AG_OK) {
            sodium_memzero(norm, sizeof norm);
            return ag_error_refuse(err, "value",
                                   "has no assigned country calling code");
        }
        ag_identity_digest(h, e.kind == AG_LK_USER ? AG_KEY_USER : AG_KEY_PHONE,
                           norm, e.value);
        sodium_memzero(norm, sizeof norm);
        break;
    /* No allow entry of these needs "force": each names one thing (a
     * calling code, a number range, an AS such as a corporate VPN's, a
     * country) by name, not a network whose prefix may be a slip for a
     * longer one. */
    case AG_LK_COUNTRY:
    case AG_LK_PHONE_PREFIX:
    case AG_LK_ASN:
    case AG_LK_IP_COUNTRY:
        if (!plain_value(e.kind, s, e.value))
            return ag_error_refuse(err, "value", plain_refusal[e.kind]);
        break;
    }
    *out = e;
    return AG_OK;
}

int ag_list_entry_from_row(int64_t id, const char *list, const char *kind,
                           const char *value, const char *endpoint,
                           const char *note, struct ag_list_entry *out)
{
    struct ag_list_entry e;
    memset(&e, 0, sizeof e);
    e.id = id;
    int l = list ? ag_list_parse(list) : -1;
    int k = kind ? kind_parse(kind) : -1;
    if (l < 0 || k < 0 || !value)
        return AG_EINVAL;
    e.list = (enum ag_list)l;
    e.kind = (enum ag_list_kind)k;
    e.endpoint = -1;
    if (endpoint && strcmp(endpoint, "*") != 0 &&
        (e.endpoint = ag_endpoint_parse(endpoint)) < 0)
        return AG_EINVAL;
    snprintf(e.note, sizeof e.note, "%s", note ? note : "");
    if (e.kind == AG_LK_IP) {
        if (parse_network(value, &e))
            return AG_EINVAL;
    } else if (e.kind != AG_LK_USER && e.kind != AG_LK_PHONE) {
        /* Stored canonical: another spelling was not written by us. */
        if (!plain_value(e.kind, value, e.value) || strcmp(e.value, value) != 0)
            return AG_EINVAL;
    } else {
        if (strlen(value) != AG_DIGEST_HEX)
            return AG_EINVAL;
        strcpy(e.value, value);
    }
    *out = e;
    return AG_OK;
}

json_t *ag_list_entry_to_json(const struct ag_list_entry *e)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:s, s:s}", "id", (json_int_t)e->id, "list",
        list_names[e->list], "kind", kind_names[e->kind],
        e->kind == AG_LK_USER || e->kind == AG_LK_PHONE ? "hash" : "value",
        e->value, "endpoint",
        e->endpoint < 0 ? "*" : ag_endpoint_name((enum ag_endpoint)e->endpoint),
        "note", e->note);
    /* Only when given, so that the audit row of a forced entry says so and
     * every other entry keeps its shape. */
    if (o && e->force && json_object_set_new(o, "force", json_true())) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Whether ip is in e's network. An entry of one whole address matches
 * the way the ip key counts: a request whose ip key is the network
 * req_bits long that holds it (an IPv6 address's /64 by default), so that
 * denying the one address a client was seen at denies that client, not
 * only the address it will rotate away from. A request built without
 * ag_request_parse (req_bits 0) matches by the whole address. */
static bool in_network(const struct ag_list_entry *e, const struct ag_ip *ip,
                       unsigned req_bits)
{
    if (e->family != ip->family)
        return false;
    unsigned bits = e->bits;
    if (bits == ag_ip_bits(e->family) && req_bits && req_bits < bits)
        bits = req_bits;
    unsigned char a[16], b[16];
    ag_ip_mask(e->addr, bits, a);
    ag_ip_mask(ip->addr, bits, b);
    return memcmp(a, b, sizeof a) == 0;
}

static bool matches(const struct ag_list_entry *e, const struct ag_request *req,
                    const char *user_digest, const char *phone_digest)
{
    if (e->endpoint >= 0 && e->endpoint != (int)req->endpoint)
        return false;
    switch (e->kind) {
    case AG_LK_IP:
        return (req->have & 1u << AG_KEY_IP) &&
               in_network(e, &req->ip, req->ip_key_bits);
    case AG_LK_USER:
        return user_digest && strcmp(e->value, user_digest) == 0;
    case AG_LK_PHONE:
        return phone_digest && strcmp(e->value, phone_digest) == 0;
    case AG_LK_COUNTRY:
        return (req->have & 1u << AG_KEY_COUNTRY) &&
               strcmp(e->value, req->country) == 0;
    case AG_LK_PHONE_PREFIX:
        return (req->have & 1u << AG_KEY_PHONE) &&
               strncmp(e->value, req->phone, strlen(e->value)) == 0;
    /* What the lookup found; "" (unknown, or no lookup) matches nothing. */
    case AG_LK_ASN:
        return req->net.asn[0] && strcmp(e->value, req->net.asn) == 0;
    case AG_LK_IP_COUNTRY:
        return req->net.country[0] && strcmp(e->value, req->net.country) == 0;
    }
    return false;
}

const struct ag_list_entry *ag_lists_match(const struct ag_list_entry *entries,
                                           size_t n,
                                           const struct ag_request *req,
                                           const char *user_digest,
                                           const char *phone_digest)
{
    const struct ag_list_entry *allow = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct ag_list_entry *e = &entries[i];
        if (!matches(e, req, user_digest, phone_digest))
            continue;
        if (e->list == AG_LIST_DENY)
            return e;
        if (!allow)
            allow = e;
    }
    return allow;
}
