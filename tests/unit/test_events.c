/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_events without Redis: the JSON shape of each event, its time, the
 * level key and key digest parsers, once-per-lockout in the local table
 * that stands in for Redis, markers cleared by a reset, and the admin
 * read's refusals; then, over a fake store that answers as each test
 * says, the backlog's retries and the level of a block whose level key
 * could not be read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <pthread.h>

#include "ag_error.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_metrics.h"
#include "ag_redis_reply.h"
#include "ag_store.h"
#include "ag_test.h"

#define DIGEST "0123456789abcdef0123456789abcdef"

static json_t *parsed(const struct ag_event *e)
{
    char *text = ag_event_json(e);
    assert_non_null(text);
    json_t *o = json_loads(text, 0, NULL);
    free(text);
    assert_true(json_is_object(o));
    return o;
}

static void lockout_json_carries_what_applies(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_LOCKOUT);
    snprintf(e.id, sizeof e.id, "abcd-1");
    e.time_ms = 1700000000123u;
    snprintf(e.policy, sizeof e.policy, "login.user_ip");
    e.endpoint = AG_EP_LOGIN;
    snprintf(e.key, sizeof e.key, DIGEST);
    snprintf(e.action, sizeof e.action, "deny");
    e.retry_after_s = 900;
    e.level = 2;
    json_t *o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "id")), "abcd-1");
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "lockout");
    assert_string_equal(json_string_value(json_object_get(o, "time")),
                        "2023-11-14T22:13:20.123Z");
    assert_string_equal(json_string_value(json_object_get(o, "endpoint")),
                        "login");
    assert_string_equal(json_string_value(json_object_get(o, "key")), DIGEST);
    assert_int_equal(json_integer_value(json_object_get(o, "retry_after")),
                     900);
    assert_int_equal(json_integer_value(json_object_get(o, "level")), 2);
    assert_int_equal(json_object_size(o), 9);
    json_decref(o);
}

static void breaker_json_has_only_id_type_and_time(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_BREAKER_OPEN);
    json_t *o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "breaker_open");
    assert_int_equal(json_object_size(o), 3);
    json_decref(o);
    ag_event_init(&e, AG_EV_LIST_CHANGED);
    snprintf(e.list, sizeof e.list, "deny");
    snprintf(e.change, sizeof e.change, "add");
    e.entry = 42;
    o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "list")), "deny");
    assert_int_equal(json_integer_value(json_object_get(o, "entry")), 42);
    assert_null(json_object_get(o, "policy"));
    assert_null(json_object_get(o, "retry_after"));
    json_decref(o);
}

static void shield_events_carry_their_figures_and_who_did_it(void **state)
{
    (void)state;
    struct ag_event e;
    ag_event_init(&e, AG_EV_SHIELD_RAISED);
    snprintf(e.id, sizeof e.id, "abcd-2");
    e.time_ms = 1700000000123u;
    snprintf(e.policy, sizeof e.policy, "login.site_failures");
    e.endpoint = AG_EP_LOGIN;
    snprintf(e.action, sizeof e.action, "challenge");
    e.shield = (struct ag_event_shield){
        .rate = 40,
        .current = 512,
        .baseline_milli = 20500,
        .threshold = 102,
        .since_ms = 1700000000000u,
        .until_ms = 1700000600000u,
        .local = false,
        .by_operator = false,
    };
    json_t *o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "shield_raised");
    assert_int_equal(json_integer_value(json_object_get(o, "rate")), 40);
    assert_int_equal(json_integer_value(json_object_get(o, "current")), 512);
    assert_true(json_real_value(json_object_get(o, "baseline")) == 20.5);
    assert_int_equal(json_integer_value(json_object_get(o, "threshold")), 102);
    assert_string_equal(json_string_value(json_object_get(o, "since")),
                        "2023-11-14T22:13:20.000Z");
    assert_string_equal(json_string_value(json_object_get(o, "until")),
                        "2023-11-14T22:23:20.000Z");
    assert_string_equal(json_string_value(json_object_get(o, "source")),
                        "shared");
    assert_true(json_is_false(json_object_get(o, "operator")));
    assert_string_equal(json_string_value(json_object_get(o, "action")),
                        "challenge");
    assert_null(json_object_get(o, "key"));
    /* id, type, time, policy, endpoint, action and the eight figures. */
    assert_int_equal(json_object_size(o), 14);
    json_decref(o);
    e.type = AG_EV_SHIELD_LOWERED;
    e.shield.local = true;
    e.shield.by_operator = true;
    o = parsed(&e);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "shield_lowered");
    assert_string_equal(json_string_value(json_object_get(o, "source")),
                        "local");
    assert_true(json_is_true(json_object_get(o, "operator")));
    json_decref(o);
    /* Another type never carries a shield's figures. */
    e.type = AG_EV_BREAKER_OPEN;
    o = parsed(&e);
    assert_null(json_object_get(o, "rate"));
    assert_null(json_object_get(o, "operator"));
    json_decref(o);
}

static void every_type_has_its_name(void **state)
{
    (void)state;
    const char *want[AG_EV_COUNT] = {
        "lockout",        "block_escalated", "conversion_block",
        "reset",          "policy_changed",  "list_changed",
        "breaker_open",   "breaker_closed",  "shield_raised",
        "shield_lowered",
    };
    for (int t = 0; t < AG_EV_COUNT; t++)
        assert_string_equal(ag_event_type_name((enum ag_event_type)t), want[t]);
    assert_string_equal(ag_event_type_name(AG_EV_COUNT), "unknown");
}

static void level_is_read_from_the_level_key(void **state)
{
    (void)state;
    assert_int_equal(ag_event_level_parse("3 1700000000000000", 18), 3);
    assert_int_equal(ag_event_level_parse("1 5", 3), 1);
    assert_int_equal(ag_event_level_parse("3", 1), 0);
    assert_int_equal(ag_event_level_parse("x 5", 3), 0);
    assert_int_equal(ag_event_level_parse("", 0), 0);
}

static void key_digest_comes_from_plain_and_tagged_keys(void **state)
{
    (void)state;
    char d[AG_DIGEST_HEX + 1];
    ag_event_key_digest("ag:login.user:" DIGEST, d);
    assert_string_equal(d, DIGEST);
    ag_event_key_digest("ag:login.user:{" DIGEST "}", d);
    assert_string_equal(d, DIGEST);
    ag_event_key_digest("ag::probe", d);
    assert_string_equal(d, "");
    ag_event_key_digest("nokey", d);
    assert_string_equal(d, "");
}

/* A one-op plan of p on key digest, and its result. */
static void one_op(struct ag_plan *plan, const struct ag_policy *p,
                   const char *digest, bool shadow)
{
    memset(plan, 0, sizeof *plan);
    plan->kind = AG_PLAN_CHECK;
    plan->n = 1;
    plan->ops[0].policy = p;
    plan->ops[0].shadow = shadow;
    snprintf(plan->ops[0].key, sizeof plan->ops[0].key, "ag:%s:%s", p->name,
             digest);
}

static int64_t lockouts(struct ag_metrics *m)
{
    struct ag_buf b;
    ag_buf_init(&b, 1 << 20);
    assert_int_equal(ag_metrics_render(m, &b), AG_OK);
    const char *at = strstr(b.p, "abuseguard_events_total{type=\"lockout\"} ");
    assert_non_null(at);
    long long n = atoll(strchr(at, '}') + 2);
    ag_buf_free(&b);
    return n;
}

static void without_redis_a_lockout_is_raised_once_per_key(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){.metrics = m}, &ev),
                     AG_OK);
    struct ag_policy p = ag_test_policy(
        "{\"name\":\"t.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60}");
    struct ag_plan plan;
    struct ag_limit_result res = {.allowed = false, .retry_after_ms = 60000};
    one_op(&plan, &p, DIGEST, false);
    for (int i = 0; i < 5; i++)
        ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 1);
    /* Another key is its own lockout. */
    one_op(&plan, &p, "f123456789abcdef0123456789abcdef", false);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 2);
    /* A reset clears the marker: the next denial is a lockout again. */
    ag_events_cleared(ev, &plan);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 3);
    /* Allowed results and shadow policies are no lockout. */
    one_op(&plan, &p, "e123456789abcdef0123456789abcdef", true);
    ag_events_denied(ev, &plan, &res, true);
    res.allowed = true;
    one_op(&plan, &p, "d123456789abcdef0123456789abcdef", false);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 3);
    ag_events_free(ev);
    ag_metrics_free(m);
}

static void a_marker_lapses_with_the_denial(void **state)
{
    (void)state;
    struct ag_metrics *m = ag_metrics_new();
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){.metrics = m}, &ev),
                     AG_OK);
    struct ag_policy p = ag_test_policy(
        "{\"name\":\"t.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60}");
    struct ag_plan plan;
    /* At least a second, whatever the wait. */
    struct ag_limit_result res = {.allowed = false, .retry_after_ms = 1};
    one_op(&plan, &p, DIGEST, false);
    ag_events_denied(ev, &plan, &res, true);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 1);
    struct timespec ts = {1, 100000000};
    nanosleep(&ts, NULL);
    ag_events_denied(ev, &plan, &res, true);
    assert_int_equal(lockouts(m), 2);
    ag_events_free(ev);
    ag_metrics_free(m);
}

static void reading_refuses_a_bad_after_or_limit_and_needs_redis(void **state)
{
    (void)state;
    struct ag_events *ev;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){0}, &ev), AG_OK);
    struct ag_error err;
    json_t *out = NULL;
    const char *bad[] = {"x", "1", "1-", "-1", "1-2-3", "1-x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(ag_events_read(ev, bad[i], 10, &out, &err), AG_EINVAL);
        assert_string_equal(err.field, "after");
    }
    assert_int_equal(ag_events_read(ev, NULL, 0, &out, &err), AG_EINVAL);
    assert_string_equal(err.field, "limit");
    assert_int_equal(
        ag_events_read(ev, "1-0", AG_EVENTS_PAGE_MAX + 1, &out, &err),
        AG_EINVAL);
    assert_int_equal(ag_events_read(ev, "1700000000000-3", 10, &out, &err),
                     AG_ESTORE);
    assert_null(out);
    /* Raised without a store: kept in the backlog, freed with ev. */
    struct ag_event e;
    ag_event_init(&e, AG_EV_RESET);
    ag_events_raise(ev, &e);
    assert_non_null(strchr(e.id, '-'));
    assert_true(e.time_ms > 1700000000000u);
    ag_events_free(ev);
    ag_events_raise(NULL, &e);
    ag_events_free(NULL);
}

/* A store that answers as the test says: a command sent without waiting
 * is held until answer() (a store thread's answer), a waited one is
 * answered at once, its XADD taken or refused as take_xadd says. The
 * events of the XADDs it took are its stream. */
#define HELD_MAX 64
struct held {
    char *argv[8];
    int argc;
    ag_store_reply_fn done;
    void *arg;
};

struct fake {
    struct ag_store base;
    pthread_mutex_t lock;
    struct held held[HELD_MAX];
    size_t n_held;
    char *stream[HELD_MAX];
    size_t n_stream;
    bool take_xadd;
    unsigned refused;       /* waited XADDs refused */
    unsigned xranges;       /* XRANGEs asked */
    bool xadd_after_xrange; /* an XADD came after an XRANGE */
};

static void taken(struct fake *f, const char *json)
{
    assert_true(f->n_stream < HELD_MAX);
    f->stream[f->n_stream++] = strdup(json);
}

static redisReply *new_reply(int type, const char *str)
{
    redisReply *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->type = type;
    if (str) {
        r->str = strdup(str);
        r->len = strlen(str);
    }
    return r;
}

static int fake_command_async(struct ag_store *s, int argc, const char **argv,
                              const size_t *lens, int key_at,
                              ag_store_reply_fn done, void *arg)
{
    (void)lens;
    (void)key_at;
    struct fake *f = (struct fake *)s;
    pthread_mutex_lock(&f->lock);
    assert_true(f->n_held < HELD_MAX && argc <= 8);
    struct held *h = &f->held[f->n_held++];
    h->argc = argc;
    for (int i = 0; i < argc; i++)
        h->argv[i] = strdup(argv[i]);
    h->done = done;
    h->arg = arg;
    pthread_mutex_unlock(&f->lock);
    return AG_OK;
}

static int fake_command(struct ag_store *s, int argc, const char **argv,
                        const size_t *lens, int key_at, void **reply)
{
    (void)argc;
    (void)lens;
    (void)key_at;
    struct fake *f = (struct fake *)s;
    pthread_mutex_lock(&f->lock);
    redisReply *r;
    if (strcmp(argv[0], "XADD") == 0) {
        f->xadd_after_xrange = f->xranges > 0;
        if (f->take_xadd) {
            taken(f, argv[7]);
            r = new_reply(REDIS_REPLY_STRING, "1-1");
        } else {
            f->refused++;
            r = new_reply(REDIS_REPLY_ERROR, "WRONGTYPE not a stream");
        }
    } else {
        assert_string_equal(argv[0], "XRANGE");
        f->xranges++;
        r = new_reply(REDIS_REPLY_ARRAY, NULL);
    }
    pthread_mutex_unlock(&f->lock);
    *reply = r;
    return AG_OK;
}

static const struct ag_store_ops fake_ops = {
    .name = "fake",
    .command_async = fake_command_async,
    .command = fake_command,
};

enum answer { ANSWER_OK, ANSWER_ERROR, ANSWER_TIMEOUT };

/* Answers every held command as how says (a GET with level when it is
 * answered at all); what the answers send is held for the next call. */
static void answer(struct fake *f, enum answer how, const char *level)
{
    pthread_mutex_lock(&f->lock);
    struct held now[HELD_MAX];
    size_t n = f->n_held;
    memcpy(now, f->held, n * sizeof *now);
    f->n_held = 0;
    pthread_mutex_unlock(&f->lock);
    for (size_t i = 0; i < n; i++) {
        struct held *h = &now[i];
        redisReply r = {.type = REDIS_REPLY_STATUS, .str = "OK", .len = 2};
        if (how == ANSWER_ERROR) {
            r = (redisReply){.type = REDIS_REPLY_ERROR,
                             .str = "WRONGTYPE not a stream",
                             .len = 22};
        } else if (strcmp(h->argv[0], "GET") == 0 && how == ANSWER_OK) {
            const char *v = level ? level : "";
            r = (redisReply){
                .type = REDIS_REPLY_STRING, .str = (char *)v, .len = strlen(v)};
        } else if (strcmp(h->argv[0], "XADD") == 0 && how == ANSWER_OK) {
            pthread_mutex_lock(&f->lock);
            taken(f, h->argv[7]);
            pthread_mutex_unlock(&f->lock);
        }
        if (h->done)
            h->done(h->arg, how == ANSWER_TIMEOUT ? AG_ESTORE : AG_OK,
                    how == ANSWER_TIMEOUT ? NULL : &r);
        for (int k = 0; k < h->argc; k++)
            free(h->argv[k]);
    }
}

static size_t stream_len(struct fake *f)
{
    pthread_mutex_lock(&f->lock);
    size_t n = f->n_stream;
    pthread_mutex_unlock(&f->lock);
    return n;
}

static unsigned refused(struct fake *f)
{
    pthread_mutex_lock(&f->lock);
    unsigned n = f->refused;
    pthread_mutex_unlock(&f->lock);
    return n;
}

/* Polls until cond(f) is at least want, for up to ms. */
static bool waits_for(size_t (*cond)(struct fake *), struct fake *f,
                      size_t want, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        if (cond(f) >= want)
            return true;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return cond(f) >= want;
}

static size_t refused_n(struct fake *f)
{
    return refused(f);
}

static void fake_init(struct fake *f)
{
    memset(f, 0, sizeof *f);
    f->base.ops = &fake_ops;
    pthread_mutex_init(&f->lock, NULL);
}

static void fake_free(struct fake *f)
{
    assert_int_equal(f->n_held, 0);
    for (size_t i = 0; i < f->n_stream; i++)
        free(f->stream[i]);
    pthread_mutex_destroy(&f->lock);
}

static void retries_back_off_from_a_fifth_of_a_second_up_to_five(void **state)
{
    (void)state;
    assert_int_equal(ag_events_retry_ms(1), AG_EVENTS_RETRY_MIN_MS);
    assert_int_equal(ag_events_retry_ms(2), 400);
    assert_int_equal(ag_events_retry_ms(5), 3200);
    assert_int_equal(ag_events_retry_ms(6), AG_EVENTS_RETRY_MAX_MS);
    assert_int_equal(ag_events_retry_ms(1000), AG_EVENTS_RETRY_MAX_MS);
}

static struct ag_events *attached(struct fake *f)
{
    struct ag_events *ev;
    fake_init(f);
    assert_int_equal(ag_events_new(&(struct ag_events_opts){0}, &ev), AG_OK);
    ag_events_attach(ev, &f->base);
    return ev;
}

static void raise_reset(struct ag_events *ev)
{
    struct ag_event e;
    ag_event_init(&e, AG_EV_RESET);
    ag_events_raise(ev, &e);
}

static void
an_append_that_failed_once_is_retried_with_no_later_event(void **state)
{
    (void)state;
    const enum answer fails[] = {ANSWER_ERROR, ANSWER_TIMEOUT};
    for (size_t i = 0; i < 2; i++) {
        struct fake f;
        struct ag_events *ev = attached(&f);
        raise_reset(ev);
        answer(&f, fails[i], NULL);
        assert_int_equal(stream_len(&f), 0);
        /* Redis takes appends again; nothing else happens. */
        pthread_mutex_lock(&f.lock);
        f.take_xadd = true;
        pthread_mutex_unlock(&f.lock);
        assert_true(waits_for(stream_len, &f, 1, 3000));
        assert_non_null(strstr(f.stream[0], "\"type\":\"reset\""));
        /* And the backlog is empty again: the next goes at once. */
        raise_reset(ev);
        answer(&f, ANSWER_OK, NULL);
        assert_int_equal(stream_len(&f), 2);
        ag_events_free(ev);
        fake_free(&f);
    }
}

/* Lines of the log (stderr, as the test runs) holding needle, from the
 * capture begun by capture_log. */
static int log_fd = -1;
static FILE *log_file;
static void capture_log(void)
{
    fflush(stderr);
    log_file = tmpfile();
    assert_non_null(log_file);
    log_fd = dup(2);
    assert_true(log_fd >= 0);
    assert_true(dup2(fileno(log_file), 2) >= 0);
}

static int captured_lines(const char *needle)
{
    fflush(stderr);
    assert_true(dup2(log_fd, 2) >= 0);
    close(log_fd);
    rewind(log_file);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, log_file))
        n += strstr(line, needle) != NULL;
    fclose(log_file);
    return n;
}

static void set_take(struct fake *f, bool take)
{
    pthread_mutex_lock(&f->lock);
    f->take_xadd = take;
    pthread_mutex_unlock(&f->lock);
}

/* One events_append_failed line an interval however Redis flaps: each
 * recovery sent the backlog and, before the fix, reopened the gate, so
 * an outage a second long every two seconds logged every time. */
static void a_flapping_redis_gets_one_failure_line_an_interval(void **state)
{
    (void)state;
    struct fake f;
    struct ag_events *ev = attached(&f);
    capture_log();
    for (size_t k = 1; k <= 3; k++) {
        set_take(&f, false);
        raise_reset(ev);
        answer(&f, ANSWER_ERROR, NULL);
        set_take(&f, true);
        assert_true(waits_for(stream_len, &f, k, 3000));
    }
    int lines = captured_lines("\"events_append_failed\"");
    assert_int_equal(stream_len(&f), 3);
    assert_int_equal(lines, 1);
    ag_events_free(ev);
    fake_free(&f);
}

/* An event in the backlog whose retries Redis refused twice, so that the
 * retry thread's next try is 800 ms away; Redis takes appends from now. */
static struct ag_events *backlogged(struct fake *f)
{
    struct ag_events *ev = attached(f);
    raise_reset(ev);
    answer(f, ANSWER_ERROR, NULL);
    assert_true(waits_for(refused_n, f, 2, 3000));
    pthread_mutex_lock(&f->lock);
    f->take_xadd = true;
    pthread_mutex_unlock(&f->lock);
    assert_int_equal(stream_len(f), 0);
    return ev;
}

static void a_read_sends_the_backlog_before_it_reads(void **state)
{
    (void)state;
    struct fake f;
    struct ag_events *ev = backlogged(&f);
    json_t *out = NULL;
    struct ag_error err;
    assert_int_equal(ag_events_read(ev, NULL, 10, &out, &err), AG_OK);
    assert_int_equal(stream_len(&f), 1);
    assert_int_equal(f.xranges, 1);
    assert_false(f.xadd_after_xrange);
    json_decref(out);
    ag_events_free(ev);
    fake_free(&f);
}

static void a_detach_sends_the_backlog_one_last_time(void **state)
{
    (void)state;
    struct fake f;
    struct ag_events *ev = backlogged(&f);
    ag_events_attach(ev, NULL);
    assert_int_equal(stream_len(&f), 1);
    ag_events_free(ev);
    fake_free(&f);
}

static void after_the_largest_stream_id_is_an_empty_page(void **state)
{
    (void)state;
    struct fake f;
    struct ag_events *ev = attached(&f);
    const char *last = "18446744073709551615-18446744073709551615";
    json_t *out = NULL;
    struct ag_error err;
    assert_int_equal(ag_events_read(ev, last, 10, &out, &err), AG_OK);
    assert_int_equal(json_array_size(json_object_get(out, "events")), 0);
    assert_string_equal(json_string_value(json_object_get(out, "next_after")),
                        last);
    /* Its successor would wrap around to the start: nothing was asked. */
    assert_int_equal(f.xranges, 0);
    json_decref(out);
    ag_events_free(ev);
    fake_free(&f);
}

/* The lockout that a denial by p raises once Redis answers its marker's
 * SET and then its level's GET as how (level when answered). */
static json_t *lockout_after_level(enum answer how, const char *level,
                                   size_t *events)
{
    struct fake f;
    struct ag_events *ev = attached(&f);
    struct ag_policy p = ag_test_policy(
        "{\"name\":\"t.grow\",\"endpoint\":\"login\",\"key\":[\"user\"],"
        "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60,"
        "\"block_s\":60,\"block_growth\":2,\"block_max_s\":600}");
    struct ag_plan plan;
    struct ag_limit_result res = {.allowed = false, .retry_after_ms = 60000};
    one_op(&plan, &p, DIGEST, false);
    ag_events_denied(ev, &plan, &res, false);
    assert_int_equal(f.n_held, 1);
    assert_string_equal(f.held[0].argv[0], "SET");
    answer(&f, ANSWER_OK, NULL); /* the marker is set: a lockout */
    assert_int_equal(f.n_held, 1);
    assert_string_equal(f.held[0].argv[0], "GET");
    answer(&f, how, level);
    answer(&f, ANSWER_OK, NULL); /* the events' XADDs */
    *events = f.n_stream;
    assert_true(f.n_stream >= 1);
    json_t *o = json_loads(f.stream[0], 0, NULL);
    assert_true(json_is_object(o));
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "lockout");
    ag_events_free(ev);
    fake_free(&f);
    return o;
}

static void a_level_that_could_not_be_read_is_left_out(void **state)
{
    (void)state;
    size_t n;
    /* The control: a level read is told, and above 1 escalates. */
    json_t *o = lockout_after_level(ANSWER_OK, "2 1700000000000000", &n);
    assert_int_equal(json_integer_value(json_object_get(o, "level")), 2);
    assert_int_equal(n, 2);
    json_decref(o);
    const enum answer fails[] = {ANSWER_ERROR, ANSWER_TIMEOUT};
    for (size_t i = 0; i < 2; i++) {
        o = lockout_after_level(fails[i], NULL, &n);
        assert_null(json_object_get(o, "level"));
        assert_int_equal(n, 1);
        json_decref(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lockout_json_carries_what_applies),
        cmocka_unit_test(breaker_json_has_only_id_type_and_time),
        cmocka_unit_test(shield_events_carry_their_figures_and_who_did_it),
        cmocka_unit_test(every_type_has_its_name),
        cmocka_unit_test(level_is_read_from_the_level_key),
        cmocka_unit_test(key_digest_comes_from_plain_and_tagged_keys),
        cmocka_unit_test(without_redis_a_lockout_is_raised_once_per_key),
        cmocka_unit_test(a_marker_lapses_with_the_denial),
        cmocka_unit_test(reading_refuses_a_bad_after_or_limit_and_needs_redis),
        cmocka_unit_test(retries_back_off_from_a_fifth_of_a_second_up_to_five),
        cmocka_unit_test(
            an_append_that_failed_once_is_retried_with_no_later_event),
        cmocka_unit_test(a_read_sends_the_backlog_before_it_reads),
        cmocka_unit_test(a_flapping_redis_gets_one_failure_line_an_interval),
        cmocka_unit_test(a_detach_sends_the_backlog_one_last_time),
        cmocka_unit_test(after_the_largest_stream_id_is_an_empty_page),
        cmocka_unit_test(a_level_that_could_not_be_read_is_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
