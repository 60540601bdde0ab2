/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_webhook.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_parse.h"

struct entry {
    char *body;
    size_t len;
    uint64_t at_ms;
    uint64_t seq;
};

/* A ring of max entries. */
struct ag_webhook_queue {
    struct entry *e;
    size_t max;
    size_t head; /* index of the oldest */
    size_t n;
    uint64_t next_seq;
};

struct ag_webhook_queue *ag_webhook_queue_new(size_t max)
{
    struct ag_webhook_queue *q = calloc(1, sizeof *q);
    if (!q || max == 0 || !(q->e = calloc(max, sizeof *q->e))) {
        free(q);
        return NULL;
    }
    q->max = max;
    return q;
}

void ag_webhook_queue_free(struct ag_webhook_queue *q)
{
    if (!q)
        return;
    while (q->n)
        ag_webhook_queue_pop(q);
    free(q->e);
    free(q);
}

void ag_webhook_queue_pop(struct ag_webhook_queue *q)
{
    if (!q->n)
        return;
    free(q->e[q->head].body);
    q->e[q->head].body = NULL;
    q->head = (q->head + 1) % q->max;
    q->n--;
}

int ag_webhook_queue_push(struct ag_webhook_queue *q, const char *body,
                          size_t len, uint64_t at_ms)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return AG_ENOMEM;
    memcpy(copy, body, len);
    copy[len] = '\0';
    int dropped = 0;
    if (q->n == q->max) {
        ag_webhook_queue_pop(q);
        dropped = 1;
    }
    struct entry *e = &q->e[(q->head + q->n) % q->max];
    *e = (struct entry){copy, len, at_ms, q->next_seq++};
    q->n++;
    return dropped;
}

bool ag_webhook_queue_peek(const struct ag_webhook_queue *q, const char **body,
                           size_t *len, uint64_t *at_ms, uint64_t *seq)
{
    if (!q->n)
        return false;
    const struct entry *e = &q->e[q->head];
    *body = e->body;
    *len = e->len;
    *at_ms = e->at_ms;
    *seq = e->seq;
    return true;
}

size_t ag_webhook_queue_len(const struct ag_webhook_queue *q)
{
    return q->n;
}

void ag_webhook_sign(const unsigned char *key, size_t key_len, uint64_t t,
                     const char *body, size_t len,
                     char out[AG_WEBHOOK_SIGNATURE_MAX + 1])
{
    char stamp[24];
    int n = snprintf(stamp, sizeof stamp, "%llu.", (unsigned long long)t);
    crypto_auth_hmacsha256_state st;
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_init(&st, key, key_len);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)stamp,
                                  (unsigned long long)n);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)body, len);
    crypto_auth_hmacsha256_final(&st, mac);
    int h = snprintf(out, AG_WEBHOOK_SIGNATURE_MAX + 1,
                     "t=%llu,v1=", (unsigned long long)t);
    sodium_bin2hex(out + h, AG_WEBHOOK_SIGNATURE_MAX + 1 - (size_t)h, mac,
                   sizeof mac);
    sodium_memzero(&st, sizeof st);
}

/* Whether part of h is present (libcurl says so without an error). */
static bool has_part(CURLU *h, CURLUPart part)
{
    char *v = NULL;
    bool has = curl_url_get(h, part, &v, 0) == CURLUE_OK && v && *v;
    if (v)
        sodium_memzero(v, strlen(v));
    curl_free(v);
    return has;
}

int ag_webhook_url_check(const char *url, const char *flag, bool *credential,
                         struct ag_error *err)
{
    *credential = false;
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return ag_error_set(err, AG_EINVAL, flag,
                                "--%s: the URL holds a control character",
                                flag);
    /* libcurl reads "http:///x" as the host x: a missing host is refused
     * here, before it can guess one. */
    size_t scheme = strncasecmp(url, "http://", 7) == 0    ? 7
                    : strncasecmp(url, "https://", 8) == 0 ? 8
                                                           : 0;
    if (!scheme || url[scheme] == '/')
        return ag_error_set(err, AG_EINVAL, flag,
                            "--%s: must be an http:// or https:// URL with "
                            "a host",
                            flag);
    CURLU *h = curl_url();
    if (!h)
        return ag_error_set(err, AG_ENOMEM, flag, "--%s: out of memory", flag);
    int rc = AG_OK;
    char *host = NULL, *port = NULL;
    CURLUcode c = curl_url_set(h, CURLUPART_URL, url, 0);
    int portno = 0;
    if (c != CURLUE_OK)
        /* libcurl's reason names what is wrong, never the text. */
        rc = ag_error_set(err, AG_EINVAL, flag, "--%s: not a usable URL (%s)",
                          flag, curl_url_strerror(c));
    else if (curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host ||
             !*host)
        rc = ag_error_set(err, AG_EINVAL, flag, "--%s: the URL has no host",
                          flag);
    else if (curl_url_get(h, CURLUPART_PORT, &port, 0) == CURLUE_OK &&
             ag_parse_port(port, &portno))
        rc = ag_error_set(err, AG_EINVAL, flag,
                          "--%s: the URL's port must be 1 to 65535", flag);
    else
        *credential =
            has_part(h, CURLUPART_USER) || has_part(h, CURLUPART_PASSWORD);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(h);
    return rc;
}

uint64_t ag_webhook_backoff_ms(unsigned failures)
{
    uint64_t ms = AG_WEBHOOK_BACKOFF_MIN_MS;
    for (unsigned i = 1; i < failures && ms < AG_WEBHOOK_BACKOFF_MAX_MS; i++)
        ms *= 2;
    return ms < AG_WEBHOOK_BACKOFF_MAX_MS ? ms : AG_WEBHOOK_BACKOFF_MAX_MS;
}

struct receiver {
    struct ag_webhooks *w;
    unsigned index; /* 1-based, for logs: a URL may hold a credential */
    char url[AG_WEBHOOK_URL_MAX];
    pthread_mutex_t lock; /* guards q and the gates */
    /* Its drop lines, once per AG_WEBHOOK_LOG_EVERY_MS at most each;
     * under its lock. */
    struct ag_log_gate full_gate, aged_gate;
    pthread_cond_t wake; /* a push, or the stop */
    struct ag_webhook_queue *q;
    CURL *curl;
    pthread_t thread;
    bool started;
};

struct ag_webhooks {
    struct receiver r[AG_WEBHOOKS_MAX];
    size_t n;
    /* The HMAC key, or its SHA-256 if longer than HMAC-SHA256's block,
     * which is what HMAC itself does with such a key. */
    unsigned char key[64];
    size_t key_len;
    uint64_t max_age_ms;
    struct ag_metrics *metrics;
    char *(*render)(const char *body, size_t len);
    atomic_bool stopping;
    /* Events queued over every receiver, and the gauge set to it under
     * the same lock: set from two threads without it, an older count
     * could land last and stay. */
    pthread_mutex_t queued_lock;
    int64_t queued;
};

static void queued_add(struct ag_webhooks *w, int64_t delta)
{
    pthread_mutex_lock(&w->queued_lock);
    w->queued += delta;
    ag_metrics_set(w->metrics, AG_M_WEBHOOK_QUEUED, w->queued);
    pthread_mutex_unlock(&w->queued_lock);
}

static void count_dropped(struct ag_webhooks *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ag_metrics_count(w->metrics, AG_M_WEBHOOK_DROPPED);
}

void ag_webhooks_push(struct ag_webhooks *w, const char *body, size_t len)
{
    if (!w)
        return;
    uint64_t now = ag_clock_mono_ms();
    for (size_t i = 0; i < w->n; i++) {
        struct receiver *r = &w->r[i];
        unsigned long held = 0;
        bool log = false;
        pthread_mutex_lock(&r->lock);
        int dropped = ag_webhook_queue_push(r->q, body, len, now);
        if (dropped > 0)
            log = ag_log_gate_open(&r->full_gate, now, AG_WEBHOOK_LOG_EVERY_MS,
                                   &held);
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        if (dropped < 0) {
            count_dropped(w, 1);
            continue;
        }
        if (dropped) {
            /* The counter counts each; the log says so once in a while,
             * as a flood fills the queue with every push. */
            count_dropped(w, 1);
            if (log)
                ag_log(AG_LOG_WARN, "webhook_queue_full",
                       "receiver %u: oldest event dropped (and %lu more "
                       "since the last line)",
                       r->index, held);
        } else {
            queued_add(w, 1);
        }
    }
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* Abandons a POST in flight once the service stops. */
static int progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
                    curl_off_t un)
{
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return atomic_load(&((struct ag_webhooks *)arg)->stopping) ? 1 : 0;
}

/* One POST of body: true if the receiver answered 2xx. */
static bool post(struct receiver *r, const char *body, size_t len,
                 unsigned failures)
{
    /* Signed at each try with the time of that try: a receiver refuses a
     * signature older than its tolerance, which a retry after a long
     * outage would otherwise be. */
    char sig[sizeof "X-Abuseguard-Signature: " + AG_WEBHOOK_SIGNATURE_MAX];
    int n = snprintf(sig, sizeof sig, "X-Abuseguard-Signature: ");
    ag_webhook_sign(r->w->key, r->w->key_len, ag_clock_wall_ms() / 1000, body,
                    len, sig + n);
    struct curl_slist *h =
        curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h2 = h ? curl_slist_append(h, sig) : NULL;
    /* No "Expect: 100-continue" round trip for a small body. */
    struct curl_slist *h3 = h2 ? curl_slist_append(h2, "Expect:") : NULL;
    if (!h3) {
        curl_slist_free_all(h2 ? h2 : h);
        return false;
    }
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, h3);
    curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode c = curl_easy_perform(r->curl);
    long status = 0;
    curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h3);
    bool ok = c == CURLE_OK && status >= 200 && status < 300;
    /* The first failure of a run is logged, and then one in ten: a
     * receiver down for an hour is not thousands of lines. */
    if (!ok && !atomic_load(&r->w->stopping) && failures % 10 == 0) {
        if (c != CURLE_OK)
            ag_log(AG_LOG_WARN, "webhook_failed", "receiver %u: %s", r->index,
                   curl_easy_strerror(c));
        else
            ag_log(AG_LOG_WARN, "webhook_failed", "receiver %u: status %ld",
                   r->index, status);
    }
    return ok;
}

/* Waits ms on r's lock (held), or less if the service stops. */
static void wait_ms(struct receiver *r, uint64_t ms)
{
    struct timespec until = ag_clock_deadline(ms);
    while (!atomic_load(&r->w->stopping) &&
           pthread_cond_timedwait(&r->wake, &r->lock, &until) == 0)
        ;
}

/* The delivery thread of one receiver: the head of its queue, POSTed
 * until the receiver takes it or it is too old, then the next. */
static void *deliver(void *arg)
{
    struct receiver *r = arg;
    struct ag_webhooks *w = r->w;
    unsigned failures = 0;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!atomic_load(&w->stopping) && !ag_webhook_queue_len(r->q))
            pthread_cond_wait(&r->wake, &r->lock);
        if (atomic_load(&w->stopping))
            break;
        const char *body = NULL;
        size_t len = 0;
        uint64_t at = 0, seq = 0;
        if (!ag_webhook_queue_peek(r->q, &body, &len, &at, &seq))
            continue;
        uint64_t now = ag_clock_mono_ms();
        if (now - at > w->max_age_ms) {
            ag_webhook_queue_pop(r->q);
            queued_add(w, -1);
            count_dropped(w, 1);
            unsigned long held = 0;
            if (ag_log_gate_open(&r->aged_gate, now, AG_WEBHOOK_LOG_EVERY_MS,
                                 &held)) {
                /* Written without the lock, which pushes wait for. */
                pthread_mutex_unlock(&r->lock);
                ag_log(AG_LOG_WARN, "webhook_dropped",
                       "receiver %u: an event older than "
                       "--webhook-max-age-s was dropped (and %lu more since "
                       "the last line)",
                       r->index, held);
                pthread_mutex_lock(&r->lock);
            }
            continue;
        }
        /* Sent from a copy without the lock, so that pushes go on; the
         * head may be dropped meanwhile by a full queue (seq tells). */
        char *copy = malloc(len + 1);
        if (!copy) {
            wait_ms(r, AG_WEBHOOK_BACKOFF_MIN_MS);
            continue;
        }
        memcpy(copy, body, len + 1);
        pthread_mutex_unlock(&r->lock);
        if (w->render) {
            char *sent = w->render(copy, len);
            free(copy);
            copy = sent;
            len = sent ? strlen(sent) : 0;
        }
        bool ok = copy && post(r, copy, len, failures);
        free(copy);
        pthread_mutex_lock(&r->lock);
        if (ok) {
            uint64_t now_seq;
            if (ag_webhook_queue_peek(r->q, &body, &len, &at, &now_seq) &&
                now_seq == seq) {
                ag_webhook_queue_pop(r->q);
                queued_add(w, -1);
            }
            ag_metrics_count(w->metrics, AG_M_WEBHOOK_DELIVERED);
            if (failures)
                ag_log(AG_LOG_INFO, "webhook_recovered",
                       "receiver %u answers again after %u failure(s)",
                       r->index, failures);
            failures = 0;
            continue;
        }
        failures++;
        wait_ms(r, ag_webhook_backoff_ms(failures));
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static int receiver_init(struct ag_webhooks *w, struct receiver *r,
                         const char *url, size_t queue_max)
{
    r->w = w;
    snprintf(r->url, sizeof r->url, "%s", url);
    pthread_mutex_init(&r->lock, NULL);
    ag_clock_cond_init(&r->wake);
    r->q = ag_webhook_queue_new(queue_max);
    r->curl = curl_easy_init();
    if (!r->q || !r->curl)
        return AG_ENOMEM;
    CURL *c = r->curl;
    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)AG_WEBHOOK_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)AG_WEBHOOK_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "abuseguard/" AG_VERSION);
    if (pthread_create(&r->thread, NULL, deliver, r) != 0)
        return AG_ENOMEM;
    r->started = true;
    return AG_OK;
}

static void receiver_free(struct ag_webhooks *w, struct receiver *r)
{
    if (r->started) {
        pthread_mutex_lock(&r->lock);
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    if (r->q) {
        count_dropped(w, ag_webhook_queue_len(r->q));
        ag_webhook_queue_free(r->q);
    }
    curl_easy_cleanup(r->curl);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
}

int ag_webhooks_new(const struct ag_webhook_opts *o, struct ag_webhooks **out)
{
    *out = NULL;
    if (o->n == 0 || o->n > AG_WEBHOOKS_MAX || !o->key || !o->key_len)
        return AG_EINVAL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return AG_ENOMEM;
    struct ag_webhooks *w = calloc(1, sizeof *w);
    if (!w) {
        curl_global_cleanup();
        return AG_ENOMEM;
    }
    /* HMAC-SHA256 hashes a key longer than its block (64 bytes) first;
     * libsodium's init does the same, so a copy of at most 64 bytes keeps
     * the signature of any key length. */
    if (o->key_len > sizeof w->key) {
        crypto_hash_sha256(w->key, o->key, o->key_len);
        w->key_len = crypto_hash_sha256_BYTES;
    } else {
        memcpy(w->key, o->key, o->key_len);
        w->key_len = o->key_len;
    }
    w->max_age_ms = (uint64_t)o->max_age_s * 1000u;
    w->metrics = o->metrics;
    w->render = o->render;
    atomic_init(&w->stopping, false);
    pthread_mutex_init(&w->queued_lock, NULL);
    size_t qmax = o->queue_max ? o->queue_max : AG_WEBHOOK_QUEUE_MAX;
    int rc = AG_OK;
    for (size_t i = 0; i < o->n && !rc; i++) {
        w->r[i].index = (unsigned)i + 1;
        w->n = i + 1;
        rc = receiver_init(w, &w->r[i], o->urls[i], qmax);
    }
    if (rc) {
        ag_webhooks_free(w);
        return rc;
    }
    *out = w;
    return AG_OK;
}

void ag_webhooks_free(struct ag_webhooks *w)
{
    if (!w)
        return;
    atomic_store(&w->stopping, true);
    for (size_t i = 0; i < w->n; i++)
        receiver_free(w, &w->r[i]);
    ag_metrics_set(w->metrics, AG_M_WEBHOOK_QUEUED, 0);
    pthread_mutex_destroy(&w->queued_lock);
    sodium_memzero(w->key, sizeof w->key);
    free(w);
    curl_global_cleanup();
}
