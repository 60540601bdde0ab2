/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet's parts every other file of it shares (ag_fleet_impl.h): the
 * state and its events, the wake, and a record's body, seal and opening.
 * It calls no other file of the fleet, so that calls go one way.
 */
#include "ag_fleet_impl.h"
#include "ag_fleet_set.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_clock.h"
#include "ag_log.h"
#include "ag_metrics.h"

const char *ag_fleet__state_name(enum ag_fleet__state s)
{
    static const char *const names[] = {
        [AG_FLEET__STARTING] = "starting",
        [AG_FLEET__FOLLOWING] = "following",
        [AG_FLEET__UNREACHABLE] = "unreachable",
        [AG_FLEET__DIVERGED] = "diverged",
        [AG_FLEET__HELD] = "held",
        [AG_FLEET__OFF] = "off",
    };
    return s <= AG_FLEET__OFF ? names[s] : "unknown";
}

void ag_fleet__set_state(struct ag_fleet *f, enum ag_fleet__state s,
                         const char *fmt, ...)
{
    char why[AG_FLEET__WHY_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (s == f->state && strcmp(why, f->why) == 0)
        return;
    enum ag_log_level level =
        s == AG_FLEET__FOLLOWING ? AG_LOG_INFO : AG_LOG_WARN;
    ag_log(level, "fleet_state", "fleet %s: %s%s%s", f->name,
           ag_fleet__state_name(s), why[0] ? ": " : "", why);
    f->state = s;
    snprintf(f->why, sizeof f->why, "%s", why);
    ag_metrics_set(f->metrics, AG_M_FLEET_HELD, s == AG_FLEET__HELD);
    ag_metrics_set(f->metrics, AG_M_FLEET_DIVERGED, s == AG_FLEET__DIVERGED);
}

void ag_fleet__raise(struct ag_fleet *f, enum ag_event_type type,
                     const char *reason, int64_t record)
{
    struct ag_event e;
    ag_event_init(&e, type);
    e.fleet.version = f->row.version;
    e.fleet.head = f->head.version;
    e.fleet.record = record;
    e.fleet.lag_s = f->behind_since_ms
                        ? (ag_clock_mono_ms() - f->behind_since_ms) / 1000
                        : 0;
    snprintf(e.fleet.reason, sizeof e.fleet.reason, "%s", reason);
    snprintf(e.fleet.instance, sizeof e.fleet.instance, "%s", f->row.instance);
    ag_events_raise(f->events, &e);
}

json_t *ag_fleet__body(const struct ag_fleet *f, const char *actor, json_t *ops)
{
    char at[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339(ag_clock_wall_ms(), at);
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "actor", actor, "instance",
                     f->row.instance, "host", f->host, "at", at, "ops", ops);
}

int ag_fleet__seal(const struct ag_fleet *f, const json_t *body,
                   const char *epoch, int64_t version, const char *prev,
                   struct ag_redis_fleet_record *rec)
{
    char *text = json_dumps(body, JSON_COMPACT);
    if (!text)
        return AG_ENOMEM;
    memset(rec, 0, sizeof *rec);
    unsigned schema = ag_fleet_set_schema(body);
    struct ag_fleet_place place = {f->name, epoch, version, prev, schema};
    char *blob = NULL;
    int rc =
        ag_fleet_seal(&f->key, &place, text, strlen(text), &blob, rec->hash);
    free(text);
    if (rc)
        return rc;
    rec->version = version;
    snprintf(rec->epoch, sizeof rec->epoch, "%s", epoch);
    snprintf(rec->prev, sizeof rec->prev, "%s", prev);
    rec->schema = schema;
    rec->blob = blob;
    rec->blob_len = strlen(blob);
    return AG_OK;
}

void ag_fleet__wake(struct ag_fleet *f)
{
    pthread_mutex_lock(&f->wake_lock);
    f->woken = true;
    pthread_cond_signal(&f->wake);
    pthread_mutex_unlock(&f->wake_lock);
}

int ag_fleet__open(const struct ag_fleet *f,
                   const struct ag_redis_fleet_record *r, bool base,
                   json_t **body, char hash[AG_FLEET_HASH_HEX + 1])
{
    if (r->bad)
        return AG_EINVAL;
    struct ag_fleet_place place = {f->name, r->epoch, r->version,
                                   base ? r->hash : r->prev, r->schema};
    char *text = NULL;
    size_t len = 0;
    int rc =
        ag_fleet_open(&f->key, &place, r->blob, r->blob_len, &text, &len, hash);
    if (rc)
        return rc;
    if (base)
        snprintf(hash, AG_FLEET_HASH_HEX + 1, "%s", r->hash);
    *body = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    sodium_memzero(text, len);
    free(text);
    return *body ? AG_OK : AG_EPENDING;
}
