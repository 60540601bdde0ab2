/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_db lists: the cap on entries holds across connections; entries of
 * every kind are stored, read back and exported as fleet rows; migration
 * 012 keeps the table's rows, ids and triggers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_db_fleet.h"
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

static struct ag_list_entry parsed(enum ag_list list, const char *json)
{
    struct ag_list_entry e;
    struct ag_error err = {0};
    json_t *o = json_loads(json, 0, NULL);
    assert_non_null(o);
    /* No user or phone here: no hasher is needed. */
    if (ag_list_entry_from_json(o, list, NULL, &e, &err))
        fail_msg("%s: %s", json, err.msg);
    json_decref(o);
    return e;
}

/* Issue 39: asn and ip_country entries pass the table's CHECK (migration
 * 012), load back as they were added, and travel as fleet rows. */
static void network_entries_are_stored_and_exported(void **state)
{
    struct tmpdb *t = *state;
    struct ag_db *db = open_db(t->path, NULL, 0);
    struct ag_list_entry in[] = {
        parsed(AG_LIST_ALLOW, "{\"kind\":\"asn\",\"value\":\"AS64501\"}"),
        parsed(AG_LIST_DENY, "{\"kind\":\"ip_country\",\"value\":\"fr\","
                             "\"endpoint\":\"otp\",\"note\":\"n\"}"),
    };
    struct ag_error err = {0};
    int64_t id = 0;
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(ag_db_list_add(db, &in[i], "test", &id, &err), AG_OK);
    /* The canonical value is the one UNIQUE sees: another spelling of the
     * same number is the same entry. */
    struct ag_list_entry again =
        parsed(AG_LIST_ALLOW, "{\"kind\":\"asn\",\"value\":\"64501\"}");
    assert_int_equal(ag_db_list_add(db, &again, "test", &id, &err),
                     AG_ECONFLICT);
    struct ag_list_entry *out = NULL;
    size_t n = 0, ninvalid = 0;
    assert_int_equal(ag_db_lists_load(db, &out, &n, &ninvalid, &err), AG_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ninvalid, 0);
    for (size_t i = 0; i < n; i++) {
        const struct ag_list_entry *want =
            &in[out[i].kind == AG_LK_ASN ? 0 : 1];
        assert_int_equal(out[i].list, want->list);
        assert_string_equal(out[i].value, want->value);
        assert_int_equal(out[i].endpoint, want->endpoint);
        json_t *row = ag_db_fleet_entry_row(&out[i]);
        assert_non_null(row);
        struct ag_list_entry back;
        assert_int_equal(ag_db_fleet_entry_parse(row, &back, &err), AG_OK);
        assert_int_equal(back.id, out[i].id);
        assert_int_equal(back.kind, out[i].kind);
        assert_string_equal(back.value, out[i].value);
        json_decref(row);
    }
    assert_string_equal(out[0].kind == AG_LK_ASN ? out[0].value : out[1].value,
                        "64501");
    free(out);
    ag_db_close(db);
}

/* 012 copies the table: run again over a table with rows (its
 * schema_version row taken out), it keeps every row, id and version, the
 * next id after a deleted one, and the fleet's triggers, and it changes
 * nothing the triggers watch for. */
static void migration_12_keeps_rows_ids_and_triggers(void **state)
{
    struct tmpdb *t = *state;
    struct ag_db *db = open_db(t->path, NULL, 0);
    ag_db_close(db);
    exec_sql(t->path,
             "INSERT INTO lists (list, kind, value, version) VALUES "
             "('deny', 'ip', '192.0.2.1', 3), ('allow', 'asn', '174', 4), "
             "('deny', 'ip', '192.0.2.9', 5);"
             "DELETE FROM lists WHERE value = '192.0.2.9';"
             "UPDATE fleet SET pristine = 1, touched = 0;"
             "DELETE FROM schema_version WHERE version = 12;");
    db = open_db(t->path, NULL, 0);
    ag_db_close(db);
    assert_int_equal(query_int(t->path, "SELECT count(*) FROM lists"), 2);
    assert_int_equal(query_int(t->path, "SELECT version FROM lists "
                                        "WHERE id = 2 AND value = '174'"),
                     4);
    assert_int_equal(query_int(t->path, "SELECT seq FROM sqlite_sequence "
                                        "WHERE name = 'lists'"),
                     3);
    assert_int_equal(
        query_int(t->path, "SELECT pristine * 10 + touched FROM fleet"), 10);
    assert_int_equal(query_int(t->path,
                               "SELECT count(*) FROM sqlite_master WHERE "
                               "type = 'trigger' AND tbl_name = 'lists'"),
                     3);
    exec_sql(t->path, "INSERT INTO lists (list, kind, value) VALUES "
                      "('deny', 'ip_country', 'FR')");
    assert_int_equal(
        query_int(t->path, "SELECT id FROM lists WHERE kind = 'ip_country'"),
        4);
    assert_int_equal(
        query_int(t->path, "SELECT pristine * 10 + touched FROM fleet"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        DB_TEST(list_cap_holds_across_two_connections),
        DB_TEST(network_entries_are_stored_and_exported),
        DB_TEST(migration_12_keeps_rows_ids_and_triggers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
