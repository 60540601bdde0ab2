/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_limiter: which policies a check applies and under which hashed keys,
 * and how per-policy results combine into one decision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ag_error.h"
#include "ag_limiter.h"

static int init_sodium(void **state)
{
    (void)state;
    return sodium_init() < 0 ? -1 : 0;
}

static void make_hasher(struct ag_hasher *h, unsigned char fill)
{
    unsigned char secret[32];
    memset(secret, fill, sizeof secret);
    ag_hasher_init(h, secret, sizeof secret);
}

/* A validated policy; extra is appended inside the JSON object. */
static struct ag_policy policy(const char *name, const char *endpoint,
                               const char *key, uint32_t limit,
                               const char *extra)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"name\":\"%s\",\"endpoint\":\"%s\",\"key\":%s,"
             "\"algorithm\":\"sliding_log\",\"limit\":%u,\"window_s\":60%s}",
             name, endpoint, key, (unsigned)limit, extra ? extra : "");
    return ag_test_policy(text);
}

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

static void request(enum ag_endpoint ep, const char *body, struct ag_request *r)
{
    struct ag_error err;
    if (ag_request_parse(ep, body, strlen(body), NULL, r, &err))
        fail_msg("test request refused: %s: %s", body, err.msg);
}

static int plan_of(const struct ag_ruleset *s, enum ag_plan_kind kind,
                   const struct ag_request *r, const struct ag_hasher *h,
                   struct ag_plan *plan)
{
    struct ag_digests d;
    ag_digests_init(&d, h, r, false);
    return ag_limiter_plan(s, kind, &d, plan);
}

static void plan_for(const struct ag_ruleset *s, enum ag_endpoint ep,
                     const char *body, const struct ag_hasher *h,
                     struct ag_plan *plan)
{
    struct ag_request r;
    request(ep, body, &r);
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, h, plan), AG_OK);
}

/* Fails unless the plan holds exactly the named policies, in order, each
 * borrowed from s. */
static void expect_plan(const struct ag_plan *plan, const struct ag_ruleset *s,
                        const char *const *names, size_t n)
{
    if (plan->n != n) {
        for (size_t i = 0; i < plan->n; i++)
            print_message("plan[%zu] = %s\n", i, plan->ops[i].policy->name);
        fail_msg("plan has %zu operations, want %zu", plan->n, n);
    }
    for (size_t i = 0; i < n; i++) {
        const struct ag_policy *p = plan->ops[i].policy;
        assert_string_equal(p->name, names[i]);
        assert_true(p >= s->policies && p < s->policies + s->count);
    }
}

static const struct ag_limit_op *op_named(const struct ag_plan *plan,
                                          const char *name)
{
    for (size_t i = 0; i < plan->n; i++)
        if (strcmp(plan->ops[i].policy->name, name) == 0)
            return &plan->ops[i];
    fail_msg("no operation for %s in the plan", name);
    return NULL;
}

static const char full_login[] = "{\"user\":\"Ana@Example.com\","
                                 "\"ip\":\"10.1.2.3\",\"device\":\"dev-9\"}";
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

static struct ag_ruleset *failure_set(void)
{
    struct ag_policy ps[] = {
        policy("f.user_ip", "login", "[\"user\",\"ip\"]", 3,
               ",\"counts\":\"failures\""),
        policy("f.user", "login", "[\"user\"]", 5, ",\"counts\":\"failures\""),
        policy("f.user_ip_off", "login", "[\"user\",\"ip\"]", 3,
               ",\"counts\":\"failures\",\"enabled\":false"),
        policy("a.user_ip", "login", "[\"user\",\"ip\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

static void failure_plan_charges_only_failure_policies(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = failure_set();
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const want[] = {"f.user", "f.user_ip"};
    expect_plan(&plan, s, want, 2);
    assert_int_equal(plan.kind, AG_PLAN_FAILURE);
    assert_true(plan.ops[0].charge);
    assert_true(plan.ops[1].charge);
    ag_ruleset_unref(s);
}

static void reserve_and_release_plans_are_planned_as_a_check(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = failure_set();
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan check, plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &check), AG_OK);
    const enum ag_plan_kind kinds[] = {AG_PLAN_RESERVE, AG_PLAN_RELEASE};
    for (size_t k = 0; k < 2; k++) {
        /* A nonce left from an earlier use of the plan is cleared. */
        memset(&plan, 0x5a, sizeof plan);
        assert_int_equal(plan_of(s, kinds[k], &r, &h, &plan), AG_OK);
        assert_int_equal(plan.kind, kinds[k]);
        assert_int_equal(plan.nonce[0], '\0');
        assert_int_equal(plan.n, check.n);
        for (size_t i = 0; i < check.n; i++) {
            assert_ptr_equal(plan.ops[i].policy, check.ops[i].policy);
            assert_string_equal(plan.ops[i].key, check.ops[i].key);
            assert_int_equal(plan.ops[i].charge, check.ops[i].charge);
        }
    }
    /* Something to compare: the attempts policy charges, the others not. */
    assert_int_equal(check.n, 3);
    assert_false(op_named(&check, "f.user")->charge);
    assert_true(op_named(&check, "a.user_ip")->charge);
    ag_ruleset_unref(s);
}

static void
success_plan_clears_every_consecutive_policy_it_can_key(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_policy ps[] = {
        ag_test_policy("{\"name\":\"c.user\",\"endpoint\":\"login\","
                       "\"key\":[\"user\"],\"algorithm\":\"consecutive\","
                       "\"limit\":100,\"window_s\":86400,"
                       "\"counts\":\"failures\"}"),
        ag_test_policy("{\"name\":\"c.device\",\"endpoint\":\"login\","
                       "\"key\":[\"user\",\"device\"],"
                       "\"algorithm\":\"consecutive\","
                       "\"limit\":20,\"window_s\":86400,"
                       "\"counts\":\"failures\"}"),
        /* An address's row is not the user's to forgive: an attacker
         * spraying from there would reset it with an account of their
         * own. */
        ag_test_policy("{\"name\":\"c.ip\",\"endpoint\":\"login\","
                       "\"key\":[\"ip\"],\"algorithm\":\"consecutive\","
                       "\"limit\":50,\"window_s\":86400,"
                       "\"counts\":\"failures\"}"),
        policy("f.user", "login", "[\"user\"]", 5, ",\"counts\":\"failures\""),
        policy("f.user_ip", "login", "[\"user\",\"ip\"]", 3,
               ",\"counts\":\"failures\""),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const want[] = {"c.device", "c.user", "f.user_ip"};
    expect_plan(&plan, s, want, 3);
    /* Without a device the device's row cannot be named, so stays. */
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const want_no_device[] = {"c.user", "f.user_ip"};
    expect_plan(&plan, s, want_no_device, 2);
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

static void success_plan_clears_only_user_and_ip_failure_policies(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = failure_set();
    struct ag_request r;
    request(AG_EP_LOGIN, full_login, &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const want[] = {"f.user_ip"};
    expect_plan(&plan, s, want, 1);
    ag_ruleset_unref(s);
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

/* Lanes: the same policies for a request without a token and for one
 * the service trusts. */
static struct ag_ruleset *lane_set(void)
{
    struct ag_policy ps[] = {
        policy("login.all", "login", "[\"user\"]", 10, NULL),
        policy("login.known", "login", "[\"user\"]", 20,
               ",\"applies_to\":\"trusted\""),
        policy("login.known_fail", "login", "[\"user\",\"device_token\"]", 20,
               ",\"applies_to\":\"trusted\",\"counts\":\"failures\""),
        policy("login.unknown", "login", "[\"user\"]", 30,
               ",\"applies_to\":\"untrusted\""),
        policy("login.unknown_fail", "login", "[\"user\",\"ip\"]", 5,
               ",\"applies_to\":\"untrusted\",\"counts\":\"failures\""),
        policy("login.per_device", "login", "[\"device_token\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

static const unsigned char device_id[AG_DEVICE_ID_BYTES] = {1, 2, 3, 4, 5};

static void untrusted_request_plans_only_its_lane(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    struct ag_request r;
    /* A token the service did not trust changes nothing. */
    request(AG_EP_LOGIN,
            "{\"user\":\"ana\",\"ip\":\"10.1.2.3\",\"device_token\":\"x\"}",
            &r);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    assert_false(plan.trusted);
    static const char *const check[] = {"login.all", "login.unknown",
                                        "login.unknown_fail"};
    expect_plan(&plan, s, check, sizeof check / sizeof check[0]);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const failure[] = {"login.unknown_fail"};
    expect_plan(&plan, s, failure, 1);
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    expect_plan(&plan, s, failure, 1);
    ag_ruleset_unref(s);
}

static void trusted_request_plans_only_its_lane(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    struct ag_request r;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
    ag_request_trust(&r, device_id);
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    assert_true(plan.trusted);
    static const char *const check[] = {"login.all", "login.known",
                                        "login.known_fail", "login.per_device"};
    expect_plan(&plan, s, check, sizeof check / sizeof check[0]);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    static const char *const failure[] = {"login.known_fail"};
    expect_plan(&plan, s, failure, 1);
    /* A success proves the real user: it clears what the untrusted lane
     * counted too (an attacker's failures from this address). */
    assert_int_equal(plan_of(s, AG_PLAN_SUCCESS, &r, &h, &plan), AG_OK);
    static const char *const success[] = {"login.unknown_fail"};
    expect_plan(&plan, s, success, 1);
    ag_ruleset_unref(s);
}

/* The admin inspect peeks what a check would apply, in either lane: the
 * same policies under the same keys, with the same flags. */
static void a_peek_plan_is_the_check_plan_in_either_lane(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    for (int trusted = 0; trusted < 2; trusted++) {
        struct ag_request r;
        request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
        if (trusted)
            ag_request_trust(&r, device_id);
        struct ag_plan check, peek;
        assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &check), AG_OK);
        assert_int_equal(plan_of(s, AG_PLAN_PEEK, &r, &h, &peek), AG_OK);
        assert_int_equal(peek.kind, AG_PLAN_PEEK);
        assert_int_equal(peek.trusted, trusted);
        assert_int_equal(peek.n, check.n);
        for (size_t i = 0; i < check.n; i++) {
            assert_ptr_equal(peek.ops[i].policy, check.ops[i].policy);
            assert_string_equal(peek.ops[i].key, check.ops[i].key);
            assert_int_equal(peek.ops[i].charge, check.ops[i].charge);
            assert_int_equal(peek.ops[i].shadow, check.ops[i].shadow);
        }
        /* Something to compare: each lane has its own policies, and a
         * failures policy among them is not charged. */
        assert_int_equal(check.n, 3 + trusted);
        const char *fail = trusted ? "login.known_fail" : "login.unknown_fail";
        assert_false(op_named(&peek, fail)->charge);
        assert_true(op_named(&peek, "login.all")->charge);
    }
    ag_ruleset_unref(s);
}

static void device_token_key_hashes_the_tokens_id(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = lane_set();
    struct ag_request r;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &r);
    ag_request_trust(&r, device_id);
    assert_string_equal(ag_request_value(&r, AG_KEY_DEVICE_TOKEN),
                        "01020304050000000000000000000000");
    struct ag_plan plan;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &r, &h, &plan), AG_OK);
    char want[AG_DIGEST_HEX + 1], key[AG_STORE_KEY_MAX];
    ag_identity_digest(&h, AG_KEY_DEVICE_TOKEN, r.device_id, want);
    snprintf(key, sizeof key, "ag:login.per_device:%s", want);
    assert_string_equal(op_named(&plan, "login.per_device")->key, key);
    /* Another device of the same user has a key of its own. */
    struct ag_request other;
    request(AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &other);
    ag_request_trust(&other, (const unsigned char[AG_DEVICE_ID_BYTES]){9});
    struct ag_plan plan2;
    assert_int_equal(plan_of(s, AG_PLAN_CHECK, &other, &h, &plan2), AG_OK);
    assert_string_not_equal(op_named(&plan2, "login.known_fail")->key,
                            op_named(&plan, "login.known_fail")->key);
    ag_ruleset_unref(s);
}

static struct ag_ruleset *challenge_set(void)
{
    struct ag_policy ps[] = {
        policy("login.ask", "login", "[\"user\"]", 3,
               ",\"action\":\"challenge\""),
        policy("login.deny", "login", "[\"ip\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, 2, 1);
    assert_non_null(s);
    return s;
}

static void passed_challenge_plans_challenge_policies_as_waived(void **state)
{
    (void)state;
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_ruleset *s = challenge_set();
    struct ag_plan plan;
    plan_for(s, AG_EP_LOGIN, "{\"user\":\"ana\",\"ip\":\"10.1.2.3\"}", &h,
             &plan);
    assert_false(op_named(&plan, "login.ask")->shadow);
    assert_false(op_named(&plan, "login.ask")->waived);
    plan_for(s, AG_EP_LOGIN,
             "{\"user\":\"ana\",\"ip\":\"10.1.2.3\","
             "\"challenge_passed\":true}",
             &h, &plan);
    /* Still counted and charged, but it may not deny this check. */
    const struct ag_limit_op *ask = op_named(&plan, "login.ask");
    assert_true(ask->waived);
    assert_true(ask->shadow);
    assert_true(ask->charge);
    /* A deny policy is not lifted by a challenge. */
    assert_false(op_named(&plan, "login.deny")->shadow);
    assert_false(op_named(&plan, "login.deny")->waived);
    ag_ruleset_unref(s);
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

/* Decisions, over hand-built plans. */

struct fixture {
    struct ag_policy ps[4];
    struct ag_plan plan;
    struct ag_limit_result res[4];
};

/* n enforcing operations with the given limits, all allowed with
 * remaining = limit - 1 until a test changes them. */
static void fixture_init(struct fixture *f, size_t n, const uint32_t *limits)
{
    memset(f, 0, sizeof *f);
    assert_true(n <= 4);
    f->plan.n = n;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "login.p%zu", i);
        f->ps[i] = policy(name, "login", "[\"user\"]", limits[i], NULL);
        f->plan.ops[i].policy = &f->ps[i];
        f->plan.ops[i].charge = true;
        f->res[i].allowed = true;
        f->res[i].remaining = limits[i] - 1;
        f->res[i].reset_after_ms = 60000;
    }
}

static void deny(struct fixture *f, size_t i, uint64_t retry_ms)
{
    f->res[i].allowed = false;
    f->res[i].remaining = 0;
    f->res[i].retry_after_ms = retry_ms;
}

static void all_allowed_is_allowed_and_tightest_has_fewest_left(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    f.res[0].remaining = 5;
    f.res[1].remaining = 2;
    f.res[2].remaining = 7;
    struct ag_decision d;
    memset(&d, 0x5a, sizeof d);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    assert_int_equal(d.retry_after_s, 0);
    assert_int_equal(d.tightest, 1);
}

static void tightest_tie_goes_to_smaller_limit_then_plan_order(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 5});
    f.res[0].remaining = 3;
    f.res[1].remaining = 3;
    f.res[2].remaining = 3;
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_int_equal(d.tightest, 1);
}

static void one_denial_denies_and_is_reported(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    deny(&f, 2, 1500);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 2);
    assert_int_equal(d.retry_after_s, 2);
    assert_int_equal(d.tightest, 2);
}

static void two_denials_report_the_longer_retry(void **state)
{
    (void)state;
    struct fixture f;
    struct ag_decision d;
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    deny(&f, 0, 5000);
    deny(&f, 2, 60000);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 2);
    assert_int_equal(d.retry_after_s, 60);
    assert_int_equal(d.tightest, 2);

    /* The longer wait wins whichever comes first in the plan. */
    fixture_init(&f, 3, (const uint32_t[]){10, 5, 100});
    deny(&f, 0, 60000);
    deny(&f, 2, 5000);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_int_equal(d.denied_by, 0);
    assert_int_equal(d.retry_after_s, 60);
    assert_int_equal(d.tightest, 0);
}

static void shadow_denial_does_not_deny(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){2, 10});
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 30000);
    f.res[1].remaining = 4;
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    assert_int_equal(d.retry_after_s, 0);
    /* The headers describe an enforcing policy, not the shadow one. */
    assert_int_equal(d.tightest, 1);
}

static void shadow_denial_does_not_hide_an_enforcing_denial(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){2, 10});
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 90000);
    deny(&f, 1, 3000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 1);
    assert_int_equal(d.retry_after_s, 3);
}

static void only_shadow_policies_give_no_tightest(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 1, (const uint32_t[]){2});
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 1000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.tightest, -1);
}

static void tripped_challenge_is_reported_as_a_challenge(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){3, 10});
    f.ps[0].action = AG_ACTION_CHALLENGE;
    deny(&f, 0, 4000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 0);
    assert_int_equal(d.action, AG_ACTION_CHALLENGE);
    assert_int_equal(d.retry_after_s, 4);
}

static void deny_wins_over_a_challenge_with_a_longer_wait(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 3, (const uint32_t[]){3, 10, 4});
    f.ps[0].action = AG_ACTION_CHALLENGE;
    f.ps[2].action = AG_ACTION_CHALLENGE;
    deny(&f, 0, 900000);
    deny(&f, 1, 2000);
    deny(&f, 2, 800000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 1);
    assert_int_equal(d.action, AG_ACTION_DENY);
    assert_int_equal(d.retry_after_s, 2);
    /* Between challenges, the longer wait. */
    f.res[1].allowed = true;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_int_equal(d.denied_by, 0);
    assert_int_equal(d.action, AG_ACTION_CHALLENGE);
}

static void waived_challenge_does_not_deny(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 2, (const uint32_t[]){3, 10});
    f.ps[0].action = AG_ACTION_CHALLENGE;
    f.plan.ops[0].waived = true;
    f.plan.ops[0].shadow = true;
    deny(&f, 0, 4000);
    struct ag_decision d;
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    /* While a deny policy still denies. */
    deny(&f, 1, 1000);
    ag_limiter_decide(&f.plan, f.res, &d);
    assert_false(d.allowed);
    assert_int_equal(d.denied_by, 1);
    assert_int_equal(d.action, AG_ACTION_DENY);
}

static void empty_plan_is_allowed_without_tightest(void **state)
{
    (void)state;
    struct ag_plan plan = {.n = 0};
    struct ag_decision d;
    memset(&d, 0x5a, sizeof d);
    ag_limiter_decide(&plan, NULL, &d);
    assert_true(d.allowed);
    assert_int_equal(d.denied_by, -1);
    assert_int_equal(d.tightest, -1);
    assert_int_equal(d.retry_after_s, 0);
}

static void retry_after_rounds_up_and_is_at_least_one(void **state)
{
    (void)state;
    static const struct {
        uint64_t ms;
        uint32_t s;
    } cases[] = {{0, 1}, {1, 1}, {999, 1}, {1000, 1}, {1001, 2}, {59999, 60}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fixture f;
        fixture_init(&f, 1, (const uint32_t[]){5});
        deny(&f, 0, cases[i].ms);
        struct ag_decision d;
        ag_limiter_decide(&f.plan, f.res, &d);
        if (d.retry_after_s != cases[i].s)
            fail_msg("%llu ms: %u s, want %u", (unsigned long long)cases[i].ms,
                     d.retry_after_s, cases[i].s);
    }
}

static void seconds_round_up_clamp_and_are_at_least_one(void **state)
{
    (void)state;
    assert_int_equal(ag_limiter_seconds(0), 1);
    assert_int_equal(ag_limiter_seconds(1), 1);
    assert_int_equal(ag_limiter_seconds(999), 1);
    assert_int_equal(ag_limiter_seconds(1000), 1);
    assert_int_equal(ag_limiter_seconds(1001), 2);
    assert_int_equal(ag_limiter_seconds(1999), 2);
    assert_int_equal(ag_limiter_seconds(2000), 2);
    assert_int_equal(ag_limiter_seconds(86400000), 86400);
    assert_int_equal(ag_limiter_seconds((uint64_t)UINT32_MAX * 1000),
                     UINT32_MAX);
    assert_int_equal(ag_limiter_seconds((uint64_t)UINT32_MAX * 1000 + 1),
                     UINT32_MAX);
    assert_int_equal(ag_limiter_seconds((uint64_t)UINT32_MAX * 5000),
                     UINT32_MAX);
    assert_int_equal(ag_limiter_seconds(UINT64_MAX), UINT32_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_holds_enabled_policies_of_the_login_endpoint),
        cmocka_unit_test(reserve_and_release_plans_are_planned_as_a_check),
        cmocka_unit_test(a_peek_plan_is_the_check_plan_in_either_lane),
        cmocka_unit_test(plan_holds_enabled_policies_of_the_otp_endpoint),
        cmocka_unit_test(plan_skips_policies_needing_an_absent_identifier),
        cmocka_unit_test(keys_are_policy_name_and_digest_without_plaintext),
        cmocka_unit_test(key_digest_hashes_the_normalised_identifiers),
        cmocka_unit_test(same_user_in_different_case_gets_the_same_key),
        cmocka_unit_test(tagged_keys_put_the_digest_in_a_hash_tag),
        cmocka_unit_test(keys_depend_on_the_secret),
        cmocka_unit_test(failures_policy_is_not_charged),
        cmocka_unit_test(shadow_policy_is_flagged),
        cmocka_unit_test(failure_plan_charges_only_failure_policies),
        cmocka_unit_test(success_plan_clears_only_user_and_ip_failure_policies),
        cmocka_unit_test(
            success_plan_clears_every_consecutive_policy_it_can_key),
        cmocka_unit_test(level_key_is_the_state_key_and_its_suffix),
        cmocka_unit_test(distinct_op_carries_the_subjects_digest),

        cmocka_unit_test(untrusted_request_plans_only_its_lane),
        cmocka_unit_test(trusted_request_plans_only_its_lane),
        cmocka_unit_test(device_token_key_hashes_the_tokens_id),
        cmocka_unit_test(passed_challenge_plans_challenge_policies_as_waived),
        cmocka_unit_test(plan_of_more_than_32_policies_is_too_big),
        cmocka_unit_test(policies_left_out_do_not_count_toward_the_plan_cap),
        cmocka_unit_test(all_allowed_is_allowed_and_tightest_has_fewest_left),
        cmocka_unit_test(tightest_tie_goes_to_smaller_limit_then_plan_order),
        cmocka_unit_test(one_denial_denies_and_is_reported),
        cmocka_unit_test(two_denials_report_the_longer_retry),
        cmocka_unit_test(shadow_denial_does_not_deny),
        cmocka_unit_test(shadow_denial_does_not_hide_an_enforcing_denial),
        cmocka_unit_test(only_shadow_policies_give_no_tightest),
        cmocka_unit_test(tripped_challenge_is_reported_as_a_challenge),
        cmocka_unit_test(deny_wins_over_a_challenge_with_a_longer_wait),
        cmocka_unit_test(waived_challenge_does_not_deny),
        cmocka_unit_test(empty_plan_is_allowed_without_tightest),
        cmocka_unit_test(retry_after_rounds_up_and_is_at_least_one),
        cmocka_unit_test(seconds_round_up_clamp_and_are_at_least_one),
    };
    return cmocka_run_group_tests(tests, init_sodium, NULL);
}
