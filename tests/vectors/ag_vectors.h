/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared algorithm vectors (tests/vectors/algorithms.json) and the one
 * runner both stores are held to: the in-process store in a cmocka test on
 * a fake clock, the Redis store on the test clock (ag_store_redis_test_new).
 * A vector is a set of policies and a sequence of steps; each step sets the
 * time, runs one plan through the store and compares every result with
 * the one worked out by hand from the algorithms' definitions. The file's
 * "about" field describes the format.
 *
 * Test code: not thread-safe, aborts on a malformed file.
 */
#ifndef AG_VECTORS_H
#define AG_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_store.h"

/* Sets the time of the store under test, microseconds since the epoch. */
typedef void (*ag_vectors_time_fn)(void *ctx, uint64_t t_us);

/* The vectors file, parsed; the caller frees it with json_decref. */
json_t *ag_vectors_load(void);

/* Runs vector v (an element of the file's "vectors") through s, its keys
 * prefixed with prefix so that vectors sharing a store share no key.
 * Returns 0, or -1 and the first mismatch (vector, step, policy, both
 * answers) in why. */
int ag_vectors_run(const json_t *v, struct ag_store *s, const char *prefix,
                   ag_vectors_time_fn set_time, void *ctx, char *why,
                   size_t why_len);

/* Sets one result's text: "allowed remaining retry_ms reset_ms". */
void ag_vectors_result_text(const struct ag_limit_result *r, char *out,
                            size_t len);

#endif
