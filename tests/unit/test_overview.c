/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_overview, the ring of the last hour's minutes: counts land in their
 * minute and are read back oldest first; a bucket an hour old starts
 * over, and a count from a clock an hour behind leaves the newer minute
 * alone; policies count by name (an unnamed one as "_other") and only
 * those that tripped are listed; a shield's minute keeps its highest
 * count, its last baseline and threshold, and whether it was raised at
 * any sample; and threads counting at once lose nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "ag_overview.h"
#include "ag_test.h"

/* 2026-12-03T10:00:00Z, a minute's start. */
#define T0 1796292000000ull
#define MIN 60000ull

static struct ag_ruleset *two_policies(void)
{
    struct ag_policy ps[2] = {
        ag_test_policy(
            "{\"name\":\"login.ip\",\"endpoint\":\"login\",\"key\":[\"ip\"],"
            "\"algorithm\":\"sliding_log\",\"limit\":5,\"window_s\":60}"),
        ag_test_policy(
            "{\"name\":\"login.site_failures\",\"endpoint\":\"login\","
            "\"key\":[\"site\"],\"algorithm\":\"surge\",\"limit\":100,"
            "\"window_s\":60,\"block_s\":600,\"counts\":\"failures\","
            "\"action\":\"challenge\"}"),
    };
    struct ag_ruleset *set = ag_ruleset_new(ps, 2, 1);
    assert_non_null(set);
    return set;
}

static struct ag_overview *named(void)
{
    struct ag_overview *o;
    assert_int_equal(ag_overview_new(&o), AG_OK);
    struct ag_ruleset *set = two_policies();
    ag_overview_name_policies(o, set);
    ag_ruleset_unref(set);
    return o;
}

/* The series key of the entry of array list whose field is value. */
static json_t *series(json_t *doc, const char *list, const char *field,
                      const char *value, const char *key)
{
    json_t *arr = json_object_get(doc, list);
    assert_true(json_is_array(arr));
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, field)), value) == 0) {
            json_t *s = json_object_get(e, key);
            assert_true(json_is_array(s));
            assert_int_equal(json_array_size(s), AG_OVERVIEW_MINUTES);
            return s;
        }
    }
    return NULL;
}

static long long at(json_t *s, size_t i)
{
    return json_integer_value(json_array_get(s, i));
}

static void checks_land_in_their_minute_oldest_first(void **state)
{
    (void)state;
    struct ag_overview *o = named();
    uint64_t now = T0 + 59 * MIN + 30000; /* 10:59:30 */
    ag_overview_check(o, now, AG_EP_LOGIN, AG_OUT_ALLOWED);
    ag_overview_check(o, now - 1, AG_EP_LOGIN, AG_OUT_ALLOWED);
    ag_overview_check(o, now, AG_EP_LOGIN, AG_OUT_DENIED);
    ag_overview_check(o, T0 + 5, AG_EP_OTP, AG_OUT_INVALID); /* 10:00 */
    ag_overview_check(o, T0 - 1, AG_EP_OTP, AG_OUT_INVALID); /* 9:59 */
    json_t *doc = ag_overview_json(o, now);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "scope")),
                        "instance");
    assert_int_equal(json_integer_value(json_object_get(doc, "minute_s")), 60);
    json_t *minutes = json_object_get(doc, "minutes");
    assert_int_equal(json_array_size(minutes), AG_OVERVIEW_MINUTES);
    assert_string_equal(json_string_value(json_array_get(minutes, 0)),
                        "2026-12-03T10:00:00.000Z");
    assert_string_equal(json_string_value(json_array_get(minutes, 59)),
                        "2026-12-03T10:59:00.000Z");
    json_t *allowed = series(doc, "checks", "endpoint", "login", "allowed");
    assert_int_equal(at(allowed, 59), 2);
    assert_int_equal(at(allowed, 58), 0);
    assert_int_equal(
        at(series(doc, "checks", "endpoint", "login", "denied"), 59), 1);
    /* 9:59 is past the hour: only 10:00's is left. */
    assert_int_equal(at(series(doc, "checks", "endpoint", "otp", "invalid"), 0),
                     1);
    /* Every endpoint and outcome is listed, zeros too. */
    assert_int_equal(json_array_size(json_object_get(doc, "checks")),
                     AG_EP_COUNT);
    assert_non_null(
        series(doc, "checks", "endpoint", "otp_verify", "unavailable"));
    json_decref(doc);
    ag_overview_free(o);
}

static void a_bucket_an_hour_old_starts_over(void **state)
{
    (void)state;
    struct ag_overview *o = named();
    for (int i = 0; i < 3; i++)
        ag_overview_check(o, T0, AG_EP_LOGIN, AG_OUT_ALLOWED);
    /* The same bucket an hour later counts from 1, not 4. */
    ag_overview_check(o, T0 + 60 * MIN, AG_EP_LOGIN, AG_OUT_ALLOWED);
    json_t *doc = ag_overview_json(o, T0 + 60 * MIN);
    json_t *allowed = series(doc, "checks", "endpoint", "login", "allowed");
    assert_int_equal(at(allowed, 59), 1);
    long long sum = 0;
    for (size_t i = 0; i < AG_OVERVIEW_MINUTES; i++)
        sum += at(allowed, i);
    assert_int_equal(sum, 1);
    json_decref(doc);
    /* A count from a clock an hour behind is dropped, and leaves the
     * newer minute's count as it was. */
    ag_overview_check(o, T0, AG_EP_LOGIN, AG_OUT_ALLOWED);
    doc = ag_overview_json(o, T0 + 60 * MIN);
    assert_int_equal(
        at(series(doc, "checks", "endpoint", "login", "allowed"), 59), 1);
    json_decref(doc);
    /* An hour on, nothing is left. */
    doc = ag_overview_json(o, T0 + 120 * MIN);
    assert_int_equal(
        at(series(doc, "checks", "endpoint", "login", "allowed"), 59), 0);
    json_decref(doc);
    ag_overview_free(o);
}

static void
policies_count_by_name_and_only_those_that_tripped_show(void **state)
{
    (void)state;
    struct ag_overview *o = named();
    uint64_t now = T0 + 10 * MIN;
    ag_overview_trip(o, now, "login.ip", AG_OVERVIEW_DENIED);
    ag_overview_trip(o, now, "login.ip", AG_OVERVIEW_DENIED);
    ag_overview_trip(o, now - MIN, "login.site_failures",
                     AG_OVERVIEW_CHALLENGED);
    ag_overview_trip(o, now, "login.site_failures",
                     AG_OVERVIEW_CHALLENGE_PASSED);
    /* Not named by any set published: counted as "_other". */
    ag_overview_trip(o, now, "login.unnamed", AG_OVERVIEW_SHADOW_DENIED);
    json_t *doc = ag_overview_json(o, now);
    json_t *ps = json_object_get(doc, "policies");
    assert_int_equal(json_array_size(ps), 3);
    /* In name order, "_other" last. */
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(ps, 0), "policy")),
        "login.ip");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(ps, 2), "policy")),
        "_other");
    assert_int_equal(
        at(series(doc, "policies", "policy", "login.ip", "denied"), 59), 2);
    assert_int_equal(
        at(series(doc, "policies", "policy", "login.ip", "challenged"), 59), 0);
    json_t *ch =
        series(doc, "policies", "policy", "login.site_failures", "challenged");
    assert_int_equal(at(ch, 58), 1);
    assert_int_equal(at(ch, 59), 0);
    assert_int_equal(at(series(doc, "policies", "policy", "login.site_failures",
                               "challenge_passed"),
                        59),
                     1);
    assert_int_equal(
        at(series(doc, "policies", "policy", "_other", "shadow_denied"), 59),
        1);
    json_decref(doc);
    ag_overview_free(o);
}

static void a_shields_minute_keeps_its_peak_and_last_figures(void **state)
{
    (void)state;
    struct ag_overview *o = named();
    uint64_t now = T0 + 30 * MIN;
    struct ag_overview_shield s = {.count = 40,
                                   .baseline_milli = 20500,
                                   .threshold = 102,
                                   .raised = false};
    ag_overview_shield(o, now, "login.site_failures", &s);
    s = (struct ag_overview_shield){.count = 300,
                                    .baseline_milli = 20500,
                                    .threshold = 102,
                                    .raised = true};
    ag_overview_shield(o, now + 1000, "login.site_failures", &s);
    /* The window rolled over: its count is lower, the minute's peak
     * stays; the shield is lowered, but it was raised in the minute. */
    s = (struct ag_overview_shield){
        .count = 5, .baseline_milli = 21000, .threshold = 105, .raised = false};
    ag_overview_shield(o, now + 2000, "login.site_failures", &s);
    /* A later minute on its own. */
    s = (struct ag_overview_shield){
        .count = 7, .baseline_milli = 21000, .threshold = 105, .raised = false};
    ag_overview_shield(o, now + MIN, "login.site_failures", &s);
    /* No shield by that name: not sampled. */
    ag_overview_shield(o, now, "login.ip", &s);
    json_t *doc = ag_overview_json(o, now + MIN);
    assert_int_equal(json_array_size(json_object_get(doc, "shields")), 1);
    const char *p = "login.site_failures";
    json_t *count = series(doc, "shields", "policy", p, "count");
    json_t *base = series(doc, "shields", "policy", p, "baseline");
    json_t *thr = series(doc, "shields", "policy", p, "threshold");
    json_t *up = series(doc, "shields", "policy", p, "raised");
    assert_int_equal(at(count, 58), 300);
    assert_true(json_real_value(json_array_get(base, 58)) == 21.0);
    assert_int_equal(at(thr, 58), 105);
    assert_true(json_is_true(json_array_get(up, 58)));
    assert_int_equal(at(count, 59), 7);
    assert_true(json_is_false(json_array_get(up, 59)));
    /* Minutes without a sample are null. */
    assert_true(json_is_null(json_array_get(count, 57)));
    assert_true(json_is_null(json_array_get(up, 0)));
    json_decref(doc);
    /* An hour later there is no sample in the window: not listed. */
    doc = ag_overview_json(o, now + 62 * MIN);
    assert_int_equal(json_array_size(json_object_get(doc, "shields")), 0);
    json_decref(doc);
    ag_overview_free(o);
}

#define THREADS 4
#define PER_THREAD 100000

static struct ag_overview *shared;

static void *count_many(void *arg)
{
    uint64_t now = *(const uint64_t *)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        ag_overview_check(shared, now, AG_EP_LOGIN, AG_OUT_ALLOWED);
        ag_overview_trip(shared, now, "login.ip", AG_OVERVIEW_DENIED);
    }
    return NULL;
}

static void threads_counting_at_once_lose_nothing(void **state)
{
    (void)state;
    shared = named();
    /* Every thread starts a fresh bucket (the first counts race to start
     * it over) an hour after a bucket of its own slot was filled. */
    for (int i = 0; i < 10; i++)
        ag_overview_check(shared, T0, AG_EP_LOGIN, AG_OUT_ALLOWED);
    uint64_t now = T0 + 60 * MIN;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, count_many, &now), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    json_t *doc = ag_overview_json(shared, now);
    assert_int_equal(
        at(series(doc, "checks", "endpoint", "login", "allowed"), 59),
        THREADS * PER_THREAD);
    assert_int_equal(
        at(series(doc, "policies", "policy", "login.ip", "denied"), 59),
        THREADS * PER_THREAD);
    json_decref(doc);
    ag_overview_free(shared);
}

static void names_past_the_table_count_as_other(void **state)
{
    (void)state;
    struct ag_overview *o;
    assert_int_equal(ag_overview_new(&o), AG_OK);
    struct ag_policy ps[AG_OVERVIEW_POLICIES + 1];
    for (int i = 0; i <= AG_OVERVIEW_POLICIES; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"name\":\"login.p%03d\",\"endpoint\":\"login\","
                 "\"key\":[\"ip\"],\"algorithm\":\"sliding_log\","
                 "\"limit\":5,\"window_s\":60}",
                 i);
        ps[i] = ag_test_policy(text);
    }
    struct ag_ruleset *set = ag_ruleset_new(ps, AG_OVERVIEW_POLICIES + 1, 1);
    ag_overview_name_policies(o, set);
    ag_ruleset_unref(set);
    ag_overview_trip(o, T0, "login.p000", AG_OVERVIEW_DENIED);
    ag_overview_trip(o, T0, "login.p127", AG_OVERVIEW_DENIED);
    ag_overview_trip(o, T0, "login.p128", AG_OVERVIEW_DENIED);
    json_t *doc = ag_overview_json(o, T0);
    assert_int_equal(
        at(series(doc, "policies", "policy", "login.p127", "denied"), 59), 1);
    assert_null(series(doc, "policies", "policy", "login.p128", "denied"));
    assert_int_equal(
        at(series(doc, "policies", "policy", "_other", "denied"), 59), 1);
    json_decref(doc);
    ag_overview_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checks_land_in_their_minute_oldest_first),
        cmocka_unit_test(a_bucket_an_hour_old_starts_over),
        cmocka_unit_test(
            policies_count_by_name_and_only_those_that_tripped_show),
        cmocka_unit_test(a_shields_minute_keeps_its_peak_and_last_figures),
        cmocka_unit_test(threads_counting_at_once_lose_nothing),
        cmocka_unit_test(names_past_the_table_count_as_other),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
