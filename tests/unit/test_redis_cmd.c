/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_cmd: every command it writes is byte for byte what hiredis's own
 * formatter (redisFormatCommandArgv) makes of the same arguments, including
 * empty, binary and large ones; a command past the buffer's cap is refused,
 * and an argument past it fails the whole command: nothing after it is
 * written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_redis_cmd.h"

/* Writes argv with ag_redis_cmd and compares with hiredis's formatting. */
static void assert_same_as_hiredis(int argc, const char **argv,
                                   const size_t *lens)
{
    struct ag_buf b;
    ag_buf_init(&b, 1 << 20);
    ag_redis_cmd_command(&b, (size_t)argc);
    for (int i = 0; i < argc; i++)
        ag_redis_cmd_arg(&b, argv[i], lens[i]);
    assert_int_equal(ag_buf_error(&b), AG_OK);
    char *want;
    long long n = redisFormatCommandArgv(&want, argc, argv, lens);
    assert_true(n > 0);
    assert_int_equal(b.len, (size_t)n);
    assert_memory_equal(b.p, want, (size_t)n);
    redisFreeCommand(want);
    ag_buf_free(&b);
}

static void matches_hiredis_on_plain_words(void **state)
{
    (void)state;
    const char *argv[] = {"EVALSHA", "0123456789abcdef0123456789abcdef01234567",
                          "1", "ag:login.user:00ff", "check"};
    size_t lens[5];
    for (int i = 0; i < 5; i++)
        lens[i] = strlen(argv[i]);
    assert_same_as_hiredis(5, argv, lens);
}

static void matches_hiredis_on_empty_binary_and_large(void **state)
{
    (void)state;
    static char big[70000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 7);
    const char *argv[] = {"", "a\0b\r\nc", big};
    size_t lens[] = {0, 6, sizeof big};
    assert_same_as_hiredis(3, argv, lens);
}

static void numbers_match_their_decimal_text(void **state)
{
    (void)state;
    const uint64_t values[] = {0,   7,      10,          99,
                               100, 900000, 4294967295u, UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char text[32];
        snprintf(text, sizeof text, "%llu", (unsigned long long)values[i]);
        struct ag_buf mine, theirs;
        ag_buf_init(&mine, 256);
        ag_buf_init(&theirs, 256);
        ag_redis_cmd_uint(&mine, values[i]);
        ag_redis_cmd_str(&theirs, text);
        assert_int_equal(ag_buf_error(&mine), AG_OK);
        assert_int_equal(ag_buf_error(&theirs), AG_OK);
        assert_string_equal(mine.p, theirs.p);
        ag_buf_reset(&mine);
        assert_int_equal(ag_buf_uint(&mine, values[i]), AG_OK);
        assert_string_equal(mine.p, text);
        ag_buf_free(&mine);
        ag_buf_free(&theirs);
    }
}

static void a_command_past_the_cap_is_refused(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 32);
    ag_redis_cmd_command(&b, 2);
    ag_redis_cmd_str(&b, "GET");
    assert_int_equal(ag_buf_error(&b), AG_OK);
    char key[40];
    memset(key, 'k', sizeof key);
    ag_redis_cmd_arg(&b, key, sizeof key);
    assert_int_equal(ag_buf_error(&b), AG_ETOOBIG);
    ag_buf_free(&b);
}

static void arguments_after_a_refused_one_are_not_written(void **state)
{
    (void)state;
    struct ag_buf b;
    ag_buf_init(&b, 32);
    ag_redis_cmd_command(&b, 3);
    ag_redis_cmd_str(&b, "GET");
    size_t len = b.len;
    char key[40];
    memset(key, 'k', sizeof key);
    ag_redis_cmd_arg(&b, key, sizeof key);
    /* Each of these fits the room left, but the command lost an argument:
     * writing them would make a shorter command that Redis would run. */
    ag_redis_cmd_str(&b, "k");
    ag_redis_cmd_uint(&b, 1);
    assert_int_equal(b.len, len);
    assert_int_equal(ag_buf_error(&b), AG_ETOOBIG);
    ag_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_hiredis_on_plain_words),
        cmocka_unit_test(matches_hiredis_on_empty_binary_and_large),
        cmocka_unit_test(numbers_match_their_decimal_text),
        cmocka_unit_test(a_command_past_the_cap_is_refused),
        cmocka_unit_test(arguments_after_a_refused_one_are_not_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
