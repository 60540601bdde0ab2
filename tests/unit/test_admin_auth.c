/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_admin_auth: the bearer token check (scheme in any case, trailing
 * white space, the token whole) and the per-address throttle of failures,
 * on a fake clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_admin_auth.h"
#include "ag_error.h"

#define TOKEN "tok-0123456789abcdef"
#define BASE_US 1000000000000ull

static uint64_t fake_now;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static int setup(void **state)
{
    fake_now = BASE_US;
    struct ag_admin_auth *a = NULL;
    struct ag_error err;
    if (ag_admin_auth_new(TOKEN, fake_clock, NULL, &a, &err))
        return -1;
    *state = a;
    return 0;
}

static int teardown(void **state)
{
    ag_admin_auth_free(*state);
    return 0;
}

static enum ag_admin_auth_verdict judge(void **state, const char *client,
                                        const char *header)
{
    uint32_t retry = 0;
    return ag_admin_auth_check(*state, client, header, &retry);
}

static void
bearer_scheme_in_any_case_with_trailing_space_is_accepted(void **state)
{
    const char *good[] = {"Bearer " TOKEN, "bearer " TOKEN, "BEARER " TOKEN,
                          "Bearer " TOKEN " \t ", "Bearer   " TOKEN};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_int_equal(judge(state, "192.0.2.1", good[i]), AG_ADMIN_AUTH_OK);
}

static void partial_padded_or_other_scheme_tokens_are_denied(void **state)
{
    const char *bad[] = {NULL,
                         "",
                         "Bearer",
                         "Bearer ",
                         "Bearer" TOKEN,
                         "Bearer\t" TOKEN,
                         "Bearer  " TOKEN " x",
                         "Bearer tok-0123456789abcde",
                         "Bearer " TOKEN "f",
                         "Basic " TOKEN,
                         TOKEN};
    /* Each from its own address, so that the throttle stays out of it. */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char client[32];
        snprintf(client, sizeof client, "192.0.2.%zu", i + 1);
        assert_int_equal(judge(state, client, bad[i]), AG_ADMIN_AUTH_DENIED);
    }
}

static void
tenth_failure_throttles_the_address_even_with_the_token(void **state)
{
    for (int i = 0; i < AG_ADMIN_AUTH_FAILS; i++) {
        fake_now = BASE_US + (uint64_t)i * 1000000;
        assert_int_equal(judge(state, "198.51.100.7", "Bearer wrong"),
                         AG_ADMIN_AUTH_DENIED);
    }
    uint32_t retry = 0;
    assert_int_equal(
        ag_admin_auth_check(*state, "198.51.100.7", "Bearer " TOKEN, &retry),
        AG_ADMIN_AUTH_THROTTLED);
    /* The oldest failure, at BASE_US, leaves the window 60 s after it. */
    assert_int_equal(retry, AG_ADMIN_AUTH_WINDOW_S - (AG_ADMIN_AUTH_FAILS - 1));
}

static void throttled_address_leaves_other_addresses_alone(void **state)
{
    for (int i = 0; i < AG_ADMIN_AUTH_FAILS; i++)
        judge(state, "198.51.100.7", "Bearer wrong");
    assert_int_equal(judge(state, "198.51.100.7", "Bearer wrong"),
                     AG_ADMIN_AUTH_THROTTLED);
    assert_int_equal(judge(state, "198.51.100.8", "Bearer wrong"),
                     AG_ADMIN_AUTH_DENIED);
    assert_int_equal(judge(state, "198.51.100.8", "Bearer " TOKEN),
                     AG_ADMIN_AUTH_OK);
}

static void throttled_requests_do_not_extend_the_throttle(void **state)
{
    for (int i = 0; i < AG_ADMIN_AUTH_FAILS; i++)
        judge(state, "198.51.100.7", "Bearer wrong");
    fake_now = BASE_US + 59 * 1000000ull;
    assert_int_equal(judge(state, "198.51.100.7", "Bearer wrong"),
                     AG_ADMIN_AUTH_THROTTLED);
    fake_now = BASE_US + (AG_ADMIN_AUTH_WINDOW_S + 1) * 1000000ull;
    assert_int_equal(judge(state, "198.51.100.7", "Bearer " TOKEN),
                     AG_ADMIN_AUTH_OK);
}

static void successes_do_not_count(void **state)
{
    for (int i = 0; i < 3 * AG_ADMIN_AUTH_FAILS; i++)
        assert_int_equal(judge(state, "198.51.100.9", "Bearer " TOKEN),
                         AG_ADMIN_AUTH_OK);
    for (int i = 0; i < AG_ADMIN_AUTH_FAILS; i++)
        assert_int_equal(judge(state, "198.51.100.9", "Bearer nope"),
                         AG_ADMIN_AUTH_DENIED);
}

/* One IPv6 host owns a /64: rotating addresses inside it is one address
 * to the throttle, as it is to every per-address policy. */
static void an_ipv6_host_is_throttled_by_its_slash64(void **state)
{
    for (int i = 0; i < AG_ADMIN_AUTH_FAILS; i++) {
        char client[64];
        snprintf(client, sizeof client, "2001:db8:1:2::%x", i + 1);
        assert_int_equal(judge(state, client, "Bearer wrong"),
                         AG_ADMIN_AUTH_DENIED);
    }
    assert_int_equal(judge(state, "2001:db8:1:2:ffff::1", "Bearer " TOKEN),
                     AG_ADMIN_AUTH_THROTTLED);
    assert_int_equal(judge(state, "2001:db8:1:3::1", "Bearer " TOKEN),
                     AG_ADMIN_AUTH_OK);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(bearer_scheme_in_any_case_with_trailing_space_is_accepted),
        T(partial_padded_or_other_scheme_tokens_are_denied),
        T(tenth_failure_throttles_the_address_even_with_the_token),
        T(throttled_address_leaves_other_addresses_alone),
        T(throttled_requests_do_not_extend_the_throttle),
        T(successes_do_not_count),
        T(an_ipv6_host_is_throttled_by_its_slash64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
