/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_db policies: put replaces; load round-trips every field; a row that
 * no longer validates fails the load naming the policy; an endpoint's
 * enabled signal policies are capped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_limiter.h"
#include "ag_test_db.h"

static void put_replaces_a_policy_of_the_same_name(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10),
                                     simple("login.ip", 100)};
    struct ag_db *db = open_db(t->path, seed, 2);
    struct ag_policy changed = ag_test_policy(
        "{\"name\":\"login.user\",\"endpoint\":\"login\",\"key\":[\"user\","
        "\"device\"],\"algorithm\":\"token_bucket\",\"limit\":42,"
        "\"window_s\":60,\"enabled\":false}");
    struct ag_error err = {0};
    assert_int_equal(ag_db_policy_put(db, &changed, &err), AG_OK);
    struct ag_policy added = simple("login.new", 3);
    assert_int_equal(ag_db_policy_put(db, &added, &err), AG_OK);

    size_t n = 0;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, 3);
    expect_same_policy(find(ps, n, "login.user"), &changed);
    expect_same_policy(find(ps, n, "login.ip"), &seed[1]);
    expect_same_policy(find(ps, n, "login.new"), &added);
    free(ps);
    ag_db_close(db);

    /* The change outlives the connection. */
    db = open_db(t->path, NULL, 0);
    ps = load_all(db, &n);
    assert_int_equal(n, 3);
    expect_same_policy(find(ps, n, "login.user"), &changed);
    free(ps);
    ag_db_close(db);
}

static void load_round_trips_every_field(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy all[] = {
        ag_test_policy(
            "{\"name\":\"login.all-fields_1\",\"endpoint\":\"login\","
            "\"key\":[\"device\",\"ip\",\"user\"],"
            "\"algorithm\":\"sliding_window\",\"limit\":123456,"
            "\"window_s\":2592000,\"block_s\":3600,"
            "\"counts\":\"failures\",\"fail\":\"closed\","
            "\"mode\":\"shadow\",\"enabled\":false}"),
        ag_test_policy(
            "{\"name\":\"otp.all\",\"endpoint\":\"otp\","
            "\"key\":[\"user\",\"phone\",\"ip\"],"
            "\"algorithm\":\"fixed_window\",\"limit\":1000000000,"
            "\"window_s\":1,\"block_s\":0,\"counts\":\"attempts\","
            "\"fail\":\"open\",\"mode\":\"enforce\",\"enabled\":true}"),
        ag_test_policy("{\"name\":\"otp.bucket\",\"endpoint\":\"otp\","
                       "\"key\":[\"phone\"],\"algorithm\":\"token_bucket\","
                       "\"limit\":1,\"window_s\":86400,\"block_s\":2592000,"
                       "\"fail\":\"closed\"}"),
        ag_test_policy("{\"name\":\"login.log\",\"endpoint\":\"login\","
                       "\"key\":[\"ip\"],\"algorithm\":\"sliding_log\","
                       "\"limit\":10000,\"window_s\":900}"),
        /* min_ratio, the one REAL column, NULL in every other row. */
        ag_test_policy("{\"name\":\"otp.conversion\",\"endpoint\":\"otp\","
                       "\"key\":[\"phone_prefix\"],"
                       "\"algorithm\":\"conversion\",\"limit\":50,"
                       "\"window_s\":3600,\"min_ratio\":0.123457}"),
        /* signal, a TEXT column NULL in every other row. */
        ag_test_policy("{\"name\":\"login.breached\",\"endpoint\":\"login\","
                       "\"key\":[\"user\"],\"algorithm\":\"signal\","
                       "\"signal\":\"password_breached\","
                       "\"applies_to\":\"untrusted\",\"action\":"
                       "\"challenge\"}"),
    };
    const size_t nall = sizeof all / sizeof all[0];
    struct ag_db *db = open_db(t->path, NULL, 0);
    struct ag_error err = {0};
    for (size_t i = 0; i < nall; i++)
        assert_int_equal(ag_db_policy_put(db, &all[i], &err), AG_OK);
    size_t n = 0;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, nall);
    for (size_t i = 0; i < nall; i++) {
        const struct ag_policy *p = find(ps, n, all[i].name);
        if (!p)
            fail_msg("%s did not load", all[i].name);
        expect_same_policy(p, &all[i]);
    }
    free(ps);
    ag_db_close(db);
}

static void invalid_row_fails_load_naming_the_policy(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10)};
    ag_db_close(open_db(t->path, seed, 1));
    exec_sql(t->path,
             "INSERT INTO policies (name, endpoint, key, algorithm, \"limit\","
             " window_s) VALUES ('login.hand_edit', 'login', '[\"user\"]',"
             " 'leaky_bucket', 5, 60)");
    struct ag_db *db = open_db(t->path, NULL, 0);
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err = {0};
    assert_int_equal(ag_db_policies_load(db, &ps, &n, &err), AG_EINVAL);
    assert_non_null(strstr(err.msg, "login.hand_edit"));
    assert_non_null(strstr(err.msg, "algorithm"));
    assert_null(ps);
    ag_db_close(db);
}

/* A lenient load takes an invalid row's last audited version, leaves out
 * a row that never had one, and says why for both. */
static void
lenient_load_keeps_the_last_valid_version_of_invalid_rows(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10),
                                     simple("login.other", 4)};
    ag_db_close(open_db(t->path, seed, 2));
    exec_sql(t->path, "UPDATE policies SET algorithm = 'bogus' WHERE name = "
                      "'login.user'");
    exec_sql(t->path,
             "INSERT INTO policies (name, endpoint, key, algorithm, \"limit\","
             " window_s) VALUES ('login.hand_edit', 'login', '[\"user\"]',"
             " 'leaky_bucket', 5, 60)");
    struct ag_db *db = open_db(t->path, NULL, 0);
    struct ag_policy *ps = NULL;
    struct ag_db_invalid *bad = NULL;
    size_t n = 0, nbad = 0;
    struct ag_error err = {0};
    assert_int_equal(
        ag_db_policies_load_lenient(db, &ps, &n, &bad, &nbad, &err), AG_OK);
    assert_int_equal(n, 2);
    expect_same_policy(find(ps, n, "login.user"), &seed[0]);
    expect_same_policy(find(ps, n, "login.other"), &seed[1]);
    assert_null(find(ps, n, "login.hand_edit"));
    assert_int_equal(nbad, 2);
    assert_string_equal(bad[0].name, "login.hand_edit");
    assert_false(bad[0].kept);
    assert_string_equal(bad[1].name, "login.user");
    assert_true(bad[1].kept);
    assert_non_null(strstr(bad[1].error, "algorithm"));
    free(ps);
    free(bad);
    ag_db_close(db);
}

/* A check holds AG_SIGNALS_MAX signal policies at most: one more enabled
 * on an endpoint is refused in its transaction, and a disabled one is
 * kept. */
static void signal_policies_per_endpoint_are_capped(void **state)
{
    struct tmpdb *t = *state;
    struct ag_db *db = open_db(t->path, NULL, 0);
    struct ag_error err = {0};
    char text[256];
    for (int i = 0; i <= AG_SIGNALS_MAX; i++) {
        snprintf(text, sizeof text,
                 "{\"name\":\"login.s%d\",\"endpoint\":\"login\","
                 "\"key\":[\"user\"],\"algorithm\":\"signal\","
                 "\"signal\":\"password_breached\"}",
                 i);
        struct ag_policy p = ag_test_policy(text);
        int rc = ag_db_policy_save(db, &p, "test", NULL, &err);
        assert_int_equal(rc, i < AG_SIGNALS_MAX ? AG_OK : AG_ETOOBIG);
    }
    assert_string_equal(err.field, "enabled");
    assert_non_null(strstr(err.msg, "signal policies"));
    size_t n = 0;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, AG_SIGNALS_MAX);
    free(ps);
    snprintf(text, sizeof text,
             "{\"name\":\"login.s%d\",\"endpoint\":\"login\","
             "\"key\":[\"user\"],\"algorithm\":\"signal\","
             "\"signal\":\"password_breached\",\"enabled\":false}",
             AG_SIGNALS_MAX);
    struct ag_policy off = ag_test_policy(text);
    assert_int_equal(ag_db_policy_save(db, &off, "test", NULL, &err), AG_OK);
    ag_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        DB_TEST(put_replaces_a_policy_of_the_same_name),
        DB_TEST(load_round_trips_every_field),
        DB_TEST(invalid_row_fails_load_naming_the_policy),
        DB_TEST(lenient_load_keeps_the_last_valid_version_of_invalid_rows),
        DB_TEST(signal_policies_per_endpoint_are_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
