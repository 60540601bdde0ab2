/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_lists: parsing admin entries (canonical networks, hashed users and
 * phones, AS numbers and countries) and matching requests, deny before
 * allow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_lists.h"
#include <stdbool.h>

static struct ag_hasher hasher;

static int setup(void **state)
{
    (void)state;
    if (sodium_init() < 0)
        return -1;
    unsigned char secret[32];
    memset(secret, 7, sizeof secret);
    ag_hasher_init(&hasher, secret, sizeof secret);
    return 0;
}

static int entry(enum ag_list list, const char *json, struct ag_list_entry *e,
                 struct ag_error *err)
{
    json_t *o = json_loads(json, 0, NULL);
    assert_non_null(o);
    int rc = ag_list_entry_from_json(o, list, &hasher, e, err);
    json_decref(o);
    return rc;
}

static void networks_are_canonical_and_need_zero_host_bits(void **state)
{
    (void)state;
    struct ag_list_entry e;
    struct ag_error err;
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"ip\",\"value\":\"2001:DB8::/32\"}", &e,
                           &err),
                     AG_OK);
    assert_string_equal(e.value, "2001:db8::/32");
    assert_int_equal(e.bits, 32);
    assert_int_equal(
        entry(AG_LIST_DENY,
              "{\"kind\":\"ip\",\"value\":\"::ffff:10.1.0.0/112\"}", &e, &err),
        AG_OK);
    assert_string_equal(e.value, "10.1.0.0/16");
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"ip\",\"value\":\"10.1.2.3\"}", &e,
                           &err),
                     AG_OK);
    assert_string_equal(e.value, "10.1.2.3");
    assert_int_equal(e.bits, 32);
    /* A prefix length is digits only: strtoul took "+8", " 8", and "-"
     * followed by a number that wraps to 32. */
    static const char *const bad[] = {
        "10.1.2.3/8",   "10.0.0.0/33",
        "10.0.0.0/",    "10.0.0.0/x",
        "host.example", "10.0.0.0/+8",
        "10.0.0.0/ 8",  "0.0.0.0/-18446744073709551584",
        "10.0.0.0/0008"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"kind\":\"ip\",\"value\":\"%s\"}",
                 bad[i]);
        assert_int_equal(entry(AG_LIST_DENY, json, &e, &err), AG_EINVAL);
        assert_string_equal(err.field, "value");
    }
}

static void users_and_phones_keep_only_their_digest(void **state)
{
    (void)state;
    struct ag_list_entry e;
    struct ag_error err;
    assert_int_equal(entry(AG_LIST_ALLOW,
                           "{\"kind\":\"user\",\"value\":\" Bob@X.org \"}", &e,
                           &err),
                     AG_OK);
    char want[AG_DIGEST_HEX + 1];
    ag_identity_digest(&hasher, AG_KEY_USER, "bob@x.org", want);
    assert_string_equal(e.value, want);
    assert_null(strstr(e.value, "bob"));
    json_t *o = ag_list_entry_to_json(&e);
    char *text = json_dumps(o, 0);
    assert_null(strstr(text, "bob"));
    assert_non_null(strstr(text, want));
    free(text);
    json_decref(o);
    assert_int_equal(entry(AG_LIST_ALLOW,
                           "{\"kind\":\"phone\",\"value\":\"600\"}", &e, &err),
                     AG_EINVAL);
    assert_string_equal(err.field, "value");
    /* A phone no check can carry (no assigned calling code) either. */
    assert_int_equal(entry(AG_LIST_ALLOW,
                           "{\"kind\":\"phone\",\"value\":\"+2801234567\"}", &e,
                           &err),
                     AG_EINVAL);
    assert_string_equal(err.field, "value");
}

static void request(enum ag_endpoint ep, const char *body, struct ag_request *r)
{
    struct ag_error err;
    assert_int_equal(ag_request_parse(ep, body, strlen(body), NULL, r, &err),
                     AG_OK);
}

static void deny_beats_allow_and_endpoints_scope_entries(void **state)
{
    (void)state;
    struct ag_list_entry es[3];
    struct ag_error err;
    assert_int_equal(entry(AG_LIST_ALLOW,
                           "{\"kind\":\"ip\",\"value\":\"10.0.0.0/8\"}", &es[0],
                           &err),
                     AG_OK);
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"user\",\"value\":\"eve\","
                           "\"endpoint\":\"login\"}",
                           &es[1], &err),
                     AG_OK);
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"ip\",\"value\":\"10.9.0.0/16\"}",
                           &es[2], &err),
                     AG_OK);
    es[0].id = 1, es[1].id = 2, es[2].id = 3;
    char eve[AG_DIGEST_HEX + 1], ann[AG_DIGEST_HEX + 1];
    ag_identity_digest(&hasher, AG_KEY_USER, "eve", eve);
    ag_identity_digest(&hasher, AG_KEY_USER, "ann", ann);
    struct ag_request r;
    request(AG_EP_LOGIN, "{\"user\":\"ann\",\"ip\":\"10.1.2.3\"}", &r);
    assert_int_equal(ag_lists_match(es, 3, &r, ann, NULL)->id, 1);
    request(AG_EP_LOGIN, "{\"user\":\"eve\",\"ip\":\"10.1.2.3\"}", &r);
    assert_int_equal(ag_lists_match(es, 3, &r, eve, NULL)->id, 2);
    request(AG_EP_LOGIN, "{\"user\":\"ann\",\"ip\":\"10.9.255.1\"}", &r);
    assert_int_equal(ag_lists_match(es, 3, &r, ann, NULL)->id, 3);
    request(AG_EP_LOGIN, "{\"user\":\"ann\",\"ip\":\"11.0.0.1\"}", &r);
    assert_null(ag_lists_match(es, 3, &r, ann, NULL));
    /* eve's entry is for login only. */
    request(AG_EP_OTP,
            "{\"phone\":\"+48600100200\",\"ip\":\"11.0.0.1\",\"user\":\"eve\"}",
            &r);
    assert_null(ag_lists_match(es, 3, &r, eve, NULL));
}

static int ip_entry(enum ag_list list, const char *value, const char *force,
                    struct ag_list_entry *e, struct ag_error *err)
{
    char json[160];
    snprintf(json, sizeof json, "{\"kind\":\"ip\",\"value\":\"%s\"%s%s}", value,
             force ? ",\"force\":" : "", force ? force : "");
    return entry(list, json, e, err);
}

static void broad_allow_networks_are_refused_unless_forced(void **state)
{
    (void)state;
    static const char *const broad[] = {"0.0.0.0/0", "::/0", "8.0.0.0/7",
                                        "2000::/15", "::ffff:0.0.0.0/96"};
    struct ag_list_entry e;
    struct ag_error err;
    for (size_t i = 0; i < sizeof broad / sizeof broad[0]; i++) {
        assert_int_equal(ip_entry(AG_LIST_ALLOW, broad[i], NULL, &e, &err),
                         AG_EINVAL);
        assert_string_equal(err.field, "value");
        assert_non_null(strstr(err.msg, "\"force\": true"));
        assert_int_equal(ip_entry(AG_LIST_ALLOW, broad[i], "false", &e, &err),
                         AG_EINVAL);
        assert_int_equal(ip_entry(AG_LIST_ALLOW, broad[i], "true", &e, &err),
                         AG_OK);
        assert_true(e.force);
        /* A deny entry may be as broad as it likes. */
        assert_int_equal(ip_entry(AG_LIST_DENY, broad[i], NULL, &e, &err),
                         AG_OK);
    }
    static const char *const narrow[] = {"10.0.0.0/8", "2001::/16",
                                         "203.0.113.7"};
    for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
        assert_int_equal(ip_entry(AG_LIST_ALLOW, narrow[i], NULL, &e, &err),
                         AG_OK);
        assert_false(e.force);
    }
    assert_int_equal(ip_entry(AG_LIST_ALLOW, "0.0.0.0/0", "1", &e, &err),
                     AG_EINVAL);
    assert_string_equal(err.field, "force");
}

static void forced_entry_says_so_in_its_json(void **state)
{
    (void)state;
    struct ag_list_entry e;
    struct ag_error err;
    assert_int_equal(ip_entry(AG_LIST_ALLOW, "::/0", "true", &e, &err), AG_OK);
    json_t *o = ag_list_entry_to_json(&e);
    assert_true(json_is_true(json_object_get(o, "force")));
    json_decref(o);
    assert_int_equal(ip_entry(AG_LIST_ALLOW, "10.0.0.0/8", NULL, &e, &err),
                     AG_OK);
    o = ag_list_entry_to_json(&e);
    assert_null(json_object_get(o, "force"));
    json_decref(o);
}

/* The list entry of one IP value, and whether a login from ip matches it;
 * opts as the service would pass them (NULL for the defaults). */
static bool ip_entry_matches(const char *value, const char *ip,
                             const struct ag_request_opts *opts)
{
    struct ag_list_entry e;
    struct ag_error err;
    char json[128], body[128];
    snprintf(json, sizeof json, "{\"kind\":\"ip\",\"value\":\"%s\"}", value);
    assert_int_equal(entry(AG_LIST_DENY, json, &e, &err), AG_OK);
    snprintf(body, sizeof body, "{\"user\":\"ann\",\"ip\":\"%s\"}", ip);
    struct ag_request r;
    assert_int_equal(
        ag_request_parse(AG_EP_LOGIN, body, strlen(body), opts, &r, &err),
        AG_OK);
    return ag_lists_match(&e, 1, &r, NULL, NULL) != NULL;
}

static void ipv6_address_entry_matches_its_whole_slash64(void **state)
{
    (void)state;
    assert_true(ip_entry_matches("2001:db8:1:2::1", "2001:db8:1:2::1", NULL));
    assert_true(
        ip_entry_matches("2001:db8:1:2::1", "2001:db8:1:2:ffff::9", NULL));
    assert_false(ip_entry_matches("2001:db8:1:2::1", "2001:db8:1:3::1", NULL));
    /* With --ipv6-ip-prefix 128 an address is only itself. */
    const struct ag_request_opts per_address = {.ipv6_ip_prefix = 128,
                                                .ipv6_group_prefix = 48};
    assert_true(
        ip_entry_matches("2001:db8:1:2::1", "2001:db8:1:2::1", &per_address));
    assert_false(
        ip_entry_matches("2001:db8:1:2::1", "2001:db8:1:2::2", &per_address));
}

static void ipv4_address_entry_matches_only_itself(void **state)
{
    (void)state;
    assert_true(ip_entry_matches("192.0.2.1", "192.0.2.1", NULL));
    assert_true(ip_entry_matches("192.0.2.1", "::ffff:192.0.2.1", NULL));
    assert_false(ip_entry_matches("192.0.2.1", "192.0.2.2", NULL));
}

static void network_entries_match_by_their_own_prefix(void **state)
{
    (void)state;
    /* Longer than the ip key's /64: only its own /96. */
    assert_true(
        ip_entry_matches("2001:db8:1:2::/96", "2001:db8:1:2::ffff", NULL));
    assert_false(
        ip_entry_matches("2001:db8:1:2::/96", "2001:db8:1:2:0:1::1", NULL));
    /* Shorter: the whole /48. */
    assert_true(ip_entry_matches("2001:db8:1::/48", "2001:db8:1:ff::1", NULL));
    assert_false(ip_entry_matches("2001:db8:1::/48", "2001:db8:2::1", NULL));
    assert_true(ip_entry_matches("192.0.2.128/25", "192.0.2.200", NULL));
    assert_false(ip_entry_matches("192.0.2.128/25", "192.0.2.100", NULL));
}

static void countries_and_number_ranges_match_the_phone_as_written(void **state)
{
    (void)state;
    struct ag_list_entry es[2];
    struct ag_error err;
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"country\",\"value\":\"+44\"}", &es[0],
                           &err),
                     AG_OK);
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"phone_prefix\",\"value\":\"+4860\"}",
                           &es[1], &err),
                     AG_OK);
    es[0].id = 1, es[1].id = 2;
    /* Kept as written, shown as a value: a calling code names no one. */
    assert_string_equal(es[0].value, "+44");
    json_t *o = ag_list_entry_to_json(&es[0]);
    assert_string_equal(json_string_value(json_object_get(o, "value")), "+44");
    json_decref(o);
    struct ag_request r;
    request(AG_EP_OTP, "{\"phone\":\"+447911123456\",\"ip\":\"10.1.2.3\"}", &r);
    assert_int_equal(ag_lists_match(es, 2, &r, NULL, NULL)->id, 1);
    request(AG_EP_OTP, "{\"phone\":\"+48600100200\",\"ip\":\"10.1.2.3\"}", &r);
    assert_int_equal(ag_lists_match(es, 2, &r, NULL, NULL)->id, 2);
    request(AG_EP_OTP, "{\"phone\":\"+48500100200\",\"ip\":\"10.1.2.3\"}", &r);
    assert_null(ag_lists_match(es, 2, &r, NULL, NULL));
    /* +1 is NANP; +14 is no calling code (a prefix of one is not one). */
    static const char *const bad_country[] = {"+4", "44",   "+440", "+28",
                                              "+",  "+44 ", ""};
    for (size_t i = 0; i < sizeof bad_country / sizeof bad_country[0]; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"kind\":\"country\",\"value\":\"%s\"}",
                 bad_country[i]);
        assert_int_equal(entry(AG_LIST_DENY, json, &es[0], &err), AG_EINVAL);
        assert_string_equal(err.field, "value");
    }
    static const char *const bad_prefix[] = {"+4", "4860", "+0860", "+48a",
                                             "+1234567890123456"};
    for (size_t i = 0; i < sizeof bad_prefix / sizeof bad_prefix[0]; i++) {
        char json[96];
        snprintf(json, sizeof json,
                 "{\"kind\":\"phone_prefix\",\"value\":\"%s\"}", bad_prefix[i]);
        assert_int_equal(entry(AG_LIST_DENY, json, &es[0], &err), AG_EINVAL);
        assert_string_equal(err.field, "value");
    }
    /* Rows read back validate the same way. */
    assert_int_equal(
        ag_list_entry_from_row(5, "deny", "country", "+48", "*", "", &es[0]),
        AG_OK);
    assert_int_equal(
        ag_list_entry_from_row(5, "deny", "country", "+4", "*", "", &es[0]),
        AG_EINVAL);
}

static void rows_round_trip(void **state)
{
    (void)state;
    struct ag_list_entry e;
    assert_int_equal(
        ag_list_entry_from_row(5, "deny", "ip", "192.0.2.0/24", "otp", "n", &e),
        AG_OK);
    assert_int_equal(e.id, 5);
    assert_int_equal(e.endpoint, AG_EP_OTP);
    assert_int_equal(e.bits, 24);
    assert_int_equal(
        ag_list_entry_from_row(5, "deny", "user", "plaintext", "*", "", &e),
        AG_EINVAL);
    assert_int_equal(
        ag_list_entry_from_row(5, "grey", "ip", "192.0.2.0/24", "*", "", &e),
        AG_EINVAL);
}

static void an_entry_written_as_json_is_read_back_the_same(void **state)
{
    (void)state;
    struct ag_list_entry e, back;
    struct ag_error err;
    /* "*" is every endpoint, as leaving it out. */
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\": \"ip\", \"value\": \"192.0.2.0/24\", "
                           "\"endpoint\": \"*\", \"note\": \"n\"}",
                           &e, &err),
                     AG_OK);
    assert_int_equal(e.endpoint, -1);
    static const char *const read[] = {
        "{\"kind\": \"country\", \"value\": \"+44\", \"endpoint\": "
        "\"otp\"}",
        "{\"kind\": \"ip\", \"value\": \"2001:db8::/32\"}",
        "{\"kind\": \"phone_prefix\", \"value\": \"+4479\", \"note\": "
        "\"QA\", \"endpoint\": \"*\"}",
        "{\"kind\": \"asn\", \"value\": \"174\", \"endpoint\": \"login\"}",
        "{\"kind\": \"ip_country\", \"value\": \"FR\"}",
    };
    for (size_t i = 0; i < sizeof read / sizeof read[0]; i++) {
        assert_int_equal(entry(AG_LIST_ALLOW, read[i], &e, &err), AG_OK);
        e.id = 41;
        json_t *o = ag_list_entry_to_json(&e);
        assert_non_null(o);
        /* As the admin API answers it: id, list and endpoint included. */
        assert_non_null(json_object_get(o, "id"));
        assert_string_equal(json_string_value(json_object_get(o, "list")),
                            "allow");
        assert_int_equal(
            ag_list_entry_from_json(o, AG_LIST_ALLOW, &hasher, &back, &err),
            AG_OK);
        back.id = 41;
        json_t *again = ag_list_entry_to_json(&back);
        assert_true(json_equal(o, again));
        /* Into the other list, it is refused naming its list. */
        assert_int_equal(
            ag_list_entry_from_json(o, AG_LIST_DENY, &hasher, &back, &err),
            AG_EINVAL);
        assert_string_equal(err.field, "list");
        json_decref(again);
        json_decref(o);
    }
    /* A user read back holds only its digest, which cannot be posted. */
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\": \"user\", \"value\": \"a@b.example\"}",
                           &e, &err),
                     AG_OK);
    e.id = 3;
    json_t *o = ag_list_entry_to_json(&e);
    assert_int_equal(
        ag_list_entry_from_json(o, AG_LIST_DENY, &hasher, &back, &err),
        AG_EINVAL);
    assert_string_equal(err.field, "hash");
    json_decref(o);
    static const char *const bad[][2] = {
        {"{\"kind\": \"ip\", \"value\": \"192.0.2.0/24\", \"id\": \"7\"}",
         "id"},
        {"{\"kind\": \"ip\", \"value\": \"192.0.2.0/24\", \"id\": 0}", "id"},
        {"{\"kind\": \"ip\", \"value\": \"192.0.2.0/24\", \"list\": 1}",
         "list"},
        {"{\"kind\": \"ip\", \"value\": \"192.0.2.0/24\", \"endpoint\": "
         "\"**\"}",
         "endpoint"},
        {"{\"kind\": \"ip\", \"value\": \"192.0.2.0/24\", \"endpoint\": "
         "\"\"}",
         "endpoint"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(entry(AG_LIST_DENY, bad[i][0], &e, &err), AG_EINVAL);
        assert_string_equal(err.field, bad[i][1]);
    }
}

static void as_numbers_and_ip_countries_are_kept_canonical(void **state)
{
    (void)state;
    static const char *const good[][3] = {
        {"asn", "AS174", "174"},    {"asn", "as174", "174"},
        {"asn", "174", "174"},      {"asn", "4294967295", "4294967295"},
        {"asn", "AS1", "1"},        {"ip_country", "FR", "FR"},
        {"ip_country", "fr", "FR"}, {"ip_country", "xK", "XK"},
    };
    struct ag_list_entry e;
    struct ag_error err;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"kind\":\"%s\",\"value\":\"%s\"}",
                 good[i][0], good[i][1]);
        assert_int_equal(entry(AG_LIST_DENY, json, &e, &err), AG_OK);
        assert_string_equal(e.value, good[i][2]);
        assert_string_equal(ag_list_kind_name(e.kind), good[i][0]);
        /* Named in plain text: an AS or a country names no one. */
        json_t *o = ag_list_entry_to_json(&e);
        assert_string_equal(json_string_value(json_object_get(o, "value")),
                            good[i][2]);
        assert_null(json_object_get(o, "hash"));
        json_decref(o);
    }
    static const char *const bad[][2] = {
        {"asn", "0"},
        {"asn", "AS0"},
        {"asn", "AS"},
        {"asn", ""},
        {"asn", "4294967296"},
        {"asn", "99999999999"},
        {"asn", "AS 174"},
        {"asn", "+174"},
        {"asn", "-1"},
        {"asn", "0174"},
        {"asn", "174 "},
        {"asn", "AS174x"},
        {"asn", "ASN174"},
        {"asn", "AS-174"},
        {"ip_country", "F"},
        {"ip_country", "FRA"},
        {"ip_country", "F1"},
        {"ip_country", ""},
        {"ip_country", "+33"},
        {"ip_country", "fr "},
        {"ip_country", "\\u00e9\\u00e9"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"kind\":\"%s\",\"value\":\"%s\"}",
                 bad[i][0], bad[i][1]);
        assert_int_equal(entry(AG_LIST_DENY, json, &e, &err), AG_EINVAL);
        assert_string_equal(err.field, "value");
    }
    /* A number is no value: values are strings, as every kind's are. */
    assert_int_equal(
        entry(AG_LIST_DENY, "{\"kind\":\"asn\",\"value\":174}", &e, &err),
        AG_EINVAL);
    assert_string_equal(err.field, "value");
    /* The kind refusal names the new kinds. */
    assert_int_equal(
        entry(AG_LIST_DENY, "{\"kind\":\"as\",\"value\":\"174\"}", &e, &err),
        AG_EINVAL);
    assert_string_equal(err.field, "kind");
    assert_non_null(strstr(err.msg, "\"ip_country\""));
    /* A row holds only the canonical spelling: another was not written by
     * the service. */
    assert_int_equal(
        ag_list_entry_from_row(7, "allow", "asn", "174", "*", "", &e), AG_OK);
    assert_int_equal(e.kind, AG_LK_ASN);
    assert_int_equal(
        ag_list_entry_from_row(7, "deny", "ip_country", "FR", "otp", "", &e),
        AG_OK);
    assert_int_equal(e.endpoint, AG_EP_OTP);
    static const char *const bad_rows[][2] = {
        {"asn", "AS174"}, {"asn", "0174"},      {"asn", "0"},
        {"asn", "x"},     {"ip_country", "fr"}, {"ip_country", "FRA"},
        {"asn", ""},      {"ip_country", ""},
    };
    for (size_t i = 0; i < sizeof bad_rows / sizeof bad_rows[0]; i++)
        assert_int_equal(ag_list_entry_from_row(7, "deny", bad_rows[i][0],
                                                bad_rows[i][1], "*", "", &e),
                         AG_EINVAL);
}

static void network_allow_entries_need_no_force(void **state)
{
    (void)state;
    struct ag_list_entry e;
    struct ag_error err;
    assert_int_equal(entry(AG_LIST_ALLOW,
                           "{\"kind\":\"asn\",\"value\":\"AS64501\","
                           "\"note\":\"the corporate VPN\"}",
                           &e, &err),
                     AG_OK);
    assert_false(e.force);
    assert_int_equal(entry(AG_LIST_ALLOW,
                           "{\"kind\":\"ip_country\",\"value\":\"de\"}", &e,
                           &err),
                     AG_OK);
    assert_false(e.force);
}

/* A request of ep from ip, and what the service's lookup found of it
 * (country NULL: no lookup at all). */
static void net_request(enum ag_endpoint ep, const char *country, uint32_t asn,
                        struct ag_request *r)
{
    request(ep,
            ep == AG_EP_LOGIN
                ? "{\"user\":\"ann\",\"ip\":\"198.51.100.7\"}"
                : "{\"phone\":\"+48600100200\",\"ip\":\"198.51.100.7\"}",
            r);
    static const struct ag_net_avail both = {.country = true, .asn = true};
    if (country)
        ag_request_network(r, &both, country, asn, 0, 0);
}

static void network_entries_match_what_the_lookup_found(void **state)
{
    (void)state;
    struct ag_list_entry es[3];
    struct ag_error err;
    assert_int_equal(entry(AG_LIST_ALLOW,
                           "{\"kind\":\"asn\",\"value\":\"AS64501\"}", &es[0],
                           &err),
                     AG_OK);
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"ip_country\",\"value\":\"fr\"}", &es[1],
                           &err),
                     AG_OK);
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"asn\",\"value\":\"64666\","
                           "\"endpoint\":\"otp_verify\"}",
                           &es[2], &err),
                     AG_OK);
    es[0].id = 1, es[1].id = 2, es[2].id = 3;
    struct ag_request r;
    /* Every endpoint, as an ip entry. */
    static const enum ag_endpoint eps[] = {AG_EP_LOGIN, AG_EP_OTP,
                                           AG_EP_OTP_VERIFY};
    for (size_t i = 0; i < 3; i++) {
        net_request(eps[i], "FR", 64502, &r);
        assert_int_equal(ag_lists_match(es, 3, &r, NULL, NULL)->id, 2);
        net_request(eps[i], "DE", 64501, &r);
        assert_int_equal(ag_lists_match(es, 3, &r, NULL, NULL)->id, 1);
        /* Deny wins: an allowed AS in a denied country. */
        net_request(eps[i], "FR", 64501, &r);
        assert_int_equal(ag_lists_match(es, 3, &r, NULL, NULL)->id, 2);
        net_request(eps[i], "DE", 64502, &r);
        assert_null(ag_lists_match(es, 3, &r, NULL, NULL));
        /* An address the databases do not know, or no lookup at all (no
         * network files): no entry of these kinds matches. */
        net_request(eps[i], "", 0, &r);
        assert_null(ag_lists_match(es, 3, &r, NULL, NULL));
        net_request(eps[i], NULL, 0, &r);
        assert_null(ag_lists_match(es, 3, &r, NULL, NULL));
    }
    /* An entry for one endpoint matches there only. */
    net_request(AG_EP_OTP, "DE", 64666, &r);
    assert_null(ag_lists_match(es, 3, &r, NULL, NULL));
    net_request(AG_EP_OTP_VERIFY, "DE", 64666, &r);
    assert_int_equal(ag_lists_match(es, 3, &r, NULL, NULL)->id, 3);
    /* The country of the address, not the phone's calling code: +48 is
     * Poland's, and an ip_country entry of PL does not see it. */
    struct ag_list_entry pl;
    assert_int_equal(entry(AG_LIST_DENY,
                           "{\"kind\":\"ip_country\",\"value\":\"PL\"}", &pl,
                           &err),
                     AG_OK);
    net_request(AG_EP_OTP, "DE", 64501, &r);
    assert_null(ag_lists_match(&pl, 1, &r, NULL, NULL));
}

/* What the fleet does with an entry: the admin body parsed, written as
 * JSON (the record and the audit row), read back as a row on another
 * instance (ag_db_fleet_entry_parse calls ag_list_entry_from_row). */
static void network_entries_travel_as_rows(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"kind\":\"asn\",\"value\":\"AS174\",\"note\":\"n\"}",
        "{\"kind\":\"ip_country\",\"value\":\"fr\",\"endpoint\":\"otp\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct ag_list_entry e, row;
        struct ag_error err;
        assert_int_equal(entry(AG_LIST_DENY, bodies[i], &e, &err), AG_OK);
        e.id = 9;
        json_t *o = ag_list_entry_to_json(&e);
        assert_non_null(o);
        const char *ep = json_string_value(json_object_get(o, "endpoint"));
        assert_int_equal(ag_list_entry_from_row(
                             json_integer_value(json_object_get(o, "id")),
                             json_string_value(json_object_get(o, "list")),
                             json_string_value(json_object_get(o, "kind")),
                             json_string_value(json_object_get(o, "value")), ep,
                             json_string_value(json_object_get(o, "note")),
                             &row),
                         AG_OK);
        assert_int_equal(row.id, 9);
        assert_int_equal(row.list, e.list);
        assert_int_equal(row.kind, e.kind);
        assert_int_equal(row.endpoint, e.endpoint);
        assert_string_equal(row.value, e.value);
        assert_string_equal(row.note, e.note);
        json_t *again = ag_list_entry_to_json(&row);
        assert_true(json_equal(o, again));
        json_decref(again);
        json_decref(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(networks_are_canonical_and_need_zero_host_bits),
        cmocka_unit_test(users_and_phones_keep_only_their_digest),
        cmocka_unit_test(deny_beats_allow_and_endpoints_scope_entries),
        cmocka_unit_test(broad_allow_networks_are_refused_unless_forced),
        cmocka_unit_test(forced_entry_says_so_in_its_json),
        cmocka_unit_test(ipv6_address_entry_matches_its_whole_slash64),
        cmocka_unit_test(ipv4_address_entry_matches_only_itself),
        cmocka_unit_test(network_entries_match_by_their_own_prefix),
        cmocka_unit_test(rows_round_trip),
        cmocka_unit_test(an_entry_written_as_json_is_read_back_the_same),
        cmocka_unit_test(
            countries_and_number_ranges_match_the_phone_as_written),
        cmocka_unit_test(as_numbers_and_ip_countries_are_kept_canonical),
        cmocka_unit_test(network_allow_entries_need_no_force),
        cmocka_unit_test(network_entries_match_what_the_lookup_found),
        cmocka_unit_test(network_entries_travel_as_rows),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
