/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the ag_db unit tests: a database in its own mkdtemp
 * directory under /tmp per test, opened through the API or reached
 * straight through SQLite (as a hand edit or another instance would).
 * Include after <cmocka.h>.
 */
#ifndef AG_TEST_DB_H
#define AG_TEST_DB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ag_db.h"
#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_test.h"

struct tmpdb {
    char dir[64];
    char path[128];
};

static inline int tmpdb_setup(void **state)
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

static inline int tmpdb_teardown(void **state)
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

static inline struct ag_policy simple(const char *name, uint32_t limit)
{
    char text[256];
    snprintf(text, sizeof text,
             "{\"name\":\"%s\",\"endpoint\":\"login\",\"key\":[\"user\"],"
             "\"algorithm\":\"sliding_log\",\"limit\":%u,\"window_s\":900}",
             name, (unsigned)limit);
    return ag_test_policy(text);
}

static inline struct ag_db *open_db(const char *path,
                                    const struct ag_policy *seed, size_t n)
{
    struct ag_db *db = NULL;
    struct ag_error err = {0};
    int rc = ag_db_open(path, seed, n, &db, &err);
    if (rc != AG_OK)
        fail_msg("open %s: rc %d: %s", path, rc, err.msg);
    assert_non_null(db);
    return db;
}

static inline struct ag_policy *load_all(struct ag_db *db, size_t *n)
{
    struct ag_policy *ps = NULL;
    struct ag_error err = {0};
    int rc = ag_db_policies_load(db, &ps, n, &err);
    if (rc != AG_OK)
        fail_msg("load: rc %d: %s", rc, err.msg);
    return ps;
}

static inline const struct ag_policy *find(const struct ag_policy *ps, size_t n,
                                           const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ps[i].name, name) == 0)
            return &ps[i];
    return NULL;
}

/* Fails unless a and b agree on every field of the record. */
static inline void expect_same_policy(const struct ag_policy *a,
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
    assert_int_equal(a->block_growth, b->block_growth);
    assert_int_equal(a->block_max_s, b->block_max_s);
    assert_int_equal(a->applies_to, b->applies_to);
    assert_int_equal(a->action, b->action);
    assert_int_equal(a->min_ratio_ppm, b->min_ratio_ppm);
}

/* The version of the newest embedded migration: NNN_name.sql. */
static inline int newest_migration(void)
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
static inline long long query_int(const char *path, const char *sql)
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

static inline void exec_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
                     SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

#define DB_TEST(f)                                                             \
    cmocka_unit_test_setup_teardown(f, tmpdb_setup, tmpdb_teardown)

#endif
