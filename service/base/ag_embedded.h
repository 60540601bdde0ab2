/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files compiled into the binary by service/base/embed.cmake: the Redis scripts
 * (lua/), the schema migrations (migrations/), the default policies
 * (policies/) and the OpenAPI description of the HTTP API (api/), served
 * at GET /openapi.json. Each table is sorted by file name and ends with a
 * zeroed entry. The data is static and read-only; safe from any thread.
 * The admin console's files (console/) have a table of their own, with
 * entity tags.
 */
#ifndef AG_EMBEDDED_H
#define AG_EMBEDDED_H

#include <stddef.h>

struct ag_embedded_file {
    const char *name; /* base name, e.g. "001_policies.sql" */
    const char *data; /* NUL-terminated contents */
    size_t len;       /* bytes, without the NUL */
};

extern const struct ag_embedded_file ag_embedded_lua[];
extern const size_t ag_embedded_lua_count;
extern const struct ag_embedded_file ag_embedded_migrations[];
extern const size_t ag_embedded_migrations_count;
extern const struct ag_embedded_file ag_embedded_policies[];
extern const size_t ag_embedded_policies_count;
extern const struct ag_embedded_file ag_embedded_api[];
extern const size_t ag_embedded_api_count;

/* A console file, with the entity tag its content hashes to. */
struct ag_embedded_asset {
    const char *name; /* base name, e.g. "app.js" */
    const char *data; /* NUL-terminated contents */
    size_t len;       /* bytes, without the NUL */
    const char *etag; /* quoted, e.g. "\"5f1c...\"" (128 bits of SHA-256) */
};

extern const struct ag_embedded_asset ag_embedded_console[];
extern const size_t ag_embedded_console_count;

#endif
