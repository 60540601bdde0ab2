/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Lua code the Redis store runs, composed from the lua/ files: a
 * function library holding every algorithm (Redis 7 and later, FUNCTION
 * LOAD then FCALL), and one script per set of algorithms (EVALSHA, where
 * FUNCTION is refused), so a check of three sliding logs does not pay for
 * the algorithms it does not use.
 *
 * Each text is common.lua, then the assignment of common.lua's
 * block_level_us (AG_BLOCK_LEVEL_S, in microseconds), then for each
 * algorithm it holds
 * <ag_algorithm_name>.lua followed by that table's registration in
 * `algorithms` under its enum ag_algorithm value (the code a policy's spec
 * carries), then check.lua, the driver. The registrations are written here
 * from the C enum, so the Lua numbering cannot drift from it. A script
 * has `local k0, nk, a0, na, now` before the driver; the library wraps it
 * as the body of `local function check(KEYS, ARGV, k0, nk, a0, na, now)`
 * (a slice of a batch, which Redis never passes: see lua/check.lua), then
 * release.lua (the undo of a cluster check's reserve) as the body of
 * `local function release(KEYS, ARGV)`, and registers both; its name and
 * its functions' carry a hash of its code, so instances of two versions
 * share a Redis without replacing each other's code. No script holds
 * release.lua: a reserve and its release need the library (cluster mode
 * requires Redis 7 functions), and the Redis store refuses to send either
 * as a script.
 *
 * Pure: no I/O, no Redis. A composed ag_redis_code is read-only and may
 * be read from any thread.
 */
#ifndef AG_REDIS_CODE_H
#define AG_REDIS_CODE_H

#include <stddef.h>

#include "ag_embedded.h"
#include "ag_policy.h"

/* Scripts by algorithm bit mask (bit a for enum ag_algorithm a); mask 0 is
 * unused. */
#define AG_REDIS_SCRIPTS (1u << AG_ALG_STORE_COUNT)
#define AG_REDIS_VERSION_HEX 16 /* the library's version: hash hex digits */

struct ag_redis_text {
    char *text; /* NUL-terminated; owned by the ag_redis_code */
    size_t len; /* bytes, without the NUL */
};

struct ag_redis_code {
    struct ag_redis_text scripts[AG_REDIS_SCRIPTS];
    /* "#!lua name=abuseguard_<version>\n" ... register_function */
    struct ag_redis_text library;
    /* The library's check function, for FCALL: "ag_check_<version>". */
    char function[sizeof "ag_check_" + AG_REDIS_VERSION_HEX];
    /* Its release function (release.lua): "ag_release_<version>". */
    char release[sizeof "ag_release_" + AG_REDIS_VERSION_HEX];
};

/* Composes c from files (n of them, e.g. ag_embedded_lua): the pieces
 * named common.lua, <algorithm>.lua for every algorithm, check.lua and
 * release.lua;
 * others are ignored. This is the one place the texts are put together:
 * a variant passes other pieces. A piece named clock.lua, which lua/ does
 * not have, goes right after common.lua: a test's, replacing the clock
 * (common.lua's `clock`, Redis TIME) with a time the test sets. Returns AG_OK,
 * AG_ENOTFOUND if a piece is missing or AG_ENOMEM; c is zeroed on failure. Free
 * with ag_redis_code_free. */
int ag_redis_code_init(struct ag_redis_code *c,
                       const struct ag_embedded_file *files, size_t n);
/* Frees c's texts; c may be zeroed or composed. */
void ag_redis_code_free(struct ag_redis_code *c);

#endif
