/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /admin/fleet's body (ag_fleet_status): this instance as it knows
 * itself, the fleet's head as Redis has it now, and every instance's last
 * heartbeat.
 */
#include "ag_fleet_impl.h"

#include <stdlib.h>
#include <string.h>

#include "ag_clock.h"

/* An instance at a lower version than the head is lagging once it has
 * been behind this long, or at once when it cannot catch up. */
#define LAGGING_S 2

static json_t *this_instance(const struct ag_fleet *f, uint64_t lag_s,
                             bool channel)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:b}", "id",
                     f->row.instance, "host", f->host, "binary", f->binary,
                     "version", (json_int_t)f->row.version, "state",
                     ag_fleet__state_name(f->state), "reason", f->why,
                     "lag_seconds", (json_int_t)lag_s, "channel", channel);
}

/* One heartbeat as /admin/fleet lists it; NULL if it is not one. */
static json_t *member(const struct ag_redis_fleet_member *m, uint64_t now_ms,
                      int64_t head, const char *self)
{
    json_t *o = json_loads(m->json, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    int64_t version = json_integer_value(json_object_get(o, "version"));
    int64_t lag = json_integer_value(json_object_get(o, "lag_seconds"));
    const char *state = json_string_value(json_object_get(o, "state"));
    bool stuck = state && (strcmp(state, "held") == 0 ||
                           strcmp(state, "diverged") == 0 ||
                           strcmp(state, "unreachable") == 0);
    uint64_t age = now_ms > m->at_ms ? now_ms - m->at_ms : 0;
    json_int_t poll = json_integer_value(json_object_get(o, "poll_ms"));
    uint64_t gone_ms = poll > 0 && 3 * (uint64_t)poll > AG_FLEET_GONE_MS
                           ? 3 * (uint64_t)poll
                           : AG_FLEET_GONE_MS;
    bool gone = age > gone_ms;
    char at[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339(m->at_ms, at);
    if (json_object_set_new(o, "id", json_string(m->id)) ||
        json_object_set_new(o, "heartbeat", json_string(at)) ||
        json_object_set_new(o, "heartbeat_age_ms",
                            json_integer((json_int_t)age)) ||
        json_object_set_new(o, "gone", json_boolean(gone)) ||
        json_object_set_new(
            o, "lagging",
            json_boolean(version < head &&
                         (stuck || lag >= LAGGING_S || gone))) ||
        json_object_set_new(o, "this",
                            json_boolean(strcmp(m->id, self) == 0))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int by_id(const void *a, const void *b)
{
    const struct ag_redis_fleet_member *x = a, *y = b;
    return strcmp(x->id, y->id);
}

int ag_fleet_status(struct ag_fleet *f, json_t **out, struct ag_error *err)
{
    pthread_mutex_lock(&f->lock);
    uint64_t lag_s = f->behind_since_ms
                         ? (ag_clock_mono_ms() - f->behind_since_ms) / 1000
                         : 0;
    json_t *self = this_instance(f, lag_s, atomic_load(&f->channel_live));
    char id[AG_FLEET_INSTANCE_HEX + 1];
    memcpy(id, f->row.instance, sizeof id);
    pthread_mutex_unlock(&f->lock);
    if (!f->on) {
        *out = self ? json_pack("{s:n, s:o, s:[]}", "fleet", "instance", self,
                                "instances")
                    : NULL;
        return *out ? AG_OK
                    : ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    /* Read now, outside the lock: the store is thread-safe. */
    struct ag_redis_fleet_head head;
    struct ag_redis_fleet_members ms;
    bool reachable = ag_redis_fleet_head(f->redis, f->name, &head) == AG_OK &&
                     ag_redis_fleet_members(f->redis, f->name, &ms) == AG_OK;
    json_t *list = json_array();
    if (reachable) {
        qsort(ms.m, ms.n, sizeof *ms.m, by_id);
        for (size_t i = 0; list && i < ms.n; i++) {
            json_t *m = member(&ms.m[i], ms.now_ms, head.version, id);
            if (m && json_array_append_new(list, m)) {
                json_decref(list);
                list = NULL;
            }
        }
        ag_redis_fleet_members_free(&ms);
    }
    json_t *fleet =
        reachable ? json_pack("{s:s, s:b, s:b, s:I, s:s, s:I}", "name", f->name,
                              "reachable", 1, "exists", head.exists, "version",
                              (json_int_t)head.version, "epoch", head.epoch,
                              "settling_ms", (json_int_t)head.settle_left_ms)
                  : json_pack("{s:s, s:b}", "name", f->name, "reachable", 0);
    if (!self || !list || !fleet) {
        json_decref(self);
        json_decref(list);
        json_decref(fleet);
        *out = NULL;
    } else {
        /* json_pack takes the three over, even when it fails. */
        *out = json_pack("{s:o, s:o, s:o}", "fleet", fleet, "instance", self,
                         "instances", list);
    }
    return *out ? AG_OK : ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
}
