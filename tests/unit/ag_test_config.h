/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the configuration's unit tests (test_config.c,
 * test_config_files.c): a clean environment, ag_config_parse on a list of
 * arguments, the last refusal kept whole, and temp files. Include after
 * <cmocka.h>.
 */
#ifndef AG_TEST_CONFIG_H
#define AG_TEST_CONFIG_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ag_config.h"
#include "ag_error.h"

extern char **environ;

#define ERRSZ 512

/* Removes every ABUSEGUARD_* variable so that each test starts from the
 * defaults whatever the environment of the test runner holds. */
static inline int clear_env(void **state)
{
    (void)state;
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e; e++) {
            if (strncmp(*e, "ABUSEGUARD_", 11) == 0) {
                size_t n = strcspn(*e, "=");
                if (n >= sizeof name)
                    n = sizeof name - 1;
                memcpy(name, *e, n);
                name[n] = '\0';
                break;
            }
        }
        if (!name[0])
            return 0;
        if (unsetenv(name) != 0)
            return -1;
    }
}

/* The library's refusals as these tests read them: the message copied
 * into the test's buffer, the whole error kept in `last`. */
static struct ag_error last;

static inline int keep(int rc, char *err)
{
    snprintf(err, ERRSZ, "%s", rc ? last.msg : "");
    return rc;
}

static inline int cfg_parse(struct ag_config *c, int argc, char **argv,
                            char *err)
{
    memset(&last, 0, sizeof last);
    return keep(ag_config_parse(c, argc, argv, &last), err);
}

/* Runs ag_config_parse on "abuseguard" followed by the NULL-terminated
 * arguments. */
static inline int parse(struct ag_config *c, char *err, ...)
{
    char *argv[32] = {(char *)"abuseguard"};
    int argc = 1;
    va_list ap;
    va_start(ap, err);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL) {
        assert_true(argc < 31);
        argv[argc++] = (char *)a;
    }
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return cfg_parse(c, argc, argv, err);
}

/* A test's temp file, made in /tmp with mkstemp and removed after it. */
struct tmp {
    char path[64];
};

static inline int tmp_setup(void **state)
{
    struct tmp *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    *state = t;
    return clear_env(NULL);
}

static inline int tmp_teardown(void **state)
{
    struct tmp *t = *state;
    if (t->path[0])
        unlink(t->path);
    free(t);
    return 0;
}

/* Creates a temp file holding len bytes of data with the given mode. */
static const char *tmp_file(void **state, const void *data, size_t len,
                            mode_t mode)
{
    struct tmp *t = *state;
    snprintf(t->path, sizeof t->path, "/tmp/ag-unit-XXXXXX");
    int fd = mkstemp(t->path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    assert_int_equal(close(fd), 0);
    return t->path;
}

#define ENV_TEST(f) cmocka_unit_test_setup_teardown(f, clear_env, clear_env)
#define FILE_TEST(f) cmocka_unit_test_setup_teardown(f, tmp_setup, tmp_teardown)

#endif
