/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_service, the support desk's path, over the fake store of
 * ag_test_service.h: resets (during an outage: the fallback at once, the
 * store later, once; a reset the store may have done is not sent again;
 * a device key needs a live token; a reset drops the deny cache's
 * denial and is published; a queued clear partly done on a cluster is
 * not sent again and drops the lockout marker) and inspects (a peek
 * verdict that charges nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_deny_cache.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_http_response.h"
#include "ag_service.h"
#include "ag_store.h"
#include "ag_test.h"
#include "ag_test_service.h"
#include "ag_verdict.h"

/* The fake's asynchronous commands, for the events' markers. */
static int marker_dels; /* DELs the fake was sent: the store's clear's job */

static int fake_command_async(struct ag_store *s, int argc, const char **argv,
                              const size_t *lens, int key_at,
                              ag_store_reply_fn done, void *arg)
{
    (void)lens;
    (void)key_at;
    struct fake *f = (struct fake *)s;
    if (f->rc != AG_OK)
        return AG_ESTORE; /* as the Redis store while its breaker is open */
    if (argc >= 1 && strcmp(argv[0], "DEL") == 0) {
        marker_dels++;
        note(f, "del ");
    }
    (void)done;
    (void)arg;
    return AG_ESTORE; /* nothing else (an XADD) is taken */
}

static const struct ag_store_ops events_ops = {
    .name = "fake-events",
    .check = fake_check,
    .clear = fake_clear,
    .ping = fake_ping,
    .command_async = fake_command_async,
    .publish = fake_publish,
    .destroy = fake_destroy,
};

/* Resets. */

static void
reset_during_an_outage_clears_the_fallback_and_later_the_store(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(OPEN);
    w->store.rc = AG_ESTORE;
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 2; i++)
        run_check(w, LOGIN_BODY, &r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 429); /* fallback full */
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EPENDING);
    assert_int_equal(strncmp(key, "ag:login.user:", 14), 0);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200); /* fallback clear */
    /* Redis answers again: the queued clear goes before the next check. */
    w->store.rc = AG_OK;
    w->store.log[0] = '\0';
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    /* Cleared, then published for the other instances' deny caches. */
    assert_string_equal(w->store.log, "clear publish check ");
    w->store.log[0] = '\0';
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_string_equal(w->store.log, "check "); /* sent once */
    ag_http_response_free(&r);
    world_free(w);
}

static void reset_the_store_may_have_done_is_not_sent_again(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    /* Sent, never answered: the fallback is cleared, the caller told. */
    w->store.clear_rc = AG_EUNKNOWN;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EUNKNOWN);
    /* Queued while the store is down, then sent once and unanswered: it
     * counts as done and is not sent again. */
    w->store.rc = AG_ESTORE;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EPENDING);
    w->store.rc = AG_OK;
    w->store.log[0] = '\0';
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    /* It may have been done: published like a clear that was. */
    assert_string_equal(w->store.log, "clear publish check ");
    w->store.log[0] = '\0';
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_string_equal(w->store.log, "check ");
    ag_http_response_free(&r);
    world_free(w);
}

static void reset_names_the_missing_identifier(void **state)
{
    (void)state;
    static const char *const ps[] = {FAILURES};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(FAILURES);
    const char *body = "{\"user\":\"ana@example.com\"}";
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    assert_int_equal(
        ag_service_reset(w->svc, &p, body, strlen(body), key, &err), AG_EINVAL);
    assert_string_equal(err.field, "ip");
    assert_int_equal(w->store.clears, 0);
    world_free(w);
}

#define PER_DEVICE                                                             \
    "{\"name\":\"login.per_device\",\"endpoint\":\"login\","                   \
    "\"key\":[\"user\",\"device_token\"],\"algorithm\":\"sliding_log\","       \
    "\"limit\":5,\"window_s\":60}"

static void reset_of_a_device_key_needs_a_live_token(void **state)
{
    (void)state;
    static const char *const ps[] = {PER_DEVICE};
    struct world *w = world_new(false, ps, 1);
    struct ag_policy p = ag_test_policy(PER_DEVICE);
    char key[AG_STORE_KEY_MAX], token[AG_DEVICE_TOKEN_LEN + 1];
    struct ag_error err;
    const char *body = with_token("\"forged\"", NULL);
    assert_int_equal(
        ag_service_reset(w->svc, &p, body, strlen(body), key, &err), AG_EINVAL);
    assert_string_equal(err.field, "device_token");
    assert_int_equal(w->store.clears, 0);
    mint(w, ANA, now_s(), token);
    body = with_token(quoted(token), NULL);
    assert_int_equal(
        ag_service_reset(w->svc, &p, body, strlen(body), key, &err), AG_OK);
    assert_int_equal(w->store.clears, 1);
    /* The key the checks of that device use. */
    struct ag_http_response r;
    ag_http_response_init(&r);
    w->store.rc = AG_ESTORE; /* judged in the fallback, which reports keys */
    assert_int_equal(run_check(w, body, &r), 200);
    assert_true(body_has(&r, "login.per_device"));
    ag_http_response_free(&r);
    world_free(w);
}

static void a_reset_drops_the_cached_denial_and_is_published(void **state)
{
    (void)state;
    struct ag_deny_cache *dc;
    struct world *w = cached_world(&dc);
    struct ag_http_response r;
    ag_http_response_init(&r);
    run_check(w, LOGIN_BODY, &r);
    run_check(w, LOGIN_BODY, &r);
    assert_true(body_has(&r, "cached"));
    struct ag_policy p = ag_test_policy(OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_OK);
    assert_int_equal(w->store.publishes, 1);
    assert_int_equal(ag_deny_cache_entries(dc), 0);
    w->store.deny_ms = 0;
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.checks, 2);
    ag_http_response_free(&r);
    world_free(w);
    ag_deny_cache_free(dc);
}

#define IP_OPEN                                                                \
    "{\"name\":\"login.ip_open\",\"endpoint\":\"login\",\"key\":[\"ip\"],"     \
    "\"algorithm\":\"sliding_log\",\"limit\":50,\"window_s\":60}"

/* Two resets queued during an outage, their keys on two cluster nodes:
 * once one node is back and the other not, the clear of the pair fails
 * (AG_ESTORE) though the first key was cleared. That key must not be
 * cleared again before every check (each would forgive what was counted
 * since: a limit that never trips while the other node is down). */
static void a_partly_done_queued_clear_is_not_sent_again(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN, IP_OPEN};
    struct world *w = world_new(false, ps, 2);
    struct ag_policy user = ag_test_policy(OPEN);
    struct ag_policy ip = ag_test_policy(IP_OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    w->store.rc = AG_ESTORE; /* every node down */
    assert_int_equal(ag_service_reset(w->svc, &user, LOGIN_BODY,
                                      strlen(LOGIN_BODY), key, &err),
                     AG_EPENDING);
    assert_int_equal(ag_service_reset(w->svc, &ip, LOGIN_BODY,
                                      strlen(LOGIN_BODY), key, &err),
                     AG_EPENDING);
    /* The user's node is back, the address's is not. */
    w->store.rc = AG_OK;
    w->store.down_prefix = "ag:login.ip_open:";
    w->store.user_clears = 0;
    struct ag_http_response r;
    ag_http_response_init(&r);
    for (int i = 0; i < 3; i++)
        run_check(w, LOGIN_BODY, &r);
    /* Cleared once, not before each of the three checks. */
    assert_int_equal(w->store.user_clears, 1);
    ag_http_response_free(&r);
    world_free(w);
}

/* A reset queued during an outage drops the key's lockout marker once the
 * store takes it: a marker left in Redis for the rest of its denial's wait
 * hides the key's next lockout from the events. The store's clear deletes
 * the marker with the key (ag_store_redis, test_store_redis), so the
 * service sends no DEL of its own, which an open breaker would refuse
 * while the queued clear waits; the local stand-in is forgotten at once. */
static void a_queued_reset_drops_the_lockout_marker_once_sent(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct ag_events *ev = NULL;
    assert_int_equal(ag_events_new(&(struct ag_events_opts){0}, &ev), AG_OK);
    next_events = ev;
    struct world *w = world_new(false, ps, 1);
    next_events = NULL;
    w->store.base.ops = &events_ops;
    ag_events_attach(ev, &w->store.base);
    struct ag_policy p = ag_test_policy(OPEN);
    char key[AG_STORE_KEY_MAX];
    struct ag_error err;
    marker_dels = 0;
    /* Up: the reset is one clear. */
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_OK);
    assert_int_equal(w->store.clears, 1);
    /* Down: refused, and queued. */
    w->store.rc = AG_ESTORE;
    assert_int_equal(
        ag_service_reset(w->svc, &p, LOGIN_BODY, strlen(LOGIN_BODY), key, &err),
        AG_EPENDING);
    assert_int_equal(w->store.clears, 2);
    /* Up again: the queued clear goes before the next check, and the
     * marker with it. */
    w->store.rc = AG_OK;
    w->store.log[0] = '\0';
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(run_check(w, LOGIN_BODY, &r), 200);
    assert_int_equal(w->store.clears, 3);
    assert_string_equal(w->store.log, "clear publish check ");
    assert_int_equal(marker_dels, 0);
    ag_http_response_free(&r);
    ag_events_attach(ev, NULL);
    world_free(w);
    ag_events_free(ev);
}

/* Inspects. */

static void an_inspect_is_a_peek_verdict_that_charges_nothing(void **state)
{
    (void)state;
    static const char *const ps[] = {OPEN};
    struct world *w = world_new(false, ps, 1);
    struct ag_inspect_keys keys;
    struct ag_verdict v;
    assert_int_equal(ag_service_inspect(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                        strlen(LOGIN_BODY), &keys, &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_DECIDED);
    assert_true(v.inspected);
    assert_false(v.degraded);
    assert_int_equal(v.plan->kind, AG_PLAN_PEEK);
    assert_int_equal(w->store.last_kind, AG_PLAN_PEEK);
    assert_int_equal(keys.n, 1);
    assert_int_equal(strncmp(keys.key[0], "ag:login.user:", 14), 0);
    assert_int_equal(atomic_load(&w->set->refs), 3);
    struct ag_http_response r;
    ag_http_response_init(&r);
    assert_int_equal(answer(AG_OK, &v, &r), 200);
    assert_true(body_has(&r, "\"inspected\":true"));
    assert_int_equal(r.retry_after, 0);
    assert_int_equal(atomic_load(&w->set->refs), 2);
    /* The store down: the fallback is peeked. */
    w->store.rc = AG_ESTORE;
    assert_int_equal(ag_service_inspect(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                        strlen(LOGIN_BODY), &keys, &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_DECIDED);
    assert_true(v.degraded);
    ag_verdict_release(&v);
    /* A list entry settles it: the entry, inspected. */
    add_list(w, AG_LIST_ALLOW, "{\"kind\":\"ip\",\"value\":\"192.0.2.1\"}");
    assert_int_equal(ag_service_inspect(w->svc, AG_EP_LOGIN, LOGIN_BODY,
                                        strlen(LOGIN_BODY), &keys, &v),
                     AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_LISTED);
    assert_true(v.inspected);
    assert_int_equal(v.entry->list, AG_LIST_ALLOW);
    assert_int_equal(keys.n, 1);
    assert_int_equal(answer(AG_OK, &v, &r), 200);
    assert_true(body_has(&r, "\"list\":\"allow\""));
    assert_true(body_has(&r, "\"inspected\":true}"));
    /* A refused body: no keys. */
    const char *bad = "{\"user\":\"ana\"}";
    assert_int_equal(
        ag_service_inspect(w->svc, AG_EP_LOGIN, bad, strlen(bad), &keys, &v),
        AG_OK);
    assert_int_equal(v.kind, AG_VERDICT_REFUSED);
    assert_string_equal(v.err.field, "ip");
    assert_int_equal(keys.n, 0);
    ag_verdict_release(&v);
    ag_http_response_free(&r);
    world_free(w);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            reset_during_an_outage_clears_the_fallback_and_later_the_store),
        cmocka_unit_test(reset_the_store_may_have_done_is_not_sent_again),
        cmocka_unit_test(a_partly_done_queued_clear_is_not_sent_again),
        cmocka_unit_test(a_queued_reset_drops_the_lockout_marker_once_sent),
        cmocka_unit_test(reset_names_the_missing_identifier),
        cmocka_unit_test(reset_of_a_device_key_needs_a_live_token),
        cmocka_unit_test(a_reset_drops_the_cached_denial_and_is_published),
        cmocka_unit_test(an_inspect_is_a_peek_verdict_that_charges_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
