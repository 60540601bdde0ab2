/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin part's routes, which it hands to the HTTP router
 * (ag_http_route.h; main.c puts them in struct ag_http_options): the
 * admin console's page under /admin/ui (ag_console_page, no token) and
 * every other /admin/ path to the admin API (ag_admin_handle, which
 * checks the token first, then answers 404 for a path it does not know).
 * With the admin API off, one route answers every /admin/ path 404, so
 * that the public routes never reach it and the message says why. All of
 * them are marked admin: with --admin-listen they are served there only.
 *
 * The routes borrow the admin (their ctx), which must outlive the server.
 */
#ifndef AG_ADMIN_ROUTES_H
#define AG_ADMIN_ROUTES_H

#include <stddef.h>

#include "ag_http_route.h"

struct ag_admin;

#define AG_ADMIN_ROUTES 2 /* routes ag_admin_routes gives at most */

/* Fills out with a's routes (a NULL: the admin API is off) and returns
 * how many. */
size_t ag_admin_routes(struct ag_admin *a,
                       struct ag_http_route out[AG_ADMIN_ROUTES]);

#endif
