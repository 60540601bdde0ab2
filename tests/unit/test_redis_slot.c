/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_slot: key slots as Redis computes them (vectors recorded from a
 * real server), the slot map built from CLUSTER SLOTS replies read from
 * RESP text by the reader the service uses, strict refusal of malformed
 * replies, MOVED applied, and the redirection parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_redis_reply.h"
#include "ag_redis_slot.h"

static void crc16_matches_the_xmodem_check_value(void **state)
{
    (void)state;
    assert_int_equal(ag_redis_slot_crc16("123456789", 9), 0x31C3);
    assert_int_equal(ag_redis_slot_crc16("", 0), 0);
}

/*
 * Produced by CLUSTER KEYSLOT on redis-server 7.0.15 (a single node started
 * with --cluster-enabled yes, no slots assigned). To regenerate:
 *     python3 scripts/gen_slot_vectors.py
 * which starts its own server and prints these initialisers.
 */
static const struct {
    const char *key;
    size_t len;
    uint16_t slot;
} keyslot_vectors[] = {
    {"", 0, 0},
    {"123456789", 9, 12739},
    {"foo", 3, 12182},
    {"bar", 3, 5061},
    {"hello", 5, 866},
    {"user1000", 8, 3443},
    {"{user1000}.following", 20, 3443},
    {"{user1000}.followers", 20, 3443},
    {"foo{}{bar}", 10, 8363},
    {"foo{{bar}}zap", 13, 4015},
    {"foo{bar}{zap}", 13, 5061},
    {"{}", 2, 15257},
    {"{}x", 3, 10595},
    {"{{}}", 4, 4092},
    {"a{b", 3, 13340},
    {"a}b{c", 5, 13587},
    {"a}b{c}", 6, 7365},
    {"{", 1, 4092},
    {"}", 1, 12090},
    {"}{", 2, 12793},
    {"a{}", 3, 6082},
    {"{a}", 3, 15495},
    {"x{a}y", 5, 15495},
    {"\x00", 1, 0},
    {"\xff\xfe\x00\x01", 4, 9169},
    {"a\x00"
     "b{\x00}c",
     7, 0},
    {"\xc3\xbcn\xc3\xaf"
     "c\xc3\xb6"
     "de",
     10, 10384},
    {"ag:login_user:0123456789abcdef0123456789abcdef", 46, 8932},
    {"ag:login_user:0123456789abcdef0123456789abcdef:b", 48, 11712},
    {"ag:login_user:0123456789abcdef0123456789abcdef:l", 48, 3086},
    {"ag::fp:0123456789abcdef0123456789abcdef", 39, 13234},
    {"ag::probe", 9, 3681},
    {"ag:{0123456789abcdef0123456789abcdef}:x", 39, 1829},
    {"ag:{0123456789abcdef0123456789abcdef}:b", 39, 1829},
    {"0123456789abcdef0123456789abcdef", 32, 1829},
};

/* The same source: keys of n copies of fill, then suffix. */
static const struct {
    char fill;
    size_t n;
    const char *suffix;
    uint16_t slot;
} long_keyslot_vectors[] = {
    {'\x6b', 1000, "", 15858},
    {'\x6b', 1000, "{tag}", 8338},
    {'\xff', 4096, "", 8254},
};

static void slots_match_cluster_keyslot(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof keyslot_vectors / sizeof *keyslot_vectors;
         i++) {
        uint16_t got =
            ag_redis_slot(keyslot_vectors[i].key, keyslot_vectors[i].len);
        if (got != keyslot_vectors[i].slot)
            fail_msg("vector %zu: slot %u, Redis says %u", i, got,
                     keyslot_vectors[i].slot);
    }
}

static void long_keys_match_cluster_keyslot(void **state)
{
    (void)state;
    for (size_t i = 0;
         i < sizeof long_keyslot_vectors / sizeof *long_keyslot_vectors; i++) {
        size_t n = long_keyslot_vectors[i].n;
        size_t slen = strlen(long_keyslot_vectors[i].suffix);
        char *key = malloc(n + slen);
        assert_non_null(key);
        memset(key, long_keyslot_vectors[i].fill, n);
        memcpy(key + n, long_keyslot_vectors[i].suffix, slen);
        assert_int_equal(ag_redis_slot(key, n + slen),
                         long_keyslot_vectors[i].slot);
        free(key);
    }
}

static void a_hash_tag_puts_keys_in_one_slot(void **state)
{
    (void)state;
    const char *keys[] = {"{user1000}.following", "x{user1000}",
                          "{user1000}{other}", "user1000"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        assert_int_equal(ag_redis_slot(keys[i], strlen(keys[i])),
                         ag_redis_slot("user1000", 8));
}

/* A reply read from RESP text the way the service reads one. */
static redisReply *reply_of(const char *resp)
{
    redisReplyObjectFunctions fn = ag_redis_reply_functions;
    redisReader *r = redisReaderCreateWithFunctions(&fn);
    void *reply = NULL;
    assert_int_equal(redisReaderFeed(r, resp, strlen(resp)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
    assert_non_null(reply);
    redisReaderFree(r);
    return reply;
}

static struct ag_redis_slot_map *map_of(const char *resp)
{
    redisReply *r = reply_of(resp);
    struct ag_redis_slot_map *m = NULL;
    struct ag_error err;
    if (ag_redis_slot_map_from_reply(r, &m, &err))
        fail_msg("refused: %s", err.msg);
    ag_redis_reply_free(r);
    return m;
}

/* Three masters, one with a replica, one named twice (two ranges). */
#define THREE_MASTERS                                                          \
    "*4\r\n"                                                                   \
    "*4\r\n:0\r\n:5460\r\n"                                                    \
    "*3\r\n$9\r\n127.0.0.1\r\n:30001\r\n$4\r\nid-a\r\n"                        \
    "*3\r\n$9\r\n127.0.0.1\r\n:30004\r\n$4\r\nid-d\r\n"                        \
    "*3\r\n:5461\r\n:10922\r\n"                                                \
    "*3\r\n$3\r\n::1\r\n:30002\r\n$4\r\nid-b\r\n"                              \
    "*3\r\n:10923\r\n:16000\r\n"                                               \
    "*2\r\n$0\r\n\r\n:30003\r\n"                                               \
    "*3\r\n:16001\r\n:16383\r\n"                                               \
    "*3\r\n$9\r\n127.0.0.1\r\n:30001\r\n$4\r\nid-a\r\n"

static void a_map_names_each_master_once(void **state)
{
    (void)state;
    struct ag_redis_slot_map *m = map_of(THREE_MASTERS);
    assert_true(ag_redis_slot_map_complete(m));
    assert_int_equal(ag_redis_slot_map_nodes(m), 3);
    assert_string_equal(ag_redis_slot_map_host(m, 0), "127.0.0.1");
    assert_int_equal(ag_redis_slot_map_port(m, 0), 30001);
    assert_string_equal(ag_redis_slot_map_host(m, 1), "::1");
    assert_int_equal(ag_redis_slot_map_port(m, 1), 30002);
    /* An empty ip stays empty: the address the reply came from. */
    assert_string_equal(ag_redis_slot_map_host(m, 2), "");
    assert_int_equal(ag_redis_slot_map_port(m, 2), 30003);
    assert_int_equal(ag_redis_slot_map_owner(m, 0), 0);
    assert_int_equal(ag_redis_slot_map_owner(m, 5460), 0);
    assert_int_equal(ag_redis_slot_map_owner(m, 5461), 1);
    assert_int_equal(ag_redis_slot_map_owner(m, 10922), 1);
    assert_int_equal(ag_redis_slot_map_owner(m, 10923), 2);
    assert_int_equal(ag_redis_slot_map_owner(m, 16000), 2);
    assert_int_equal(ag_redis_slot_map_owner(m, 16001), 0);
    assert_int_equal(ag_redis_slot_map_owner(m, 16383), 0);
    ag_redis_slot_map_free(m);
}

static void uncovered_slots_have_no_owner(void **state)
{
    (void)state;
    struct ag_redis_slot_map *m =
        map_of("*2\r\n"
               "*3\r\n:0\r\n:99\r\n*2\r\n$4\r\nhost\r\n:1\r\n"
               "*3\r\n:200\r\n:200\r\n*2\r\n$4\r\nhost\r\n:1\r\n");
    assert_false(ag_redis_slot_map_complete(m));
    assert_int_equal(ag_redis_slot_map_nodes(m), 1);
    assert_int_equal(ag_redis_slot_map_owner(m, 99), 0);
    assert_int_equal(ag_redis_slot_map_owner(m, 100), -1);
    assert_int_equal(ag_redis_slot_map_owner(m, 199), -1);
    assert_int_equal(ag_redis_slot_map_owner(m, 200), 0);
    assert_int_equal(ag_redis_slot_map_owner(m, 201), -1);
    assert_int_equal(ag_redis_slot_map_owner(m, 16383), -1);
    ag_redis_slot_map_free(m);

    m = map_of("*0\r\n");
    assert_false(ag_redis_slot_map_complete(m));
    assert_int_equal(ag_redis_slot_map_nodes(m), 0);
    assert_int_equal(ag_redis_slot_map_owner(m, 0), -1);
    ag_redis_slot_map_free(m);
}

static void malformed_replies_are_refused_with_a_reason(void **state)
{
    (void)state;
#define BAD(resp, why)                                                         \
    {                                                                          \
        resp, why, sizeof resp - 1                                             \
    }
#define NUL_IP "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$3\r\na\0b\r\n:1\r\n"
    static const struct {
        const char *resp;
        const char *why; /* in the message */
        size_t len;      /* of resp, which may hold a NUL */
    } bad[] = {
        BAD("-ERR This instance has cluster support disabled\r\n",
            "cluster support disabled"),
        BAD("+OK\r\n", "non-array"),
        BAD("$-1\r\n", "non-array"),
        BAD("*1\r\n:1\r\n", "entry 0 is not an array"),
        BAD("*1\r\n*2\r\n:0\r\n:1\r\n", "entry 0 is not an array"),
        BAD("*1\r\n*3\r\n$1\r\n0\r\n:1\r\n*2\r\n$1\r\na\r\n:1\r\n",
            "not two integers"),
        BAD("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\na\r\n:1\r\n", "0-16383"),
        BAD("*1\r\n*3\r\n:-1\r\n:5\r\n*2\r\n$1\r\na\r\n:1\r\n", "-1-5"),
        BAD("*1\r\n*3\r\n:9\r\n:5\r\n*2\r\n$1\r\na\r\n:1\r\n", "start <= end"),
        BAD("*2\r\n*3\r\n:0\r\n:10\r\n*2\r\n$1\r\na\r\n:1\r\n"
            "*3\r\n:10\r\n:20\r\n*2\r\n$1\r\nb\r\n:2\r\n",
            "entry 1: slot 10 is in an earlier range"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$1\r\na\r\n", "integer port"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n$4\r\n6379\r\n",
            "integer port"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n:1\r\n:6379\r\n", "string ip"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$-1\r\n:6379\r\n", "string ip"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n+a\r\n:6379\r\n", "string ip"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n$1\r\na\r\n", "master is not an array"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:0\r\n", "port 0"),
        BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:65536\r\n",
            "port 65536"),
        BAD(NUL_IP, "NUL"),
        BAD("*1\r\n*4\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:1\r\n:7\r\n",
            "replica 0 is not an array"),
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        redisReply *r = NULL;
        redisReplyObjectFunctions fn = ag_redis_reply_functions;
        redisReader *rd = redisReaderCreateWithFunctions(&fn);
        const char *resp = bad[i].resp;
        size_t len = bad[i].len;
        assert_int_equal(redisReaderFeed(rd, resp, len), REDIS_OK);
        assert_int_equal(redisReaderGetReply(rd, (void **)&r), REDIS_OK);
        assert_non_null(r);
        redisReaderFree(rd);
        struct ag_redis_slot_map *m = (void *)1;
        struct ag_error err = {0};
        int rc = ag_redis_slot_map_from_reply(r, &m, &err);
        if (rc != AG_EINVAL || m || !strstr(err.msg, bad[i].why))
            fail_msg("case %zu: rc %d, message \"%s\", want \"%s\"", i, rc,
                     err.msg, bad[i].why);
        assert_string_equal(err.field, "CLUSTER SLOTS");
        ag_redis_reply_free(r);
    }
}

static void moved_gives_the_slot_to_its_new_node(void **state)
{
    (void)state;
    struct ag_redis_slot_map *m = map_of(THREE_MASTERS);
    /* To a node the map knows: no new node. */
    ag_redis_slot_map_moved(m, 3999, "::1", 30002);
    assert_int_equal(ag_redis_slot_map_owner(m, 3999), 1);
    assert_int_equal(ag_redis_slot_map_nodes(m), 3);
    /* To a new one: it joins the list; its neighbours stay. */
    ag_redis_slot_map_moved(m, 4000, "10.0.0.7", 6381);
    assert_int_equal(ag_redis_slot_map_nodes(m), 4);
    assert_int_equal(ag_redis_slot_map_owner(m, 4000), 3);
    assert_string_equal(ag_redis_slot_map_host(m, 3), "10.0.0.7");
    assert_int_equal(ag_redis_slot_map_port(m, 3), 6381);
    assert_int_equal(ag_redis_slot_map_owner(m, 4001), 0);
    /* The same host on another port is another node. */
    ag_redis_slot_map_moved(m, 4001, "10.0.0.7", 6382);
    assert_int_equal(ag_redis_slot_map_nodes(m), 5);
    assert_int_equal(ag_redis_slot_map_owner(m, 4001), 4);
    assert_true(ag_redis_slot_map_complete(m));
    ag_redis_slot_map_free(m);
}

static void moved_covers_an_uncovered_slot(void **state)
{
    (void)state;
    struct ag_redis_slot_map *m = map_of("*0\r\n");
    ag_redis_slot_map_moved(m, 0, "", 7000);
    assert_int_equal(ag_redis_slot_map_owner(m, 0), 0);
    assert_string_equal(ag_redis_slot_map_host(m, 0), "");
    assert_false(ag_redis_slot_map_complete(m));
    ag_redis_slot_map_free(m);
}

static void moved_past_the_node_cap_uncovers_the_slot(void **state)
{
    (void)state;
    struct ag_redis_slot_map *m = map_of("*0\r\n");
    for (int i = 0; i < AG_REDIS_SLOT_NODES_MAX; i++)
        ag_redis_slot_map_moved(m, (uint16_t)i, "h", i + 1);
    assert_int_equal(ag_redis_slot_map_nodes(m), AG_REDIS_SLOT_NODES_MAX);
    assert_int_equal(ag_redis_slot_map_owner(m, 0), 0);
    ag_redis_slot_map_moved(m, 0, "h", 65000);
    assert_int_equal(ag_redis_slot_map_owner(m, 0), -1);
    assert_int_equal(ag_redis_slot_map_nodes(m), AG_REDIS_SLOT_NODES_MAX);
    ag_redis_slot_map_free(m);
}

static void redirects_parse_to_kind_slot_host_and_port(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        enum ag_redis_redirect_kind kind;
        uint16_t slot;
        const char *host;
        int port;
    } good[] = {
        {"MOVED 3999 127.0.0.1:6381", AG_REDIS_MOVED, 3999, "127.0.0.1", 6381},
        {"ASK 3999 127.0.0.1:6381", AG_REDIS_ASK, 3999, "127.0.0.1", 6381},
        {"MOVED 3999 ::1:6381", AG_REDIS_MOVED, 3999, "::1", 6381},
        {"ASK 0 fe80::1:2:65535", AG_REDIS_ASK, 0, "fe80::1:2", 65535},
        {"MOVED 3999 :6381", AG_REDIS_MOVED, 3999, "", 6381},
        {"ASK 16383 :1", AG_REDIS_ASK, 16383, "", 1},
        {"MOVED 0 redis-7.example.net:7000", AG_REDIS_MOVED, 0,
         "redis-7.example.net", 7000},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        struct ag_redis_redirect r;
        if (ag_redis_slot_parse_redirect(good[i].text, strlen(good[i].text),
                                         &r))
            fail_msg("refused: %s", good[i].text);
        assert_int_equal(r.kind, good[i].kind);
        assert_int_equal(r.slot, good[i].slot);
        assert_string_equal(r.host, good[i].host);
        assert_int_equal(r.port, good[i].port);
    }
}

static void other_errors_are_not_redirects(void **state)
{
    (void)state;
    static const char *bad[] = {
        "MOVED",
        "MOVED ",
        "MOVED x 1.2.3.4:5",
        "MOVED 16384 a:1",
        "MOVED 99999999999999999999 a:1",
        "MOVED -1 a:1",
        "MOVED +1 a:1",
        "MOVED 01 a:1",
        "MOVED 1 host",
        "MOVED 1 host:",
        "MOVED 1 host:x",
        "MOVED 1 host:65536",
        "MOVED 1 host:1 ",
        "MOVED 1 host:1 extra",
        "MOVED 1  host:1",
        "MOVED 1",
        "MOVED 1 ",
        "ASK 1 :0",
        "ASK 1 :-1",
        "ASKING 1 a:1",
        "moved 1 a:1",
        "ERR unknown command",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN Hash slot not served",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct ag_redis_redirect r;
        if (ag_redis_slot_parse_redirect(bad[i], strlen(bad[i]), &r) !=
            AG_EINVAL)
            fail_msg("accepted: \"%s\"", bad[i]);
    }
    /* The length bounds the text: no NUL needed, none read past. */
    struct ag_redis_redirect r;
    assert_int_equal(ag_redis_slot_parse_redirect("MOVED 1 a:12", 11, &r),
                     AG_OK);
    assert_int_equal(r.port, 1);
    assert_int_equal(ag_redis_slot_parse_redirect("MOVED 1 a\0:1", 12, &r),
                     AG_EINVAL);
    /* A host too long for struct ag_redis_redirect. */
    char text[AG_REDIS_HOST_MAX + 32];
    size_t n = (size_t)snprintf(text, sizeof text, "MOVED 1 ");
    memset(text + n, 'h', AG_REDIS_HOST_MAX);
    n += AG_REDIS_HOST_MAX;
    n += (size_t)snprintf(text + n, sizeof text - n, ":1");
    assert_int_equal(ag_redis_slot_parse_redirect(text, n, &r), AG_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_matches_the_xmodem_check_value),
        cmocka_unit_test(slots_match_cluster_keyslot),
        cmocka_unit_test(long_keys_match_cluster_keyslot),
        cmocka_unit_test(a_hash_tag_puts_keys_in_one_slot),
        cmocka_unit_test(a_map_names_each_master_once),
        cmocka_unit_test(uncovered_slots_have_no_owner),
        cmocka_unit_test(malformed_replies_are_refused_with_a_reason),
        cmocka_unit_test(moved_gives_the_slot_to_its_new_node),
        cmocka_unit_test(moved_covers_an_uncovered_slot),
        cmocka_unit_test(moved_past_the_node_cap_uncovers_the_slot),
        cmocka_unit_test(redirects_parse_to_kind_slot_host_and_port),
        cmocka_unit_test(other_errors_are_not_redirects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
