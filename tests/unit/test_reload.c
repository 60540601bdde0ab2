/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_reload: ag_reload_sync says whether this instance applied a change:
 * applied, not yet (the wait ran out), or not at all (the load failed).
 * Each test has its own database under /tmp and a service with only the
 * in-process store (no check runs here).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_test_db.h"

#include <pthread.h>

#include <sodium.h>

#include "ag_reload.h"

/* Long enough that the watcher only loads when a sync asks it to. */
#define WATCH_INTERVAL_MS 60000
#define SYNC_TIMEOUT_MS 300

struct fixture {
    struct tmpdb db;
    pthread_mutex_t lock; /* guards set; a test holds it to stall publish */
    struct ag_ruleset *set;
    struct ag_reload *reload;
};

static void publish(void *ctx, struct ag_ruleset *set)
{
    struct fixture *f = ctx;
    pthread_mutex_lock(&f->lock);
    struct ag_ruleset *old = f->set;
    f->set = set;
    pthread_mutex_unlock(&f->lock);
    ag_ruleset_unref(old);
}

static int fixture_setup(void **state)
{
    if (sodium_init() < 0 || tmpdb_setup(state))
        return -1;
    struct tmpdb *t = *state;
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->db = *t;
    free(t);
    pthread_mutex_init(&f->lock, NULL);
    const struct ag_policy seed[] = {ag_test_policy(
        "{\"name\":\"login.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"sliding_log\",\"limit\":10,\"window_s\":900}")};
    ag_db_close(open_db(f->db.path, seed, 1));
    struct ag_error err = {0};
    if (ag_reload_start(f->db.path, publish, f, NULL, WATCH_INTERVAL_MS,
                        SYNC_TIMEOUT_MS, 0, &f->reload, &err))
        fail_msg("reload start: %s", err.msg);
    *state = f;
    return 0;
}

static int fixture_teardown(void **state)
{
    struct fixture *f = *state;
    ag_reload_stop(f->reload);
    ag_ruleset_unref(f->set);
    pthread_mutex_destroy(&f->lock);
    struct tmpdb *t = malloc(sizeof *t);
    *t = f->db;
    free(f);
    *state = t;
    return tmpdb_teardown(state);
}

static uint64_t set_version(struct fixture *f)
{
    pthread_mutex_lock(&f->lock);
    assert_non_null(f->set);
    uint64_t v = f->set->version;
    pthread_mutex_unlock(&f->lock);
    return v;
}

static void sync_reports_a_change_applied(void **state)
{
    struct fixture *f = *state;
    uint64_t before = set_version(f);
    exec_sql(f->db.path, "UPDATE policies SET \"limit\" = 3");
    assert_int_equal(ag_reload_sync(f->reload), AG_OK);
    assert_true(set_version(f) > before);
}

/* Holding the publisher's lock keeps the watcher from publishing the set
 * it loaded, as a slow disk or a long load would, past the sync's
 * deadline. */
static void sync_reports_a_timeout_while_the_watcher_is_held_up(void **state)
{
    struct fixture *f = *state;
    uint64_t before = set_version(f);
    exec_sql(f->db.path, "UPDATE policies SET \"limit\" = 4");
    pthread_mutex_lock(&f->lock);
    int rc = ag_reload_sync(f->reload);
    pthread_mutex_unlock(&f->lock);
    assert_int_equal(rc, AG_EPENDING);
    /* Once free the watcher catches up, and the next sync says so. */
    assert_int_equal(ag_reload_sync(f->reload), AG_OK);
    assert_true(set_version(f) > before);
}

static void sync_reports_a_load_that_failed(void **state)
{
    struct fixture *f = *state;
    uint64_t before = set_version(f);
    exec_sql(f->db.path, "DROP TABLE policies");
    assert_int_equal(ag_reload_sync(f->reload), AG_EIO);
    /* The last good set stays in force. */
    assert_int_equal(set_version(f), before);
}

/* An invalid row fails no load: its last valid version is published. */
static void sync_applies_a_change_beside_an_invalid_row(void **state)
{
    struct fixture *f = *state;
    exec_sql(f->db.path, "UPDATE policies SET algorithm = 'bogus'");
    assert_int_equal(ag_reload_sync(f->reload), AG_OK);
    pthread_mutex_lock(&f->lock);
    assert_int_equal(f->set->count, 1);
    assert_int_equal(f->set->policies[0].limit, 10);
    pthread_mutex_unlock(&f->lock);
}

#define RELOAD_TEST(f)                                                         \
    cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        RELOAD_TEST(sync_reports_a_change_applied),
        RELOAD_TEST(sync_reports_a_timeout_while_the_watcher_is_held_up),
        RELOAD_TEST(sync_reports_a_load_that_failed),
        RELOAD_TEST(sync_applies_a_change_beside_an_invalid_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
