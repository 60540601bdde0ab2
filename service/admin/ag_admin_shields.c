/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_admin_shields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_clock.h"
#include "ag_log.h"
#include "ag_overview.h"

/* Copies the client's field name into err->field in a safe alphabet
 * (anything else as '?'), as the policy validator echoes one. */
static int unknown_field(struct ag_error *err, const char *field)
{
    size_t i;
    for (i = 0; field[i] && i + 1 < sizeof err->field; i++) {
        char c = field[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        err->field[i] = ok ? c : '?';
    }
    err->field[i] = '\0';
    err->code = AG_EINVAL;
    snprintf(err->msg, sizeof err->msg,
             "unknown field \"%s\": a shield switch takes raise_for_s, "
             "lower or lower_for_s",
             err->field);
    return AG_EINVAL;
}

int ag_admin_shield_switch_parse(const char *body, size_t len,
                                 struct ag_shield_switch *out,
                                 struct ag_error *err)
{
    *out = (struct ag_shield_switch){0};
    json_error_t jerr;
    json_t *o =
        json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        return ag_error_set(err, AG_EINVAL, "body",
                            "body is not valid JSON: %s at line %d column %d",
                            jerr.text, jerr.line, jerr.column);
    int rc = AG_OK;
    const char *field;
    json_t *v;
    if (!json_is_object(o)) {
        rc = ag_error_refuse(err, "body", "must be a JSON object");
    } else {
        json_object_foreach(o, field, v)
        {
            if (strcmp(field, "raise_for_s") != 0 &&
                strcmp(field, "lower") != 0 &&
                strcmp(field, "lower_for_s") != 0) {
                rc = unknown_field(err, field);
                break;
            }
        }
    }
    const json_t *raise = rc ? NULL : json_object_get(o, "raise_for_s");
    const json_t *lower = rc ? NULL : json_object_get(o, "lower");
    const json_t *lower_for = rc ? NULL : json_object_get(o, "lower_for_s");
    int given = (raise != NULL) + (lower != NULL) + (lower_for != NULL);
    if (rc) {
        /* Refused above. */
    } else if (given > 1) {
        rc = ag_error_refuse(err, raise && lower ? "lower" : "lower_for_s",
                             "one switch at a time: raise_for_s, lower or "
                             "lower_for_s");
    } else if (!given) {
        rc = ag_error_set(err, AG_EINVAL, "raise_for_s",
                          "raise_for_s (seconds, 1 to %u), \"lower\": true "
                          "or lower_for_s (seconds, 0 to %u) is required",
                          AG_SHIELD_RAISE_MAX_S, AG_SHIELD_RAISE_MAX_S);
    } else if (lower) {
        if (!json_is_true(lower))
            rc = ag_error_refuse(err, "lower", "must be true");
        out->lower = true;
        out->lower_for_s = AG_SHIELDS_LOWER_HOLD;
    } else if (lower_for) {
        if (!json_is_integer(lower_for) || json_integer_value(lower_for) < 0 ||
            json_integer_value(lower_for) > AG_SHIELD_RAISE_MAX_S)
            rc = ag_error_set(err, AG_EINVAL, "lower_for_s",
                              "lower_for_s must be an integer from 0 to %u "
                              "(seconds)",
                              AG_SHIELD_RAISE_MAX_S);
        out->lower = true;
        out->lower_for_s = (uint32_t)json_integer_value(lower_for);
    } else if (!json_is_integer(raise) || json_integer_value(raise) < 1 ||
               json_integer_value(raise) > AG_SHIELD_RAISE_MAX_S) {
        rc = ag_error_set(err, AG_EINVAL, "raise_for_s",
                          "raise_for_s must be an integer from 1 to %u "
                          "(seconds)",
                          AG_SHIELD_RAISE_MAX_S);
    } else {
        out->raise_for_s = (uint32_t)json_integer_value(raise);
    }
    json_decref(o);
    if (rc)
        *out = (struct ag_shield_switch){0};
    return rc;
}

/* key: the time ms as RFC 3339 text, or null (when is false). */
static json_t *time_or_null(bool when, uint64_t ms)
{
    if (!when)
        return json_null();
    char text[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339(ms, text);
    return json_string(text);
}

static json_t *count(uint64_t n)
{
    return json_integer((json_int_t)n);
}

json_t *ag_admin_shield_json(const struct ag_shield_view *v,
                             const struct ag_policy *p)
{
    const struct ag_surge_state *st = &v->state;
    bool quiet = !st->raised && st->quiet_until_ms > v->now_ms;
    json_t *o = json_pack(
        "{s:s, s:b, s:o, s:o, s:o, s:o, s:f, s:o, s:o, s:o, s:f, s:I, s:s, "
        "s:o}",
        "name", v->name, "raised", st->raised, "since",
        time_or_null(st->raised, st->since_ms), "until",
        time_or_null(st->raised, st->until_ms), "rate", count(st->prev_count),
        "current", count(st->count), "baseline",
        (double)st->baseline_milli / 1000.0, "threshold", count(v->threshold),
        "attempts", count(st->prev_attempts), "current_attempts",
        count(st->attempts), "attempt_baseline",
        (double)st->attempt_baseline_milli / 1000.0, "window_s",
        (json_int_t)p->window_s, "source",
        v->source == AG_SHIELD_SHARED ? "shared" : "local", "stepped_at",
        time_or_null(v->stepped, v->now_ms));
    /* How it learns, who switched it, and the configurations in use. */
    if (o &&
        json_object_update_new(
            o,
            json_pack("{s:b, s:b, s:o, s:I, s:s, s:I, s:s}", "learning",
                      v->young, "operator", st->raised && st->by_operator,
                      "lowered_until", time_or_null(quiet, st->quiet_until_ms),
                      "switches", (json_int_t)st->switch_version, "shape",
                      v->shape, "other_configurations", (json_int_t)v->others,
                      "other_configuration", v->other))) {
        json_decref(o);
        return NULL;
    }
    /* The policy's own words for these, from the one place that names
     * them. */
    json_t *record = o ? ag_policy_to_json(p) : NULL;
    static const char *const from_policy[] = {"endpoint", "counts", "mode",
                                              "action", "applies_to"};
    for (size_t i = 0; record && i < sizeof from_policy / sizeof *from_policy;
         i++) {
        json_t *x = json_object_get(record, from_policy[i]);
        if (!x || json_object_set(o, from_policy[i], x)) {
            json_decref(record);
            record = NULL;
        }
    }
    if (!record) {
        json_decref(o);
        return NULL;
    }
    json_decref(record);
    return o;
}

/* The policy of set named name, or NULL. */
static const struct ag_policy *policy_of(const struct ag_ruleset *set,
                                         const char *name)
{
    for (size_t i = 0; set && i < set->count; i++)
        if (strcmp(set->policies[i].name, name) == 0)
            return &set->policies[i];
    return NULL;
}

static int send_json(struct ag_http_response *r, int status, json_t *o)
{
    if (!o)
        return ag_http_response_error(r, 500,
                                      "out of memory building the response");
    int rc = ag_http_response_json(r, status, o);
    json_decref(o);
    return rc;
}

static int not_allowed(struct ag_http_response *r, const char *allow)
{
    r->allow = allow;
    return ag_http_response_error(r, 405, "method not allowed");
}

/* Every shield, or only the one named name (NULL: every one), as JSON:
 * a list, or (name) that shield or null. *ok false when out of memory.
 * A shield whose policy left the set between the two reads is left
 * out. */
static json_t *shields_json(struct ag_service *svc, const char *name, bool *ok)
{
    struct ag_shield_view *views;
    size_t n;
    *ok = false;
    struct ag_ruleset *set = ag_service_ruleset(svc);
    if (ag_shields_views(ag_service_shields(svc), &views, &n)) {
        ag_ruleset_unref(set);
        return NULL;
    }
    json_t *list = name ? NULL : json_array();
    json_t *one = NULL;
    bool bad = !name && !list;
    for (size_t i = 0; !bad && i < n; i++) {
        const struct ag_policy *p = policy_of(set, views[i].name);
        if (!p || (name && strcmp(name, views[i].name) != 0))
            continue;
        json_t *o = ag_admin_shield_json(&views[i], p);
        if (name)
            one = o;
        bad = !o || (!name && json_array_append_new(list, o));
    }
    free(views);
    ag_ruleset_unref(set);
    if (bad) {
        json_decref(list);
        json_decref(one);
        return NULL;
    }
    *ok = true;
    return name ? one : list;
}

/* POST /admin/shields/{name}: the operator's switch. */
static int switch_shield(struct ag_service *svc,
                         const struct ag_admin_shields_request *req,
                         const char *name, struct ag_http_response *r,
                         struct ag_admin_shield_audit *audit)
{
    if (strcmp(req->method, "POST") != 0)
        return not_allowed(r, "POST");
    struct ag_error err;
    if (ag_policy_name_check(name, &err))
        return ag_http_response_refusal(r, 400, &err);
    struct ag_shield_switch sw;
    if (ag_admin_shield_switch_parse(req->body, req->len, &sw, &err))
        return ag_http_response_refusal(r, 400, &err);
    struct ag_shields *sh = ag_service_shields(svc);
    uint32_t quiet_s = 0;
    int rc = sw.lower ? ag_shields_lower(sh, name, sw.lower_for_s, &quiet_s)
                      : ag_shields_raise(sh, name, sw.raise_for_s);
    if (rc == AG_ENOTFOUND)
        return ag_http_response_error(
            r, 404, "no enabled surge policy of that name: no such shield");
    if (rc != AG_OK && rc != AG_ESTORE)
        return ag_http_response_error(r, 500, "the switch failed");
    /* Done, in Redis or in this instance alone: audited either way. */
    bool ok;
    json_t *shield = shields_json(svc, name, &ok);
    audit->action = sw.lower ? "shield_lower" : "shield_raise";
    snprintf(audit->policy, sizeof audit->policy, "%s", name);
    audit->after =
        sw.lower
            ? json_pack("{s:b, s:I, s:s}", "lower", 1, "lower_for_s",
                        (json_int_t)quiet_s, "applied",
                        rc == AG_OK ? "shared" : "local")
            : json_pack("{s:I, s:s}", "raise_for_s", (json_int_t)sw.raise_for_s,
                        "applied", rc == AG_OK ? "shared" : "local");
    if (!ok)
        return send_json(r, 200, NULL);
    if (!shield)
        shield = json_null(); /* its policy left the set meanwhile */
    if (rc == AG_ESTORE) {
        ag_log(AG_LOG_WARN, "shield_switch_local",
               "policy=%s Redis did not take the switch: this instance "
               "alone applied it",
               name);
        return send_json(
            r, 503,
            json_pack("{s:s, s:o}", "error",
                      "Redis did not take the switch: only this instance "
                      "applied it, to its own state (the other instances "
                      "have not); try again once Redis answers",
                      "shield", shield));
    }
    return send_json(r, 200, json_pack("{s:o}", "shield", shield));
}

int ag_admin_shields(struct ag_service *svc,
                     const struct ag_admin_shields_request *req,
                     struct ag_http_response *r,
                     struct ag_admin_shield_audit *audit)
{
    *audit = (struct ag_admin_shield_audit){0};
    if (strncmp(req->path, "/shields/", 9) == 0)
        return switch_shield(svc, req, req->path + 9, r, audit);
    if (strcmp(req->method, "GET") != 0)
        return not_allowed(r, "GET");
    bool ok;
    json_t *list = shields_json(svc, NULL, &ok);
    return send_json(r, 200, ok ? json_pack("{s:o}", "shields", list) : NULL);
}

int ag_admin_overview(struct ag_service *svc,
                      const struct ag_admin_shields_request *req, json_t *fleet,
                      struct ag_http_response *r)
{
    if (strcmp(req->method, "GET") != 0) {
        json_decref(fleet);
        return not_allowed(r, "GET");
    }
    json_t *o = ag_overview_json(ag_service_overview(svc), ag_clock_wall_ms());
    if (o && fleet && json_object_set_new(o, "fleet", fleet)) {
        json_decref(o);
        o = NULL;
    } else if (!o) {
        json_decref(fleet);
    }
    return send_json(r, 200, o);
}
