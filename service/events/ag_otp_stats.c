/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_otp_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_redis_reply.h"

#define SEAL_CONTEXT "abuseguard otp-stats label v1"
/* A sealed label: nonce, MAC and the label (at most a phone's length). */
#define LABEL_MAX (AG_PHONE_MAX + 1)
#define SEALED_BYTES                                                           \
    (crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + LABEL_MAX)
#define SEALED_HEX (2 * SEALED_BYTES + 1)

/* A grouping is named after the key kind it groups by. */
static const enum ag_key_kind by_kinds[] = {
    [AG_OTP_BY_COUNTRY] = AG_KEY_COUNTRY,
    [AG_OTP_BY_PHONE_PREFIX] = AG_KEY_PHONE_PREFIX};

void ag_otp_stats_init(struct ag_otp_stats *st, const struct ag_hasher *h)
{
    st->hasher = h;
    static const char context[] = SEAL_CONTEXT;
    crypto_generichash(st->seal_key, sizeof st->seal_key,
                       (const unsigned char *)context, sizeof context - 1,
                       h->key, h->keylen);
}

void ag_otp_stats_wipe(struct ag_otp_stats *st)
{
    sodium_memzero(st->seal_key, sizeof st->seal_key);
}

static const char *by_name(enum ag_otp_by by)
{
    return ag_key_kind_name(by_kinds[by]);
}

int ag_otp_by_parse(const char *s)
{
    for (int i = 0; i < 2; i++)
        if (s && strcmp(s, by_name((enum ag_otp_by)i)) == 0)
            return i;
    return -1;
}

static void hour_key(enum ag_otp_by by, uint64_t hour, char out[64])
{
    snprintf(out, 64, "ag::conv:%s:%" PRIu64, by_name(by), hour);
}

/* label sealed: hex of nonce, then secretbox of the label with its NUL. */
static void seal(const struct ag_otp_stats *st, const char *label,
                 char out[SEALED_HEX])
{
    unsigned char box[SEALED_BYTES];
    size_t len = strlen(label) + 1;
    randombytes_buf(box, crypto_secretbox_NONCEBYTES);
    crypto_secretbox_easy(box + crypto_secretbox_NONCEBYTES,
                          (const unsigned char *)label, len, box, st->seal_key);
    sodium_bin2hex(out, SEALED_HEX, box,
                   crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES +
                       len);
}

/* The label inside sealed hex, into out; false if it does not open. */
static bool unseal(const struct ag_otp_stats *st, const char *hex,
                   char out[LABEL_MAX])
{
    unsigned char box[SEALED_BYTES];
    size_t n = 0;
    if (sodium_hex2bin(box, sizeof box, hex, strlen(hex), NULL, &n, NULL) ||
        n <= crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES)
        return false;
    size_t len = n - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES;
    if (len > LABEL_MAX ||
        crypto_secretbox_open_easy(
            (unsigned char *)out, box + crypto_secretbox_NONCEBYTES,
            n - crypto_secretbox_NONCEBYTES, box, st->seal_key))
        return false;
    return out[len - 1] == '\0';
}

void ag_otp_stats_record(const struct ag_otp_stats *st, struct ag_store *store,
                         const char *country, const char *phone_prefix,
                         bool verified, uint64_t now_s)
{
    uint64_t hour = now_s / AG_OTP_STATS_HOUR_S;
    const char *labels[] = {
        [AG_OTP_BY_COUNTRY] = country, [AG_OTP_BY_PHONE_PREFIX] = phone_prefix};
    for (int by = 0; by < 2; by++) {
        const char *label = labels[by];
        if (!label || !label[0] || strlen(label) >= LABEL_MAX)
            continue;
        char key[64], digest[AG_DIGEST_HEX + 1], field[AG_DIGEST_HEX + 3],
            name_field[AG_DIGEST_HEX + 3], sealed[SEALED_HEX];
        hour_key((enum ag_otp_by)by, hour, key);
        ag_identity_digest(st->hasher, by_kinds[by], label, digest);
        snprintf(field, sizeof field, "%s:%c", digest, verified ? 'v' : 's');
        snprintf(name_field, sizeof name_field, "%s:n", digest);
        seal(st, label, sealed);
        ag_store_tally(store, key, field, name_field, sealed,
                       AG_OTP_STATS_KEEP_S);
    }
}

struct group {
    char digest[AG_DIGEST_HEX + 1];
    char label[LABEL_MAX];
    uint64_t sent, verified;
};

static int by_sends(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->sent != y->sent)
        return x->sent < y->sent ? 1 : -1;
    return strcmp(x->label, y->label);
}

/* The group of digest in gs (n of them), added if new and there is room;
 * NULL when full. */
static struct group *group_of(struct group *gs, size_t *n, const char *digest)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(gs[i].digest, digest) == 0)
            return &gs[i];
    if (*n == AG_OTP_STATS_GROUPS_MAX)
        return NULL;
    struct group *g = &gs[(*n)++];
    memset(g, 0, sizeof *g);
    memcpy(g->digest, digest, AG_DIGEST_HEX);
    return g;
}

/* Adds one hour's hash (field, value pairs) to gs. */
static void add_hour(const struct ag_otp_stats *st, const redisReply *r,
                     struct group *gs, size_t *n)
{
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *f = r->element[i], *v = r->element[i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            f->len != AG_DIGEST_HEX + 2 || f->str[AG_DIGEST_HEX] != ':')
            continue;
        char digest[AG_DIGEST_HEX + 1];
        memcpy(digest, f->str, AG_DIGEST_HEX);
        digest[AG_DIGEST_HEX] = '\0';
        struct group *g = group_of(gs, n, digest);
        if (!g)
            continue;
        char kind = f->str[AG_DIGEST_HEX + 1];
        if (kind == 'n') {
            if (!g->label[0] && !unseal(st, v->str, g->label))
                g->label[0] = '\0';
        } else {
            uint64_t count = strtoull(v->str, NULL, 10);
            if (kind == 's')
                g->sent += count;
            else if (kind == 'v')
                g->verified += count;
        }
    }
}

int ag_otp_stats_report(const struct ag_otp_stats *st, struct ag_store *store,
                        enum ag_otp_by by, uint32_t window_s, uint64_t now_s,
                        json_t **out)
{
    uint64_t hours = (window_s + AG_OTP_STATS_HOUR_S - 1) / AG_OTP_STATS_HOUR_S;
    uint64_t now_h = now_s / AG_OTP_STATS_HOUR_S;
    struct group *gs = calloc(AG_OTP_STATS_GROUPS_MAX, sizeof *gs);
    if (!gs)
        return AG_ENOMEM;
    size_t n = 0;
    int rc = AG_OK;
    for (uint64_t h = now_h - hours + 1; h <= now_h && !rc; h++) {
        char key[64];
        hour_key(by, h, key);
        void *reply = NULL;
        rc = ag_store_read_hash(store, key, &reply);
        if (rc == AG_OK)
            add_hour(st, reply, gs, &n);
        ag_redis_reply_free(reply);
    }
    if (rc) {
        free(gs);
        return rc == AG_EINVAL ? AG_ESTORE : rc;
    }
    qsort(gs, n, sizeof *gs, by_sends);
    json_t *groups = json_array();
    for (size_t i = 0; groups && i < n; i++) {
        json_t *ratio =
            gs[i].sent ? json_real((double)gs[i].verified / (double)gs[i].sent)
                       : json_null();
        /* A label that did not open (a changed secret) shows as its
         * digest: the figures stay, the name is lost. */
        json_array_append_new(
            groups, json_pack("{s:s, s:I, s:I, s:o}", "group",
                              gs[i].label[0] ? gs[i].label : gs[i].digest,
                              "sent", (json_int_t)gs[i].sent, "verified",
                              (json_int_t)gs[i].verified, "ratio", ratio));
    }
    free(gs);
    *out = groups ? json_pack("{s:s, s:I, s:o}", "by", by_name(by), "window_s",
                              (json_int_t)(hours * AG_OTP_STATS_HOUR_S),
                              "groups", groups)
                  : NULL;
    return *out ? AG_OK : AG_ENOMEM;
}
