/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_db lists: the cap on entries holds across connections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_test_db.h"

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
    struct ag_db *a = open_db(t->path, NULL, 0);
    struct ag_db *b = open_db(t->path, NULL, 0);
    fill_lists(t->path, AG_LISTS_MAX - 1);
    struct ag_error err = {0};
    int64_t id = 0;
    struct ag_list_entry e = deny_ip("192.0.2.1");
    assert_int_equal(ag_db_list_add(a, &e, "test", &id, &err), AG_OK);
    e = deny_ip("192.0.2.2");
    assert_int_equal(ag_db_list_add(b, &e, "test", &id, &err), AG_ETOOBIG);
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM lists"),
                     AG_LISTS_MAX);
    ag_db_close(a);
    ag_db_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        DB_TEST(list_cap_holds_across_two_connections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
