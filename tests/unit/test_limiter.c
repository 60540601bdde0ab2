/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_limiter: the check plan. Which policies a check applies, under which
 * hashed keys (never the plaintext), with which flags, and the cap on how
 * many. The other kinds of plan and the lanes are in
 * test_limiter_lanes.c, how results combine into one decision in
 * test_limiter_decide.c.
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

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_test_limiter.h"
#include "ag_test_sodium.h"

/* The set every plan test uses. */
static struct ag_ruleset *standard_set(void)
{
    struct ag_policy ps[] = {
        policy("otp.user", "otp", "[\"user\"]", 5, NULL),
        policy("login.user", "login", "[\"user\"]", 10, NULL),
        policy("login.ip", "login", "[\"ip\"]", 100, NULL),
        policy("login.user_ip", "login", "[\"user\",\"ip\"]", 5, NULL),
        policy("login.device", "login", "[\"device\"]", 20, NULL),
        policy("login.disabled", "login", "[\"user\"]", 1,
               ",\"enabled\":false"),
        policy("login.failures", "login", "[\"user\"]", 3,
               ",\"counts\":\"failures\""),
        policy("login.shadow", "login", "[\"ip\"]", 2, ",\"mode\":\"shadow\""),
        policy("otp.phone", "otp", "[\"phone\"]", 3, NULL),
        policy("otp.ip", "otp", "[\"ip\"]", 20, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

static const char full_otp[] = "{\"phone\":\"+48 600 100 200\","
                               "\"ip\":\"10.1.2.3\",\"user\":\"Ana\"}";

static void plan_holds_enabled_policies_of_the_login_endpoint(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, full_login, &h, &plan);
    static const char *const want[] = {"login.device", "login.failures",
                                       "login.ip",     "login.shadow",
                                       "login.user",   "login.user_ip"};
    expect_plan(&plan, s, want, sizeof want / sizeof want[0]);
    ag_ruleset_unref(s);
}

static void plan_holds_enabled_policies_of_the_otp_endpoint(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_OTP, full_otp, &h, &plan);
    static const char *const want[] = {"otp.ip", "otp.phone", "otp.user"};
    expect_plan(&plan, s, want, sizeof want / sizeof want[0]);
    ag_ruleset_unref(s);
}

static void plan_skips_policies_needing_an_absent_identifier(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &h,
             &plan);
    static const char *const login[] = {"login.failures", "login.ip",
                                        "login.shadow", "login.user",
                                        "login.user_ip"};
    expect_plan(&plan, s, login, sizeof login / sizeof login[0]);
    plan_for(s, AG_EP_OTP, "{\"phone\":\"+48600100200\",\"ip\":\"10.1.2.3\"}",
             &h, &plan);
    static const char *const otp[] = {"otp.ip", "otp.phone"};
    expect_plan(&plan, s, otp, sizeof otp / sizeof otp[0]);
    ag_ruleset_unref(s);
}

static void expect_key_shape(const struct ag_limit_op *op)
{
    char prefix[AG_STORE_KEY_MAX];
    snprintf(prefix, sizeof prefix, "ag:%s:", op->policy->name);
    size_t n = strlen(prefix);
    if (strncmp(op->key, prefix, n) != 0)
        fail_msg("key %s does not start with %s", op->key, prefix);
    assert_int_equal(strlen(op->key), n + AG_DIGEST_HEX);
    for (size_t i = n; op->key[i]; i++) {
        char c = op->key[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            fail_msg("key %s has '%c' in its digest", op->key, c);
    }
}

static void keys_are_policy_name_and_digest_without_plaintext(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    /* Identifiers spelt in hex digits, so that a key leaking them would
     * still look like a digest. */
    static const char *const bodies[] = {
        "{\"user\":\"CAFE\",\"ip\":\"10.1.2.3\",\"device\":\"beef00\"}",
        "{\"phone\":\"+48600100200\",\"ip\":\"::ab:cd\",\"user\":\"fade\"}",
    };
    static const char *const plain[] = {
        "cafe", "CAFE", "10.1.2.3", "beef00", "48600100200", "ab:cd", "fade"};
    for (size_t b = 0; b < 2; b++) {
        struct ag_plan plan;
        plan_for(s, b ? AG_EP_OTP : AG_EP_LOGIN, bodies[b], &h, &plan);
        assert_true(plan.n >= 3);
        for (size_t i = 0; i < plan.n; i++) {
            expect_key_shape(&plan.ops[i]);
            for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++)
                if (strstr(plan.ops[i].key, plain[k]))
                    fail_msg("key %s holds '%s'", plan.ops[i].key, plain[k]);
        }
    }
    ag_ruleset_unref(s);
}

static void key_digest_hashes_the_normalised_identifiers(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, full_login, &h, &plan);
    const struct ag_ident_part parts[] = {{"user", "ana@example.com"},
                                          {"ip", "10.1.2.3"}};
    char digest[AG_DIGEST_HEX + 1];
    ag_hasher_digest(&h, parts, 2, digest);
    char want[AG_STORE_KEY_MAX];
    snprintf(want, sizeof want, "ag:login.user_ip:%s", digest);
    assert_string_equal(op_named(&plan, "login.user_ip")->key, want);
    ag_ruleset_unref(s);
}

static void tagged_keys_put_the_digest_in_a_hash_tag(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_digests d;
    ag_digests_init(&d, &h, &r, true);
    struct ag_plan plan;
    assert_int_equal(ag_limiter_plan(s, AG_PLAN_CHECK, &d, &plan), AG_OK);
    const struct ag_ident_part parts[] = {{"user", "ana@example.com"},
                                          {"ip", "10.1.2.3"}};
    char digest[AG_DIGEST_HEX + 1];
    ag_hasher_digest(&h, parts, 2, digest);
    char want[AG_STORE_KEY_MAX];
    snprintf(want, sizeof want, "ag:login.user_ip:{%s}", digest);
    const struct ag_limit_op *op = op_named(&plan, "login.user_ip");
    assert_string_equal(op->key, want);
    /* The block and level keys keep the tag, so share the slot. */
    char block[AG_STORE_KEY_MAX];
    ag_limiter_block_key(op, block);
    assert_non_null(strstr(block, digest));
    assert_int_equal(strchr(block, '{') - block, strchr(want, '{') - want);
    assert_int_equal(strchr(block, '}') - block, strchr(want, '}') - want);
    /* Policies of one identifier share their tag. */
    const struct ag_limit_op *user = op_named(&plan, "login.user");
    const struct ag_limit_op *failures = op_named(&plan, "login.failures");
    assert_non_null(user);
    assert_non_null(failures);
    const char *u1 = strchr(user->key, '{');
    const char *u2 = strchr(failures->key, '{');
    assert_non_null(u1);
    assert_non_null(u2);
    assert_string_equal(u1, u2);
    ag_ruleset_unref(s);
}

static void same_user_in_different_case_gets_the_same_key(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_plan a, b, c;
    plan_for(s, AG_EP_LOGIN,
             "{\"user\":\"ANA@Example.com\",\"ip\":\"1.2.3.4\"}", &h, &a);
    plan_for(s, AG_EP_LOGIN,
             "{\"user\":\" ana@example.COM \",\"ip\":\"::ffff:1.2.3.4\"}", &h,
             &b);
    plan_for(s, AG_EP_LOGIN,
             "{\"user\":\"bob@example.com\",\"ip\":\"1.2.3.4\"}", &h, &c);
    assert_string_equal(op_named(&a, "login.user")->key,
                        op_named(&b, "login.user")->key);
    assert_string_equal(op_named(&a, "login.user_ip")->key,
                        op_named(&b, "login.user_ip")->key);
    assert_string_equal(op_named(&a, "login.ip")->key,
                        op_named(&b, "login.ip")->key);
    /* Another user: another user key, the same IP key. */
    assert_string_not_equal(op_named(&a, "login.user")->key,
                            op_named(&c, "login.user")->key);
    assert_string_not_equal(op_named(&a, "login.user_ip")->key,
                            op_named(&c, "login.user_ip")->key);
    assert_string_equal(op_named(&a, "login.ip")->key,
                        op_named(&c, "login.ip")->key);
    ag_ruleset_unref(s);
}

static void keys_depend_on_the_secret(void **state)
{
    (void)state;
    struct ag_hasher h1, h2;
    make_hasher(&h1, 1);
    make_hasher(&h2, 2);
    struct ag_ruleset *s = standard_set();
    struct ag_plan a, b;
    plan_for(s, AG_EP_LOGIN, full_login, &h1, &a);
    plan_for(s, AG_EP_LOGIN, full_login, &h2, &b);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++)
        assert_string_not_equal(a.ops[i].key, b.ops[i].key);
    ag_ruleset_unref(s);
}

static void failures_policy_is_not_charged(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, full_login, &h, &plan);
    assert_false(op_named(&plan, "login.failures")->charge);
    assert_true(op_named(&plan, "login.user")->charge);
    assert_true(op_named(&plan, "login.ip")->charge);
    assert_true(op_named(&plan, "login.shadow")->charge);
    ag_ruleset_unref(s);
}

static void level_key_is_the_state_key_and_its_suffix(void **state)
{
    (void)state;
    struct ag_limit_op op;
    memset(&op, 0, sizeof op);
    snprintf(op.key, sizeof op.key, "ag:login.user:0123");
    char out[AG_STORE_KEY_MAX];
    assert_int_equal(ag_limiter_level_key(&op, out),
                     strlen("ag:login.user:0123:l"));
    assert_string_equal(out, "ag:login.user:0123:l");
}

static void distinct_op_carries_the_subjects_digest(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    json_t *o = json_loads(
        "{\"name\":\"d.users\",\"endpoint\":\"login\",\"key\":[\"ip\"],"
        "\"algorithm\":\"distinct\",\"limit\":5,\"window_s\":60}",
        0, NULL);
    struct ag_policy ps[2];
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &ps[0], &err), AG_OK);
    json_decref(o);
    ps[1] = policy("login.user", "login", "[\"user\"]", 10, NULL);
    struct ag_ruleset *s = ag_ruleset_new(ps, 2, 1);
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, full_login, &h, &plan);
    const struct ag_limit_op *d = op_named(&plan, "d.users");
    const struct ag_limit_op *u = op_named(&plan, "login.user");
    /* The member is the user's keyed digest: the same hash login.user
     * keys on, never the plaintext. */
    assert_int_equal(strlen(d->member), AG_DIGEST_HEX);
    assert_string_equal(d->member, strrchr(u->key, ':') + 1);
    assert_string_equal(u->member, "");
    ag_ruleset_unref(s);
}

static void shadow_policy_is_flagged(void **state)
{

    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = standard_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, full_login, &h, &plan);
    for (size_t i = 0; i < plan.n; i++) {
        bool want = strcmp(plan.ops[i].policy->name, "login.shadow") == 0;
        if (plan.ops[i].shadow != want)
            fail_msg("%s: shadow %d", plan.ops[i].policy->name,
                     plan.ops[i].shadow);
    }
    ag_ruleset_unref(s);
}

/* A set of n enabled login policies keyed on the user, plus extra ones. */
static struct ag_ruleset *
many_user_policies(size_t n, const struct ag_policy *extra, size_t nextra)
{
    struct ag_policy *ps = calloc(n + nextra, sizeof *ps);
    assert_non_null(ps);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "login.u%02zu", i);
        ps[i] = policy(name, "login", "[\"user\"]", 10, NULL);
    }
    if (nextra)
        memcpy(ps + n, extra, nextra * sizeof *extra);
    struct ag_ruleset *s = ag_ruleset_new(ps, n + nextra, 1);
    free(ps);
    assert_non_null(s);
    return s;
}

static void plan_of_more_than_32_policies_is_too_big(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_request r;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}", &r);
    struct ag_plan plan;

    struct ag_ruleset *s = many_user_policies(AG_PLAN_MAX, NULL, 0);
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.n, AG_PLAN_MAX);
    ag_ruleset_unref(s);

    s = many_user_policies(AG_PLAN_MAX + 1, NULL, 0);
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_ETOOBIG);
    ag_ruleset_unref(s);
}

static void policies_left_out_do_not_count_toward_the_plan_cap(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_request r;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"1.2.3.4\"}", &r);
    /* Disabled and other-endpoint policies sort after the 32 that apply. */
    const struct ag_policy extra[] = {
        policy("login.zz-off1", "login", "[\"user\"]", 1, ",\"enabled\":false"),
        policy("login.zz-off2", "login", "[\"ip\"]", 1, ",\"enabled\":false"),
        policy("otp.zz-phone", "otp", "[\"phone\"]", 1, NULL),
    };
    struct ag_ruleset *s = many_user_policies(AG_PLAN_MAX, extra, 3);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.n, AG_PLAN_MAX);
    ag_ruleset_unref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_holds_enabled_policies_of_the_login_endpoint),
        cmocka_unit_test(plan_holds_enabled_policies_of_the_otp_endpoint),
        cmocka_unit_test(plan_skips_policies_needing_an_absent_identifier),
        cmocka_unit_test(keys_are_policy_name_and_digest_without_plaintext),
        cmocka_unit_test(key_digest_hashes_the_normalised_identifiers),
        cmocka_unit_test(same_user_in_different_case_gets_the_same_key),
        cmocka_unit_test(tagged_keys_put_the_digest_in_a_hash_tag),
        cmocka_unit_test(keys_depend_on_the_secret),
        cmocka_unit_test(failures_policy_is_not_charged),
        cmocka_unit_test(shadow_policy_is_flagged),
        cmocka_unit_test(level_key_is_the_state_key_and_its_suffix),
        cmocka_unit_test(distinct_op_carries_the_subjects_digest),
        cmocka_unit_test(plan_of_more_than_32_policies_is_too_big),
        cmocka_unit_test(policies_left_out_do_not_count_toward_the_plan_cap),
    };
    return cmocka_run_group_tests(tests, init_sodium, NULL);
}
