/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_metrics: counters and gauges by name from one table, denials by
 * policy, challenges apart from them, the endpoint and event type labels
 * handed in by the layers above, the shields' gauges by policy, the
 * exposition, and recording without metrics at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ag_buf.h"
#include "ag_endpoint.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_metrics.h"

static char *render(struct ag_metrics *m, struct ag_buf *b)
{
    ag_buf_init(b, 1 << 20);
    assert_int_equal(ag_metrics_render(m, b), AG_OK);
    return b->p;
}

static void counters_count_and_gauges_are_set(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    assert_non_null(m);
    ag_metrics_count(m, AG_M_REDIS_ERRORS);
    ag_metrics_count(m, AG_M_REDIS_ERRORS);
    ag_metrics_set(m, AG_M_BREAKER_OPEN, 1);
    ag_metrics_set(m, AG_M_POLICIES_STALE, 1);
    ag_metrics_set(m, AG_M_POLICIES_STALE, 0);
    assert_int_equal(ag_metrics_get(m, AG_M_REDIS_ERRORS), 2);
    assert_int_equal(ag_metrics_get(m, AG_M_BREAKER_OPEN), 1);
    assert_int_equal(ag_metrics_get(m, AG_M_POLICIES_STALE), 0);
    struct ag_buf b;
    const char *text = render(m, &b);
    assert_non_null(strstr(text, "\nabuseguard_redis_errors_total 2\n"));
    assert_non_null(strstr(text, "\nabuseguard_circuit_breaker_open 1\n"));
    assert_non_null(strstr(text, "\nabuseguard_policies_stale 0\n"));
    assert_non_null(
        strstr(text, "# TYPE abuseguard_circuit_breaker_open gauge\n"));
    assert_non_null(
        strstr(text, "# TYPE abuseguard_redis_timeouts_total counter\n"));
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void every_scalar_metric_is_exposed_once(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_buf b;
    const char *text = render(m, &b);
    static const char *const names[] = {
        "abuseguard_redis_errors_total",
        "abuseguard_redis_timeouts_total",
        "abuseguard_circuit_breaker_open",
        "abuseguard_circuit_breaker_opens_total",
        "abuseguard_policy_reloads_total",
        "abuseguard_policy_reload_failures_total",
        "abuseguard_policies_stale",
        "abuseguard_policies_invalid",
        "abuseguard_list_entries_invalid",
        "abuseguard_cluster_releases_total",
        "abuseguard_cluster_redirects_total",
        "abuseguard_http_connections",
        "abuseguard_check_loops",
        "abuseguard_redis_lanes",
        "abuseguard_http_connections_reclaimed_total",
        "abuseguard_http_connections_expired_total",
        "abuseguard_http_connections_refused_total",
        "abuseguard_webhook_delivered_total",
        "abuseguard_webhook_dropped_total",
        "abuseguard_webhook_queue_depth",
        "abuseguard_deny_cache_hits_total",
        "abuseguard_deny_cache_misses_total",
        "abuseguard_deny_cache_evictions_total",
        "abuseguard_deny_cache_invalidations_total",
        "abuseguard_deny_cache_entries",
        "abuseguard_pwned_reload_failures_total",
        "abuseguard_fleet_version",
        "abuseguard_fleet_head_version",
        "abuseguard_fleet_lag_seconds",
        "abuseguard_fleet_held",
        "abuseguard_fleet_diverged",
        "abuseguard_fleet_records_refused_total",
        "abuseguard_fleet_records_applied_total",
    };
    assert_int_equal(sizeof names / sizeof *names, AG_M_COUNT);
    for (size_t i = 0; i < AG_M_COUNT; i++) {
        char line[128];
        snprintf(line, sizeof line, "\n%s 0\n", names[i]);
        const char *at = strstr(text, line);
        if (!at)
            fail_msg("%s is not exposed", names[i]);
        if (strstr(at + 1, line))
            fail_msg("%s is exposed twice", names[i]);
    }
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void denials_are_counted_by_policy_and_kind(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    ag_metrics_denial(m, "login.user", false);
    ag_metrics_denial(m, "login.user", false);
    ag_metrics_denial(m, "login.trial", true);
    struct ag_buf b;
    const char *text = render(m, &b);
    assert_non_null(
        strstr(text, "abuseguard_denials_total{policy=\"login.user\"} 2\n"));
    assert_non_null(strstr(
        text, "abuseguard_shadow_denials_total{policy=\"login.trial\"} 1\n"));
    assert_non_null(
        strstr(text, "abuseguard_denials_total{policy=\"login.trial\"} 0\n"));
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void challenges_are_counted_apart_from_denials(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    ag_metrics_challenge(m, "login.ask", false);
    ag_metrics_challenge(m, "login.ask", false);
    ag_metrics_challenge(m, "login.ask", true);
    struct ag_buf b;
    const char *text = render(m, &b);
    assert_non_null(
        strstr(text, "# TYPE abuseguard_challenges_total counter\n"));
    assert_non_null(
        strstr(text, "abuseguard_challenges_total{policy=\"login.ask\"} 2\n"));
    assert_non_null(strstr(
        text, "abuseguard_challenges_passed_total{policy=\"login.ask\"} 1\n"));
    assert_non_null(
        strstr(text, "abuseguard_denials_total{policy=\"login.ask\"} 0\n"));
    ag_buf_free(&b);
    ag_metrics_free(m);
}

/* The event types named as ag_events_new names them. */
static void name_events(struct ag_metrics *m)
{
    const char *names[AG_EV_COUNT];
    for (int t = 0; t < AG_EV_COUNT; t++)
        names[t] = ag_event_type_name((enum ag_event_type)t);
    assert_int_equal(ag_metrics_name_events(m, names, AG_EV_COUNT), AG_OK);
}

static void events_are_counted_by_type_with_every_type_shown(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    name_events(m);
    ag_metrics_event(m, ag_event_type_name(AG_EV_LOCKOUT));
    ag_metrics_event(m, "lockout");
    ag_metrics_event(m, ag_event_type_name(AG_EV_BREAKER_OPEN));
    /* Out of range ("unknown") or not named: ignored. */
    ag_metrics_event(m, ag_event_type_name(AG_EV_COUNT));
    ag_metrics_event(m, NULL);
    struct ag_buf b;
    const char *text = render(m, &b);
    assert_non_null(strstr(text, "# TYPE abuseguard_events_total counter\n"));
    assert_non_null(
        strstr(text, "\nabuseguard_events_total{type=\"lockout\"} 2\n"));
    assert_non_null(
        strstr(text, "\nabuseguard_events_total{type=\"breaker_open\"} 1\n"));
    assert_non_null(
        strstr(text, "\nabuseguard_events_total{type=\"reset\"} 0\n"));
    assert_null(strstr(text, "type=\"unknown\""));
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void events_not_named_are_not_counted(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    ag_metrics_event(m, "lockout");
    struct ag_buf b;
    const char *text = render(m, &b);
    /* The family is there, empty: no type was named. */
    assert_non_null(strstr(text, "# TYPE abuseguard_events_total counter\n"));
    assert_null(strstr(text, "abuseguard_events_total{"));
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void checks_carry_the_endpoint_names_handed_in_in_order(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    static const char *const names[] = {"login", "otp"};
    assert_int_equal(ag_metrics_name_endpoints(m, names, 2), AG_OK);
    ag_metrics_check(m, 0, AG_OUT_ALLOWED, false, 100);
    ag_metrics_check(m, 1, AG_OUT_DENIED, true, 300);
    ag_metrics_check(m, 1, AG_OUT_DENIED, false, 2000000);
    /* Past the names, or below them: not counted. */
    ag_metrics_check(m, 2, AG_OUT_ALLOWED, false, 100);
    ag_metrics_check(m, -1, AG_OUT_ALLOWED, false, 100);
    struct ag_buf b;
    const char *text = render(m, &b);
    const char *login = strstr(
        text, "\nabuseguard_checks_total{endpoint=\"login\",outcome="
              "\"allowed\"} 1\n"
              "abuseguard_checks_total{endpoint=\"login\",outcome=\"denied\"}"
              " 0\n");
    const char *otp = strstr(
        text, "\nabuseguard_checks_total{endpoint=\"otp\",outcome=\"denied\"}"
              " 2\n");
    assert_non_null(login);
    assert_non_null(otp);
    assert_true(login < otp);
    assert_non_null(strstr(
        text, "\nabuseguard_degraded_checks_total{endpoint=\"otp\"} 1\n"));
    assert_non_null(strstr(text, "\nabuseguard_check_duration_seconds_bucket{"
                                 "endpoint=\"otp\",le=\"0.0005\"} 1\n"));
    assert_non_null(strstr(text, "\nabuseguard_check_duration_seconds_bucket{"
                                 "endpoint=\"otp\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(text, "\nabuseguard_check_duration_seconds_count{"
                                 "endpoint=\"login\"} 1\n"));
    assert_null(strstr(text, "otp_verify"));
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void naming_more_labels_than_the_table_holds_is_refused(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    static const char *const names[AG_METRICS_EVENTS + 1] = {"login"};
    const char *many[AG_METRICS_EVENTS + 1];
    for (size_t i = 0; i < AG_METRICS_EVENTS + 1; i++)
        many[i] = names[0];
    assert_int_equal(ag_metrics_name_endpoints(m, names, 1), AG_OK);
    assert_int_equal(
        ag_metrics_name_endpoints(m, many, AG_METRICS_ENDPOINTS + 1),
        AG_EINVAL);
    assert_int_equal(ag_metrics_name_events(m, many, AG_METRICS_EVENTS + 1),
                     AG_EINVAL);
    /* The names before the refusal stay. */
    ag_metrics_check(m, 0, AG_OUT_ALLOWED, false, 100);
    ag_metrics_check(m, 1, AG_OUT_ALLOWED, false, 100);
    struct ag_buf b;
    const char *text = render(m, &b);
    assert_non_null(strstr(text, "{endpoint=\"login\",outcome=\"allowed\"} "
                                 "1\n"));
    assert_null(strstr(text, "abuseguard_events_total{"));
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void shield_gauges_show_while_set_and_go_when_unset(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_buf b;
    const char *text = render(m, &b);
    /* The families are declared even with no shield. */
    assert_non_null(strstr(text, "# TYPE abuseguard_shield_raised gauge\n"));
    assert_null(strstr(text, "abuseguard_shield_raised{"));
    ag_buf_free(&b);
    struct ag_metrics_shield fig = {.raised = true,
                                    .local = false,
                                    .rate = 412,
                                    .baseline_milli = 20500,
                                    .threshold = 102};
    ag_metrics_shield(m, "login.site_failures", &fig);
    fig = (struct ag_metrics_shield){.local = true, .threshold = 30};
    ag_metrics_shield(m, "login.site_unknown_users", &fig);
    /* A denial of a shield's policy counts beside its gauges. */
    ag_metrics_denial(m, "login.site_failures", false);
    text = render(m, &b);
    static const char *const want[] = {
        "\nabuseguard_shield_raised{policy=\"login.site_failures\"} 1\n",
        "\nabuseguard_shield_rate{policy=\"login.site_failures\"} 412\n",
        "\nabuseguard_shield_baseline{policy=\"login.site_failures\"} "
        "20.500\n",
        "\nabuseguard_shield_threshold{policy=\"login.site_failures\"} 102\n",
        "\nabuseguard_shield_local{policy=\"login.site_failures\"} 0\n",
        "\nabuseguard_shield_raised{policy=\"login.site_unknown_users\"} 0\n",
        "\nabuseguard_shield_local{policy=\"login.site_unknown_users\"} 1\n",
        "\nabuseguard_shield_threshold{policy=\"login.site_unknown_users\"} "
        "30\n",
        "\nabuseguard_denials_total{policy=\"login.site_failures\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(text, want[i]))
            fail_msg("missing %s", want[i]);
    /* A policy with counters only is no shield. */
    ag_metrics_denial(m, "login.ip", false);
    ag_buf_free(&b);
    text = render(m, &b);
    assert_null(strstr(text, "abuseguard_shield_rate{policy=\"login.ip\"}"));
    ag_buf_free(&b);
    /* Unset: no longer listed; its counters stay. */
    ag_metrics_shield(m, "login.site_failures", NULL);
    text = render(m, &b);
    assert_null(strstr(
        text, "abuseguard_shield_raised{policy=\"login.site_failures\"}"));
    assert_non_null(strstr(
        text, "abuseguard_shield_raised{policy=\"login.site_unknown_users\"}"));
    assert_non_null(strstr(
        text, "abuseguard_denials_total{policy=\"login.site_failures\"}"));
    ag_buf_free(&b);
    ag_metrics_shield(NULL, "login.site_failures", &fig);
    ag_metrics_free(m);
}

static void corpus_age_takes_any_creation_time_without_overflow(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_buf b;
    assert_non_null(m);
    /* Made in the future: no age yet. */
    ag_metrics_pwned_corpus(m, AG_METRICS_PWNED_SHA1, true, 1, INT64_MAX);
    const char *text = render(m, &b);
    assert_non_null(
        strstr(text, "abuseguard_pwned_corpus_age_seconds{mode=\"sha1\"} 0\n"));
    ag_buf_free(&b);
    /* Made at the earliest int64: now minus it is past INT64_MAX. */
    ag_metrics_pwned_corpus(m, AG_METRICS_PWNED_SHA1, true, 1, INT64_MIN);
    text = render(m, &b);
    const char *age = "abuseguard_pwned_corpus_age_seconds{mode=\"sha1\"} ";
    const char *at = strstr(text, age);
    assert_non_null(at);
    unsigned long long v = strtoull(at + strlen(age), NULL, 10);
    assert_true(v > (unsigned long long)INT64_MAX);
    ag_buf_free(&b);
    ag_metrics_free(m);
}

static void recording_without_metrics_does_nothing(void **state)
{
    (void)state;
    ag_metrics_count(NULL, AG_M_RELOADS);
    ag_metrics_set(NULL, AG_M_BREAKER_OPEN, 1);
    ag_metrics_denial(NULL, "login.user", false);
    ag_metrics_check(NULL, AG_EP_LOGIN, AG_OUT_ALLOWED, false, 10);
    ag_metrics_event(NULL, "lockout");
    ag_metrics_pwned_lookup(NULL, AG_METRICS_PWNED_SHA1);
    ag_metrics_pwned_corpus(NULL, AG_METRICS_PWNED_NTLM, true, 1, 1);
    assert_int_equal(ag_metrics_name_endpoints(NULL, NULL, 0), AG_OK);
    assert_int_equal(ag_metrics_get(NULL, AG_M_RELOADS), 0);
    ag_metrics_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counters_count_and_gauges_are_set),
        cmocka_unit_test(every_scalar_metric_is_exposed_once),
        cmocka_unit_test(denials_are_counted_by_policy_and_kind),
        cmocka_unit_test(challenges_are_counted_apart_from_denials),
        cmocka_unit_test(events_are_counted_by_type_with_every_type_shown),
        cmocka_unit_test(events_not_named_are_not_counted),
        cmocka_unit_test(checks_carry_the_endpoint_names_handed_in_in_order),
        cmocka_unit_test(naming_more_labels_than_the_table_holds_is_refused),
        cmocka_unit_test(shield_gauges_show_while_set_and_go_when_unset),
        cmocka_unit_test(recording_without_metrics_does_nothing),
        cmocka_unit_test(corpus_age_takes_any_creation_time_without_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
