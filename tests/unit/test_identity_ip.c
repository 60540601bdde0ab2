/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_identity: IP addresses (IPv4-mapped IPv6 read as IPv4, IPv6 printed
 * canonically, IPv4 text as inet_ntop writes it, anything else refused)
 * and the network of a prefix that the ip_prefix key uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "ag_error.h"
#include "ag_identity.h"

static void expect_ip(const char *in, int family, const char *text)
{
    struct ag_ip ip;
    struct ag_error why = {0};
    int rc = ag_identity_ip(in, &ip, "ip", &why);
    if (rc != AG_OK)
        fail_msg("ip '%s': rc %d (%s)", in, rc, why.msg);
    assert_int_equal(ip.family, family);
    assert_string_equal(ip.text, text);
}

static void expect_ip_refused(const char *in)
{
    struct ag_ip ip;
    struct ag_error why = {0};
    int rc = ag_identity_ip(in, &ip, "ip", &why);
    if (rc != AG_EINVAL)
        fail_msg("ip '%s': rc %d, want AG_EINVAL", in, rc);
    assert_int_equal(why.code, AG_EINVAL);
}

static void ipv4_mapped_ipv6_becomes_ipv4(void **state)
{
    (void)state;
    expect_ip("::FFFF:1.2.3.4", AF_INET, "1.2.3.4");
    expect_ip("::ffff:0a00:0001", AF_INET, "10.0.0.1");
    struct ag_ip ip;
    struct ag_error why = {0};
    assert_int_equal(ag_identity_ip("::ffff:1.2.3.4", &ip, "ip", &why), AG_OK);
    const unsigned char want[16] = {1, 2, 3, 4};
    assert_memory_equal(ip.addr, want, sizeof want);
}

static void ipv6_is_printed_canonically(void **state)
{
    (void)state;
    expect_ip("2001:DB8::0:1", AF_INET6, "2001:db8::1");
    expect_ip("2001:0db8:0000:0000:0000:0000:0000:0001", AF_INET6,
              "2001:db8::1");
    expect_ip("::1", AF_INET6, "::1");
    struct ag_ip ip;
    struct ag_error why = {0};
    assert_int_equal(ag_identity_ip("2001:db8::1", &ip, "ip", &why), AG_OK);
    const unsigned char want[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                    0,    0,    0,    0,    0, 0, 0, 1};
    assert_memory_equal(ip.addr, want, sizeof want);
}

static void ipv4_is_kept(void **state)
{
    (void)state;
    expect_ip("192.168.0.1", AF_INET, "192.168.0.1");
    expect_ip("0.0.0.0", AF_INET, "0.0.0.0");
    expect_ip("255.255.255.255", AF_INET, "255.255.255.255");
}

/* Every IPv4 address's text is the one inet_ntop writes: each octet value
 * in each position, with the others varied. The service formats IPv4 by
 * hand (ag_identity.c); inet_ntop is the reference. */
static void ipv4_text_matches_inet_ntop(void **state)
{
    (void)state;
    for (unsigned pos = 0; pos < 4; pos++) {
        for (unsigned v = 0; v < 256; v++) {
            unsigned char a[4] = {(unsigned char)(v * 7), (unsigned char)v,
                                  (unsigned char)(255 - v),
                                  (unsigned char)(v / 3)};
            a[pos] = (unsigned char)v;
            char want[INET_ADDRSTRLEN];
            assert_non_null(inet_ntop(AF_INET, a, want, sizeof want));
            struct ag_ip ip;
            struct ag_error why = {0};
            assert_int_equal(ag_identity_ip(want, &ip, "ip", &why), AG_OK);
            assert_string_equal(ip.text, want);
            char prefix[AG_IP_PREFIX_MAX], want_prefix[INET_ADDRSTRLEN + 3];
            unsigned char net[4] = {a[0], a[1], a[2], 0};
            assert_non_null(inet_ntop(AF_INET, net, want_prefix, sizeof want));
            strcat(want_prefix, "/24");
            ag_identity_ip_net(&ip, 24, prefix);
            assert_string_equal(prefix, want_prefix);
        }
    }
}

static void malformed_ip_is_refused(void **state)
{
    (void)state;
    expect_ip_refused("1.2.3");
    expect_ip_refused("1.2.3.256");
    expect_ip_refused("1.2.3.4.5");
    expect_ip_refused("fe80::1%eth0");
    expect_ip_refused("");
    expect_ip_refused(" 1.2.3.4");
    expect_ip_refused("1.2.3.4 ");
    expect_ip_refused("1.2.3.4/24");
    expect_ip_refused("2001:db8:::1");
    expect_ip_refused("[::1]");
    expect_ip_refused("localhost");
    expect_ip_refused("0x7f.0.0.1");
}

static void expect_ip_net(const char *in, unsigned bits, const char *want)
{
    struct ag_ip ip;
    struct ag_error why = {0};
    char out[AG_IP_PREFIX_MAX];
    assert_int_equal(ag_identity_ip(in, &ip, "ip", &why), AG_OK);
    ag_identity_ip_net(&ip, bits, out);
    if (strcmp(out, want) != 0)
        fail_msg("%s/%u is '%s', want '%s'", in, bits, out, want);
}

static void ip_net_is_the_network_of_the_given_prefix(void **state)
{
    (void)state;
    expect_ip_net("203.0.113.77", 24, "203.0.113.0/24");
    expect_ip_net("::ffff:198.51.100.200", 24, "198.51.100.0/24");
    expect_ip_net("2001:db8:1:2:ffff::9", 64, "2001:db8:1:2::/64");
    expect_ip_net("2001:db8:1:2:ffff::9", 48, "2001:db8:1::/48");
    /* Prefixes that end inside a byte. */
    expect_ip_net("203.0.113.77", 20, "203.0.112.0/20");
    expect_ip_net("2001:db8:1:2ff::9", 56, "2001:db8:1:200::/56");
    expect_ip_net("2001:db8:abcd::1", 36, "2001:db8:a000::/36");
}

static void ip_net_of_a_whole_address_is_the_address(void **state)
{
    (void)state;
    /* An IPv4 ip key stays the address, as before IPv6 counted by /64. */
    expect_ip_net("192.0.2.1", 32, "192.0.2.1");
    expect_ip_net("2001:db8::1", 128, "2001:db8::1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ip_net_is_the_network_of_the_given_prefix),
        cmocka_unit_test(ip_net_of_a_whole_address_is_the_address),
        cmocka_unit_test(ipv4_mapped_ipv6_becomes_ipv4),
        cmocka_unit_test(ipv6_is_printed_canonically),
        cmocka_unit_test(ipv4_is_kept),
        cmocka_unit_test(ipv4_text_matches_inet_ntop),
        cmocka_unit_test(malformed_ip_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
