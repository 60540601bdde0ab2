/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_addr: the Redis URL forms (TCP, TLS, Sentinel, Cluster, unix
 * socket), credentials and their escapes, refusals that name the option
 * and never show the password, and the TLS settings a parse keeps. The
 * --redis flag that hands the parser its URL is test_config.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ag_error.h"
#include "ag_redis_addr.h"
#include "ag_test_redis_urls.h"

#define ERRSZ 512

/* The parser's last refusal, whole; its message is also copied into the
 * test's buffer. */
static struct ag_error last;

static int parse_url(const char *url, struct ag_redis_addr *a, char *err)
{
    memset(&last, 0, sizeof last);
    int rc = ag_redis_addr_parse(url, "redis", a, &last);
    snprintf(err, ERRSZ, "%s", rc ? last.msg : "");
    return rc;
}

static void redis_url_host_and_port(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    char err[ERRSZ];
    assert_int_equal(parse_url("redis://cache.local:6380", &a, err), AG_OK);
    assert_int_equal(a.kind, AG_REDIS_TCP);
    assert_string_equal(a.host, "cache.local");
    assert_int_equal(a.port, 6380);
    assert_string_equal(a.password, "");
    assert_int_equal(a.db, 0);
}

static void redis_url_password_and_database(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    char err[ERRSZ];
    assert_int_equal(parse_url("redis://:s3cret@10.0.0.5:6379/3", &a, err),
                     AG_OK);
    assert_int_equal(a.kind, AG_REDIS_TCP);
    assert_string_equal(a.password, "s3cret");
    assert_string_equal(a.host, "10.0.0.5");
    assert_int_equal(a.port, 6379);
    assert_int_equal(a.db, 3);
}

static void redis_url_unix_socket(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    char err[ERRSZ];
    assert_int_equal(parse_url("unix:///run/redis/redis.sock", &a, err), AG_OK);
    assert_int_equal(a.kind, AG_REDIS_UNIX);
    assert_string_equal(a.path, "/run/redis/redis.sock");
    assert_string_equal(a.password, "");
}

static void redis_url_acl_user_tls_and_escapes(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    char err[ERRSZ];
    memset(&a, 0, sizeof a);
    assert_int_equal(parse_url("redis://ag:s3cret@cache:6380", &a, err), AG_OK);
    assert_string_equal(a.user, "ag");
    assert_string_equal(a.password, "s3cret");
    assert_false(a.tls);
    /* ':', '@' and '/' in credentials come %-escaped. */
    assert_int_equal(
        parse_url("rediss://svc%40eu:p%3Aw%2Fd%40x@10.0.0.5:6379/1", &a, err),
        AG_OK);
    assert_true(a.tls);
    assert_string_equal(a.user, "svc@eu");
    assert_string_equal(a.password, "p:w/d@x");
    assert_string_equal(a.host, "10.0.0.5");
    assert_int_equal(a.db, 1);
}

static void sentinel_url_lists_sentinels_and_the_master_name(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    char err[ERRSZ];
    memset(&a, 0, sizeof a);
    assert_int_equal(
        parse_url("redis+sentinel://ag:pw@10.0.0.1:26379,[::1]:26380,"
                  "s3:26381/mymaster",
                  &a, err),
        AG_OK);
    assert_int_equal(a.kind, AG_REDIS_SENTINEL);
    assert_false(a.tls);
    assert_int_equal(a.n_seeds, 3);
    assert_string_equal(a.seeds[0].host, "10.0.0.1");
    assert_int_equal(a.seeds[0].port, 26379);
    assert_string_equal(a.seeds[1].host, "::1");
    assert_int_equal(a.seeds[1].port, 26380);
    assert_string_equal(a.seeds[2].host, "s3");
    assert_string_equal(a.master_name, "mymaster");
    assert_string_equal(a.user, "ag");
    assert_string_equal(a.password, "pw");
    assert_int_equal(parse_url("rediss+sentinel://s:1/m", &a, err), AG_OK);
    assert_true(a.tls);
    assert_int_equal(parse_url("redis+cluster://:pw@n1:7000,n2:7001", &a, err),
                     AG_OK);
    assert_int_equal(a.kind, AG_REDIS_CLUSTER);
    assert_int_equal(a.n_seeds, 2);
    assert_string_equal(a.seeds[1].host, "n2");
    assert_int_equal(a.seeds[1].port, 7001);
    assert_string_equal(a.password, "pw");
    assert_int_equal(parse_url("redis+cluster://n1:7000/0", &a, err),
                     AG_EINVAL);
    static const char *const bad[] = {
        "redis+sentinel://s:1",
        "redis+sentinel://s:1/",
        "redis+sentinel:///m",
        "redis+sentinel://s:1,/m",
        "redis+sentinel://s/m",
        "redis+sentinel://s:0/m",
        "redis+sentinel://s:1/m/2",
        "redis+sentinel://a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1/m",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (parse_url(bad[i], &a, err) != AG_EINVAL)
            fail_msg("'%s' was accepted", bad[i]);
        if (!strstr(err, "--redis"))
            fail_msg("'%s': %s", bad[i], err);
    }
}

static void a_password_never_appears_in_a_refusal(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "redis://u:hunter2secret@cache",
        "redis://u:hunter2secret@cache:0",
        "redis://u:hunter2secret%zz@cache:1",
        "redis://u:hunter2secret@:1",
        "redis://u:hunter2secret@cache:1/x",
        "redis://u:hunter2secret@[::1:16379",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ag_redis_addr a;
        char err[ERRSZ] = "";
        assert_int_equal(parse_url(bad[i], &a, err), AG_EINVAL);
        if (strstr(err, "hunter2"))
            fail_msg("'%s': the message shows the password: %s", bad[i], err);
    }
}

static void redis_url_takes_a_bracketed_ipv6_host(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    char err[ERRSZ] = "";
    assert_int_equal(parse_url("redis://[::1]:6380", &a, err), AG_OK);
    assert_string_equal(a.host, "::1");
    assert_int_equal(a.port, 6380);
}

static void bad_urls_are_refused_naming_the_option(void **state)
{
    (void)state;
    const char *const *bad = ag_test_bad_redis_urls;
    for (size_t i = 0; i < AG_TEST_BAD_REDIS_URLS; i++) {
        struct ag_redis_addr a;
        char err[ERRSZ] = "";
        int rc = parse_url(bad[i], &a, err);
        if (rc != AG_EINVAL)
            fail_msg("'%s': rc %d, want AG_EINVAL", bad[i], rc);
        if (!strstr(err, "--redis"))
            fail_msg("'%s': message does not name --redis: %s", bad[i], err);
        if (strcmp(last.field, "redis") != 0)
            fail_msg("'%s': error's field is '%s'", bad[i], last.field);
    }
    /* A socket path that does not fit sun_path. */
    struct ag_redis_addr a;
    char err[ERRSZ] = "";
    char url[256] = "unix:///";
    memset(url + 8, 's', 120);
    url[128] = '\0';
    assert_int_equal(parse_url(url, &a, err), AG_EINVAL);
    assert_non_null(strstr(err, "--redis"));
}

/* The parser does not know the flag: whoever hands it a URL names it, and
 * the refusal says that name, in the field and at the message's start. */
static void refusals_name_the_option_the_url_came_from(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "http://x:1",           "redis://x",
        "redis+sentinel://s:1", "redis+cluster://n:1/0",
        "unix://relative",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ag_redis_addr a;
        struct ag_error e;
        memset(&e, 0, sizeof e);
        assert_int_equal(ag_redis_addr_parse(bad[i], "other-url", &a, &e),
                         AG_EINVAL);
        assert_int_equal(e.code, AG_EINVAL);
        assert_string_equal(e.field, "other-url");
        if (strncmp(e.msg, "--other-url: ", 13) != 0)
            fail_msg("'%s': %s", bad[i], e.msg);
        if (strstr(e.msg, "--redis"))
            fail_msg("'%s' names --redis: %s", bad[i], e.msg);
    }
}

/* The TLS files and name come from flags of their own, which may be read
 * before the URL: a parse keeps them and resets everything else, so no
 * password, database or seed of an earlier value survives. */
static void a_parse_keeps_the_tls_settings_and_resets_the_rest(void **state)
{
    (void)state;
    struct ag_redis_addr a;
    char err[ERRSZ];
    memset(&a, 0, sizeof a);
    assert_int_equal(parse_url("rediss+cluster://u:old@n1:1,n2:2", &a, err),
                     AG_OK);
    snprintf(a.tls_ca_file, sizeof a.tls_ca_file, "/etc/ca.pem");
    snprintf(a.tls_cert_file, sizeof a.tls_cert_file, "/etc/c.pem");
    snprintf(a.tls_key_file, sizeof a.tls_key_file, "/etc/k.pem");
    snprintf(a.tls_server_name, sizeof a.tls_server_name, "redis.internal");
    a.db = 7;
    assert_int_equal(parse_url("redis://cache:6379", &a, err), AG_OK);
    assert_string_equal(a.tls_ca_file, "/etc/ca.pem");
    assert_string_equal(a.tls_cert_file, "/etc/c.pem");
    assert_string_equal(a.tls_key_file, "/etc/k.pem");
    assert_string_equal(a.tls_server_name, "redis.internal");
    assert_int_equal(a.kind, AG_REDIS_TCP);
    assert_false(a.tls);
    assert_string_equal(a.user, "");
    assert_string_equal(a.password, "");
    assert_int_equal(a.n_seeds, 0);
    assert_int_equal(a.db, 0);
}

static void cluster_url_takes_at_most_AG_SEEDS_MAX_seeds(void **state)
{
    (void)state;
    char url[512];
    size_t n = (size_t)snprintf(url, sizeof url, "redis+cluster://");
    for (int i = 0; i < AG_SEEDS_MAX; i++)
        n += (size_t)snprintf(url + n, sizeof url - n, "%sn%d:%d", i ? "," : "",
                              i, 7000 + i);
    struct ag_redis_addr a;
    char err[ERRSZ];
    memset(&a, 0, sizeof a);
    assert_int_equal(parse_url(url, &a, err), AG_OK);
    assert_int_equal(a.n_seeds, AG_SEEDS_MAX);
    assert_string_equal(a.seeds[AG_SEEDS_MAX - 1].host, "n7");
    assert_int_equal(a.seeds[AG_SEEDS_MAX - 1].port, 7007);
    snprintf(url + n, sizeof url - n, ",n8:7008");
    assert_int_equal(parse_url(url, &a, err), AG_EINVAL);
    assert_non_null(strstr(err, "at most 8"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(redis_url_host_and_port),
        cmocka_unit_test(redis_url_password_and_database),
        cmocka_unit_test(redis_url_unix_socket),
        cmocka_unit_test(redis_url_acl_user_tls_and_escapes),
        cmocka_unit_test(redis_url_takes_a_bracketed_ipv6_host),
        cmocka_unit_test(sentinel_url_lists_sentinels_and_the_master_name),
        cmocka_unit_test(cluster_url_takes_at_most_AG_SEEDS_MAX_seeds),
        cmocka_unit_test(bad_urls_are_refused_naming_the_option),
        cmocka_unit_test(a_password_never_appears_in_a_refusal),
        cmocka_unit_test(refusals_name_the_option_the_url_came_from),
        cmocka_unit_test(a_parse_keeps_the_tls_settings_and_resets_the_rest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
