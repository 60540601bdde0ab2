/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_country: known numbers get their calling code; numbers under an
 * unassigned prefix, and text that is not a normalised phone, are refused
 * with an empty code; the table holds 1- to 3-digit codes, strictly
 * ascending (the lookup bisects it) and prefix-free (the lookup takes the
 * first match); ag_country_code_valid accepts exactly '+' and a code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ag_country.h"
#include "ag_error.h"

/* Room for any uint16_t as "+65535", so a table entry out of range shows
 * whole in a failure instead of truncated. */
#define TEXT_MAX 8

static bool in_table(unsigned code)
{
    for (size_t i = 0; i < ag_country_code_count; i++)
        if (ag_country_codes[i] == code)
            return true;
    return false;
}

/* ag_country_code(phone) gives want; out starts dirty, so a lookup that
 * forgot to write it shows. */
static void assert_code(const char *phone, const char *want)
{
    char out[AG_COUNTRY_MAX] = "XXXX";
    int rc = ag_country_code(phone, out);
    if (rc != AG_OK)
        fail_msg("%s: refused (%d), want %s", phone, rc, want);
    assert_string_equal(out, want);
}

/* ag_country_code(phone) refuses, and leaves out empty. */
static void assert_refused(const char *phone)
{
    char out[AG_COUNTRY_MAX] = "XXXX";
    int rc = ag_country_code(phone, out);
    if (rc != AG_EINVAL)
        fail_msg("%s: got %d (%s), want AG_EINVAL", phone ? phone : "NULL", rc,
                 out);
    assert_string_equal(out, "");
}

static void known_numbers_get_their_calling_code(void **state)
{
    (void)state;
    assert_code("+14155550100", "+1");
    assert_code("+447911123456", "+44");
    assert_code("+48600100200", "+48");
    assert_code("+8821234567890", "+882");
    assert_code("+79161234567", "+7");
    assert_code("+201001234567", "+20");
    assert_code("+35312345678", "+353");
    assert_code("+8811234567", "+881");
    assert_code("+97912345678", "+979");
    assert_code("+80012345678", "+800");
}

static void every_code_in_the_table_is_found_in_its_numbers(void **state)
{
    (void)state;
    for (size_t i = 0; i < ag_country_code_count; i++) {
        char phone[32];
        char want[TEXT_MAX];
        snprintf(phone, sizeof phone, "+%u99999999", ag_country_codes[i]);
        snprintf(want, sizeof want, "+%u", ag_country_codes[i]);
        assert_code(phone, want);
    }
}

static void numbers_under_unassigned_prefixes_are_refused(void **state)
{
    (void)state;
    /* +28x and +80x (but +800, +808) are spare; so are +210, +259, +384,
     * +422 and +999, and no shorter code covers any of them. */
    static const unsigned spare[] = {280, 281, 282, 283, 284, 285, 286, 287,
                                     288, 289, 801, 802, 803, 804, 805, 806,
                                     807, 809, 210, 259, 384, 422, 999};
    for (size_t i = 0; i < sizeof spare / sizeof spare[0]; i++) {
        unsigned c = spare[i];
        /* The data, not this list, decides what is spare. */
        if (in_table(c) || in_table(c / 10) || in_table(c / 100))
            fail_msg("+%u is assigned after all", c);
        char phone[32];
        snprintf(phone, sizeof phone, "+%u12345678", c);
        assert_refused(phone);
    }
}

static void text_that_is_not_a_normalised_phone_is_refused(void **state)
{
    (void)state;
    assert_refused(NULL);
    assert_refused("");
    assert_refused("+");
    assert_refused("447911123456");      /* no '+' */
    assert_refused("+4479111");          /* 7 digits */
    assert_refused("+4479111234567890"); /* 16 digits */
    assert_refused("+44791112345a");
    assert_refused("+44 7911123456");
    assert_refused("+04479111234"); /* would read as +44 */
    /* The bounds themselves are numbers. */
    assert_code("+44791112", "+44");
    assert_code("+447911123456789", "+44");
}

static void table_codes_have_one_to_three_digits(void **state)
{
    (void)state;
    assert_true(ag_country_code_count > 0);
    for (size_t i = 0; i < ag_country_code_count; i++) {
        unsigned c = ag_country_codes[i];
        if (c < 1 || c > 999)
            fail_msg("code %u at %zu is not 1 to 3 digits", c, i);
    }
}

static void table_is_strictly_ascending(void **state)
{
    (void)state;
    for (size_t i = 1; i < ag_country_code_count; i++)
        if (ag_country_codes[i - 1] >= ag_country_codes[i])
            fail_msg("%u before %u at %zu", ag_country_codes[i - 1],
                     ag_country_codes[i], i);
}

static void table_is_prefix_free(void **state)
{
    (void)state;
    for (size_t i = 0; i < ag_country_code_count; i++) {
        for (size_t j = 0; j < ag_country_code_count; j++) {
            char a[TEXT_MAX];
            char b[TEXT_MAX];
            snprintf(a, sizeof a, "%u", ag_country_codes[i]);
            snprintf(b, sizeof b, "%u", ag_country_codes[j]);
            if (i != j && strncmp(a, b, strlen(a)) == 0)
                fail_msg("+%s is a prefix of +%s", a, b);
        }
    }
}

static void table_holds_the_zones_and_non_geographic_codes(void **state)
{
    (void)state;
    static const unsigned want[] = {1,   7,   20,  44,  48,  800, 808,
                                    870, 878, 881, 882, 883, 888, 979};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!in_table(want[i]))
            fail_msg("+%u is missing", want[i]);
}

static void valid_accepts_plus_and_an_assigned_code(void **state)
{
    (void)state;
    assert_true(ag_country_code_valid("+44"));
    assert_true(ag_country_code_valid("+1"));
    assert_true(ag_country_code_valid("+979"));
    for (size_t i = 0; i < ag_country_code_count; i++) {
        char text[TEXT_MAX];
        snprintf(text, sizeof text, "+%u", ag_country_codes[i]);
        if (!ag_country_code_valid(text))
            fail_msg("%s refused", text);
    }
}

static void valid_refuses_anything_else(void **state)
{
    (void)state;
    assert_false(ag_country_code_valid("+4"));
    assert_false(ag_country_code_valid("+440"));
    assert_false(ag_country_code_valid("44"));
    assert_false(ag_country_code_valid("+"));
    assert_false(ag_country_code_valid("+4a"));
    assert_false(ag_country_code_valid(""));
    assert_false(ag_country_code_valid(NULL));
    assert_false(ag_country_code_valid("+044"));
    assert_false(ag_country_code_valid("+0044"));
    assert_false(ag_country_code_valid("+44 "));
    assert_false(ag_country_code_valid(" +44"));
    assert_false(ag_country_code_valid("+4444"));
    assert_false(ag_country_code_valid("+28"));
    assert_false(ag_country_code_valid("+801"));
    assert_false(ag_country_code_valid("+447911123456"));
    /* 2^32 + 44: read as a number without a length cap it wraps to 44. */
    assert_false(ag_country_code_valid("+4294967340"));
}

/* ag_country_fold_trunk(phone) leaves want in place and returns rc. */
static void assert_trunk(const char *phone, int rc, const char *want,
                         const char *prefix)
{
    char text[32];
    char p[AG_TRUNK_PREFIX_MAX] = "XYZ";
    snprintf(text, sizeof text, "%s", phone);
    int got = ag_country_fold_trunk(text, p);
    if (got != rc)
        fail_msg("%s: rc %d, want %d", phone, got, rc);
    assert_string_equal(text, want);
    assert_string_equal(p, prefix);
}

static void trunk_prefix_is_folded_in_place(void **state)
{
    (void)state;
    assert_trunk("+4407700900123", AG_OK, "+447700900123", "");
    assert_trunk("+112025550143", AG_OK, "+12025550143", "");
    assert_trunk("+79123456789", AG_OK, "+79123456789", "");
    assert_trunk("+789123456789", AG_OK, "+79123456789", "");
    /* A three-digit prefix (Mexico's 044) after a two-digit code. */
    assert_trunk("+520445512345678", AG_OK, "+525512345678", "");
}

static void carrier_head_refused_is_named_with_its_digits(void **state)
{
    (void)state;
    /* A head written with classes ("0222[13-7]15": area code 2221 and
     * mobile 15 after the trunk 0) is named by the digits it matched. */
    assert_trunk("+540222115123456", AG_EINVAL, "+540222115123456", "0222115");
    assert_trunk("+54111512345678", AG_EINVAL, "+54111512345678", "1115");
    /* A local number that a transform rule completes: the empty head. */
    assert_trunk("+2612021234", AG_EINVAL, "+2612021234", "");
    /* The numbers themselves, and a Buenos Aires number whose local part
     * begins with 15, are kept. */
    assert_trunk("+5491112345678", AG_OK, "+5491112345678", "");
    assert_trunk("+541115123456", AG_OK, "+541115123456", "");
    assert_trunk("+261202123456", AG_OK, "+261202123456", "");
}

static void trunk_rules_leave_what_they_do_not_cover(void **state)
{
    (void)state;
    /* Italy and Poland have no trunk prefix. */
    assert_trunk("+390612345678", AG_OK, "+390612345678", "");
    assert_trunk("+48060100200", AG_OK, "+48060100200", "");
    /* Under no assigned code: ag_country_code refuses it, not this. */
    assert_trunk("+2800700900123", AG_OK, "+2800700900123", "");
    /* A number of its own that begins with the trunk digit. */
    assert_trunk("+78001234567", AG_OK, "+78001234567", "");
}

static void trunk_prefix_refused_is_named(void **state)
{
    (void)state;
    assert_trunk("+44007700900123", AG_EINVAL, "+44007700900123", "0");
    /* Belarus: the longest of its prefixes 8 and 80 is the one named. */
    assert_trunk("+3758800123456", AG_EINVAL, "+3758800123456", "8");
    assert_trunk("+375808001234567", AG_EINVAL, "+375808001234567", "80");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_numbers_get_their_calling_code),
        cmocka_unit_test(every_code_in_the_table_is_found_in_its_numbers),
        cmocka_unit_test(numbers_under_unassigned_prefixes_are_refused),
        cmocka_unit_test(text_that_is_not_a_normalised_phone_is_refused),
        cmocka_unit_test(table_codes_have_one_to_three_digits),
        cmocka_unit_test(table_is_strictly_ascending),
        cmocka_unit_test(table_is_prefix_free),
        cmocka_unit_test(table_holds_the_zones_and_non_geographic_codes),
        cmocka_unit_test(valid_accepts_plus_and_an_assigned_code),
        cmocka_unit_test(valid_refuses_anything_else),
        cmocka_unit_test(trunk_prefix_is_folded_in_place),
        cmocka_unit_test(trunk_rules_leave_what_they_do_not_cover),
        cmocka_unit_test(trunk_prefix_refused_is_named),
        cmocka_unit_test(carrier_head_refused_is_named_with_its_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
