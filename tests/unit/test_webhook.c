/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_webhook without a receiver: the signature of the time and the body
 * against OpenSSL's HMAC-SHA256, the backoff schedule, the queue's order and
 * bound, the options refused at start; then, against a port where nothing
 * listens, the drops' counter, gauge and log lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_metrics.h"
#include "ag_webhook.h"

/* The signature OpenSSL's HMAC gives for "<t>.<body>" under key, in the
 * header's form: a second implementation, so that neither the scheme nor
 * the MAC is taken from the code under test. */
static void openssl_signature(const unsigned char *key, size_t key_len,
                              const char *t, const char *body, char *out,
                              size_t size)
{
    char msg[512];
    int n = snprintf(msg, sizeof msg, "%s.%s", t, body);
    assert_true(n > 0 && (size_t)n < sizeof msg);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned mac_len = 0;
    assert_non_null(HMAC(EVP_sha256(), key, (int)key_len,
                         (const unsigned char *)msg, (size_t)n, mac, &mac_len));
    assert_int_equal(mac_len, 32);
    int o = snprintf(out, size, "t=%s,v1=", t);
    for (unsigned i = 0; i < mac_len; i++)
        o += snprintf(out + o, size - (size_t)o, "%02x", mac[i]);
}

static void signature_signs_the_time_with_the_body_as_openssl_does(void **state)
{
    (void)state;
    char sig[AG_WEBHOOK_SIGNATURE_MAX + 1], want[256];
    const unsigned char key[] = "0123456789abcdef0123456789abcdef";
    const char *body = "{\"type\":\"lockout\",\"id\":\"1767225600000-0\"}";
    ag_webhook_sign(key, 32, 1767225600u, body, strlen(body), sig);
    openssl_signature(key, 32, "1767225600", body, want, sizeof want);
    assert_string_equal(sig, want);
    /* A key longer than HMAC-SHA256's block is hashed first, by both. */
    unsigned char long_key[131];
    memset(long_key, 0xaa, sizeof long_key);
    ag_webhook_sign(long_key, sizeof long_key, 1767225600u, body, strlen(body),
                    sig);
    openssl_signature(long_key, sizeof long_key, "1767225600", body, want,
                      sizeof want);
    assert_string_equal(sig, want);
    /* The widest time fits the buffer. */
    ag_webhook_sign(key, 32, UINT64_MAX, body, strlen(body), sig);
    openssl_signature(key, 32, "18446744073709551615", body, want, sizeof want);
    assert_string_equal(sig, want);
    assert_int_equal(strlen(sig), AG_WEBHOOK_SIGNATURE_MAX);
}

static void signature_changes_with_the_time_the_body_and_the_key(void **state)
{
    (void)state;
    char a[AG_WEBHOOK_SIGNATURE_MAX + 1], b[AG_WEBHOOK_SIGNATURE_MAX + 1];
    const unsigned char key[] = "0123456789abcdef0123456789abcdef";
    ag_webhook_sign(key, 32, 1767225600u, "{\"type\":\"reset\"}", 16, a);
    /* A replay stamped with a later time needs a new MAC. */
    ag_webhook_sign(key, 32, 1767225601u, "{\"type\":\"reset\"}", 16, b);
    assert_string_not_equal(strchr(a, ','), strchr(b, ','));
    ag_webhook_sign(key, 32, 1767225600u, "{\"type\":\"reset\"} ", 17, b);
    assert_string_not_equal(a, b);
    ag_webhook_sign((const unsigned char *)"1123456789abcdef0123456789abcdef",
                    32, 1767225600u, "{\"type\":\"reset\"}", 16, b);
    assert_string_not_equal(a, b);
    /* The dot between the time and the body is signed: without it, t=1
     * with "2x" and t=12 with "x" would both sign "12x". */
    ag_webhook_sign(key, 32, 1, "2x", 2, a);
    ag_webhook_sign(key, 32, 12, "x", 1, b);
    assert_string_not_equal(strchr(a, ','), strchr(b, ','));
}

static void backoff_doubles_from_half_a_second_up_to_thirty(void **state)
{
    (void)state;
    assert_int_equal(ag_webhook_backoff_ms(1), AG_WEBHOOK_BACKOFF_MIN_MS);
    assert_int_equal(ag_webhook_backoff_ms(2), 1000);
    assert_int_equal(ag_webhook_backoff_ms(3), 2000);
    assert_int_equal(ag_webhook_backoff_ms(6), 16000);
    assert_int_equal(ag_webhook_backoff_ms(7), AG_WEBHOOK_BACKOFF_MAX_MS);
    assert_int_equal(ag_webhook_backoff_ms(1000), AG_WEBHOOK_BACKOFF_MAX_MS);
}

static void queue_keeps_order_and_drops_the_oldest_when_full(void **state)
{
    (void)state;
    struct ag_webhook_queue *q = ag_webhook_queue_new(3);
    assert_non_null(q);
    const char *body;
    size_t len;
    uint64_t at, seq, first_seq;
    assert_false(ag_webhook_queue_peek(q, &body, &len, &at, &seq));
    assert_int_equal(ag_webhook_queue_push(q, "a", 1, 10), 0);
    assert_int_equal(ag_webhook_queue_push(q, "bb", 2, 20), 0);
    assert_int_equal(ag_webhook_queue_push(q, "ccc", 3, 30), 0);
    assert_true(ag_webhook_queue_peek(q, &body, &len, &at, &first_seq));
    assert_string_equal(body, "a");
    /* Full: the fourth pushes the oldest out. */
    assert_int_equal(ag_webhook_queue_push(q, "dddd", 4, 40), 1);
    assert_int_equal(ag_webhook_queue_len(q), 3);
    const char *want[] = {"bb", "ccc", "dddd"};
    for (int i = 0; i < 3; i++) {
        assert_true(ag_webhook_queue_peek(q, &body, &len, &at, &seq));
        assert_string_equal(body, want[i]);
        assert_int_equal(len, strlen(want[i]));
        assert_int_equal(at, 20u + 10u * (unsigned)i);
        /* The head's number tells a sender its entry was pushed out. */
        assert_int_equal(seq, first_seq + 1 + (unsigned)i);
        ag_webhook_queue_pop(q);
    }
    assert_int_equal(ag_webhook_queue_len(q), 0);
    ag_webhook_queue_pop(q); /* empty: nothing */
    assert_int_equal(ag_webhook_queue_push(q, "e", 1, 50), 0);
    ag_webhook_queue_free(q); /* frees what is still queued */
    assert_null(ag_webhook_queue_new(0));
}

static void webhooks_refuse_no_receiver_or_no_key(void **state)
{
    (void)state;
    const char *urls[] = {"http://127.0.0.1:9/x"};
    const unsigned char key[] = "0123456789abcdef0123456789abcdef";
    struct ag_webhooks *w = (struct ag_webhooks *)1;
    struct ag_webhook_opts o = {
        .urls = urls, .n = 0, .key = key, .key_len = 32, .max_age_s = 1};
    assert_int_equal(ag_webhooks_new(&o, &w), AG_EINVAL);
    assert_null(w);
    o.n = AG_WEBHOOKS_MAX + 1;
    assert_int_equal(ag_webhooks_new(&o, &w), AG_EINVAL);
    o.n = 1;
    o.key_len = 0;
    assert_int_equal(ag_webhooks_new(&o, &w), AG_EINVAL);
    /* A receiver that is never reached still starts and stops cleanly. */
    o.key_len = 32;
    assert_int_equal(ag_webhooks_new(&o, &w), AG_OK);
    ag_webhooks_push(w, "{}", 2);
    ag_webhooks_free(w);
    ag_webhooks_push(NULL, "{}", 2);
    ag_webhooks_free(NULL);
}

/* Nothing listens on the discard port of loopback here: every POST is a
 * refused connection, so nothing leaves a queue but by age or room. */
static const char *const nowhere[] = {"http://127.0.0.1:9/hook"};
static const unsigned char hook_key[] = "0123456789abcdef0123456789abcdef";

static long long metric(struct ag_metrics *m, const char *name)
{
    struct ag_buf b;
    ag_buf_init(&b, 1 << 20);
    assert_int_equal(ag_metrics_render(m, &b), AG_OK);
    char want[128];
    snprintf(want, sizeof want, "\n%s ", name);
    const char *at = strstr(b.p, want);
    assert_non_null(at);
    long long n = atoll(at + strlen(want));
    ag_buf_free(&b);
    return n;
}

/* stderr (the log) into a file while a test runs. */
struct captured {
    FILE *f;
    int saved;
};

static void capture(struct captured *c)
{
    fflush(stderr);
    c->f = tmpfile();
    assert_non_null(c->f);
    c->saved = dup(STDERR_FILENO);
    assert_true(dup2(fileno(c->f), STDERR_FILENO) >= 0);
}

/* Ends the capture: how many of its lines name event. */
static int lines_of(struct captured *c, const char *event)
{
    fflush(stderr);
    assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
    close(c->saved);
    rewind(c->f);
    char want[64], line[1024];
    snprintf(want, sizeof want, "\"event\":\"%s\"", event);
    int n = 0;
    while (fgets(line, sizeof line, c->f))
        n += strstr(line, want) != NULL;
    fclose(c->f);
    return n;
}

static void a_full_queue_logs_once_a_while_and_counts_every_drop(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_webhooks *w;
    struct ag_webhook_opts o = {.urls = nowhere,
                                .n = 1,
                                .key = hook_key,
                                .key_len = 32,
                                .max_age_s = 600,
                                .queue_max = 2,
                                .metrics = m};
    struct captured c;
    capture(&c);
    assert_int_equal(ag_webhooks_new(&o, &w), AG_OK);
    for (int i = 0; i < 50; i++)
        ag_webhooks_push(w, "{}", 2);
    assert_int_equal(metric(m, "abuseguard_webhook_dropped_total"), 48);
    assert_int_equal(metric(m, "abuseguard_webhook_queue_depth"), 2);
    ag_webhooks_free(w);
    assert_int_equal(lines_of(&c, "webhook_queue_full"), 1);
    ag_metrics_free(m);
}

static void aged_events_are_dropped_with_one_line_not_one_each(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_webhooks *w;
    struct ag_webhook_opts o = {.urls = nowhere,
                                .n = 1,
                                .key = hook_key,
                                .key_len = 32,
                                .max_age_s = 1,
                                .metrics = m};
    struct captured c;
    capture(&c);
    assert_int_equal(ag_webhooks_new(&o, &w), AG_OK);
    for (int i = 0; i < 30; i++)
        ag_webhooks_push(w, "{}", 2);
    /* Past the age after a retry or two: all go in one pass. */
    for (int i = 0; i < 100; i++) {
        if (metric(m, "abuseguard_webhook_dropped_total") == 30)
            break;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    long long dropped = metric(m, "abuseguard_webhook_dropped_total");
    long long depth = metric(m, "abuseguard_webhook_queue_depth");
    ag_webhooks_free(w);
    int lines = lines_of(&c, "webhook_dropped");
    assert_int_equal(dropped, 30);
    assert_int_equal(depth, 0);
    assert_int_equal(lines, 1);
    ag_metrics_free(m);
}

static void *pusher(void *arg)
{
    for (int i = 0; i < 2000; i++)
        ag_webhooks_push(arg, "{}", 2);
    return NULL;
}

static void
the_depth_gauge_ends_at_the_depth_under_concurrent_pushes(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_webhooks *w;
    struct ag_webhook_opts o = {.urls = nowhere,
                                .n = 1,
                                .key = hook_key,
                                .key_len = 32,
                                .max_age_s = 600,
                                .metrics = m};
    assert_int_equal(ag_webhooks_new(&o, &w), AG_OK);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, pusher, w), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(metric(m, "abuseguard_webhook_queue_depth"), 8000);
    ag_webhooks_free(w);
    assert_int_equal(metric(m, "abuseguard_webhook_queue_depth"), 0);
    ag_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            signature_signs_the_time_with_the_body_as_openssl_does),
        cmocka_unit_test(signature_changes_with_the_time_the_body_and_the_key),
        cmocka_unit_test(backoff_doubles_from_half_a_second_up_to_thirty),
        cmocka_unit_test(queue_keeps_order_and_drops_the_oldest_when_full),
        cmocka_unit_test(webhooks_refuse_no_receiver_or_no_key),
        cmocka_unit_test(a_full_queue_logs_once_a_while_and_counts_every_drop),
        cmocka_unit_test(aged_events_are_dropped_with_one_line_not_one_each),
        cmocka_unit_test(
            the_depth_gauge_ends_at_the_depth_under_concurrent_pushes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
