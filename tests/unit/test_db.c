/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_db: a new database is migrated and seeded once; reopening neither
 * migrates again nor reseeds; a failed open leaves nothing behind. The
 * core's hooks: the seed handed to ag_db_connect runs once, inside the
 * migrating transaction; ag_db_read runs its loads on one snapshot and
 * always ends its transaction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_test_db.h"

static void fresh_database_is_migrated_to_the_newest_version(void **state)
{
    struct tmpdb *t = *state;
    assert_true(ag_embedded_migrations_count >= 1);
    struct ag_db *db = open_db(t->path, NULL, 0);
    assert_true(newest_migration() >= 1);
    assert_int_equal(ag_db_schema_version(db), newest_migration());
    ag_db_close(db);
    struct stat st;
    assert_int_equal(stat(t->path, &st), 0);
    /* One schema_version row per migration, and the policies table. */
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM schema_version"),
                     (long long)ag_embedded_migrations_count);
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM policies"), 0);
}

static void fresh_database_is_seeded(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10),
                                     simple("login.ip", 100)};
    struct ag_db *db = open_db(t->path, seed, 2);
    size_t n = 0;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, 2);
    const struct ag_policy *p = find(ps, n, "login.user");
    assert_non_null(p);
    expect_same_policy(p, &seed[0]);
    p = find(ps, n, "login.ip");
    assert_non_null(p);
    expect_same_policy(p, &seed[1]);
    free(ps);
    ag_db_close(db);
}

static void reopening_neither_migrates_again_nor_reseeds(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy first[] = {simple("login.user", 10),
                                      simple("login.ip", 100)};
    ag_db_close(open_db(t->path, first, 2));

    const struct ag_policy second[] = {simple("login.user", 1),
                                       simple("otp.phone", 3),
                                       simple("login.other", 7)};
    struct ag_db *db = open_db(t->path, second, 3);
    assert_int_equal(ag_db_schema_version(db), newest_migration());
    size_t n = 0;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, 2);
    const struct ag_policy *p = find(ps, n, "login.user");
    assert_non_null(p);
    assert_int_equal(p->limit, 10);
    assert_non_null(find(ps, n, "login.ip"));
    assert_null(find(ps, n, "otp.phone"));
    assert_null(find(ps, n, "login.other"));
    free(ps);
    ag_db_close(db);
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM schema_version"),
                     (long long)ag_embedded_migrations_count);
}

static void emptied_database_is_not_reseeded(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10)};
    ag_db_close(open_db(t->path, seed, 1));
    exec_sql(t->path, "DELETE FROM policies");
    struct ag_db *db = open_db(t->path, seed, 1);
    size_t n = 99;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, 0);
    free(ps);
    ag_db_close(db);
}

static void failed_open_leaves_out_untouched(void **state)
{
    struct tmpdb *t = *state;
    /* The directory itself is no database file. */
    struct ag_db *sentinel = (struct ag_db *)&sentinel;
    struct ag_db *db = sentinel;
    struct ag_error err = {0};
    int rc = ag_db_open(t->dir, NULL, 0, &db, &err);
    assert_true(rc < 0);
    assert_ptr_equal(db, sentinel);
    assert_true(err.msg[0] != '\0');
}

/* The file under a connection: the same, another one, none; a writer
 * follows a replaced file and never creates a missing one. */
static void file_check_tells_same_replaced_and_missing_apart(void **state)
{
    struct tmpdb *t = *state;
    struct ag_db *db = open_db(t->path, NULL, 0);
    struct ag_error err = {0};
    assert_int_equal(ag_db_file_check(db, &err), AG_OK);

    char other[160];
    snprintf(other, sizeof other, "%s/other.db", t->dir);
    const struct ag_policy seed[] = {simple("login.other", 3)};
    ag_db_close(open_db(other, seed, 1));
    assert_int_equal(rename(other, t->path), 0);
    assert_int_equal(ag_db_file_check(db, &err), AG_ECONFLICT);
    assert_int_equal(ag_db_follow(db, &err), AG_OK);
    assert_int_equal(ag_db_file_check(db, &err), AG_OK);
    size_t n;
    struct ag_policy *ps = load_all(db, &n);
    assert_non_null(find(ps, n, "login.other"));
    free(ps);

    assert_int_equal(unlink(t->path), 0);
    assert_int_equal(ag_db_file_check(db, &err), AG_ENOTFOUND);
    assert_non_null(strstr(err.msg, t->path));
    assert_int_equal(ag_db_follow(db, &err), AG_EIO);
    assert_int_equal(ag_db_reopen(db, &err), AG_EIO);
    struct stat st;
    assert_int_not_equal(stat(t->path, &st), 0);
    ag_db_close(db);
}

/* A database made by the version before migration 003: its rows keep
 * their behaviour (every lane, deny, no block growth), whatever block_s
 * they have. */
static void a_database_of_schema_2_keeps_its_policies_behaviour(void **state)
{
    struct tmpdb *t = *state;
    sqlite3 *created;
    assert_int_equal(sqlite3_open(t->path, &created), SQLITE_OK);
    sqlite3_close(created);
    /* Schema 2 by hand: migrations 001 and 002 as they are embedded. */
    exec_sql(t->path, "CREATE TABLE schema_version (version INTEGER PRIMARY "
                      "KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL "
                      "DEFAULT '')");
    for (size_t i = 0; i < ag_embedded_migrations_count; i++) {
        const struct ag_embedded_file *m = &ag_embedded_migrations[i];
        if (atoi(m->name) > 2)
            continue;
        exec_sql(t->path, m->data);
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO schema_version (version, name) VALUES (%d, "
                 "'%s')",
                 atoi(m->name), m->name);
        exec_sql(t->path, sql);
    }
    exec_sql(t->path,
             "INSERT INTO policies (name, endpoint, key, algorithm, "
             "\"limit\", window_s, block_s, counts) VALUES ('login.old', "
             "'login', '[\"user\",\"ip\"]', 'sliding_log', 5, 900, 600, "
             "'failures')");
    struct ag_db *db = open_db(t->path, NULL, 0);
    assert_int_equal(ag_db_schema_version(db), newest_migration());
    size_t n;
    struct ag_policy *ps = load_all(db, &n);
    const struct ag_policy *p = find(ps, n, "login.old");
    assert_non_null(p);
    assert_int_equal(p->block_s, 600);
    assert_int_equal(p->block_growth, 1);
    assert_int_equal(p->block_max_s, 600);
    assert_int_equal(p->applies_to, AG_LANE_ALL);
    assert_int_equal(p->action, AG_ACTION_DENY);
    free(ps);
    ag_db_close(db);
}

static void
migrating_the_lists_keeps_their_rows_and_their_id_sequence(void **state)
{
    struct tmpdb *t = *state;
    sqlite3 *created;
    assert_int_equal(sqlite3_open(t->path, &created), SQLITE_OK);
    sqlite3_close(created);
    /* Schema 4 by hand, then three list entries, the newest deleted. */
    exec_sql(t->path, "CREATE TABLE schema_version (version INTEGER PRIMARY "
                      "KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL "
                      "DEFAULT '')");
    for (size_t i = 0; i < ag_embedded_migrations_count; i++) {
        const struct ag_embedded_file *m = &ag_embedded_migrations[i];
        if (atoi(m->name) > 4)
            continue;
        exec_sql(t->path, m->data);
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO schema_version (version, name) VALUES (%d, "
                 "'%s')",
                 atoi(m->name), m->name);
        exec_sql(t->path, sql);
    }
    exec_sql(t->path, "INSERT INTO lists (list, kind, value) VALUES "
                      "('deny', 'ip', '192.0.2.1'), ('deny', 'ip', "
                      "'192.0.2.2'), ('allow', 'ip', '192.0.2.3')");
    exec_sql(t->path, "DELETE FROM lists WHERE id = 3");
    ag_db_close(open_db(t->path, NULL, 0));
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM lists"), 2);
    /* The new kinds are allowed, and a new entry never reuses id 3 (its
     * audit rows would describe two entries). */
    exec_sql(t->path, "INSERT INTO lists (list, kind, value) VALUES "
                      "('deny', 'country', '+44')");
    assert_int_equal(
        query_int(t->path, "SELECT id FROM lists WHERE kind = 'country'"), 4);
}

/* A seed hook that counts its calls and writes a row, or fails. */
struct seed_probe {
    int calls;
    int rc;
};

static int probe_seed(struct ag_db *db, void *arg, struct ag_error *err)
{
    struct seed_probe *p = arg;
    p->calls++;
    if (p->rc)
        return ag_error_set(err, p->rc, NULL, "the seed refused");
    struct ag_policy one = simple("login.seeded", 4);
    return ag_db_policy_put(db, &one, err);
}

static void
the_core_runs_the_seed_hook_only_when_it_creates_the_schema(void **state)
{
    struct tmpdb *t = *state;
    struct seed_probe probe = {0};
    struct ag_db *db = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_db_connect(t->path, probe_seed, &probe, &db, &err),
                     AG_OK);
    assert_int_equal(probe.calls, 1);
    ag_db_close(db);
    assert_int_equal(ag_db_connect(t->path, probe_seed, &probe, &db, &err),
                     AG_OK);
    assert_int_equal(probe.calls, 1);
    /* Nor does a reopen seed. */
    assert_int_equal(ag_db_reopen(db, &err), AG_OK);
    assert_int_equal(probe.calls, 1);
    ag_db_close(db);
    assert_int_equal(
        query_int(t->path,
                  "SELECT count(*) FROM policies WHERE name = 'login.seeded'"),
        1);
}

static void a_failed_seed_rolls_the_migration_back(void **state)
{
    struct tmpdb *t = *state;
    struct seed_probe probe = {.rc = AG_EIO};
    struct ag_db *sentinel = (struct ag_db *)&sentinel;
    struct ag_db *db = sentinel;
    struct ag_error err = {0};
    assert_int_equal(ag_db_connect(t->path, probe_seed, &probe, &db, &err),
                     AG_EIO);
    assert_ptr_equal(db, sentinel);
    assert_string_equal(err.msg, "the seed refused");
    /* The schema went with it: the next open creates it, and seeds. */
    probe.rc = AG_OK;
    assert_int_equal(ag_db_connect(t->path, probe_seed, &probe, &db, &err),
                     AG_OK);
    assert_int_equal(probe.calls, 2);
    assert_int_equal(ag_db_schema_version(db), newest_migration());
    ag_db_close(db);
}

/* A load run by ag_db_read: the policies twice, another connection
 * emptying the table in between, or a refusal. */
struct read_probe {
    const char *path;
    size_t first, second;
    int rc;
};

static int probe_read(struct ag_db *db, void *arg, struct ag_error *err)
{
    struct read_probe *p = arg;
    if (p->rc)
        return ag_error_set(err, p->rc, "probe", "the load refused");
    struct ag_policy *ps = NULL;
    int rc = ag_db_policies_load(db, &ps, &p->first, err);
    free(ps);
    exec_sql(p->path, "DELETE FROM policies");
    ps = NULL;
    rc = rc ? rc : ag_db_policies_load(db, &ps, &p->second, err);
    free(ps);
    return rc;
}

static void a_read_sees_one_snapshot_and_always_ends(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10),
                                     simple("login.ip", 100)};
    struct ag_db *db = open_db(t->path, seed, 2);
    struct ag_error err = {0};
    struct read_probe probe = {.path = t->path, .rc = AG_EINVAL};
    assert_int_equal(ag_db_read(db, probe_read, &probe, &err), AG_EINVAL);
    assert_string_equal(err.field, "probe");
    /* The refused read ended its transaction: another one begins. */
    probe.rc = AG_OK;
    assert_int_equal(ag_db_read(db, probe_read, &probe, &err), AG_OK);
    assert_int_equal(probe.first, 2);
    assert_int_equal(probe.second, 2);
    /* Outside it, the delete shows. */
    size_t n = 99;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, 0);
    free(ps);
    ag_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        DB_TEST(fresh_database_is_migrated_to_the_newest_version),
        DB_TEST(migrating_the_lists_keeps_their_rows_and_their_id_sequence),
        DB_TEST(fresh_database_is_seeded),
        DB_TEST(reopening_neither_migrates_again_nor_reseeds),
        DB_TEST(a_database_of_schema_2_keeps_its_policies_behaviour),
        DB_TEST(emptied_database_is_not_reseeded),
        DB_TEST(failed_open_leaves_out_untouched),
        DB_TEST(file_check_tells_same_replaced_and_missing_apart),
        DB_TEST(the_core_runs_the_seed_hook_only_when_it_creates_the_schema),
        DB_TEST(a_failed_seed_rolls_the_migration_back),
        DB_TEST(a_read_sees_one_snapshot_and_always_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
