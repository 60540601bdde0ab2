/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_ocsf: each event type's OCSF class, activity and type_uid; the
 * security_control profile's action and disposition of a denied and a
 * challenged login; the user and source carrying only the digest, the
 * ref and the network; a shield's raise, long hold and lowering as one
 * finding; time in Unix milliseconds; the original event under
 * "unmapped"; the format names. The schema's own check of these events is
 * tests/integration/test_ocsf.py's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ag_endpoint.h"
#include "ag_events.h"
#include "ag_ocsf.h"

#define DIGEST "0123456789abcdef0123456789abcdef"
#define T_MS 1796306531408ull /* 2026-12-03T14:02:11.408Z */

/* An event of type t as the events module writes it, with what most
 * events carry set, and its OCSF rendering. */
static json_t *rendered(struct ag_event *e, json_t **ours)
{
    if (!e->id[0])
        snprintf(e->id, sizeof e->id, "5f0c2a9e1b7d4c36-17");
    if (!e->time_ms)
        e->time_ms = T_MS;
    char *text = ag_event_json(e);
    assert_non_null(text);
    *ours = json_loads(text, 0, NULL);
    assert_non_null(*ours);
    char *ocsf = ag_ocsf_text(text, strlen(text));
    free(text);
    assert_non_null(ocsf);
    json_t *o = json_loads(ocsf, 0, NULL);
    free(ocsf);
    assert_non_null(o);
    return o;
}

static json_int_t int_at(const json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *at = o;
    for (char *save, *p = strtok_r(buf, ".", &save); p;
         p = strtok_r(NULL, ".", &save))
        at = json_object_get(at, p);
    assert_true(json_is_integer(at));
    return json_integer_value(at);
}

static const char *str_at(const json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *at = o;
    for (char *save, *p = strtok_r(buf, ".", &save); p;
         p = strtok_r(NULL, ".", &save))
        at = json_object_get(at, p);
    assert_true(json_is_string(at));
    return json_string_value(at);
}

static void every_type_has_its_class_and_type_uid(void **state)
{
    (void)state;
    static const struct {
        enum ag_event_type type;
        int class_uid, activity;
    } want[] = {
        {AG_EV_LOCKOUT, 3002, 1},
        {AG_EV_BLOCK_ESCALATED, 3002, 1},
        {AG_EV_RECOVERED, 3002, 1},
        {AG_EV_RESET, 3001, 12},
        {AG_EV_POLICY_CHANGED, 3004, 3},
        {AG_EV_LIST_CHANGED, 3004, 1},
        {AG_EV_PASSWORD_SPRAY, 2004, 1},
        {AG_EV_CONVERSION_BLOCK, 2004, 1},
        {AG_EV_BREACHED_PASSWORD_LOGIN, 2004, 1},
        {AG_EV_NEW_COUNTRY_LOGIN, 2004, 1},
        {AG_EV_IMPOSSIBLE_TRAVEL, 2004, 1},
        {AG_EV_SHIELD_RAISED, 2004, 1},
        {AG_EV_SHIELD_LONG, 2004, 2},
        {AG_EV_SHIELD_LOWERED, 2004, 3},
        {AG_EV_BREAKER_OPEN, 2004, 1},
        {AG_EV_BREAKER_CLOSED, 2004, 3},
        {AG_EV_FLEET_LAGGING, 2004, 1},
        {AG_EV_FLEET_RECORD_REFUSED, 2004, 1},
        {AG_EV_FLEET_DIVERGED, 2004, 1},
        {AG_EV_FLEET_HELD, 2004, 1},
    };
    /* Every type is in the table: a new one must be mapped here too. */
    assert_int_equal(sizeof want / sizeof want[0], AG_EV_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct ag_event e;
        ag_event_init(&e, want[i].type);
        snprintf(e.key, sizeof e.key, DIGEST);
        snprintf(e.policy, sizeof e.policy, "login.user");
        if (want[i].type == AG_EV_LIST_CHANGED) {
            snprintf(e.list, sizeof e.list, "deny");
            snprintf(e.change, sizeof e.change, "add");
            e.entry = 7;
        }
        if (want[i].type == AG_EV_POLICY_CHANGED)
            snprintf(e.change, sizeof e.change, "put");
        json_t *ours, *o = rendered(&e, &ours);
        int cls = want[i].class_uid;
        assert_int_equal(int_at(o, "class_uid"), cls);
        assert_int_equal(int_at(o, "category_uid"), cls / 1000);
        assert_int_equal(int_at(o, "activity_id"), want[i].activity);
        assert_int_equal(int_at(o, "type_uid"), cls * 100 + want[i].activity);
        assert_int_equal(int_at(o, "time"), (json_int_t)T_MS);
        assert_string_equal(str_at(o, "metadata.uid"), "5f0c2a9e1b7d4c36-17");
        assert_string_equal(str_at(o, "metadata.version"), AG_OCSF_VERSION);
        assert_string_equal(str_at(o, "metadata.product.name"), "abuseguard");
        assert_string_equal(str_at(o, "metadata.product.version"), AG_VERSION);
        assert_string_equal(str_at(o, "metadata.event_code"),
                            ag_event_type_name(want[i].type));
        assert_true(int_at(o, "severity_id") >= 1);
        /* Nothing of ours is lost. */
        assert_true(json_equal(json_object_get(o, "unmapped"), ours));
        json_decref(ours);
        json_decref(o);
    }
}

static void
denied_and_challenged_logins_fail_with_their_disposition(void **state)
{
    (void)state;
    static const struct {
        const char *action;
        int disposition;
    } cases[] = {{"deny", 2}, {"challenge", 23}};
    for (size_t i = 0; i < 2; i++) {
        struct ag_event e;
        ag_event_init(&e, AG_EV_LOCKOUT);
        snprintf(e.key, sizeof e.key, DIGEST);
        snprintf(e.action, sizeof e.action, "%s", cases[i].action);
        snprintf(e.ref, sizeof e.ref, "u-hash-42");
        e.endpoint = AG_EP_LOGIN;
        memcpy(e.net.country, "DE", 3);
        memcpy(e.net.asn, "3320", 5);
        json_t *ours, *o = rendered(&e, &ours);
        assert_int_equal(int_at(o, "status_id"), 2); /* Failure */
        assert_int_equal(int_at(o, "action_id"), 2); /* Denied */
        assert_int_equal(int_at(o, "disposition_id"), cases[i].disposition);
        assert_string_equal(
            json_string_value(json_array_get(
                json_object_get(json_object_get(o, "metadata"), "profiles"),
                0)),
            "security_control");
        /* The user is the backend's ref; the key (a user and address's,
         * an address's: no user's) is what ties the key's events. */
        assert_string_equal(str_at(o, "user.uid"), "u-hash-42");
        assert_null(json_object_get(json_object_get(o, "user"), "uid_alt"));
        assert_string_equal(str_at(o, "metadata.correlation_uid"), DIGEST);
        assert_string_equal(str_at(o, "service.name"), "login");
        assert_string_equal(str_at(o, "src_endpoint.location.country"), "DE");
        assert_int_equal(int_at(o, "src_endpoint.autonomous_system.number"),
                         3320);
        /* The source is its network, never an address. */
        const json_t *src = json_object_get(o, "src_endpoint");
        assert_int_equal(json_object_size(src), 2);
        json_decref(ours);
        json_decref(o);
    }
}

static void a_recovery_is_a_successful_logon(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_RECOVERED);
    snprintf(e.key, sizeof e.key, DIGEST);
    e.endpoint = AG_EP_LOGIN;
    json_t *ours, *o = rendered(&e, &ours);
    assert_int_equal(int_at(o, "status_id"), 1);
    assert_int_equal(int_at(o, "action_id"), 1);
    assert_int_equal(int_at(o, "disposition_id"), 1);
    json_decref(ours);
    json_decref(o);
}

static void a_shields_raise_hold_and_lowering_are_one_finding(void **state)
{
    (void)state;
    enum ag_event_type types[] = {AG_EV_SHIELD_RAISED, AG_EV_SHIELD_LONG,
                                  AG_EV_SHIELD_LOWERED};
    char first[256] = "";
    for (size_t i = 0; i < 3; i++) {
        struct ag_event e;
        ag_event_init(&e, types[i]);
        snprintf(e.policy, sizeof e.policy, "login.site_failures");
        snprintf(e.action, sizeof e.action, "challenge");
        e.shield.since_ms = T_MS - 60000;
        e.shield.until_ms = T_MS + 60000;
        snprintf(e.id, sizeof e.id, "5f0c2a9e1b7d4c36-%zu", 30 + i);
        json_t *ours, *o = rendered(&e, &ours);
        const char *uid = str_at(o, "finding_info.uid");
        if (i == 0)
            snprintf(first, sizeof first, "%s", uid);
        assert_string_equal(uid, first);
        assert_non_null(strstr(uid, "login.site_failures"));
        json_decref(ours);
        json_decref(o);
    }
    /* Two raises are two findings. */
    struct ag_event e;
    ag_event_init(&e, AG_EV_SHIELD_RAISED);
    snprintf(e.policy, sizeof e.policy, "login.site_failures");
    e.shield.since_ms = T_MS;
    json_t *ours, *o = rendered(&e, &ours);
    assert_string_not_equal(str_at(o, "finding_info.uid"), first);
    json_decref(ours);
    json_decref(o);
}

static void a_logins_finding_names_its_user_as_evidence(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_BREACHED_PASSWORD_LOGIN);
    snprintf(e.key, sizeof e.key, DIGEST);
    snprintf(e.ref, sizeof e.ref, "u-hash-42");
    memcpy(e.net.country, "FR", 3);
    json_t *ours, *o = rendered(&e, &ours);
    const json_t *ev = json_array_get(json_object_get(o, "evidences"), 0);
    /* A login's key is its user's digest: beside the ref. */
    assert_string_equal(str_at(ev, "user.uid"), "u-hash-42");
    assert_string_equal(str_at(ev, "user.uid_alt"), DIGEST);
    assert_string_equal(str_at(ev, "src_endpoint.location.country"), "FR");
    assert_int_equal(int_at(o, "disposition_id"), 15); /* Detected */
    assert_true(json_is_true(json_object_get(o, "is_alert")));
    json_decref(ours);
    json_decref(o);
    /* A spray's key is a password's, no user: a resource. */
    ag_event_init(&e, AG_EV_PASSWORD_SPRAY);
    snprintf(e.key, sizeof e.key, DIGEST);
    snprintf(e.policy, sizeof e.policy, "login.password_spray");
    o = rendered(&e, &ours);
    assert_null(json_object_get(o, "evidences"));
    const json_t *r = json_array_get(json_object_get(o, "resources"), 0);
    assert_string_equal(str_at(r, "uid"), DIGEST);
    assert_string_equal(str_at(r, "type"), "login.password_spray");
    json_decref(ours);
    json_decref(o);
    /* A lockout without a ref names no user it does not know. */
    ag_event_init(&e, AG_EV_LOCKOUT);
    snprintf(e.key, sizeof e.key, DIGEST);
    o = rendered(&e, &ours);
    assert_string_equal(str_at(o, "user.name"), "unknown");
    assert_null(json_object_get(json_object_get(o, "user"), "uid"));
    json_decref(ours);
    json_decref(o);
}

static void time_is_unix_milliseconds(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        json_int_t ms;
    } cases[] = {
        {"2026-12-03T14:02:11.408Z", 1796306531408},
        {"2024-02-29T23:59:59.999Z", 1709251199999},
        {"1970-01-01T00:00:00.000Z", 0},
        {"2026-12-03T14:02:11Z", 1796306531000},
        {"not a time", 0},
        {"2026-12-03T14:02:11.408+01:00", 0},
        {"2000-02-29T23:59:59.9Z", 951868799900},
        {"2026-12-03T14:02:11.408", 0},  /* no zone */
        {"2026-13-03T14:02:11.408Z", 0}, /* no 13th month */
        {"2026-12-03T24:02:11.408Z", 0}, /* no hour 24 */
        {"2026-12-03T14:02:11.Z", 0},    /* a point, no digit */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *ev = json_pack("{s:s,s:s,s:s}", "id", "x-1", "type", "reset",
                               "time", cases[i].text);
        json_t *o = ag_ocsf_event(ev);
        assert_non_null(o);
        assert_int_equal(int_at(o, "time"), cases[i].ms);
        json_decref(o);
        json_decref(ev);
    }
}

static void an_unknown_type_is_an_unknown_finding(void **state)
{
    (void)state;
    json_t *ev =
        json_pack("{s:s,s:s,s:s,s:s}", "id", "x-1", "type", "from_the_future",
                  "time", "2026-12-03T14:02:11.408Z", "stream_id", "1-0");
    json_t *o = ag_ocsf_event(ev);
    assert_int_equal(int_at(o, "class_uid"), 2004);
    assert_int_equal(int_at(o, "severity_id"), 0);
    assert_string_equal(str_at(o, "unmapped.stream_id"), "1-0");
    json_decref(o);
    json_decref(ev);
    json_t *arr = json_array();
    assert_null(ag_ocsf_event(arr));
    assert_null(ag_ocsf_event(NULL));
    json_decref(arr);
    assert_null(ag_ocsf_text("[1]", 3));
    assert_null(ag_ocsf_text("{", 1));
}

static void format_names_are_json_and_ocsf(void **state)
{
    (void)state;
    assert_int_equal(ag_event_format_parse("json"), AG_EVENT_FORMAT_JSON);
    assert_int_equal(ag_event_format_parse("ocsf"), AG_EVENT_FORMAT_OCSF);
    assert_int_equal(ag_event_format_parse("OCSF"), -1);
    assert_int_equal(ag_event_format_parse(""), -1);
    assert_int_equal(ag_event_format_parse(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_type_has_its_class_and_type_uid),
        cmocka_unit_test(
            denied_and_challenged_logins_fail_with_their_disposition),
        cmocka_unit_test(a_recovery_is_a_successful_logon),
        cmocka_unit_test(a_shields_raise_hold_and_lowering_are_one_finding),
        cmocka_unit_test(a_logins_finding_names_its_user_as_evidence),
        cmocka_unit_test(time_is_unix_milliseconds),
        cmocka_unit_test(an_unknown_type_is_an_unknown_finding),
        cmocka_unit_test(format_names_are_json_and_ocsf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
