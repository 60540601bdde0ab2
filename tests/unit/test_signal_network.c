/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signals the service computes from the address (issue 39): the
 * ip_listed and ip_country policy records (their own fields, refused
 * elsewhere), a body that names them carrying nothing, and the limiter's
 * part: they trip on what the lookup found, never on a match in a
 * private range only, and a policy that needs a network file this
 * instance lacks, or a fact the files do not know of the address, is
 * left out of the plan and recorded as a skip, as keyed policies on asn
 * and ip_country are.
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
#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_policy.h"
#include "ag_request.h"
#include "ag_test.h"
#include "ag_test_limiter.h"
#include "ag_test_policy.h"
#include "ag_test_sodium.h"

static const char listed_base[] =
    "{\"name\":\"net.tor\",\"endpoint\":\"login\",\"key\":[\"ip\"],"
    "\"algorithm\":\"signal\",\"signal\":\"ip_listed\",\"lists\":[\"tor\"],"
    "\"applies_to\":\"untrusted\",\"action\":\"challenge\"}";
static const char country_base[] =
    "{\"name\":\"net.country\",\"endpoint\":\"otp\",\"key\":[\"phone\"],"
    "\"algorithm\":\"signal\",\"signal\":\"ip_country\","
    "\"countries\":[\"kp\",\"IR\"],\"action\":\"deny\"}";

static void ip_listed_names_its_lists(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(listed_base, "lists", "[\"tor\",\"hosting-v4\",\"a_1\"]",
                    &p);
    assert_int_equal(p.nlists, 3);
    assert_string_equal(p.lists[1], "hosting-v4");
    assert_int_equal(p.needs, AG_POLICY_NEEDS_LISTS);
    expect_refused_saying(listed_base, "lists", NULL, "lists", "required");
    expect_refused_saying(listed_base, "lists", "null", "lists", "required");
    static const char *const bad[] = {
        "[]",
        "\"tor\"",
        "[\"\"]",
        "[\"Tor\"]",
        "[\"a b\"]",
        "[1]",
        "[\"tor=x\"]",
        "{}",
        "[\"123456789012345678901234567890123\"]",
        "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_refused_saying(listed_base, "lists", bad[i], "lists",
                              "--ip-list");
    expect_refused_saying(listed_base, "lists", "[\"tor\",\"tor\"]", "lists",
                          "twice");
    /* A name of 32 bytes is one --ip-list takes. */
    expect_accepted(listed_base, "lists",
                    "[\"12345678901234567890123456789012\"]", &p);
    /* On every endpoint that knows the address. */
    json_t *o = with_field(listed_base, "endpoint", "\"otp_verify\"");
    json_object_set_new(o, "key", json_pack("[s]", "phone"));
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
    json_decref(o);
}

static void ip_country_names_its_countries(void **state)
{
    (void)state;
    struct ag_policy p;
    expect_accepted(country_base, "enabled", "true", &p);
    assert_int_equal(p.needs, AG_POLICY_NEEDS_COUNTRY);
    unsigned kp = AG_POLICY_COUNTRY_BIT('K', 'P');
    unsigned ir = AG_POLICY_COUNTRY_BIT('I', 'R');
    unsigned fr = AG_POLICY_COUNTRY_BIT('F', 'R');
    assert_true(p.countries[kp / 8] & 1u << kp % 8);
    assert_true(p.countries[ir / 8] & 1u << ir % 8);
    assert_false(p.countries[fr / 8] & 1u << fr % 8);
    expect_refused_saying(country_base, "countries", NULL, "countries",
                          "required");
    static const char *const bad[] = {"[]",      "\"FR\"",    "[\"FRA\"]",
                                      "[\"F\"]", "[\"+33\"]", "[\"F1\"]",
                                      "[33]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_refused_saying(country_base, "countries", bad[i], "countries",
                              "two-letter");
    expect_refused_saying(country_base, "countries", "[\"fr\",\"FR\"]",
                          "countries", "twice");
}

static void each_field_is_its_signals_alone(void **state)
{
    (void)state;
    /* lists is ip_listed's, countries ip_country's; neither is another
     * algorithm's nor another signal's. */
    expect_refused_saying(listed_base, "countries", "[\"FR\"]", "countries",
                          "ip_country");
    expect_refused_saying(country_base, "lists", "[\"tor\"]", "lists",
                          "ip_listed");
    expect_refused_saying(login_base, "lists", "[\"tor\"]", "lists",
                          "signal algorithm");
    expect_refused_saying(login_base, "countries", "[\"FR\"]", "countries",
                          "signal algorithm");
    json_t *o = load(listed_base);
    json_object_set_new(o, "signal", json_string("password_breached"));
    struct ag_policy p;
    struct ag_error err;
    assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_EINVAL);
    assert_string_equal(err.field, "lists");
    json_decref(o);
    /* null is the field left out. */
    expect_accepted(login_base, "lists", "null", &p);
    assert_int_equal(p.needs, 0);
}

static void records_round_trip_with_countries_in_order(void **state)
{
    (void)state;
    const char *bases[] = {listed_base, country_base};
    for (size_t i = 0; i < 2; i++) {
        json_t *o = load(bases[i]);
        struct ag_policy p, q;
        struct ag_error err;
        assert_int_equal(ag_policy_from_json(o, NULL, &p, &err), AG_OK);
        json_decref(o);
        json_t *back = ag_policy_to_json(&p);
        assert_int_equal(ag_policy_from_json(back, NULL, &q, &err), AG_OK);
        assert_memory_equal(&p, &q, sizeof p);
        char *text = json_dumps(
            json_object_get(back, i ? "countries" : "lists"), JSON_COMPACT);
        assert_string_equal(text, i ? "[\"IR\",\"KP\"]" : "[\"tor\"]");
        free(text);
        assert_null(json_object_get(back, i ? "lists" : "countries"));
        json_decref(back);
    }
}

static void a_body_never_carries_a_computed_signal(void **state)
{
    (void)state;
    struct ag_request r;
    struct ag_error err;
    const char *b = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"ip_listed\":true,"
                    "\"ip_country\":true}";
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, b, strlen(b), NULL, &r, &err), AG_OK);
    assert_int_equal(r.signals, 0);
    /* Not even refused when it is no boolean: an unknown field. */
    b = "{\"user\":\"ana\",\"ip\":\"1.2.3.4\",\"ip_listed\":\"tor\"}";
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, b, strlen(b), NULL, &r, &err), AG_OK);
}

/* The limiter. */

static const char *const list_names[] = {"hosting", "tor", "vpn"};
static const struct ag_net_avail all_files = {
    .country = true, .asn = true, .lists = list_names, .nlists = 3};

/* A login set: a tor signal, a country signal, one on a list this
 * instance lacks, a failures-per-ASN policy and a plain one. */
static struct ag_ruleset *net_set(void)
{
    struct ag_policy ps[] = {
        ag_test_policy(listed_base),
        ag_test_policy("{\"name\":\"net.country\",\"endpoint\":\"login\","
                       "\"key\":[\"ip\"],\"algorithm\":\"signal\","
                       "\"signal\":\"ip_country\",\"countries\":[\"KP\"]}"),
        ag_test_policy(
            "{\"name\":\"net.spamhaus\",\"endpoint\":\"login\","
            "\"key\":[\"ip\"],\"algorithm\":\"signal\","
            "\"signal\":\"ip_listed\",\"lists\":[\"tor\",\"drop\"]}"),
        ag_test_policy("{\"name\":\"login.asn_fail\",\"endpoint\":\"login\","
                       "\"key\":[\"asn\"],\"algorithm\":\"sliding_window\","
                       "\"limit\":100,\"window_s\":3600,"
                       "\"counts\":\"failures\"}"),
        policy("login.user", "login", "[\"user\"]", 5, NULL),
    };
    struct ag_ruleset *s = ag_ruleset_new(ps, sizeof ps / sizeof ps[0], 1);
    assert_non_null(s);
    return s;
}

/* Plans r's check (or peek) and its signals; returns how many signals
 * trip, their names joined by "," into names. */
static size_t trips(const struct ag_ruleset *s, const struct ag_request *r,
                    struct ag_plan *plan, char *names, size_t cap)
{
    struct ag_hasher h;
    make_hasher(&h, 1);
    struct ag_digests d;
    ag_digests_init(&d, &h, r, false);
    assert_int_equal(ag_limiter_plan(s, AG_PLAN_CHECK, &d, plan), AG_OK);
    struct ag_limit_op ops[AG_SIGNALS_MAX];
    size_t n = 99;
    assert_int_equal(ag_limiter_plan_signals(s, plan, &d, ops, &n), AG_OK);
    names[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(names + strlen(names), cap - strlen(names), "%s%s",
                 i ? "," : "", ops[i].policy->name);
    return n;
}

/* The flag that loads what skip i of plan lacks (NULL: none), and the
 * list's name into *list. */
static const char *flag_of(const struct ag_plan *plan, size_t i,
                           const char **list)
{
    return ag_limiter_net_missing(plan->skipped[i].policy, plan->net.avail,
                                  list);
}

static const char login_body[] = "{\"user\":\"ana\",\"ip\":\"198.51.100.7\"}";

static void signals_trip_on_what_the_lookup_found(void **state)
{
    (void)state;
    struct ag_ruleset *s = net_set();
    struct ag_request r;
    struct ag_plan plan;
    char names[256];
    /* tor holds it (list 1), in a range that is not private. */
    request(AG_EP_LOGIN, login_body, &r);
    ag_request_network(&r, &all_files, "DE", 3320, 1u << 1, 0);
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 1);
    assert_string_equal(names, "net.tor");
    /* net.spamhaus names drop, which this instance lacks: skipped, though
     * tor, which it also names, holds the address. */
    assert_int_equal(plan.nskipped, 1);
    assert_string_equal(plan.skipped[0].policy->name, "net.spamhaus");
    assert_int_equal(plan.skipped[0].why, AG_SKIP_NOT_LOADED);
    const char *list;
    assert_string_equal(flag_of(&plan, 0, &list), "--ip-list");
    assert_string_equal(list, "drop");
    /* The other lists, or tor in a private range only: no trip. */
    request(AG_EP_LOGIN, login_body, &r);
    ag_request_network(&r, &all_files, "DE", 3320, 1u << 0 | 1u << 2, 1u << 1);
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 0);
    /* The country. */
    request(AG_EP_LOGIN, login_body, &r);
    ag_request_network(&r, &all_files, "KP", 131279, 0, 0);
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 1);
    assert_string_equal(names, "net.country");
    /* The trusted lane is not net.tor's. */
    request(AG_EP_LOGIN, login_body, &r);
    ag_request_network(&r, &all_files, "KP", 131279, 1u << 1, 0);
    unsigned char id[AG_DEVICE_ID_BYTES] = {7};
    ag_request_trust(&r, id);
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 1);
    assert_string_equal(names, "net.country");
    ag_ruleset_unref(s);
}

static void unknown_addresses_and_missing_files_are_skips(void **state)
{
    (void)state;
    struct ag_ruleset *s = net_set();
    struct ag_request r;
    struct ag_plan plan;
    char names[256];
    /* The databases do not know the address: the ASN policy (which a
     * check judges) and the country signal are skipped, not judged under
     * one shared key or as no country; the check plan holds login.user
     * only. drop is still not loaded. */
    request(AG_EP_LOGIN, login_body, &r);
    ag_request_network(&r, &all_files, "", 0, 0, 0);
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 0);
    assert_int_equal(plan.n, 1);
    assert_string_equal(plan.ops[0].policy->name, "login.user");
    assert_int_equal(plan.nskipped, 3);
    assert_string_equal(plan.skipped[0].policy->name, "login.asn_fail");
    assert_int_equal(plan.skipped[0].why, AG_SKIP_ADDRESS_UNKNOWN);
    const char *list;
    assert_null(flag_of(&plan, 0, &list));
    assert_string_equal(plan.skipped[1].policy->name, "net.country");
    assert_int_equal(plan.skipped[1].why, AG_SKIP_ADDRESS_UNKNOWN);
    assert_string_equal(plan.skipped[2].policy->name, "net.spamhaus");
    assert_int_equal(plan.skipped[2].why, AG_SKIP_NOT_LOADED);
    /* A failure's plan: the ASN policy skipped for the unknown address,
     * never counted under one shared key. */
    struct ag_hasher h;
    make_hasher(&h, 1);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.nskipped, 1);
    assert_string_equal(plan.skipped[0].policy->name, "login.asn_fail");
    assert_int_equal(plan.skipped[0].why, AG_SKIP_ADDRESS_UNKNOWN);
    assert_int_equal(plan.n, 0);
    /* Known: planned. */
    ag_request_network(&r, &all_files, "DE", 3320, 0, 0);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.nskipped, 0);
    assert_non_null(op_named(&plan, "login.asn_fail"));
    /* No files at all (no lookup, no avail): every network policy is
     * skipped as not loaded, each naming the flag that loads it. */
    request(AG_EP_LOGIN, login_body, &r);
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 0);
    assert_int_equal(plan.nskipped, 4);
    assert_string_equal(plan.skipped[0].policy->name, "login.asn_fail");
    assert_string_equal(flag_of(&plan, 0, &list), "--asn-file");
    assert_string_equal(plan.skipped[1].policy->name, "net.country");
    assert_string_equal(flag_of(&plan, 1, &list), "--geoip-file");
    assert_string_equal(plan.skipped[2].policy->name, "net.spamhaus");
    assert_string_equal(flag_of(&plan, 2, &list), "--ip-list");
    assert_string_equal(list, "tor");
    assert_string_equal(plan.skipped[3].policy->name, "net.tor");
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(plan.skipped[i].why, AG_SKIP_NOT_LOADED);
    assert_int_equal(plan_of(s, AG_PLAN_FAILURE, &r, &h, &plan), AG_OK);
    assert_int_equal(plan.nskipped, 1);
    assert_string_equal(flag_of(&plan, 0, &list), "--asn-file");
    ag_ruleset_unref(s);
}

static void skips_past_the_names_are_counted_by_why(void **state)
{
    (void)state;
    /* 40 policies keyed on asn with no ASN database: 32 named, 8 more. */
    struct ag_policy ps[40];
    for (int i = 0; i < 40; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"name\":\"asn%02d\",\"endpoint\":\"login\","
                 "\"key\":[\"asn\"],\"algorithm\":\"sliding_window\","
                 "\"limit\":5,\"window_s\":60}",
                 i);
        ps[i] = ag_test_policy(text);
    }
    struct ag_ruleset *s = ag_ruleset_new(ps, 40, 1);
    struct ag_request r;
    request(AG_EP_LOGIN, login_body, &r);
    struct ag_plan plan;
    char names[64];
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 0);
    assert_int_equal(plan.n, 0);
    assert_int_equal(plan.nskipped, AG_PLAN_SKIPS_MAX);
    assert_string_equal(plan.skipped[31].policy->name, "asn31");
    assert_int_equal(plan.skipped_more[AG_SKIP_NOT_LOADED], 8);
    assert_int_equal(plan.skipped_more[AG_SKIP_ADDRESS_UNKNOWN], 0);
    /* A new plan starts again. */
    request(AG_EP_OTP, "{\"phone\":\"+447911123456\",\"ip\":\"1.2.3.4\"}", &r);
    assert_int_equal(trips(s, &r, &plan, names, sizeof names), 0);
    assert_int_equal(plan.nskipped, 0);
    assert_int_equal(plan.skipped_more[AG_SKIP_NOT_LOADED], 0);
    ag_ruleset_unref(s);
}

static void net_missing_names_the_flag(void **state)
{
    (void)state;
    struct ag_ruleset *s = net_set();
    const char *list = "x";
    const struct ag_policy *tor = NULL, *asn = NULL, *user = NULL;
    for (size_t i = 0; i < s->count; i++) {
        const char *n = s->policies[i].name;
        if (strcmp(n, "net.tor") == 0)
            tor = &s->policies[i];
        if (strcmp(n, "login.asn_fail") == 0)
            asn = &s->policies[i];
        if (strcmp(n, "login.user") == 0)
            user = &s->policies[i];
    }
    assert_null(ag_limiter_net_missing(tor, &all_files, &list));
    assert_null(list);
    const struct ag_net_avail no_asn = {
        .country = true, .lists = list_names, .nlists = 2};
    assert_string_equal(ag_limiter_net_missing(asn, &no_asn, &list),
                        "--asn-file");
    assert_null(list);
    const struct ag_net_avail no_tor = {.lists = list_names, .nlists = 1};
    assert_string_equal(ag_limiter_net_missing(tor, &no_tor, &list),
                        "--ip-list");
    assert_string_equal(list, "tor");
    assert_null(ag_limiter_net_missing(user, NULL, &list));
    ag_ruleset_unref(s);
}

static void log_words_name_what_was_seen(void **state)
{
    (void)state;
    struct ag_request r;
    request(AG_EP_LOGIN, login_body, &r);
    char text[AG_REQUEST_NET_TEXT];
    ag_request_network(&r, &all_files, "DE", 3320, 1u << 0 | 1u << 2, 1u << 1);
    ag_request_net_text(&r.net, text, sizeof text);
    assert_string_equal(text, " country=DE asn=3320 lists=hosting,vpn");
    ag_request_network(&r, &all_files, "", 0, 0, 1u << 1);
    ag_request_net_text(&r.net, text, sizeof text);
    assert_string_equal(text, "");
    /* AS numbers in decimal, from 1 to 2^32 - 1, zeros inside kept. */
    static const struct {
        uint32_t asn;
        const char *text;
    } asns[] = {{1, " asn=1"},
                {10, " asn=10"},
                {3320, " asn=3320"},
                {4294967295u, " asn=4294967295"}};
    for (size_t i = 0; i < sizeof asns / sizeof *asns; i++) {
        ag_request_network(&r, &all_files, "", asns[i].asn, 0, 0);
        ag_request_net_text(&r.net, text, sizeof text);
        assert_string_equal(text, asns[i].text);
    }
    /* A country that is no two letters is none; lower case is kept
     * upper. */
    ag_request_network(&r, &all_files, "d", 0, 0, 0);
    assert_string_equal(r.net.country, "");
    assert_false(r.have & 1u << AG_KEY_IP_COUNTRY);
    ag_request_network(&r, &all_files, "de", 0, 0, 0);
    assert_string_equal(r.net.country, "DE");
    ag_request_network(&r, &all_files, "D1", 0, 0, 0);
    assert_string_equal(r.net.country, "");
    /* Whole names only when room runs out. */
    ag_request_network(&r, &all_files, "", 0, 7, 0);
    char small[12];
    ag_request_net_lists(&r.net, ",", small, sizeof small);
    assert_string_equal(small, "hosting,tor");
    char smaller[11];
    ag_request_net_lists(&r.net, ",", smaller, sizeof smaller);
    assert_string_equal(smaller, "hosting");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ip_listed_names_its_lists),
        cmocka_unit_test(ip_country_names_its_countries),
        cmocka_unit_test(each_field_is_its_signals_alone),
        cmocka_unit_test(records_round_trip_with_countries_in_order),
        cmocka_unit_test(a_body_never_carries_a_computed_signal),
        cmocka_unit_test(signals_trip_on_what_the_lookup_found),
        cmocka_unit_test(unknown_addresses_and_missing_files_are_skips),
        cmocka_unit_test(skips_past_the_names_are_counted_by_why),
        cmocka_unit_test(net_missing_names_the_flag),
        cmocka_unit_test(log_words_name_what_was_seen),
    };
    return cmocka_run_group_tests(tests, init_sodium, NULL);
}
