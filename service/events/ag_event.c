/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One security event as a value: its type's name, its JSON, and what is
 * read for it from a policy's Redis keys and values. No I/O, no state.
 */
#include "ag_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_clock.h"
#include "ag_endpoint.h"

static const char *const type_names[AG_EV_COUNT] = {
    [AG_EV_LOCKOUT] = "lockout",
    [AG_EV_BLOCK_ESCALATED] = "block_escalated",
    [AG_EV_CONVERSION_BLOCK] = "conversion_block",
    [AG_EV_PASSWORD_SPRAY] = "password_spray",
    [AG_EV_RESET] = "reset",
    [AG_EV_POLICY_CHANGED] = "policy_changed",
    [AG_EV_LIST_CHANGED] = "list_changed",
    [AG_EV_BREAKER_OPEN] = "breaker_open",
    [AG_EV_BREAKER_CLOSED] = "breaker_closed",
    [AG_EV_SHIELD_RAISED] = "shield_raised",
    [AG_EV_SHIELD_LOWERED] = "shield_lowered",
    [AG_EV_RECOVERED] = "account_recovered",
    [AG_EV_BREACHED_PASSWORD_LOGIN] = "breached_password_login",
    [AG_EV_SHIELD_LONG] = "shield_long",
    [AG_EV_FLEET_LAGGING] = "fleet_lagging",
    [AG_EV_FLEET_RECORD_REFUSED] = "fleet_record_refused",
    [AG_EV_FLEET_DIVERGED] = "fleet_diverged",
    [AG_EV_FLEET_HELD] = "fleet_held",
    [AG_EV_NEW_COUNTRY_LOGIN] = "new_country_login",
    [AG_EV_IMPOSSIBLE_TRAVEL] = "impossible_travel",
};

const char *ag_event_type_name(enum ag_event_type t)
{
    return t >= 0 && t < AG_EV_COUNT ? type_names[t] : "unknown";
}

void ag_event_init(struct ag_event *e, enum ag_event_type type)
{
    memset(e, 0, sizeof *e);
    e->type = type;
    e->endpoint = -1;
}

/* Adds key: value to o unless v is NULL (out of memory) */
static int set_new(json_t *o, const char *key, json_t *v)
{
    return v ? json_object_set_new(o, key, v) : -1;
}

/* Adds the time ms as RFC 3339 text under key. */
static int set_time(json_t *o, const char *key, uint64_t ms)
{
    char text[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339(ms, text);
    return set_new(o, key, json_string(text));
}

/* A shield's figures (struct ag_event_shield). */
static int set_shield(json_t *o, const struct ag_event_shield *s)
{
    int bad = set_new(o, "rate", json_integer((json_int_t)s->rate));
    bad = bad || set_new(o, "current", json_integer((json_int_t)s->current));
    bad = bad ||
          set_new(o, "baseline", json_real((double)s->baseline_milli / 1000.0));
    bad =
        bad || set_new(o, "threshold", json_integer((json_int_t)s->threshold));
    bad = bad || set_time(o, "since", s->since_ms);
    bad = bad || set_time(o, "until", s->until_ms);
    bad =
        bad || set_new(o, "source", json_string(s->local ? "local" : "shared"));
    bad = bad || set_new(o, "operator", json_boolean(s->by_operator));
    return bad || (s->resumed && set_new(o, "resumed", json_true()));
}

/* The fleet's figures (struct ag_event_fleet). */
static int set_fleet(json_t *o, const struct ag_event_fleet *f)
{
    int bad = set_new(o, "instance", json_string(f->instance));
    bad = bad || set_new(o, "version", json_integer(f->version));
    bad = bad || set_new(o, "head_version", json_integer(f->head));
    bad = bad || (f->record && set_new(o, "record", json_integer(f->record)));
    bad = bad || set_new(o, "lag_seconds", json_integer((json_int_t)f->lag_s));
    return bad || set_new(o, "reason", json_string(f->reason));
}

void ag_event_network(struct ag_event *e, const struct ag_request_net *n)
{
    if (!n->looked)
        return;
    memcpy(e->net.country, n->country, sizeof e->net.country);
    memcpy(e->net.asn, n->asn, sizeof e->net.asn);
    ag_request_net_lists(n, ",", e->net.lists, sizeof e->net.lists);
}

/* "network": what is known of the address; non-zero when out of
 * memory. */
static int set_network(json_t *o, const struct ag_event_network *n)
{
    json_t *net = json_object();
    int bad = !net;
    if (!bad && n->country[0])
        bad = set_new(net, "country", json_string(n->country));
    if (!bad && n->asn[0])
        bad = set_new(net, "asn",
                      json_integer((json_int_t)strtoull(n->asn, NULL, 10)));
    json_t *lists = n->lists[0] ? json_array() : NULL;
    for (const char *at = n->lists; !bad && lists && *at;) {
        size_t len = strcspn(at, ",");
        bad = json_array_append_new(lists, json_stringn(at, len));
        at += len + (at[len] == ',');
    }
    if (!bad && lists)
        bad = set_new(net, "lists", lists), lists = NULL;
    json_decref(lists);
    if (bad) {
        json_decref(net);
        return 1;
    }
    return set_new(o, "network", net);
}

/* "travel": {"from", "to"} and, of an impossible journey, "km" and
 * "kmh" (null: no time at all). */
static int set_travel(json_t *o, enum ag_event_type type,
                      const struct ag_event_travel *t)
{
    json_t *v = json_object();
    int bad = !v;
    if (!bad && t->from[0])
        bad = set_new(v, "from", json_string(t->from));
    if (!bad && t->to[0])
        bad = set_new(v, "to", json_string(t->to));
    if (!bad && type == AG_EV_IMPOSSIBLE_TRAVEL) {
        bad = set_new(v, "km", json_integer(t->km));
        bad = bad || set_new(v, "kmh",
                             t->instant ? json_null() : json_integer(t->kmh));
    }
    if (bad) {
        json_decref(v);
        return 1;
    }
    return set_new(o, "travel", v);
}

char *ag_event_json(const struct ag_event *e)
{
    char when[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339(e->time_ms, when);
    json_t *o = json_object();
    int bad = !o;
    bad = bad || set_new(o, "id", json_string(e->id));
    bad = bad || set_new(o, "type", json_string(ag_event_type_name(e->type)));
    bad = bad || set_new(o, "time", json_string(when));
    if (!bad && e->policy[0])
        bad = set_new(o, "policy", json_string(e->policy));
    if (!bad && e->endpoint >= 0 && e->endpoint < AG_EP_COUNT)
        bad = set_new(
            o, "endpoint",
            json_string(ag_endpoint_name((enum ag_endpoint)e->endpoint)));
    if (!bad && e->key[0])
        bad = set_new(o, "key", json_string(e->key));
    if (!bad && e->action[0])
        bad = set_new(o, "action", json_string(e->action));
    if (!bad && e->retry_after_s)
        bad = set_new(o, "retry_after", json_integer(e->retry_after_s));
    if (!bad && e->level)
        bad = set_new(o, "level", json_integer(e->level));
    if (!bad && e->list[0])
        bad = set_new(o, "list", json_string(e->list));
    if (!bad && e->change[0])
        bad = set_new(o, "change", json_string(e->change));
    if (!bad && e->entry)
        bad = set_new(o, "entry", json_integer(e->entry));
    if (!bad && e->lane[0])
        bad = set_new(o, "lane", json_string(e->lane));
    if (!bad && e->ref[0])
        bad = set_new(o, "ref", json_string(e->ref));
    if (!bad && (e->net.country[0] || e->net.asn[0] || e->net.lists[0]))
        bad = set_network(o, &e->net);
    if (!bad &&
        (e->type == AG_EV_SHIELD_RAISED || e->type == AG_EV_SHIELD_LOWERED ||
         e->type == AG_EV_SHIELD_LONG))
        bad = set_shield(o, &e->shield);
    if (!bad && e->type >= AG_EV_FLEET_LAGGING && e->type <= AG_EV_FLEET_HELD)
        bad = set_fleet(o, &e->fleet);
    if (!bad && (e->type == AG_EV_NEW_COUNTRY_LOGIN ||
                 e->type == AG_EV_IMPOSSIBLE_TRAVEL))
        bad = set_travel(o, e->type, &e->travel);
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

uint32_t ag_event_level_parse(const char *text, size_t len)
{
    uint32_t n = 0;
    size_t i = 0;
    while (i < len && text[i] >= '0' && text[i] <= '9' && n < 100000000u)
        n = n * 10 + (uint32_t)(text[i++] - '0');
    return i > 0 && i < len && text[i] == ' ' ? n : 0;
}

bool ag_event_spray_policy(const struct ag_policy *p)
{
    if (p->algorithm != AG_ALG_DISTINCT)
        return false;
    for (size_t k = 0; k < p->nkeys; k++)
        if (p->key[k] == AG_KEY_PASSWORD_FP)
            return true;
    return false;
}

void ag_event_key_digest(const char *store_key, char *out)
{
    out[0] = '\0';
    const char *d = strrchr(store_key, ':');
    if (!d)
        return;
    d++;
    if (*d == '{')
        d++;
    size_t n = strspn(d, "0123456789abcdef");
    if (n != AG_DIGEST_HEX)
        return;
    memcpy(out, d, n);
    out[n] = '\0';
}
