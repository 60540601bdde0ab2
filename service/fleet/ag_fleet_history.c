/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fleet's history as a whole (ag_fleet_impl.h): a record opened, a
 * snapshot of this database's set made, a history read from its start
 * into a set held in memory, and a new history begun.
 */
#include "ag_fleet_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_fleet_set.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_reload.h"

#define READ_COUNT 100

json_t *ag_fleet__snapshot_body(struct ag_fleet *f, const char *reason,
                                const json_t *policies, int64_t version,
                                struct ag_error *err)
{
    json_t *op = NULL;
    if (ag_db_fleet_export(f->db, &op, err))
        return NULL;
    bool bad = json_object_set_new(op, "op", json_string("snapshot")) ||
               json_object_set_new(op, "reason", json_string(reason));
    if (!bad && policies) {
        json_t *arr = json_array();
        size_t i;
        const json_t *p;
        json_array_foreach(policies, i, p)
        {
            if (!arr || json_array_append_new(
                            arr, json_pack("{s:I, s:O}", "version",
                                           (json_int_t)version, "policy", p)))
                bad = true;
        }
        bad = bad || json_object_set_new(op, "policies", arr);
    }
    json_t *body =
        bad ? NULL : ag_fleet__body(f, "fleet", json_pack("[o]", op));
    if (bad)
        json_decref(op);
    if (body &&
        (json_object_set_new(body, "seed", json_boolean(f->row.pristine)) ||
         (f->row.replaces[0] &&
          json_object_set_new(body, "replaces",
                              json_string(f->row.replaces))))) {
        json_decref(body);
        body = NULL;
    }
    if (!body)
        ag_error_fill(err, AG_ENOMEM, NULL, "out of memory");
    return body;
}

/* The start of head's history: its base, or its log's first record, in
 * *rs; *base says which. */
static int read_start(struct ag_fleet *f, const struct ag_redis_fleet_head *h,
                      struct ag_redis_fleet_records *rs, bool *base,
                      struct ag_error *err)
{
    *base = h->base_version > 0;
    int rc = *base
                 ? ag_redis_fleet_base(f->redis, f->name, rs)
                 : ag_redis_fleet_read(
                       f->redis, f->name,
                       h->first_version > 0 ? h->first_version - 1 : 0, 1, rs);
    if (rc)
        return ag_error_set(err, AG_ESTORE, NULL, "Redis did not answer");
    if (rs->n == 0) {
        ag_redis_fleet_records_free(rs);
        return ag_error_set(err, AG_EINVAL, NULL,
                            "the fleet's history has no start in Redis");
    }
    return AG_OK;
}

/* Adds the log's records after version *v (hash prev) to set, to the
 * head's version. */
static int replay(struct ag_fleet *f, const struct ag_redis_fleet_head *h,
                  json_t *set, int64_t *v, char prev[AG_FLEET_HASH_HEX + 1],
                  struct ag_error *err)
{
    while (*v < h->version) {
        struct ag_redis_fleet_records rs;
        if (ag_redis_fleet_read(f->redis, f->name, *v, READ_COUNT, &rs))
            return ag_error_set(err, AG_ESTORE, NULL, "Redis did not answer");
        int rc = rs.n ? AG_OK
                      : ag_error_set(err, AG_EINVAL, NULL,
                                     "the fleet's log ends at %lld before "
                                     "its head",
                                     (long long)*v);
        for (size_t i = 0; !rc && i < rs.n && *v < h->version; i++) {
            const struct ag_redis_fleet_record *r = &rs.r[i];
            json_t *body = NULL;
            char hash[AG_FLEET_HASH_HEX + 1];
            if (r->version != *v + 1 || strcmp(r->prev, prev) != 0 ||
                strcmp(r->epoch, h->epoch) != 0 ||
                ag_fleet__open(f, r, false, &body, hash) != AG_OK ||
                ag_fleet_set_apply(set, body) != AG_OK)
                rc = ag_error_set(err, AG_EINVAL, NULL,
                                  "the fleet's record %lld does not follow "
                                  "or does not open",
                                  (long long)*v + 1);
            json_decref(body);
            if (!rc) {
                ++*v;
                snprintf(prev, AG_FLEET_HASH_HEX + 1, "%s", hash);
            }
        }
        ag_redis_fleet_records_free(&rs);
        if (rc)
            return rc;
    }
    return AG_OK;
}

json_t *ag_fleet__fleet_set(struct ag_fleet *f,
                            const struct ag_redis_fleet_head *h,
                            char replaces[AG_FLEET_EPOCH_HEX + 1],
                            struct ag_error *err)
{
    replaces[0] = '\0';
    struct ag_redis_fleet_records rs;
    bool base;
    if (read_start(f, h, &rs, &base, err))
        return NULL;
    json_t *body = NULL;
    char prev[AG_FLEET_HASH_HEX + 1];
    int64_t v = rs.r[0].version;
    int rc = ag_fleet__open(f, &rs.r[0], base, &body, prev);
    ag_redis_fleet_records_free(&rs);
    json_t *first = json_array_get(json_object_get(body, "ops"), 0);
    const char *op = json_string_value(json_object_get(first, "op"));
    json_t *set = !rc && op && strcmp(op, "snapshot") == 0
                      ? ag_fleet_set_from_snapshot(first)
                      : NULL;
    const char *rep = json_string_value(json_object_get(body, "replaces"));
    if (rep && ag_fleet_hex_valid(rep, AG_FLEET_EPOCH_HEX))
        snprintf(replaces, AG_FLEET_EPOCH_HEX + 1, "%s", rep);
    json_decref(body);
    if (!set) {
        ag_error_fill(err, AG_EINVAL, NULL,
                      "the fleet's first record does not open to a snapshot");
        return NULL;
    }
    if (replay(f, h, set, &v, prev, err)) {
        json_decref(set);
        return NULL;
    }
    return set;
}

/* A history begins with every policy and entry at its first record's
 * version: versions written before (a seed's, an edit made outside the
 * fleet) are this host's alone, and one of them could come back as a
 * later record's and pass an If-Match meant for another content. */
static int stamp_versions(json_t *body, int64_t version)
{
    json_t *op = json_array_get(json_object_get(body, "ops"), 0);
    static const char *const arrays[] = {"policies", "lists"};
    for (size_t a = 0; a < 2; a++) {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(op, arrays[a]), i, item)
        {
            if (json_object_set_new(item, "version",
                                    json_integer((json_int_t)version)))
                return AG_ENOMEM;
        }
    }
    return AG_OK;
}

int ag_fleet__found(struct ag_fleet *f, const struct ag_redis_fleet_head *head,
                    const char *reason, const json_t *policies, bool seed,
                    struct ag_error *err)
{
    int64_t version = head->exists ? head->version + 1 : 1;
    unsigned char raw[AG_FLEET_EPOCH_HEX / 2];
    char epoch[AG_FLEET_EPOCH_HEX + 1];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(epoch, sizeof epoch, raw, sizeof raw);
    const char *prev = head->exists ? head->hash : ag_fleet_genesis_prev;
    json_t *body = ag_fleet__snapshot_body(f, reason, policies, version, err);
    if (!body)
        return err->code;
    json_object_del(body, "replaces");
    if (stamp_versions(body, version) ||
        json_object_set_new(body, "seed", json_boolean(seed)) ||
        (head->exists &&
         json_object_set_new(body, "replaces", json_string(head->epoch)))) {
        json_decref(body);
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    struct ag_redis_fleet_record rec = {0};
    int rc = ag_fleet__seal(f, body, epoch, version, prev, &rec);
    struct ag_db_fleet_change c = {
        .body = body,
        .name = f->name,
        .epoch = epoch,
        .prev = prev,
        .hash = rec.hash,
        .instance = f->row.instance,
        .version = version,
        .adopt = true,
        .seed = seed,
        .replaces = head->exists ? head->epoch : "",
        .dry_run = true,
    };
    enum ag_db_fleet_outcome outcome;
    /* Checked here first: a history this instance could not apply is
     * never begun. */
    if (!rc)
        rc = ag_db_fleet_apply(f->db, &c, &outcome, NULL, err);
    else
        ag_error_fill(err, rc, NULL, "cannot seal the fleet's first record");
    struct ag_redis_fleet_seen seen = {head->exists, head->epoch, head->hash,
                                       head->version};
    if (!rc) {
        rc = ag_redis_fleet_found(f->redis, f->name, &seen, &rec, seed);
        if (rc == AG_ESTORE)
            ag_error_fill(err, rc, NULL, "Redis did not answer");
        else if (rc == AG_ECONFLICT)
            ag_error_fill(err, rc, NULL,
                          "the fleet's head moved: another instance wrote");
    }
    if (!rc) {
        c.dry_run = false;
        rc = ag_db_fleet_apply(f->db, &c, &outcome, NULL, err);
    }
    if (!rc) {
        ag_log(AG_LOG_INFO, "fleet_founded",
               "fleet %s: began history %.8s at version %lld (%s%s)", f->name,
               epoch, (long long)version, reason, seed ? ", a seed" : "");
        ag_metrics_count(f->metrics, AG_M_FLEET_APPLIED);
        ag_reload_kick(f->reload);
        rc = ag_db_fleet_get(f->db, &f->row, err);
        ag_fleet__set_state(f, AG_FLEET__FOLLOWING, "%s", "");
    }
    free((char *)rec.blob);
    json_decref(body);
    return rc;
}
