/* SPDX-License-Identifier: Apache-2.0 */
/* The signal algorithm's fields of the policy record (ag_policy_impl.h):
 * the signal it trips on, and for the signals the service computes from
 * the address, what it trips on: the --ip-list names of ip_listed, the
 * countries of ip_country. */
#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_identity.h"
#include "ag_policy.h"
#include "ag_policy_impl.h"

const json_t *ag_policy__field(const json_t *obj, const char *field)
{
    const json_t *v = json_object_get(obj, field);
    return v && json_is_null(v) ? NULL : v;
}

bool ag_policy_list_name_valid(const char *s, size_t len)
{
    if (len < 1 || len > AG_POLICY_LIST_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-'))
            return false;
    }
    return true;
}

/* ip_listed's lists: 1 to AG_POLICY_LISTS_MAX distinct names. */
static int read_lists(const json_t *v, struct ag_policy *p,
                      struct ag_error *err)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    if (n < 1 || n > AG_POLICY_LISTS_MAX)
        return ag_error_set(err, AG_EINVAL, "lists",
                            "lists must be a list of 1 to %d --ip-list names",
                            AG_POLICY_LISTS_MAX);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        const char *s = json_is_string(e) ? json_string_value(e) : "";
        size_t len = json_is_string(e) ? json_string_length(e) : 0;
        if (!ag_policy_list_name_valid(s, len) || strlen(s) != len)
            return ag_error_set(err, AG_EINVAL, "lists",
                                "lists must hold --ip-list names, each 1 to "
                                "%d of [a-z0-9_-]",
                                AG_POLICY_LIST_NAME_MAX);
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->lists[j], s) == 0)
                return ag_error_refuse(err, "lists",
                                       "must not name a list twice");
        memcpy(p->lists[i], s, len + 1);
    }
    p->nlists = n;
    return AG_OK;
}

/* ip_country's countries: one or more distinct two-letter codes. */
static int read_countries(const json_t *v, struct ag_policy *p,
                          struct ag_error *err)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    if (n < 1 || n > AG_POLICY_COUNTRY_BITS)
        return ag_error_refuse(err, "countries",
                               "must be a list of one or more two-letter "
                               "country codes such as [\"FR\"]");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        char code[3];
        if (!json_is_string(e) || json_string_length(e) != 2 ||
            !ag_identity_ip_country(json_string_value(e), code))
            return ag_error_refuse(err, "countries",
                                   "must hold two-letter country codes such "
                                   "as FR (the address's country; a phone's "
                                   "calling code is no country here)");
        unsigned bit = AG_POLICY_COUNTRY_BIT(code[0], code[1]);
        if (p->countries[bit / 8] & 1u << bit % 8)
            return ag_error_refuse(err, "countries",
                                   "must not name a country twice");
        p->countries[bit / 8] |= (uint8_t)(1u << bit % 8);
    }
    return AG_OK;
}

/* The field each signal takes beside "signal", or NULL. */
static const char *own_field(enum ag_signal s)
{
    return s == AG_SIGNAL_IP_LISTED    ? "lists"
           : s == AG_SIGNAL_IP_COUNTRY ? "countries"
                                       : NULL;
}

/* Refuses lists and countries where the policy's signal takes neither,
 * or the other. */
static int refuse_others(const json_t *obj, const struct ag_policy *p,
                         struct ag_error *err)
{
    static const char *const fields[] = {"lists", "countries"};
    static const char *const owners[] = {"ip_listed", "ip_country"};
    bool signal = p->algorithm == AG_ALG_SIGNAL;
    const char *own = signal ? own_field(p->signal) : NULL;
    for (size_t i = 0; i < 2; i++) {
        if (!ag_policy__field(obj, fields[i]) ||
            (own && strcmp(own, fields[i]) == 0))
            continue;
        return ag_error_set(err, AG_EINVAL, fields[i],
                            "%s is only for the signal algorithm's %s signal",
                            fields[i], owners[i]);
    }
    return AG_OK;
}

/* The counting fields of a signal: nothing that counts, holds or asks the
 * store. */
static int read_shape(const struct ag_policy *p, struct ag_error *err)
{
    if (p->limit != 1)
        return ag_error_refuse(err, "limit",
                               "must be 1 for signal (or left out): a signal "
                               "counts nothing");
    if (p->window_s != 1)
        return ag_error_refuse(err, "window_s",
                               "must be 1 for signal (or left out): a signal "
                               "counts nothing");
    if (p->block_s || p->block_max_s)
        return ag_error_refuse(err, p->block_s ? "block_s" : "block_max_s",
                               "must be 0 for signal: a signal holds nothing, "
                               "it trips on each check that carries it");
    if (p->counts != AG_COUNTS_ATTEMPTS)
        return ag_error_refuse(err, "counts",
                               "must be \"attempts\" for signal: it judges "
                               "checks, never reports");
    if (p->fail != AG_FAIL_OPEN)
        return ag_error_refuse(err, "fail",
                               "must be \"open\" for signal: it never asks "
                               "the store, so cannot fail");
    return AG_OK;
}

int ag_policy__read_signal(const json_t *obj, struct ag_policy *p,
                           struct ag_error *err)
{
    const json_t *v = ag_policy__field(obj, "signal");
    if (p->algorithm != AG_ALG_SIGNAL)
        return v ? ag_error_refuse(err, "signal",
                                   "is only for the signal algorithm")
                 : refuse_others(obj, p, err);
    if (!v)
        return ag_error_refuse(err, "signal", "is required for signal");
    int s = json_is_string(v) ? ag_signal_parse(json_string_value(v)) : -1;
    if (s < 0) {
        char msg[128];
        size_t len = (size_t)snprintf(msg, sizeof msg, "must be one of");
        for (int k = 0; k < AG_SIGNAL_COUNT; k++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s \"%s\"",
                                    k ? "," : "",
                                    ag_signal_name((enum ag_signal)k));
        return ag_error_refuse(err, "signal", msg);
    }
    p->signal = (enum ag_signal)s;
    if (!ag_signal_on(p->signal, p->endpoint)) {
        /* The endpoints that may use it, from the signal table. */
        char eps[64] = "";
        size_t len = 0, n = 0;
        for (int e = 0; e < AG_EP_COUNT; e++)
            if (ag_signal_on(p->signal, (enum ag_endpoint)e) &&
                len < sizeof eps)
                len += (size_t)snprintf(eps + len, sizeof eps - len, "%s%s",
                                        n++ ? ", " : "",
                                        ag_endpoint_name((enum ag_endpoint)e));
        return ag_error_set(err, AG_EINVAL, "signal",
                            "signal \"%s\" is only for the %s endpoint%s",
                            ag_signal_name(p->signal), eps, n > 1 ? "s" : "");
    }
    int rc = refuse_others(obj, p, err);
    if (rc)
        return rc;
    const char *own = own_field(p->signal);
    const json_t *ov = own ? ag_policy__field(obj, own) : NULL;
    if (own && !ov)
        return ag_error_set(err, AG_EINVAL, own,
                            "%s is required for the %s signal", own,
                            ag_signal_name(p->signal));
    if (p->signal == AG_SIGNAL_IP_LISTED)
        rc = read_lists(ov, p, err);
    else if (p->signal == AG_SIGNAL_IP_COUNTRY)
        rc = read_countries(ov, p, err);
    if (!rc && ag_signal_history(p->signal) &&
        p->action != AG_ACTION_CHALLENGE && p->mode != AG_MODE_SHADOW)
        return ag_error_set(err, AG_EINVAL, "action",
                            "action must be \"challenge\" for %s (or the "
                            "mode \"shadow\"): it is known only once the "
                            "check's counts are taken, so it may ask for a "
                            "second factor, never deny",
                            ag_signal_name(p->signal));
    return rc ? rc : read_shape(p, err);
}

/* The countries of p, in code order, as a new JSON list; NULL when out
 * of memory. */
static json_t *countries_json(const struct ag_policy *p)
{
    json_t *a = json_array();
    for (unsigned bit = 0; a && bit < AG_POLICY_COUNTRY_BITS; bit++) {
        if (!(p->countries[bit / 8] & 1u << bit % 8))
            continue;
        char code[3] = {(char)('A' + bit / 26), (char)('A' + bit % 26), 0};
        if (json_array_append_new(a, json_string(code)))
            return json_decref(a), NULL;
    }
    return a;
}

int ag_policy__write_signal(json_t *o, const struct ag_policy *p)
{
    if (p->algorithm != AG_ALG_SIGNAL)
        return AG_OK;
    if (json_object_set_new(o, "signal",
                            json_string(ag_signal_name(p->signal))))
        return AG_ENOMEM;
    if (p->signal == AG_SIGNAL_IP_LISTED) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < p->nlists; i++)
            if (json_array_append_new(a, json_string(p->lists[i])))
                return json_decref(a), AG_ENOMEM;
        if (!a || json_object_set_new(o, "lists", a))
            return AG_ENOMEM;
    }
    if (p->signal == AG_SIGNAL_IP_COUNTRY) {
        json_t *a = countries_json(p);
        if (!a || json_object_set_new(o, "countries", a))
            return AG_ENOMEM;
    }
    return AG_OK;
}
