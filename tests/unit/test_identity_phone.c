/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_identity: phone numbers in E.164 (a leading '+', separators dropped,
 * 8 to 15 digits), a national (trunk) prefix after the calling code
 * folded, kept or refused as tests/vectors/phones.json says (generated
 * from libphonenumber's metadata), and the prefix of one that the
 * phone_prefix key uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <jansson.h>

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
    expect_phone("+44 ( 0 )7911 123456", "+447911123456");
    expect_phone("+49 (0)30 1234567", "+49301234567");
    expect_phone("+358 (0)40 1234567", "+358401234567");
}

static void
phone_zero_in_parentheses_is_a_digit_where_it_is_no_trunk_prefix(void **state)
{
    (void)state;
    /* Italy dials its leading 0 from abroad too: Rome is +39 06. */
    expect_phone("+39 (0)6 1234 5678", "+390612345678");
    expect_phone("+39 06 1234 5678", "+390612345678");
    /* Russia's trunk prefix is 8, and no Russian number begins with 0:
     * libphonenumber reads this as +709161234567 too. */
    expect_phone("+7(0)9161234567", "+709161234567");
}

static void phone_zero_elsewhere_in_parentheses_is_kept(void **state)
{
    (void)state;
    /* Past the country code a "(0)" is a digit of the number. */
    expect_phone("+44 7911 (0)23456", "+447911023456");
    expect_phone("+4479 (0)11123456", "+4479011123456");
}

/* The spellings issue 29 found counted apart from their E.164 form: each
 * is now the same text, so the same keyed digest and the same counters. */
static void
phone_trunk_prefix_after_calling_code_is_the_e164_number(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"+44 07700 900123", "+447700900123"},
        {"+44 07700 900555", "+447700900555"},
        {"+1 1 202 555 0143", "+12025550143"},
        {"+7 8 912 345 6789", "+79123456789"},
        {"+61 0412 345 678", "+61412345678"},
        {"+81 090 1234 5678", "+819012345678"},
        {"+55 0 11 91234 5678", "+5511912345678"},
    };
    unsigned char secret[32] = {29};
    struct ag_hasher h;
    ag_hasher_init(&h, secret, sizeof secret);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char a[AG_PHONE_MAX + 1], b[AG_PHONE_MAX + 1];
        char da[AG_DIGEST_HEX + 1], db[AG_DIGEST_HEX + 1];
        struct ag_error why = {0};
        if (phone(pairs[i][0], a, &why) != AG_OK ||
            phone(pairs[i][1], b, &why) != AG_OK)
            fail_msg("%s: refused (%s)", pairs[i][0], why.msg);
        if (strcmp(a, pairs[i][1]) != 0)
            fail_msg("%s is %s, want %s", pairs[i][0], a, pairs[i][1]);
        ag_identity_digest(&h, AG_KEY_PHONE, a, da);
        ag_identity_digest(&h, AG_KEY_PHONE, b, db);
        assert_string_equal(da, db);
    }
    ag_hasher_wipe(&h);
}

static void phone_number_that_begins_with_the_trunk_digit_is_kept(void **state)
{
    (void)state;
    /* Russia's toll-free 8-800 numbers begin with its trunk 8: ten
     * digits after +7 are the number, eleven the number after a trunk 8. */
    expect_phone("+7 800 123 4567", "+78001234567");
    expect_phone("+7 8 800 123 4567", "+78001234567");
    /* Japan's 00 numbers (international carriers' toll-free). */
    expect_phone("+81 0037 12 3456", "+810037123456");
}

static void phone_trunk_prefix_that_cannot_be_folded_is_refused(void **state)
{
    (void)state;
    static const char *const refused[] = {
        "+44 007700 900123",   /* two trunk zeros: no number either way */
        "+44 0 12345",         /* too short for a UK number without its 0 */
        "+1 1 1 202 555 014",  /* a NANP number never begins with 1 */
        "+57 05 601 234 5678", /* Colombia: 05 is a carrier code */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char out[AG_PHONE_MAX + 1];
        struct ag_error why = {0};
        if (phone(refused[i], out, &why) != AG_EINVAL)
            fail_msg("%s: accepted as %s", refused[i], out);
        assert_string_equal(why.field, "phone");
        if (!strstr(why.msg, "national prefix"))
            fail_msg("%s: why '%s' names no national prefix", refused[i],
                     why.msg);
    }
}

/* Every vector of tests/vectors/phones.json: the example numbers of every
 * region, each also after every trunk prefix of its calling code, with
 * what libphonenumber makes of them. A folded answer is libphonenumber's
 * (the generator checks it; so does this), and every answer is a fixed
 * point. */
static void phone_vectors_from_libphonenumber_hold(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *doc = json_load_file(AG_PHONE_VECTORS, 0, &jerr);
    if (!doc)
        fail_msg("%s:%d: %s", AG_PHONE_VECTORS, jerr.line, jerr.text);
    json_t *rows = json_object_get(doc, "phones");
    assert_true(json_array_size(rows) > 1000);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *in = json_string_value(json_array_get(row, 0));
        json_t *want = json_array_get(row, 1);
        const char *lpn = json_string_value(json_array_get(row, 2));
        char out[AG_PHONE_MAX + 1];
        struct ag_error why = {0};
        int rc = phone(in, out, &why);
        if (json_is_null(want)) {
            if (rc != AG_EINVAL || strcmp(why.field, "phone") != 0)
                fail_msg("%s: rc %d (%s), want refused", in, rc, out);
            continue;
        }
        if (rc != AG_OK)
            fail_msg("%s: refused (%s), want %s", in, why.msg,
                     json_string_value(want));
        if (strcmp(out, json_string_value(want)) != 0)
            fail_msg("%s is %s, want %s", in, out, json_string_value(want));
        char digits[AG_PHONE_MAX + 8];
        size_t n = 0;
        digits[n++] = '+';
        for (const char *c = in; *c && n + 1 < sizeof digits; c++)
            if (*c >= '0' && *c <= '9')
                digits[n++] = *c;
        digits[n] = '\0';
        if (strcmp(out, digits) != 0 && strcmp(out, lpn) != 0)
            fail_msg("%s folded to %s, libphonenumber reads %s", in, out, lpn);
        char again[AG_PHONE_MAX + 1];
        assert_int_equal(phone(out, again, &why), AG_OK);
        assert_string_equal(again, out);
    }
    json_decref(doc);
}

/* Spellings that libphonenumber reads as another number through a carrier
 * code or a transform rule of its national_prefix_for_parsing (which the
 * trunk rules once skipped, so each was a second phone), refused; the
 * numbers they stand for, and the metadata's example numbers of those
 * codes, accepted as themselves. */
static void phone_carrier_and_transform_spellings_are_refused(void **state)
{
    (void)state;
    static const char *const refused[] = {
        "+54 11 15 1234 5678",   /* AR area 11, mobile 15: +5491112345678 */
        "+54 0 11 15 1234 5678", /* the same after the trunk 0 */
        "+55 90 11 91234 5678",  /* BR trunk 90: +5511912345678 */
        "+55 0 12 11 1234 5678", /* BR carrier 12: +551112345678 */
        "+61 1831 412 345 678",  /* AU 1831: +61412345678 */
        "+298 1001 123456",      /* FO 1001: +298123456 */
        "+506 1900 8312 3456",   /* CR 1900: +50683123456 */
        "+375 8 15 245 0911",    /* BY 8 + 81…: +375152450911 */
        "+261 2021234",          /* MG local, completed: +261202021234 */
        "+378 800000",           /* SM local, completed: +3780549800000 */
        "+672 12345",            /* NF local, completed: +672312345 */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char out[AG_PHONE_MAX + 1];
        struct ag_error why = {0};
        if (phone(refused[i], out, &why) != AG_EINVAL)
            fail_msg("%s: accepted as %s", refused[i], out);
        assert_string_equal(why.field, "phone");
    }
    static const char *const kept[] = {
        "+5491112345678", "+541123456789",  "+5511912345678", "+5511961234567",
        "+61412345678",   "+611300123456",  "+298123456",     "+298201234",
        "+50683123456",   "+5068001234567", "+375152450911",  "+3758011234567",
        "+3759021234567", "+261202123456",  "+3780549886377", "+37858001110",
        "+672381234",     "+672106609",
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        expect_phone(kept[i], kept[i]);
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
        cmocka_unit_test(
            phone_zero_in_parentheses_is_a_digit_where_it_is_no_trunk_prefix),
        cmocka_unit_test(phone_zero_elsewhere_in_parentheses_is_kept),
        cmocka_unit_test(
            phone_trunk_prefix_after_calling_code_is_the_e164_number),
        cmocka_unit_test(phone_number_that_begins_with_the_trunk_digit_is_kept),
        cmocka_unit_test(phone_trunk_prefix_that_cannot_be_folded_is_refused),
        cmocka_unit_test(phone_carrier_and_transform_spellings_are_refused),
        cmocka_unit_test(phone_vectors_from_libphonenumber_hold),
        cmocka_unit_test(phone_without_plus_is_refused),
        cmocka_unit_test(phone_with_plus_not_first_is_refused),
        cmocka_unit_test(phone_country_code_starting_with_zero_is_refused),
        cmocka_unit_test(phone_digit_count_must_be_8_to_15),
        cmocka_unit_test(phone_with_letters_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
