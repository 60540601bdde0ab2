/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_otp_stats: a count names its group only by digest, with the label
 * sealed; the report adds the hours up, opens the labels, orders by sends
 * and shows a label it cannot open as its digest. A fake store records
 * the tallies and serves them back as HGETALL replies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_otp_stats.h"
#include "ag_redis_reply.h"

#define HOUR 490000ull /* an hour number, far from 0 */

/* The fake store: every tally as (key, field, name_field, name), and the
 * hashes they add up to, per key. */
struct tally {
    char key[64], field[64], name_field[64], name[256];
};

struct fake {
    struct ag_store base;
    struct tally t[64];
    size_t n;
};

static void fake_tally(struct ag_store *s, const char *key, const char *field,
                       const char *name_field, const char *name, unsigned ttl)
{
    struct fake *f = (struct fake *)s;
    assert_true(ttl >= AG_OTP_STATS_WINDOW_MAX_S);
    assert_true(f->n < 64);
    struct tally *t = &f->t[f->n++];
    snprintf(t->key, sizeof t->key, "%s", key);
    snprintf(t->field, sizeof t->field, "%s", field);
    snprintf(t->name_field, sizeof t->name_field, "%s", name_field);
    snprintf(t->name, sizeof t->name, "%s", name);
}

/* HGETALL key as Redis would answer it: each field's count summed, each
 * name field its last value. */
static int fake_read(struct ag_store *s, const char *key, void **reply)
{
    struct fake *f = (struct fake *)s;
    char resp[8192];
    size_t len = 0, pairs = 0;
    char body[8000] = "";
    size_t blen = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->t[i].key, key) != 0)
            continue;
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen = seen || (strcmp(f->t[j].key, key) == 0 &&
                            strcmp(f->t[j].field, f->t[i].field) == 0);
        if (!seen) {
            unsigned count = 0;
            for (size_t j = 0; j < f->n; j++)
                count += strcmp(f->t[j].key, key) == 0 &&
                         strcmp(f->t[j].field, f->t[i].field) == 0;
            char n[16];
            snprintf(n, sizeof n, "%u", count);
            blen += (size_t)snprintf(
                body + blen, sizeof body - blen, "$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                strlen(f->t[i].field), f->t[i].field, strlen(n), n);
            pairs++;
        }
        blen += (size_t)snprintf(body + blen, sizeof body - blen,
                                 "$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                                 strlen(f->t[i].name_field), f->t[i].name_field,
                                 strlen(f->t[i].name), f->t[i].name);
        pairs++;
    }
    len = (size_t)snprintf(resp, sizeof resp, "*%zu\r\n%s", 2 * pairs, body);
    redisReplyObjectFunctions fn = ag_redis_reply_functions;
    redisReader *r = redisReaderCreateWithFunctions(&fn);
    assert_int_equal(redisReaderFeed(r, resp, len), REDIS_OK);
    assert_int_equal(redisReaderGetReply(r, reply), REDIS_OK);
    redisReaderFree(r);
    return AG_OK;
}

static const struct ag_store_ops fake_ops = {
    .name = "fake", .tally = fake_tally, .read_hash = fake_read};

static struct ag_hasher hasher;

static int setup(void **state)
{
    (void)state;
    if (sodium_init() < 0)
        return -1;
    unsigned char secret[32];
    memset(secret, 9, sizeof secret);
    ag_hasher_init(&hasher, secret, sizeof secret);
    return 0;
}

static void a_count_names_its_group_only_by_digest(void **state)
{
    (void)state;
    struct fake f = {.base = {.ops = &fake_ops}};
    struct ag_otp_stats st;
    ag_otp_stats_init(&st, &hasher);
    ag_otp_stats_record(&st, &f.base, "+44", "+4479111", false,
                        HOUR * 3600 + 5);
    assert_int_equal(f.n, 2);
    char want[64];
    snprintf(want, sizeof want, "ag::conv:country:%llu", HOUR);
    assert_string_equal(f.t[0].key, want);
    char digest[AG_DIGEST_HEX + 1], field[64];
    ag_identity_digest(&hasher, AG_KEY_COUNTRY, "+44", digest);
    snprintf(field, sizeof field, "%s:s", digest);
    assert_string_equal(f.t[0].field, field);
    for (size_t i = 0; i < f.n; i++) {
        assert_null(strstr(f.t[i].key, "44"));
        assert_null(strstr(f.t[i].name, "+44"));
        assert_null(strstr(f.t[i].name, "4479111"));
    }
    /* A fresh nonce each time: the same label seals differently. */
    ag_otp_stats_record(&st, &f.base, "+44", NULL, true, HOUR * 3600 + 6);
    assert_int_equal(f.n, 3);
    assert_string_not_equal(f.t[0].name, f.t[2].name);
    ag_otp_stats_wipe(&st);
}

static void the_report_adds_hours_opens_labels_and_orders_by_sends(void **state)
{
    (void)state;
    struct fake f = {.base = {.ops = &fake_ops}};
    struct ag_otp_stats st;
    ag_otp_stats_init(&st, &hasher);
    uint64_t now = (HOUR + 1) * 3600 + 10;
    /* +48: 1 sent last hour, 2 this hour, 1 verified; +44: 4 sent. */
    ag_otp_stats_record(&st, &f.base, "+48", "+4860010", false, HOUR * 3600);
    for (int i = 0; i < 2; i++)
        ag_otp_stats_record(&st, &f.base, "+48", "+4860010", false, now);
    ag_otp_stats_record(&st, &f.base, "+48", "+4860010", true, now);
    for (int i = 0; i < 4; i++)
        ag_otp_stats_record(&st, &f.base, "+44", "+4479111", false, now);
    json_t *out = NULL;
    assert_int_equal(
        ag_otp_stats_report(&st, &f.base, AG_OTP_BY_COUNTRY, 7200, now, &out),
        AG_OK);
    json_t *g = json_object_get(out, "groups");
    assert_int_equal(json_array_size(g), 2);
    json_t *first = json_array_get(g, 0), *second = json_array_get(g, 1);
    assert_string_equal(json_string_value(json_object_get(first, "group")),
                        "+44");
    assert_int_equal(json_integer_value(json_object_get(first, "sent")), 4);
    assert_true(json_is_real(json_object_get(first, "ratio")));
    assert_string_equal(json_string_value(json_object_get(second, "group")),
                        "+48");
    assert_int_equal(json_integer_value(json_object_get(second, "sent")), 3);
    assert_int_equal(json_integer_value(json_object_get(second, "verified")),
                     1);
    json_decref(out);
    /* One hour only: last hour's +48 send drops out. */
    assert_int_equal(
        ag_otp_stats_report(&st, &f.base, AG_OTP_BY_COUNTRY, 3600, now, &out),
        AG_OK);
    second = json_array_get(json_object_get(out, "groups"), 1);
    assert_int_equal(json_integer_value(json_object_get(second, "sent")), 2);
    assert_int_equal(json_integer_value(json_object_get(out, "window_s")),
                     3600);
    json_decref(out);
    ag_otp_stats_wipe(&st);
}

static void a_label_sealed_with_another_secret_shows_as_its_digest(void **state)
{
    (void)state;
    struct fake f = {.base = {.ops = &fake_ops}};
    struct ag_hasher other;
    unsigned char secret[32];
    memset(secret, 5, sizeof secret);
    ag_hasher_init(&other, secret, sizeof secret);
    struct ag_otp_stats sealer, reader;
    ag_otp_stats_init(&sealer, &other);
    ag_otp_stats_init(&reader, &hasher);
    ag_otp_stats_record(&sealer, &f.base, "+44", NULL, false, HOUR * 3600);
    json_t *out = NULL;
    assert_int_equal(ag_otp_stats_report(&reader, &f.base, AG_OTP_BY_COUNTRY,
                                         3600, HOUR * 3600, &out),
                     AG_OK);
    const char *group = json_string_value(json_object_get(
        json_array_get(json_object_get(out, "groups"), 0), "group"));
    char digest[AG_DIGEST_HEX + 1];
    ag_identity_digest(&other, AG_KEY_COUNTRY, "+44", digest);
    assert_string_equal(group, digest);
    json_decref(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_count_names_its_group_only_by_digest),
        cmocka_unit_test(
            the_report_adds_hours_opens_labels_and_orders_by_sends),
        cmocka_unit_test(
            a_label_sealed_with_another_secret_shows_as_its_digest),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
