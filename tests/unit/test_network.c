/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_network: the country and ASN databases and the named IP lists as
 * served. A lookup fills the country, the ASN and each list's bit (or its
 * special bit, for a private address a list holds); a file renamed over a
 * path is loaded at the next look; a damaged or missing replacement keeps
 * the last good file and is counted and logged once however many looks
 * see it, and a later good one is loaded; a file rewritten in place is
 * loaded again (lookups in between answer from the last good), and one
 * written to while it is read is taken at the next look; a lookup
 * in progress keeps the file it holds until it ends, and the look after
 * frees it; lookups racing the watcher see one file or the other, never
 * a freed one (AddressSanitizer). The MMDB files come from MaxMind's own
 * writer (tests/tools/mmdb_write.pl), as in test_geo.c. Looks are driven
 * by hand (interval 0), but for one test of the watcher thread itself.
 * Starting (refusals, --ip-list values, no files): test_network_start.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ag_error.h"
#include "ag_geo.h"
#include "ag_metrics.h"
#include "ag_network.h"
#include "ag_test_metrics.h"

/* ---- the files, written once for all tests ---- */

static const struct {
    const char *name, *spec;
} dbs[] = {
    {"country_a",
     "{\"ip_version\": 6, \"database_type\": \"GeoLite2-Country\","
     " \"ipv4_aliases\": true, \"build_epoch\": 1700000000, \"networks\": ["
     " {\"cidr\": \"81.2.69.0/24\", \"country\": \"GB\"},"
     " {\"cidr\": \"2001:db8::/32\", \"country\": \"DE\"}]}"},
    {"country_b",
     "{\"ip_version\": 6, \"database_type\": \"GeoLite2-Country\","
     " \"ipv4_aliases\": true, \"build_epoch\": 1700000100, \"networks\": ["
     " {\"cidr\": \"81.2.69.0/24\", \"country\": \"FR\"}]}"},
    {"asn_a", "{\"ip_version\": 6, \"database_type\": \"GeoLite2-ASN\","
              " \"ipv4_aliases\": true, \"networks\": ["
              " {\"cidr\": \"81.2.69.0/24\", \"asn\": 20712},"
              " {\"cidr\": \"2001:db8::/32\", \"asn\": 64500}]}"},
    {"asn_b", "{\"ip_version\": 6, \"database_type\": \"GeoLite2-ASN\","
              " \"ipv4_aliases\": true, \"networks\": ["
              " {\"cidr\": \"81.2.69.0/24\", \"asn\": 174}]}"},
};
#define NDBS (sizeof dbs / sizeof dbs[0])

/* Two lists: "tor" holds public addresses only; "dc" holds 10.0.0.0/8
 * too, a special range (FireHOL level1 does). */
static const char tor_text[] = "81.2.69.7\n203.0.113.0/24\n";
static const char tor_text_b[] = "# replaced\n198.51.100.9\n";
static const char dc_text[] = "10.0.0.0/8\n198.51.100.0/24\n81.2.69.0/24\n";

static char dir[64]; /* the originals */

/* The repository: $AG_SOURCE_DIR, else this file's path less its tail. */
static void source_dir(char *out, size_t len)
{
    const char *env = getenv("AG_SOURCE_DIR");
    if (env && env[0]) {
        snprintf(out, len, "%s", env);
        return;
    }
    static const char file[] = __FILE__, tail[] = "tests/unit/test_network.c";
    size_t n = sizeof file - 1, t = sizeof tail - 1;
    n = n >= t && strcmp(&file[n - t], tail) == 0 ? n - t : 0;
    snprintf(out, len, "%.*s", n ? (int)n : 1, n ? file : ".");
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static int remove_all(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int write_dbs(void **state)
{
    (void)state;
    char src[512], cmd[4096], p[256];
    size_t off = 0;
    snprintf(dir, sizeof dir, "/tmp/ag_test_network.XXXXXX");
    assert_non_null(mkdtemp(dir));
    source_dir(src, sizeof src);
    for (size_t i = 0; i < NDBS; i++) {
        snprintf(p, sizeof p, "%s/%s.json", dir, dbs[i].name);
        write_text(p, dbs[i].spec, strlen(dbs[i].spec));
        off += (size_t)snprintf(cmd + off, sizeof cmd - off,
                                "perl '%s/tests/tools/mmdb_write.pl' --spec "
                                "'%s' '%s/%s.mmdb' & ",
                                src, p, dir, dbs[i].name);
        assert_true(off < sizeof cmd);
    }
    snprintf(cmd + off, sizeof cmd - off, "wait");
    assert_int_equal(system(cmd), 0);
    for (size_t i = 0; i < NDBS; i++) {
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s.mmdb", dir, dbs[i].name);
        if (stat(p, &sb) != 0 || sb.st_size == 0) {
            remove_all(NULL);
            fail_msg("%s/tests/tools/mmdb_write.pl did not write %s (set "
                     "AG_SOURCE_DIR to the repository)",
                     src, p);
        }
    }
    return 0;
}

/* ---- each test's live files ---- */

struct fx {
    char dir[64];
    char country[128], asn[128], tor[128], dc[128];
    struct ag_metrics *m;
    struct ag_network *n;
};

/* Renames a copy of the original name over path, as an updater does. */
static void rename_db(struct fx *f, const char *name, const char *path)
{
    char cmd[512], tmp[192];
    snprintf(tmp, sizeof tmp, "%s/new.tmp", f->dir);
    snprintf(cmd, sizeof cmd, "cp '%s/%s.mmdb' '%s'", dir, name, tmp);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(rename(tmp, path), 0);
}

static void rename_text(struct fx *f, const char *text, const char *path)
{
    char tmp[192];
    snprintf(tmp, sizeof tmp, "%s/new.tmp", f->dir);
    write_text(tmp, text, strlen(text));
    assert_int_equal(rename(tmp, path), 0);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ag_test_network_live.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->country, sizeof f->country, "%s/country.mmdb", f->dir);
    snprintf(f->asn, sizeof f->asn, "%s/asn.mmdb", f->dir);
    snprintf(f->tor, sizeof f->tor, "%s/tor.txt", f->dir);
    snprintf(f->dc, sizeof f->dc, "%s/dc.netset", f->dir);
    rename_db(f, "country_a", f->country);
    rename_db(f, "asn_a", f->asn);
    write_text(f->tor, tor_text, strlen(tor_text));
    write_text(f->dc, dc_text, strlen(dc_text));
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

static void start_with(struct fx *f, unsigned interval_ms)
{
    const struct ag_network_list_opt lists[] = {
        {.name = "tor", .format = AG_IPLIST_AUTO, .path = f->tor},
        {.name = "dc", .format = AG_IPLIST_PLAIN, .path = f->dc},
    };
    struct ag_error err = {0};
    int rc =
        ag_network_start(&(struct ag_network_opts){.geoip_path = f->country,
                                                   .asn_path = f->asn,
                                                   .lists = lists,
                                                   .nlists = 2,
                                                   .metrics = f->m,
                                                   .interval_ms = interval_ms},
                         &f->n, &err);
    if (rc)
        fail_msg("start: %s", err.msg);
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

#define TOR (1u << 0)
#define DC (1u << 1)

static void assert_seen(struct ag_network *n, const char *ip,
                        const char *country, uint32_t asn, uint32_t lists,
                        uint32_t special)
{
    struct ag_netinfo r = look(n, ip);
    if (strcmp(r.country, country) != 0 || r.asn != asn || r.lists != lists ||
        r.lists_special != special)
        fail_msg("%s: \"%.2s\" AS%u lists %#x special %#x, want \"%s\" AS%u "
                 "%#x %#x",
                 ip, r.country, r.asn, r.lists, r.lists_special, country, asn,
                 lists, special);
}

/* Series abuseguard_network_<series> in the /metrics text; -1 if it is
 * not listed. */
static long long value(struct ag_metrics *m, const char *series)
{
    const char *text = ag_test_metrics_text(m);
    char head[256];
    snprintf(head, sizeof head, "\nabuseguard_network_%s ", series);
    const char *at = strstr(text, head);
    return at ? strtoll(at + strlen(head), NULL, 10) : -1;
}

static void expect(struct ag_metrics *m, long long want, const char *series)
{
    long long got = value(m, series);
    if (got != want)
        fail_msg("abuseguard_network_%s is %lld, want %lld", series, got, want);
}

#define COUNTRY_AGE "database_age_seconds{database=\"country\"}"

/* ---- stderr, where the log lines go ---- */

static int saved_stderr = -1;
static char log_path[128];

static void capture_begin(struct fx *f)
{
    snprintf(log_path, sizeof log_path, "%s/stderr.log", f->dir);
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved_stderr >= 0 && fd >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
}

/* Ends the capture; the lines written meanwhile, in a static buffer. */
static const char *capture_end(void)
{
    static char text[64 * 1024];
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    FILE *in = fopen(log_path, "rb");
    assert_non_null(in);
    size_t n = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    text[n] = '\0';
    return text;
}

static int occurrences(const char *text, const char *needle)
{
    int k = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        k++;
    return k;
}

/* ---- inside a lookup, and a load: wrapped (-Wl,--wrap) ---- */

int __real_ag_geo_lookup(const struct ag_geo *g, const struct ag_ip *ip,
                         struct ag_geo_result *out);
int __wrap_ag_geo_lookup(const struct ag_geo *g, const struct ag_ip *ip,
                         struct ag_geo_result *out);
int __real_ag_iplist_load(const char *path, enum ag_iplist_format f,
                          struct ag_iplist **out, struct ag_error *err);
int __wrap_ag_iplist_load(const char *path, enum ag_iplist_format f,
                          struct ag_iplist **out, struct ag_error *err);

/* Run once: inside the next database lookup, after ag_network_lookup took
 * its holds and before it reads g; after the next list load. */
static void (*during_lookup)(void *), (*during_load)(void *);
static void *during_arg;

int __wrap_ag_geo_lookup(const struct ag_geo *g, const struct ag_ip *ip,
                         struct ag_geo_result *out)
{
    void (*fn)(void *) = during_lookup;
    if (fn) { /* only written when set: the racing test's threads read */
        during_lookup = NULL;
        fn(during_arg);
    }
    return __real_ag_geo_lookup(g, ip, out);
}

int __wrap_ag_iplist_load(const char *path, enum ag_iplist_format f,
                          struct ag_iplist **out, struct ag_error *err)
{
    int rc = __real_ag_iplist_load(path, f, out, err);
    void (*fn)(void *) = during_load;
    if (fn) { /* only written when set: the racing test's threads read */
        during_load = NULL;
        fn(during_arg);
    }
    return rc;
}

/* The databases' private copies mapped in this process now. */
static int copies_mapped(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int k = 0;
    assert_non_null(maps);
    while (fgets(line, sizeof line, maps))
        k += strstr(line, "memfd:ag-geo") != NULL;
    fclose(maps);
    return k;
}

/* ---- tests ---- */

static void lookups_fill_country_asn_and_each_lists_bit(void **state)
{
    struct fx *f = *state;
    capture_begin(f);
    start_with(f, 0);
    const char *log = capture_end();
    assert_true(ag_network_active(f->n));
    assert_true(ag_network_has_country(f->n));
    assert_true(ag_network_has_asn(f->n));
    assert_int_equal(ag_network_nlists(f->n), 2);
    assert_int_equal(ag_network_list_index(f->n, "dc"), 1);
    assert_int_equal(ag_network_list_index(f->n, "tor"), 0);
    assert_int_equal(ag_network_list_index(f->n, "nope"), -1);
    assert_string_equal(ag_network_list_name(f->n, 1), "dc");
    assert_null(ag_network_list_name(f->n, 2));

    assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    assert_seen(f->n, "81.2.69.8", "GB", 20712, DC, 0);
    assert_seen(f->n, "2001:db8::1", "DE", 64500, 0, 0);
    assert_seen(f->n, "203.0.113.5", "", 0, TOR, 0);
    assert_seen(f->n, "10.1.2.3", "", 0, 0, DC);

    /* dc's special range is said at load, by name and count, with no
     * address; tor has none. */
    assert_int_equal(occurrences(log, "\"ip_list_special\""), 1);
    assert_non_null(strstr(log, "ip-list dc: 1 of its entries"));
    assert_null(strstr(log, "10.0.0.0"));

    expect(f->m, 5, "lookups_total{database=\"country\"}");
    expect(f->m, 5, "lookups_total{database=\"asn\"}");
    expect(f->m, 2, "misses_total{database=\"country\"}");
    expect(f->m, 2, "misses_total{database=\"asn\"}");
    expect(f->m, 2, "list_entries{list=\"tor\"}");
    expect(f->m, 3, "list_entries{list=\"dc\"}");
    expect(f->m, 0, "list_special_only_total{list=\"tor\"}");
    expect(f->m, 1, "list_special_only_total{list=\"dc\"}");
    expect(f->m, 0, "reload_failures_total{file=\"geoip\"}");
    expect(f->m, 0, "reload_failures_total{file=\"asn\"}");
    expect(f->m, 0, "reload_failures_total{file=\"tor\"}");
    expect(f->m, 0, "reload_failures_total{file=\"dc\"}");
    long long age = (long long)time(NULL) - 1700000000;
    assert_in_range(value(f->m, COUNTRY_AGE), age - 2, age + 2);

    /* Stopped: the gauges of what was served go. */
    ag_network_stop(f->n);
    f->n = NULL;
    expect(f->m, -1, "list_entries{list=\"dc\"}");
    expect(f->m, -1, "database_age_seconds{database=\"asn\"}");
    assert_int_equal(value(f->m, COUNTRY_AGE), -1);
}

static void a_file_renamed_over_its_path_is_loaded_at_the_next_look(void **s)
{
    struct fx *f = *s;
    start_with(f, 0);
    ag_network_tick(f->n); /* nothing changed: nothing happens */
    assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    long long before = value(f->m, COUNTRY_AGE);

    rename_db(f, "country_b", f->country);
    rename_db(f, "asn_b", f->asn);
    rename_text(f, tor_text_b, f->tor);
    assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    ag_network_tick(f->n);
    assert_seen(f->n, "81.2.69.7", "FR", 174, DC, 0);
    assert_seen(f->n, "2001:db8::1", "", 0, 0, 0);
    assert_seen(f->n, "198.51.100.9", "", 0, TOR | DC, 0);
    /* country_b was built 100 s after country_a. */
    assert_in_range(before - value(f->m, COUNTRY_AGE), 98, 102);
    expect(f->m, 1, "list_entries{list=\"tor\"}");
    expect(f->m, 0, "reload_failures_total{file=\"geoip\"}");
}

static void a_bad_replacement_keeps_the_last_good_and_is_counted_once(void **s)
{
    struct fx *f = *s;
    start_with(f, 0);
    capture_begin(f);
    rename_text(f, "not an mmdb file, just text\n", f->country);
    rename_text(f, "10.0.0.300\n", f->tor);
    assert_int_equal(unlink(f->dc), 0);
    for (int i = 0; i < 3; i++) {
        ag_network_tick(f->n);
        assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    }
    const char *log = capture_end();
    assert_int_equal(occurrences(log, "\"network_reload_failed\""), 3);
    assert_non_null(strstr(log, f->country));
    assert_non_null(strstr(log, "ip-list tor="));
    assert_non_null(strstr(log, "line 1"));
    assert_non_null(strstr(log, "ip-list dc="));
    assert_non_null(strstr(log, "No such file"));
    expect(f->m, 1, "reload_failures_total{file=\"geoip\"}");
    expect(f->m, 1, "reload_failures_total{file=\"tor\"}");
    expect(f->m, 1, "reload_failures_total{file=\"dc\"}");
    expect(f->m, 0, "reload_failures_total{file=\"asn\"}");

    /* Good files after them are loaded, and counted as nothing. */
    rename_db(f, "country_b", f->country);
    rename_text(f, tor_text_b, f->tor);
    write_text(f->dc, dc_text, strlen(dc_text));
    ag_network_tick(f->n);
    assert_seen(f->n, "81.2.69.7", "FR", 20712, DC, 0);
    assert_seen(f->n, "198.51.100.9", "", 0, TOR | DC, 0);
    expect(f->m, 1, "reload_failures_total{file=\"geoip\"}");
}

/* As `cp new path` does: the same inode emptied, then written. */
static void a_file_rewritten_in_place_is_loaded_again(void **s)
{
    struct fx *f = *s;
    start_with(f, 0);
    struct stat was, is;
    assert_int_equal(stat(f->country, &was), 0);

    int fd = open(f->country, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    ag_network_tick(f->n); /* empty: refused, the last good stays */
    assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    char from[256], buf[4096];
    snprintf(from, sizeof from, "%s/country_b.mmdb", dir);
    FILE *in = fopen(from, "rb");
    assert_non_null(in);
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(write(fd, buf, n), (ssize_t)n);
    fclose(in);
    assert_int_equal(close(fd), 0);
    assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    ag_network_tick(f->n);
    assert_seen(f->n, "81.2.69.7", "FR", 20712, TOR | DC, 0);
    assert_int_equal(stat(f->country, &is), 0);
    assert_int_equal(is.st_ino, was.st_ino);
    expect(f->m, 1, "reload_failures_total{file=\"geoip\"}");

    /* A list too. */
    write_text(f->dc, "192.0.2.0/24\n", strlen("192.0.2.0/24\n"));
    ag_network_tick(f->n);
    assert_seen(f->n, "81.2.69.7", "FR", 20712, TOR, 0);
    assert_seen(f->n, "10.1.2.3", "", 0, 0, 0);
    assert_seen(f->n, "192.0.2.1", "", 0, DC, 0);
}

/* The writer of the file being loaded finishes it. */
static void finish_tor(void *arg)
{
    struct fx *f = arg;
    static const char whole[] = "198.51.100.9\n203.0.113.0/24\n";
    FILE *out = fopen(f->tor, "ab");
    assert_non_null(out);
    assert_true(fputs(whole + 13, out) >= 0);
    assert_int_equal(fclose(out), 0);
}

static void
a_file_written_to_while_it_is_read_is_taken_at_the_next_look(void **s)
{
    struct fx *f = *s;
    start_with(f, 0);
    /* The first line only, which parses: a part served would lose
     * 203.0.113.0/24. */
    write_text(f->tor, "198.51.100.9\n", 13);
    during_load = finish_tor;
    during_arg = f;
    ag_network_tick(f->n);
    assert_true(during_load == NULL);
    assert_seen(f->n, "81.2.69.7", "GB", 20712, TOR | DC, 0);
    assert_seen(f->n, "198.51.100.9", "", 0, DC, 0);
    ag_network_tick(f->n);
    assert_seen(f->n, "81.2.69.7", "GB", 20712, DC, 0);
    assert_seen(f->n, "198.51.100.9", "", 0, TOR | DC, 0);
    assert_seen(f->n, "203.0.113.5", "", 0, TOR, 0);
    expect(f->m, 0, "reload_failures_total{file=\"tor\"}");
}

/* Inside a lookup that holds country_a: country_b is renamed in and
 * swapped; country_a, retired, stays mapped for the lookup. */
static void swap_during_lookup(void *arg)
{
    struct fx *f = arg;
    rename_db(f, "country_b", f->country);
    ag_network_tick(f->n);
    assert_int_equal(copies_mapped(), 3);
}

static void a_lookup_in_progress_keeps_its_file_until_it_ends(void **s)
{
    struct fx *f = *s;
    start_with(f, 0);
    if (copies_mapped() != 2)
        skip(); /* no memfd here: the copies are temporary files */
    /* Looked at with no lookup running, a replaced file goes at once. */
    rename_db(f, "asn_b", f->asn);
    ag_network_tick(f->n);
    assert_int_equal(copies_mapped(), 2);
    assert_seen(f->n, "81.2.69.7", "GB", 174, TOR | DC, 0);

    during_lookup = swap_during_lookup;
    during_arg = f;
    /* The lookup answers from the file it held, read after the swap. */
    assert_seen(f->n, "81.2.69.7", "GB", 174, TOR | DC, 0);
    assert_true(during_lookup == NULL);
    assert_int_equal(copies_mapped(), 3);
    ag_network_tick(f->n); /* let go: freed now */
    assert_int_equal(copies_mapped(), 2);
    assert_seen(f->n, "81.2.69.7", "FR", 174, TOR | DC, 0);
}

static void the_watcher_thread_loads_a_replacement(void **s)
{
    struct fx *f = *s;
    start_with(f, 10);
    rename_db(f, "country_b", f->country);
    /* Up to 10 s: a loaded machine may run the watcher late. */
    for (int i = 0; i < 1000; i++) {
        if (strcmp(look(f->n, "81.2.69.7").country, "FR") == 0)
            return;
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000000L}, NULL);
    }
    fail_msg("the watcher did not load the replacement");
}

struct racer {
    struct ag_network *n;
    atomic_bool stop;
    atomic_uint bad, lookups;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    struct ag_ip ip;
    struct ag_error err;
    if (ag_identity_ip("81.2.69.7", &ip, "ip", &err) != AG_OK)
        atomic_fetch_add(&r->bad, 1);
    while (!atomic_load(&r->stop)) {
        struct ag_netinfo out;
        ag_network_lookup(r->n, &ip, &out);
        bool country =
            strcmp(out.country, "GB") == 0 || strcmp(out.country, "FR") == 0;
        bool asn = out.asn == 20712 || out.asn == 174;
        if (!country || !asn || out.lists != (TOR | DC))
            atomic_fetch_add(&r->bad, 1);
        atomic_fetch_add(&r->lookups, 1);
    }
    return NULL;
}

/* Under AddressSanitizer a file freed while a lookup reads it is a
 * use-after-free report; each answer is from one file or the other. */
static void lookups_racing_the_watcher_see_one_file_or_the_other(void **s)
{
    struct fx *f = *s;
    start_with(f, 0);
    struct racer r = {.n = f->n};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, race, &r), 0);
    for (int i = 0; i < 40; i++) {
        rename_db(f, i % 2 ? "country_a" : "country_b", f->country);
        rename_db(f, i % 2 ? "asn_a" : "asn_b", f->asn);
        ag_network_tick(f->n);
    }
    atomic_store(&r.stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_true(atomic_load(&r.lookups) > 0);
    ag_network_tick(f->n);
    assert_int_equal(copies_mapped(), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(lookups_fill_country_asn_and_each_lists_bit),
        T(a_file_renamed_over_its_path_is_loaded_at_the_next_look),
        T(a_bad_replacement_keeps_the_last_good_and_is_counted_once),
        T(a_file_rewritten_in_place_is_loaded_again),
        T(a_file_written_to_while_it_is_read_is_taken_at_the_next_look),
        T(a_lookup_in_progress_keeps_its_file_until_it_ends),
        T(the_watcher_thread_loads_a_replacement),
        T(lookups_racing_the_watcher_see_one_file_or_the_other),
#undef T
    };
    return cmocka_run_group_tests(tests, write_dbs, remove_all);
}
