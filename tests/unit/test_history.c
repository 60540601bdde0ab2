/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A user's usual places (ag_history): the text kept in Redis, the
 * new-place signals against it, the rule of which successes teach it,
 * and the risk level of a login's signals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ag_endpoint.h"
#include "ag_error.h"
#include "ag_history.h"

#define DAY_MS 86400000ull
#define HOUR_MS 3600000ull
#define T0 (20000 * DAY_MS) /* day 20000, 2024-10-04 */
#define BIT(s) (1u << (s))

static struct ag_login_place from(const char *cc, uint32_t asn, double lat,
                                  double lon)
{
    struct ag_login_place at = {.asn = asn};
    memcpy(at.country, cc, strlen(cc) + 1);
    at.placed = ag_place_from(lat, lon, 20, &at.place);
    return at;
}

#define PARIS(asn) from("FR", asn, 48.8566, 2.3522)
#define LYON(asn) from("FR", asn, 45.7640, 4.8357)
#define NEW_YORK(asn) from("US", asn, 40.7128, -74.0060)

static unsigned judge(const struct ag_history *h, struct ag_login_place at,
                      uint64_t now, enum ag_history_travel *t)
{
    struct ag_travel fig;
    return ag_history_judge(h, &at, now, 0, NULL, t, &fig);
}

static void the_text_round_trips(void **state)
{
    (void)state;
    struct ag_history h;
    assert_int_equal(ag_history_parse("", 0, &h), AG_OK);
    assert_false(h.known);
    struct ag_login_place p = PARIS(3215);
    assert_true(ag_history_teach(&h, &p, T0 + 5, 0, false, 0));
    p = LYON(12322);
    assert_true(ag_history_teach(&h, &p, T0 + DAY_MS, 0, false, 0));
    char text[AG_HISTORY_TEXT_MAX];
    size_t n = ag_history_format(&h, text);
    assert_string_equal(text, "1|1728086400000|FR|458,48,20,1728086400000|"
                              "FR:20001|3215:20000,12322:20001");
    assert_int_equal(n, strlen(text));
    struct ag_history back;
    assert_int_equal(ag_history_parse(text, n, &back), AG_OK);
    char again[AG_HISTORY_TEXT_MAX];
    ag_history_format(&back, again);
    assert_string_equal(again, text);
    /* No place, no last country. */
    assert_int_equal(ag_history_parse("1|7||||", 7, &back), AG_OK);
    assert_true(back.known);
    assert_false(back.placed);
    /* Anything else is no history of this version, and none at all. */
    static const char *const bad[] = {
        "2|7||||",
        "1|7|F|||",
        "1|7|fr|||",
        "1|x||||",
        "1|7||901,0,1|||",
        "1|7||0,0|||",
        "1|7|||FR:1,|",
        "1|7|||FR1|",
        "1|7||||0:5",
        "1|7||||5:",
        "1|7||||99999999999:1",
        "1|7|||",
        "1|7||0,0,1|||",
        "1|7||||5:1,",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(ag_history_parse(bad[i], strlen(bad[i]), &back),
                         AG_EINVAL);
        assert_false(back.known);
    }
}

static void the_whole_history_fits_its_text(void **state)
{
    (void)state;
    struct ag_history h = {.known = true,
                           .last_ms = UINT64_MAX / 2,
                           .placed = true,
                           .place = {-900, -1800, 65535}};
    memcpy(h.last_country, "ZZ", 3);
    for (size_t i = 0; i < AG_HISTORY_KEEP; i++) {
        memcpy(h.countries[i].code, "ZZ", 3);
        h.countries[i].day = UINT32_MAX;
        h.asns[i].asn = UINT32_MAX;
        h.asns[i].day = UINT32_MAX;
    }
    h.ncountries = h.nasns = AG_HISTORY_KEEP;
    char text[AG_HISTORY_TEXT_MAX];
    size_t n = ag_history_format(&h, text);
    assert_true(n < AG_HISTORY_TEXT_MAX - 1);
    struct ag_history back;
    assert_int_equal(ag_history_parse(text, n, &back), AG_OK);
    assert_int_equal(back.nasns, AG_HISTORY_KEEP);
    assert_int_equal(back.place.radius_km, 65535);
}

static void a_new_user_has_no_history_and_nothing_is_new(void **state)
{
    (void)state;
    struct ag_history h;
    ag_history_parse("", 0, &h);
    enum ag_history_travel t;
    assert_int_equal(judge(&h, NEW_YORK(7922), T0, &t),
                     BIT(AG_SIGNAL_NO_HISTORY));
    assert_int_equal(t, AG_HTRAVEL_NO_HISTORY);
}

static void new_country_and_new_network_against_the_usual(void **state)
{
    (void)state;
    struct ag_history h;
    ag_history_parse("", 0, &h);
    struct ag_login_place home = PARIS(3215);
    ag_history_teach(&h, &home, T0, 0, false, 0);
    enum ag_history_travel t;
    assert_int_equal(judge(&h, PARIS(3215), T0 + HOUR_MS, &t), 0);
    assert_int_equal(t, AG_HTRAVEL_POSSIBLE);
    assert_int_equal(judge(&h, LYON(12322), T0 + HOUR_MS, &t),
                     BIT(AG_SIGNAL_NEW_ASN));
    /* Two days later New York is reachable: new, not impossible. */
    assert_int_equal(judge(&h, NEW_YORK(7922), T0 + 48 * HOUR_MS, &t),
                     BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_NEW_ASN));
    assert_int_equal(t, AG_HTRAVEL_STALE);
    /* An hour later it is not. */
    assert_int_equal(judge(&h, NEW_YORK(7922), T0 + HOUR_MS, &t),
                     BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_NEW_ASN) |
                         BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL));
    assert_int_equal(t, AG_HTRAVEL_IMPOSSIBLE);
    /* Eight hours is an airliner's pace: possible. */
    assert_int_equal(judge(&h, NEW_YORK(7922), T0 + 8 * HOUR_MS, &t),
                     BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_NEW_ASN));
    assert_int_equal(t, AG_HTRAVEL_POSSIBLE);
    /* What the files do not know is never new. */
    struct ag_login_place unknown = {.placed = false};
    assert_int_equal(judge(&h, unknown, T0 + HOUR_MS, &t), 0);
    assert_int_equal(t, AG_HTRAVEL_NO_LOCATION);
    /* An anonymising address gives no verdict on the journey. */
    struct ag_login_place vpn = NEW_YORK(3215);
    vpn.anonymising = true;
    assert_int_equal(judge(&h, vpn, T0 + HOUR_MS, &t),
                     BIT(AG_SIGNAL_NEW_COUNTRY));
    assert_int_equal(t, AG_HTRAVEL_ANONYMISING);
    /* Past the retention, the history is forgotten. */
    assert_int_equal(judge(&h, PARIS(3215), T0 + 90 * DAY_MS, &t),
                     BIT(AG_SIGNAL_NO_HISTORY));
    struct ag_travel fig;
    assert_int_equal(
        ag_history_judge(&h, &home, T0 + 90 * DAY_MS, 91, NULL, &t, &fig), 0);
}

static void which_successes_teach(void **state)
{
    (void)state;
    struct ag_history h;
    ag_history_parse("", 0, &h);
    struct ag_login_place home = PARIS(3215), away = NEW_YORK(7922);
    /* The first success teaches everything. */
    assert_true(
        ag_history_teach(&h, &home, T0, BIT(AG_SIGNAL_NO_HISTORY), false, 0));
    /* An unproven success from a new country teaches nothing, not even
     * its time and place: an attacker's success makes nothing usual. */
    enum ag_history_travel t;
    unsigned s = judge(&h, away, T0 + 48 * HOUR_MS, &t);
    assert_false(ag_history_teach(&h, &away, T0 + 48 * HOUR_MS, s, false, 0));
    assert_int_equal(h.ncountries, 1);
    assert_int_equal(h.last_ms, T0);
    /* Nor an impossible journey within a usual country. */
    struct ag_login_place far = from("FR", 3215, -21.1151, 55.5364);
    s = judge(&h, far, T0 + HOUR_MS, &t);
    assert_true(s & BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL));
    assert_false(ag_history_teach(&h, &far, T0 + HOUR_MS, s, false, 0));
    /* A new network in a usual country is learnt. */
    struct ag_login_place mobile = LYON(12322);
    s = judge(&h, mobile, T0 + 5 * HOUR_MS, &t);
    assert_int_equal(s, BIT(AG_SIGNAL_NEW_ASN));
    assert_true(ag_history_teach(&h, &mobile, T0 + 5 * HOUR_MS, s, false, 0));
    assert_int_equal(judge(&h, mobile, T0 + 6 * HOUR_MS, &t), 0);
    /* A proven success (a passed challenge, a trusted device) teaches a
     * new country. */
    s = judge(&h, away, T0 + 48 * HOUR_MS, &t);
    assert_true(ag_history_teach(&h, &away, T0 + 48 * HOUR_MS, s, true, 0));
    assert_int_equal(judge(&h, away, T0 + 49 * HOUR_MS, &t), 0);
    assert_string_equal(h.last_country, "US");
    /* An anonymising address moves no place: the last stays, with its
     * time, and a journey is judged from it. */
    struct ag_login_place vpn = PARIS(3215);
    vpn.anonymising = true;
    assert_true(ag_history_teach(&h, &vpn, T0 + 50 * HOUR_MS, 0, false, 0));
    assert_true(h.placed);
    assert_int_equal(h.place.lat_d10, away.place.lat_d10);
    assert_int_equal(h.place_ms, T0 + 48 * HOUR_MS);
    assert_string_equal(h.last_country, "US");
    assert_int_equal(h.last_ms, T0 + 50 * HOUR_MS);
    /* An unproven success from a country the files do not know teaches
     * nothing, and keeps the place: it is no usual country. */
    struct ag_history before = h;
    struct ag_login_place nowhere = {.asn = 666};
    s = judge(&h, nowhere, T0 + 51 * HOUR_MS, &t);
    assert_int_equal(s, BIT(AG_SIGNAL_NEW_ASN));
    assert_false(
        ag_history_teach(&h, &nowhere, T0 + 51 * HOUR_MS, s, false, 0));
    assert_memory_equal(&h, &before, sizeof h);
    assert_int_equal(judge(&h, NEW_YORK(7922), T0 + 51 * HOUR_MS, &t), 0);
    assert_int_equal(t, AG_HTRAVEL_POSSIBLE);
}

static void the_oldest_goes_past_the_keep(void **state)
{
    (void)state;
    struct ag_history h;
    ag_history_parse("", 0, &h);
    static const char *const codes[] = {"AA", "BB", "CC", "DD", "EE", "FF",
                                        "GG", "HH", "II", "JJ", "KK"};
    for (size_t i = 0; i < 11; i++) {
        struct ag_login_place at = from(codes[i], 100 + (uint32_t)i, 0, 0);
        assert_true(ag_history_teach(&h, &at, T0 + i * DAY_MS, 0, true, 0));
    }
    assert_int_equal(h.ncountries, AG_HISTORY_KEEP);
    assert_int_equal(h.nasns, AG_HISTORY_KEEP);
    enum ag_history_travel t;
    unsigned s = judge(&h, from("AA", 100, 0, 0), T0 + 11 * DAY_MS, &t);
    assert_int_equal(s, BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_NEW_ASN));
    assert_int_equal(judge(&h, from("BB", 101, 0, 0), T0 + 11 * DAY_MS, &t), 0);
    /* Entries past the retention are dropped when next taught. */
    struct ag_login_place late = from("KK", 110, 0, 0);
    ag_history_teach(&h, &late, T0 + 100 * DAY_MS, 0, false, 0);
    assert_int_equal(h.ncountries, 1);
    assert_int_equal(h.nasns, 1);
}

static void risk_levels(void **state)
{
    (void)state;
    static const struct {
        unsigned signals;
        enum ag_risk_level level;
    } table[] = {
        {0, AG_RISK_LOW},
        {BIT(AG_SIGNAL_NEW_ASN), AG_RISK_LOW},
        {BIT(AG_SIGNAL_NO_HISTORY), AG_RISK_MEDIUM},
        {BIT(AG_SIGNAL_NEW_COUNTRY), AG_RISK_MEDIUM},
        {BIT(AG_SIGNAL_IP_LISTED), AG_RISK_MEDIUM},
        {BIT(AG_SIGNAL_PASSWORD_BREACHED), AG_RISK_MEDIUM},
        {BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_IP_LISTED), AG_RISK_HIGH},
        {BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_PASSWORD_BREACHED),
         AG_RISK_HIGH},
        {BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL), AG_RISK_HIGH},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        assert_int_equal(ag_risk_level(table[i].signals), table[i].level);
    assert_string_equal(ag_risk_level_name(AG_RISK_MEDIUM), "medium");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_text_round_trips),
        cmocka_unit_test(the_whole_history_fits_its_text),
        cmocka_unit_test(a_new_user_has_no_history_and_nothing_is_new),
        cmocka_unit_test(new_country_and_new_network_against_the_usual),
        cmocka_unit_test(which_successes_teach),
        cmocka_unit_test(the_oldest_goes_past_the_keep),
        cmocka_unit_test(risk_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
