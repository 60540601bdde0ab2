/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_geo on MMDB files that MaxMind's own writer makes at run time
 * (tests/tools/mmdb_write.pl, Debian's libmaxmind-db-writer-perl): the
 * country and the ASN in MaxMind's layout and in IPinfo's flat one; an
 * IPv4 address in an IPv6 database with and without the IPv4 aliases,
 * and in one with no IPv4 networks at all; an IPv6 address in an
 * IPv4-only database is a miss, not an error; open refuses what is not
 * an MMDB (text, empty, cut short, a FIFO) and a database of the wrong
 * kind, naming the field; a file truncated and rewritten in place after
 * open leaves lookups as they were (the private copy); lookups make no
 * allocation call; build_epoch, type and size read back; our answers
 * agree with libmaxminddb's mmdblookup.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <maxminddb.h>

#include "ag_error.h"
#include "ag_geo.h"
#include "ag_identity.h"

/* ---- counting allocation calls ---- */

/* Every allocation call the process makes while `counting` is set. Under
 * AddressSanitizer its own hook sees every malloc, calloc, realloc and
 * aligned allocation; without it, malloc, calloc and realloc are
 * interposed and handed to glibc's. The hook cannot be removed, hence
 * the flag. */
static volatile int counting;
static volatile unsigned long allocs;

#if defined(__SANITIZE_ADDRESS__)
#define AG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AG_TEST_ASAN 1
#endif
#endif

#ifdef AG_TEST_ASAN
/* From <sanitizer/allocator_interface.h>, which GCC does not install. */
int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void *, size_t),
    void (*free_hook)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n)
{
    (void)p;
    (void)n;
    if (counting)
        allocs++;
}

static void on_free(const volatile void *p)
{
    (void)p;
}

static void count_allocations_init(void)
{
    static int done;
    if (!done)
        __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
    done = 1;
}
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n)
{
    if (counting)
        allocs++;
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    if (counting)
        allocs++;
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    if (counting)
        allocs++;
    return __libc_realloc(p, n);
}

static void count_allocations_init(void)
{
}
#endif

/* ---- the databases, written once for all tests ---- */

struct db {
    const char *name;
    const char *spec;
};

static const struct db dbs[] = {
    {"country",
     "{\"ip_version\": 6, \"database_type\": \"GeoLite2-Country\","
     " \"ipv4_aliases\": true, \"build_epoch\": 1700000000, \"networks\": ["
     " {\"cidr\": \"81.2.69.0/24\", \"country\": \"GB\"},"
     " {\"cidr\": \"2001:db8::/32\", \"country\": \"de\"},"
     " {\"cidr\": \"192.0.2.0/24\", \"registered_country\": \"US\"},"
     " {\"cidr\": \"198.51.100.0/24\", \"country\": \"G1\"}]}"},
    {"country_noalias",
     "{\"ip_version\": 6, \"database_type\": \"GeoLite2-Country\","
     " \"ipv4_aliases\": false, \"networks\": ["
     " {\"cidr\": \"81.2.69.0/24\", \"country\": \"GB\"},"
     " {\"cidr\": \"2001:db8::/32\", \"country\": \"DE\"}]}"},
    {"country_v4",
     "{\"ip_version\": 4, \"database_type\": \"DBIP-Country-Lite\","
     " \"networks\": [{\"cidr\": \"81.2.69.0/24\", \"country\": \"GB\"}]}"},
    {"v6_only",
     "{\"ip_version\": 6, \"database_type\": \"GeoLite2-Country\","
     " \"networks\": [{\"cidr\": \"2001:db8::/32\", \"country\": \"DE\"}]}"},
    {"country_fr",
     "{\"ip_version\": 6, \"database_type\": \"GeoLite2-Country\","
     " \"ipv4_aliases\": true, \"networks\": ["
     " {\"cidr\": \"81.2.69.0/24\", \"country\": \"FR\"}]}"},
    {"asn",
     "{\"ip_version\": 6, \"database_type\": \"GeoLite2-ASN\","
     " \"ipv4_aliases\": true, \"networks\": ["
     " {\"cidr\": \"81.2.69.0/24\", \"asn\": 20712, \"as_org\": \"A&A\"},"
     " {\"cidr\": \"2001:db8::/32\", \"asn\": 4200000000}]}"},
    {"ipinfo",
     "{\"ip_version\": 6, \"database_type\": \"ipinfo lite.mmdb\","
     " \"layout\": \"ipinfo\", \"ipv4_aliases\": true, \"networks\": ["
     " {\"cidr\": \"81.2.69.0/24\", \"country\": \"GB\", \"asn\": 20712,"
     "  \"as_org\": \"Andrews & Arnold\","
     "  \"country_name\": \"United Kingdom\"},"
     " {\"cidr\": \"2001:db8::/32\", \"country\": \"DE\", \"asn\": 174},"
     " {\"cidr\": \"198.51.100.0/24\", \"country\": \"NL\","
     "  \"asn\": \"ASX\"},"
     " {\"cidr\": \"203.0.113.0/24\", \"asn\": \"AS4294967296\"}]}"},
    {"city", "{\"ip_version\": 6, \"database_type\": \"GeoLite2-City\","
             " \"ipv4_aliases\": true, \"networks\": ["
             " {\"cidr\": \"81.2.69.0/24\", \"country\": \"GB\","
             "  \"city\": \"London\", \"latitude\": 51.5142,"
             "  \"longitude\": -0.0931, \"accuracy_radius\": 20},"
             " {\"cidr\": \"2001:db8::/32\", \"country\": \"DE\","
             "  \"latitude\": 52.5, \"longitude\": 13.4},"
             " {\"cidr\": \"192.0.2.0/24\", \"country\": \"FR\","
             "  \"latitude\": 95.0, \"longitude\": 2.0}]}"},
};

#define NDBS (sizeof(dbs) / sizeof(dbs[0]))

static char dir[64];

/* The repository: $AG_SOURCE_DIR, else this file's path less
 * tests/unit/test_geo.c ("." if that leaves nothing). */
static void source_dir(char *out, size_t len)
{
    const char *env = getenv("AG_SOURCE_DIR");
    if (env != NULL && env[0] != '\0') {
        snprintf(out, len, "%s", env);
        return;
    }
    static const char file[] = __FILE__, tail[] = "tests/unit/test_geo.c";
    size_t n = sizeof(file) - 1, t = sizeof(tail) - 1;
    if (n >= t && strcmp(&file[n - t], tail) == 0)
        n -= t;
    else
        n = 0;
    snprintf(out, len, "%.*s", (int)n, file);
    if (out[0] == '\0')
        snprintf(out, len, ".");
}

static void db_path(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s.mmdb", dir, name);
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static int remove_dbs(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    return 0;
}

/* Writes every database with the writer, two at a time, and checks each
 * came out whole (the writer writes nothing when it fails). */
static int write_dbs(void **state)
{
    (void)state;
    char src[512], cmd[8192], p[256];
    size_t off = 0;

    count_allocations_init();
    snprintf(dir, sizeof(dir), "/tmp/ag_test_geo.XXXXXX");
    assert_non_null(mkdtemp(dir));
    source_dir(src, sizeof(src));
    for (size_t i = 0; i < NDBS; i++) {
        snprintf(p, sizeof(p), "%s/%s.json", dir, dbs[i].name);
        write_text(p, dbs[i].spec, strlen(dbs[i].spec));
        off += (size_t)snprintf(
            cmd + off, sizeof(cmd) - off,
            "perl '%s/tests/tools/mmdb_write.pl' --spec '%s/%s.json' "
            "'%s/%s.mmdb' %s ",
            src, dir, dbs[i].name, dir, dbs[i].name, i % 2 ? "; wait;" : "&");
        assert_true(off < sizeof(cmd));
    }
    snprintf(cmd + off, sizeof(cmd) - off, "wait");
    assert_int_equal(system(cmd), 0);
    for (size_t i = 0; i < NDBS; i++) {
        struct stat sb;
        db_path(dbs[i].name, p, sizeof(p));
        if (stat(p, &sb) != 0 || sb.st_size == 0) {
            remove_dbs(NULL);
            fail_msg("%s/tests/tools/mmdb_write.pl did not write %s (set "
                     "AG_SOURCE_DIR to the repository)",
                     src, p);
        }
    }
    return 0;
}

/* ---- helpers ---- */

static struct ag_geo *open_db(const char *name, enum ag_geo_kind kind)
{
    char p[256];
    struct ag_geo *g;
    struct ag_error err = {0};
    db_path(name, p, sizeof(p));
    if (ag_geo_open(p, kind, &g, &err) != AG_OK)
        fail_msg("open %s: %s", p, err.msg);
    return g;
}

static struct ag_ip ip_of(const char *text)
{
    struct ag_ip ip;
    struct ag_error err;
    if (ag_identity_ip(text, &ip, "ip", &err) != AG_OK)
        fail_msg("bad test address %s", text);
    return ip;
}

static struct ag_geo_result look(const struct ag_geo *g, const char *text)
{
    struct ag_ip ip = ip_of(text);
    struct ag_geo_result r;
    memset(&r, 0x5a, sizeof(r)); /* a miss must clear it all */
    int rc = ag_geo_lookup(g, &ip, &r);
    if (rc != AG_OK)
        fail_msg("lookup %s: %d", text, rc);
    return r;
}

static void assert_country(const struct ag_geo *g, const char *ip,
                           const char *want)
{
    struct ag_geo_result r = look(g, ip);
    if (!r.found || strcmp(r.country, want) != 0 || r.asn != 0)
        fail_msg("%s: found %d country \"%s\" asn %u, want \"%s\"", ip, r.found,
                 r.found ? r.country : "", r.asn, want);
}

static void assert_asn(const struct ag_geo *g, const char *ip, uint32_t want)
{
    struct ag_geo_result r = look(g, ip);
    if (!r.found || r.asn != want || r.country[0] != '\0')
        fail_msg("%s: found %d asn %u, want %u", ip, r.found, r.asn, want);
}

static void assert_miss(const struct ag_geo *g, const char *ip)
{
    struct ag_geo_result r = look(g, ip);
    struct ag_geo_result zero;
    memset(&zero, 0, sizeof(zero));
    if (memcmp(&r, &zero, sizeof(r)) != 0)
        fail_msg("%s: want a miss, found %d", ip, r.found);
}

static void assert_refused(const char *path, enum ag_geo_kind kind, int code,
                           const char *field, const char *words)
{
    struct ag_geo *g = (struct ag_geo *)1;
    struct ag_error err = {0};
    assert_int_equal(ag_geo_open(path, kind, &g, &err), code);
    assert_null(g);
    assert_int_equal(err.code, code);
    assert_string_equal(err.field, field);
    if (strncmp(err.msg, field, strlen(field)) != 0 ||
        strstr(err.msg, words) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, words);
}

/* ---- tests ---- */

static void maxmind_country_is_read_upper_cased_and_a_miss_is_empty(void **s)
{
    (void)s;
    struct ag_geo *g = open_db("country", AG_GEO_COUNTRY);
    assert_country(g, "81.2.69.1", "GB");
    assert_country(g, "81.2.69.255", "GB");
    assert_country(g, "2001:db8:1::7", "DE"); /* written "de" */
    assert_miss(g, "81.2.70.1");
    assert_miss(g, "2001:db9::1");
    /* registered_country alone is no country (ag_geo.c says why), and
     * a code that is not two letters is none either: found, no country. */
    assert_country(g, "192.0.2.1", "");
    assert_country(g, "198.51.100.1", "");
    ag_geo_close(g);
}

static void maxmind_asn_is_read_as_a_32_bit_number(void **s)
{
    (void)s;
    struct ag_geo *g = open_db("asn", AG_GEO_ASN);
    assert_asn(g, "81.2.69.1", 20712);
    assert_asn(g, "2001:db8::1", 4200000000u);
    assert_miss(g, "8.8.8.8");
    ag_geo_close(g);
}

static void ipinfo_flat_layout_gives_country_code_and_as_number(void **s)
{
    (void)s;
    struct ag_geo *c = open_db("ipinfo", AG_GEO_COUNTRY);
    struct ag_geo *a = open_db("ipinfo", AG_GEO_ASN);
    /* IPinfo's "country" is the name, a string: not taken for MaxMind's
     * country map, country_code is read instead. */
    assert_country(c, "81.2.69.1", "GB");
    assert_country(c, "2001:db8::1", "DE");
    assert_asn(a, "81.2.69.1", 20712);
    assert_asn(a, "2001:db8::1", 174);
    /* "ASX" and an AS number over 32 bits are no ASN. */
    assert_asn(a, "198.51.100.1", 0);
    assert_asn(a, "203.0.113.1", 0);
    assert_miss(a, "8.8.8.8");
    ag_geo_close(c);
    ag_geo_close(a);
}

static void ipv4_in_an_ipv6_database_is_found_with_or_without_aliases(void **s)
{
    (void)s;
    struct ag_geo *al = open_db("country", AG_GEO_COUNTRY);
    struct ag_geo *no = open_db("country_noalias", AG_GEO_COUNTRY);
    assert_country(al, "81.2.69.1", "GB");
    assert_country(no, "81.2.69.1", "GB");
    /* ::ffff:81.2.69.1 is the IPv4 address once parsed. */
    assert_country(no, "::ffff:81.2.69.1", "GB");
    /* 6to4 (2002::/16) reaches the IPv4 subtree only through the alias. */
    assert_country(al, "2002:5102:4501::1", "GB");
    assert_miss(no, "2002:5102:4501::1");
    ag_geo_close(al);
    ag_geo_close(no);
}

static void ipv4_in_an_ipv6_database_without_ipv4_networks_misses(void **s)
{
    (void)s;
    struct ag_geo *g = open_db("v6_only", AG_GEO_COUNTRY);
    assert_miss(g, "81.2.69.1");
    assert_miss(g, "0.0.0.0");
    assert_country(g, "2001:db8::1", "DE");
    ag_geo_close(g);
}

static void ipv6_in_an_ipv4_database_is_a_miss_not_an_error(void **s)
{
    (void)s;
    struct ag_geo *g = open_db("country_v4", AG_GEO_COUNTRY);
    assert_country(g, "81.2.69.1", "GB");
    /* libmaxminddb answers MMDB_IPV6_LOOKUP_IN_IPV4_DATABASE_ERROR here,
     * which would come back as AG_EIO (look fails on anything but AG_OK). */
    assert_miss(g, "2001:db8::1");
    assert_miss(g, "::1");
    ag_geo_close(g);
}

static void what_is_not_an_mmdb_is_refused_naming_the_field(void **s)
{
    (void)s;
    char p[256], q[256];
    snprintf(p, sizeof(p), "%s/text.mmdb", dir);
    write_text(p, "81.2.69.0/24,GB\n", 16);
    assert_refused(p, AG_GEO_COUNTRY, AG_EINVAL, "geoip-file",
                   "is not an MMDB database");
    write_text(p, "", 0);
    assert_refused(p, AG_GEO_ASN, AG_EINVAL, "asn-file", "is empty");

    /* The first half of a database: its metadata, at the end, is gone. */
    db_path("country", q, sizeof(q));
    FILE *f = fopen(q, "rb");
    assert_non_null(f);
    char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_true(n > 100 && n < sizeof(buf));
    write_text(p, buf, n / 2);
    assert_refused(p, AG_GEO_COUNTRY, AG_EINVAL, "geoip-file",
                   "is not an MMDB database or is damaged");

    snprintf(p, sizeof(p), "%s/missing.mmdb", dir);
    assert_refused(p, AG_GEO_ASN, AG_EIO, "asn-file", "cannot be opened");
    assert_refused(dir, AG_GEO_ASN, AG_EINVAL, "asn-file",
                   "is not a regular file");
    snprintf(p, sizeof(p), "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_refused(p, AG_GEO_COUNTRY, AG_EINVAL, "geoip-file",
                   "is not a regular file");
}

static void a_database_of_the_other_kind_is_refused_naming_the_field(void **s)
{
    (void)s;
    char p[256];
    db_path("city", p, sizeof(p));
    assert_refused(p, AG_GEO_ASN, AG_EINVAL, "asn-file",
                   "is not an ASN database");
    assert_refused(p, AG_GEO_ASN, AG_EINVAL, "asn-file",
                   "no autonomous_system_number");
    struct ag_geo *g = open_db("city", AG_GEO_COUNTRY);
    assert_country(g, "81.2.69.1", "GB");
    ag_geo_close(g);

    db_path("asn", p, sizeof(p));
    assert_refused(p, AG_GEO_COUNTRY, AG_EINVAL, "geoip-file",
                   "is not a country or city database");
    assert_refused(p, AG_GEO_COUNTRY, AG_EINVAL, "geoip-file",
                   "no country.iso_code");
}

/* Opens a copy of src at dst, then empties dst and writes repl's bytes
 * over it in place, as `cp repl dst` does: lookups keep src's answers. */
static void file_rewritten_in_place_after_open_leaves_lookups_alone(void **s)
{
    (void)s;
    char src[256], repl[256], dst[256];
    db_path("country", src, sizeof(src));
    db_path("country_fr", repl, sizeof(repl));
    snprintf(dst, sizeof(dst), "%s/live.mmdb", dir);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, dst);
    assert_int_equal(system(cmd), 0);

    struct ag_geo *g;
    struct ag_error err;
    assert_int_equal(ag_geo_open(dst, AG_GEO_COUNTRY, &g, &err), AG_OK);
    struct stat sb;
    assert_int_equal(stat(src, &sb), 0);
    assert_int_equal(ag_geo_bytes(g), (size_t)sb.st_size);

    /* Truncated: a mapping of the file itself would fault (SIGBUS). */
    int fd = open(dst, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_country(g, "81.2.69.1", "GB");
    assert_country(g, "2001:db8::1", "DE");
    close(fd);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", repl, dst);
    assert_int_equal(system(cmd), 0);
    assert_country(g, "81.2.69.1", "GB");
    assert_country(g, "2001:db8::1", "DE");

    /* A new open sees the new bytes. */
    struct ag_geo *h;
    assert_int_equal(ag_geo_open(dst, AG_GEO_COUNTRY, &h, &err), AG_OK);
    assert_country(h, "81.2.69.1", "FR");
    assert_miss(h, "2001:db8::1");
    ag_geo_close(h);
    ag_geo_close(g);
}

/* issue 40: a City record's location, read in the same walk as its
 * country; a radius where it has one; none out of range, none of a
 * country database or IPinfo Lite, and nothing of it from
 * ag_geo_lookup. */
static void a_city_database_locates_an_address(void **s)
{
    (void)s;
    struct ag_geo *city = open_db("city", AG_GEO_COUNTRY);
    struct ag_ip ip = ip_of("81.2.69.7");
    struct ag_geo_result r;
    memset(&r, 0x5a, sizeof(r));
    assert_int_equal(ag_geo_locate(city, &ip, &r), AG_OK);
    assert_true(r.found && r.located);
    assert_string_equal(r.country, "GB");
    assert_true(r.latitude == 51.5142 && r.longitude == -0.0931);
    assert_int_equal(r.accuracy_km, 20);
    /* No radius: 0, for the caller's default. IPv6 too. */
    ip = ip_of("2001:db8::9");
    assert_int_equal(ag_geo_locate(city, &ip, &r), AG_OK);
    assert_true(r.located && r.latitude == 52.5 && r.longitude == 13.4);
    assert_int_equal(r.accuracy_km, 0);
    /* A latitude past the pole is no place; the country still stands. */
    ip = ip_of("192.0.2.1");
    assert_int_equal(ag_geo_locate(city, &ip, &r), AG_OK);
    assert_true(r.found && !r.located);
    assert_string_equal(r.country, "FR");
    /* ag_geo_lookup reads no location. */
    ip = ip_of("81.2.69.7");
    assert_int_equal(ag_geo_lookup(city, &ip, &r), AG_OK);
    assert_false(r.located);
    /* Neither a country database nor IPinfo Lite has coordinates; a miss
     * is empty. */
    struct ag_geo *country = open_db("country", AG_GEO_COUNTRY);
    struct ag_geo *ipinfo = open_db("ipinfo", AG_GEO_COUNTRY);
    assert_int_equal(ag_geo_locate(country, &ip, &r), AG_OK);
    assert_true(r.found && !r.located);
    assert_int_equal(ag_geo_locate(ipinfo, &ip, &r), AG_OK);
    assert_true(r.found && !r.located);
    ip = ip_of("8.8.8.8");
    memset(&r, 0x5a, sizeof(r));
    assert_int_equal(ag_geo_locate(city, &ip, &r), AG_OK);
    assert_true(!r.found && !r.located && r.accuracy_km == 0);
    /* Nothing allocated, hit or miss. */
    struct ag_ip hit = ip_of("81.2.69.7");
    unsigned located = 0;
    allocs = 0;
    counting = 1;
    for (int n = 0; n < 100; n++)
        if (ag_geo_locate(city, n % 2 ? &hit : &ip, &r) == AG_OK && r.located)
            located++;
    counting = 0;
    assert_int_equal(allocs, 0);
    assert_int_equal(located, 50);
    ag_geo_close(city);
    ag_geo_close(country);
    ag_geo_close(ipinfo);
}

/* Proves the lookups below make no allocation call (malloc, calloc,
 * realloc; under ASan every allocation); first proves the counter sees
 * libmaxminddb's own: MMDB_get_value callocs its path. It does not cover
 * lookups in a damaged database. */
static void lookups_make_no_allocation_call(void **s)
{
    (void)s;
    struct ag_geo *c = open_db("country", AG_GEO_COUNTRY);
    struct ag_geo *a = open_db("asn", AG_GEO_ASN);
    struct ag_geo *i = open_db("ipinfo", AG_GEO_ASN);
    struct ag_geo *v4 = open_db("country_v4", AG_GEO_COUNTRY);

    char p[256];
    MMDB_s mmdb;
    db_path("country", p, sizeof(p));
    assert_int_equal(MMDB_open(p, MMDB_MODE_MMAP, &mmdb), MMDB_SUCCESS);
    int gai, st;
    MMDB_lookup_result_s lr = MMDB_lookup_string(&mmdb, "81.2.69.1", &gai, &st);
    assert_true(lr.found_entry);
    MMDB_entry_data_s d;
    allocs = 0;
    counting = 1;
    st = MMDB_get_value(&lr.entry, &d, "country", "iso_code", NULL);
    counting = 0;
    assert_int_equal(st, MMDB_SUCCESS);
    assert_true(allocs > 0);
    MMDB_close(&mmdb);

    static const char *const addrs[] = {
        "81.2.69.1", "2001:db8::1", "8.8.8.8",      "2002:5102:4501::1",
        "::1",       "192.0.2.1",   "198.51.100.1",
    };
    struct ag_ip ips[sizeof(addrs) / sizeof(addrs[0])];
    for (size_t k = 0; k < sizeof(addrs) / sizeof(addrs[0]); k++)
        ips[k] = ip_of(addrs[k]);
    const struct ag_geo *all[] = {c, a, i, v4};
    unsigned found = 0;
    allocs = 0;
    counting = 1;
    for (unsigned n = 0; n < 1000; n++) {
        struct ag_geo_result r;
        const struct ag_ip *ip = &ips[n % (sizeof(ips) / sizeof(ips[0]))];
        if (ag_geo_lookup(all[n % 4], ip, &r) == AG_OK && r.found)
            found++;
    }
    counting = 0;
    assert_int_equal(allocs, 0);
    assert_true(found > 300); /* hits and misses both ran */
    assert_true(found < 1000);
    ag_geo_close(c);
    ag_geo_close(a);
    ag_geo_close(i);
    ag_geo_close(v4);
}

static void build_epoch_type_and_size_read_back(void **s)
{
    (void)s;
    struct ag_geo *g = open_db("country", AG_GEO_COUNTRY);
    assert_int_equal(ag_geo_build_epoch(g), 1700000000);
    assert_string_equal(ag_geo_type(g), "GeoLite2-Country");
    char p[256];
    struct stat sb;
    db_path("country", p, sizeof(p));
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(ag_geo_bytes(g), (size_t)sb.st_size);
    ag_geo_close(g);

    g = open_db("ipinfo", AG_GEO_ASN);
    assert_string_equal(ag_geo_type(g), "ipinfo lite.mmdb");
    assert_true(ag_geo_build_epoch(g) > 1700000000); /* written now */
    ag_geo_close(g);
}

/* mmdblookup (mmdb-bin) is libmaxminddb's own reader: where it is
 * installed, its answer for each address is ours. */
static void answers_agree_with_mmdblookup(void **s)
{
    (void)s;
    if (system("mmdblookup --version > /dev/null 2>&1") != 0)
        skip();
    static const struct {
        const char *db, *ip, *path, *want;
        enum ag_geo_kind kind;
    } cases[] = {
        {"country", "81.2.69.1", "country iso_code", "\"GB\"", AG_GEO_COUNTRY},
        {"country", "2002:5102:4501::1", "country iso_code", "\"GB\"",
         AG_GEO_COUNTRY},
        {"country_noalias", "2002:5102:4501::1", "country iso_code", NULL,
         AG_GEO_COUNTRY},
        {"asn", "81.2.69.1", "autonomous_system_number", "20712", AG_GEO_ASN},
        {"ipinfo", "81.2.69.1", "country_code", "\"GB\"", AG_GEO_COUNTRY},
        {"ipinfo", "81.2.69.1", "asn", "\"AS20712\"", AG_GEO_ASN},
        {"v6_only", "81.2.69.1", "country iso_code", NULL, AG_GEO_COUNTRY},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char p[256], cmd[512], out[256] = "";
        db_path(cases[k].db, p, sizeof(p));
        snprintf(cmd, sizeof(cmd),
                 "mmdblookup --file '%s' --ip %s %s 2>/dev/null", p,
                 cases[k].ip, cases[k].path);
        FILE *f = popen(cmd, "r");
        assert_non_null(f);
        size_t n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = '\0';
        pclose(f);
        bool has = cases[k].want != NULL && strstr(out, cases[k].want);
        if (cases[k].want != NULL && !has)
            fail_msg("mmdblookup %s %s: %s", cases[k].db, cases[k].ip, out);
        if (cases[k].want == NULL && strstr(out, "<") != NULL)
            fail_msg("mmdblookup %s %s found: %s", cases[k].db, cases[k].ip,
                     out);

        enum ag_geo_kind kind = cases[k].kind;
        struct ag_geo *g = open_db(cases[k].db, kind);
        struct ag_geo_result r = look(g, cases[k].ip);
        assert_int_equal(r.found, cases[k].want != NULL);
        if (kind == AG_GEO_ASN && r.found)
            assert_int_equal(r.asn, 20712);
        if (kind == AG_GEO_COUNTRY && r.found)
            assert_string_equal(r.country, "GB");
        ag_geo_close(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            maxmind_country_is_read_upper_cased_and_a_miss_is_empty),
        cmocka_unit_test(maxmind_asn_is_read_as_a_32_bit_number),
        cmocka_unit_test(ipinfo_flat_layout_gives_country_code_and_as_number),
        cmocka_unit_test(
            ipv4_in_an_ipv6_database_is_found_with_or_without_aliases),
        cmocka_unit_test(ipv4_in_an_ipv6_database_without_ipv4_networks_misses),
        cmocka_unit_test(ipv6_in_an_ipv4_database_is_a_miss_not_an_error),
        cmocka_unit_test(what_is_not_an_mmdb_is_refused_naming_the_field),
        cmocka_unit_test(
            a_database_of_the_other_kind_is_refused_naming_the_field),
        cmocka_unit_test(
            file_rewritten_in_place_after_open_leaves_lookups_alone),
        cmocka_unit_test(a_city_database_locates_an_address),
        cmocka_unit_test(lookups_make_no_allocation_call),
        cmocka_unit_test(build_epoch_type_and_size_read_back),
        cmocka_unit_test(answers_agree_with_mmdblookup),
    };
    return cmocka_run_group_tests(tests, write_dbs, remove_dbs);
}
