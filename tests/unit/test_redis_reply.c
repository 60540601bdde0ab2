/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_redis_reply: whatever RESP the reader is fed, whole or a byte at a time,
 * the reply tree it builds is the one hiredis's own functions build from the
 * same bytes; and a reply broken off by a protocol error is freed whole
 * (the sanitizer build fails the test on a leak).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_redis_reply.h"

static void assert_same_reply(const redisReply *want, const redisReply *got)
{
    assert_non_null(got);
    assert_int_equal(got->type, want->type);
    switch (want->type) {
    case REDIS_REPLY_INTEGER:
        assert_int_equal(got->integer, want->integer);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        assert_int_equal(got->len, want->len);
        assert_memory_equal(got->str, want->str, want->len + 1);
        break;
    case REDIS_REPLY_ARRAY:
        assert_int_equal(got->elements, want->elements);
        for (size_t i = 0; i < want->elements; i++)
            assert_same_reply(want->element[i], got->element[i]);
        break;
    default:
        break;
    }
}

/* Reads one reply from resp, fed in pieces of step bytes. */
static void *read_one(redisReader *r, const char *resp, size_t len, size_t step)
{
    void *reply = NULL;
    for (size_t at = 0; at < len && !reply; at += step) {
        size_t n = len - at < step ? len - at : step;
        assert_int_equal(redisReaderFeed(r, resp + at, n), REDIS_OK);
        assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
    }
    return reply;
}

static void assert_reads_like_hiredis(const char *resp, size_t len)
{
    redisReader *ref = redisReaderCreate();
    redisReplyObjectFunctions fn = ag_redis_reply_functions;
    void *want = read_one(ref, resp, len, len);
    assert_non_null(want);
    const size_t steps[] = {1, len}; /* a byte at a time, and whole */
    for (size_t i = 0; i < 2; i++) {
        redisReader *ours = redisReaderCreateWithFunctions(&fn);
        void *got = read_one(ours, resp, len, steps[i]);
        assert_same_reply(want, got);
        ag_redis_reply_free(got);
        redisReaderFree(ours);
    }
    freeReplyObject(want);
    redisReaderFree(ref);
}

#define READS_LIKE_HIREDIS(lit) assert_reads_like_hiredis(lit, sizeof lit - 1)

static void a_check_reply_of_integers(void **state)
{
    (void)state;
    READS_LIKE_HIREDIS("*12\r\n:1\r\n:9\r\n:0\r\n:900000\r\n:1\r\n:99\r\n"
                       ":0\r\n:900000\r\n:0\r\n:0\r\n:4123\r\n:-1\r\n");
}

static void scalars_at_the_top(void **state)
{
    (void)state;
    READS_LIKE_HIREDIS(":42\r\n");
    READS_LIKE_HIREDIS(":-9223372036854775808\r\n");
    READS_LIKE_HIREDIS("+OK\r\n");
    READS_LIKE_HIREDIS("-NOSCRIPT No matching script\r\n");
    READS_LIKE_HIREDIS("$40\r\n0123456789abcdef0123456789abcdef01234567\r\n");
    READS_LIKE_HIREDIS("$0\r\n\r\n");
    READS_LIKE_HIREDIS("$-1\r\n");
    READS_LIKE_HIREDIS("*-1\r\n");
    READS_LIKE_HIREDIS("*0\r\n");
}

static void nested_and_mixed_arrays(void **state)
{
    (void)state;
    READS_LIKE_HIREDIS("*5\r\n$5\r\nhello\r\n$-1\r\n*3\r\n:7\r\n+OK\r\n"
                       "*1\r\n$3\r\na\0b\r\n-ERR deep\r\n*0\r\n");
    READS_LIKE_HIREDIS("*2\r\n*2\r\n:1\r\n:2\r\n*2\r\n:3\r\n$1\r\nx\r\n");
}

static void a_reply_broken_off_is_freed(void **state)
{
    (void)state;
    redisReplyObjectFunctions fn = ag_redis_reply_functions;
    const char *bad[] = {"*3\r\n:1\r\n$2\r\nab\r\n@x\r\n",
                         "*2\r\n*2\r\n$1\r\nz\r\n!\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        redisReader *r = redisReaderCreateWithFunctions(&fn);
        void *reply = NULL;
        assert_int_equal(redisReaderFeed(r, bad[i], strlen(bad[i])), REDIS_OK);
        assert_int_equal(redisReaderGetReply(r, &reply), REDIS_ERR);
        assert_null(reply);
        redisReaderFree(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_check_reply_of_integers),
        cmocka_unit_test(scalars_at_the_top),
        cmocka_unit_test(nested_and_mixed_arrays),
        cmocka_unit_test(a_reply_broken_off_is_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
