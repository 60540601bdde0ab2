/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_iplist: every format (plain lines, Spamhaus DROP JSON lines, AWS
 * ip-ranges.json, Google's cloud.json) forced and detected; comments,
 * CRLF, a byte order mark, host bits, IPv4-mapped entries; merging of
 * overlapping, adjacent and contained ranges (seen in the tables' size
 * and at their edges); the first and last address of a range and the
 * ones just outside; special ranges counted and told apart from public
 * ones; IPv4-mapped lookups; refusals that name the line or the entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ag_error.h"
#include "ag_iplist.h"

static struct ag_iplist *parse_f(const char *text, enum ag_iplist_format f)
{
    struct ag_iplist *l = NULL;
    struct ag_error err = {0};
    int rc = ag_iplist_parse(text, strlen(text), f, &l, &err);
    if (rc != AG_OK)
        fail_msg("refused (%d): %s", rc, err.msg);
    assert_non_null(l);
    return l;
}

static struct ag_iplist *parse(const char *text)
{
    return parse_f(text, AG_IPLIST_AUTO);
}

/* The refusal's message; fails the test if text is accepted. */
static const char *refused(const char *text, size_t len,
                           enum ag_iplist_format f)
{
    static struct ag_error err;
    struct ag_iplist *l = (struct ag_iplist *)&err; /* must become NULL */
    memset(&err, 0, sizeof(err));
    int rc = ag_iplist_parse(text, len, f, &l, &err);
    if (rc == AG_OK)
        fail_msg("accepted: %s", text);
    assert_int_equal(rc, AG_EINVAL);
    assert_int_equal(err.code, AG_EINVAL);
    assert_string_equal(err.field, "ip-list");
    assert_null(l);
    return err.msg;
}

static const char *refused_s(const char *text, enum ag_iplist_format f)
{
    return refused(text, strlen(text), f);
}

/* An address as a lookup gets it, built by hand so that an IPv4-mapped
 * IPv6 address stays AF_INET6 (ag_identity_ip would map it already). */
static struct ag_ip ip_of(const char *text)
{
    struct ag_ip ip;
    memset(&ip, 0, sizeof(ip));
    ip.family = strchr(text, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(ip.family, text, ip.addr) != 1)
        fail_msg("bad test address %s", text);
    return ip;
}

static enum ag_iplist_hit m(const struct ag_iplist *l, const char *text)
{
    struct ag_ip ip = ip_of(text);
    return ag_iplist_match(l, &ip);
}

#define HIT(l, a) assert_int_equal(m((l), (a)), AG_IPLIST_HIT)
#define SPECIAL(l, a) assert_int_equal(m((l), (a)), AG_IPLIST_HIT_SPECIAL)
#define MISS(l, a) assert_int_equal(m((l), (a)), AG_IPLIST_MISS)

/* The bytes of a list's tables beyond its fixed part: 8 a merged IPv4
 * range, 32 an IPv6 one. */
static size_t table_bytes(const char *text)
{
    struct ag_iplist *l = parse(text);
    struct ag_iplist *one = parse("192.0.2.1\n");
    size_t n = ag_iplist_bytes(l) - (ag_iplist_bytes(one) - 8);
    ag_iplist_free(one);
    ag_iplist_free(l);
    return n;
}

static void format_names_parse(void **state)
{
    (void)state;
    static const char *const names[] = {"auto", "plain", "spamhaus", "aws",
                                        "gcp"};
    static const enum ag_iplist_format want[] = {
        AG_IPLIST_AUTO, AG_IPLIST_PLAIN, AG_IPLIST_SPAMHAUS, AG_IPLIST_AWS,
        AG_IPLIST_GCP};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        enum ag_iplist_format f = (enum ag_iplist_format)99;
        assert_int_equal(ag_iplist_format_parse(names[i], &f), AG_OK);
        assert_int_equal(f, want[i]);
    }
    enum ag_iplist_format f;
    assert_int_equal(ag_iplist_format_parse("AWS", &f), AG_EINVAL);
    assert_int_equal(ag_iplist_format_parse("", &f), AG_EINVAL);
    assert_int_equal(ag_iplist_format_parse("json", &f), AG_EINVAL);
    assert_int_equal(ag_iplist_format_parse(NULL, &f), AG_EINVAL);
}

/* A FireHOL-style header, ';' comments, trailing comments, blank lines
 * with blanks in them, CRLF, and both families in one file. */
static const char plain_text[] =
    "#\r\n"
    "# firehol_level1 ipset\r\n"
    "#\r\n"
    "\r\n"
    "203.0.113.0/24\r\n"
    "  198.51.100.7   # a host, a comment after blanks\r\n"
    "\t\r\n"
    "2001:db8::/32 ; SBL123\r\n"
    "; a whole-line ';' comment\r\n"
    "2001:db8:ffff::1\r\n"
    "192.0.2.128/25\t#tab before it\r\n"
    "192.0.2.9"; /* no line end at the end */

static void plain_lines_with_comments_crlf_and_both_families(void **state)
{
    (void)state;
    struct ag_iplist *l = parse(plain_text);
    assert_int_equal(ag_iplist_entries(l), 6);
    assert_int_equal(ag_iplist_special(l), 0);
    HIT(l, "203.0.113.0");
    HIT(l, "203.0.113.255");
    HIT(l, "198.51.100.7");
    MISS(l, "198.51.100.6");
    MISS(l, "198.51.100.8");
    HIT(l, "2001:db8:1234::5");
    HIT(l, "192.0.2.9");
    MISS(l, "192.0.2.10");
    HIT(l, "192.0.2.200");
    MISS(l, "2001:db9::");
    ag_iplist_free(l);

    /* The same text forced as plain reads the same. */
    l = parse_f(plain_text, AG_IPLIST_PLAIN);
    assert_int_equal(ag_iplist_entries(l), 6);
    HIT(l, "2001:db8::1");
    ag_iplist_free(l);
}

/* The Tor bulk exit list is bare addresses: each is a /32 or /128. */
static void bare_address_is_one_host(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("185.220.101.1\n185.220.101.3\n"
                                "2001:db8::5\n");
    HIT(l, "185.220.101.1");
    MISS(l, "185.220.101.2");
    HIT(l, "185.220.101.3");
    MISS(l, "185.220.101.0");
    MISS(l, "185.220.101.4");
    HIT(l, "2001:db8::5");
    MISS(l, "2001:db8::4");
    MISS(l, "2001:db8::6");
    ag_iplist_free(l);
}

static void host_bits_are_cleared(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("203.0.113.77/24\n2001:db8:0:0:1::9/64\n");
    HIT(l, "203.0.113.0");
    HIT(l, "203.0.113.255");
    MISS(l, "203.0.112.255");
    MISS(l, "203.0.114.0");
    HIT(l, "2001:db8::");
    HIT(l, "2001:db8::ffff:ffff:ffff:ffff");
    MISS(l, "2001:db8:0:1::");
    ag_iplist_free(l);
    /* The same network twice is one range. */
    assert_int_equal(table_bytes("203.0.113.77/24\n203.0.113.0/24\n"), 8);
}

static void byte_order_mark_is_skipped(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("\xef\xbb\xbf"
                                "192.0.2.1\n");
    HIT(l, "192.0.2.1");
    ag_iplist_free(l);
    l = parse("\xef\xbb\xbf{\"cidr\":\"192.0.2.0/24\"}\n");
    HIT(l, "192.0.2.1");
    ag_iplist_free(l);
}

/* The text need not end in NUL: a copy of exactly len bytes, read under
 * the address sanitizer, whose last line has no line end. */
static void text_needs_no_nul(void **state)
{
    (void)state;
    const char src[] = "192.0.2.0/24\n198.51.100.10";
    size_t len = sizeof(src) - 1;
    char *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, src, len);
    struct ag_iplist *l = NULL, *cut = NULL;
    struct ag_error err = {0};
    int rc = ag_iplist_parse(copy, len, AG_IPLIST_PLAIN, &l, &err);
    /* Cut before its last digit, the last line is another address. */
    int rc_cut = ag_iplist_parse(copy, len - 1, AG_IPLIST_AUTO, &cut, &err);
    free(copy);
    assert_int_equal(rc, AG_OK);
    assert_int_equal(rc_cut, AG_OK);
    HIT(l, "198.51.100.10");
    MISS(l, "198.51.100.1");
    HIT(cut, "198.51.100.1");
    MISS(cut, "198.51.100.10");
    ag_iplist_free(l);
    ag_iplist_free(cut);
}

static void overlapping_adjacent_and_contained_ranges_merge(void **state)
{
    (void)state;
    /* Adjacent halves are one range, as their whole is. */
    assert_int_equal(table_bytes("192.0.2.0/25\n192.0.2.128/25\n"), 8);
    assert_int_equal(table_bytes("2001:db8::/33\n2001:db8:8000::/33\n"), 32);
    /* Adjacent across the 64-bit seam of an IPv6 address. */
    assert_int_equal(table_bytes("2001:db8::/64\n2001:db8:0:1::/64\n"), 32);
    /* Contained, in either order. */
    assert_int_equal(table_bytes("198.51.100.0/24\n198.51.100.64/26\n"), 8);
    assert_int_equal(table_bytes("198.51.100.64/26\n198.51.100.0/24\n"), 8);
    /* A chain: 1/8 holds 1.2/16, and 2/8 follows 1/8 right after. */
    assert_int_equal(table_bytes("2.0.0.0/8\n1.2.0.0/16\n1.0.0.0/8\n"), 8);
    /* A gap of one address keeps two ranges. */
    assert_int_equal(table_bytes("192.0.2.0\n192.0.2.2\n"), 16);
    assert_int_equal(table_bytes("2001:db8::\n2001:db8::2\n"), 64);
    /* The top of each space, where hi + 1 would wrap. */
    assert_int_equal(table_bytes("255.255.255.0/24\n255.255.255.255\n"), 8);
    assert_int_equal(table_bytes("ffff::/16\nffff::/17\n"), 32);

    struct ag_iplist *l = parse("2.0.0.0/8\n1.2.0.0/16\n1.0.0.0/8\n"
                                "4.0.0.0/8\n4.1.0.0/16\n4.0.0.0/9\n"
                                "255.255.255.255\n");
    assert_int_equal(ag_iplist_entries(l), 7);
    MISS(l, "0.255.255.255");
    HIT(l, "1.0.0.0");
    HIT(l, "1.255.255.255");
    HIT(l, "2.0.0.0");
    HIT(l, "2.255.255.255");
    MISS(l, "3.0.0.0");
    MISS(l, "3.255.255.255");
    HIT(l, "4.0.0.0");
    HIT(l, "4.255.255.255");
    MISS(l, "5.0.0.0");
    HIT(l, "255.255.255.255");
    MISS(l, "255.255.255.254");
    ag_iplist_free(l);
}

static void range_edges_and_one_outside(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("0.0.0.0/32\n"
                                "198.18.0.0/15\n"
                                "203.0.113.64/27\n"
                                "2001:db8:1::/48\n"
                                "2001:db8:2::ffff:ffff:ffff:ffff/128\n"
                                "::2/128\n");
    MISS(l, "198.17.255.255");
    HIT(l, "198.18.0.0");
    HIT(l, "198.19.255.255");
    MISS(l, "198.20.0.0");
    MISS(l, "203.0.113.63");
    HIT(l, "203.0.113.64");
    HIT(l, "203.0.113.95");
    MISS(l, "203.0.113.96");
    SPECIAL(l, "0.0.0.0");
    MISS(l, "0.0.0.1");
    MISS(l, "2001:db8:0:ffff:ffff:ffff:ffff:ffff");
    HIT(l, "2001:db8:1::");
    HIT(l, "2001:db8:1:ffff:ffff:ffff:ffff:ffff");
    MISS(l, "2001:db8:2::");
    MISS(l, "2001:db8:2::ffff:ffff:ffff:fffe");
    HIT(l, "2001:db8:2::ffff:ffff:ffff:ffff");
    MISS(l, "2001:db8:2:1::");
    MISS(l, "::1");
    HIT(l, "::2");
    MISS(l, "::3");
    MISS(l, "::");
    MISS(l, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    ag_iplist_free(l);

    /* The whole of each space. */
    l = parse("0.0.0.0/0\n::/0\n");
    HIT(l, "0.0.0.0");
    HIT(l, "255.255.255.255");
    HIT(l, "::");
    HIT(l, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    ag_iplist_free(l);
}

/* Ranges whose first 64 bits are the same (single hosts of one /64, as
 * the Tor list's IPv6 exits are) are told apart by their last 64. */
static void ipv6_hosts_of_one_64_are_told_apart(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("2001:db8::9\n2001:db8::1\n2001:db8::5\n"
                                "2001:db8::100/120\n2001:db8:0:1::/64\n");
    MISS(l, "2001:db8::");
    HIT(l, "2001:db8::1");
    MISS(l, "2001:db8::2");
    MISS(l, "2001:db8::4");
    HIT(l, "2001:db8::5");
    MISS(l, "2001:db8::6");
    HIT(l, "2001:db8::9");
    MISS(l, "2001:db8::ff");
    HIT(l, "2001:db8::150");
    MISS(l, "2001:db8::200");
    MISS(l, "2001:db8::ffff:ffff:ffff:ffff");
    HIT(l, "2001:db8:0:1::");
    HIT(l, "2001:db8:0:1:ffff:ffff:ffff:ffff");
    MISS(l, "2001:db8:0:2::");
    ag_iplist_free(l);
}

static void special_ranges_counted_and_told_apart(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("10.0.0.0/8\n"
                                "198.51.100.0/24\n"
                                "fc00::/7\n"
                                "::1\n"
                                "2001:db8::/32\n"
                                "192.168.1.0/24\n");
    assert_int_equal(ag_iplist_entries(l), 6);
    assert_int_equal(ag_iplist_special(l), 4);
    SPECIAL(l, "10.1.2.3");
    SPECIAL(l, "10.255.255.255");
    SPECIAL(l, "192.168.1.1");
    MISS(l, "192.168.2.1");
    HIT(l, "198.51.100.9");
    MISS(l, "11.0.0.0");
    SPECIAL(l, "fd12:3456::1");
    SPECIAL(l, "::1");
    HIT(l, "2001:db8::1");
    MISS(l, "fe80::1");
    ag_iplist_free(l);

    /* Each special block, and a range inside each, is special; its
     * neighbours just outside are not. */
    static const char *const special[] = {
        "0.0.0.0/8",      "10.0.0.0/8",      "100.64.0.0/10",  "127.0.0.0/8",
        "169.254.0.0/16", "172.16.0.0/12",   "192.168.0.0/16", "10.9.8.0/24",
        "172.31.255.255", "100.127.0.0/16",  "127.0.0.1",      "::1",
        "fe80::/10",      "febf::/16",       "fc00::/7",       "fd00::/8",
        "fd00::1",        "::ffff:10.0.0.1",
    };
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
        char text[64];
        snprintf(text, sizeof(text), "%s\n", special[i]);
        l = parse(text);
        if (ag_iplist_special(l) != 1)
            fail_msg("%s is not counted as special", special[i]);
        ag_iplist_free(l);
    }
    /* Near them but not inside one: none is special. */
    l = parse("1.0.0.0/8\n11.0.0.0/8\n100.63.255.255\n100.128.0.0/10\n"
              "172.15.0.0/16\n172.32.0.0/16\n169.253.0.0/16\n"
              "192.169.0.0/16\n8.0.0.0/6\n0.0.0.0/7\n172.16.0.0/11\n"
              "::2\n::\nfec0::/10\nfe00::/9\nfe00::/7\n2001:db8::/32\n"
              "::/0\n");
    assert_int_equal(ag_iplist_entries(l), 18);
    assert_int_equal(ag_iplist_special(l), 0);
    ag_iplist_free(l);
}

/* A public range that holds a special one wins: the address is in a
 * range that is not special. */
static void public_range_over_special_is_hit(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("10.0.0.0/8\n8.0.0.0/6\n"
                                "fd00::/8\nfc00::/6\n");
    assert_int_equal(ag_iplist_special(l), 2);
    HIT(l, "10.1.2.3");
    HIT(l, "9.0.0.1");
    MISS(l, "12.0.0.0");
    HIT(l, "fd00::1");
    ag_iplist_free(l);

    /* Special and public ranges side by side do not merge into one. */
    l = parse("10.0.0.0/8\n11.0.0.0/8\n9.0.0.0/8\n");
    HIT(l, "9.255.255.255");
    SPECIAL(l, "10.0.0.0");
    SPECIAL(l, "10.255.255.255");
    HIT(l, "11.0.0.0");
    ag_iplist_free(l);
}

static void ipv4_mapped_addresses_match_as_ipv4(void **state)
{
    (void)state;
    struct ag_iplist *l = parse("198.51.100.0/24\n10.0.0.0/8\n"
                                "::ffff:192.0.2.0/120\n"
                                "::ffff:0:0/80\n");
    HIT(l, "::ffff:198.51.100.7");
    MISS(l, "::ffff:198.51.101.7");
    SPECIAL(l, "::ffff:10.0.0.1");
    /* The mapped entry is an IPv4 one. */
    HIT(l, "192.0.2.5");
    HIT(l, "::ffff:192.0.2.255");
    MISS(l, "192.0.3.0");
    /* Shorter than /96 it stays IPv6 (and is never hit by a lookup
     * of a mapped address, which reads it as IPv4). */
    MISS(l, "::ffff:203.0.113.1");
    HIT(l, "::fffe:0:1");
    ag_iplist_free(l);
    /* An IPv4-compatible address (::a.b.c.d) is IPv6, not IPv4. */
    l = parse("198.51.100.0/24\n");
    MISS(l, "::198.51.100.7");
    ag_iplist_free(l);

    struct ag_ip odd = ip_of("198.51.100.7");
    odd.family = 0;
    l = parse("0.0.0.0/0\n");
    assert_int_equal(ag_iplist_match(l, &odd), AG_IPLIST_MISS);
    ag_iplist_free(l);
}

static const char spamhaus_text[] =
    "{\"cidr\":\"1.10.16.0/20\",\"sblid\":\"SBL256894\",\"rir\":\"apnic\"}\n"
    "{\"cidr\":\"2001:db8:100::/"
    "40\",\"sblid\":\"SBL1\",\"rir\":\"ripencc\"}\r\n"
    "\n"
    "{\"cidr\":\"1.19.0.0/16\",\"sblid\":\"SBL434604\",\"rir\":\"apnic\"}\n"
    "{\"type\":\"metadata\",\"timestamp\":1700000000,\"size\":3,"
    "\"records\":3,\"copyright\":\"(c) 2024 The Spamhaus Project SLU\"}\n";

static void spamhaus_lines_forced_and_detected(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        struct ag_iplist *l =
            parse_f(spamhaus_text, i ? AG_IPLIST_SPAMHAUS : AG_IPLIST_AUTO);
        assert_int_equal(ag_iplist_entries(l), 3);
        HIT(l, "1.10.16.0");
        HIT(l, "1.10.31.255");
        MISS(l, "1.10.32.0");
        HIT(l, "1.19.200.1");
        HIT(l, "2001:db8:1ff::1");
        MISS(l, "2001:db8:200::");
        ag_iplist_free(l);
    }
    /* Only the metadata line: no entry. */
    const char *msg =
        refused_s("{\"type\":\"metadata\",\"records\":0}\n", AG_IPLIST_AUTO);
    assert_string_equal(msg, "ip-list holds no address or CIDR");
}

static void spamhaus_errors_name_the_line(void **state)
{
    (void)state;
    const char *msg = refused_s("{\"cidr\":\"1.10.16.0/20\"}\n"
                                "{\"cidr\":\"1.10.16.0/33\"}\n",
                                AG_IPLIST_AUTO);
    assert_string_equal(
        msg, "ip-list line 2: '1.10.16.0/33' is not an address or CIDR");
    msg = refused_s("{\"cidr\":\"1.10.16.0/20\"}\n"
                    "\n"
                    "{\"cidr\": 7}\n",
                    AG_IPLIST_SPAMHAUS);
    assert_string_equal(msg, "ip-list line 3: \"cidr\" is not a string");
    msg = refused_s("{\"cidr\":\"1.10.16.0/20\"}\n"
                    "{\"cidr\":\"1.19.0.0/16\"\n",
                    AG_IPLIST_AUTO);
    assert_non_null(strstr(msg, "ip-list line 2: not JSON ("));
    msg = refused_s("{\"cidr\":\"1.10.16.0/20\"}\n[1]\n", AG_IPLIST_AUTO);
    assert_string_equal(msg, "ip-list line 2: not a JSON object (Spamhaus "
                             "DROP lines expected)");
    /* Plain text read as Spamhaus. */
    msg = refused_s("192.0.2.1\n", AG_IPLIST_SPAMHAUS);
    assert_non_null(strstr(msg, "ip-list line 1: not JSON ("));
}

static const char aws_text[] =
    "{\n"
    "  \"syncToken\": \"1700000000\",\n"
    "  \"createDate\": \"2024-01-01-00-00-00\",\n"
    "  \"prefixes\": [\n"
    "    {\"ip_prefix\": \"3.2.34.0/26\", \"region\": \"af-south-1\",\n"
    "     \"service\": \"AMAZON\", \"network_border_group\": \"af-south-1\"},\n"
    "    {\"ip_prefix\": \"3.2.34.0/26\", \"region\": \"af-south-1\",\n"
    "     \"service\": \"EC2\", \"network_border_group\": \"af-south-1\"},\n"
    "    {\"ip_prefix\": \"52.94.76.0/22\", \"region\": \"us-west-2\",\n"
    "     \"service\": \"AMAZON\", \"network_border_group\": \"us-west-2\"}\n"
    "  ],\n"
    "  \"ipv6_prefixes\": [\n"
    "    {\"ipv6_prefix\": \"2600:1f14::/35\", \"region\": \"us-west-2\",\n"
    "     \"service\": \"AMAZON\", \"network_border_group\": \"us-west-2\"}\n"
    "  ]\n"
    "}\n";

static void aws_forced_and_detected(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        struct ag_iplist *l =
            parse_f(aws_text, i ? AG_IPLIST_AWS : AG_IPLIST_AUTO);
        assert_int_equal(ag_iplist_entries(l), 4);
        assert_int_equal(ag_iplist_special(l), 0);
        HIT(l, "3.2.34.63");
        MISS(l, "3.2.34.64");
        HIT(l, "52.94.79.255");
        HIT(l, "2600:1f14:1fff::1");
        MISS(l, "2600:1f14:2000::");
        ag_iplist_free(l);
    }
    /* Only IPv6 prefixes is still AWS. */
    struct ag_iplist *l = parse("{\"ipv6_prefixes\":[{\"ipv6_prefix\":"
                                "\"2600:1f14::/35\"}]}");
    HIT(l, "2600:1f14::1");
    ag_iplist_free(l);
}

static void aws_errors_name_the_entry(void **state)
{
    (void)state;
    const char *msg =
        refused_s("{\"prefixes\":[{\"ip_prefix\":\"3.2.34.0/26\"},"
                  "{\"ip_prefix\":\"3.2.34\"}]}",
                  AG_IPLIST_AUTO);
    assert_string_equal(msg, "ip-list prefixes[1].ip_prefix: '3.2.34' is "
                             "not an address or CIDR");
    msg = refused_s("{\"prefixes\":[],\"ipv6_prefixes\":[{\"region\":\"x\"}]}",
                    AG_IPLIST_AWS);
    assert_string_equal(
        msg, "ip-list ipv6_prefixes[0] has no \"ipv6_prefix\" string");
    msg = refused_s("{\"prefixes\":{}}", AG_IPLIST_AWS);
    assert_string_equal(msg, "ip-list \"prefixes\" is not an array");
    msg = refused_s("{\"prefixes\":[],\"ipv6_prefixes\":[]}", AG_IPLIST_AUTO);
    assert_string_equal(msg, "ip-list holds no address or CIDR");
    msg = refused_s("{\"cidr\":\"1.2.3.0/24\"}\n", AG_IPLIST_AWS);
    assert_string_equal(msg, "ip-list is not a JSON object with a "
                             "\"prefixes\" array (AWS ip-ranges.json "
                             "expected)");
    /* A truncated document: jansson's line, counted from the top. */
    msg = refused_s("# fetched today\n{\n  \"prefixes\": [\n", AG_IPLIST_AUTO);
    assert_non_null(strstr(msg, "ip-list line 4: not JSON ("));
    msg = refused_s("192.0.2.0/24\n", AG_IPLIST_AWS);
    assert_non_null(strstr(msg, "ip-list line 1: not JSON ("));
}

static const char gcp_text[] =
    "{\n  \"syncToken\": \"1700000000000\",\n"
    "  \"creationTime\": \"2024-01-01T00:00:00.000000\",\n"
    "  \"prefixes\": [{\n    \"ipv4Prefix\": \"34.1.208.0/20\",\n"
    "    \"service\": \"Google Cloud\", \"scope\": \"africa-south1\"\n"
    "  }, {\n    \"ipv6Prefix\": \"2600:1900:8000::/44\",\n"
    "    \"service\": \"Google Cloud\", \"scope\": \"us-central1\"\n"
    "  }, {\n    \"ipv4Prefix\": \"34.1.224.0/19\",\n"
    "    \"service\": \"Google Cloud\", \"scope\": \"europe-west1\"\n"
    "  }]\n}\n";

static void gcp_forced_and_detected(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        struct ag_iplist *l =
            parse_f(gcp_text, i ? AG_IPLIST_GCP : AG_IPLIST_AUTO);
        assert_int_equal(ag_iplist_entries(l), 3);
        MISS(l, "34.1.207.255");
        HIT(l, "34.1.208.0");
        HIT(l, "34.1.255.255");
        MISS(l, "34.2.0.0");
        HIT(l, "2600:1900:800f:ffff::1");
        MISS(l, "2600:1900:8010::");
        ag_iplist_free(l);
        /* Merged: 34.1.208.0/20 and 34.1.224.0/19 meet. */
        if (!i)
            assert_int_equal(table_bytes(gcp_text), 8 + 32);
    }
    /* A GCP document read as AWS has no "ip_prefix". */
    const char *msg = refused_s(gcp_text, AG_IPLIST_AWS);
    assert_string_equal(msg, "ip-list prefixes[0] has no \"ip_prefix\" "
                             "string");
    msg = refused_s("{\"prefixes\":[{\"ipv4Prefix\":\"34.1.208.0/20\"},"
                    "{\"service\":\"Google Cloud\"}]}",
                    AG_IPLIST_GCP);
    assert_string_equal(msg, "ip-list prefixes[1] has no \"ipv4Prefix\" or "
                             "\"ipv6Prefix\" string");
    msg = refused_s("{\"prefixes\":[{\"ipv6Prefix\":\"2600:1900::/129\"}]}",
                    AG_IPLIST_AUTO);
    assert_string_equal(msg, "ip-list prefixes[0].ipv6Prefix: "
                             "'2600:1900::/129' is not an address or CIDR");
}

static void auto_detection_reads_past_comments(void **state)
{
    (void)state;
    /* Comment lines before JSON lines. */
    struct ag_iplist *l = parse("# Spamhaus DROP\n\n"
                                "{\"cidr\":\"192.0.2.0/24\"}\n");
    HIT(l, "192.0.2.1");
    ag_iplist_free(l);
    /* JSON that is neither kind. */
    const char *msg = refused_s("{\"hello\": 1}\n", AG_IPLIST_AUTO);
    assert_string_equal(msg, "ip-list is JSON but neither an object with a "
                             "\"prefixes\" array (AWS, Google Cloud) nor one "
                             "object a line (Spamhaus DROP)");
    /* A plain list that happens to hold '{' is plain, and refused. */
    msg = refused_s("192.0.2.1\n{\n", AG_IPLIST_AUTO);
    assert_string_equal(msg, "ip-list line 2: '{' is not an address or CIDR");
}

static void bad_entries_are_refused_naming_the_line(void **state)
{
    (void)state;
    /* Each is refused as "ip-list line N: 'SHOWN' is not an address or
     * CIDR". */
    static const struct {
        const char *text;
        int line;
        const char *shown;
    } cases[] = {
        {"192.0.2.1\n# x\n\n\n\n\n10.0.0.0/33\n", 7, "10.0.0.0/33"},
        {"1.2.3\n", 1, "1.2.3"},
        {"010.0.0.1\n", 1, "010.0.0.1"},
        {"192.0.2.1\r\n1.2.3.4.5\r\n", 2, "1.2.3.4.5"},
        {"256.0.0.1\n", 1, "256.0.0.1"},
        {"2001:db8::/129\n", 1, "2001:db8::/129"},
        {"192.0.2.0/\n", 1, "192.0.2.0/"},
        {"192.0.2.0/-1\n", 1, "192.0.2.0/-1"},
        {"192.0.2.0/0024\n", 1, "192.0.2.0/0024"},
        {"192.0.2.0/24/8\n", 1, "192.0.2.0/24/8"},
        {"/24\n", 1, "/24"},
        {"192.0.2.1 198.51.100.1\n", 1, "192.0.2.1 198.51.100.1"},
        {"192.0.2.1-192.0.2.9\n", 1, "192.0.2.1-192.0.2.9"},
        {"example.com\n", 1, "example.com"},
        {"\x1f\x8b\x08\n", 1, "\?\?\?"},
        {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff\n", 1,
         "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff..."},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[AG_ERROR_MSG_MAX];
        snprintf(want, sizeof(want),
                 "ip-list line %d: '%s' is not an address or CIDR",
                 cases[i].line, cases[i].shown);
        const char *msg = refused_s(cases[i].text, AG_IPLIST_AUTO);
        if (strcmp(msg, want) != 0)
            fail_msg("case %zu: '%s', want '%s'", i, msg, want);
    }
    /* A NUL byte inside an address. */
    const char nul[] = "192.0.2.1\n192.0.2.2\0junk\n";
    const char *msg = refused(nul, sizeof(nul) - 1, AG_IPLIST_PLAIN);
    assert_string_equal(
        msg, "ip-list line 2: '192.0.2.2?junk' is not an address or CIDR");
}

static void empty_files_are_refused(void **state)
{
    (void)state;
    static const char *const empty[] = {"", "\n\n", "\r\n \t\r\n",
                                        "# firehol\n; nothing\n   # more\n",
                                        "\xef\xbb\xbf"};
    for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
        const char *msg = refused_s(empty[i], AG_IPLIST_AUTO);
        assert_string_equal(msg, "ip-list holds no address or CIDR");
        msg = refused_s(empty[i], AG_IPLIST_PLAIN);
        assert_string_equal(msg, "ip-list holds no address or CIDR");
    }
    const char *msg = refused_s("", AG_IPLIST_SPAMHAUS);
    assert_string_equal(msg, "ip-list holds no address or CIDR");
}

static void load_reads_a_file_and_names_a_missing_one(void **state)
{
    (void)state;
    char path[] = "/tmp/test_iplist_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, aws_text, sizeof(aws_text) - 1),
                     (ssize_t)(sizeof(aws_text) - 1));
    close(fd);

    struct ag_iplist *l = NULL;
    struct ag_error err = {0};
    assert_int_equal(ag_iplist_load(path, AG_IPLIST_AUTO, &l, &err), AG_OK);
    assert_int_equal(ag_iplist_entries(l), 4);
    HIT(l, "52.94.76.1");
    ag_iplist_free(l);

    /* An empty file. */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    close(fd);
    l = (struct ag_iplist *)&err;
    assert_int_equal(ag_iplist_load(path, AG_IPLIST_AUTO, &l, &err), AG_EINVAL);
    assert_null(l);
    assert_string_equal(err.msg, "ip-list holds no address or CIDR");
    unlink(path);

    assert_int_equal(ag_iplist_load(path, AG_IPLIST_AUTO, &l, &err), AG_EIO);
    assert_null(l);
    assert_string_equal(err.field, "ip-list");
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "No such file"));
    /* A directory cannot be read. */
    assert_int_equal(ag_iplist_load("/tmp", AG_IPLIST_AUTO, &l, &err), AG_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_names_parse),
        cmocka_unit_test(plain_lines_with_comments_crlf_and_both_families),
        cmocka_unit_test(bare_address_is_one_host),
        cmocka_unit_test(host_bits_are_cleared),
        cmocka_unit_test(byte_order_mark_is_skipped),
        cmocka_unit_test(text_needs_no_nul),
        cmocka_unit_test(overlapping_adjacent_and_contained_ranges_merge),
        cmocka_unit_test(range_edges_and_one_outside),
        cmocka_unit_test(ipv6_hosts_of_one_64_are_told_apart),
        cmocka_unit_test(special_ranges_counted_and_told_apart),
        cmocka_unit_test(public_range_over_special_is_hit),
        cmocka_unit_test(ipv4_mapped_addresses_match_as_ipv4),
        cmocka_unit_test(spamhaus_lines_forced_and_detected),
        cmocka_unit_test(spamhaus_errors_name_the_line),
        cmocka_unit_test(aws_forced_and_detected),
        cmocka_unit_test(aws_errors_name_the_entry),
        cmocka_unit_test(gcp_forced_and_detected),
        cmocka_unit_test(auto_detection_reads_past_comments),
        cmocka_unit_test(bad_entries_are_refused_naming_the_line),
        cmocka_unit_test(empty_files_are_refused),
        cmocka_unit_test(load_reads_a_file_and_names_a_missing_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
