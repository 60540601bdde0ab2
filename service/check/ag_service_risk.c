/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The user's usual places (issue 40), the service's side: a login check
 * has its user's history read by the store in the check's own call
 * (ag_plan_history), is judged against it (ag_history) once the store
 * answers, and carries its risk in the answer; a successful login teaches
 * the history by the rule ag_history_teach keeps, and raises
 * new_country_login or impossible_travel.
 *
 * The history's key is the user's keyed digest (that of the policies
 * keyed on the user, hash-tagged alike on Cluster, so that a check's
 * slot group of those policies reads it with no call more), under
 * AG_HISTORY_KEY_PREFIX; it expires --history-days after the last
 * success that taught it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "ag_clock.h"
#include "ag_events.h"
#include "ag_history.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_redis_reply.h"
#include "ag_service.h"
#include "ag_service_impl.h"
#include "ag_store.h"

_Static_assert(AG_SIGNAL_COUNT == AG_METRICS_RISK_SIGNALS,
               "the metrics name every risk signal");

#define BIT(s) (1u << (s))
/* What a risky-scoped shield challenges. */
#define RISKY                                                                  \
    (BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_NEW_ASN) |                     \
     BIT(AG_SIGNAL_NO_HISTORY) | BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL) |            \
     BIT(AG_SIGNAL_IP_LISTED) | BIT(AG_SIGNAL_PASSWORD_BREACHED))

/* Does req's login have a history to read or teach: a login with a user
 * and an address, history kept, and a network file to say where? */
static bool wanted(const struct ag_service *s, const struct ag_request *req)
{
    const struct ag_net_avail *a = req->net.avail;
    return req->endpoint == AG_EP_LOGIN && s->o.history_days > 0 &&
           (req->have & 1u << AG_KEY_USER) && req->net.looked && a &&
           (a->country || a->asn);
}

static void history_key(const struct ag_service *s, struct ag_digests *d,
                        char *out)
{
    snprintf(out, AG_STORE_KEY_MAX,
             s->o.tagged_keys ? AG_HISTORY_KEY_PREFIX "{%s}"
                              : AG_HISTORY_KEY_PREFIX "%s",
             ag_digests_get(d, AG_KEY_USER));
}

/* What req's login brings to a history. */
static void login_place(const struct ag_service *s,
                        const struct ag_request *req, struct ag_login_place *at)
{
    const struct ag_request_net *n = &req->net;
    *at = (struct ag_login_place){
        .asn = n->asn_n,
        .placed = n->placed,
        .place = n->place,
        .anonymising = (n->lists & s->o.anonymising_lists) != 0,
    };
    memcpy(at->country, n->country, sizeof at->country);
}

/* The risk signals known before any history: an anonymising address, a
 * breached password. */
static unsigned early_signals(const struct ag_service *s,
                              const struct ag_request *req)
{
    unsigned sig = req->signals & BIT(AG_SIGNAL_PASSWORD_BREACHED);
    if (req->net.lists & s->o.anonymising_lists)
        sig |= BIT(AG_SIGNAL_IP_LISTED);
    return sig;
}

int ag_service__risk_plan(struct ag_service *s, struct ag_check *c,
                          const struct ag_request *req, struct ag_digests *d,
                          struct ag_verdict *v)
{
    c->nlate = 0;
    c->risky = NULL;
    c->challenge_passed = req->challenge_passed;
    c->risk = (struct ag_verdict_risk){.travel = AG_HTRAVEL_NO_HISTORY};
    c->early_risk = early_signals(s, req);
    c->hist.read = false;
    if (!wanted(s, req))
        return AG_OK; /* no history kept: no risk in the answer */
    c->risk.wanted = true;
    login_place(s, req, &c->at);
    history_key(s, d, c->hist.key);
    c->plan.history = &c->hist;
    int rc = ag_limiter_plan_history_signals(c->set, &c->plan, d, c->late,
                                             &c->nlate);
    if (!rc && (c->nsignals + c->nlate > AG_SIGNALS_MAX ||
                c->plan.n + c->nsignals + c->nlate > AG_PLAN_OPS))
        rc = AG_ETOOBIG;
    if (rc) {
        ag_log(AG_LOG_ERROR, "plan",
               "more than %d signal policies, or %d policies in all, apply "
               "to one login",
               AG_SIGNALS_MAX, AG_PLAN_OPS);
        v->kind = AG_VERDICT_UNAVAILABLE;
        v->why = "too many policies apply";
    }
    return rc;
}

void ag_service__risk_judge(struct ag_service *s, struct ag_check *c,
                            bool asked)
{
    struct ag_verdict_risk *r = &c->risk;
    if (!r->wanted)
        return;
    r->signals = c->early_risk;
    r->judged = c->plan.history && c->hist.read;
    if (r->judged) {
        struct ag_history h;
        if (ag_history_parse(c->hist.text, c->hist.len, &h))
            ag_log(AG_LOG_WARN, "history_unreadable",
                   "a user's history in Redis is no history of this "
                   "version: judged as none");
        struct ag_travel fig;
        struct ag_travel_opts o = {.speed_kmh = s->o.travel_speed_kmh};
        r->signals |= ag_history_judge(&h, &c->at, c->hist.now_us / 1000,
                                       s->o.history_days, &o, &r->travel, &fig);
        size_t n = ag_limiter_keep_tripped(c->late, c->nlate, r->signals);
        memcpy(c->signals + c->nsignals, c->late, n * sizeof *c->late);
        c->nsignals += n;
    }
    c->nlate = 0;
    c->plan.risk = r->signals;
    r->level = ag_risk_level(r->signals);
    ag_metrics_risk(s->o.metrics, r->signals, (unsigned)r->level,
                    r->judged || !asked);
}

bool ag_service__risky(const struct ag_check *c)
{
    return !c->risk.judged || (c->risk.signals & RISKY);
}

/* ---- teaching ----------------------------------------------------------- */

/* The history under key, read whole: AG_OK and *h (none: empty), or the
 * store's error. */
static int read_history(struct ag_service *s, const char *key,
                        struct ag_history *h)
{
    const char *argv[] = {"GET", key};
    size_t lens[] = {3, strlen(key)};
    void *reply = NULL;
    int rc = ag_store_command(s->o.store, 2, argv, lens, 1, &reply);
    const redisReply *r = reply;
    if (rc == AG_OK && r && r->type == REDIS_REPLY_STRING) {
        if (ag_history_parse(r->str, r->len, h))
            ag_log(AG_LOG_WARN, "history_unreadable",
                   "a user's history in Redis is no history of this "
                   "version: taught afresh");
    } else if (rc == AG_OK && r && r->type == REDIS_REPLY_NIL) {
        ag_history_parse("", 0, h);
    } else if (rc == AG_OK) {
        rc = AG_ESTORE;
    }
    ag_redis_reply_free(reply);
    return rc;
}

static int write_history(struct ag_service *s, const char *key,
                         const struct ag_history *h)
{
    char text[AG_HISTORY_TEXT_MAX];
    size_t len = ag_history_format(h, text);
    char px[24];
    snprintf(px, sizeof px, "%llu",
             (unsigned long long)s->o.history_days * 86400000ull);
    const char *argv[] = {"SET", key, text, "PX", px};
    size_t lens[] = {3, strlen(key), len, 2, strlen(px)};
    void *reply = NULL;
    int rc = ag_store_command(s->o.store, 5, argv, lens, 1, &reply);
    const redisReply *r = reply;
    /* An error reply (-OOM under maxmemory) is no lesson kept. */
    if (rc == AG_OK && (!r || r->type != REDIS_REPLY_STATUS))
        rc = AG_ESTORE;
    ag_redis_reply_free(reply);
    return rc;
}

/* new_country_login or impossible_travel for the user of d. */
static void raise_travel(struct ag_service *s, enum ag_event_type type,
                         const struct ag_request *req, struct ag_digests *d,
                         const struct ag_history *h,
                         const struct ag_travel *fig)
{
    struct ag_event e;
    ag_service__user_event(&e, type, req, d);
    memcpy(e.travel.from, h->last_country, sizeof e.travel.from);
    memcpy(e.travel.to, req->net.country, sizeof e.travel.to);
    if (type == AG_EV_IMPOSSIBLE_TRAVEL) {
        e.travel.km = (uint32_t)(fig->km + 0.5);
        e.travel.instant = fig->hours <= 0;
        e.travel.kmh = e.travel.instant || fig->kmh > UINT32_MAX
                           ? 0
                           : (uint32_t)(fig->kmh + 0.5);
    }
    ag_events_raise(s->o.events, &e);
}

/* A success that could not teach its history: said once a minute at
 * most, as Redis being out is said elsewhere too. */
static void untaught(void)
{
    static _Atomic uint64_t said_ms;
    uint64_t now = ag_clock_wall_ms(), last = atomic_load(&said_ms);
    if (now - last < 60000 ||
        !atomic_compare_exchange_strong(&said_ms, &last, now))
        return;
    ag_log(AG_LOG_WARN, "history_unread",
           "a login success could not teach its user's history: Redis did "
           "not answer (said once a minute)");
}

void ag_service__risk_teach(struct ag_service *s, const struct ag_request *req,
                            struct ag_digests *d, bool proven)
{
    if (!wanted(s, req))
        return;
    char key[AG_STORE_KEY_MAX];
    history_key(s, d, key);
    struct ag_history h;
    if (read_history(s, key, &h)) {
        untaught();
        return;
    }
    struct ag_login_place at;
    login_place(s, req, &at);
    uint64_t now = ag_clock_wall_ms();
    enum ag_history_travel travel;
    struct ag_travel fig;
    struct ag_travel_opts o = {.speed_kmh = s->o.travel_speed_kmh};
    unsigned sig =
        ag_history_judge(&h, &at, now, s->o.history_days, &o, &travel, &fig);
    if (sig & BIT(AG_SIGNAL_NEW_COUNTRY))
        raise_travel(s, AG_EV_NEW_COUNTRY_LOGIN, req, d, &h, &fig);
    if (sig & BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL))
        raise_travel(s, AG_EV_IMPOSSIBLE_TRAVEL, req, d, &h, &fig);
    if (ag_history_teach(&h, &at, now, sig, proven, s->o.history_days) &&
        write_history(s, key, &h))
        untaught();
}

/* ---- the operators' view ------------------------------------------------ */

static json_t *day_text(uint32_t day)
{
    char when[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339((uint64_t)day * 86400000ull, when);
    when[10] = '\0'; /* the date alone */
    return json_string(when);
}

/* The last place, coarse, and when it was. */
static json_t *place_json(const struct ag_history *h)
{
    char when[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339(h->place_ms, when);
    return json_pack("{s:f,s:f,s:i,s:s}", "latitude", h->place.lat_d10 / 10.0,
                     "longitude", h->place.lon_d10 / 10.0, "accuracy_km",
                     (int)h->place.radius_km, "at", when);
}

/* h as JSON: its countries and networks with the day each was last seen,
 * the last success's time and country, and with place its coarse place
 * (an export: everything kept). */
static json_t *history_json(const struct ag_history *h, bool place)
{
    json_t *countries = json_array(), *asns = json_array();
    for (size_t i = 0; countries && i < h->ncountries; i++)
        json_array_append_new(
            countries, json_pack("{s:s,s:o}", "country", h->countries[i].code,
                                 "last_seen", day_text(h->countries[i].day)));
    for (size_t i = 0; asns && i < h->nasns; i++)
        json_array_append_new(
            asns, json_pack("{s:I,s:o}", "asn", (json_int_t)h->asns[i].asn,
                            "last_seen", day_text(h->asns[i].day)));
    char when[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339(h->last_ms, when);
    json_t *o = json_pack("{s:o*,s:o*,s:s}", "countries", countries, "networks",
                          asns, "last_success", when);
    if (o && h->last_country[0])
        json_object_set_new(o, "last_country", json_string(h->last_country));
    if (o && place)
        json_object_set_new(o, "last_place",
                            h->placed ? place_json(h) : json_null());
    return o;
}

int ag_service_history(struct ag_service *s, const char *body, size_t len,
                       enum ag_history_op op, json_t **out, char *digest,
                       struct ag_error *err)
{
    *out = NULL;
    digest[0] = '\0';
    struct ag_request req;
    if (ag_request_parse_for(AG_EP_LOGIN, 1u << AG_KEY_USER, body, len,
                             &s->o.request, &req, err))
        return AG_EINVAL;
    if (op == AG_HISTORY_VIEW) {
        /* Only where histories are kept: an inspect elsewhere has none. */
        ag_service__look_up_network(s, &req);
        if (!wanted(s, &req))
            return AG_ENOTFOUND;
    }
    struct ag_digests d;
    ag_digests_init(&d, s->o.hasher, &req, s->o.tagged_keys);
    snprintf(digest, AG_DIGEST_HEX + 1, "%s", ag_digests_get(&d, AG_KEY_USER));
    char key[AG_STORE_KEY_MAX];
    history_key(s, &d, key);
    if (op == AG_HISTORY_FORGET) {
        const char *argv[] = {"DEL", key};
        size_t lens[] = {3, strlen(key)};
        void *reply = NULL;
        int rc = ag_store_command(s->o.store, 2, argv, lens, 1, &reply);
        const redisReply *r = reply;
        bool gone = rc == AG_OK && r && r->type == REDIS_REPLY_INTEGER;
        *out = gone ? json_pack("{s:b}", "forgotten", r->integer > 0) : NULL;
        ag_redis_reply_free(reply);
        return gone ? (*out ? AG_OK : AG_ENOMEM) : AG_ESTORE;
    }
    struct ag_history h;
    if (read_history(s, key, &h))
        return AG_ESTORE;
    *out = h.known ? history_json(&h, op == AG_HISTORY_EXPORT) : json_null();
    return *out ? AG_OK : AG_ENOMEM;
}
