/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_policy_impl.h"

/* Names indexed by the enums; each table must name every value. */
static const char *const algorithm_names[AG_ALG_COUNT] = {
    [AG_ALG_SLIDING_LOG] = "sliding_log",
    [AG_ALG_FIXED_WINDOW] = "fixed_window",
    [AG_ALG_SLIDING_WINDOW] = "sliding_window",
    [AG_ALG_TOKEN_BUCKET] = "token_bucket",
    [AG_ALG_DISTINCT] = "distinct",
    [AG_ALG_CONSECUTIVE] = "consecutive",
    [AG_ALG_CONVERSION] = "conversion",
    [AG_ALG_SURGE] = "surge",
    [AG_ALG_SIGNAL] = "signal",
};
static const char *const counts_names[] = {"attempts", "failures"};
static const char *const fail_names[] = {"open", "closed"};
static const char *const mode_names[] = {"enforce", "shadow"};
static const char *const lane_names[] = {"all", "trusted", "untrusted"};
static const char *const action_names[] = {"deny", "challenge"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int lookup(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return (int)i;
    return -1;
}

const char *ag_algorithm_name(enum ag_algorithm a)
{
    return algorithm_names[a];
}

bool ag_policy_name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > AG_POLICY_NAME_MAX)
        return false;
    /* A path segment of "." or ".." is removed by URL normalisation
     * (RFC 3986 5.2.4) in clients, proxies and browsers, so such a policy
     * could not be reached at /admin/policies/<name>. */
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
        strcmp(s, AG_POLICY_CHALLENGE_PASS) == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

int ag_policy_name_check(const char *s, struct ag_error *err)
{
    if (ag_policy_name_valid(s))
        return AG_OK;
    return ag_error_set(err, AG_EINVAL, "name",
                        "name must be 1 to %d of [a-z0-9._-], not . or .. "
                        "nor " AG_POLICY_CHALLENGE_PASS " (the service's own)",
                        AG_POLICY_NAME_MAX);
}

/* Reads an enum-valued string field; absent takes def when def >= 0. */
static int get_enum(const json_t *obj, const char *field,
                    const char *const *names, size_t n, int def, int *out,
                    struct ag_error *err)
{
    const json_t *v = json_object_get(obj, field);
    if (!v) {
        if (def < 0)
            return ag_error_refuse(err, field, "is required");
        *out = def;
        return AG_OK;
    }
    int i = json_is_string(v) ? lookup(names, n, json_string_value(v)) : -1;
    if (i < 0) {
        char msg[128];
        size_t len = (size_t)snprintf(msg, sizeof msg, "must be one of");
        for (size_t k = 0; k < n; k++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s \"%s\"",
                                    k ? "," : "", names[k]);
        return ag_error_refuse(err, field, msg);
    }
    *out = i;
    return AG_OK;
}

static int get_uint(const json_t *obj, const char *field, uint32_t min,
                    uint32_t max, long long def, uint32_t *out,
                    struct ag_error *err)
{
    const json_t *v = json_object_get(obj, field);
    if (!v) {
        if (def < 0)
            return ag_error_refuse(err, field, "is required");
        *out = (uint32_t)def;
        return AG_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)min ||
        json_integer_value(v) > (json_int_t)max) {
        char msg[96];
        if (min == 1)
            snprintf(msg, sizeof msg,
                     "must be a positive integer of at most %u", max);
        else
            snprintf(msg, sizeof msg, "must be an integer from %u to %u", min,
                     max);
        return ag_error_refuse(err, field, msg);
    }
    *out = (uint32_t)json_integer_value(v);
    return AG_OK;
}

static int get_keys(const json_t *obj, struct ag_policy *p,
                    struct ag_error *err)
{
    const json_t *v = json_object_get(obj, "key");
    if (!v)
        return ag_error_refuse(err, "key", "is required");
    if (!json_is_array(v) || json_array_size(v) == 0 ||
        json_array_size(v) > AG_POLICY_KEYS_MAX)
        return ag_error_set(err, AG_EINVAL, "key",
                            "key must be a list of 1 to %d key kinds",
                            AG_POLICY_KEYS_MAX);
    unsigned seen = 0;
    size_t i;
    const json_t *k;
    json_array_foreach(v, i, k)
    {
        int kind = json_is_string(k)
                       ? lookup(ag_key_kind_names, COUNT(ag_key_kind_names),
                                json_string_value(k))
                       : -1;
        if (kind < 0) {
            char msg[256];
            size_t len = (size_t)snprintf(msg, sizeof msg, "entries must be");
            for (int n = 0; n < AG_KEY_COUNT; n++)
                len +=
                    (size_t)snprintf(msg + len, sizeof msg - len, "%s \"%s\"",
                                     n == 0                  ? ""
                                     : n == AG_KEY_COUNT - 1 ? " or"
                                                             : ",",
                                     ag_key_kind_names[n]);
            return ag_error_refuse(err, "key", msg);
        }
        if (!(ag_endpoint_keys(p->endpoint) & 1u << kind)) {
            char msg[96];
            snprintf(msg, sizeof msg,
                     "kind \"%s\" is not sent to the %s "
                     "endpoint",
                     ag_key_kind_names[kind], ag_endpoint_name(p->endpoint));
            return ag_error_refuse(err, "key", msg);
        }
        if (seen & 1u << kind)
            return ag_error_refuse(err, "key", "must not repeat a kind");
        seen |= 1u << kind;
        p->key[i] = (enum ag_key_kind)kind;
    }
    p->nkeys = json_array_size(v);
    return AG_OK;
}

/* min_ratio and the algorithm it belongs to: conversion, on the otp
 * endpoint (the sends it counts are OTP sends). */
static int get_ratio(const json_t *obj, struct ag_policy *p,
                     struct ag_error *err)
{
    const json_t *v = json_object_get(obj, "min_ratio");
    if (v && json_is_null(v))
        v = NULL;
    if (p->algorithm != AG_ALG_CONVERSION) {
        if (v)
            return ag_error_refuse(err, "min_ratio",
                                   "is only for the conversion algorithm");
        return AG_OK;
    }
    if (p->endpoint != AG_EP_OTP)
        return ag_error_refuse(err, "algorithm",
                               "\"conversion\" is only for the otp endpoint");
    if (!v)
        return ag_error_refuse(err, "min_ratio", "is required for conversion");
    double r = json_is_number(v) ? json_number_value(v) : 0;
    /* Rounded to parts per million, as both stores use it; a ratio that
     * rounds to 0 would never judge. */
    double ppm = r > 0 && r <= 1 ? floor(r * AG_RATIO_ONE + 0.5) : 0;
    if (ppm < 1)
        return ag_error_refuse(err, "min_ratio",
                               "must be a number above 0 (at least 0.000001) "
                               "and at most 1");
    p->min_ratio_ppm = (uint32_t)ppm;
    return AG_OK;
}

/* Refuses each of surge's own fields in a policy of another algorithm. */
static int refuse_surge_fields(const json_t *obj, struct ag_error *err)
{
    static const char *const own[] = {"factor", "baseline_s", "scope"};
    for (size_t i = 0; i < COUNT(own); i++)
        if (ag_policy__field(obj, own[i]))
            return ag_error_refuse(err, own[i],
                                   "is only for the surge algorithm");
    return AG_OK;
}

/* reasons, of a policy that counts failures: a list of distinct failure
 * reasons (ag_reason) it counts; absent, all. */
static int get_reasons(const json_t *obj, struct ag_policy *p,
                       struct ag_error *err)
{
    const json_t *v = ag_policy__field(obj, "reasons");
    if (!v)
        return AG_OK;
    if (p->counts != AG_COUNTS_FAILURES)
        return ag_error_refuse(err, "reasons",
                               "is only for a policy that counts failures");
    if (!json_is_array(v) || json_array_size(v) == 0)
        return ag_error_refuse(err, "reasons",
                               "must be a list of \"bad_password\", "
                               "\"unknown_user\" or \"second_factor_failed\"");
    size_t i;
    const json_t *r;
    json_array_foreach(v, i, r)
    {
        int k = json_is_string(r) ? ag_reason_parse(json_string_value(r)) : -1;
        if (k < 0)
            return ag_error_refuse(err, "reasons",
                                   "entries must be \"bad_password\", "
                                   "\"unknown_user\" or "
                                   "\"second_factor_failed\"");
        if (p->reasons & 1u << k)
            return ag_error_refuse(err, "reasons", "must not repeat a reason");
        p->reasons |= 1u << k;
    }
    return AG_OK;
}

/* surge's shape and its own fields: one count for the whole endpoint
 * (key ["site"]), a hold (block_s) that does not grow, a factor and a
 * baseline period. */
static int get_surge(const json_t *obj, struct ag_policy *p,
                     struct ag_error *err)
{
    if (p->algorithm != AG_ALG_SURGE)
        return refuse_surge_fields(obj, err);
    if (p->nkeys != 1 || p->key[0] != AG_KEY_SITE)
        return ag_error_refuse(err, "key",
                               "of a surge policy must be [\"site\"]: a shield "
                               "counts the whole endpoint");
    if (p->block_s == 0)
        return ag_error_refuse(
            err, "block_s",
            "must be at least 1 for surge: how long a raised "
            "shield holds at least");
    if (p->block_growth != 1)
        return ag_error_refuse(err, "block_growth",
                               "must be 1 for surge: a shield's hold does not "
                               "grow");
    const json_t *v = ag_policy__field(obj, "factor");
    double f = AG_SURGE_FACTOR_DEFAULT / (double)AG_FACTOR_ONE;
    if (v && !json_is_number(v))
        f = 0;
    else if (v)
        f = json_number_value(v);
    double milli = floor(f * AG_FACTOR_ONE + 0.5);
    if (!(milli >= AG_FACTOR_MIN && milli <= AG_FACTOR_MAX))
        return ag_error_refuse(err, "factor",
                               "must be a number from 1.5 to 100");
    p->factor_milli = (uint32_t)milli;
    const json_t *sc = ag_policy__field(obj, "scope");
    const char *scope = json_is_string(sc) ? json_string_value(sc) : "";
    if (sc && strcmp(scope, "risky") != 0 && strcmp(scope, "untrusted") != 0)
        return ag_error_refuse(err, "scope",
                               "must be \"untrusted\" (every untrusted check "
                               "while raised) or \"risky\" (only those with a "
                               "risk signal)");
    p->scope_risky = sc && strcmp(scope, "risky") == 0;
    if (p->scope_risky && p->endpoint != AG_EP_LOGIN)
        return ag_error_refuse(err, "scope",
                               "\"risky\" is only for login shields: the "
                               "history's signals are a login's");
    /* Two windows at least, or there is nothing typical to learn. */
    uint32_t min_baseline =
        p->window_s > AG_WINDOW_MAX / 2 ? AG_WINDOW_MAX : 2 * p->window_s;
    uint32_t def = AG_SURGE_BASELINE_DEFAULT > min_baseline
                       ? AG_SURGE_BASELINE_DEFAULT
                       : min_baseline;
    int rc;
    if (ag_policy__field(obj, "baseline_s"))
        rc = get_uint(obj, "baseline_s", min_baseline, AG_WINDOW_MAX, def,
                      &p->baseline_s, err);
    else
        p->baseline_s = def, rc = AG_OK;
    return rc;
}

int ag_policy_from_json(const json_t *obj, const char *name,
                        struct ag_policy *out, struct ag_error *err)
{
    static const char *const known[] = {
        "name",         "endpoint",    "key",        "algorithm", "limit",
        "window_s",     "block_s",     "counts",     "fail",      "mode",
        "block_growth", "block_max_s", "applies_to", "action",    "enabled",
        "min_ratio",    "factor",      "baseline_s", "reasons",   "signal",
        "lists",        "countries",   "scope"};
    struct ag_policy p;
    memset(&p, 0, sizeof p);
    memset(err, 0, sizeof *err);
    if (!json_is_object(obj))
        return ag_error_refuse(err, "policy", "must be a JSON object");
    const char *field;
    const json_t *v;
    json_object_foreach((json_t *)obj, field, v)
    {
        if (lookup(known, COUNT(known), field) < 0) {
            /* Echo the client's field name only in a safe alphabet. */
            size_t i;
            for (i = 0; field[i] && i + 1 < sizeof err->field; i++) {
                char c = field[i];
                int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                         c == '-';
                err->field[i] = ok ? c : '?';
            }
            err->field[i] = '\0';
            snprintf(err->msg, sizeof err->msg, "unknown field \"%s\"",
                     err->field);
            return AG_EINVAL;
        }
    }

    v = json_object_get(obj, "name");
    if (v && !json_is_string(v))
        return ag_error_refuse(err, "name", "must be a string");
    const char *body_name = v ? json_string_value(v) : NULL;
    if (name && body_name && strcmp(name, body_name) != 0)
        return ag_error_refuse(err, "name", "must match the name in the path");
    if (!name)
        name = body_name;
    if (!name)
        return ag_error_refuse(err, "name", "is required");
    if (ag_policy_name_check(name, err))
        return AG_EINVAL;
    strcpy(p.name, name);

    const char *endpoint_names[AG_EP_COUNT];
    for (int i = 0; i < AG_EP_COUNT; i++)
        endpoint_names[i] = ag_endpoint_name((enum ag_endpoint)i);
    int e;
    int rc =
        get_enum(obj, "endpoint", endpoint_names, AG_EP_COUNT, -1, &e, err);
    if (rc)
        return rc;
    p.endpoint = (enum ag_endpoint)e;
    if ((rc = get_keys(obj, &p, err)))
        return rc;
    if ((rc = get_enum(obj, "algorithm", algorithm_names,
                       COUNT(algorithm_names), -1, &e, err)))
        return rc;
    p.algorithm = (enum ag_algorithm)e;
    /* A signal counts nothing: 1 and 1 are what its record shows. */
    long long count_default = p.algorithm == AG_ALG_SIGNAL ? 1 : -1;
    if ((rc = get_uint(obj, "limit", 1, AG_LIMIT_MAX, count_default, &p.limit,
                       err)))
        return rc;
    if ((rc = get_uint(obj, "window_s", 1, AG_WINDOW_MAX, count_default,
                       &p.window_s, err)))
        return rc;
    if ((rc = get_uint(obj, "block_s", 0, AG_WINDOW_MAX, 0, &p.block_s, err)))
        return rc;
    if ((rc = get_uint(obj, "block_growth", 1, AG_BLOCK_GROWTH_MAX, 1,
                       &p.block_growth, err)))
        return rc;
    uint32_t max_default = p.block_growth == 1 || p.block_s > AG_BLOCK_LEVEL_S
                               ? p.block_s
                               : AG_BLOCK_LEVEL_S;
    if ((rc = get_uint(obj, "block_max_s", 0, AG_WINDOW_MAX, (long)max_default,
                       &p.block_max_s, err)))
        return rc;
    if (p.block_max_s < p.block_s)
        return ag_error_set(err, AG_EINVAL, "block_max_s",
                            "block_max_s must be at least block_s (%u)",
                            p.block_s);
    if (p.block_growth > 1 && p.block_s == 0)
        return ag_error_refuse(err, "block_growth",
                               "needs block_s: there is no block to grow");
    if (p.algorithm == AG_ALG_SLIDING_LOG && p.limit > AG_SET_LIMIT_MAX)
        return ag_error_set(err, AG_EINVAL, "limit",
                            "limit must be at most %u for sliding_log, which "
                            "stores every request; use sliding_window for "
                            "higher limits",
                            AG_SET_LIMIT_MAX);
    if (p.algorithm == AG_ALG_DISTINCT) {
        if (p.limit > AG_SET_LIMIT_MAX)
            return ag_error_set(err, AG_EINVAL, "limit",
                                "limit must be at most %u for distinct, which "
                                "stores every subject",
                                AG_SET_LIMIT_MAX);
        enum ag_key_kind subject = ag_endpoint_subject(p.endpoint);
        for (size_t i = 0; i < p.nkeys; i++)
            if (p.key[i] == subject)
                return ag_error_refuse(
                    err, "key",
                    "of a distinct policy must not include what it "
                    "counts (user on login, phone on otp)");
    }
    if ((rc = get_ratio(obj, &p, err)))
        return rc;
    if ((rc = get_enum(obj, "counts", counts_names, COUNT(counts_names), 0, &e,
                       err)))
        return rc;
    p.counts = (enum ag_counts)e;
    /* Its sends are the checks it allowed: a failure report never charges
     * it (a verification is recorded by its own report). */
    if (p.algorithm == AG_ALG_CONVERSION && p.counts != AG_COUNTS_ATTEMPTS)
        return ag_error_refuse(err, "counts",
                               "must be \"attempts\" for conversion");
    if (p.counts == AG_COUNTS_FAILURES && p.endpoint != AG_EP_LOGIN)
        return ag_error_refuse(err, "counts",
                               "\"failures\" is only for the login endpoint");
    /* Only a failure report records consecutive failures, and a check of
     * a policy that counts attempts would charge it. */
    if (p.algorithm == AG_ALG_CONSECUTIVE && p.counts != AG_COUNTS_FAILURES)
        return ag_error_refuse(err, "counts",
                               "must be \"failures\" for consecutive");
    if ((rc = get_enum(obj, "fail", fail_names, COUNT(fail_names), 0, &e, err)))
        return rc;
    p.fail = (enum ag_fail)e;
    if ((rc = get_enum(obj, "mode", mode_names, COUNT(mode_names), 0, &e, err)))
        return rc;
    p.mode = (enum ag_mode)e;
    if ((rc = get_enum(obj, "applies_to", lane_names, COUNT(lane_names), 0, &e,
                       err)))
        return rc;
    p.applies_to = (enum ag_lane)e;
    if ((rc = get_enum(obj, "action", action_names, COUNT(action_names), 0, &e,
                       err)))
        return rc;
    p.action = (enum ag_action)e;
    v = json_object_get(obj, "enabled");
    if (v && !json_is_boolean(v))
        return ag_error_refuse(err, "enabled", "must be true or false");
    p.enabled = v ? json_is_true(v) : true;
    if ((rc = get_reasons(obj, &p, err)))
        return rc;
    if ((rc = get_surge(obj, &p, err)))
        return rc;
    if ((rc = ag_policy__read_signal(obj, &p, err)))
        return rc;
    for (size_t i = 0; i < p.nkeys; i++)
        p.needs |= p.key[i] == AG_KEY_ASN          ? AG_POLICY_NEEDS_ASN
                   : p.key[i] == AG_KEY_IP_COUNTRY ? AG_POLICY_NEEDS_COUNTRY
                                                   : 0;
    if (p.algorithm == AG_ALG_SIGNAL)
        p.needs |= p.signal == AG_SIGNAL_IP_LISTED ? AG_POLICY_NEEDS_LISTS
                   : p.signal == AG_SIGNAL_NEW_ASN ? AG_POLICY_NEEDS_ASN
                   : p.signal == AG_SIGNAL_IP_COUNTRY ||
                           p.signal == AG_SIGNAL_NEW_COUNTRY ||
                           p.signal == AG_SIGNAL_NO_HISTORY ||
                           p.signal == AG_SIGNAL_IMPOSSIBLE_TRAVEL
                       ? AG_POLICY_NEEDS_COUNTRY
                       : 0;
    *out = p;
    return AG_OK;
}

/* surge's own fields into o: AG_OK, or AG_ENOMEM. */
static int add_surge_fields(json_t *o, const struct ag_policy *p)
{
    if (json_object_set_new(
            o, "factor", json_real((double)p->factor_milli / AG_FACTOR_ONE)) ||
        json_object_set_new(o, "baseline_s", json_integer(p->baseline_s)))
        return AG_ENOMEM;
    /* Only when risky: a record without it is the default, and reads on
     * every instance of an older fleet schema. */
    if (p->scope_risky && json_object_set_new(o, "scope", json_string("risky")))
        return AG_ENOMEM;
    return AG_OK;
}

/* The reasons a failure-counting policy names into o: AG_OK, or
 * AG_ENOMEM. */
static int add_reasons(json_t *o, const struct ag_policy *p)
{
    if (!p->reasons)
        return AG_OK;
    json_t *list = json_array();
    for (int r = 0; list && r < AG_REASON_COUNT; r++)
        if ((p->reasons & 1u << r) &&
            json_array_append_new(
                list, json_string(ag_reason_name((enum ag_reason)r))))
            return json_decref(list), AG_ENOMEM;
    return json_object_set_new(o, "reasons", list) ? AG_ENOMEM : AG_OK;
}

json_t *ag_policy_to_json(const struct ag_policy *p)
{
    json_t *keys = json_array();
    for (size_t i = 0; keys && i < p->nkeys; i++)
        json_array_append_new(keys, json_string(ag_key_kind_names[p->key[i]]));
    json_t *o = json_pack(
        "{s:s, s:s, s:o, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:s, "
        "s:s, s:b}",
        "name", p->name, "endpoint", ag_endpoint_name(p->endpoint), "key", keys,
        "algorithm", algorithm_names[p->algorithm], "limit",
        (json_int_t)p->limit, "window_s", (json_int_t)p->window_s, "block_s",
        (json_int_t)p->block_s, "block_growth", (json_int_t)p->block_growth,
        "block_max_s", (json_int_t)p->block_max_s, "counts",
        counts_names[p->counts], "fail", fail_names[p->fail], "mode",
        mode_names[p->mode], "applies_to", lane_names[p->applies_to], "action",
        action_names[p->action], "enabled", p->enabled);
    if (o && p->algorithm == AG_ALG_CONVERSION &&
        json_object_set_new(
            o, "min_ratio",
            json_real((double)p->min_ratio_ppm / AG_RATIO_ONE))) {
        json_decref(o);
        return NULL;
    }
    if (o && p->algorithm == AG_ALG_SURGE && add_surge_fields(o, p)) {
        json_decref(o);
        return NULL;
    }
    if (o && add_reasons(o, p)) {
        json_decref(o);
        return NULL;
    }
    if (o && ag_policy__write_signal(o, p)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct ag_policy *)a)->name,
                  ((const struct ag_policy *)b)->name);
}

struct ag_ruleset *ag_ruleset_new(const struct ag_policy *p, size_t n,
                                  uint64_t version)
{
    struct ag_ruleset *s = malloc(sizeof *s + n * sizeof(struct ag_policy));
    if (!s)
        return NULL;
    atomic_init(&s->refs, 1);
    s->version = version;
    s->lists = NULL;
    s->nlists = 0;
    s->count = n;
    if (n)
        memcpy(s->policies, p, n * sizeof *p);
    qsort(s->policies, n, sizeof *p, by_name);
    return s;
}

void ag_ruleset_adopt_lists(struct ag_ruleset *s, struct ag_list_entry *lists,
                            size_t n)
{
    free(s->lists);
    s->lists = lists;
    s->nlists = n;
}

struct ag_ruleset *ag_ruleset_ref(struct ag_ruleset *s)

{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void ag_ruleset_unref(struct ag_ruleset *s)
{
    if (s &&
        atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        free(s->lists);
        free(s);
    }
}

bool ag_ruleset_same_policies(const struct ag_ruleset *a,
                              const struct ag_ruleset *b)
{
    if (!a || !b)
        return a == b;
    if (a->count != b->count)
        return false;
    /* Compared as their JSON, which holds every field: a field added to
     * the record is compared without another list of fields here. */
    for (size_t i = 0; i < a->count; i++) {
        json_t *x = ag_policy_to_json(&a->policies[i]);
        json_t *y = ag_policy_to_json(&b->policies[i]);
        bool same = x && y && json_equal(x, y);
        json_decref(x);
        json_decref(y);
        if (!same)
            return false;
    }
    return true;
}

int ag_policy_parse_file(const char *text, size_t len, struct ag_policy **out,
                         size_t *n, struct ag_error *err)
{
    json_error_t jerr;
    memset(err, 0, sizeof *err);
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(err->field, sizeof err->field, "policies");
        snprintf(err->msg, sizeof err->msg,
                 "not valid JSON at line %d column %d: %.80s", jerr.line,
                 jerr.column, jerr.text);
        return AG_EINVAL;
    }
    const json_t *list = json_object_get(root, "policies");
    if (!json_is_array(list)) {
        json_decref(root);
        return ag_error_refuse(err, "policies", "must be a list of policies");
    }
    size_t count = json_array_size(list);
    struct ag_policy *ps = calloc(count ? count : 1, sizeof *ps);
    if (!ps) {
        json_decref(root);
        return AG_ENOMEM;
    }
    int rc = AG_OK;
    for (size_t i = 0; i < count && !rc; i++) {
        rc = ag_policy_from_json(json_array_get(list, i), NULL, &ps[i], err);
        for (size_t j = 0; j < i && !rc; j++)
            if (strcmp(ps[j].name, ps[i].name) == 0)
                rc = ag_error_refuse(err, "name", "must be unique in the file");
        if (rc) {
            char msg[sizeof err->msg];
            memcpy(msg, err->msg, sizeof msg);
            snprintf(err->msg, sizeof err->msg, "policy %zu: %.150s", i + 1,
                     msg);
        }
    }
    json_decref(root);
    if (rc) {
        free(ps);
        return rc;
    }
    *out = ps;
    *n = count;
    return AG_OK;
}
