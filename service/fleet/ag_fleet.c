/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet's life (ag_fleet.h): start and stop, and the thread that
 * steps on every wake and poll and writes the heartbeat.
 */
#include "ag_fleet_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "ag_clock.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_direct.h"
#include "ag_reload.h"

/* How far behind the head, for the metric and the lag event. */
static void track_lag(struct ag_fleet *f)
{
    bool behind = f->head.exists && f->head.version > f->row.version;
    uint64_t now = ag_clock_mono_ms();
    if (!behind) {
        f->behind_since_ms = 0;
        f->lag_raised = false;
        ag_metrics_set(f->metrics, AG_M_FLEET_LAG_SECONDS, 0);
        return;
    }
    if (!f->behind_since_ms)
        f->behind_since_ms = now;
    uint64_t lag_s = (now - f->behind_since_ms) / 1000;
    ag_metrics_set(f->metrics, AG_M_FLEET_LAG_SECONDS, (int64_t)lag_s);
    if (lag_s >= f->lag_event_s && !f->lag_raised) {
        f->lag_raised = true;
        ag_log(AG_LOG_WARN, "fleet_lagging",
               "fleet %s: this instance has been behind for %llu s (at "
               "version %lld, the fleet at %lld): %s",
               f->name, (unsigned long long)lag_s, (long long)f->row.version,
               (long long)f->head.version, f->why[0] ? f->why : "catching up");
        ag_fleet__raise(f, AG_EV_FLEET_LAGGING,
                        f->why[0] ? f->why : "catching up", 0);
    }
}

/* This instance's heartbeat: what /admin/fleet shows of it. */
static void beat(struct ag_fleet *f)
{
    json_t *files = f->files ? f->files(f->files_ctx) : json_array();
    uint64_t lag_s = f->behind_since_ms
                         ? (ag_clock_mono_ms() - f->behind_since_ms) / 1000
                         : 0;
    json_t *o = json_pack(
        "{s:s, s:s, s:I, s:s, s:s, s:I, s:b, s:I, s:o, s:i}", "host", f->host,
        "binary", f->binary, "version", (json_int_t)f->row.version, "state",
        ag_fleet__state_name(f->state), "reason", f->why, "lag_seconds",
        (json_int_t)lag_s, "channel", atomic_load(&f->channel_live), "poll_ms",
        (json_int_t)f->poll_ms, "files", files ? files : json_array(), "schema",
        AG_FLEET_SCHEMA);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    uint64_t now;
    if (text && f->row.instance[0])
        ag_redis_fleet_beat(f->redis, f->name, f->row.instance, text,
                            AG_FLEET_FORGET_MS, &now);
    free(text);
}

/* Waits for a wake or the poll; returns whether stopping. */
static bool wait_wake(struct ag_fleet *f)
{
    struct timespec until = ag_clock_deadline(f->poll_ms);
    pthread_mutex_lock(&f->wake_lock);
    while (!f->woken && !f->stopping &&
           pthread_cond_timedwait(&f->wake, &f->wake_lock, &until) == 0)
        ;
    f->woken = false;
    bool stop = f->stopping;
    pthread_mutex_unlock(&f->wake_lock);
    return stop;
}

static void *run(void *arg)
{
    struct ag_fleet *f = arg;
    uint64_t last_beat = 0;
    int64_t beaten = -1; /* the version the last heartbeat said */
    do {
        pthread_mutex_lock(&f->lock);
        ag_fleet__step(f);
        track_lag(f);
        /* A heartbeat a poll apart at most, whatever wakes the thread,
         * and at once when the version moved: /admin/fleet shows each
         * instance's as it is. */
        uint64_t now = ag_clock_mono_ms();
        if (f->state != AG_FLEET__UNREACHABLE &&
            (now - last_beat >= f->poll_ms / 2 || f->row.version != beaten)) {
            beat(f);
            last_beat = now;
            beaten = f->row.version;
        }
        pthread_mutex_unlock(&f->lock);
    } while (!wait_wake(f));
    return NULL;
}

void ag_fleet_wake(struct ag_fleet *f)
{
    if (f)
        ag_fleet__wake(f);
}

void ag_fleet_channel(struct ag_fleet *f, bool live)
{
    if (!f)
        return;
    atomic_store(&f->channel_live, live);
    /* What was published while unsubscribed was not heard. */
    if (live)
        ag_fleet_wake(f);
}

const char *ag_fleet_channel_name(const struct ag_fleet *f)
{
    return f->channel;
}

int ag_fleet_start(const struct ag_fleet_opts *o, struct ag_fleet **out,
                   struct ag_error *err)
{
    *out = NULL;
    if (o->on && (!ag_fleet_name_valid(o->name) || !o->redis))
        return ag_error_set(err, AG_EINVAL, "fleet-name",
                            "fleet-name must be 1 to %d of A-Z a-z 0-9 _ . -",
                            AG_FLEET_NAME_MAX);
    struct ag_fleet *f = calloc(1, sizeof *f);
    if (!f)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    f->on = o->on;
    snprintf(f->name, sizeof f->name, "%s", o->on ? o->name : "");
    snprintf(f->channel, sizeof f->channel, AG_REDIS_FLEET_CHANNEL "%s",
             f->name);
    if (gethostname(f->host, sizeof f->host - 1) != 0)
        snprintf(f->host, sizeof f->host, "unknown");
    snprintf(f->binary, sizeof f->binary, "%s", o->binary ? o->binary : "");
    if (o->on)
        ag_fleet_key_derive(&f->key, o->secret, o->secret_len, f->name);
    f->events = o->events;
    f->metrics = o->metrics;
    f->files = o->files;
    f->files_ctx = o->files_ctx;
    f->lag_event_s = o->lag_event_s ? o->lag_event_s : 60;
    f->poll_ms = o->poll_ms ? o->poll_ms : AG_FLEET_POLL_MS;
    f->state = o->on ? AG_FLEET__STARTING : AG_FLEET__OFF;
    pthread_mutex_init(&f->lock, NULL);
    pthread_mutex_init(&f->wake_lock, NULL);
    ag_clock_cond_init(&f->wake);
    int rc = o->on ? ag_redis_direct_new(o->redis, o->redis_timeout_ms,
                                         &f->redis, err)
                   : AG_OK;
    if (!rc)
        rc = ag_db_open(o->db_path, NULL, 0, &f->db, err);
    if (!rc)
        rc = ag_db_fleet_get(f->db, &f->row, err);
    if (rc) {
        ag_fleet_stop(f);
        return rc;
    }
    if (f->on && !o->passive) {
        pthread_mutex_lock(&f->lock);
        ag_fleet__step(f);
        pthread_mutex_unlock(&f->lock);
    }
    *out = f;
    return AG_OK;
}

int ag_fleet_run(struct ag_fleet *f, struct ag_reload *reload,
                 struct ag_error *err)
{
    if (!f->on || f->started)
        return AG_OK;
    f->reload = reload;
    if (pthread_create(&f->thread, NULL, run, f) != 0)
        return ag_error_set(err, AG_ENOMEM, NULL,
                            "cannot start the fleet's thread");
    f->started = true;
    return AG_OK;
}

void ag_fleet_stop(struct ag_fleet *f)
{
    if (!f)
        return;
    if (f->started) {
        pthread_mutex_lock(&f->wake_lock);
        f->stopping = true;
        pthread_cond_signal(&f->wake);
        pthread_mutex_unlock(&f->wake_lock);
        pthread_join(f->thread, NULL);
    }
    ag_db_close(f->db);
    ag_redis_direct_free(f->redis);
    pthread_cond_destroy(&f->wake);
    pthread_mutex_destroy(&f->wake_lock);
    pthread_mutex_destroy(&f->lock);
    sodium_memzero(&f->key, sizeof f->key);
    free(f);
}
