/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_identity: the domain of a user that is an address (something before
 * its last '@', something after it) folded to U-labels by UTS #46
 * processing, so that its spellings are one user; an invalid one refused
 * naming the field; every other user, and every plain ASCII domain, left
 * as the user rules make it. The user rules themselves are in
 * test_identity.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ag_error.h"
#include "ag_identity.h"

static void expect_user(const char *in, const char *want)
{
    char out[AG_USER_MAX + 1];
    char uni[AG_USER_MAX + 1];
    struct ag_error why = {0};
    int rc = ag_identity_user(in, strlen(in), out, "user", &why);
    if (rc != AG_OK)
        fail_msg("user '%s': rc %d (%s)", in, rc, why.msg);
    if (strcmp(out, want) != 0)
        fail_msg("user '%s' is '%s', want '%s'", in, out, want);
    /* The Unicode path agrees, and the answer is a fixed point. */
    assert_int_equal(
        ag_identity_user_unicode(in, strlen(in), uni, "user", &why), AG_OK);
    assert_string_equal(uni, want);
    assert_int_equal(ag_identity_user(out, strlen(out), uni, "user", &why),
                     AG_OK);
    assert_string_equal(uni, out);
}

static void expect_refused(const char *in, const char *field)
{
    char out[AG_USER_MAX + 1];
    struct ag_error why = {0};
    int rc = ag_identity_user(in, strlen(in), out, field, &why);
    if (rc != AG_EINVAL)
        fail_msg("user '%s': rc %d ('%s'), want AG_EINVAL", in, rc,
                 rc == AG_OK ? out : why.msg);
    assert_string_equal(why.field, field);
    if (strncmp(why.msg, field, strlen(field)) != 0 || !strstr(why.msg, "IDNA"))
        fail_msg("user '%s': why '%s'", in, why.msg);
}

/* "bücher", in UTF-8. */
#define BUCHER                                                                 \
    "b\xc3\xbc"                                                                \
    "cher"

static void idn_domain_and_its_a_label_are_one_user(void **state)
{
    (void)state;
    const char *want = "ana@" BUCHER ".example";
    expect_user("ana@" BUCHER ".example", want);
    expect_user("ana@xn--bcher-kva.example", want);
    expect_user("ANA@XN--BCHER-KVA.EXAMPLE", want);
    expect_user("ana@xn--Bcher-kva.example", want);
}

static void upper_case_fullwidth_and_nfd_domains_are_one_user(void **state)
{
    (void)state;
    const char *want = "ana@" BUCHER ".example";
    expect_user("ana@B\xc3\x9c"
                "CHER.EXAMPLE",
                want); /* BÜCHER */
    expect_user("ana@bu\xcc\x88"
                "cher.example",
                want); /* u, U+0308 */
    /* Fullwidth ｂ, ｃｈｅｒ and the fullwidth full stop. */
    expect_user("ana@\xef\xbd\x82\xc3\xbc\xef\xbd\x83\xef\xbd\x88\xef\xbd\x85"
                "\xef\xbd\x92\xef\xbc\x8e"
                "example",
                want);
    /* The ideographic full stop, a dot to UTS #46 though not to NFKC. */
    expect_user("ana@" BUCHER "\xe3\x80\x82"
                "example",
                want);
    /* A trailing dot stays, as it does on an ASCII domain. */
    expect_user("ana@xn--bcher-kva.example.", "ana@" BUCHER ".example.");
}

static void local_part_keeps_the_user_rules(void **state)
{
    (void)state;
    /* Case folded, tags and dots kept: only the domain is IDNA's. */
    expect_user("\xc3\x80NA+X.Y@xn--bcher-kva.example",
                "\xc3\xa0na+x.y@" BUCHER ".example");
}

static void only_the_part_after_the_last_at_is_a_domain(void **state)
{
    (void)state;
    expect_user("a@b@xn--bcher-kva.example", "a@b@" BUCHER ".example");
    /* An A-label before the last '@' is part of the local part. */
    expect_user("a@xn--bcher-kva@example.com", "a@xn--bcher-kva@example.com");
}

/* Normalises x and y and asserts they are one user, and that the answer
 * normalises to itself: the key of a spelling must not depend on how
 * many times it went through the normaliser (a deny-list entry is
 * normalised once when stored, a check once when it arrives). */
static void expect_same_user(const char *x, const char *y)
{
    char a[AG_USER_MAX + 1], b[AG_USER_MAX + 1], again[AG_USER_MAX + 1];
    struct ag_error why = {0};
    if (ag_identity_user(x, strlen(x), a, "user", &why) != AG_OK)
        fail_msg("user '%s' refused: %s", x, why.msg);
    if (ag_identity_user(y, strlen(y), b, "user", &why) != AG_OK)
        fail_msg("user '%s' refused: %s", y, why.msg);
    if (strcmp(a, b) != 0)
        fail_msg("'%s' is '%s' but '%s' is '%s'", x, a, y, b);
    assert_int_equal(ag_identity_user(a, strlen(a), again, "user", &why),
                     AG_OK);
    if (strcmp(again, a) != 0)
        fail_msg("'%s' normalises to '%s', which normalises to '%s'", x, a,
                 again);
    assert_int_equal(
        ag_identity_user_unicode(x, strlen(x), again, "user", &why), AG_OK);
    assert_string_equal(again, a);
}

static void a_label_of_a_deviation_character_is_its_u_label_user(void **state)
{
    (void)state;
    /* The user rules fold ß to "ss" and final ς to σ, and drop ZWJ and
     * ZWNJ; an A-label decodes to them after that folding, so it is
     * folded again, or "straße.de" would be two users (and a deny-list
     * entry for one spelling would let the other through). */
    expect_user("ana@xn--strae-oqa.de", "ana@strasse.de");
    expect_same_user("ana@xn--strae-oqa.de", "ana@stra\xc3\x9f"
                                             "e.de");
    expect_same_user("ana@xn--strae-oqa.de", "ana@strasse.de");
    expect_user("a@xn--zca.de", "a@ss.de");
    expect_same_user("a@xn--zca.de", "a@\xc3\x9f.de");
    /* βόλος.gr, its final ς folded to σ. */
    expect_user("a@xn--nxasmm1c.gr", "a@\xce\xb2\xcf\x8c\xce\xbb\xce\xbf"
                                     "\xcf\x83.gr");
    expect_same_user("a@xn--nxasmm1c.gr",
                     "a@\xce\xb2\xcf\x8c\xce\xbb\xce\xbf\xcf\x82.gr");
    /* نامه‌ای.ir, a Persian label with a ZWNJ, and the same label
     * without it. */
    expect_same_user("a@xn--mgba3gch31f060k.ir",
                     "a@\xd9\x86\xd8\xa7\xd9\x85\xd9\x87\xe2\x80\x8c\xd8\xa7"
                     "\xdb\x8c.ir");
    expect_same_user("a@xn--mgba3gch31f060k.ir",
                     "a@\xd9\x86\xd8\xa7\xd9\x85\xd9\x87\xd8\xa7\xdb\x8c.ir");
    /* ශ්‍රී.lk, Sinhala with a ZWJ after its virama. */
    expect_same_user("a@xn--10cl1a0b660p.lk",
                     "a@\xe0\xb7\x81\xe0\xb7\x8a\xe2\x80\x8d\xe0\xb6\xbb"
                     "\xe0\xb7\x93.lk");
}

static void a_label_invalid_once_folded_is_refused(void **state)
{
    (void)state;
    /* ب‌ب--ب: valid with its ZWNJ, but without it "--" stands at
     * positions 3 and 4, which IDNA forbids. The U-label spelling is
     * refused for that, so the A-label is too, rather than left a user
     * of its own. */
    expect_refused("a@xn-----etdac8780b.ir", "user");
    expect_refused("a@\xd8\xa8\xe2\x80\x8c\xd8\xa8--\xd8\xa8.ir", "user");
}

static void invalid_idna_domain_is_refused_naming_the_field(void **state)
{
    (void)state;
    expect_refused("ana@xn--zz.example", "user");         /* bad punycode */
    expect_refused("ana@xn--bcher-kvb.example", "user");  /* not a U-label */
    expect_refused("ana@-" BUCHER ".example", "user");    /* leading hyphen */
    expect_refused("ana@\xe2\x98\x95.example", "user");   /* U+2615, emoji */
    expect_refused("ana@b\xc3\xbc cher.example", "user"); /* a space */
    expect_refused("ana@xn--bcher-kva.ab--cd", "user");   /* "--" at 3 */
    /* A list entry's user is refused naming its own field. */
    expect_refused("ana@xn--zz.example", "value");
}

static void underscore_in_an_idn_domain_is_another_domain(void **state)
{
    (void)state;
    /* libidn2 2.3.3 with IDN2_USE_STD3_ASCII_RULES deletes the '_' and
     * would make these one user; two domains they are. */
    expect_user("ana@b\xc3\xbc_cher.example", "ana@b\xc3\xbc_cher.example");
    char a[AG_USER_MAX + 1], b[AG_USER_MAX + 1];
    struct ag_error why = {0};
    const char *x = "ana@b\xc3\xbc_cher.example";
    const char *y = "ana@" BUCHER ".example";
    assert_int_equal(ag_identity_user(x, strlen(x), a, "user", &why), AG_OK);
    assert_int_equal(ag_identity_user(y, strlen(y), b, "user", &why), AG_OK);
    assert_string_not_equal(a, b);
}

static void user_that_is_no_address_is_untouched(void **state)
{
    (void)state;
    expect_user(BUCHER, BUCHER);
    expect_user("xn--zz", "xn--zz");
    expect_user("@xn--zz", "@xn--zz"); /* nothing before the '@' */
    expect_user("ana@", "ana@");       /* nothing after it */
    expect_user("Bob @ Home", "bob @ home");
    /* An ASCII domain without an A-label has one spelling: kept, even
     * where IDNA would refuse it, as every such user was before. */
    expect_user("ana@ab--cd.example", "ana@ab--cd.example");
    expect_user("ana@foo_bar.example", "ana@foo_bar.example");
    expect_user("ana@example.com", "ana@example.com");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idn_domain_and_its_a_label_are_one_user),
        cmocka_unit_test(upper_case_fullwidth_and_nfd_domains_are_one_user),
        cmocka_unit_test(local_part_keeps_the_user_rules),
        cmocka_unit_test(only_the_part_after_the_last_at_is_a_domain),
        cmocka_unit_test(invalid_idna_domain_is_refused_naming_the_field),
        cmocka_unit_test(underscore_in_an_idn_domain_is_another_domain),
        cmocka_unit_test(user_that_is_no_address_is_untouched),
        cmocka_unit_test(a_label_of_a_deviation_character_is_its_u_label_user),
        cmocka_unit_test(a_label_invalid_once_folded_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
