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
 */
#ifndef AG_RELOAD_H
#define AG_RELOAD_H

#include <stddef.h>

#include "ag_error.h"
#include "ag_service.h"

struct ag_reload;

/* Opens db_path, loads and publishes the first set before it returns, then
 * starts the watcher. Returns 0, or a negative code with err filled. */
int ag_reload_start(const char *db_path, struct ag_service *svc,
                    unsigned interval_ms, struct ag_reload **out,
                    struct ag_error *err);
/* Asks the watcher to load now rather than at its next tick, and waits (up
 * to 2 s) until it has: after an edit made through this process, so that
 * the edit's response is only sent once this instance applies it.
 * Thread-safe. */
void ag_reload_sync(struct ag_reload *r);

/* Stops and joins the watcher, closes its connection, frees r. */
void ag_reload_stop(struct ag_reload *r);

#endif
