/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_fleet_set: a set built from a snapshot holds its policies by name and
 * its entry rows; each operation of a change (policy_put, policy_delete,
 * list_add, list_delete, snapshot, audit) changes it as the database
 * would; a body or set of the wrong shape is refused with AG_EINVAL; the
 * policies' diff names what is added, changed (field by field, before
 * and after) and removed, sorted; the lists' diff counts entries whatever
 * their ids, order and force mark; and "same" holds exactly when nothing
 * changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_fleet_set.h"

/* JSON text with ' for " (easier to read in C), parsed; fails the test
 * if it does not parse. The caller owns the value. */
static json_t *js(const char *text)
{
    char buf[2048];
    size_t i = 0;
    for (; text[i] && i < sizeof buf - 1; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    buf[i] = '\0';
    json_error_t jerr;
    json_t *o = json_loads(buf, JSON_DECODE_ANY, &jerr);
    if (!o)
        fail_msg("bad test JSON (%s): %s", jerr.text, buf);
    return o;
}

/* Fails the test unless got equals the JSON text want. Takes got. */
static void assert_json(json_t *got, const char *want)
{
    json_t *w = js(want);
    assert_non_null(got);
    if (!json_equal(got, w)) {
        char *a = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        char *b = json_dumps(w, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        print_error("got  %s\nwant %s\n", a, b);
        free(a);
        free(b);
        json_decref(got);
        json_decref(w);
        fail();
    }
    json_decref(got);
    json_decref(w);
}

#define POL_A "{'name': 'login.ip', 'limit': 5, 'window_s': 60}"
#define POL_B "{'name': 'otp.user', 'limit': 3, 'window_s': 600}"
#define ROW_1 "{'id': 1, 'list': 'deny', 'kind': 'ip', 'value': '192.0.2.1/32'}"
#define ROW_2 "{'id': 2, 'list': 'allow', 'kind': 'ip', 'value': '10.0.0.0/8'}"
#define SNAP                                                                   \
    "{'policies': [{'version': 1, 'policy': " POL_A "}, {'version': 2, "       \
    "'policy': " POL_B "}], 'lists': [{'version': 1, 'entry': " ROW_1          \
    "}, {'version': 3, 'entry': " ROW_2 "}]}"
#define SET_AB                                                                 \
    "{'policies': {'login.ip': " POL_A ", 'otp.user': " POL_B "}, "            \
    "'lists': [" ROW_1 ", " ROW_2 "]}"

static json_t *set_of(const char *snap)
{
    json_t *s = js(snap);
    json_t *set = ag_fleet_set_from_snapshot(s);
    json_decref(s);
    assert_non_null(set);
    return set;
}

/* The result of applying body (JSON text) to a set from SNAP. */
static int apply_to_ab(const char *body, json_t **set)
{
    *set = set_of(SNAP);
    json_t *b = js(body);
    int rc = ag_fleet_set_apply(*set, b);
    json_decref(b);
    return rc;
}

static void new_set_is_empty(void **state)
{
    (void)state;
    assert_json(ag_fleet_set_new(), "{'policies': {}, 'lists': []}");
}

static void snapshot_gives_policies_by_name_and_rows(void **state)
{
    (void)state;
    assert_json(set_of(SNAP), SET_AB);
    assert_json(set_of("{'policies': [], 'lists': []}"),
                "{'policies': {}, 'lists': []}");
}

static void snapshot_of_wrong_shape_gives_null(void **state)
{
    (void)state;
    const char *bad[] = {
        "{'policies': []}",
        "{'lists': []}",
        "{'policies': {}, 'lists': []}",
        "{'policies': [], 'lists': {}}",
        "{'policies': [{'version': 1}], 'lists': []}",
        "{'policies': [{'policy': {'limit': 1}}], 'lists': []}",
        "{'policies': [{'policy': {'name': 7}}], 'lists': []}",
        "{'policies': [], 'lists': [{'version': 1}]}",
        "{'policies': [], 'lists': [{'entry': 'x'}]}",
        "[]",
        "null",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *s = js(bad[i]);
        json_t *set = ag_fleet_set_from_snapshot(s);
        if (set)
            fail_msg("a set from %s", bad[i]);
        json_decref(s);
    }
    assert_null(ag_fleet_set_from_snapshot(NULL));
}

static void each_operation_changes_the_set(void **state)
{
    (void)state;
    json_t *set;
    /* A new policy, a replaced one, an entry added, one deleted, an audit
     * that changes nothing. */
    assert_int_equal(
        apply_to_ab(
            "{'actor': 'admin-api', 'ops': ["
            "{'op': 'policy_put', 'policy': {'name': 'new.one', 'limit': 1}},"
            "{'op': 'policy_put', 'policy': {'name': 'login.ip', 'limit': 9}},"
            "{'op': 'list_add', 'entry': {'id': 3, 'list': 'deny', "
            "'kind': 'user', 'value': 'abcd'}},"
            "{'op': 'list_delete', 'list': 'deny', 'id': 1},"
            "{'op': 'audit', 'action': 'reset', 'name': 'login.ip'}]}",
            &set),
        AG_OK);
    assert_json(set, "{'policies': {'login.ip': {'name': 'login.ip', "
                     "'limit': 9}, 'otp.user': " POL_B ", 'new.one': "
                     "{'name': 'new.one', 'limit': 1}}, 'lists': [" ROW_2
                     ", {'id': 3, 'list': 'deny', 'kind': 'user', "
                     "'value': 'abcd'}]}");

    assert_int_equal(
        apply_to_ab("{'ops': [{'op': 'policy_delete', 'name': 'otp.user'}]}",
                    &set),
        AG_OK);
    assert_json(set, "{'policies': {'login.ip': " POL_A "}, 'lists': [" ROW_1
                     ", " ROW_2 "]}");

    assert_int_equal(apply_to_ab("{'ops': []}", &set), AG_OK);
    assert_json(set, SET_AB);
}

static void snapshot_operation_replaces_the_set(void **state)
{
    (void)state;
    json_t *set;
    /* What came before the snapshot is gone; what follows it applies. */
    assert_int_equal(
        apply_to_ab("{'ops': [{'op': 'snapshot', 'reason': 'join', "
                    "'policies': [{'version': 4, 'policy': " POL_B "}], "
                    "'lists': [{'version': 4, 'entry': " ROW_2 "}]}, "
                    "{'op': 'list_delete', 'list': 'allow', 'id': 2}, "
                    "{'op': 'policy_put', 'policy': " POL_A "}]}",
                    &set),
        AG_OK);
    assert_json(set, "{'policies': {'otp.user': " POL_B ", 'login.ip': " POL_A
                     "}, 'lists': []}");
}

static void malformed_body_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "{}",
        "[]",
        "{'ops': {}}",
        "{'ops': [7]}",
        "{'ops': [{}]}",
        "{'ops': [{'op': 3}]}",
        "{'ops': [{'op': 'policy_rename'}]}",
        "{'ops': [{'op': 'policy_put'}]}",
        "{'ops': [{'op': 'policy_put', 'policy': {'limit': 1}}]}",
        "{'ops': [{'op': 'policy_put', 'policy': 'login.ip'}]}",
        "{'ops': [{'op': 'policy_delete'}]}",
        "{'ops': [{'op': 'policy_delete', 'name': 'absent'}]}",
        "{'ops': [{'op': 'list_add'}]}",
        "{'ops': [{'op': 'list_add', 'entry': [1]}]}",
        "{'ops': [{'op': 'list_delete', 'list': 'deny', 'id': 99}]}",
        /* The database's rules: a list and an id of 1 up, and the entry
         * of that list (these passed before: an entry of the other list,
         * or a missing id read as 0). */
        "{'ops': [{'op': 'list_delete'}]}",
        "{'ops': [{'op': 'list_delete', 'list': 'deny'}]}",
        "{'ops': [{'op': 'list_delete', 'list': 'grey', 'id': 1}]}",
        "{'ops': [{'op': 'list_delete', 'list': 'deny', 'id': '1'}]}",
        "{'ops': [{'op': 'list_delete', 'list': 'deny', 'id': 0}]}",
        "{'ops': [{'op': 'list_delete', 'list': 'allow', 'id': 1}]}",
        "{'ops': [{'op': 'snapshot', 'policies': []}]}",
        "{'ops': [{'op': 'snapshot', 'policies': [{'policy': {}}], "
        "'lists': []}]}",
        "{'ops': [{'op': 'audit'}, {'op': 'nope'}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *set;
        int rc = apply_to_ab(bad[i], &set);
        if (rc != AG_EINVAL)
            fail_msg("%s gave %d", bad[i], rc);
        json_decref(set);
    }
    /* A set that is not one. */
    json_t *notset = js("{'policies': []}");
    json_t *body = js("{'ops': []}");
    assert_int_equal(ag_fleet_set_apply(notset, body), AG_EINVAL);
    assert_int_equal(ag_fleet_set_apply(NULL, body), AG_EINVAL);
    json_decref(notset);
    json_decref(body);
}

static void policies_diff_names_each_field(void **state)
{
    (void)state;
    json_t *a = js("{'gone': {'name': 'gone', 'limit': 1}, "
                   "'login.ip': {'name': 'login.ip', 'limit': 5, "
                   "'window_s': 60, 'note': 'x'}, 'otp.user': " POL_B "}");
    json_t *b = js("{'login.ip': {'name': 'login.ip', 'limit': 6, "
                   "'window_s': 60, 'action': {'deny': true}}, "
                   "'otp.user': " POL_B ", 'b.new': {'name': 'b.new'}, "
                   "'a.new': {'name': 'a.new'}}");
    bool same = true;
    assert_json(ag_fleet_policies_diff(a, b, &same),
                "{'added': ['a.new', 'b.new'], 'changed': [{'name': "
                "'login.ip', 'fields': ["
                "{'field': 'action', 'before': null, 'after': {'deny': true}},"
                "{'field': 'limit', 'before': 5, 'after': 6},"
                "{'field': 'note', 'before': 'x', 'after': null}]}], "
                "'removed': ['gone']}");
    assert_false(same);
    /* The other way round. */
    same = true;
    assert_json(ag_fleet_policies_diff(b, a, &same),
                "{'added': ['gone'], 'changed': [{'name': "
                "'login.ip', 'fields': ["
                "{'field': 'action', 'before': {'deny': true}, 'after': null},"
                "{'field': 'limit', 'before': 6, 'after': 5},"
                "{'field': 'note', 'before': null, 'after': 'x'}]}], "
                "'removed': ['a.new', 'b.new']}");
    assert_false(same);
    json_decref(a);
    json_decref(b);
}

static void policies_diff_of_equal_records_is_same(void **state)
{
    (void)state;
    json_t *a = js("{'p': {'name': 'p', 'limit': 1, 'rules': [1, 2]}}");
    json_t *b = js("{'p': {'rules': [1, 2], 'limit': 1, 'name': 'p'}}");
    bool same = false;
    assert_json(ag_fleet_policies_diff(a, b, &same),
                "{'added': [], 'changed': [], 'removed': []}");
    assert_true(same);
    json_t *empty = json_object();
    same = false;
    assert_json(ag_fleet_policies_diff(empty, empty, &same),
                "{'added': [], 'changed': [], 'removed': []}");
    assert_true(same);
    /* One added policy is enough to differ. */
    same = true;
    assert_json(ag_fleet_policies_diff(empty, a, &same),
                "{'added': ['p'], 'changed': [], 'removed': []}");
    assert_false(same);
    json_decref(empty);
    json_decref(a);
    json_decref(b);
}

/* The set diff of two sets given as JSON text, and its same flag. */
static json_t *set_diff(const char *a, const char *b, bool *same)
{
    json_t *x = js(a), *y = js(b);
    json_t *d = ag_fleet_set_diff(x, y, same);
    json_decref(x);
    json_decref(y);
    return d;
}

static void lists_diff_ignores_ids_order_and_force(void **state)
{
    (void)state;
    bool same = false;
    assert_json(set_diff("{'policies': {}, 'lists': [" ROW_1 ", " ROW_2 "]}",
                         "{'policies': {}, 'lists': ["
                         "{'id': 9, 'list': 'allow', 'kind': 'ip', "
                         "'value': '10.0.0.0/8'}, {'id': 8, 'list': 'deny', "
                         "'kind': 'ip', 'value': '192.0.2.1/32', "
                         "'force': true}]}",
                         &same),
                "{'policies': {'added': [], 'changed': [], 'removed': []}, "
                "'lists': {'added': 0, 'removed': 0}}");
    assert_true(same);
}

static void lists_diff_counts_each_entry_once(void **state)
{
    (void)state;
    bool same = true;
    /* A duplicate matches nothing the second time; a changed value is one
     * removed and one added. */
    assert_json(set_diff("{'policies': {}, 'lists': [" ROW_1 ", " ROW_2 "]}",
                         "{'policies': {}, 'lists': [" ROW_1 ", " ROW_1
                         ", {'id': 2, 'list': 'allow', 'kind': 'ip', "
                         "'value': '10.0.0.0/16'}]}",
                         &same),
                "{'policies': {'added': [], 'changed': [], 'removed': []}, "
                "'lists': {'added': 2, 'removed': 1}}");
    assert_false(same);
    same = true;
    assert_json(set_diff("{'policies': {}, 'lists': [" ROW_1 "]}",
                         "{'policies': {}, 'lists': []}", &same),
                "{'policies': {'added': [], 'changed': [], 'removed': []}, "
                "'lists': {'added': 0, 'removed': 1}}");
    assert_false(same);
}

static void set_diff_differs_by_policies_alone(void **state)
{
    (void)state;
    bool same = true;
    assert_json(set_diff(SET_AB,
                         "{'policies': {'login.ip': " POL_A
                         "}, 'lists': [" ROW_2 ", " ROW_1 "]}",
                         &same),
                "{'policies': {'added': [], 'changed': [], "
                "'removed': ['otp.user']}, "
                "'lists': {'added': 0, 'removed': 0}}");
    assert_false(same);
}

static void applied_record_diffs_as_its_operations(void **state)
{
    (void)state;
    json_t *before = set_of(SNAP), *after;
    assert_int_equal(
        apply_to_ab("{'ops': ["
                    "{'op': 'policy_put', 'policy': {'name': 'login.ip', "
                    "'limit': 5, 'window_s': 30}},"
                    "{'op': 'list_delete', 'list': 'deny', 'id': 1},"
                    "{'op': 'list_add', 'entry': {'id': 4, 'list': 'deny', "
                    "'kind': 'ip', 'value': '192.0.2.1/32', 'force': true}},"
                    "{'op': 'list_add', 'entry': {'id': 5, 'list': 'deny', "
                    "'kind': 'ip', 'value': '192.0.2.9/32'}}]}",
                    &after),
        AG_OK);
    bool same = true;
    assert_json(ag_fleet_set_diff(before, after, &same),
                "{'policies': {'added': [], 'changed': [{'name': 'login.ip', "
                "'fields': [{'field': 'window_s', 'before': 60, "
                "'after': 30}]}], 'removed': []}, "
                "'lists': {'added': 1, 'removed': 0}}");
    assert_false(same);
    /* A set against itself. */
    same = false;
    assert_json(ag_fleet_set_diff(after, after, &same),
                "{'policies': {'added': [], 'changed': [], 'removed': []}, "
                "'lists': {'added': 0, 'removed': 0}}");
    assert_true(same);
    json_decref(before);
    json_decref(after);
}

/* Issue 39: a member not yet upgraded must hold on what it would refuse,
 * and apply everything else. */
static void a_record_needs_schema_2_for_the_network_fields_only(void **st)
{
    (void)st;
    static const struct {
        const char *body;
        unsigned schema;
    } cases[] = {
        {"{\"ops\":[{\"op\":\"policy_put\",\"policy\":{\"name\":\"a\","
         "\"algorithm\":\"sliding_log\",\"key\":[\"asn\"]}}]}",
         1},
        {"{\"ops\":[{\"op\":\"policy_put\",\"policy\":{\"name\":\"a\","
         "\"algorithm\":\"signal\",\"signal\":\"password_breached\"}}]}",
         1},
        {"{\"ops\":[{\"op\":\"policy_put\",\"policy\":{\"name\":\"a\","
         "\"algorithm\":\"signal\",\"signal\":\"ip_listed\","
         "\"lists\":[\"tor\"]}}]}",
         2},
        {"{\"ops\":[{\"op\":\"policy_put\",\"policy\":{\"name\":\"a\","
         "\"algorithm\":\"signal\",\"countries\":[\"FR\"]}}]}",
         2},
        {"{\"ops\":[{\"op\":\"list_add\",\"entry\":{\"list\":\"deny\","
         "\"kind\":\"ip\",\"value\":\"192.0.2.1\"}}]}",
         1},
        {"{\"ops\":[{\"op\":\"list_add\",\"entry\":{\"list\":\"deny\","
         "\"kind\":\"asn\",\"value\":\"174\"}}]}",
         2},
        /* A snapshot's "lists" is its entries, no policy's field. */
        {"{\"ops\":[{\"op\":\"snapshot\",\"policies\":[],\"lists\":[{"
         "\"version\":1,\"entry\":{\"kind\":\"user\",\"value\":\"x\"}}]}]}",
         1},
        {"{\"ops\":[{\"op\":\"snapshot\",\"policies\":[],\"lists\":[{"
         "\"version\":1,\"entry\":{\"kind\":\"ip_country\","
         "\"value\":\"FR\"}}]}]}",
         2},
        {"{\"ops\":[]}", 1},
        /* Issue 40: a risky scope, a signal of the user's history. */
        {"{\"ops\":[{\"op\":\"policy_put\",\"policy\":{\"name\":\"a\","
         "\"algorithm\":\"surge\",\"scope\":\"risky\"}}]}",
         3},
        {"{\"ops\":[{\"op\":\"snapshot\",\"policies\":[{\"name\":\"a\","
         "\"algorithm\":\"signal\",\"signal\":\"impossible_travel\"}],"
         "\"lists\":[]}]}",
         3},
        {"{\"ops\":[{\"op\":\"policy_put\",\"policy\":{\"name\":\"a\","
         "\"algorithm\":\"signal\",\"signal\":\"new_asn\"}},"
         "{\"op\":\"list_add\",\"entry\":{\"list\":\"deny\","
         "\"kind\":\"asn\",\"value\":\"174\"}}]}",
         3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *b = json_loads(cases[i].body, 0, NULL);
        assert_non_null(b);
        if (ag_fleet_set_schema(b) != cases[i].schema)
            fail_msg("case %zu: schema %u, want %u", i, ag_fleet_set_schema(b),
                     cases[i].schema);
        json_decref(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_set_is_empty),
        cmocka_unit_test(snapshot_gives_policies_by_name_and_rows),
        cmocka_unit_test(snapshot_of_wrong_shape_gives_null),
        cmocka_unit_test(each_operation_changes_the_set),
        cmocka_unit_test(snapshot_operation_replaces_the_set),
        cmocka_unit_test(malformed_body_is_refused),
        cmocka_unit_test(policies_diff_names_each_field),
        cmocka_unit_test(policies_diff_of_equal_records_is_same),
        cmocka_unit_test(lists_diff_ignores_ids_order_and_force),
        cmocka_unit_test(lists_diff_counts_each_entry_once),
        cmocka_unit_test(set_diff_differs_by_policies_alone),
        cmocka_unit_test(applied_record_diffs_as_its_operations),
        cmocka_unit_test(a_record_needs_schema_2_for_the_network_fields_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
