/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hot reload: keeps a service's policy set in step with the database. A
 * watcher thread, on its own SQLite connection, asks for PRAGMA data_version
 * every interval (a cheap question that reads no table) and, when another
 * connection has committed — an admin edit on any instance, or the CLI —
 * loads the policies and lists in one read transaction and publishes them
 * as a new set. Checks never touch SQLite.
 *
 * If a load fails (an unreadable or corrupt file), the last good set stays
 * in force and the failure is logged; the next change tries again.
 *
 * ag_reload_sync says whether this instance has applied a change, so that
 * whoever made it can say so honestly: applied (AG_OK), not yet
 * (AG_EPENDING: the wait ran out), or not at all (AG_EIO: the load failed
 * and the last good set stays in force).
 */
#ifndef AG_RELOAD_H
#define AG_RELOAD_H

#include <stddef.h>

#include "ag_error.h"
#include "ag_policy.h"

/* How long an edit made through this process waits for the watcher to
 * apply it before it reports that it has not (yet). */
#define AG_RELOAD_SYNC_TIMEOUT_MS 2000

struct ag_reload;

struct ag_metrics;

/* Where a loaded ruleset goes (ag_service_set_ruleset in the service): it
 * takes over the set's reference. Called on the watcher's thread, and on
 * the caller's for the first set. */
typedef void (*ag_reload_publish_fn)(void *ctx, struct ag_ruleset *set);

/* How often the watcher prunes the audit log (and once at its first
 * tick). */
#define AG_RELOAD_PRUNE_INTERVAL_S 3600

/* Opens db_path, loads and publishes the first set before it returns, then
 * starts the watcher. metrics (reloads, failures, staleness) may be NULL;
 * it and publish_ctx are borrowed. The watcher also deletes audit rows
 * older than audit_retention_days (ag_db_audit_prune; 0: never). Returns
 * 0, or a negative code with err filled. */
int ag_reload_start(const char *db_path, ag_reload_publish_fn publish,
                    void *publish_ctx, struct ag_metrics *metrics,
                    unsigned interval_ms, unsigned sync_timeout_ms,
                    unsigned audit_retention_days, struct ag_reload **out,
                    struct ag_error *err);
/* Asks the watcher to load now rather than at its next tick, and waits (up
 * to sync_timeout_ms) until it has: after an edit made through this
 * process, so that the edit's response can say whether this instance
 * applies it. Returns AG_OK once a load begun after the call has been
 * published; AG_EPENDING if the wait ran out first (the watcher will still
 * load, later); AG_EIO if that load failed. Thread-safe. */
int ag_reload_sync(struct ag_reload *r);

/* Asks the watcher to load now rather than at its next tick, and returns
 * at once: after a change this process wrote that nobody waits for (a
 * fleet record). NULL does nothing. Thread-safe. */
void ag_reload_kick(struct ag_reload *r);

/* Stops and joins the watcher, closes its connection, frees r. */
void ag_reload_stop(struct ag_reload *r);

#endif
