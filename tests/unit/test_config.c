/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_config: defaults, flags in both forms, ABUSEGUARD_* variables and the
 * precedence between them, the --config file below both, refusals that
 * name the flag, the --redis flag (its URL forms are test_redis_addr.c's)
 * and the webhooks. The secret, token and password files are
 * test_config_files.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ag_config.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_test_config.h"
#include "ag_test_redis_urls.h"

/* Expects one flag value to be refused with a message naming the flag. */
static void expect_flag_refused(const char *flag, const char *value)
{
    struct ag_config c;
    char err[ERRSZ];
    int rc = parse(&c, err, flag, value, (char *)NULL);
    if (rc != AG_EINVAL)
        fail_msg("%s %s: rc %d, want AG_EINVAL", flag, value, rc);
    if (!strstr(err, flag))
        fail_msg("%s %s: message does not name the flag: %s", flag, value, err);
    if (strcmp(last.field, flag + 2) != 0)
        fail_msg("%s %s: error's field is '%s'", flag, value, last.field);
}

static void expect_flag_accepted(const char *flag, const char *value)
{
    struct ag_config c;
    char err[ERRSZ];
    int rc = parse(&c, err, flag, value, (char *)NULL);
    if (rc != AG_OK)
        fail_msg("%s %s: rc %d: %s", flag, value, rc, err);
}

static void defaults_apply_without_flags_or_environment(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    assert_string_equal(c.listen.host, "127.0.0.1");
    assert_int_equal(c.listen.port, 8080);
    assert_int_equal(c.redis.kind, AG_REDIS_TCP);
    assert_string_equal(c.redis.host, "127.0.0.1");
    assert_int_equal(c.redis.port, 6379);
    assert_string_equal(c.redis.password, "");
    assert_int_equal(c.redis.db, 0);
    assert_string_equal(c.db_path, "var/policies.db");
    assert_string_equal(c.secret_file, "var/secret.key");
    assert_string_equal(c.admin_token_file, "");
    assert_string_equal(c.seed_dir, "");
    assert_int_equal(c.conn_timeout_s, 10);
    assert_int_equal(c.max_conns, 1024);
    assert_int_equal(c.max_header_bytes, 16384);
    assert_int_equal(c.threads, 0);
    assert_int_equal(c.redis_timeout_ms, 50);
    assert_int_equal(c.device_token_ttl_s, 7776000); /* 90 days */
    assert_int_equal(c.ipv6_ip_prefix, 64);
    assert_int_equal(c.ipv6_group_prefix, 48);
    assert_int_equal(c.ipv4_group_prefix, 24);
    assert_int_equal(c.audit_retention_days, 365);
    assert_int_equal(c.log_level, AG_LOG_INFO);
    assert_false(c.help);
}

static void flags_with_separate_values_override_defaults(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    int rc =
        parse(&c, err, "--listen", "0.0.0.0:9000", "--db", "/tmp/p.db",
              "--secret-file", "/etc/ag/key", "--admin-token-file",
              "/etc/ag/token", "--seed-dir", "/srv/seed", "--conn-timeout-s",
              "30", "--max-conns", "7", "--max-header-bytes", "8192",
              "--threads", "4", "--redis-timeout-ms", "250", "--log-level",
              "debug", "--redis", "redis://cache:6380", (char *)NULL);
    assert_int_equal(rc, AG_OK);
    assert_string_equal(c.listen.host, "0.0.0.0");
    assert_int_equal(c.listen.port, 9000);
    assert_string_equal(c.db_path, "/tmp/p.db");
    assert_string_equal(c.secret_file, "/etc/ag/key");
    assert_string_equal(c.admin_token_file, "/etc/ag/token");
    assert_string_equal(c.seed_dir, "/srv/seed");
    assert_int_equal(c.conn_timeout_s, 30);
    assert_int_equal(c.max_conns, 7);
    assert_int_equal(c.max_header_bytes, 8192);
    assert_int_equal(c.threads, 4);
    assert_int_equal(c.redis_timeout_ms, 250);
    assert_int_equal(c.log_level, AG_LOG_DEBUG);
    assert_string_equal(c.redis.host, "cache");
    assert_int_equal(c.redis.port, 6380);
    assert_false(c.help);
}

static void flag_equals_value_form_is_accepted(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    int rc = parse(&c, err, "--max-conns=77", "--listen=[::1]:8081",
                   "--db=/x=y.db", "--log-level=error", (char *)NULL);
    assert_int_equal(rc, AG_OK);
    assert_int_equal(c.max_conns, 77);
    assert_string_equal(c.listen.host, "::1");
    assert_int_equal(c.listen.port, 8081);
    /* Only the first '=' separates the flag from its value. */
    assert_string_equal(c.db_path, "/x=y.db");
    assert_int_equal(c.log_level, AG_LOG_ERROR);
}

static void listen_localhost_becomes_loopback_address(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, "--listen", "localhost:8443", (char *)NULL),
                     AG_OK);
    assert_string_equal(c.listen.host, "127.0.0.1");
    assert_int_equal(c.listen.port, 8443);
}

static void admin_listen_takes_an_address_or_a_unix_socket(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    assert_false(c.admin_listen_set);
    assert_int_equal(
        parse(&c, err, "--admin-listen", "[::1]:9001", (char *)NULL), AG_OK);
    assert_true(c.admin_listen_set);
    assert_string_equal(c.admin_listen.host, "::1");
    assert_int_equal(c.admin_listen.port, 9001);
    assert_int_equal(
        parse(&c, err, "--admin-listen", "unix:///run/ag/admin", (char *)NULL),
        AG_OK);
    assert_true(c.admin_listen_set);
    assert_string_equal(c.admin_listen.host, "");
    assert_string_equal(c.admin_listen.path, "/run/ag/admin");
    expect_flag_refused("--admin-listen", "unix://relative/path");
    expect_flag_refused("--admin-listen", "localhost");
}

static void help_flag_takes_no_value(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, "--help", "--max-conns", "5", (char *)NULL),
                     AG_OK);
    assert_true(c.help);
    assert_int_equal(c.max_conns, 5);
}

static void environment_variables_set_values(void **state)
{
    (void)state;
    assert_int_equal(setenv("ABUSEGUARD_MAX_CONNS", "33", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_SECRET_FILE", "/env/key", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_REDIS_TIMEOUT_MS", "99", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_LOG_LEVEL", "warn", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_DEVICE_TOKEN_TTL_S", "86400", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_LISTEN", "[::]:7000", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_ADMIN_TOKEN_FILE", "/env/tok", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_REDIS", "unix:///run/r.sock", 1), 0);
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    assert_int_equal(c.max_conns, 33);
    assert_string_equal(c.secret_file, "/env/key");
    assert_int_equal(c.redis_timeout_ms, 99);
    assert_int_equal(c.log_level, AG_LOG_WARN);
    assert_int_equal(c.device_token_ttl_s, 86400);
    assert_string_equal(c.listen.host, "::");
    assert_int_equal(c.listen.port, 7000);
    assert_string_equal(c.admin_token_file, "/env/tok");
    assert_int_equal(c.redis.kind, AG_REDIS_UNIX);
    assert_string_equal(c.redis.path, "/run/r.sock");
}

static void command_line_flag_wins_over_environment(void **state)
{
    (void)state;
    assert_int_equal(setenv("ABUSEGUARD_MAX_CONNS", "33", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_DB", "/env.db", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_REDIS", "redis://envhost:1", 1), 0);
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, "--max-conns", "44", "--redis",
                           "redis://flaghost:2", (char *)NULL),
                     AG_OK);
    assert_int_equal(c.max_conns, 44);
    assert_string_equal(c.redis.host, "flaghost");
    assert_int_equal(c.redis.port, 2);
    /* A variable no flag overrides still applies. */
    assert_string_equal(c.db_path, "/env.db");
}

static void bad_numeric_values_are_refused_naming_the_flag(void **state)
{
    (void)state;
    expect_flag_refused("--max-conns", "0");
    expect_flag_refused("--max-conns", "100001");
    expect_flag_refused("--max-conns", "abc");
    expect_flag_refused("--max-conns", "");
    expect_flag_refused("--max-conns", "12x");
    expect_flag_refused("--max-conns", " 12");
    expect_flag_refused("--max-conns", "99999999999999999999999");
    expect_flag_refused("--conn-timeout-s", "-1");
    expect_flag_refused("--conn-timeout-s", "3601");
    expect_flag_refused("--threads", "257");
    expect_flag_refused("--max-header-bytes", "4095");
    expect_flag_refused("--redis-timeout-ms", "0");
    expect_flag_refused("--redis-timeout-ms", "+5");
    expect_flag_refused("--device-token-ttl-s", "59");
    expect_flag_refused("--device-token-ttl-s", "34560001");
    expect_flag_refused("--audit-retention-days", "0");
    expect_flag_refused("--audit-retention-days", "36501");
}

static void
ip_prefix_lengths_out_of_range_are_refused_naming_the_flag(void **state)
{
    (void)state;
    expect_flag_refused("--ipv6-ip-prefix", "31");
    expect_flag_refused("--ipv6-ip-prefix", "129");
    expect_flag_refused("--ipv6-group-prefix", "15");
    expect_flag_refused("--ipv6-group-prefix", "129");
    expect_flag_refused("--ipv4-group-prefix", "7");
    expect_flag_refused("--ipv4-group-prefix", "33");
    /* Longer than the default ip key's /64. */
    expect_flag_refused("--ipv6-group-prefix", "65");
}

static void ip_prefix_lengths_are_set_by_flag_and_environment(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(setenv("ABUSEGUARD_IPV6_IP_PREFIX", "56", 1), 0);
    assert_int_equal(setenv("ABUSEGUARD_IPV4_GROUP_PREFIX", "16", 1), 0);
    assert_int_equal(parse(&c, err, "--ipv6-group-prefix", "40", (char *)NULL),
                     AG_OK);
    assert_int_equal(c.ipv6_ip_prefix, 56);
    assert_int_equal(c.ipv6_group_prefix, 40);
    assert_int_equal(c.ipv4_group_prefix, 16);
    /* Per address, and grouped by the whole address too. */
    assert_int_equal(parse(&c, err, "--ipv6-ip-prefix", "128",
                           "--ipv6-group-prefix", "128", (char *)NULL),
                     AG_OK);
    assert_int_equal(c.ipv6_group_prefix, 128);
    /* The shortest ip key, with a group that holds it. */
    assert_int_equal(parse(&c, err, "--ipv6-ip-prefix", "32",
                           "--ipv6-group-prefix", "16", (char *)NULL),
                     AG_OK);
    assert_int_equal(c.ipv6_ip_prefix, 32);
}

static void numeric_range_bounds_are_accepted(void **state)
{
    (void)state;
    expect_flag_accepted("--max-conns", "1");
    expect_flag_accepted("--max-conns", "100000");
    expect_flag_accepted("--threads", "0");
    expect_flag_accepted("--threads", "256");
    expect_flag_accepted("--max-header-bytes", "4096");
    expect_flag_accepted("--max-header-bytes", "1048576");
    expect_flag_accepted("--conn-timeout-s", "3600");
    expect_flag_accepted("--device-token-ttl-s", "60");
    expect_flag_accepted("--device-token-ttl-s", "34560000");
    expect_flag_accepted("--ipv6-ip-prefix", "128");
    expect_flag_accepted("--ipv6-group-prefix", "16");
    expect_flag_accepted("--ipv4-group-prefix", "8");
    expect_flag_accepted("--ipv4-group-prefix", "32");
    expect_flag_accepted("--audit-retention-days", "1");
    expect_flag_accepted("--audit-retention-days", "36500");
}

static void bad_listen_and_log_level_are_refused_naming_the_flag(void **state)
{
    (void)state;
    expect_flag_refused("--listen", "127.0.0.1");
    expect_flag_refused("--listen", "example.com:80");
    expect_flag_refused("--listen", "127.0.0.1:0");
    expect_flag_refused("--listen", "127.0.0.1:65536");
    expect_flag_refused("--listen", ":8080");
    expect_flag_refused("--listen", "[::1:8080");
    expect_flag_refused("--listen", "unix://");
    expect_flag_refused("--log-level", "verbose");
}

static void too_long_path_is_refused_naming_the_flag(void **state)
{
    (void)state;
    char longest[1024];
    memset(longest, 'p', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    expect_flag_accepted("--db", longest);
    char too_long[1025];
    memset(too_long, 'p', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';
    expect_flag_refused("--db", too_long);
    expect_flag_refused("--secret-file", too_long);
}

static void
bad_environment_value_is_refused_naming_variable_and_flag(void **state)
{
    (void)state;
    assert_int_equal(setenv("ABUSEGUARD_MAX_CONNS", "lots", 1), 0);
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, (char *)NULL), AG_EINVAL);
    assert_non_null(strstr(err, "ABUSEGUARD_MAX_CONNS"));
    assert_non_null(strstr(err, "--max-conns"));
}

static void unknown_flag_and_positional_argument_are_refused(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, "--no-such-flag", "1", (char *)NULL),
                     AG_EINVAL);
    assert_non_null(strstr(err, "--no-such-flag"));
    /* A prefix of a real flag is not that flag. */
    assert_int_equal(parse(&c, err, "--max", "1", (char *)NULL), AG_EINVAL);
    assert_non_null(strstr(err, "--max"));
    assert_int_equal(parse(&c, err, "stray", (char *)NULL), AG_EINVAL);
    assert_non_null(strstr(err, "stray"));
    assert_int_equal(parse(&c, err, "-db", "x", (char *)NULL), AG_EINVAL);
    assert_non_null(strstr(err, "-db"));
}

static void flag_missing_its_value_is_refused_naming_it(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, "--db", (char *)NULL), AG_EINVAL);
    assert_non_null(strstr(err, "--db"));
}

/* Redis URLs through the flag (the parser: test_redis_addr.c). */

static void redis_flag_sets_the_address(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(
        parse(&c, err, "--redis=redis://:pw@r1:7000/2", (char *)NULL), AG_OK);
    assert_int_equal(c.redis.kind, AG_REDIS_TCP);
    assert_string_equal(c.redis.host, "r1");
    assert_int_equal(c.redis.port, 7000);
    assert_string_equal(c.redis.password, "pw");
    assert_int_equal(c.redis.db, 2);
}

static void tls_flags_need_a_rediss_url_and_go_in_pairs(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, "--redis", "rediss://:pw@r:6380",
                           "--redis-tls-ca-file", "/etc/ca.pem",
                           "--redis-tls-server-name", "redis.internal",
                           (char *)NULL),
                     AG_OK);
    assert_true(c.redis.tls);
    assert_string_equal(c.redis.tls_ca_file, "/etc/ca.pem");
    assert_string_equal(c.redis.tls_server_name, "redis.internal");
    assert_string_equal(c.redis.password, "pw");
    assert_int_equal(parse(&c, err, "--redis", "redis://r:6379",
                           "--redis-tls-ca-file", "/etc/ca.pem", (char *)NULL),
                     AG_EINVAL);
    assert_non_null(strstr(err, "--redis-tls-ca-file needs a rediss://"));
    assert_int_equal(parse(&c, err, "--redis", "rediss://r:6379",
                           "--redis-tls-cert-file", "/c.pem", (char *)NULL),
                     AG_EINVAL);
    assert_non_null(strstr(err, "go together"));
}

/* The parser's own refusals are test_redis_addr.c's; these are the same
 * URLs through the flag, whose refusal must name it. */
static void bad_redis_urls_are_refused_naming_the_flag(void **state)
{
    (void)state;
    const char *const *bad = ag_test_bad_redis_urls;
    for (size_t i = 0; i < AG_TEST_BAD_REDIS_URLS; i++)
        expect_flag_refused("--redis", bad[i]);
    /* A socket path that does not fit sun_path. */
    char url[256] = "unix:///";
    memset(url + 8, 's', 120);
    url[128] = '\0';
    expect_flag_refused("--redis", url);
}

static void config_file_sits_below_flags_and_environment(void **state)
{
    const char text[] = "# abuseguard\n"
                        "max-conns = 77\n"
                        "\n"
                        "  log-level=debug  \n"
                        "redis = redis://file:6380\n"
                        "threads = 3\n";
    const char *path = tmp_file(state, text, sizeof text - 1, 0644);
    struct ag_config c;
    char err[ERRSZ] = "";
    assert_int_equal(setenv("ABUSEGUARD_THREADS", "5", 1), 0);
    assert_int_equal(
        parse(&c, err, "--config", path, "--log-level", "warn", (char *)NULL),
        AG_OK);
    assert_int_equal(c.max_conns, 77);          /* the file */
    assert_int_equal(c.log_level, AG_LOG_WARN); /* the flag wins */
    assert_int_equal(c.threads, 5);             /* the environment wins */
    assert_string_equal(c.redis.host, "file");  /* the file */
    assert_int_equal(c.conn_timeout_s, 10);     /* the default */
    unsetenv("ABUSEGUARD_THREADS");
    /* The environment names the file too. */
    assert_int_equal(setenv("ABUSEGUARD_CONFIG", path, 1), 0);
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    assert_int_equal(c.max_conns, 77);
    unsetenv("ABUSEGUARD_CONFIG");
}

static void a_shared_config_file_holding_a_credential_is_refused(void **state)
{
    static const struct {
        const char *text, *key;
        bool credential;
    } cases[] = {
        {"redis = redis://:pw-3141@r:6379\n", "redis", true},
        {"redis = rediss+cluster://ag:pw-3141@n1:1,n2:2\n", "redis", true},
        /* Refused by the parser, judged by its '@'. */
        {"redis = redis://:pw-3141@r\n", "redis", true},
        {"webhook-url = http://a/1 https://hook:pw-3141@b/2\n", "webhook-url",
         true},
        {"webhook-url = https://apikey-3141@b/2\n", "webhook-url", true},
        /* An ACL user alone, a path, a URL without one: nothing secret. */
        {"redis = redis://ag@r:6379\n", "redis", false},
        {"webhook-url = https://b/in@2\n", "webhook-url", false},
        {"redis-password-file = /etc/ag/pw\n", "redis-password-file", false},
    };
    static const mode_t shared[] = {0644, 0640, 0604};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t m = 0; m <= sizeof shared / sizeof shared[0]; m++) {
            /* The last round: the same file, private. */
            bool private = m == sizeof shared / sizeof shared[0];
            const char *path =
                tmp_file(state, cases[i].text, strlen(cases[i].text),
                         private ? 0600 : shared[m]);
            struct ag_config c;
            char err[ERRSZ] = "";
            /* The command line's --redis overrides the file's: the file
             * shows the password all the same. */
            bool hook = strcmp(cases[i].key, "webhook-url") == 0;
            int rc =
                parse(&c, err, "--config", path, "--redis", "redis://cmd:1",
                      hook ? "--webhook-secret-file" : (char *)NULL, "/k",
                      (char *)NULL);
            unlink(path);
            if (!cases[i].credential || private) {
                if (rc != AG_OK)
                    fail_msg("case %zu mode %zu refused: %s", i, m, err);
                continue;
            }
            if (rc != AG_EINVAL)
                fail_msg("case %zu mode %zu: rc %d", i, m, rc);
            assert_string_equal(last.field, cases[i].key);
            assert_non_null(strstr(err, path));
            assert_non_null(strstr(err, "line 1"));
            assert_non_null(strstr(err, "group or others"));
            if (strstr(err, "3141"))
                fail_msg("case %zu: the message shows the secret: %s", i, err);
        }
    }
}

static void config_file_errors_name_the_line_and_key(void **state)
{
    static const char *const bad[][2] = {
        {"max-conns = 77\nmax-conn = 3\n", "line 2: unknown key 'max-conn'"},
        {"# x\nmax-conns = lots\n", "line 2: --max-conns must be"},
        {"threads = 1\nthreads = 2\n", "line 2: threads is set twice"},
        {"just words\n", "line 1: expected key = value"},
        {"help = 1\n", "line 1: unknown key 'help'"},
        {"config = /etc/x\n", "line 1: unknown key 'config'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *path = tmp_file(state, bad[i][0], strlen(bad[i][0]), 0644);
        struct ag_config c;
        char err[ERRSZ] = "";
        assert_int_equal(parse(&c, err, "--config", path, (char *)NULL),
                         AG_EINVAL);
        if (!strstr(err, bad[i][1]) || !strstr(err, path))
            fail_msg("case %zu: %s", i, err);
        unlink(path);
    }
    struct ag_config c;
    char err[ERRSZ] = "";
    assert_int_equal(
        parse(&c, err, "--config", "/nonexistent/ag.conf", (char *)NULL),
        AG_EINVAL);
    assert_non_null(strstr(err, "--config '/nonexistent/ag.conf'"));
}

static void version_flag_takes_no_value(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, "--version", (char *)NULL), AG_OK);
    assert_true(c.version);
    assert_false(c.help);
}

static void
bad_environment_value_is_ignored_when_the_flag_is_given(void **state)
{
    (void)state;
    setenv("ABUSEGUARD_MAX_CONNS", "many", 1);
    char *argv[] = {"abuseguard", "--max-conns", "7", NULL};
    struct ag_config c;
    char err[ERRSZ] = "";
    int rc = cfg_parse(&c, 3, argv, err);
    unsetenv("ABUSEGUARD_MAX_CONNS");
    assert_int_equal(rc, AG_OK);
    assert_int_equal(c.max_conns, 7);
}

static void redis_url_error_names_the_variable(void **state)
{
    (void)state;
    setenv("ABUSEGUARD_REDIS", "http://x:1", 1);
    char *argv[] = {"abuseguard", NULL};
    struct ag_config c;
    char err[ERRSZ] = "";
    int rc = cfg_parse(&c, 1, argv, err);
    unsetenv("ABUSEGUARD_REDIS");
    assert_int_equal(rc, AG_EINVAL);
    assert_non_null(strstr(err, "ABUSEGUARD_REDIS"));
}

static void webhook_urls_add_up_from_repeats_and_spaces(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    assert_int_equal(c.n_webhooks, 0);
    assert_int_equal(c.webhook_max_age_s, 3600);
    assert_int_equal(c.events_max_len, 10000);
    assert_false(c.webhook_ocsf); /* --webhook-format json */
    assert_int_equal(parse(&c, err, "--webhook-format", "ocsf", (char *)NULL),
                     AG_OK);
    assert_true(c.webhook_ocsf);
    assert_int_equal(parse(&c, err, "--webhook-url", "http://127.0.0.1:1/a",
                           "--webhook-secret-file", "/k", "--webhook-url",
                           "https://[::1]:2/b http://127.0.0.2/c",
                           "--webhook-url=http://127.0.0.3/d", (char *)NULL),
                     AG_OK);
    assert_int_equal(c.n_webhooks, 4);
    assert_string_equal(c.webhook_urls[0], "http://127.0.0.1:1/a");
    assert_string_equal(c.webhook_urls[1], "https://[::1]:2/b");
    assert_string_equal(c.webhook_urls[2], "http://127.0.0.2/c");
    assert_string_equal(c.webhook_urls[3], "http://127.0.0.3/d");
    assert_string_equal(c.webhook_secret_file, "/k");
    /* The environment holds several in one value. */
    assert_int_equal(setenv("ABUSEGUARD_WEBHOOK_URL",
                            " http://127.0.0.1/x  http://127.0.0.1/y ", 1),
                     0);
    assert_int_equal(setenv("ABUSEGUARD_WEBHOOK_SECRET_FILE", "/k", 1), 0);
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    assert_int_equal(c.n_webhooks, 2);
    assert_string_equal(c.webhook_urls[1], "http://127.0.0.1/y");
    assert_false(c.webhook_ocsf);
    assert_int_equal(setenv("ABUSEGUARD_WEBHOOK_FORMAT", "ocsf", 1), 0);
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    unsetenv("ABUSEGUARD_WEBHOOK_FORMAT");
    assert_true(c.webhook_ocsf);
}

static void webhook_flags_are_refused_naming_the_flag(void **state)
{
    (void)state;
    struct ag_config c;
    char err[ERRSZ];
    expect_flag_refused("--webhook-url", "ftp://127.0.0.1/x");
    expect_flag_refused("--webhook-url", "http://");
    expect_flag_refused("--webhook-url", "http:///nohost");
    expect_flag_refused("--webhook-url", "https://:8443/x");
    expect_flag_refused("--webhook-max-age-s", "0");
    expect_flag_refused("--webhook-format", "xml");
    expect_flag_refused("--events-max-len", "99");
    /* A URL without the key of its signatures. */
    assert_int_equal(
        parse(&c, err, "--webhook-url", "http://127.0.0.1/x", (char *)NULL),
        AG_EINVAL);
    assert_string_equal(last.field, "webhook-secret-file");
    /* The key of signatures nothing would be sent with: a slip. */
    assert_int_equal(
        parse(&c, err, "--webhook-secret-file", "/k", (char *)NULL), AG_EINVAL);
    assert_string_equal(last.field, "webhook-url");
    /* More receivers than AG_CONFIG_WEBHOOKS_MAX. */
    assert_int_equal(parse(&c, err, "--webhook-secret-file", "/k",
                           "--webhook-url",
                           "http://a/1 http://a/2 http://a/3 http://a/4 "
                           "http://a/5 http://a/6 http://a/7 http://a/8 "
                           "http://a/9",
                           (char *)NULL),
                     AG_EINVAL);
    assert_string_equal(last.field, "webhook-url");
}

static void pwned_files_add_up_to_one_of_each_mode(void **state)
{
    struct ag_config c;
    char err[ERRSZ];
    assert_int_equal(parse(&c, err, (char *)NULL), AG_OK);
    assert_int_equal(c.n_pwned_files, 0);
    /* Repeated beside another repeated flag: each keeps its own. */
    assert_int_equal(parse(&c, err, "--pwned-file", "/c/sha1.agp",
                           "--webhook-url", "http://127.0.0.1/a",
                           "--webhook-secret-file", "/k", "--pwned-file",
                           "/c/ntlm.agp", "--webhook-url", "http://127.0.0.1/b",
                           (char *)NULL),
                     AG_OK);
    assert_int_equal(c.n_pwned_files, 2);
    assert_string_equal(c.pwned_files[0], "/c/sha1.agp");
    assert_string_equal(c.pwned_files[1], "/c/ntlm.agp");
    assert_int_equal(c.n_webhooks, 2);
    assert_string_equal(c.webhook_urls[1], "http://127.0.0.1/b");
    /* A third is refused naming the flag. */
    assert_int_equal(parse(&c, err, "--pwned-file", "/a", "--pwned-file",
                           "/b /c", (char *)NULL),
                     AG_EINVAL);
    assert_string_equal(last.field, "pwned-file");
    assert_non_null(strstr(err, "more than 2 times"));
    /* The config file and the environment hold both in one value. */
    const char text[] = "pwned-file = /f/sha1.agp /f/ntlm.agp\n";
    const char *path = tmp_file(state, text, sizeof text - 1, 0644);
    assert_int_equal(parse(&c, err, "--config", path, (char *)NULL), AG_OK);
    assert_int_equal(c.n_pwned_files, 2);
    assert_string_equal(c.pwned_files[1], "/f/ntlm.agp");
    assert_int_equal(setenv("ABUSEGUARD_PWNED_FILE", "/e/sha1.agp", 1), 0);
    assert_int_equal(parse(&c, err, "--config", path, (char *)NULL), AG_OK);
    assert_int_equal(c.n_pwned_files, 1);
    assert_string_equal(c.pwned_files[0], "/e/sha1.agp");
}
static void webhook_urls_libcurl_cannot_use_are_refused_unquoted(void **state)
{
    (void)state;
    /* Each of these started the service, and then every delivery failed
     * until the event aged out. */
    static const char *const bad[] = {
        "http://u:pw-5813@/x",
        "http://u:pw-5813@[::1/x",
        "http://u:pw-5813@127.0.0.1:0/x",
        "http://u:pw-5813@127.0.0.1:99999/x",
        "http://u:pw-5813@127.0.0.1/x\nX-Injected:1",
        "http://u:pw-5813@127.0.0.1/x\r",
        "http://u:pw-5813@127.0.0.1/x\x7f",
        "http://u:pw-5813@127.0.0.1/\tx",
        "http://u:pw-5813@ho st/x",
        "gopher://u:pw-5813@127.0.0.1/x",
        "127.0.0.1:8080/x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_flag_refused("--webhook-url", bad[i]);
        if (strstr(last.msg, "pw-5813"))
            fail_msg("'%s': the message shows the password: %s", bad[i],
                     last.msg);
    }
    /* What libcurl takes: any case of the scheme, a name, an IPv6
     * address, the port's bounds, a credential. */
    static const char *const good[] = {
        "HTTPS://hooks.example/in", "http://[::1]:1/x",
        "http://127.0.0.1:65535", "https://u:pw@hooks.example:8443/in?k=v",
        "http://h:/x"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct ag_config c;
        char err[ERRSZ];
        if (parse(&c, err, "--webhook-url", good[i], "--webhook-secret-file",
                  "/k", (char *)NULL) != AG_OK)
            fail_msg("'%s' was refused: %s", good[i], err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(defaults_apply_without_flags_or_environment),
        ENV_TEST(webhook_urls_add_up_from_repeats_and_spaces),
        ENV_TEST(webhook_flags_are_refused_naming_the_flag),
        ENV_TEST(webhook_urls_libcurl_cannot_use_are_refused_unquoted),
        FILE_TEST(a_shared_config_file_holding_a_credential_is_refused),
        ENV_TEST(flags_with_separate_values_override_defaults),
        ENV_TEST(flag_equals_value_form_is_accepted),
        ENV_TEST(listen_localhost_becomes_loopback_address),
        ENV_TEST(admin_listen_takes_an_address_or_a_unix_socket),
        ENV_TEST(help_flag_takes_no_value),
        ENV_TEST(environment_variables_set_values),
        ENV_TEST(command_line_flag_wins_over_environment),
        ENV_TEST(bad_numeric_values_are_refused_naming_the_flag),
        ENV_TEST(ip_prefix_lengths_out_of_range_are_refused_naming_the_flag),
        ENV_TEST(ip_prefix_lengths_are_set_by_flag_and_environment),
        ENV_TEST(numeric_range_bounds_are_accepted),
        ENV_TEST(bad_listen_and_log_level_are_refused_naming_the_flag),
        ENV_TEST(too_long_path_is_refused_naming_the_flag),
        ENV_TEST(bad_environment_value_is_refused_naming_variable_and_flag),
        ENV_TEST(unknown_flag_and_positional_argument_are_refused),
        ENV_TEST(flag_missing_its_value_is_refused_naming_it),
        ENV_TEST(redis_flag_sets_the_address),
        ENV_TEST(bad_redis_urls_are_refused_naming_the_flag),
        ENV_TEST(tls_flags_need_a_rediss_url_and_go_in_pairs),
        FILE_TEST(config_file_sits_below_flags_and_environment),
        FILE_TEST(config_file_errors_name_the_line_and_key),
        ENV_TEST(version_flag_takes_no_value),
        ENV_TEST(bad_environment_value_is_ignored_when_the_flag_is_given),
        ENV_TEST(redis_url_error_names_the_variable),
        FILE_TEST(pwned_files_add_up_to_one_of_each_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
