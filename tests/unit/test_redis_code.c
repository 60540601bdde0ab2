/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_code: the library holds every algorithm, each registered under
 * its enum ag_algorithm value by the composer (the lua/ files register
 * none themselves), each script exactly its set's algorithms, and the
 * library's version follows its code: the same pieces give the same
 * name, a changed piece another. A missing piece is refused. Pieces of
 * no store algorithm (surge.lua, a script of its own) are left out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_policy.h"
#include "ag_redis_code.h"

/* "algorithms['<a>'] = <name>" for algorithm a, in line. */
static void registration(enum ag_algorithm a, char *line, size_t size)
{
    snprintf(line, size, "algorithms['%d'] = %s\n", (int)a,
             ag_algorithm_name(a));
}

static const struct ag_embedded_file *lua_file(const char *name)
{
    for (size_t i = 0; i < ag_embedded_lua_count; i++)
        if (strcmp(ag_embedded_lua[i].name, name) == 0)
            return &ag_embedded_lua[i];
    fail_msg("no embedded %s", name);
    return NULL;
}

/* Whether the check code is composed of the piece named name: common.lua,
 * the drivers and the store's algorithms (AG_ALG_STORE_COUNT of them), but
 * no algorithm after them (surge.lua: lua/surge.lua runs alone). */
static bool composed(const char *name)
{
    if (strcmp(name, "common.lua") == 0 || strcmp(name, "check.lua") == 0 ||
        strcmp(name, "release.lua") == 0)
        return true;
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++) {
        char file[64];
        snprintf(file, sizeof file, "%s.lua",
                 ag_algorithm_name((enum ag_algorithm)a));
        if (strcmp(name, file) == 0)
            return true;
    }
    return false;
}

static void every_algorithm_is_in_the_library_under_its_enum(void **state)
{
    (void)state;
    struct ag_redis_code c;
    assert_int_equal(
        ag_redis_code_init(&c, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    for (int a = 0; a < AG_ALG_STORE_COUNT; a++) {
        char line[128], file[64];
        registration((enum ag_algorithm)a, line, sizeof line);
        snprintf(file, sizeof file, "%s.lua",
                 ag_algorithm_name((enum ag_algorithm)a));
        const char *at = strstr(c.library.text, lua_file(file)->data);
        assert_non_null(at);
        /* The registration follows the algorithm's own code. */
        assert_ptr_equal(strstr(at, line), at + lua_file(file)->len + 1);
    }
    assert_int_equal(strlen(c.library.text), c.library.len);
    ag_redis_code_free(&c);
}

static void lua_files_register_no_algorithm_themselves(void **state)
{
    (void)state;
    for (size_t i = 0; i < ag_embedded_lua_count; i++)
        assert_null(strstr(ag_embedded_lua[i].data, "algorithms['"));
}

static void each_script_holds_exactly_its_algorithms(void **state)
{
    (void)state;
    struct ag_redis_code c;
    assert_int_equal(
        ag_redis_code_init(&c, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    /* Mask 0 too: a check with no policy that only reads a history
     * (issue 40). */
    for (unsigned m = 0; m < AG_REDIS_SCRIPTS; m++) {
        const char *text = c.scripts[m].text;
        assert_non_null(text);
        assert_int_equal(strlen(text), c.scripts[m].len);
        /* A script is run, not loaded as a library: no function. */
        assert_null(strstr(text, "register_function('"));
        assert_non_null(strstr(text, lua_file("common.lua")->data));
        assert_non_null(strstr(text, lua_file("check.lua")->data));
        for (int a = 0; a < AG_ALG_STORE_COUNT; a++) {
            char line[128];
            registration((enum ag_algorithm)a, line, sizeof line);
            assert_int_equal(strstr(text, line) != NULL, (m >> a) & 1);
        }
    }
    ag_redis_code_free(&c);
}

static void library_is_named_after_its_version(void **state)
{
    (void)state;
    struct ag_redis_code c;
    assert_int_equal(
        ag_redis_code_init(&c, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    const char *version = c.function + strlen("ag_check_");
    assert_int_equal(strlen(version), AG_REDIS_VERSION_HEX);
    char head[64], tail[192], release[64];
    snprintf(head, sizeof head, "#!lua name=abuseguard_%s\n", version);
    snprintf(release, sizeof release, "ag_release_%s", version);
    assert_string_equal(c.release, release);
    snprintf(tail, sizeof tail,
             "end\nredis.register_function('%s', check)\n"
             "redis.register_function('%s', release)\n",
             c.function, c.release);
    assert_memory_equal(c.library.text, head, strlen(head));
    assert_string_equal(c.library.text + c.library.len - strlen(tail), tail);
    ag_redis_code_free(&c);
}

static void release_is_a_function_of_the_library_and_of_no_script(void **state)
{
    (void)state;
    struct ag_redis_code c;
    assert_int_equal(
        ag_redis_code_init(&c, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    const char *body = lua_file("release.lua")->data;
    const char *head = "end\nlocal function release(KEYS, ARGV)\n";
    const char *check = strstr(c.library.text, lua_file("check.lua")->data);
    const char *at = strstr(c.library.text, body);
    assert_non_null(check);
    assert_non_null(at);
    /* The release's body follows the check's, each in its own function. */
    assert_true(at > check);
    assert_memory_equal(at - strlen(head), head, strlen(head));
    for (unsigned m = 1; m < AG_REDIS_SCRIPTS; m++)
        assert_null(strstr(c.scripts[m].text, body));
    ag_redis_code_free(&c);
}

/* The driver's slice (lua/check.lua): parameters of the library's check
 * function, which Redis never passes (a check is then all of KEYS and
 * ARGV), and in a script the same names as locals, nil. */
static void the_driver_reads_its_slice_as_parameters_or_nil_locals(void **state)
{
    (void)state;
    struct ag_redis_code c;
    assert_int_equal(
        ag_redis_code_init(&c, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    const char *driver = lua_file("check.lua")->data;
    const char *fn = "local function check(KEYS, ARGV, k0, nk, a0, na, now)\n";
    const char *locals = "local k0, nk, a0, na, now\n";
    const char *at = strstr(c.library.text, driver);
    assert_non_null(at);
    assert_memory_equal(at - strlen(fn), fn, strlen(fn));
    for (unsigned m = 1; m < AG_REDIS_SCRIPTS; m++) {
        at = strstr(c.scripts[m].text, driver);
        assert_non_null(at);
        assert_memory_equal(at - strlen(locals), locals, strlen(locals));
    }
    ag_redis_code_free(&c);
}

static void same_pieces_give_the_same_version(void **state)
{
    (void)state;
    struct ag_redis_code a, b;
    assert_int_equal(
        ag_redis_code_init(&a, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    assert_int_equal(
        ag_redis_code_init(&b, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    assert_string_equal(a.function, b.function);
    assert_string_equal(a.library.text, b.library.text);
    ag_redis_code_free(&a);
    ag_redis_code_free(&b);
}

static void version_differs_when_any_piece_differs(void **state)
{
    (void)state;
    struct ag_redis_code base;
    assert_int_equal(
        ag_redis_code_init(&base, ag_embedded_lua, ag_embedded_lua_count),
        AG_OK);
    /* Change each piece in turn by one trailing comment. */
    for (size_t i = 0; i < ag_embedded_lua_count; i++) {
        struct ag_embedded_file files[32];
        assert_true(ag_embedded_lua_count <= 32);
        memcpy(files, ag_embedded_lua, ag_embedded_lua_count * sizeof *files);
        size_t len = files[i].len + sizeof "-- changed\n" - 1;
        char *text = malloc(len + 1);
        assert_non_null(text);
        memcpy(text, files[i].data, files[i].len);
        memcpy(text + files[i].len, "-- changed\n", sizeof "-- changed\n");
        files[i].data = text;
        files[i].len = len;
        struct ag_redis_code changed;
        assert_int_equal(
            ag_redis_code_init(&changed, files, ag_embedded_lua_count), AG_OK);
        /* A piece the code is not composed of leaves it as it was. */
        if (composed(files[i].name))
            assert_string_not_equal(changed.function, base.function);
        else
            assert_string_equal(changed.function, base.function);
        ag_redis_code_free(&changed);
        free(text);
    }
    ag_redis_code_free(&base);
}

static void a_missing_piece_is_refused(void **state)
{
    (void)state;
    for (size_t skip = 0; skip < ag_embedded_lua_count; skip++) {
        struct ag_embedded_file files[32];
        size_t n = 0;
        for (size_t i = 0; i < ag_embedded_lua_count; i++)
            if (i != skip)
                files[n++] = ag_embedded_lua[i];
        struct ag_redis_code c;
        if (!composed(ag_embedded_lua[skip].name)) {
            assert_int_equal(ag_redis_code_init(&c, files, n), AG_OK);
            ag_redis_code_free(&c);
            continue;
        }
        assert_int_equal(ag_redis_code_init(&c, files, n), AG_ENOTFOUND);
        assert_null(c.library.text);
        ag_redis_code_free(&c);
    }
}

/* surge.lua is embedded with the others, and neither the library nor any
 * script holds it: a shield's state is no check's. */
static void surge_is_in_no_check_code(void **state)
{
    (void)state;
    const char *surge = lua_file("surge.lua")->data;
    assert_false(composed("surge.lua"));
    struct ag_redis_code c;
    assert_int_equal(
        ag_redis_code_init(&c, ag_embedded_lua, ag_embedded_lua_count), AG_OK);
    assert_null(strstr(c.library.text, surge));
    for (unsigned m = 1; m < AG_REDIS_SCRIPTS; m++)
        assert_null(strstr(c.scripts[m].text, surge));
    ag_redis_code_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_algorithm_is_in_the_library_under_its_enum),
        cmocka_unit_test(lua_files_register_no_algorithm_themselves),
        cmocka_unit_test(each_script_holds_exactly_its_algorithms),
        cmocka_unit_test(library_is_named_after_its_version),
        cmocka_unit_test(release_is_a_function_of_the_library_and_of_no_script),
        cmocka_unit_test(
            the_driver_reads_its_slice_as_parameters_or_nil_locals),
        cmocka_unit_test(same_pieces_give_the_same_version),
        cmocka_unit_test(version_differs_when_any_piece_differs),
        cmocka_unit_test(a_missing_piece_is_refused),
        cmocka_unit_test(surge_is_in_no_check_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
