/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_db audit: pages are capped, and the refusal states the cap that
 * enforces it; a row that cannot be shown fails its page.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_test_db.h"

static void audit_page_refuses_a_limit_past_its_cap(void **state)
{
    struct tmpdb *t = *state;
    struct ag_db *db = open_db(t->path, NULL, 0);
    json_t *page = NULL;
    int64_t next = 0;
    struct ag_error err = {0};
    assert_int_equal(
        ag_db_audit_page(db, 0, AG_DB_AUDIT_PAGE_MAX + 1, &page, &next, &err),
        AG_EINVAL);
    assert_string_equal(err.field, "limit");
    char cap[16];
    snprintf(cap, sizeof cap, "%d", AG_DB_AUDIT_PAGE_MAX);
    assert_non_null(strstr(err.msg, cap));
    assert_null(page);
    assert_int_equal(
        ag_db_audit_page(db, 0, AG_DB_AUDIT_PAGE_MAX, &page, &next, &err),
        AG_OK);
    json_decref(page);
    ag_db_close(db);
}

static void audit_row_that_is_not_utf8_fails_its_page(void **state)
{
    struct tmpdb *t = *state;
    struct ag_db *db = open_db(t->path, NULL, 0);
    exec_sql(t->path, "INSERT INTO audit (action, name, actor) VALUES "
                      "('update', CAST(X'C328' AS TEXT), 'sqlite3')");
    json_t *page = NULL;
    int64_t next = 0;
    struct ag_error err = {0};
    assert_int_equal(ag_db_audit_page(db, 0, 10, &page, &next, &err),
                     AG_EINVAL);
    assert_non_null(strstr(err.msg, "audit row 1"));
    assert_non_null(strstr(err.msg, "name"));
    assert_null(page);
    ag_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        DB_TEST(audit_page_refuses_a_limit_past_its_cap),
        DB_TEST(audit_row_that_is_not_utf8_fails_its_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
