/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis URLs the address parser must refuse, shared by its own test
 * (test_redis_addr.c) and the --redis flag's (test_config.c), which must
 * refuse the same ones naming the flag.
 */
#ifndef AG_TEST_REDIS_URLS_H
#define AG_TEST_REDIS_URLS_H

#include <stddef.h>

static const char *const ag_test_bad_redis_urls[] = {
    "http://cache:6379",
    "redis://cache",
    "redis://cache:",
    "redis://:6379",
    "redis://cache:0",
    "redis://cache:65536",
    "redis://cache:port",
    "redis://@cache:6379",
    "redis://user:@cache:6379",
    "redis://:@cache:6379",
    "redis://u:p%zz@cache:6379",
    "redis://u:p%0@cache:6379",
    "redis://u:p%00x@cache:6379",
    "rediss://cache",
    "redis://cache:6379/x",
    "redis://cache:6379/-1",
    /* Hosts no connection can be made to: a bracket left open or shut
     * twice, a bracketed non-IPv6, an unbracketed IPv6, a control
     * character or a bracket inside a name, in every URL form. */
    "redis://u:pw@[::1:16379",
    "redis://[::1]]:6379",
    "redis://[cache]:6379",
    "redis://::1:6379",
    "redis://ca[che:6379",
    "rediss://cache\n:6379",
    "redis://ca che:6379",
    "redis+sentinel://s1:26379,[::1:26380/m",
    "redis+cluster://n1:7000,n[2:7001",
    "unix://relative/redis.sock",
    "unix://",
    "",
};
#define AG_TEST_BAD_REDIS_URLS                                                 \
    (sizeof ag_test_bad_redis_urls / sizeof ag_test_bad_redis_urls[0])

#endif
