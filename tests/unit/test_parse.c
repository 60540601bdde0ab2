/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_parse: a number is the whole text and only digits; its range is
 * inclusive at both ends; a refusal leaves the output untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ag_error.h"
#include "ag_parse.h"

static void range_is_inclusive_at_both_ends(void **state)
{
    (void)state;
    unsigned v = 7;
    assert_int_equal(ag_parse_uint("3", 3, 9, &v), AG_OK);
    assert_int_equal(v, 3);
    assert_int_equal(ag_parse_uint("9", 3, 9, &v), AG_OK);
    assert_int_equal(v, 9);
    assert_int_equal(ag_parse_uint("0", 0, 0, &v), AG_OK);
    assert_int_equal(v, 0);
    assert_int_equal(ag_parse_uint("4294967295", 0, 4294967295u, &v), AG_OK);
    assert_int_equal(v, 4294967295u);
}

static void out_of_range_is_refused_and_leaves_the_output(void **state)
{
    (void)state;
    unsigned v = 7;
    assert_int_equal(ag_parse_uint("2", 3, 9, &v), AG_EINVAL);
    assert_int_equal(ag_parse_uint("10", 3, 9, &v), AG_EINVAL);
    /* Past unsigned long: strtoul's ERANGE, never a wrapped value. */
    assert_int_equal(ag_parse_uint("99999999999999999999999", 0, 9, &v),
                     AG_EINVAL);
    assert_int_equal(v, 7);
}

static void only_the_whole_text_of_digits_is_a_number(void **state)
{
    (void)state;
    static const char *const refused[] = {"",   "+5",  " 5",  "5 ", "-1",
                                          "5x", "0x5", "5.0", "\t5"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        unsigned v = 7;
        if (ag_parse_uint(refused[i], 0, 100, &v) != AG_EINVAL)
            fail_msg("accepted '%s'", refused[i]);
        assert_int_equal(v, 7);
    }
}

static void port_is_one_to_65535(void **state)
{
    (void)state;
    int port = 80;
    assert_int_equal(ag_parse_port("1", &port), AG_OK);
    assert_int_equal(port, 1);
    assert_int_equal(ag_parse_port("65535", &port), AG_OK);
    assert_int_equal(port, 65535);
    assert_int_equal(ag_parse_port("0", &port), AG_EINVAL);
    assert_int_equal(ag_parse_port("65536", &port), AG_EINVAL);
    assert_int_equal(ag_parse_port("+80", &port), AG_EINVAL);
    assert_int_equal(port, 65535);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(range_is_inclusive_at_both_ends),
        cmocka_unit_test(out_of_range_is_refused_and_leaves_the_output),
        cmocka_unit_test(only_the_whole_text_of_digits_is_a_number),
        cmocka_unit_test(port_is_one_to_65535),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
