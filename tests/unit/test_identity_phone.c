/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_identity: phone numbers in E.164 (a leading '+', separators and a
 * trunk "(0)" after the country code dropped, 8 to 15 digits) and the
 * prefix of one that the phone_prefix key uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ag_error.h"
#include "ag_identity.h"

static int phone(const char *in, char *out, struct ag_error *why)
{
    memset(why, 0, sizeof *why);
    return ag_identity_phone(in, strlen(in), out, "phone", why);
}

static void expect_phone(const char *in, const char *want)
{
    char out[AG_PHONE_MAX + 1];
    struct ag_error why = {0};
    int rc = phone(in, out, &why);
    if (rc != AG_OK)
        fail_msg("phone '%s': rc %d (%s)", in, rc, why.msg);
    assert_string_equal(out, want);
}

static void expect_phone_refused(const char *in)
{
    char out[AG_PHONE_MAX + 1];
    struct ag_error why = {0};
    int rc = phone(in, out, &why);
    if (rc != AG_EINVAL)
        fail_msg("phone '%s': rc %d, want AG_EINVAL", in, rc);
    assert_int_equal(why.code, AG_EINVAL);
}

static void phone_spaces_are_removed(void **state)
{
    (void)state;
    expect_phone("+48 600 100 200", "+48600100200");
    expect_phone(" +48600100200 ", "+48600100200");
}

static void phone_dashes_dots_and_parentheses_are_removed(void **state)
{
    (void)state;
    expect_phone("+1 (415) 555-0100", "+14155550100");
    expect_phone("+48.600.100.200", "+48600100200");
    expect_phone("+48 (600) 100-200", "+48600100200");
}

static void phone_trunk_zero_after_country_code_is_dropped(void **state)
{
    (void)state;
    expect_phone("+44 (0)7911 123456", "+447911123456");
    expect_phone("+44(0)7911123456", "+447911123456");
    expect_phone("+44 (0) 7911 123456", "+447911123456");
    expect_phone("+49 (0)30 1234567", "+49301234567");
    expect_phone("+7(0)9161234567", "+79161234567");
    expect_phone("+358 (0)40 1234567", "+358401234567");
}

static void phone_zero_elsewhere_in_parentheses_is_kept(void **state)
{
    (void)state;
    /* Past the country code a "(0)" is a digit of the number. */
    expect_phone("+44 7911 (0)23456", "+447911023456");
    expect_phone("+4479 (0)11123456", "+4479011123456");
    /* Only the exact "(0)" is a trunk zero. */
    expect_phone("+44 (00)7911 12345", "+4400791112345");
    expect_phone("+44 ( 0 )7911 123456", "+4407911123456");
}

static void phone_without_plus_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("48600100200");
    expect_phone_refused("0048600100200");
    expect_phone_refused("");
    expect_phone_refused("+");
}

static void phone_with_plus_not_first_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("48+600100200");
    expect_phone_refused("+48+600100200");
    expect_phone_refused("++48600100200");
}

static void phone_country_code_starting_with_zero_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("+048600100200");
}

static void phone_digit_count_must_be_8_to_15(void **state)
{
    (void)state;
    expect_phone_refused("+1234567");
    expect_phone("+12345678", "+12345678");
    expect_phone("+123456789012345", "+123456789012345");
    expect_phone("+1 234 567 890 123 45", "+123456789012345");
    expect_phone_refused("+1234567890123456");
    expect_phone_refused("+1 234 567 890 123 456");
    expect_phone_refused("+12345678901234567890123456789");
}

static void phone_with_letters_is_refused(void **state)
{
    (void)state;
    expect_phone_refused("+48 600 CALL ME");
    expect_phone_refused("+4860010020a");
    expect_phone_refused("+48600100200x1");
}

static void phone_prefix_keeps_the_first_digits(void **state)
{
    (void)state;
    char out[AG_PHONE_MAX + 1];
    ag_identity_phone_prefix("+48600100200", 5, out);
    assert_string_equal(out, "+48600");
    ag_identity_phone_prefix("+48600100200", 15, out);
    assert_string_equal(out, "+48600100200");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(phone_prefix_keeps_the_first_digits),
        cmocka_unit_test(phone_spaces_are_removed),
        cmocka_unit_test(phone_dashes_dots_and_parentheses_are_removed),
        cmocka_unit_test(phone_trunk_zero_after_country_code_is_dropped),
        cmocka_unit_test(phone_zero_elsewhere_in_parentheses_is_kept),
        cmocka_unit_test(phone_without_plus_is_refused),
        cmocka_unit_test(phone_with_plus_not_first_is_refused),
        cmocka_unit_test(phone_country_code_starting_with_zero_is_refused),
        cmocka_unit_test(phone_digit_count_must_be_8_to_15),
        cmocka_unit_test(phone_with_letters_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
