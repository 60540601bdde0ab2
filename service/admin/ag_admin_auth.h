/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin API's door: the bearer token check and the throttling of
 * failed attempts per client address, with abuseguard's own limiter.
 *
 * The token is kept only as its BLAKE2b hash, and a presented token is
 * hashed the same way and compared with sodium_memcmp, so the comparison
 * takes the same time wherever the two differ and whatever their lengths.
 * The scheme is "Bearer" in any case, followed by one or more spaces, the
 * token and optional trailing white space (RFC 7235 section 2.1).
 *
 * Each failure is logged ("admin_auth_failed", with the client address,
 * never the token) and recorded in an in-process store of this object's
 * own under a sliding_log policy of AG_ADMIN_AUTH_FAILS failures in
 * AG_ADMIN_AUTH_WINDOW_S seconds. An address that has reached it is
 * throttled until its oldest failure leaves the window: every request
 * from it, with a right token or a wrong one, is refused without looking
 * at the token, so that a guess made while throttled cannot be told from
 * another, and brute force gains nothing by going on. Other addresses are
 * not affected. The store holds AG_ADMIN_AUTH_ADDRS addresses; beyond
 * that the one closest to expiry is forgotten (bounded memory).
 *
 * Thread-safe: one mutex makes the check, the comparison and the record
 * one step, so concurrent guesses cannot pass the limit.
 */
#ifndef AG_ADMIN_AUTH_H
#define AG_ADMIN_AUTH_H

#include <stdint.h>

#include "ag_error.h"
#include "ag_store.h"

#define AG_ADMIN_AUTH_FAILS 10    /* failures from one address ... */
#define AG_ADMIN_AUTH_WINDOW_S 60 /* ... in this many seconds, then 429 */
#define AG_ADMIN_AUTH_ADDRS 4096  /* addresses remembered at most */

struct ag_admin_auth;

enum ag_admin_auth_verdict {
    AG_ADMIN_AUTH_OK,
    AG_ADMIN_AUTH_DENIED,    /* a missing or wrong token: 401 */
    AG_ADMIN_AUTH_THROTTLED, /* too many failures from the address: 429 */
};

/* token is hashed, not kept. clock may be NULL for the real time (tests
 * pass their own, ag_store_mem_new's). Free with ag_admin_auth_free. */
int ag_admin_auth_new(const char *token, ag_clock_fn clock, void *clock_ctx,
                      struct ag_admin_auth **out, struct ag_error *err);
void ag_admin_auth_free(struct ag_admin_auth *a);

/* Judges one request from client (its address as text; NULL or "" share
 * one bucket) carrying the Authorization header value header (NULL when
 * absent). On AG_ADMIN_AUTH_THROTTLED, *retry_after_s says in how many
 * whole seconds (at least 1) the address may try again. */
enum ag_admin_auth_verdict ag_admin_auth_check(struct ag_admin_auth *a,
                                               const char *client,
                                               const char *header,
                                               uint32_t *retry_after_s);

#endif
