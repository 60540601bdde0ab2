/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The list formats (ag_iplist.h): plain lines, Spamhaus DROP's JSON
 * lines, AWS ip-ranges.json, Google Cloud's cloud.json, and the rule that
 * tells them apart. Each finds the address or CIDR text of every entry
 * and hands it, with where it was found ("line 7",
 * "prefixes[3].ip_prefix"), to the tables' add function, which reads it
 * and refuses it naming that place.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ag_iplist.h"
#include "ag_iplist_impl.h"

#define FIELD AG_IPLIST_FIELD

struct reader {
    ag_iplist_add_fn add;
    void *ctx;
    struct ag_error *err;
};

int ag_iplist_format_parse(const char *name, enum ag_iplist_format *out)
{
    static const struct {
        const char *name;
        enum ag_iplist_format f;
    } names[] = {
        {"auto", AG_IPLIST_AUTO},         {"plain", AG_IPLIST_PLAIN},
        {"spamhaus", AG_IPLIST_SPAMHAUS}, {"aws", AG_IPLIST_AWS},
        {"gcp", AG_IPLIST_GCP},
    };
    if (!name)
        return AG_EINVAL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].f;
            return AG_OK;
        }
    }
    return AG_EINVAL;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The next line of [*p, end) without its '\n' (and any '\r', blanks at
 * either end); moves *p past it. */
static void next_line(const char **p, const char *end, const char **s,
                      size_t *n)
{
    const char *a = *p;
    const char *e = memchr(a, '\n', (size_t)(end - a));
    if (!e)
        e = end;
    *p = e < end ? e + 1 : end;
    while (a < e && is_space(*a))
        a++;
    while (e > a && is_space(e[-1]))
        e--;
    *s = a;
    *n = (size_t)(e - a);
}

static bool is_comment(const char *s, size_t n)
{
    return n > 0 && (s[0] == '#' || s[0] == ';');
}

/* One address or CIDR a line. A '#' or ';' starts a comment anywhere
 * (FireHOL's headers, Spamhaus's old "CIDR ; SBL123" lines); neither can
 * occur in an address. */
static int parse_plain(struct reader *r, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    size_t line = 0;
    while (p < end) {
        const char *s;
        size_t n;
        next_line(&p, end, &s, &n);
        line++;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '#' || s[i] == ';') {
                n = i;
                break;
            }
        }
        while (n > 0 && is_space(s[n - 1]))
            n--;
        if (n == 0)
            continue;
        char where[32];
        snprintf(where, sizeof(where), "line %zu", line);
        int rc = r->add(r->ctx, where, s, n);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

static int not_json(struct reader *r, size_t line, const json_error_t *je)
{
    return ag_error_set(r->err, AG_EINVAL, FIELD, "%s line %zu: not JSON (%s)",
                        FIELD, line, je->text);
}

/* Spamhaus DROP: one JSON object a line; those with "cidr" are entries,
 * the rest (the closing {"type":"metadata",...}) are skipped. */
static int parse_spamhaus(struct reader *r, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    size_t line = 0;
    while (p < end) {
        const char *s;
        size_t n;
        json_error_t je;
        next_line(&p, end, &s, &n);
        line++;
        if (n == 0 || is_comment(s, n))
            continue;
        json_t *o = json_loadb(s, n, 0, &je);
        if (!o)
            return not_json(r, line, &je);
        int rc = AG_OK;
        json_t *cidr = json_object_get(o, "cidr");
        char where[32];
        snprintf(where, sizeof(where), "line %zu", line);
        if (!json_is_object(o))
            rc = ag_error_set(r->err, AG_EINVAL, FIELD,
                              "%s line %zu: not a JSON object (Spamhaus "
                              "DROP lines expected)",
                              FIELD, line);
        else if (cidr && !json_is_string(cidr))
            rc = ag_error_set(r->err, AG_EINVAL, FIELD,
                              "%s line %zu: \"cidr\" is not a string", FIELD,
                              line);
        else if (cidr)
            rc = r->add(r->ctx, where, json_string_value(cidr),
                        json_string_length(cidr));
        json_decref(o);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

/* Adds each element's key of root's array name (AWS: "prefixes" with
 * "ip_prefix"; GCP: "prefixes" with "ipv4Prefix" or key2 "ipv6Prefix"). */
static int parse_array(struct reader *r, json_t *root, const char *name,
                       const char *key, const char *key2)
{
    json_t *arr = json_object_get(root, name);
    size_t i;
    json_t *e;
    if (!arr)
        return AG_OK;
    if (!json_is_array(arr))
        return ag_error_set(r->err, AG_EINVAL, FIELD,
                            "%s \"%s\" is not an array", FIELD, name);
    json_array_foreach(arr, i, e)
    {
        const char *k = key;
        json_t *v = json_object_get(e, key);
        if (!v && key2) {
            k = key2;
            v = json_object_get(e, key2);
        }
        char where[64];
        snprintf(where, sizeof(where), "%s[%zu].%s", name, i, k);
        if (!json_is_string(v) && key2)
            return ag_error_set(r->err, AG_EINVAL, FIELD,
                                "%s %s[%zu] has no \"%s\" or \"%s\" string",
                                FIELD, name, i, key, key2);
        if (!json_is_string(v))
            return ag_error_set(r->err, AG_EINVAL, FIELD,
                                "%s %s[%zu] has no \"%s\" string", FIELD, name,
                                i, key);
        int rc =
            r->add(r->ctx, where, json_string_value(v), json_string_length(v));
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

/* AWS ip-ranges.json or Google's cloud.json, parsed already. */
static int parse_doc(struct reader *r, json_t *root, enum ag_iplist_format f)
{
    if (!json_is_object(root) || (!json_object_get(root, "prefixes") &&
                                  !json_object_get(root, "ipv6_prefixes")))
        return ag_error_set(r->err, AG_EINVAL, FIELD,
                            "%s is not a JSON object with a \"prefixes\" "
                            "array (%s expected)",
                            FIELD,
                            f == AG_IPLIST_AWS ? "AWS ip-ranges.json"
                                               : "Google Cloud's cloud.json");
    if (f == AG_IPLIST_GCP)
        return parse_array(r, root, "prefixes", "ipv4Prefix", "ipv6Prefix");
    int rc = parse_array(r, root, "prefixes", "ip_prefix", NULL);
    if (rc == AG_OK)
        rc = parse_array(r, root, "ipv6_prefixes", "ipv6_prefix", NULL);
    return rc;
}

/* The offset of the first byte that is neither blank nor in a comment
 * line, and in *lines how many lines came before its own. */
static size_t skip_preamble(const char *text, size_t len, size_t *lines)
{
    const char *p = text, *end = text + len;
    *lines = 0;
    while (p < end) {
        const char *s;
        size_t n;
        next_line(&p, end, &s, &n);
        if (n > 0 && !is_comment(s, n))
            return (size_t)(s - text);
        (*lines)++;
    }
    return len;
}

/* A JSON document (AWS, GCP) from the first byte that is not blank or
 * comment, the error's line counted from the top of the file. */
static json_t *load_doc(const char *text, size_t len, json_error_t *je,
                        size_t *line)
{
    size_t skipped, at = skip_preamble(text, len, &skipped);
    json_t *root = json_loadb(text + at, len - at, 0, je);
    *line = skipped + (je->line > 0 ? (size_t)je->line : 1);
    return root;
}

/* AG_IPLIST_AUTO: the header's rule. A whole document with "prefixes" is
 * AWS (which also has "ipv6_prefixes" and "ip_prefix" keys) or Google
 * (its entries say "ipv4Prefix" or "ipv6Prefix"); otherwise a first line
 * that is a JSON object with "cidr" on its own makes JSON lines
 * (Spamhaus), as does the metadata line of a DROP file with no entry
 * (refused below as holding none, which says more than "not JSON"). */
static int parse_auto(struct reader *r, const char *text, size_t len)
{
    size_t skipped, at = skip_preamble(text, len, &skipped);
    if (at == len || text[at] != '{')
        return parse_plain(r, text, len);

    json_error_t je;
    size_t line;
    json_t *root = load_doc(text, len, &je, &line);
    bool doc = root != NULL;
    if (doc) {
        json_t *pre = json_object_get(root, "prefixes");
        if (json_is_object(root) &&
            (pre || json_object_get(root, "ipv6_prefixes"))) {
            json_t *first = json_array_get(pre, 0);
            enum ag_iplist_format f =
                !json_object_get(root, "ipv6_prefixes") &&
                        (json_object_get(first, "ipv4Prefix") ||
                         json_object_get(first, "ipv6Prefix"))
                    ? AG_IPLIST_GCP
                    : AG_IPLIST_AWS;
            int rc = parse_doc(r, root, f);
            json_decref(root);
            return rc;
        }
        json_decref(root);
    }

    const char *p = text + at, *s;
    size_t n;
    json_error_t je1;
    next_line(&p, text + len, &s, &n);
    json_t *first = json_loadb(s, n, 0, &je1);
    const char *type = json_string_value(json_object_get(first, "type"));
    bool lines = json_object_get(first, "cidr") ||
                 (type && strcmp(type, "metadata") == 0);
    json_decref(first);
    if (lines)
        return parse_spamhaus(r, text, len);
    if (doc)
        return ag_error_set(r->err, AG_EINVAL, FIELD,
                            "%s is JSON but neither an object with a "
                            "\"prefixes\" array (AWS, Google Cloud) nor one "
                            "object a line (Spamhaus DROP)",
                            FIELD);
    return not_json(r, line, &je);
}

int ag_iplist_read(const char *text, size_t len, enum ag_iplist_format f,
                   ag_iplist_add_fn add, void *ctx, struct ag_error *err)
{
    struct reader rd = {add, ctx, err}, *r = &rd;

    /* A UTF-8 byte order mark, as Windows editors write one. */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
        text += 3;
        len -= 3;
    }
    if (f == AG_IPLIST_AUTO)
        return parse_auto(r, text, len);
    if (f == AG_IPLIST_PLAIN)
        return parse_plain(r, text, len);
    if (f == AG_IPLIST_SPAMHAUS)
        return parse_spamhaus(r, text, len);
    json_error_t je;
    size_t line;
    json_t *root = load_doc(text, len, &je, &line);
    if (!root)
        return not_json(r, line, &je);
    int rc = parse_doc(r, root, f);
    json_decref(root);
    return rc;
}
