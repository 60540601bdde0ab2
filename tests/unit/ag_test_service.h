/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the ag_service unit tests (test_service.c, the check
 * path; test_service_admin.c, resets and inspects): a fake store that
 * answers, fails, or answers later on demand, a world of a service over
 * it with the real in-process fallback, and the HTTP layer's rendering of
 * each verdict, so that a test reads the answer a client would get.
 * Include after <cmocka.h>.
 */
#ifndef AG_TEST_SERVICE_H
#define AG_TEST_SERVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_clock.h"
#include "ag_deny_cache.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_http_response.h"
#include "ag_http_verdict.h"
#include "ag_lists.h"
#include "ag_metrics.h"
#include "ag_service.h"
#include "ag_shields.h"
#include "ag_store.h"
#include "ag_test.h"
#include "ag_verdict.h"

/* A store whose answers the test sets: every check allowed with
 * `remaining`, or failed with `rc`; asynchronous when `async` (the answer
 * then waits for fake_answer). It keeps a log of what it was asked. */
struct fake {
    struct ag_store base;
    int rc;
    int clear_rc; /* what clear answers while rc is AG_OK (default AG_OK) */
    bool async;
    uint32_t remaining;
    uint64_t deny_ms;   /* not 0: every check denied, retry after this */
    unsigned allow_ops; /* bit i: plan op i allowed even so */
    int checks, clears, publishes;
    /* A cluster's partial clear: while set, a clear whose plan holds a key
     * with this prefix fails (AG_ESTORE, that node is down) after the
     * other keys were cleared (their nodes are up), as cluster_clear does;
     * user_clears counts the clears of "ag:login.user:" keys done. */
    const char *down_prefix;
    int user_clears;
    char log[256];
    enum ag_plan_kind last_kind;
    size_t last_n;
    char last_names[256]; /* the last plan's policies, space-separated */
    unsigned last_charge; /* the last plan's: bit i, op i charges */
    /* A pending asynchronous check. */
    ag_store_done_fn done;
    void *done_arg;
};

static inline void note(struct fake *f, const char *what)
{
    strncat(f->log, what, sizeof f->log - strlen(f->log) - 1);
}

static inline void note_names(struct fake *f, const struct ag_plan *plan)
{
    f->last_names[0] = '\0';
    f->last_charge = 0;
    for (size_t i = 0; i < plan->n; i++) {
        f->last_charge |= (unsigned)plan->ops[i].charge << i;
        size_t n = strlen(f->last_names);
        snprintf(f->last_names + n, sizeof f->last_names - n, "%s%s",
                 i ? " " : "", plan->ops[i].policy->name);
    }
}

static inline int fake_check(struct ag_store *s, const struct ag_plan *plan,
                             struct ag_limit_result *res)
{
    struct fake *f = (struct fake *)s;
    f->checks++;
    f->last_kind = plan->kind;
    f->last_n = plan->n;
    note_names(f, plan);
    note(f, "check ");
    for (size_t i = 0; f->rc == AG_OK && i < plan->n; i++)
        res[i] = f->deny_ms && !(f->allow_ops & (1u << i))
                     ? (struct ag_limit_result){.allowed = false,
                                                .retry_after_ms = f->deny_ms,
                                                .reset_after_ms = f->deny_ms}
                     : (struct ag_limit_result){.allowed = true,
                                                .remaining = f->remaining};
    return f->rc;
}

static inline int fake_check_async(struct ag_store *s,
                                   const struct ag_plan *plan,
                                   struct ag_limit_result *res,
                                   ag_store_done_fn done, void *arg)
{
    struct fake *f = (struct fake *)s;
    if (f->rc != AG_OK)
        return f->rc; /* not started: the callback never comes */
    fake_check(s, plan, res);
    note(f, "started ");
    f->done = done;
    f->done_arg = arg;
    return AG_OK;
}

static inline void fake_answer(struct fake *f)
{
    assert_non_null(f->done);
    ag_store_done_fn done = f->done;
    f->done = NULL;
    done(f->done_arg, AG_OK);
}

static inline int fake_clear(struct ag_store *s, const struct ag_plan *plan)
{
    struct fake *f = (struct fake *)s;
    f->clears++;
    f->last_kind = plan->kind;
    f->last_n = plan->n;
    note_names(f, plan);
    note(f, "clear ");
    if (f->rc)
        return f->rc;
    bool down = false;
    for (size_t i = 0; i < plan->n; i++) {
        if (f->down_prefix && strncmp(plan->ops[i].key, f->down_prefix,
                                      strlen(f->down_prefix)) == 0)
            down = true;
        else if (strncmp(plan->ops[i].key, "ag:login.user:", 14) == 0)
            f->user_clears++;
    }
    return down ? AG_ESTORE : f->clear_rc;
}

static inline void fake_publish(struct ag_store *s, const char *channel,
                                const char *message)
{
    struct fake *f = (struct fake *)s;
    assert_string_equal(channel, AG_DENY_CACHE_CHANNEL);
    assert_int_equal(strncmp(message, "ag:", 3), 0);
    f->publishes++;
    note(f, "publish ");
}
static inline int fake_ping(struct ag_store *s)
{
    return ((struct fake *)s)->rc;
}

static inline void fake_destroy(struct ag_store *s)
{
    (void)s;
}

static const struct ag_store_ops sync_ops = {
    .name = "fake",
    .check = fake_check,
    .clear = fake_clear,
    .ping = fake_ping,
    .publish = fake_publish,
    .destroy = fake_destroy,
};
static const struct ag_store_ops async_ops = {
    .name = "fake-async",
    .check = fake_check,
    .check_async = fake_check_async,
    .clear = fake_clear,
    .ping = fake_ping,
    .publish = fake_publish,
    .destroy = fake_destroy,
};

static uint64_t fake_now = 1000000000000ull;

static inline uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* The shields' clock, ms: world_new sets it a millisecond before a
 * minute of the wall clock's (the overview keeps the last hour of it). */
static uint64_t shield_now;

static inline uint64_t shield_clock(void *ctx)
{
    (void)ctx;
    return shield_now;
}

/* The deny cache's clock, microseconds, and the cache world_new gives
 * the next service (NULL: none). */
static uint64_t cache_now = 5000000;

static inline uint64_t cache_clock(void *ctx)
{
    (void)ctx;
    return cache_now;
}
static struct ag_deny_cache *next_cache;
static struct ag_events *next_events; /* the next service's, or NULL */

/* What the waiter saw, in order. */
static char waiter_log[128];

static inline void w_suspend(void *arg)
{
    (void)arg;
    strcat(waiter_log, "suspend ");
}

static inline void w_resume(void *arg)
{
    (void)arg;
    strcat(waiter_log, "resume ");
}

static const struct ag_check_waiter waiter = {w_suspend, w_resume, NULL};

struct world {
    struct fake store;
    struct ag_store *fallback;
    struct ag_metrics *metrics;
    struct ag_hasher hasher;
    struct ag_service *svc;
    struct ag_ruleset *set; /* a reference the test keeps */
};

static inline struct world *world_new(bool async, const char *const *policies,
                                      size_t n)
{
    struct world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->store.base.ops = async ? &async_ops : &sync_ops;
    w->store.remaining = 7;
    w->fallback = ag_store_mem_new(1024, 4096, fake_clock, NULL);
    assert_non_null(w->fallback);
    w->metrics = ag_metrics_new();
    assert_non_null(w->metrics);
    unsigned char secret[32] = {1};
    ag_hasher_init(&w->hasher, secret, sizeof secret);
    struct ag_service_opts o = {
        .hasher = &w->hasher,
        .store = &w->store.base,
        .fallback = w->fallback,
        .metrics = w->metrics,
        .deny_cache = next_cache,
        .events = next_events,
        .shield_clock_ms = shield_clock,
    };
    shield_now = ag_clock_wall_ms() / 60000 * 60000 + 59999;
    assert_int_equal(ag_service_new(&o, &w->svc), AG_OK);
    struct ag_policy ps[8];
    for (size_t i = 0; i < n; i++)
        ps[i] = ag_test_policy(policies[i]);
    w->set = ag_ruleset_new(ps, n, 1);
    assert_non_null(w->set);
    ag_service_set_ruleset(w->svc, ag_ruleset_ref(w->set));
    waiter_log[0] = '\0';
    return w;
}

/* Teaches w's shields of 60 s windows a whole window of what was counted
 * meanwhile (a shield holds a raise on its attempts only once it learned
 * them from a window it was not raised in): the shields' clock moves to
 * the start of the next minute, then on a minute, a step at each. */
static inline void shields_learn(struct world *w)
{
    shield_now += 1;
    ag_shields_sync(ag_service_shields(w->svc));
    shield_now += 60000;
    ag_shields_sync(ag_service_shields(w->svc));
}

static inline void world_free(struct world *w)
{
    ag_service_free(w->svc);
    /* The service's reference is gone: only the test's is left. */
    assert_int_equal(atomic_load(&w->set->refs), 1);
    ag_ruleset_unref(w->set);
    ag_store_destroy(w->fallback);
    ag_metrics_free(w->metrics);
    free(w);
}
static const char *const LOGIN_BODY =
    "{\"user\":\"ana@example.com\",\"ip\":\"192.0.2.1\"}";

#define OPEN                                                                   \
    "{\"name\":\"login.user\",\"endpoint\":\"login\",\"key\":[\"user\"],"      \
    "\"algorithm\":\"sliding_log\",\"limit\":2,\"window_s\":60}"
#define CLOSED                                                                 \
    "{\"name\":\"login.ip\",\"endpoint\":\"login\",\"key\":[\"ip\"],"          \
    "\"algorithm\":\"sliding_log\",\"limit\":5,\"window_s\":60,"               \
    "\"fail\":\"closed\"}"
#define FAILURES                                                               \
    "{\"name\":\"login.user_ip_fail\",\"endpoint\":\"login\","                 \
    "\"key\":[\"user\",\"ip\"],\"algorithm\":\"sliding_log\",\"limit\":3,"     \
    "\"window_s\":60,\"counts\":\"failures\"}"

/* A challenge policy. */
#define ASK                                                                    \
    "{\"name\":\"login.ask\",\"endpoint\":\"login\",\"key\":[\"user\"],"       \
    "\"algorithm\":\"sliding_log\",\"limit\":1,\"window_s\":60,"               \
    "\"action\":\"challenge\"}"

/* The answer the HTTP layer would give verdict v, which the service
 * returned with rc: rendered into r, v released. Returns r's status. */
static inline int answer(int rc, struct ag_verdict *v,
                         struct ag_http_response *r)
{
    assert_int_equal(rc, AG_OK);
    assert_int_equal(ag_http_verdict_render(r, v), AG_OK);
    ag_verdict_release(v);
    return r->status;
}

/* Runs one check of endpoint to its answer: begin, then (if it waited)
 * the fake's answer and finish. Returns the status. */
static inline int run_check_of(struct world *w, enum ag_endpoint endpoint,
                               const char *body, struct ag_http_response *r)
{
    waiter_log[0] = '\0'; /* each check's own order */
    struct ag_check *c = NULL;
    struct ag_verdict v;
    int rc = ag_service_check_begin(w->svc, endpoint, body, strlen(body),
                                    &waiter, &c, &v);
    if (rc == AG_EPENDING) {
        assert_non_null(c);
        if (w->store.done)
            fake_answer(&w->store);
        rc = ag_service_check_finish(c, &v);
    } else {
        assert_null(c);
    }
    return answer(rc, &v, r);
}

static inline int run_check(struct world *w, const char *body,
                            struct ag_http_response *r)
{
    return run_check_of(w, AG_EP_LOGIN, body, r);
}

static inline bool body_has(const struct ag_http_response *r, const char *s)
{
    return r->body.p && strstr(r->body.p, s);
}

/* A /report-login of body answered into r, as the HTTP layer would.
 * Returns what the service returned. */
static inline int report_login(struct world *w, const char *body,
                               struct ag_http_response *r)
{
    struct ag_verdict v;
    int rc = ag_service_report_login(w->svc, body, strlen(body), &v);
    if (rc == AG_OK)
        answer(rc, &v, r);
    return rc;
}

/* Device tokens. */

#define ANA "ana@example.com"
#define TTL AG_DEVICE_TTL_DEFAULT_S

/* A token for user minted as the service would at issued_s. */
static inline void mint(struct world *w, const char *user, uint64_t issued_s,
                        char *token)
{
    struct ag_device_key k;
    ag_device_key_init(&k, &w->hasher);
    char digest[AG_DIGEST_HEX + 1];
    ag_identity_digest(&w->hasher, AG_KEY_USER, user, digest);
    ag_device_issue(&k, digest, NULL, issued_s, token);
}

static inline uint64_t now_s(void)
{
    return (uint64_t)time(NULL);
}

/* A login body for ANA carrying token as its device_token (raw JSON). */
static inline const char *with_token(const char *token_json, const char *extra)
{
    static char body[1024];
    snprintf(body, sizeof body,
             "{\"user\":\"ANA@example.com\",\"ip\":\"192.0.2.1\","
             "\"device_token\":%s%s}",
             token_json, extra ? extra : "");
    return body;
}

static inline const char *quoted(const char *token)
{
    static char q[AG_DEVICE_TOKEN_TEXT_MAX + 8];
    snprintf(q, sizeof q, "\"%s\"", token);
    return q;
}

/* A world whose service has a live deny cache on cache_clock. */
static inline struct world *cached_world(struct ag_deny_cache **dc)
{
    struct ag_deny_cache_opts o = {.entries = 64, .clock = cache_clock};
    assert_int_equal(ag_deny_cache_new(&o, dc), AG_OK);
    ag_deny_cache_set_live(*dc, true);
    static const char *const ps[] = {OPEN};
    next_cache = *dc;
    struct world *w = world_new(true, ps, 1);
    next_cache = NULL;
    w->store.deny_ms = 5000;
    return w;
}

/* Adds an entry (json) to list in a new ruleset of the same policies. */
static inline void add_list(struct world *w, enum ag_list list,
                            const char *json)
{
    json_t *o = json_loads(json, 0, NULL);
    assert_non_null(o);
    struct ag_list_entry *e = calloc(2, sizeof *e);
    size_t n = w->set->nlists;
    if (n) /* keep the entries already there */
        memcpy(e, w->set->lists, n * sizeof *e);
    struct ag_error err;
    assert_int_equal(ag_list_entry_from_json(o, list, &w->hasher, &e[n], &err),
                     AG_OK);
    e[n].id = (int64_t)n + 1;
    json_decref(o);
    /* A new set with the same policies and these lists. */
    struct ag_ruleset *set =
        ag_ruleset_new(w->set->policies, w->set->count, w->set->version + 1);
    ag_ruleset_adopt_lists(set, e, n + 1);
    ag_ruleset_unref(w->set);
    w->set = set;
    ag_service_set_ruleset(w->svc, ag_ruleset_ref(set));
}

#endif
