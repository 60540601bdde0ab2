/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One step of an instance against its fleet's head (ag_fleet.h says what
 * each case does and why): follow, take the fleet's history, put its own
 * back, begin one, hold, or diverge.
 */
#include "ag_fleet_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_fleet_set.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_reload.h"

#define READ_COUNT 100 /* records read from the log at once */

/* What taking one record came to. */
enum took {
    TOOK,    /* applied (or found applied) */
    REFUSED, /* it does not open: not a record of this fleet's secret */
    FORK,    /* a genuine record that does not follow this history */
    HELD,    /* this instance cannot apply it: it holds */
    RETRY,   /* another connection moved the database: step again */
    FAILED   /* the database failed */
};

static const char *string_of(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Holds at record (the record at issue, or 0) for the reason fmt says:
 * raised once per record. */
static void hold(struct ag_fleet *f, int64_t record, const char *why)
{
    ag_fleet__set_state(f, AG_FLEET__HELD, "%s", why);
    if (f->held_at != record) {
        f->held_at = record;
        ag_fleet__raise(f, AG_EV_FLEET_HELD, why, record);
    }
}

static enum took refuse(struct ag_fleet *f,
                        const struct ag_redis_fleet_record *r, const char *why)
{
    ag_metrics_count(f->metrics, AG_M_FLEET_REFUSED);
    if (strcmp(f->refused_hash, r->hash) != 0 || !r->hash[0]) {
        snprintf(f->refused_hash, sizeof f->refused_hash, "%s", r->hash);
        ag_log(AG_LOG_ERROR, "fleet_record_refused",
               "fleet %s: the record at version %lld %s; it is not applied "
               "and this instance keeps its set",
               f->name, (long long)r->version, why);
        ag_fleet__raise(f, AG_EV_FLEET_RECORD_REFUSED, why, r->version);
    }
    return REFUSED;
}

/* Does body begin with a snapshot? Its reason then becomes reason, which
 * this instance's audit row gives. */
static bool begins_with_snapshot(json_t *body, const char *reason)
{
    json_t *first = json_array_get(json_object_get(body, "ops"), 0);
    const char *op = string_of(first, "op");
    if (!op || strcmp(op, "snapshot") != 0)
        return false;
    return !reason ||
           json_object_set_new(first, "reason", json_string(reason)) == 0;
}

/* Takes record r (a base if base): applies it after this instance's last
 * (or, adopt, as the start of its history, reason its audit's word). */
static enum took take(struct ag_fleet *f, const struct ag_redis_fleet_record *r,
                      bool base, bool adopt, const char *reason)
{
    if (r->bad)
        return refuse(f, r, "is not of a record's shape");
    json_t *body = NULL;
    char hash[AG_FLEET_HASH_HEX + 1];
    char why[AG_FLEET__WHY_MAX];
    int rc = ag_fleet__open(f, r, base, &body, hash);
    if (rc == AG_EINVAL)
        return refuse(f, r, "does not open: forged, replayed or damaged");
    if (rc == AG_EPENDING) {
        snprintf(why, sizeof why, "record %lld is not readable JSON",
                 (long long)r->version);
        hold(f, r->version, why);
        return HELD;
    }
    if (rc)
        return FAILED;
    if (!adopt && (r->version != f->row.version + 1 ||
                   strcmp(r->epoch, f->row.epoch) != 0 ||
                   strcmp(r->prev, f->row.hash) != 0)) {
        json_decref(body);
        return FORK;
    }
    enum took t = TOOK;
    if (r->schema > AG_FLEET_SCHEMA) {
        snprintf(why, sizeof why,
                 "record %lld needs schema %u; this binary applies %d at "
                 "most: upgrade it",
                 (long long)r->version, r->schema, AG_FLEET_SCHEMA);
        t = HELD;
    } else if (adopt && !begins_with_snapshot(body, reason)) {
        snprintf(why, sizeof why,
                 "the fleet's history does not begin with a snapshot at "
                 "version %lld",
                 (long long)r->version);
        t = HELD;
    }
    if (t == HELD) {
        json_decref(body);
        hold(f, r->version, why);
        return HELD;
    }
    struct ag_db_fleet_change c = {
        .body = body,
        .name = f->name,
        .epoch = r->epoch,
        .prev = base ? r->hash : r->prev,
        .hash = hash,
        .instance = string_of(body, "instance"),
        .version = r->version,
        .adopt = adopt,
        .seed = json_is_true(json_object_get(body, "seed")),
        .replaces = string_of(body, "replaces"),
    };
    enum ag_db_fleet_outcome outcome;
    struct ag_error err;
    rc = ag_db_fleet_apply(f->db, &c, &outcome, NULL, &err);
    json_decref(body);
    if (rc == AG_EIO || rc == AG_ENOMEM) {
        ag_log(AG_LOG_ERROR, "fleet_apply", "fleet %s: record %lld: %s",
               f->name, (long long)r->version, err.msg);
        return FAILED;
    }
    if (rc) {
        snprintf(why, sizeof why, "record %lld cannot be applied: %s",
                 (long long)r->version, err.msg);
        hold(f, r->version, why);
        return HELD;
    }
    if (outcome == AG_DB_FLEET_NOT_NEXT)
        return RETRY;
    if (outcome == AG_DB_FLEET_APPLIED) {
        ag_metrics_count(f->metrics, AG_M_FLEET_APPLIED);
        ag_reload_kick(f->reload);
    }
    return ag_db_fleet_get(f->db, &f->row, &err) ? FAILED : TOOK;
}

static int unreachable(struct ag_fleet *f)
{
    ag_fleet__set_state(f, AG_FLEET__UNREACHABLE,
                        "Redis did not answer or refused (see the log)");
    return AG_ESTORE;
}

/* Puts this instance's history back as the fleet's (why says why): a
 * sealed snapshot of its set becomes the base at its version and hash. */
static int diverge(struct ag_fleet *f, const json_t *diff, const char *why);

static int restore_mine(struct ag_fleet *f, const char *why)
{
    /* A set changed outside the fleet is no history to put back: it
     * could be compared with none, and would become the fleet's. */
    if (f->row.touched) {
        char reason[AG_FLEET__WHY_MAX];
        snprintf(reason, sizeof reason,
                 "%s, and this instance's set was changed outside the fleet "
                 "(its database edited or replaced by hand): it is not put "
                 "back as the fleet's",
                 why);
        return diverge(f, NULL, reason);
    }
    struct ag_error err;
    json_t *body = ag_fleet__snapshot_body(f, "restore", NULL, 0, &err);
    struct ag_redis_fleet_record rec;
    int rc = body ? ag_fleet__seal(f, body, f->row.epoch, f->row.version,
                                   f->row.hash, &rec)
                  : AG_EIO;
    json_decref(body);
    if (rc)
        return rc;
    /* A base stands for the chain at its version: its hash is the
     * chain's there. */
    snprintf(rec.hash, sizeof rec.hash, "%s", f->row.hash);
    rec.prev[0] = '\0';
    struct ag_redis_fleet_seen seen = {f->head.exists, f->head.epoch,
                                       f->head.hash, f->head.version};
    /* Long enough for every instance to look twice (if its poll is this
     * one's). */
    uint64_t settle = 2 * (uint64_t)f->poll_ms + 1000;
    settle = settle > AG_FLEET_SETTLE_MS ? settle : AG_FLEET_SETTLE_MS;
    rc = ag_redis_fleet_restore(f->redis, f->name, &seen, &rec, f->row.pristine,
                                settle);
    free((char *)rec.blob);
    if (rc == AG_ESTORE)
        return unreachable(f);
    if (rc == AG_ECONFLICT) {
        ag_fleet__wake(f); /* the head moved: step again */
        return AG_OK;
    }
    if (rc)
        return rc;
    ag_log(AG_LOG_WARN, "fleet_restored",
           "fleet %s: %s; this instance put its history back at version "
           "%lld; changes resume in %llu s",
           f->name, why, (long long)f->row.version,
           (unsigned long long)settle / 1000);
    ag_fleet__set_state(f, AG_FLEET__FOLLOWING, "%s", "");
    return AG_OK;
}

static int follow(struct ag_fleet *f);

/* Takes the fleet's history from its start (its base, or its log's first
 * record) in place of this instance's, for reason ("join", "fork",
 * "init", "catch-up"), then follows it. */
static int adopt(struct ag_fleet *f, const char *reason)
{
    int64_t was = f->row.version;
    char was_epoch[AG_FLEET_EPOCH_HEX + 1];
    snprintf(was_epoch, sizeof was_epoch, "%s", f->row.epoch);
    bool base = f->head.base_version > 0;
    struct ag_redis_fleet_records rs;
    int rc = base ? ag_redis_fleet_base(f->redis, f->name, &rs)
                  : ag_redis_fleet_read(f->redis, f->name,
                                        f->head.first_version > 0
                                            ? f->head.first_version - 1
                                            : 0,
                                        1, &rs);
    if (rc)
        return unreachable(f);
    if (rs.n == 0) {
        ag_redis_fleet_records_free(&rs);
        hold(f, 0, "the fleet's history has no start in Redis");
        return AG_OK;
    }
    enum took t = take(f, &rs.r[0], base, true, reason);
    ag_redis_fleet_records_free(&rs);
    if (t == FAILED)
        return AG_EIO;
    if (t == REFUSED) {
        hold(f, 0, "the fleet's first record does not open");
        return AG_OK;
    }
    if (t != TOOK)
        return AG_OK;
    if (strcmp(reason, "fork") == 0) {
        char why[AG_FLEET__WHY_MAX];
        snprintf(why, sizeof why,
                 "this instance's history forked from the fleet's: its "
                 "versions up to %lld (epoch %.8s) were replaced by the "
                 "fleet's",
                 (long long)was, was_epoch);
        ag_log(AG_LOG_ERROR, "fleet_diverged", "fleet %s: %s", f->name, why);
        ag_fleet__raise(f, AG_EV_FLEET_DIVERGED, "fork", was);
    } else {
        ag_log(AG_LOG_INFO, "fleet_adopted",
               "fleet %s: took the fleet's set at version %lld (%s)", f->name,
               (long long)f->row.version, reason);
    }
    return follow(f);
}

/* Applies the log's records after this instance's, to the head. */
static int follow(struct ag_fleet *f)
{
    while (f->row.version < f->head.version) {
        struct ag_redis_fleet_records rs;
        if (ag_redis_fleet_read(f->redis, f->name, f->row.version, READ_COUNT,
                                &rs))
            return unreachable(f);
        if (rs.n == 0 || rs.r[0].version != f->row.version + 1) {
            ag_redis_fleet_records_free(&rs);
            /* Once a step: a base that took this instance no further (a
             * restore replaced it meanwhile) waits for the next step's
             * head. */
            if (f->head.base_version > f->row.version && !f->caught_up) {
                f->caught_up = true;
                return adopt(f, "catch-up");
            }
            char why[AG_FLEET__WHY_MAX];
            snprintf(why, sizeof why,
                     "the fleet's log lacks record %lld and holds no later "
                     "base: waiting for an instance that has it",
                     (long long)f->row.version + 1);
            hold(f, f->row.version + 1, why);
            return AG_OK;
        }
        for (size_t i = 0; i < rs.n; i++) {
            enum took t = take(f, &rs.r[i], false, false, NULL);
            if (t == TOOK)
                continue;
            int64_t at = rs.r[i].version;
            ag_redis_fleet_records_free(&rs);
            char why[AG_FLEET__WHY_MAX];
            switch (t) {
            case REFUSED:
                snprintf(why, sizeof why,
                         "the record at version %lld was "
                         "refused",
                         (long long)at);
                return restore_mine(f, why);
            case FORK:
                return adopt(f, "fork");
            case FAILED:
                return AG_EIO;
            default: /* HELD, RETRY: the next step goes on */
                return AG_OK;
            }
        }
        ag_redis_fleet_records_free(&rs);
    }
    /* Records appended after the head was read come with the batch: the
     * head is at least where they took this instance (a change recorded
     * next is appended after them). */
    if (f->row.version > f->head.version) {
        f->head.version = f->row.version;
        memcpy(f->head.hash, f->row.hash, sizeof f->head.hash);
    }
    ag_fleet__set_state(f, AG_FLEET__FOLLOWING, "%s", "");
    f->held_at = 0;
    f->diverged_raised = false;
    return AG_OK;
}

/* Keeps this instance's set and refuses changes until the operator
 * chooses (abuseguard fleet init); raised once while it lasts. */
static int diverge(struct ag_fleet *f, const json_t *diff, const char *why)
{
    ag_fleet__set_state(f, AG_FLEET__DIVERGED,
                        "%s; run abuseguard fleet init (it shows the "
                        "difference) --from this or --from fleet",
                        why);
    if (f->diverged_raised)
        return AG_OK;
    f->diverged_raised = true;
    char *text = diff ? json_dumps(diff, JSON_COMPACT) : NULL;
    ag_log(AG_LOG_ERROR, "fleet_diverged",
           "fleet %s: %s; this instance keeps its own set and refuses admin "
           "writes until an operator chooses: abuseguard fleet init --from "
           "this (this set becomes the fleet's) or --from fleet (this "
           "instance takes the fleet's)%s%s",
           f->name, why, text ? "; difference (this -> fleet): " : "",
           text ? text : "");
    free(text);
    ag_fleet__raise(f, AG_EV_FLEET_DIVERGED, "sets differ", 0);
    return AG_OK;
}

/* This instance's set as a set (ag_fleet_set.h); NULL with err. */
static json_t *my_set(struct ag_fleet *f, struct ag_error *err)
{
    json_t *exp = NULL;
    if (ag_db_fleet_export(f->db, &exp, err))
        return NULL;
    json_t *set = ag_fleet_set_from_snapshot(exp);
    json_decref(exp);
    if (!set)
        ag_error_fill(err, AG_ENOMEM, NULL, "out of memory");
    return set;
}

/* Not yet a member, with a set of its own: joins if the fleet's set is
 * the same, else diverges. */
static int join_if_same(struct ag_fleet *f)
{
    char replaces[AG_FLEET_EPOCH_HEX + 1];
    struct ag_error err;
    json_t *fleet = ag_fleet__fleet_set(f, &f->head, replaces, &err);
    if (!fleet)
        return err.code == AG_ESTORE ? unreachable(f)
                                     : (hold(f, 0, err.msg), AG_OK);
    json_t *mine = my_set(f, &err);
    bool same = false;
    json_t *diff = mine ? ag_fleet_set_diff(mine, fleet, &same) : NULL;
    json_decref(fleet);
    json_decref(mine);
    int rc;
    if (!diff)
        rc = AG_ENOMEM;
    else if (same)
        rc = adopt(f, "join");
    else
        rc = diverge(f, diff, "this instance's set differs from the fleet's");
    json_decref(diff);
    return rc;
}

/* A member whose set was changed by no record (its database edited or
 * restored by hand while it was stopped): compared with the fleet's set
 * at this instance's version, the same clears the mark and the instance
 * follows, else it diverges. Where the log no longer reaches that
 * version, the base the instance takes instead overwrites the set. */
static int judge_touched(struct ag_fleet *f)
{
    /* The fleet's set at this version cannot be read: its base is
     * later. Taking the base overwrites the set whole, the hand edit
     * too. */
    if (f->head.base_version > f->row.version)
        return adopt(f, "catch-up");
    struct ag_redis_fleet_head at = f->head;
    at.version = f->row.version;
    char replaces[AG_FLEET_EPOCH_HEX + 1];
    struct ag_error err;
    json_t *fleet = ag_fleet__fleet_set(f, &at, replaces, &err);
    if (!fleet)
        return err.code == AG_ESTORE ? unreachable(f)
                                     : (hold(f, 0, err.msg), AG_OK);
    json_t *mine = my_set(f, &err);
    if (!mine) {
        /* Its own set cannot be read now (a table a hand edit broke):
         * judged at a later step; records still apply meanwhile. */
        json_decref(fleet);
        ag_log(AG_LOG_DEBUG, "fleet_touched", "fleet %s: %s", f->name, err.msg);
        return follow(f);
    }
    bool same = false;
    json_t *diff = ag_fleet_set_diff(mine, fleet, &same);
    json_decref(fleet);
    json_decref(mine);
    int rc;
    if (!diff)
        rc = AG_ENOMEM;
    else if (!same)
        rc = diverge(f, diff,
                     "this instance's set was changed outside the fleet (its "
                     "database edited or replaced by hand) and differs from "
                     "the fleet's");
    else if (ag_db_fleet_untouch(f->db, &err) ||
             ag_db_fleet_get(f->db, &f->row, &err))
        rc = AG_EIO;
    else
        rc = follow(f);
    json_decref(diff);
    return rc;
}

/* A member of another history than the head's: takes it if an operator
 * began it over this one (fleet init), else diverges. */
static int adopt_if_init(struct ag_fleet *f)
{
    char replaces[AG_FLEET_EPOCH_HEX + 1] = "";
    struct ag_error err;
    json_t *fleet = ag_fleet__fleet_set(f, &f->head, replaces, &err);
    if (!fleet)
        return err.code == AG_ESTORE ? unreachable(f)
                                     : (hold(f, 0, err.msg), AG_OK);
    json_decref(fleet);
    if (strcmp(replaces, f->row.epoch) == 0)
        return adopt(f, "init");
    return diverge(f, NULL,
                   "the fleet's history in Redis is another one than this "
                   "instance's");
}

int ag_fleet__step(struct ag_fleet *f)
{
    struct ag_error err;
    f->caught_up = false;
    if (ag_db_follow(f->db, &err) || ag_db_fleet_get(f->db, &f->row, &err)) {
        ag_log(AG_LOG_ERROR, "fleet_db", "fleet %s: %s", f->name, err.msg);
        return AG_EIO;
    }
    struct ag_redis_fleet_head h;
    if (ag_redis_fleet_head(f->redis, f->name, &h))
        return unreachable(f);

    /* Diverged stays so, without a new judgement, while neither side
     * moved. */
    bool same_head = f->head.exists == h.exists &&
                     f->head.version == h.version &&
                     strcmp(f->head.epoch, h.epoch) == 0;
    f->head = h;
    ag_metrics_set(f->metrics, AG_M_FLEET_HEAD, h.version);
    int rc;
    bool mine = f->row.member && strcmp(f->row.name, f->name) == 0;
    if (f->state == AG_FLEET__DIVERGED && same_head && !f->row.pristine)
        rc = AG_OK;
    else if (!h.exists)
        rc = mine && f->row.version > 0
                 ? restore_mine(f, "the fleet's history is gone from Redis")
                 : ag_fleet__found(f, &h, "found", NULL, f->row.pristine, &err);
    else if (mine && strcmp(h.epoch, f->row.epoch) == 0) {
        char at[AG_FLEET_HASH_HEX + 1];
        if (f->row.touched && h.version >= f->row.version)
            rc = judge_touched(f);
        else if (h.version > f->row.version)
            rc = follow(f);
        else if (h.version == f->row.version &&
                 strcmp(h.hash, f->row.hash) == 0)
            rc = follow(f); /* at the head: following */
        else if (h.version < f->row.version &&
                 ag_db_fleet_hash_at(f->db, h.version, at, &err) == AG_OK &&
                 strcmp(at, h.hash) == 0)
            rc = restore_mine(f, "the fleet's head is behind this instance");
        else
            rc = adopt(f, "fork");
    } else if (f->row.pristine)
        rc = adopt(f, "join");
    else if (mine && h.seed)
        rc = restore_mine(f, "the fleet in Redis holds only a seed");
    else if (mine)
        rc = adopt_if_init(f);
    else
        rc = join_if_same(f);
    if (rc == AG_ECONFLICT) { /* found: another instance came first */
        ag_fleet__wake(f);
        rc = AG_OK;
    } else if (rc == AG_ESTORE) {
        rc = unreachable(f);
    }
    ag_metrics_set(f->metrics, AG_M_FLEET_VERSION, f->row.version);
    return rc;
}
