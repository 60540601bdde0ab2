/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Our events as OCSF events: one table row per type (its class, activity,
 * severity and, where abuseguard acted, the security_control profile's
 * action and disposition), then the objects each class needs.
 */
#define _GNU_SOURCE /* strptime, timegm */
#include "ag_ocsf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The classes used, their category and names. */
enum cls { AUTHENTICATION, ACCOUNT_CHANGE, ENTITY_MANAGEMENT, FINDING };

static const struct {
    int uid, category;
    const char *name, *category_name;
} classes[] = {
    [AUTHENTICATION] = {3002, 3, "Authentication",
                        "Identity & Access Management"},
    [ACCOUNT_CHANGE] = {3001, 3, "Account Change",
                        "Identity & Access Management"},
    [ENTITY_MANAGEMENT] = {3004, 3, "Entity Management",
                           "Identity & Access Management"},
    [FINDING] = {2004, 2, "Detection Finding", "Findings"},
};

/* What abuseguard did, as the security_control profile says it. */
enum act {
    NONE,     /* no control acted: no profile */
    ENFORCED, /* the event's "action": deny (Blocked) or challenge */
    OBSERVED, /* seen and told, the request not stopped: Detected */
    ALLOWED,  /* let through (a recovery) */
};

/* Activities that depend on the event's "change" are resolved in code
 * (activity 0 here). */
struct row {
    const char *type;
    enum cls cls;
    int activity; /* 0: from "change" */
    int severity; /* OCSF severity_id */
    enum act act;
    const char *title;
};

static const struct row rows[] = {
    {"lockout", AUTHENTICATION, 1, 3, ENFORCED,
     "A policy began turning a key away"},
    {"block_escalated", AUTHENTICATION, 1, 4, ENFORCED,
     "A growing block began above its first level"},
    {"account_recovered", AUTHENTICATION, 1, 2, ALLOWED,
     "A login succeeded by account recovery"},
    {"reset", ACCOUNT_CHANGE, 12, 1, NONE, "An operator reset a key"},
    {"policy_changed", ENTITY_MANAGEMENT, 0, 1, NONE,
     "An operator changed a policy"},
    {"list_changed", ENTITY_MANAGEMENT, 0, 1, NONE,
     "An operator changed an IP list"},
    {"password_spray", FINDING, 1, 4, ENFORCED,
     "A password is being sprayed across many users"},
    {"conversion_block", FINDING, 1, 3, ENFORCED,
     "SMS pumping: a number range or country was blocked"},
    {"breached_password_login", FINDING, 1, 4, OBSERVED,
     "A login succeeded with a breached password"},
    {"new_country_login", FINDING, 1, 2, OBSERVED,
     "A login succeeded from a country new to its user"},
    {"impossible_travel", FINDING, 1, 3, OBSERVED,
     "A login succeeded after an impossible journey"},
    {"shield_raised", FINDING, 1, 4, ENFORCED, "A site-wide shield was raised"},
    {"shield_long", FINDING, 2, 4, OBSERVED,
     "A site-wide shield has held longer than a normal wave"},
    {"shield_lowered", FINDING, 3, 1, NONE, "A site-wide shield came down"},
    {"breaker_open", FINDING, 1, 3, NONE,
     "An instance stopped using Redis (limits are local)"},
    {"breaker_closed", FINDING, 3, 1, NONE, "An instance uses Redis again"},
    {"fleet_record_refused", FINDING, 1, 4, NONE,
     "A fleet record did not open and was refused"},
    {"fleet_diverged", FINDING, 1, 4, NONE,
     "An instance's policies differ from its fleet's"},
    {"fleet_held", FINDING, 1, 3, NONE,
     "An instance holds at a fleet record it cannot apply"},
    {"fleet_lagging", FINDING, 1, 2, NONE, "An instance lags its fleet"},
};

/* A type this build does not know: told, not guessed at. */
static const struct row unknown_row = {NULL, FINDING, 1,
                                       0,    NONE,    "An abuseguard event"};

static const char *const severities[] = {
    "Unknown", "Informational", "Low", "Medium", "High", "Critical",
};

int ag_event_format_parse(const char *text)
{
    if (text && strcmp(text, "json") == 0)
        return AG_EVENT_FORMAT_JSON;
    if (text && strcmp(text, "ocsf") == 0)
        return AG_EVENT_FORMAT_OCSF;
    return -1;
}

/* ev's string member key, or NULL. */
static const char *str(const json_t *ev, const char *key)
{
    return json_string_value(json_object_get(ev, key));
}

/* Adds key: v to o unless v is NULL; non-zero when out of memory. */
static int set_new(json_t *o, const char *key, json_t *v)
{
    return v ? json_object_set_new(o, key, v) : -1;
}

/* Our "time" (RFC 3339, UTC, as ag_clock_rfc3339 writes it) in Unix ms;
 * 0 when it is not one (never for an event of ours). */
static json_int_t time_ms(const char *text)
{
    struct tm tm = {0};
    const char *p = text ? strptime(text, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!p)
        return 0;
    int ms = 0, digits = 0;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (digits++ < 3)
                ms = ms * 10 + (*p - '0');
        if (!digits)
            return 0;
        for (; digits < 3; digits++)
            ms *= 10;
    }
    time_t t = strcmp(p, "Z") == 0 ? timegm(&tm) : (time_t)-1;
    return t < 0 ? 0 : (json_int_t)t * 1000 + ms;
}

/* The "user": the backend's ref, its own reference of the user, as its
 * uid; the key's digest only where the key is the user's alone
 * (key_is_user: a recovery's, a login finding's), as uid_alt beside a
 * ref or as the uid without one. A lockout's key is any policy's (an
 * address's, a user and address's), no user: it is the event's
 * metadata.correlation_uid instead. The Authentication and Account
 * Change classes require a user, and OCSF one of uid, name or account in
 * it: one with neither is named "unknown". */
static json_t *user_of(const json_t *ev, bool key_is_user)
{
    const char *key = key_is_user ? str(ev, "key") : NULL;
    const char *ref = str(ev, "ref");
    json_t *u = json_object();
    int bad = !u;
    if (!bad && ref)
        bad = set_new(u, "uid", json_string(ref));
    if (!bad && key)
        bad = set_new(u, ref ? "uid_alt" : "uid", json_string(key));
    if (!bad && !key && !ref)
        bad = set_new(u, "name", json_string("unknown"));
    if (bad) {
        json_decref(u);
        return NULL;
    }
    return u;
}

/* The source's network as a network_endpoint: its country and AS number
 * (never the address, which no event holds); NULL when the event has
 * neither, or out of memory (*bad then). */
static json_t *source_of(const json_t *ev, int *bad)
{
    const json_t *net = json_object_get(ev, "network");
    const char *country = str(net, "country");
    const json_t *asn = json_object_get(net, "asn");
    if (!country && !json_is_integer(asn))
        return NULL;
    json_t *e = json_object();
    *bad = !e;
    if (!*bad && country)
        *bad = set_new(e, "location", json_pack("{s:s}", "country", country));
    if (!*bad && json_is_integer(asn))
        *bad = set_new(e, "autonomous_system",
                       json_pack("{s:I}", "number", json_integer_value(asn)));
    if (*bad) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* The activity of a change: put is an update (PUT creates or replaces),
 * add a create, delete a delete. */
static int change_activity(const char *change)
{
    if (change && strcmp(change, "add") == 0)
        return 1;
    if (change && strcmp(change, "delete") == 0)
        return 4;
    return 3;
}

static const char *const entity_activities[] = {
    "Unknown", "Create", "Read", "Update", "Delete",
};

static const char *activity_name(enum cls c, int activity)
{
    switch (c) {
    case AUTHENTICATION:
        return "Logon";
    case ACCOUNT_CHANGE:
        return "Unlock";
    case ENTITY_MANAGEMENT:
        return activity >= 0 && activity < (int)(sizeof entity_activities /
                                                 sizeof entity_activities[0])
                   ? entity_activities[activity]
                   : "Other";
    case FINDING:
        return activity == 3 ? "Close" : activity == 2 ? "Update" : "Create";
    }
    return "Unknown";
}

/* The security_control profile's fields for act; non-zero when out of
 * memory. */
static int set_control(json_t *o, const json_t *ev, enum act act)
{
    int action = 0, disposition = 0;
    const char *a = str(ev, "action");
    switch (act) {
    case NONE:
        return 0;
    case ENFORCED:
        action = 2;                                         /* Denied */
        disposition = a && strcmp(a, "challenge") == 0 ? 23 /* Challenge */
                                                       : 2; /* Blocked */
        break;
    case OBSERVED:
        action = 3;       /* Observed */
        disposition = 15; /* Detected */
        break;
    case ALLOWED:
        action = 1; /* Allowed */
        disposition = 1;
        break;
    }
    static const char *const actions[] = {"Unknown", "Allowed", "Denied",
                                          "Observed"};
    const char *disp = disposition == 23   ? "Challenge"
                       : disposition == 2  ? "Blocked"
                       : disposition == 15 ? "Detected"
                                           : "Allowed";
    int bad = set_new(o, "action_id", json_integer(action));
    bad = bad || set_new(o, "action", json_string(actions[action]));
    bad = bad || set_new(o, "disposition_id", json_integer(disposition));
    return bad || set_new(o, "disposition", json_string(disp));
}

/* finding_info: its uid ties a shield's raise, its long hold and its
 * lowering together (the policy and the raise's "since"); any other
 * finding is its event. */
static json_t *finding_of(const json_t *ev, const char *type, const char *title)
{
    const char *since = str(ev, "since"), *policy = str(ev, "policy");
    char uid[256];
    if (strncmp(type, "shield_", 7) == 0 && since && policy)
        snprintf(uid, sizeof uid, "abuseguard:shield:%s:%s", policy, since);
    else
        snprintf(uid, sizeof uid, "%s", str(ev, "id") ? str(ev, "id") : "");
    return json_pack("{s:s,s:s,s:[s]}", "uid", uid, "title", title, "types",
                     type);
}

/* The class's own objects: the user and the service logged on to, the
 * unlocked user, the changed entity, or the finding and its evidence. */
static int set_class(json_t *o, const json_t *ev, const char *type, enum cls c,
                     const char *title)
{
    int bad = 0;
    json_t *src = source_of(ev, &bad);
    const char *endpoint = str(ev, "endpoint");
    switch (c) {
    case AUTHENTICATION:
        bad =
            bad || set_new(o, "user",
                           user_of(ev, strcmp(type, "account_recovered") == 0));
        /* The service the user logs on to: the application's endpoint
         * that abuseguard guards. */
        bad = bad || set_new(o, "service",
                             json_pack("{s:s}", "name",
                                       endpoint ? endpoint : "abuseguard"));
        if (!bad && src)
            bad = set_new(o, "src_endpoint", src), src = NULL;
        break;
    case ACCOUNT_CHANGE:
        bad = bad || set_new(o, "user", user_of(ev, false));
        break;
    case ENTITY_MANAGEMENT: {
        const char *list = str(ev, "list");
        json_t *entity =
            list ? json_pack("{s:s,s:s}", "type", "ip list entry", "name", list)
                 : json_pack("{s:s,s:s}", "type", "policy", "name",
                             str(ev, "policy") ? str(ev, "policy") : "");
        const json_t *entry = json_object_get(ev, "entry");
        if (entity && json_is_integer(entry)) {
            char id[24];
            snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT,
                     json_integer_value(entry));
            bad = set_new(entity, "uid", json_string(id));
        }
        if (bad)
            json_decref(entity);
        else
            bad = set_new(o, "entity", entity);
        break;
    }
    case FINDING: {
        bad = bad || set_new(o, "finding_info", finding_of(ev, type, title));
        /* A login's user and source are evidence; a spray's or a
         * conversion block's key is no user (a password's fingerprint, a
         * number range): a resource. */
        const char *key = str(ev, "key");
        bool login = strcmp(type, "breached_password_login") == 0 ||
                     strcmp(type, "new_country_login") == 0 ||
                     strcmp(type, "impossible_travel") == 0;
        json_t *evidence = json_object();
        bad = bad || !evidence;
        if (!bad && login && (key || str(ev, "ref")))
            bad = set_new(evidence, "user", user_of(ev, true));
        if (!bad && src)
            bad = set_new(evidence, "src_endpoint", src), src = NULL;
        if (!bad && json_object_size(evidence))
            bad = set_new(o, "evidences", json_pack("[O]", evidence));
        json_decref(evidence);
        if (!bad && key && !login)
            bad = set_new(
                o, "resources",
                json_pack("[{s:s,s:s}]", "uid", key, "type",
                          str(ev, "policy") ? str(ev, "policy") : type));
        break;
    }
    }
    json_decref(src);
    return bad;
}

json_t *ag_ocsf_event(const json_t *ev)
{
    if (!json_is_object(ev))
        return NULL;
    const char *type = str(ev, "type");
    const struct row *row = &unknown_row;
    for (size_t i = 0; type && i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(rows[i].type, type) == 0)
            row = &rows[i];
    enum cls c = row->cls;
    int severity = row->severity;
    enum act act = row->act;
    const char *title = row->title;
    int activity =
        row->activity ? row->activity : change_activity(str(ev, "change"));
    json_t *o = json_object();
    json_t *meta = json_pack("{s:{s:s,s:s,s:s},s:s,s:s,s:s}", "product", "name",
                             "abuseguard", "vendor_name", "abuseguard",
                             "version", AG_VERSION, "version", AG_OCSF_VERSION,
                             "uid", str(ev, "id") ? str(ev, "id") : "",
                             "event_code", type ? type : "unknown");
    int bad = !o || !meta;
    if (!bad && act != NONE)
        bad = set_new(meta, "profiles", json_pack("[s]", "security_control"));
    /* Every event about one key (its lockouts, its escalations, its
     * reset) shares this. */
    if (!bad && str(ev, "key"))
        bad = set_new(meta, "correlation_uid", json_string(str(ev, "key")));
    if (bad) {
        json_decref(meta);
        json_decref(o);
        return NULL;
    }
    bad = set_new(o, "metadata", meta);
    int uid = classes[c].uid;
    bad = bad || set_new(o, "class_uid", json_integer(uid));
    bad = bad || set_new(o, "class_name", json_string(classes[c].name));
    bad = bad || set_new(o, "category_uid", json_integer(classes[c].category));
    bad = bad ||
          set_new(o, "category_name", json_string(classes[c].category_name));
    bad = bad || set_new(o, "activity_id", json_integer(activity));
    bad = bad ||
          set_new(o, "activity_name", json_string(activity_name(c, activity)));
    bad = bad || set_new(o, "type_uid",
                         json_integer((json_int_t)uid * 100 + activity));
    bad = bad || set_new(o, "time", json_integer(time_ms(str(ev, "time"))));
    bad = bad || set_new(o, "severity_id", json_integer(severity));
    bad = bad || set_new(o, "severity", json_string(severities[severity]));
    bad = bad || set_new(o, "message", json_string(title));
    if (!bad && c != FINDING) {
        /* A logon turned away failed; what an operator or a recovery did
         * succeeded. */
        bool failed = act == ENFORCED;
        bad = set_new(o, "status_id", json_integer(failed ? 2 : 1));
        bad = bad ||
              set_new(o, "status", json_string(failed ? "Failure" : "Success"));
    }
    bad = bad || set_control(o, ev, act);
    if (!bad && c == FINDING && act != NONE && activity != 3)
        bad = set_new(o, "is_alert", json_true());
    bad = bad || set_class(o, ev, type ? type : "unknown", c, title);
    /* The whole event, as we wrote it: nothing is lost in the mapping. */
    bad = bad || set_new(o, "unmapped", json_deep_copy(ev));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *ag_ocsf_text(const char *text, size_t len)
{
    json_t *ev = json_loadb(text, len, 0, NULL);
    json_t *o = ag_ocsf_event(ev);
    char *out = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    json_decref(ev);
    return out;
}
