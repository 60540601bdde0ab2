/*
 * ag_policy_db: a new database is migrated and seeded once; reopening
 * neither migrates again nor reseeds; put replaces; load round-trips every
 * field. Each test works in its own mkdtemp directory under /tmp.
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
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_policy_db.h"

#define ERRSZ 512

struct tmpdb {
    char dir[64];
    char path[128];
};

static int tmpdb_setup(void **state)
{
    struct tmpdb *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    snprintf(t->dir, sizeof t->dir, "/tmp/ag-unit-db-XXXXXX");
    if (!mkdtemp(t->dir)) {
        free(t);
        return -1;
    }
    snprintf(t->path, sizeof t->path, "%s/policies.db", t->dir);
    *state = t;
    return 0;
}

static int tmpdb_teardown(void **state)
{
    struct tmpdb *t = *state;
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s%s", t->path, suffixes[i]);
        unlink(p);
    }
    rmdir(t->dir);
    free(t);
    return 0;
}

static struct ag_policy simple(const char *name, uint32_t limit)
{
    char text[256];
    snprintf(text, sizeof text,
             "{\"name\":\"%s\",\"endpoint\":\"login\",\"key\":[\"user\"],"
             "\"algorithm\":\"sliding_log\",\"limit\":%u,\"window_s\":900}",
             name, (unsigned)limit);
    return ag_test_policy(text);
}

static struct ag_policy_db *open_db(const char *path,
                                    const struct ag_policy *seed, size_t n)
{
    struct ag_policy_db *db = NULL;
    char err[ERRSZ] = "";
    int rc = ag_policy_db_open(path, seed, n, &db, err, ERRSZ);
    if (rc != AG_OK)
        fail_msg("open %s: rc %d: %s", path, rc, err);
    assert_non_null(db);
    return db;
}

static struct ag_policy *load_all(struct ag_policy_db *db, size_t *n)
{
    struct ag_policy *ps = NULL;
    char err[ERRSZ] = "";
    int rc = ag_policy_db_load(db, &ps, n, err, ERRSZ);
    if (rc != AG_OK)
        fail_msg("load: rc %d: %s", rc, err);
    return ps;
}

static const struct ag_policy *find(const struct ag_policy *ps, size_t n,
                                    const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ps[i].name, name) == 0)
            return &ps[i];
    return NULL;
}

/* Fails unless a and b agree on every field of the record. */
static void expect_same_policy(const struct ag_policy *a,
                               const struct ag_policy *b)
{
    assert_non_null(a);
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->endpoint, b->endpoint);
    assert_int_equal(a->nkeys, b->nkeys);
    for (size_t i = 0; i < a->nkeys; i++)
        assert_int_equal(a->key[i], b->key[i]);
    assert_int_equal(a->algorithm, b->algorithm);
    assert_int_equal(a->limit, b->limit);
    assert_int_equal(a->window_s, b->window_s);
    assert_int_equal(a->block_s, b->block_s);
    assert_int_equal(a->counts, b->counts);
    assert_int_equal(a->fail, b->fail);
    assert_int_equal(a->mode, b->mode);
    assert_int_equal(a->enabled, b->enabled);
}

/* The version of the newest embedded migration: NNN_name.sql. */
static int newest_migration(void)
{
    int newest = 0;
    for (size_t i = 0; i < ag_embedded_migrations_count; i++) {
        int v = atoi(ag_embedded_migrations[i].name);
        if (v > newest)
            newest = v;
    }
    return newest;
}

/* Runs one query returning one integer, straight through SQLite. */
static long long query_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
                     SQLITE_OK);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void exec_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
                     SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static void fresh_database_is_migrated_to_the_newest_version(void **state)
{
    struct tmpdb *t = *state;
    assert_true(ag_embedded_migrations_count >= 1);
    struct ag_policy_db *db = open_db(t->path, NULL, 0);
    assert_true(newest_migration() >= 1);
    assert_int_equal(ag_policy_db_schema_version(db), newest_migration());
    ag_policy_db_close(db);
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
    struct ag_policy_db *db = open_db(t->path, seed, 2);
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
    ag_policy_db_close(db);
}

static void reopening_neither_migrates_again_nor_reseeds(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy first[] = {simple("login.user", 10),
                                      simple("login.ip", 100)};
    ag_policy_db_close(open_db(t->path, first, 2));

    const struct ag_policy second[] = {simple("login.user", 1),
                                       simple("otp.phone", 3),
                                       simple("login.other", 7)};
    struct ag_policy_db *db = open_db(t->path, second, 3);
    assert_int_equal(ag_policy_db_schema_version(db), newest_migration());
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
    ag_policy_db_close(db);
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM schema_version"),
                     (long long)ag_embedded_migrations_count);
}

static void emptied_database_is_not_reseeded(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10)};
    ag_policy_db_close(open_db(t->path, seed, 1));
    exec_sql(t->path, "DELETE FROM policies");
    struct ag_policy_db *db = open_db(t->path, seed, 1);
    size_t n = 99;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, 0);
    free(ps);
    ag_policy_db_close(db);
}

static void put_replaces_a_policy_of_the_same_name(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10),
                                     simple("login.ip", 100)};
    struct ag_policy_db *db = open_db(t->path, seed, 2);
    struct ag_policy changed = ag_test_policy(
        "{\"name\":\"login.user\",\"endpoint\":\"login\",\"key\":[\"user\","
        "\"device\"],\"algorithm\":\"token_bucket\",\"limit\":42,"
        "\"window_s\":60,\"enabled\":false}");
    char err[ERRSZ] = "";
    assert_int_equal(ag_policy_db_put(db, &changed, err, ERRSZ), AG_OK);
    struct ag_policy added = simple("login.new", 3);
    assert_int_equal(ag_policy_db_put(db, &added, err, ERRSZ), AG_OK);

    size_t n = 0;
    struct ag_policy *ps = load_all(db, &n);
    assert_int_equal(n, 3);
    expect_same_policy(find(ps, n, "login.user"), &changed);
    expect_same_policy(find(ps, n, "login.ip"), &seed[1]);
    expect_same_policy(find(ps, n, "login.new"), &added);
    free(ps);
    ag_policy_db_close(db);

    /* The change outlives the connection. */
    db = open_db(t->path, NULL, 0);
    ps = load_all(db, &n);
    assert_int_equal(n, 3);
    expect_same_policy(find(ps, n, "login.user"), &changed);
    free(ps);
    ag_policy_db_close(db);
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
    };
    const size_t nall = sizeof all / sizeof all[0];
    struct ag_policy_db *db = open_db(t->path, NULL, 0);
    char err[ERRSZ] = "";
    for (size_t i = 0; i < nall; i++)
        assert_int_equal(ag_policy_db_put(db, &all[i], err, ERRSZ), AG_OK);
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
    ag_policy_db_close(db);
}

static void invalid_row_fails_load_naming_the_policy(void **state)
{
    struct tmpdb *t = *state;
    const struct ag_policy seed[] = {simple("login.user", 10)};
    ag_policy_db_close(open_db(t->path, seed, 1));
    exec_sql(t->path,
             "INSERT INTO policies (name, endpoint, key, algorithm, \"limit\","
             " window_s) VALUES ('login.hand_edit', 'login', '[\"user\"]',"
             " 'leaky_bucket', 5, 60)");
    struct ag_policy_db *db = open_db(t->path, NULL, 0);
    struct ag_policy *ps = NULL;
    size_t n = 0;
    char err[ERRSZ] = "";
    assert_int_equal(ag_policy_db_load(db, &ps, &n, err, ERRSZ), AG_EINVAL);
    assert_non_null(strstr(err, "login.hand_edit"));
    assert_non_null(strstr(err, "algorithm"));
    assert_null(ps);
    ag_policy_db_close(db);
}

static void failed_open_leaves_out_untouched(void **state)
{
    struct tmpdb *t = *state;
    /* The directory itself is no database file. */
    struct ag_policy_db *sentinel = (struct ag_policy_db *)&sentinel;
    struct ag_policy_db *db = sentinel;
    char err[ERRSZ] = "";
    int rc = ag_policy_db_open(t->dir, NULL, 0, &db, err, ERRSZ);
    assert_true(rc < 0);
    assert_ptr_equal(db, sentinel);
    assert_true(err[0] != '\0');
}

/* Fills the lists table to n entries straight through SQLite, the way
 * other instances' adds would have. */
static void fill_lists(const char *path, int n)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i "
             "WHERE x < %d) INSERT INTO lists (list, kind, value) "
             "SELECT 'deny', 'ip', '10.' || (x / 65536) || '.' || "
             "(x / 256 %% 256) || '.' || (x %% 256) FROM i",
             n);
    exec_sql(path, sql);
}

static struct ag_list_entry deny_ip(const char *ip)
{
    struct ag_list_entry e;
    memset(&e, 0, sizeof e);
    e.list = AG_LIST_DENY;
    e.kind = AG_LK_IP;
    e.endpoint = -1;
    snprintf(e.value, sizeof e.value, "%s", ip);
    return e;
}

/* Two instances each hold a connection; what one of them read before the
 * other's add committed must not let both pass the cap. */
static void list_cap_holds_across_two_connections(void **state)
{
    struct tmpdb *t = *state;
    struct ag_policy_db *a = open_db(t->path, NULL, 0);
    struct ag_policy_db *b = open_db(t->path, NULL, 0);
    fill_lists(t->path, AG_LISTS_MAX - 1);
    char err[ERRSZ] = "";
    int64_t id = 0;
    struct ag_list_entry e = deny_ip("192.0.2.1");
    assert_int_equal(ag_policy_db_list_add(a, &e, "test", &id, err, ERRSZ),
                     AG_OK);
    e = deny_ip("192.0.2.2");
    assert_int_equal(ag_policy_db_list_add(b, &e, "test", &id, err, ERRSZ),
                     AG_ETOOBIG);
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM lists"),
                     AG_LISTS_MAX);
    ag_policy_db_close(a);
    ag_policy_db_close(b);
}

#define DB_TEST(f)                                                             \
    cmocka_unit_test_setup_teardown(f, tmpdb_setup, tmpdb_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        DB_TEST(fresh_database_is_migrated_to_the_newest_version),
        DB_TEST(fresh_database_is_seeded),
        DB_TEST(reopening_neither_migrates_again_nor_reseeds),
        DB_TEST(emptied_database_is_not_reseeded),
        DB_TEST(put_replaces_a_policy_of_the_same_name),
        DB_TEST(load_round_trips_every_field),
        DB_TEST(invalid_row_fails_load_naming_the_policy),
        DB_TEST(failed_open_leaves_out_untouched),
        DB_TEST(list_cap_holds_across_two_connections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
