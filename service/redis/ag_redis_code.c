/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_code.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_error.h"

#define COMMON_PIECE "common.lua"
#define CLOCK_PIECE "clock.lua" /* optional: a test's clock */
#define DRIVER_PIECE "check.lua"
#define RELEASE_PIECE "release.lua" /* the library's second driver */
/* Before the driver: in the library, its function; in a script, the
 * locals it reads, nil (lua/check.lua: a check of all of KEYS and ARGV at
 * the clock's time). */
#define LIBRARY_HEAD "local function check(KEYS, ARGV, k0, nk, a0, na, now)\n"
#define SCRIPT_HEAD "local k0, nk, a0, na, now\n"
/* The release driver's function, after the check's in the library. */
#define RELEASE_HEAD "end\nlocal function release(KEYS, ARGV)\n"
/* The longest line compose writes between or around the pieces. */
#define WRAP_MAX 128

static const struct ag_embedded_file *piece(const struct ag_embedded_file *f,
                                            size_t n, const char *name);
static int append_piece(char *s, size_t *at, const struct ag_embedded_file *f,
                        size_t n, const char *name);
static char *compose(const struct ag_embedded_file *files, size_t n,
                     unsigned mask, const char *driver_head, bool library,
                     size_t *len, int *rc);
static int compose_library(struct ag_redis_code *c,
                           const struct ag_embedded_file *files, size_t n);

/* The piece named name, or NULL. */
static const struct ag_embedded_file *piece(const struct ag_embedded_file *f,
                                            size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (f[i].name && strcmp(f[i].name, name) == 0)
            return &f[i];
    return NULL;
}

/* Appends the piece named name and a newline to s at *at. */
static int append_piece(char *s, size_t *at, const struct ag_embedded_file *f,
                        size_t n, const char *name)
{
    const struct ag_embedded_file *p = piece(f, n, name);
    if (!p)
        return AG_ENOTFOUND;
    memcpy(s + *at, p->data, p->len);
    *at += p->len;
    s[(*at)++] = '\n';
    return AG_OK;
}

/* Lua code for the algorithms in mask: common.lua (and clock.lua, if files
 * hold one), the value of block_level_us, each algorithm's file
 * and its registration under its enum value, then driver_head and the
 * driver, which sees the others' locals; for the library (library set),
 * then the end of the check function and release.lua as the body of
 * `local function release(KEYS, ARGV)`, left open as the check's is.
 * NUL-terminated, its length in *len; NULL with *rc set if a piece is
 * missing or memory is out. The caller frees it. */
static char *compose(const struct ag_embedded_file *files, size_t n,
                     unsigned mask, const char *driver_head, bool library,
                     size_t *len, int *rc)
{
    size_t head = strlen(driver_head);
    size_t total = 1 + head + (size_t)(AG_ALG_STORE_COUNT + 2) * WRAP_MAX;
    for (size_t i = 0; i < n; i++)
        total += files[i].len + 1;
    char *s = malloc(total);
    if (!s) {
        *rc = AG_ENOMEM;
        return NULL;
    }
    size_t at = 0;
    *rc = append_piece(s, &at, files, n, COMMON_PIECE);
    if (!*rc && piece(files, n, CLOCK_PIECE))
        *rc = append_piece(s, &at, files, n, CLOCK_PIECE);
    /* The constant common.lua leaves unset, from its one home. */
    if (!*rc)
        at += (size_t)snprintf(s + at, WRAP_MAX, "block_level_us = %llu\n",
                               (unsigned long long)AG_BLOCK_LEVEL_S * 1000000);
    for (int a = 0; !*rc && a < AG_ALG_STORE_COUNT; a++) {
        if (!(mask & (1u << a)))
            continue;
        const char *name = ag_algorithm_name((enum ag_algorithm)a);
        char file[64];
        snprintf(file, sizeof file, "%s.lua", name);
        *rc = append_piece(s, &at, files, n, file);
        /* The code is text: the driver looks specs' codes up without a
         * tonumber. */
        if (!*rc)
            at += (size_t)snprintf(s + at, WRAP_MAX, "algorithms['%d'] = %s\n",
                                   a, name);
    }
    if (!*rc) {
        memcpy(s + at, driver_head, head);
        at += head;
        *rc = append_piece(s, &at, files, n, DRIVER_PIECE);
    }
    if (!*rc && library) {
        memcpy(s + at, RELEASE_HEAD, sizeof RELEASE_HEAD - 1);
        at += sizeof RELEASE_HEAD - 1;
        *rc = append_piece(s, &at, files, n, RELEASE_PIECE);
    }
    if (*rc) {
        free(s);
        return NULL;
    }
    s[at] = '\0';
    *len = at;
    return s;
}

/* The function library: every algorithm, and each driver as the body of
 * the function it registers. Named by a hash of that code. */
static int compose_library(struct ag_redis_code *c,
                           const struct ag_embedded_file *files, size_t n)
{
    size_t len;
    int rc;
    char *code =
        compose(files, n, AG_REDIS_SCRIPTS - 1, LIBRARY_HEAD, true, &len, &rc);
    if (!code)
        return rc;
    unsigned char hash[AG_REDIS_VERSION_HEX / 2];
    char version[AG_REDIS_VERSION_HEX + 1];
    crypto_generichash(hash, sizeof hash, (const unsigned char *)code, len,
                       NULL, 0);
    sodium_bin2hex(version, sizeof version, hash, sizeof hash);
    snprintf(c->function, sizeof c->function, "ag_check_%s", version);
    snprintf(c->release, sizeof c->release, "ag_release_%s", version);
    char *text = malloc(len + 3 * WRAP_MAX);
    if (!text) {
        free(code);
        return AG_ENOMEM;
    }
    int head = snprintf(text, WRAP_MAX, "#!lua name=abuseguard_%s\n", version);
    memcpy(text + head, code, len);
    int tail = snprintf(text + (size_t)head + len, 2 * WRAP_MAX,
                        "end\nredis.register_function('%s', check)\n"
                        "redis.register_function('%s', release)\n",
                        c->function, c->release);
    c->library.text = text;
    c->library.len = (size_t)head + len + (size_t)tail;
    free(code);
    return AG_OK;
}

int ag_redis_code_init(struct ag_redis_code *c,
                       const struct ag_embedded_file *files, size_t n)
{
    memset(c, 0, sizeof *c);
    int rc = compose_library(c, files, n);
    /* Mask 0, no algorithm: a check that only reads a history. */
    for (unsigned m = 0; !rc && m < AG_REDIS_SCRIPTS; m++) {
        struct ag_redis_text *t = &c->scripts[m];
        t->text = compose(files, n, m, SCRIPT_HEAD, false, &t->len, &rc);
    }
    if (rc)
        ag_redis_code_free(c);
    return rc;
}

void ag_redis_code_free(struct ag_redis_code *c)
{
    for (unsigned m = 0; m < AG_REDIS_SCRIPTS; m++)
        free(c->scripts[m].text);
    free(c->library.text);
    memset(c, 0, sizeof *c);
}
