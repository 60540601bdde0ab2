/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writing to the fleet (ag_fleet.h): a change checked, sealed, appended
 * and applied here; an audit note; the log's compaction; and
 * abuseguard fleet init's new history.
 */
#include "ag_fleet_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "ag_fleet_set.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_reload.h"

static const char *string_of(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A copy of ops whose list_add entries without an id take the next ones
 * from next: the writer numbers them, so that an entry has one id on
 * every instance. NULL when out of memory. */
static json_t *numbered(const json_t *ops, int64_t next)
{
    json_t *copy = json_deep_copy(ops);
    size_t i;
    json_t *op;
    json_array_foreach(copy, i, op)
    {
        const char *kind = string_of(op, "op");
        json_t *entry = json_object_get(op, "entry");
        if (!kind || strcmp(kind, "list_add") != 0 || !json_is_object(entry) ||
            json_integer_value(json_object_get(entry, "id")) > 0)
            continue;
        if (json_object_set_new(entry, "id", json_integer(next++))) {
            json_decref(copy);
            return NULL;
        }
    }
    return copy;
}

/* Do ops only write audit rows (a seed fleet stays a seed)? */
static bool audit_only(const json_t *ops)
{
    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op)
    {
        const char *kind = string_of(op, "op");
        if (!kind || strcmp(kind, "audit") != 0)
            return false;
    }
    return true;
}

static int if_match(struct ag_fleet *f, const struct ag_fleet_change *c,
                    struct ag_error *err)
{
    if (!c->if_name)
        return AG_OK;
    int64_t v = 0;
    int rc = ag_db_policy_version(f->db, c->if_name, &v, err);
    if (rc == AG_ENOTFOUND)
        return ag_error_set(err, AG_ESTALE, "If-Match",
                            "If-Match: policy %s no longer exists", c->if_name);
    if (rc)
        return rc;
    /* -1: If-Match: *, which asks only that the policy exist. */
    if (c->if_version >= 0 && v != c->if_version)
        return ag_error_set(err, AG_ESTALE, "If-Match",
                            "If-Match: policy %s is at version %" PRId64
                            ", not %" PRId64 ": another change came first; "
                            "read it again",
                            c->if_name, v, c->if_version);
    return AG_OK;
}

/* Applies body here: as the fleet record at version (0: here alone),
 * or, dry_run, only checks it. */
static int apply_here(struct ag_fleet *f, json_t *body,
                      const struct ag_redis_fleet_record *rec, bool dry_run,
                      int64_t *entry_id, struct ag_error *err)
{
    struct ag_db_fleet_change c = {.body = body, .dry_run = dry_run};
    if (rec) {
        c.name = f->name;
        c.epoch = rec->epoch;
        c.prev = rec->prev;
        c.hash = rec->hash;
        c.instance = f->row.instance;
        c.version = rec->version;
    }
    enum ag_db_fleet_outcome outcome;
    int rc = ag_db_fleet_apply(f->db, &c, &outcome, entry_id, err);
    if (!rc && rec && outcome != AG_DB_FLEET_APPLIED)
        ag_log(AG_LOG_WARN, "fleet_apply",
               "fleet %s: record %" PRId64 " was applied already", f->name,
               rec->version);
    return rc;
}

/* Every this many versions: a base of this set, the log trimmed behind
 * it. A failure costs only a longer log. */
static void compact(struct ag_fleet *f)
{
    struct ag_error err;
    json_t *body = ag_fleet__snapshot_body(f, "compact", NULL, 0, &err);
    struct ag_redis_fleet_record rec = {0};
    int rc = body ? ag_fleet__seal(f, body, f->row.epoch, f->row.version,
                                   f->row.hash, &rec)
                  : AG_ENOMEM;
    json_decref(body);
    if (!rc) {
        snprintf(rec.hash, sizeof rec.hash, "%s", f->row.hash);
        rec.prev[0] = '\0';
        rc = ag_redis_fleet_compact(f->redis, f->name, &rec, AG_FLEET_LOG_KEEP);
    }
    free((char *)rec.blob);
    ag_log(rc ? AG_LOG_WARN : AG_LOG_INFO, "fleet_compacted",
           "fleet %s: base at version %" PRId64 "%s", f->name, f->row.version,
           rc ? " not written (the log stays longer)" : "");
}

/* Why the fleet cannot take a change now, in err: AG_ESTORE. */
static int not_now(struct ag_fleet *f, struct ag_error *err)
{
    if (f->state == AG_FLEET__FOLLOWING && f->row.version == f->head.version &&
        !f->head.settle_left_ms)
        return ag_error_set(err, AG_ESTORE, NULL,
                            "this instance could not bring its database to "
                            "the fleet's head (see the log): nothing was "
                            "changed");
    if (f->state == AG_FLEET__UNREACHABLE)
        return ag_error_set(err, AG_ESTORE, NULL,
                            "the fleet cannot be reached (Redis did not "
                            "answer): nothing was changed");
    if (f->state != AG_FLEET__FOLLOWING || f->row.version != f->head.version)
        return ag_error_set(err, AG_ESTORE, NULL,
                            "this instance cannot change the fleet's set now "
                            "(%s%s%s): nothing was changed",
                            ag_fleet__state_name(f->state),
                            f->why[0] ? ": " : "", f->why);
    return ag_error_set(err, AG_ESTORE, NULL,
                        "the fleet is settling after an instance put its "
                        "history back; changes resume in %" PRIu64
                        " ms: nothing was changed",
                        f->head.settle_left_ms);
}

/* Refuses a record of schema (ag_fleet_set_schema) above 1 while a
 * member's heartbeat says it applies less (one from before heartbeats
 * said it applies 1): written, it would hold that member until upgraded.
 * AG_OK, AG_ECONFLICT naming the member, or AG_ESTORE. */
static int every_member_reads(struct ag_fleet *f, unsigned schema,
                              struct ag_error *err)
{
    if (schema <= 1)
        return AG_OK;
    struct ag_redis_fleet_members ms;
    if (ag_redis_fleet_members(f->redis, f->name, &ms) != AG_OK)
        return ag_error_set(err, AG_ESTORE, NULL,
                            "the fleet's members cannot be read (Redis did "
                            "not answer): nothing was changed");
    int rc = AG_OK;
    for (size_t i = 0; i < ms.n && !rc; i++) {
        json_t *m = json_loads(ms.m[i].json, 0, NULL);
        json_int_t has = json_integer_value(json_object_get(m, "schema"));
        if ((has ? has : 1) < (json_int_t)schema)
            rc = ag_error_set(
                err, AG_ECONFLICT, NULL,
                "instance %s (%s, %s) applies fleet records of schema %lld "
                "at most, and this change needs %u (%s): upgrade it first; "
                "nothing was changed",
                ms.m[i].id,
                json_string_value(json_object_get(m, "host"))
                    ? json_string_value(json_object_get(m, "host"))
                    : "?",
                json_string_value(json_object_get(m, "binary"))
                    ? json_string_value(json_object_get(m, "binary"))
                    : "?",
                (long long)(has ? has : 1), schema,
                schema >= 3 ? "a risky-scoped shield or a signal of the "
                              "user's history"
                            : "a network field: lists, countries, a "
                              "computed signal, an asn or ip_country entry");
        json_decref(m);
    }
    ag_redis_fleet_members_free(&ms);
    return rc;
}

/* Makes the operations of a change from the set as it stands (after
 * each step, under f->lock): a new array, or NULL with err filled. */
typedef json_t *(*build_fn)(struct ag_fleet *f, void *ctx,
                            struct ag_error *err);

/* The change's own operations, copied. */
static json_t *given_ops(struct ag_fleet *f, void *ctx, struct ag_error *err)
{
    (void)f;
    json_t *ops = json_deep_copy(((const struct ag_fleet_change *)ctx)->ops);
    if (!ops)
        ag_error_fill(err, AG_ENOMEM, NULL, "out of memory");
    return ops;
}

/* Records a change through the fleet: brings this instance to the head,
 * makes its operations (build), checks them here, seals them, appends
 * them (again after another's append, up to AG_FLEET_TRIES times) and
 * applies them here. With the fleet off, applies them here alone. Under
 * f->lock. */
static int record(struct ag_fleet *f, const struct ag_fleet_change *c,
                  build_fn build, void *ctx, struct ag_fleet_result *res,
                  struct ag_error *err)
{
    for (int t = 0; t < AG_FLEET_TRIES; t++) {
        int rc = f->on ? ag_fleet__step(f) : ag_db_follow(f->db, err);
        if (rc == AG_EIO)
            return ag_error_set(err, AG_EIO, NULL,
                                "the policy database failed: nothing was "
                                "changed");
        if (f->on &&
            (rc || f->state != AG_FLEET__FOLLOWING ||
             f->row.version != f->head.version || f->head.settle_left_ms))
            return not_now(f, err);
        if ((rc = if_match(f, c, err)))
            return rc;
        json_t *ops = build(f, ctx, err);
        if (!ops)
            return err->code;
        if (json_array_size(ops) == 0) { /* nothing to change */
            json_decref(ops);
            return AG_OK;
        }
        if (!f->on) {
            json_t *body =
                json_pack("{s:s, s:o}", "actor", c->actor, "ops", ops);
            rc = body ? apply_here(f, body, NULL, c->dry_run, &res->entry_id,
                                   err)
                      : ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
            json_decref(body);
            return rc;
        }
        int64_t next = 0;
        if ((rc = ag_db_fleet_next_entry_id(f->db, &next, err))) {
            json_decref(ops);
            return rc;
        }
        json_t *body = ag_fleet__body(f, c->actor, numbered(ops, next));
        json_decref(ops);
        if (!body)
            return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
        rc = apply_here(f, body, NULL, true, NULL, err);
        if (!rc && !c->dry_run &&
            (rc = every_member_reads(f, ag_fleet_set_schema(body), err))) {
            json_decref(body); /* nothing sent */
            return rc;
        }
        struct ag_redis_fleet_record rec = {0};
        bool write = !rc && !c->dry_run, moved = false;
        if (write) {
            rc = ag_fleet__seal(f, body, f->row.epoch, f->row.version + 1,
                                f->row.hash, &rec);
            if (rc)
                ag_error_fill(err, rc, "body",
                              rc == AG_ETOOBIG
                                  ? "the change is too large for one fleet "
                                    "record"
                                  : "the change cannot be sealed");
        }
        uint64_t settle = 0;
        if (write && !rc) {
            rc = ag_redis_fleet_append(
                f->redis, f->name, &rec,
                f->head.seed && audit_only(json_object_get(body, "ops")),
                &settle);
            moved = rc == AG_ECONFLICT;
        }
        bool unapplied = false;
        if (write && !rc) {
            /* In the fleet now, whatever happens here: every instance
             * applies it, this one at its next step if not now. A failure
             * here (the file busy with another writer, a full disk) is no
             * refusal, which would invite the change again. */
            struct ag_error aerr = {0};
            unapplied = apply_here(f, body, &rec, false, &res->entry_id,
                                   &aerr) != AG_OK;
            if (unapplied) {
                ag_log(AG_LOG_ERROR, "fleet_apply",
                       "fleet %s: record %lld is the fleet's but not applied "
                       "here yet: %s",
                       f->name, (long long)rec.version, aerr.msg);
                res->version = rec.version;
                ag_fleet__wake(f);
            }
        }
        free((char *)rec.blob);
        json_decref(body);
        if (unapplied)
            return AG_OK;
        if (moved) {
            /* Another's append came first: read it, and try again after
             * a random moment, so that two busy writers fall out of
             * step. */
            struct timespec ts = {0, (long)(500 + randombytes_uniform(3500)) *
                                         1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (rc == AG_EPENDING) {
            f->head.settle_left_ms = settle;
            return not_now(f, err);
        }
        if (rc == AG_ESTORE)
            return ag_error_set(err, AG_EUNKNOWN, NULL,
                                "the fleet did not answer the change: if it "
                                "was recorded, every instance applies it "
                                "(GET /admin/audit shows it); it is not sent "
                                "again");
        if (rc)
            return rc;
        if (!c->dry_run) {
            res->version = rec.version;
            struct ag_error gerr;
            ag_db_fleet_get(f->db, &f->row, &gerr);
            f->head.version = f->row.version;
            snprintf(f->head.hash, sizeof f->head.hash, "%s", f->row.hash);
            ag_metrics_set(f->metrics, AG_M_FLEET_VERSION, f->row.version);
            ag_metrics_count(f->metrics, AG_M_FLEET_APPLIED);
            if (rec.version % AG_FLEET_COMPACT_EVERY == 0)
                compact(f);
        }
        return AG_OK;
    }
    return ag_error_set(err, AG_ESTORE, NULL,
                        "the fleet is busy: other instances' changes came "
                        "first %d times: nothing was changed",
                        AG_FLEET_TRIES);
}

int ag_fleet_change(struct ag_fleet *f, const struct ag_fleet_change *c,
                    struct ag_fleet_result *res, struct ag_error *err)
{
    memset(res, 0, sizeof *res);
    memset(err, 0, sizeof *err);
    pthread_mutex_lock(&f->lock);
    int rc = record(f, c, given_ops, (void *)c, res, err);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* What POST /admin/policies/apply makes of the set as it stands. */
struct apply_ctx {
    const json_t *records; /* the file's policies */
    bool prune;
    json_t *diff; /* the last one made */
};

static json_t *apply_ops(struct ag_fleet *f, void *arg, struct ag_error *err)
{
    struct apply_ctx *a = arg;
    json_t *exp = NULL;
    if (ag_db_fleet_export_policies(f->db, &exp, err))
        return NULL;
    json_t *now = json_object(), *want = json_object(), *ops = json_array();
    bool ok = now && want && ops;
    size_t i;
    const json_t *item;
    json_array_foreach(json_object_get(exp, "policies"), i, item)
    {
        const json_t *p = json_object_get(item, "policy");
        ok = ok && !json_object_set(now, string_of(p, "name"), (json_t *)p);
    }
    json_decref(exp);
    if (ok && !a->prune)
        ok = !json_object_update(want, now);
    json_array_foreach(a->records, i, item)
    {
        ok = ok &&
             !json_object_set(want, string_of(item, "name"), (json_t *)item);
    }
    bool same = false;
    json_decref(a->diff);
    a->diff = ok ? ag_fleet_policies_diff(now, want, &same) : NULL;
    ok = a->diff != NULL;
    const json_t *name;
    json_array_foreach(json_object_get(a->diff, "removed"), i, name)
    {
        ok = ok && !json_array_append_new(ops, json_pack("{s:s, s:O}", "op",
                                                         "policy_delete",
                                                         "name", name));
    }
    const char *parts[] = {"added", "changed"};
    for (int k = 0; k < 2; k++)
        json_array_foreach(json_object_get(a->diff, parts[k]), i, item)
        {
            const char *n = json_is_string(item) ? json_string_value(item)
                                                 : string_of(item, "name");
            ok = ok && !json_array_append_new(
                           ops, json_pack("{s:s, s:O}", "op", "policy_put",
                                          "policy", json_object_get(want, n)));
        }
    json_decref(now);
    json_decref(want);
    if (!ok) {
        json_decref(ops);
        ag_error_fill(err, AG_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    return ops;
}

int ag_fleet_apply_policies(struct ag_fleet *f, const json_t *records,
                            bool prune, bool dry_run, const char *actor,
                            json_t **diff, struct ag_fleet_result *res,
                            struct ag_error *err)
{
    memset(res, 0, sizeof *res);
    memset(err, 0, sizeof *err);
    struct apply_ctx a = {records, prune, NULL};
    struct ag_fleet_change c = {.actor = actor, .dry_run = dry_run};
    pthread_mutex_lock(&f->lock);
    int rc = record(f, &c, apply_ops, &a, res, err);
    /* Nothing to change is no change: it takes no version. */
    if (rc == AG_OK && !dry_run)
        res->version = res->version ? res->version : f->row.version;
    pthread_mutex_unlock(&f->lock);
    *diff = a.diff;
    if (rc) {
        json_decref(*diff);
        *diff = NULL;
    }
    return rc;
}

void ag_fleet_note(struct ag_fleet *f, const char *actor, const char *action,
                   const char *name, const json_t *after)
{
    json_t *ops = json_pack("[{s:s, s:s, s:s, s:O?}]", "op", "audit", "action",
                            action, "name", name, "after", after);
    struct ag_error err = {0};
    struct ag_fleet_result res;
    int rc = AG_ENOMEM;
    pthread_mutex_lock(&f->lock);
    struct ag_fleet_change c = {.ops = ops, .actor = actor};
    if (ops && f->on)
        rc = record(f, &c, given_ops, &c, &res, &err);
    /* Never refused for the fleet's sake: here alone, then. */
    if (rc && rc != AG_EUNKNOWN)
        rc = ag_db_audit_note(f->db, action, name, actor, NULL, after, &err);
    pthread_mutex_unlock(&f->lock);
    json_decref(ops);
    if (rc && rc != AG_EUNKNOWN)
        ag_log(AG_LOG_ERROR, "admin_db", "%s not audited: %s", action, err.msg);
}

int ag_fleet_export(struct ag_fleet *f, json_t **out, struct ag_error *err)
{
    pthread_mutex_lock(&f->lock);
    int rc = ag_db_fleet_export(f->db, out, err);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int ag_fleet_init(struct ag_fleet *f, const json_t *policies, bool apply,
                  json_t **diff, struct ag_error *err)
{
    *diff = NULL;
    pthread_mutex_lock(&f->lock);
    struct ag_redis_fleet_head head;
    json_t *fleet = NULL, *exp = NULL, *mine = NULL;
    int rc = ag_db_fleet_get(f->db, &f->row, err);
    if (!rc && ag_redis_fleet_head(f->redis, f->name, &head))
        rc = ag_error_set(err, AG_ESTORE, NULL,
                          "the fleet cannot be reached (Redis did not "
                          "answer)");
    char replaces[AG_FLEET_EPOCH_HEX + 1];
    struct ag_error ferr;
    if (!rc && head.exists)
        fleet = ag_fleet__fleet_set(f, &head, replaces, &ferr);
    /* A history that cannot be read is what init replaces: it shows as
     * an empty set. */
    if (!rc && !fleet)
        fleet = ag_fleet_set_new();
    if (!rc)
        rc = ag_db_fleet_export(f->db, &exp, err);
    if (!rc && !(mine = ag_fleet_set_from_snapshot(exp)))
        rc = ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    if (!rc && policies) {
        json_t *by_name = json_object();
        size_t i;
        const json_t *p;
        json_array_foreach(policies, i, p)
        {
            if (by_name)
                json_object_set(by_name,
                                json_string_value(json_object_get(p, "name")),
                                (json_t *)p);
        }
        if (!by_name || json_object_set_new(mine, "policies", by_name))
            rc = ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    bool same = false;
    if (!rc && !(*diff = ag_fleet_set_diff(fleet, mine, &same)))
        rc = ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    if (!rc && apply)
        rc = ag_fleet__found(f, &head, "init", policies, false, err);
    json_decref(fleet);
    json_decref(exp);
    json_decref(mine);
    pthread_mutex_unlock(&f->lock);
    return rc;
}
