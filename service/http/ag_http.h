/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP layer: libmicrohttpd glue. Routes requests, enforces the body
 * cap (64 KiB, a 413 past it) and the connection limits from the config,
 * and turns ag_http_response values into wire responses. It holds no business
 * logic: a check goes to ag_service_check_begin and _finish.
 *
 * Routes: POST /check-login, /check-otp, /check-otp-verify, /report-login;
 * GET /healthz, /readyz; /admin/... (ag_admin). Unknown paths are 404, a
 * known path with another method 405 with Allow.

 *
 * libmicrohttpd runs its own thread pool (epoll, one thread per core by
 * default); the handler runs on those threads.
 */
#ifndef AG_HTTP_H
#define AG_HTTP_H

#include <stddef.h>

#include "ag_config.h"
#include "ag_service.h"

struct ag_http;

struct ag_admin;

struct ag_metrics;

/* Raises the process's soft open-files limit (RLIMIT_NOFILE), never
 * lowering it, to what --max-conns connections need with a margin for
 * the rest of the process. Returns 0; AG_EINVAL with a message naming
 * --max-conns when the hard limit is lower than that; AG_EIO when the
 * limit cannot be read or set. Call it before any thread starts. */
int ag_http_reserve_fds(const struct ag_config *cfg, struct ag_error *err);
/* Starts serving on the config's listen address; svc and metrics (for
 * /metrics) are borrowed; admin may be NULL (the /admin/ routes then
 * answer 404). Returns 0 and the server in *out, or a negative code with
 * a message in err. */
int ag_http_start(const struct ag_config *cfg, struct ag_service *svc,
                  struct ag_metrics *metrics, struct ag_admin *admin,
                  struct ag_http **out, struct ag_error *err);
/* Stops taking new requests: each gets a 503 with Retry-After and
 * Connection: close. In-flight requests go on. */
void ag_http_quiesce(struct ag_http *h);
/* Waits for in-flight requests and closes every connection. */
void ag_http_stop(struct ag_http *h);
/* Frees h (NULL: nothing), once no thread of the process can be in
 * recv(2): the interposed recv (ag_http_recv) reads h's connection table
 * on every thread, the Redis dispatchers', the subscriber's and libcurl's
 * included, so they must have stopped first. */
void ag_http_free(struct ag_http *h);

#endif
