/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libsodium's start-up as a cmocka group setup, for the unit tests that
 * hash identifiers (ag_hasher needs sodium_init to have run). Include
 * after <cmocka.h>.
 */
#ifndef AG_TEST_SODIUM_H
#define AG_TEST_SODIUM_H

#include <sodium.h>

static inline int init_sodium(void **state)
{
    (void)state;
    return sodium_init() < 0 ? -1 : 0;
}

#endif
