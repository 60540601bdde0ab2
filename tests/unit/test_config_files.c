/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_config_files.c: the secret file (missing, short, long, readable by
 * others, one byte repeated, a FIFO), the admin token file (trimmed, its
 * bounds, a NUL, text after a newline, and judged like the secret file:
 * private, not one byte repeated) and the Redis password file, which wins
 * over the URL's and must be private.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ag_config.h"
#include "ag_error.h"
#include "ag_test_config.h"

static int read_secret(const char *path, unsigned char *key, size_t *len,
                       char *err)
{
    memset(&last, 0, sizeof last);
    return keep(ag_config_read_secret(path, key, len, &last), err);
}

static int read_token(const char *path, char *token, char *err)
{
    memset(&last, 0, sizeof last);
    return keep(ag_config_read_token(path, token, &last), err);
}

static void fill_pattern(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 37 + 11);
}

/* Token text that is no one byte repeated: a to z, over and over. */
static void fill_text(char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)('a' + i % 26);
}

static void secret_file_missing_is_refused(void **state)
{
    (void)state;
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    const char *path = "/tmp/ag-unit-no-such-dir/secret.key";
    assert_int_equal(read_secret(path, key, &len, err), AG_EIO);
    assert_non_null(strstr(err, path));
}

static void secret_shorter_than_32_bytes_is_refused(void **state)
{
    unsigned char data[31];
    fill_pattern(data, sizeof data);
    const char *path = tmp_file(state, data, sizeof data, 0600);
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    assert_int_equal(read_secret(path, key, &len, err), AG_EINVAL);
    assert_non_null(strstr(err, "31 bytes"));
}

static void secret_readable_by_others_is_refused(void **state)
{
    unsigned char data[32];
    fill_pattern(data, sizeof data);
    const char *path = tmp_file(state, data, sizeof data, 0644);
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    assert_int_equal(read_secret(path, key, &len, err), AG_EINVAL);
    assert_non_null(strstr(err, "644"));
    assert_non_null(strstr(err, "chmod 600"));
}

static void secret_readable_by_group_is_refused(void **state)
{
    unsigned char data[32];
    fill_pattern(data, sizeof data);
    const char *path = tmp_file(state, data, sizeof data, 0640);
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    assert_int_equal(read_secret(path, key, &len, err), AG_EINVAL);
    assert_non_null(strstr(err, "640"));
}

static void private_secret_of_32_bytes_is_accepted(void **state)
{
    unsigned char data[32];
    fill_pattern(data, sizeof data);
    const char *path = tmp_file(state, data, sizeof data, 0600);
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    assert_int_equal(read_secret(path, key, &len, err), AG_OK);
    assert_int_equal(len, 32);
    assert_memory_equal(key, data, 32);
}

static void secret_of_the_cap_is_read_and_longer_refused(void **state)
{
    unsigned char data[AG_SECRET_MAX + 1];
    fill_pattern(data, sizeof data);
    const char *path = tmp_file(state, data, AG_SECRET_MAX, 0400);
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    assert_int_equal(read_secret(path, key, &len, err), AG_OK);
    assert_int_equal(len, AG_SECRET_MAX);
    assert_memory_equal(key, data, AG_SECRET_MAX);
    /* Cutting a longer one short would let two secrets that differ past
     * the cap hash alike. */
    unlink(path);
    path = tmp_file(state, data, sizeof data, 0400);

    assert_int_equal(read_secret(path, key, &len, err), AG_EINVAL);
    assert_non_null(strstr(err, "longer"));
}

static void token_trailing_whitespace_is_trimmed(void **state)
{
    const char text[] = "tok-1234567890 abc \t\r\n\n";
    const char *path = tmp_file(state, text, sizeof text - 1, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_OK);
    assert_string_equal(token, "tok-1234567890 abc");
}

static void
redis_password_file_wins_over_the_url_and_must_be_private(void **state)
{
    const char text[] = "from-the-file\n";
    const char *path = tmp_file(state, text, sizeof text - 1, 0600);
    struct ag_config c;
    char err[ERRSZ] = "";
    /* A user alone needs the file. */
    assert_int_equal(parse(&c, err, "--redis", "redis://ag@r:1", (char *)NULL),
                     AG_EINVAL);
    assert_non_null(strstr(err, "needs a password"));
    assert_int_equal(parse(&c, err, "--redis", "redis://ag@r:1",
                           "--redis-password-file", path, (char *)NULL),
                     AG_OK);
    assert_int_equal(parse(&c, err, "--redis", "redis://ag:from-url@r:1",
                           "--redis-password-file", path, (char *)NULL),
                     AG_OK);
    struct ag_error e;
    assert_int_equal(ag_config_read_redis_password(&c, &e), AG_OK);
    assert_string_equal(c.redis.password, "from-the-file");
    assert_string_equal(c.redis.user, "ag");
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(ag_config_read_redis_password(&c, &e), AG_EINVAL);
    assert_non_null(strstr(e.msg, "--redis-password-file"));
    assert_null(strstr(e.msg, "from-the-file"));
}

static void empty_token_file_is_refused(void **state)
{
    const char *path = tmp_file(state, "", 0, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_EINVAL);
    assert_non_null(strstr(err, "--admin-token-file"));
}

static void whitespace_only_token_file_is_refused(void **state)
{
    const char *path = tmp_file(state, " \n\t\n", 4, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_EINVAL);
    assert_non_null(strstr(err, "--admin-token-file"));
}

static void token_of_max_length_is_accepted(void **state)
{
    char text[AG_TOKEN_MAX + 1];
    fill_text(text, AG_TOKEN_MAX);
    text[AG_TOKEN_MAX] = '\n';
    const char *path = tmp_file(state, text, sizeof text, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_OK);
    assert_int_equal(strlen(token), AG_TOKEN_MAX);
    assert_memory_equal(token, text, AG_TOKEN_MAX);
}

static void token_longer_than_max_is_refused(void **state)
{
    char text[AG_TOKEN_MAX + 1];
    fill_text(text, sizeof text);
    const char *path = tmp_file(state, text, sizeof text, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_EINVAL);
}

static void token_with_more_text_after_a_newline_is_refused(void **state)
{
    /* The cap applies to the whole file, not to what fits in a buffer. */
    char text[AG_TOKEN_MAX + 6];
    fill_text(text, AG_TOKEN_MAX);
    memcpy(text + AG_TOKEN_MAX, "\nmore", 5);
    const char *path = tmp_file(state, text, AG_TOKEN_MAX + 5, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_EINVAL);
}

static void token_with_nul_byte_is_refused(void **state)
{
    const char text[] = "abcdefghij\0klmnopqrst";
    const char *path = tmp_file(state, text, sizeof text - 1, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_EINVAL);
}

static void token_shorter_than_16_bytes_is_refused(void **state)
{
    char text[AG_TOKEN_MIN + 1];
    fill_text(text, sizeof text);
    const char *path = tmp_file(state, text, AG_TOKEN_MIN - 1, 0600);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_EINVAL);
    assert_non_null(strstr(err, "--admin-token-file"));
    assert_non_null(strstr(err, "16 to"));
    unlink(path);
    path = tmp_file(state, text, AG_TOKEN_MIN, 0600);
    assert_int_equal(read_token(path, token, err), AG_OK);
}

static void token_readable_by_group_or_others_is_refused(void **state)
{
    /* The token opens every admin route: the file is judged as the
     * secret file is. */
    const char text[] = "tok-1234567890abcdef\n";
    static const mode_t modes[] = {0644, 0640, 0604, 0620};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const char *path = tmp_file(state, text, sizeof text - 1, modes[i]);
        char token[AG_TOKEN_MAX + 1];
        char err[ERRSZ] = "";
        assert_int_equal(read_token(path, token, err), AG_EINVAL);
        assert_non_null(strstr(err, "--admin-token-file"));
        assert_non_null(strstr(err, "group or others"));
        assert_non_null(strstr(err, "chmod 600"));
        assert_string_equal(last.field, "admin-token-file");
        unlink(path);
    }
    const char *path = tmp_file(state, text, sizeof text - 1, 0400);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    assert_int_equal(read_token(path, token, err), AG_OK);
    assert_string_equal(token, "tok-1234567890abcdef");
}

static void token_of_one_repeated_byte_is_refused(void **state)
{
    char text[AG_TOKEN_MAX];
    memset(text, 'a', sizeof text);
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    /* Sixteen "a", with a newline (trimmed), and a longer run. */
    static const size_t lens[] = {AG_TOKEN_MIN, AG_TOKEN_MIN + 1, AG_TOKEN_MAX};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        if (i == 1)
            text[AG_TOKEN_MIN] = '\n';
        else
            text[AG_TOKEN_MIN] = 'a';
        const char *path = tmp_file(state, text, lens[i], 0600);
        assert_int_equal(read_token(path, token, err), AG_EINVAL);
        assert_non_null(strstr(err, "--admin-token-file"));
        assert_non_null(strstr(err, "repeated"));
        /* Neither the byte nor the run is shown: they are the token. */
        assert_null(strstr(err, "aaaa"));
        assert_null(strstr(err, "0x61"));
        unlink(path);
    }
    /* One differing byte passes this check, as for the secret file. */
    text[AG_TOKEN_MIN - 1] = 'b';
    const char *path = tmp_file(state, text, AG_TOKEN_MIN, 0600);
    assert_int_equal(read_token(path, token, err), AG_OK);
}

static void secret_of_one_repeated_byte_is_refused(void **state)
{
    unsigned char data[64];
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    memset(data, 0, sizeof data);
    const char *path = tmp_file(state, data, sizeof data, 0600);
    assert_int_equal(read_secret(path, key, &len, err), AG_EINVAL);
    assert_non_null(strstr(err, "--secret-file"));
    assert_non_null(strstr(err, "repeated"));
    unlink(path);
    memset(data, 0xa5, sizeof data);
    path = tmp_file(state, data, sizeof data, 0600);
    assert_int_equal(read_secret(path, key, &len, err), AG_EINVAL);
    /* One differing byte is enough to pass this check; it only catches
     * files that were never filled with anything. */
    unlink(path);
    data[63] = 0;
    path = tmp_file(state, data, sizeof data, 0600);
    assert_int_equal(read_secret(path, key, &len, err), AG_OK);
}

static void secret_fifo_is_refused_without_waiting_for_a_writer(void **state)
{
    (void)state;
    char path[] = "/tmp/ag-unit-fifo-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    unsigned char key[AG_SECRET_MAX];
    size_t len = 0;
    char err[ERRSZ] = "";
    int rc = read_secret(path, key, &len, err);
    unlink(path);
    assert_int_equal(rc, AG_EINVAL);
    assert_non_null(strstr(err, "--secret-file"));
    assert_non_null(strstr(err, "not a regular file"));
}

static void token_file_missing_is_refused(void **state)
{
    (void)state;
    char token[AG_TOKEN_MAX + 1];
    char err[ERRSZ] = "";
    const char *path = "/tmp/ag-unit-no-such-dir/token";
    assert_int_equal(read_token(path, token, err), AG_EIO);
    assert_non_null(strstr(err, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FILE_TEST(secret_file_missing_is_refused),
        FILE_TEST(secret_shorter_than_32_bytes_is_refused),
        FILE_TEST(secret_readable_by_others_is_refused),
        FILE_TEST(secret_readable_by_group_is_refused),
        FILE_TEST(private_secret_of_32_bytes_is_accepted),
        FILE_TEST(secret_of_the_cap_is_read_and_longer_refused),
        FILE_TEST(token_trailing_whitespace_is_trimmed),
        FILE_TEST(empty_token_file_is_refused),
        FILE_TEST(redis_password_file_wins_over_the_url_and_must_be_private),
        FILE_TEST(whitespace_only_token_file_is_refused),
        FILE_TEST(token_of_max_length_is_accepted),
        FILE_TEST(token_longer_than_max_is_refused),
        FILE_TEST(token_with_nul_byte_is_refused),
        FILE_TEST(token_with_more_text_after_a_newline_is_refused),
        FILE_TEST(token_file_missing_is_refused),
        FILE_TEST(token_shorter_than_16_bytes_is_refused),
        FILE_TEST(token_readable_by_group_or_others_is_refused),
        FILE_TEST(token_of_one_repeated_byte_is_refused),
        FILE_TEST(secret_of_one_repeated_byte_is_refused),
        FILE_TEST(secret_fifo_is_refused_without_waiting_for_a_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
