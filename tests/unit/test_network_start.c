/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_network at start: --ip-list values parse into a name, a format and
 * a path, and a refused one is left as it was; start refuses a file that
 * cannot be read or is damaged, naming its flag and path (a list by its
 * name too), and lists past the cap, a name given twice or malformed,
 * freeing what it loaded before (AddressSanitizer's leak check); a
 * network without files knows nothing. Serving and replacing the files:
 * test_network.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ag_error.h"
#include "ag_metrics.h"
#include "ag_network.h"
#include "ag_test_metrics.h"

struct fx {
    char dir[64];
    char tor[128], missing[128], junk[128];
    struct ag_metrics *m;
    struct ag_network *n;
};

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ag_test_network_start.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->tor, sizeof f->tor, "%s/tor.txt", f->dir);
    snprintf(f->missing, sizeof f->missing, "%s/missing", f->dir);
    snprintf(f->junk, sizeof f->junk, "%s/junk.txt", f->dir);
    write_text(f->tor, "81.2.69.7\n");
    write_text(f->junk, "nonsense\n");
    f->m = ag_metrics_new();
    assert_non_null(f->m);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];
    ag_network_stop(f->n);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    ag_metrics_free(f->m);
    free(f);
    return 0;
}

static struct ag_netinfo look(struct ag_network *n, const char *text)
{
    struct ag_ip ip;
    struct ag_error err;
    if (ag_identity_ip(text, &ip, "ip", &err) != AG_OK)
        fail_msg("bad test address %s", text);
    struct ag_netinfo out;
    memset(&out, 0x5a, sizeof out); /* every field must be written */
    ag_network_lookup(n, &ip, &out);
    return out;
}

static void list_values_parse_name_format_and_path(void **s)
{
    (void)s;
    struct ag_network_list_opt o;
    struct ag_error err;
    static const struct {
        const char *text, *name, *path;
        enum ag_iplist_format format;
    } good[] = {
        {"tor=/x/tor.txt", "tor", "/x/tor.txt", AG_IPLIST_AUTO},
        {"drop_v4:spamhaus=/x/d.json", "drop_v4", "/x/d.json",
         AG_IPLIST_SPAMHAUS},
        {"aws-2:aws=/a=b:c", "aws-2", "/a=b:c", AG_IPLIST_AWS},
        {"abcdefghijklmnopqrstuvwxyz012345=p", /* 32 */
         "abcdefghijklmnopqrstuvwxyz012345", "p", AG_IPLIST_AUTO},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s", good[i].text);
        assert_int_equal(ag_network_list_opt_parse(text, &o, &err), AG_OK);
        assert_string_equal(o.name, good[i].name);
        assert_string_equal(o.path, good[i].path);
        assert_int_equal(o.format, good[i].format);
    }
    static const char *const bad[][2] = {
        {"tor", "is not NAME=PATH"},
        {"tor=", "is not NAME=PATH"},
        {"=/x", "name ''"},
        {"Tor=/x", "name 'Tor'"},
        {"a.b=/x", "name 'a.b'"},
        {"abcdefghijklmnopqrstuvwxyz0123456=p", "is not 1 to 32"},
        {":plain=/x", "name ''"},
        {"x:=/x", "format ''"},
        {"x:csv=/x", "format 'csv'"},
        {"x:plainplainplainplain=/x", "format 'plainplainplainplain'"},
        {"x:PLAIN=/x", "format 'PLAIN'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s", bad[i][0]);
        err = (struct ag_error){0};
        assert_int_equal(ag_network_list_opt_parse(text, &o, &err), AG_EINVAL);
        assert_string_equal(err.field, "ip-list");
        assert_string_equal(text, bad[i][0]); /* left as it was */
        if (strncmp(err.msg, "ip-list ", 8) != 0 || !strstr(err.msg, bad[i][1]))
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i][0], err.msg, bad[i][1]);
    }
}

static void a_network_without_files_knows_nothing(void **s)
{
    struct fx *f = *s;
    struct ag_error err;
    assert_int_equal(
        ag_network_start(
            &(struct ag_network_opts){.metrics = f->m, .interval_ms = 1000},
            &f->n, &err),
        AG_OK);
    assert_non_null(f->n);
    assert_false(ag_network_active(f->n));
    assert_false(ag_network_has_country(f->n));
    assert_false(ag_network_has_asn(f->n));
    assert_int_equal(ag_network_nlists(f->n), 0);
    assert_int_equal(ag_network_list_index(f->n, "tor"), -1);
    ag_network_tick(f->n);
    struct ag_netinfo zero;
    memset(&zero, 0, sizeof zero);
    struct ag_netinfo r = look(f->n, "81.2.69.7");
    assert_memory_equal(&r, &zero, sizeof r);
    r = look(NULL, "81.2.69.7");
    assert_memory_equal(&r, &zero, sizeof r);
    assert_false(ag_network_active(NULL));
    assert_non_null(strstr(ag_test_metrics_text(f->m),
                           "abuseguard_network_lookups_total{database="
                           "\"country\"} 0\n"));
    ag_network_stop(NULL);
}

static void refused_at_start(const struct ag_network_opts *o, int code,
                             const char *field, const char *w1, const char *w2)
{
    struct ag_network *n = (struct ag_network *)1;
    struct ag_error err = {0};
    assert_int_equal(ag_network_start(o, &n, &err), code);
    assert_null(n);
    assert_string_equal(err.field, field);
    if (strncmp(err.msg, field, strlen(field)) != 0 || !strstr(err.msg, w1) ||
        !strstr(err.msg, w2))
        fail_msg("\"%s\" lacks \"%s\" or \"%s\"", err.msg, w1, w2);
    assert_null(strchr(err.msg, '\n'));
}

static void start_refuses_a_bad_file_naming_its_flag_and_path(void **s)
{
    struct fx *f = *s;

    const char *missing = f->missing, *junk = f->junk;
    refused_at_start(&(struct ag_network_opts){.geoip_path = missing}, AG_EIO,
                     "geoip-file", missing, "No such file");
    refused_at_start(&(struct ag_network_opts){.asn_path = missing}, AG_EIO,
                     "asn-file", missing, "No such file");
    refused_at_start(&(struct ag_network_opts){.asn_path = junk}, AG_EINVAL,
                     "asn-file", junk, "");
    refused_at_start(&(struct ag_network_opts){.geoip_path = junk}, AG_EINVAL,
                     "geoip-file", junk, "");

    struct ag_network_list_opt l[AG_NETWORK_LISTS_MAX + 1];
    for (size_t i = 0; i <= AG_NETWORK_LISTS_MAX; i++)
        l[i] = (struct ag_network_list_opt){.name = "tor", .path = f->tor};
    l[1].name = "dc";
    l[1].path = junk;
    refused_at_start(&(struct ag_network_opts){.lists = l, .nlists = 2},
                     AG_EINVAL, "ip-list", "ip-list dc=", "junk.txt: line 1");
    l[1].path = NULL;
    refused_at_start(&(struct ag_network_opts){.lists = l, .nlists = 2},
                     AG_EINVAL, "ip-list", "ip-list dc", "has no path");
    l[1].path = missing;
    refused_at_start(&(struct ag_network_opts){.lists = l, .nlists = 2}, AG_EIO,
                     "ip-list", "ip-list dc=", "missing: No such");
    l[1].name = "tor";
    refused_at_start(&(struct ag_network_opts){.lists = l, .nlists = 2},
                     AG_EINVAL, "ip-list", "tor", "given twice");
    l[1].name = "Bad";
    refused_at_start(&(struct ag_network_opts){.lists = l, .nlists = 2},
                     AG_EINVAL, "ip-list", "'Bad'", "a-z");
    refused_at_start(
        &(struct ag_network_opts){.lists = l,
                                  .nlists = AG_NETWORK_LISTS_MAX + 1},
        AG_EINVAL, "ip-list", "more than 32", "");
}

static void a_started_list_is_named_and_looked_up(void **s)
{
    struct fx *f = *s;
    struct ag_network_list_opt l = {.name = "tor", .path = f->tor};
    struct ag_error err;
    assert_int_equal(ag_network_start(
                         &(struct ag_network_opts){
                             .lists = &l, .nlists = 1, .metrics = f->m},
                         &f->n, &err),
                     AG_OK);
    assert_true(ag_network_active(f->n));
    assert_false(ag_network_has_country(f->n));
    assert_false(ag_network_has_asn(f->n));
    struct ag_netinfo r = look(f->n, "81.2.69.7");
    assert_int_equal(r.lists, 1);
    assert_string_equal(r.country, "");
    assert_int_equal(r.asn, 0);
    assert_non_null(strstr(ag_test_metrics_text(f->m),
                           "\nabuseguard_network_list_entries{list=\"tor\"} "
                           "1\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(list_values_parse_name_format_and_path),
        T(a_network_without_files_knows_nothing),
        T(start_refuses_a_bad_file_naming_its_flag_and_path),
        T(a_started_list_is_named_and_looked_up),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
