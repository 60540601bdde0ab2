/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_policy: reference-counted policy sets (sorted copies of the policies
 * they are made from) and their comparison across reloads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_policy.h"
#include "ag_test_policy.h"

static struct ag_policy named(const char *name, uint32_t limit)
{
    json_t *o = load(login_base);
    assert_int_equal(json_object_set_new(o, "name", json_string(name)), 0);
    assert_int_equal(json_object_set_new(o, "limit", json_integer(limit)), 0);
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
    return p;
}

static void policy_set_is_sorted_by_name(void **state)
{
    (void)state;
    struct ag_policy in[] = {named("otp.ip", 1), named("login.user", 2),
                             named("login.ip", 3), named("otp.ip_daily", 4)};
    struct ag_ruleset *s = ag_ruleset_new(in, 4, 7);
    assert_non_null(s);
    assert_int_equal(s->count, 4);
    assert_int_equal(s->version, 7);
    assert_string_equal(s->policies[0].name, "login.ip");
    assert_int_equal(s->policies[0].limit, 3);
    assert_string_equal(s->policies[1].name, "login.user");
    assert_int_equal(s->policies[1].limit, 2);
    assert_string_equal(s->policies[2].name, "otp.ip");
    assert_string_equal(s->policies[3].name, "otp.ip_daily");
    /* The set holds a copy; the caller's array keeps its order. */
    assert_string_equal(in[0].name, "otp.ip");
    in[1].limit = 99;
    assert_int_equal(s->policies[1].limit, 2);
    ag_ruleset_unref(s);
}

static void policy_set_is_reference_counted(void **state)
{
    (void)state;
    struct ag_policy in[] = {named("login.user", 2)};
    struct ag_ruleset *s = ag_ruleset_new(in, 1, 1);
    assert_non_null(s);
    assert_int_equal(atomic_load(&s->refs), 1);
    assert_ptr_equal(ag_ruleset_ref(s), s);
    assert_int_equal(atomic_load(&s->refs), 2);
    ag_ruleset_unref(s);
    assert_int_equal(atomic_load(&s->refs), 1);
    /* Still readable with one reference left; the last unref frees it,
     * which the leak checker verifies. */
    assert_string_equal(s->policies[0].name, "login.user");
    ag_ruleset_unref(s);
}

static void empty_policy_set_is_valid(void **state)
{
    (void)state;
    struct ag_ruleset *s = ag_ruleset_new(NULL, 0, 3);
    assert_non_null(s);
    assert_int_equal(s->count, 0);
    assert_int_equal(s->version, 3);
    ag_ruleset_unref(s);
}

static void sets_are_the_same_only_when_every_policy_field_is(void **state)
{
    (void)state;
    struct ag_policy in[] = {named("login.user", 2), named("login.ip", 3)};
    struct ag_ruleset *a = ag_ruleset_new(in, 2, 1);
    /* Another load of the same rows: its own version, same policies. */
    struct ag_ruleset *b = ag_ruleset_new(in, 2, 2);
    assert_true(ag_ruleset_same_policies(a, b));
    in[1].mode = AG_MODE_SHADOW;
    struct ag_ruleset *shadow = ag_ruleset_new(in, 2, 3);
    assert_false(ag_ruleset_same_policies(a, shadow));
    in[1].mode = AG_MODE_ENFORCE;
    in[0].block_s = 60;
    struct ag_ruleset *blocked = ag_ruleset_new(in, 2, 4);
    assert_false(ag_ruleset_same_policies(a, blocked));
    struct ag_ruleset *fewer = ag_ruleset_new(in, 1, 5);
    assert_false(ag_ruleset_same_policies(a, fewer));
    assert_false(ag_ruleset_same_policies(a, NULL));
    assert_true(ag_ruleset_same_policies(NULL, NULL));
    ag_ruleset_unref(a);
    ag_ruleset_unref(b);
    ag_ruleset_unref(shadow);
    ag_ruleset_unref(blocked);
    ag_ruleset_unref(fewer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policy_set_is_sorted_by_name),
        cmocka_unit_test(policy_set_is_reference_counted),
        cmocka_unit_test(empty_policy_set_is_valid),
        cmocka_unit_test(sets_are_the_same_only_when_every_policy_field_is),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
