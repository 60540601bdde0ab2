/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_reload.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_lists.h"
#include "ag_log.h"
#include "ag_metrics.h"

#include "ag_db.h"

struct ag_reload {
    ag_reload_publish_fn publish;
    void *publish_ctx;
    struct ag_metrics *metrics;
    struct ag_db *db;
    unsigned interval_ms;
    unsigned sync_timeout_ms;
    pthread_t thread;
    pthread_mutex_t lock; /* guards the fields up to stopping */
    pthread_cond_t wake;  /* the watcher waits on it */
    pthread_cond_t done;  /* ag_reload_sync waits on it */
    uint64_t asked;       /* syncs asked for */
    uint64_t served;      /* syncs the watcher has loaded for */
    uint64_t served_ok;   /* the last sync a successful load served */
    bool stopping;
    int64_t data_version;      /* watcher thread only */
    uint64_t loads;            /* watcher thread only (and start) */
    bool failing;              /* the last load failed; watcher thread only */
    bool missing;              /* the path names no file; watcher thread only */
    unsigned retention_days;   /* audit rows older are pruned; 0: never */
    time_t next_prune;         /* CLOCK_MONOTONIC seconds; watcher only */
    struct ag_db_invalid *bad; /* the last load's invalid rows, logged */
    size_t nbad;               /* watcher thread only (and start) */
    size_t nlists_bad;         /* invalid list rows, watcher thread only */
};

/* Logs each invalid row the previous load did not have (by name and
 * error), so that a row is logged once however many loads see it. */
static void log_invalid(const struct ag_reload *r,
                        const struct ag_db_invalid *bad, size_t nbad)
{
    for (size_t i = 0; i < nbad; i++) {
        bool known = false;
        for (size_t k = 0; !known && k < r->nbad; k++)
            known = strcmp(r->bad[k].name, bad[i].name) == 0 &&
                    strcmp(r->bad[k].error, bad[i].error) == 0;
        if (!known)
            ag_log(AG_LOG_ERROR, "policy_invalid", "row '%s': %s; %s",
                   bad[i].name, bad[i].error,
                   bad[i].kept ? "its last valid version stays in force"
                               : "it has no valid version and is left out");
    }
}

/* What one load reads: the policies (leniently) and the lists. */
struct rows {
    struct ag_policy *ps;
    size_t n;
    struct ag_db_invalid *bad;
    size_t nbad;
    struct ag_list_entry *lists;
    size_t nl, nl_bad;
};

/* Run by ag_db_read: both from one read transaction, so that they belong
 * together. A loader that fails leaves its arrays NULL. */
static int read_rows(struct ag_db *db, void *arg, struct ag_error *err)
{
    struct rows *w = arg;
    int rc =
        ag_db_policies_load_lenient(db, &w->ps, &w->n, &w->bad, &w->nbad, err);
    return rc ? rc : ag_db_lists_load(db, &w->lists, &w->nl, &w->nl_bad, err);
}

/* Loads policies and lists and publishes them. */
static int load(struct ag_reload *r, struct ag_error *err)
{
    struct rows w = {0};
    int rc = ag_db_read(r->db, read_rows, &w, err);
    if (rc) {
        free(w.ps);
        free(w.bad);
        free(w.lists);
        return rc;
    }
    struct ag_policy *ps = w.ps;
    struct ag_list_entry *lists = w.lists;
    struct ag_db_invalid *bad = w.bad;
    size_t n = w.n, nl = w.nl, nbad = w.nbad, nl_bad = w.nl_bad;
    struct ag_ruleset *set = ag_ruleset_new(ps, n, ++r->loads);
    free(ps);
    if (!set) {
        free(bad);
        free(lists);
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    log_invalid(r, bad, nbad);
    free(r->bad);
    r->bad = bad;
    r->nbad = nbad;
    ag_metrics_set(r->metrics, AG_M_POLICIES_INVALID, (int64_t)nbad);
    if (nl_bad != r->nlists_bad)
        ag_log(nl_bad ? AG_LOG_ERROR : AG_LOG_INFO, "list_entries_invalid",
               "%zu allow/deny list rows fail validation and are left out "
               "(GET /admin/lists/allow shows the count; delete or fix them)",
               nl_bad);
    r->nlists_bad = nl_bad;
    ag_metrics_set(r->metrics, AG_M_LIST_ENTRIES_INVALID, (int64_t)nl_bad);
    ag_ruleset_adopt_lists(set, lists, nl);
    r->publish(r->publish_ctx, set);
    ag_metrics_count(r->metrics, AG_M_RELOADS);
    return AG_OK;
}

/* Loads if the database changed (or a sync asked); false if a load was
 * needed and failed, or the file is missing. */
static bool tick(struct ag_reload *r, bool poked)
{
    struct ag_error err;
    int rc = ag_db_file_check(r->db, &err);
    if (rc == AG_ENOTFOUND) {
        if (!r->missing)
            ag_log(AG_LOG_ERROR, "policy_db_missing",
                   "%s; keeping the last loaded policies", err.msg);
        r->missing = true;
        r->failing = true;
        ag_metrics_set(r->metrics, AG_M_POLICIES_STALE, 1);
        return false;
    }
    r->missing = false;
    bool needed = poked || r->failing;
    /* A replaced file is another database. And after a failed load the
     * connection may hold what it read of a corrupt file (a file restored
     * in place does not change data_version), so it is not trusted to
     * load the restored one: a new connection either way. */
    if (rc == AG_ECONFLICT || r->failing) {
        rc = ag_db_reopen(r->db, &err);
        needed = true;
    }
    int64_t v = r->data_version;
    if (!rc && ag_db_data_version(r->db, &v))
        rc = ag_error_set(&err, AG_EIO, NULL,
                          "policy database: data_version failed");
    if (!rc && v == r->data_version && !needed)
        return true;
    if (!rc)
        rc = load(r, &err);
    if (rc) {
        if (!r->failing)
            ag_log(AG_LOG_ERROR, "policy_reload_failed",
                   "%s; keeping the last loaded policies", err.msg);
        r->failing = true;
        ag_metrics_count(r->metrics, AG_M_RELOAD_FAILURES);
        ag_metrics_set(r->metrics, AG_M_POLICIES_STALE, 1);
        return false;
    }
    if (r->failing)
        ag_log(AG_LOG_INFO, "policy_reload_recovered", "database readable");
    r->failing = false;
    ag_metrics_set(r->metrics, AG_M_POLICIES_STALE, 0);

    r->data_version = v;
    ag_log(AG_LOG_INFO, "policies_reloaded", "policy set %llu",
           (unsigned long long)r->loads);
    return true;
}

/* Prunes the audit log when it is time to. A failure is logged and tried
 * again at the next interval: the log grows, nothing else is at stake. */
static void prune(struct ag_reload *r)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!r->retention_days || now.tv_sec < r->next_prune)
        return;
    r->next_prune = now.tv_sec + AG_RELOAD_PRUNE_INTERVAL_S;
    struct ag_error err;
    int64_t deleted = 0;
    if (ag_db_audit_prune(r->db, r->retention_days, &deleted, &err))
        ag_log(AG_LOG_WARN, "audit_prune_failed", "%s", err.msg);
    else if (deleted > 0)
        ag_log(AG_LOG_INFO, "audit_pruned",
               "%lld audit rows older than %u days deleted", (long long)deleted,
               r->retention_days);
}

static void *watch(void *arg)
{
    struct ag_reload *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        struct timespec until = ag_clock_deadline(r->interval_ms);
        while (r->asked == r->served && !r->stopping &&
               pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
            ;
        if (r->stopping)
            break;
        uint64_t asked = r->asked;
        bool poked = asked != r->served;
        pthread_mutex_unlock(&r->lock);
        bool ok = tick(r, poked);
        if (ok)
            prune(r);
        pthread_mutex_lock(&r->lock);
        r->served = asked;
        if (ok)
            r->served_ok = asked;
        pthread_cond_broadcast(&r->done);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int ag_reload_start(const char *db_path, ag_reload_publish_fn publish,
                    void *publish_ctx, struct ag_metrics *metrics,
                    unsigned interval_ms, unsigned sync_timeout_ms,
                    unsigned audit_retention_days, struct ag_reload **out,
                    struct ag_error *err)
{
    struct ag_reload *r = calloc(1, sizeof *r);
    if (!r)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    r->publish = publish;
    r->publish_ctx = publish_ctx;
    r->metrics = metrics;
    r->interval_ms = interval_ms;
    r->sync_timeout_ms = sync_timeout_ms;
    r->retention_days = audit_retention_days;
    int rc = ag_db_open(db_path, NULL, 0, &r->db, err);
    if (!rc && ag_db_data_version(r->db, &r->data_version))
        rc = ag_error_set(err, AG_EIO, NULL,
                          "policy database: data_version failed");
    if (!rc)
        rc = load(r, err);
    if (rc) {
        ag_db_close(r->db);
        free(r->bad);
        free(r);
        return rc;
    }
    pthread_mutex_init(&r->lock, NULL);
    ag_clock_cond_init(&r->wake);
    ag_clock_cond_init(&r->done);
    if (pthread_create(&r->thread, NULL, watch, r)) {

        pthread_cond_destroy(&r->wake);
        pthread_cond_destroy(&r->done);
        pthread_mutex_destroy(&r->lock);
        ag_db_close(r->db);
        free(r->bad);
        free(r);
        return ag_error_set(err, AG_ENOMEM, NULL,
                            "cannot start the policy watcher thread");
    }
    *out = r;
    return AG_OK;
}

void ag_reload_kick(struct ag_reload *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    ++r->asked;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

int ag_reload_sync(struct ag_reload *r)
{
    struct timespec until = ag_clock_deadline(r->sync_timeout_ms);
    pthread_mutex_lock(&r->lock);
    uint64_t ticket = ++r->asked;
    pthread_cond_signal(&r->wake);
    while (r->served < ticket && !r->stopping &&
           pthread_cond_timedwait(&r->done, &r->lock, &until) != ETIMEDOUT)
        ;
    /* Judged by what was served, not by how the wait ended: a load that
     * finished just as the time ran out still counts. */
    /* And by a load that served this very sync (or a later one), not by
     * whichever load ran last: another sync's failed load after ours
     * succeeded does not make ours fail. */
    int rc = r->served < ticket       ? AG_EPENDING
             : r->served_ok >= ticket ? AG_OK
                                      : AG_EIO;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void ag_reload_stop(struct ag_reload *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_cond_broadcast(&r->done);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->done);

    pthread_mutex_destroy(&r->lock);
    ag_db_close(r->db);
    free(r->bad);
    free(r);
}
