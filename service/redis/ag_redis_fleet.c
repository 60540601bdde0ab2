/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fleet's history in Redis (ag_redis_fleet.h): lua/fleet.lua's ops,
 * their arguments written and their answers read.
 */
#include "ag_redis_fleet.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_error.h"
#include "ag_log.h"
#include "ag_redis_direct.h"
#include "ag_redis_reply.h"
#include "ag_redis_script.h"

#define SCRIPT_PIECE "fleet.lua"
#define NKEYS 4
#define KEY_MAX (sizeof "ag::fleet:{}:members" + AG_FLEET_NAME_MAX)
#define CHANNEL_MAX (sizeof AG_REDIS_FLEET_CHANNEL + AG_FLEET_NAME_MAX)
#define NUM_TEXT 24
#define EXTRA_MAX 14 /* an op's own arguments at most */
#define BEAT_MAX 4096
#define READ_MAX 1000
#define NUM_MAX 1000000000000000ll /* lua/fleet.lua takes 15 digits */

/* Runs op with its extra arguments (n of them, lens their lengths; a NULL
 * lens: each is NUL-terminated): AG_OK with *reply, which is no error
 * reply; else as the header says. */
static int call(struct ag_redis_direct *redis, const char *name, const char *op,
                int n, const char *const *extra, const size_t *lens,
                redisReply **reply)
{
    if (!ag_fleet_name_valid(name) || n > EXTRA_MAX)
        return AG_EINVAL;
    static const char *const suffix[NKEYS] = {"head", "log", "base", "members"};
    char keys[NKEYS][KEY_MAX], channel[CHANNEL_MAX];
    const char *argv[NKEYS + 2 + EXTRA_MAX];
    size_t len[NKEYS + 2 + EXTRA_MAX];
    for (int i = 0; i < NKEYS; i++) {
        snprintf(keys[i], sizeof keys[i], "ag::fleet:{%s}:%s", name, suffix[i]);
        argv[i] = keys[i];
    }
    snprintf(channel, sizeof channel, AG_REDIS_FLEET_CHANNEL "%s", name);
    argv[NKEYS] = op;
    argv[NKEYS + 1] = channel;
    for (int i = 0; i < n; i++)
        argv[NKEYS + 2 + i] = extra[i];
    for (int i = 0; i < NKEYS + 2 + n; i++)
        len[i] = i >= NKEYS + 2 && lens ? lens[i - NKEYS - 2] : strlen(argv[i]);
    redisReply *r = NULL;
    int rc = ag_redis_script_run_direct(redis, SCRIPT_PIECE, NKEYS,
                                        NKEYS + 2 + n, argv, len, (void **)&r);
    if (rc)
        return rc;
    if (r->type == REDIS_REPLY_ERROR) {
        ag_log(AG_LOG_WARN, "redis_error", "fleet %s: %s", op, r->str);
        ag_redis_reply_free(r);
        return AG_ESTORE;
    }
    *reply = r;
    return AG_OK;
}

/* An answer of another shape (another version's script?): a failure the
 * caller handles as Redis down. */
static int odd(redisReply *r, const char *op)
{
    ag_log(AG_LOG_WARN, "redis_error", "fleet %s: an answer of another shape",
           op);
    ag_redis_reply_free(r);
    return AG_ESTORE;
}

static bool integer_at(const redisReply *r, size_t i, int64_t *out)
{
    if (i >= r->elements || r->element[i]->type != REDIS_REPLY_INTEGER)
        return false;
    *out = r->element[i]->integer;
    return true;
}

/* Copies string i of r into out (size bytes) if it fits. */
static bool string_at(const redisReply *r, size_t i, char *out, size_t size)
{
    if (i >= r->elements || r->element[i]->type != REDIS_REPLY_STRING ||
        r->element[i]->len >= size)
        return false;
    memcpy(out, r->element[i]->str, r->element[i]->len);
    out[r->element[i]->len] = '\0';
    return true;
}

int ag_redis_fleet_head(struct ag_redis_direct *redis, const char *name,
                        struct ag_redis_fleet_head *out)
{
    redisReply *r;
    int rc = call(redis, name, "head", 0, NULL, NULL, &r);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    int64_t exists, seed, left, now;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 9 ||
        !integer_at(r, 0, &exists) ||
        !string_at(r, 1, out->epoch, sizeof out->epoch) ||
        !integer_at(r, 2, &out->version) ||
        !string_at(r, 3, out->hash, sizeof out->hash) ||
        !integer_at(r, 4, &seed) || !integer_at(r, 5, &left) ||
        !integer_at(r, 6, &out->base_version) ||
        !integer_at(r, 7, &out->first_version) || !integer_at(r, 8, &now) ||
        left < 0 || now < 0)
        return odd(r, "head");
    out->exists = exists == 1;
    out->seed = seed == 1;
    out->settle_left_ms = (uint64_t)left;
    out->now_ms = (uint64_t)now;
    ag_redis_reply_free(r);
    return AG_OK;
}

/* Is rec's place one lua/fleet.lua can keep? */
static bool record_ok(const struct ag_redis_fleet_record *rec, bool base)
{
    return rec->version > 0 && rec->version < NUM_MAX &&
           ag_fleet_hex_valid(rec->epoch, AG_FLEET_EPOCH_HEX) &&
           ag_fleet_hex_valid(rec->hash, AG_FLEET_HASH_HEX) &&
           (base || ag_fleet_hex_valid(rec->prev, AG_FLEET_HASH_HEX)) &&
           rec->blob;
}

/* The status of a compare-and-set's answer {done, why, settle_ms}. */
static int cas_answer(redisReply *r, const char *op, uint64_t *settle_ms)
{
    int64_t done, left;
    char why[16];
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        !integer_at(r, 0, &done) || !string_at(r, 1, why, sizeof why) ||
        !integer_at(r, 2, &left) || left < 0)
        return odd(r, op);
    ag_redis_reply_free(r);
    if (done == 1)
        return AG_OK;
    if (strcmp(why, "settling") == 0) {
        if (settle_ms)
            *settle_ms = (uint64_t)left;
        return AG_EPENDING;
    }
    return AG_ECONFLICT;
}

int ag_redis_fleet_append(struct ag_redis_direct *redis, const char *name,
                          const struct ag_redis_fleet_record *rec, bool seed,
                          uint64_t *settle_ms)
{
    if (!record_ok(rec, false))
        return AG_EINVAL;
    char v[NUM_TEXT], s[NUM_TEXT];
    snprintf(v, sizeof v, "%" PRId64, rec->version);
    snprintf(s, sizeof s, "%u", rec->schema);
    const char *extra[] = {rec->epoch, v,         rec->prev,       rec->hash,
                           s,          rec->blob, seed ? "1" : "0"};
    size_t lens[7];
    for (int i = 0; i < 7; i++)
        lens[i] = i == 5 ? rec->blob_len : strlen(extra[i]);
    redisReply *r;
    int rc = call(redis, name, "append", 7, extra, lens, &r);
    return rc ? rc : cas_answer(r, "append", settle_ms);
}

/* found and restore: the head as seen, then the record's place. */
static int rebegin(struct ag_redis_direct *redis, const char *name,
                   const char *op, const struct ag_redis_fleet_seen *seen,
                   const struct ag_redis_fleet_record *rec, bool seed,
                   uint64_t settle_ms)
{
    bool found = strcmp(op, "found") == 0;
    if (!record_ok(rec, !found) ||
        (seen->exists && (!seen->epoch || !seen->hash)))
        return AG_EINVAL;
    char sv[NUM_TEXT], v[NUM_TEXT], s[NUM_TEXT], ms[NUM_TEXT];
    snprintf(sv, sizeof sv, "%" PRId64, seen->exists ? seen->version : 0);
    snprintf(v, sizeof v, "%" PRId64, rec->version);
    snprintf(s, sizeof s, "%u", rec->schema);
    snprintf(ms, sizeof ms, "%" PRIu64,
             settle_ms < 3600000 ? settle_ms : 3600000);
    const char *extra[] = {seen->exists ? "1" : "0",
                           seen->exists ? seen->epoch : "",
                           sv,
                           seen->exists ? seen->hash : "",
                           rec->epoch,
                           v,
                           found ? rec->prev : "",
                           rec->hash,
                           s,
                           rec->blob,
                           seed ? "1" : "0",
                           ms};
    size_t lens[12];
    for (int i = 0; i < 12; i++)
        lens[i] = i == 9 ? rec->blob_len : strlen(extra[i]);
    redisReply *r;
    int rc = call(redis, name, op, 12, extra, lens, &r);
    return rc ? rc : cas_answer(r, op, NULL);
}

int ag_redis_fleet_found(struct ag_redis_direct *redis, const char *name,
                         const struct ag_redis_fleet_seen *seen,
                         const struct ag_redis_fleet_record *rec, bool seed)
{
    return rebegin(redis, name, "found", seen, rec, seed, 0);
}

int ag_redis_fleet_restore(struct ag_redis_direct *redis, const char *name,
                           const struct ag_redis_fleet_seen *seen,
                           const struct ag_redis_fleet_record *rec, bool seed,
                           uint64_t settle_ms)
{
    return rebegin(redis, name, "restore", seen, rec, seed, settle_ms);
}

int ag_redis_fleet_compact(struct ag_redis_direct *redis, const char *name,
                           const struct ag_redis_fleet_record *rec,
                           int64_t keep)
{
    if (!record_ok(rec, true) || keep < 0 || keep >= NUM_MAX)
        return AG_EINVAL;
    char v[NUM_TEXT], s[NUM_TEXT], k[NUM_TEXT];
    snprintf(v, sizeof v, "%" PRId64, rec->version);
    snprintf(s, sizeof s, "%u", rec->schema);
    snprintf(k, sizeof k, "%" PRId64, keep);
    const char *extra[] = {rec->epoch, v, rec->hash, s, rec->blob, k};
    size_t lens[6];
    for (int i = 0; i < 6; i++)
        lens[i] = i == 4 ? rec->blob_len : strlen(extra[i]);
    redisReply *r;
    int rc = call(redis, name, "compact", 6, extra, lens, &r);
    return rc ? rc : cas_answer(r, "compact", NULL);
}

void ag_redis_fleet_records_free(struct ag_redis_fleet_records *rs)
{
    if (!rs)
        return;
    free(rs->r);
    ag_redis_reply_free(rs->reply);
    memset(rs, 0, sizeof *rs);
}

/* Parses decimal text s (len bytes) of 1 to 15 digits; -1 if not one. */
static int64_t decimal(const char *s, size_t len)
{
    if (len == 0 || len > 15)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Fills rec from the six strings v, e, p, h, s, b at f (p may be absent:
 * a base's). A field of the wrong shape marks it bad. */
static void record_from(redisReply **f, bool has_prev,
                        struct ag_redis_fleet_record *rec)
{
    memset(rec, 0, sizeof *rec);
    redisReply *part[6];
    size_t k = 0;
    for (size_t i = 0; i < 6; i++)
        part[i] = i == 2 && !has_prev ? NULL : f[k++];
    for (size_t i = 0; i < 6; i++)
        if (part[i] && part[i]->type != REDIS_REPLY_STRING) {
            rec->bad = true;
            return;
        }
    rec->version = decimal(part[0]->str, part[0]->len);
    int64_t schema = decimal(part[4]->str, part[4]->len);
    rec->schema = schema > 0 && schema < 1000000 ? (unsigned)schema : 0;
    rec->blob = part[5]->str;
    rec->blob_len = part[5]->len;
    rec->bad = rec->version < 1 || !rec->schema ||
               part[1]->len != AG_FLEET_EPOCH_HEX ||
               part[3]->len != AG_FLEET_HASH_HEX ||
               (part[2] && part[2]->len != AG_FLEET_HASH_HEX);
    if (rec->bad)
        return;
    memcpy(rec->epoch, part[1]->str, AG_FLEET_EPOCH_HEX);
    memcpy(rec->hash, part[3]->str, AG_FLEET_HASH_HEX);
    if (part[2])
        memcpy(rec->prev, part[2]->str, AG_FLEET_HASH_HEX);
    rec->bad = !ag_fleet_hex_valid(rec->epoch, AG_FLEET_EPOCH_HEX) ||
               !ag_fleet_hex_valid(rec->hash, AG_FLEET_HASH_HEX) ||
               (part[2] && !ag_fleet_hex_valid(rec->prev, AG_FLEET_HASH_HEX));
}

int ag_redis_fleet_read(struct ag_redis_direct *redis, const char *name,
                        int64_t after, unsigned count,
                        struct ag_redis_fleet_records *out)
{
    memset(out, 0, sizeof *out);
    if (after < 0 || after >= NUM_MAX || count < 1 || count > READ_MAX)
        return AG_EINVAL;
    char a[NUM_TEXT], c[NUM_TEXT];
    snprintf(a, sizeof a, "%" PRId64, after);
    snprintf(c, sizeof c, "%u", count);
    const char *extra[] = {a, c};
    redisReply *r;
    int rc = call(redis, name, "read", 2, extra, NULL, &r);
    if (rc)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        (r->elements - 2) % 6 != 0 || !integer_at(r, 0, &out->first_version) ||
        !integer_at(r, 1, &out->base_version))
        return odd(r, "read");
    out->n = (r->elements - 2) / 6;
    out->r = calloc(out->n + 1, sizeof *out->r);
    if (!out->r) {
        ag_redis_reply_free(r);
        return AG_ESTORE;
    }
    for (size_t i = 0; i < out->n; i++)
        record_from(r->element + 2 + 6 * i, true, &out->r[i]);
    out->reply = r;
    return AG_OK;
}

int ag_redis_fleet_base(struct ag_redis_direct *redis, const char *name,
                        struct ag_redis_fleet_records *out)
{
    memset(out, 0, sizeof *out);
    redisReply *r;
    int rc = call(redis, name, "base", 0, NULL, NULL, &r);
    if (rc)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || (r->elements != 0 && r->elements != 5))
        return odd(r, "base");
    if (r->elements == 5) {
        out->r = calloc(1, sizeof *out->r);
        if (!out->r) {
            ag_redis_reply_free(r);
            return AG_ESTORE;
        }
        /* HMGET's order: e, v, h, s, b; record_from takes v, e, h, s, b. */
        redisReply *f[5] = {r->element[1], r->element[0], r->element[2],
                            r->element[3], r->element[4]};
        record_from(f, false, &out->r[0]);
        out->n = 1;
        out->base_version = out->r[0].version;
    }
    out->reply = r;
    return AG_OK;
}

int ag_redis_fleet_beat(struct ag_redis_direct *redis, const char *name,
                        const char *instance, const char *json,
                        uint64_t keep_ms, uint64_t *now_ms)
{
    if (!ag_fleet_hex_valid(instance, AG_FLEET_INSTANCE_HEX) ||
        strlen(json) > BEAT_MAX || keep_ms >= (uint64_t)NUM_MAX)
        return AG_EINVAL;
    char k[NUM_TEXT];
    snprintf(k, sizeof k, "%" PRIu64, keep_ms);
    const char *extra[] = {instance, json, k};
    redisReply *r;
    int rc = call(redis, name, "beat", 3, extra, NULL, &r);
    if (rc)
        return rc;
    int64_t now;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 ||
        !integer_at(r, 0, &now) || now < 0)
        return odd(r, "beat");
    *now_ms = (uint64_t)now;
    ag_redis_reply_free(r);
    return AG_OK;
}

int ag_redis_fleet_members(struct ag_redis_direct *redis, const char *name,
                           struct ag_redis_fleet_members *out)
{
    memset(out, 0, sizeof *out);
    redisReply *r;
    int rc = call(redis, name, "members", 0, NULL, NULL, &r);
    if (rc)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->elements % 2 != 1 || r->element[0]->type != REDIS_REPLY_STRING)
        return odd(r, "members");
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING)
            return odd(r, "members");
    int64_t now = decimal(r->element[0]->str, r->element[0]->len);
    out->now_ms = now > 0 ? (uint64_t)now : 0;
    size_t n = (r->elements - 1) / 2;
    out->m = calloc(n + 1, sizeof *out->m);
    if (!out->m) {
        ag_redis_reply_free(r);
        return AG_ESTORE;
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *id = r->element[1 + 2 * i];
        const redisReply *v = r->element[2 + 2 * i];
        const char *sp = memchr(v->str, ' ', v->len);
        if (!sp)
            continue;
        int64_t at = decimal(v->str, (size_t)(sp - v->str));
        out->m[out->n++] = (struct ag_redis_fleet_member){
            .id = id->str, .json = sp + 1, .at_ms = at > 0 ? (uint64_t)at : 0};
    }
    out->reply = r;
    return AG_OK;
}

void ag_redis_fleet_members_free(struct ag_redis_fleet_members *ms)
{
    if (!ms)
        return;
    free(ms->m);
    ag_redis_reply_free(ms->reply);
    memset(ms, 0, sizeof *ms);
}
