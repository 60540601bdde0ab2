/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Impossible travel (ag_travel): places rounded to a tenth of a degree,
 * great-circle distances against distances known independently, and
 * the judgement's rules: the slack of both radii and roundings, the
 * minimum distance, the speed, the window, clocks apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "ag_travel.h"

/* Places from degrees, with radius_km. */
static struct ag_place at(double lat, double lon, uint16_t radius_km)
{
    struct ag_place p;
    assert_true(ag_place_from(lat, lon, radius_km, &p));
    return p;
}

#define HOUR_MS 3600000ull
#define T0 1800000000000ull /* 2027-01-15, Unix ms */

static void places_are_rounded_to_a_tenth_of_a_degree(void **state)
{
    (void)state;
    struct ag_place p = at(51.5074, -0.1278, 0);
    assert_int_equal(p.lat_d10, 515);
    assert_int_equal(p.lon_d10, -1);
    assert_int_equal(p.radius_km, AG_TRAVEL_RADIUS_DEFAULT_KM);
    p = at(-33.8688, 151.2093, 20);
    assert_int_equal(p.lat_d10, -339);
    assert_int_equal(p.lon_d10, 1512);
    assert_int_equal(p.radius_km, 20);
    /* Halves round away from zero, both ways alike. */
    assert_int_equal(at(0.05, -0.05, 1).lat_d10, 1);
    assert_int_equal(at(0.05, -0.05, 1).lon_d10, -1);
    /* The ends of the ranges are places; past them, or no number, not. */
    assert_int_equal(at(90, 180, 1).lat_d10, 900);
    assert_int_equal(at(-90, -180, 1).lon_d10, -1800);
    struct ag_place q = {7, 7, 7};
    static const double bad[][2] = {{90.01, 0},   {-90.01, 0}, {0, 180.01},
                                    {0, -180.01}, {NAN, 0},    {0, INFINITY}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(ag_place_from(bad[i][0], bad[i][1], 10, &q));
    assert_int_equal(q.lat_d10, 7);
}

/* Distances known independently (the great-circle figures of published
 * city-pair tables), within the rounding of the places: each centre
 * moves at most AG_TRAVEL_ROUNDING_KM. */
static void distances_are_the_great_circles(void **state)
{
    (void)state;
    static const struct {
        double lat1, lon1, lat2, lon2, km;
    } pairs[] = {
        {51.5074, -0.1278, 48.8566, 2.3522, 344},      /* London, Paris */
        {40.7128, -74.0060, 51.5074, -0.1278, 5570},   /* New York, London */
        {-33.8688, 151.2093, 35.6762, 139.6503, 7823}, /* Sydney, Tokyo */
        {0.0, 179.95, 0.0, -179.95, 11}, /* across the antimeridian */
        {89.95, 0.0, 89.95, 180.0, 11},  /* over the pole */
        {0.0, 0.0, 0.0, 180.0, 20015},   /* antipodes: half the Earth */
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        struct ag_place a = at(pairs[i].lat1, pairs[i].lon1, 1);
        struct ag_place b = at(pairs[i].lat2, pairs[i].lon2, 1);
        double km = ag_travel_km(&a, &b);
        if (fabs(km - pairs[i].km) > 2 * AG_TRAVEL_ROUNDING_KM + 1)
            fail_msg("pair %zu: %.1f km, not about %.0f", i, km, pairs[i].km);
        assert_true(fabs(ag_travel_km(&b, &a) - km) < 1e-9);
    }
    struct ag_place p = at(10, 10, 1);
    assert_true(ag_travel_km(&p, &p) == 0.0);
}

static void an_airliner_is_possible_and_a_teleport_is_not(void **state)
{
    (void)state;
    struct ag_place ny = at(40.7128, -74.0060, 20);
    struct ag_place london = at(51.5074, -0.1278, 20);
    struct ag_travel t;
    /* Seven hours for 5 570 km: under 800 km/h. */
    assert_int_equal(
        ag_travel_judge(&ny, T0, &london, T0 + 7 * HOUR_MS, NULL, &t),
        AG_TRAVEL_POSSIBLE);
    assert_true(t.kmh > 700 && t.kmh < 800);
    assert_true(fabs(t.hours - 7) < 1e-9);
    assert_true(fabs(t.km - t.effective_km - (20 + 20 + 16)) < 1e-9);
    /* One hour: over 5 000 km/h. */
    assert_int_equal(ag_travel_judge(&ny, T0, &london, T0 + HOUR_MS, NULL, &t),
                     AG_TRAVEL_IMPOSSIBLE);
    assert_true(t.kmh > 5000);
    /* No time at all, or a clock behind: as far in no time. */
    assert_int_equal(ag_travel_judge(&ny, T0, &london, T0, NULL, &t),
                     AG_TRAVEL_IMPOSSIBLE);
    assert_true(isinf(t.kmh));
    assert_int_equal(ag_travel_judge(&ny, T0, &london, T0 - 5000, NULL, &t),
                     AG_TRAVEL_IMPOSSIBLE);
    /* After the window the last place says nothing. */
    assert_int_equal(
        ag_travel_judge(&ny, T0, &london, T0 + 24 * HOUR_MS + 1, NULL, &t),
        AG_TRAVEL_STALE);
    assert_int_equal(
        ag_travel_judge(&ny, T0, &london, T0 + 24 * HOUR_MS, NULL, &t),
        AG_TRAVEL_POSSIBLE);
}

static void near_places_and_wide_radii_are_never_impossible(void **state)
{
    (void)state;
    /* A commute between two cities 60 km apart, in no time: under the
     * 100 km every verdict needs. */
    struct ag_place a = at(52.52, 13.40, 1), b = at(52.52, 14.29, 1);
    struct ag_travel t;
    assert_int_equal(ag_travel_judge(&a, T0, &b, T0 + 1000, NULL, &t),
                     AG_TRAVEL_POSSIBLE);
    assert_true(t.km > 55 && t.km < 65);
    /* London to Paris in ten minutes, with the databases unsure by
     * 200 km each: what is left (344 - 400 - 16) is nothing. */
    struct ag_place l = at(51.5074, -0.1278, 200), p = at(48.8566, 2.3522, 200);
    assert_int_equal(ag_travel_judge(&l, T0, &p, T0 + 600000, NULL, &t),
                     AG_TRAVEL_POSSIBLE);
    assert_true(t.effective_km == 0.0 && t.kmh == 0.0);
    /* Sure to 10 km each: 344 - 36 left, at about 1 850 km/h. */
    l.radius_km = p.radius_km = 10;
    assert_int_equal(ag_travel_judge(&l, T0, &p, T0 + 600000, NULL, &t),
                     AG_TRAVEL_IMPOSSIBLE);
}

static void the_thresholds_are_settings(void **state)
{
    (void)state;
    struct ag_place ny = at(40.7128, -74.0060, 20);
    struct ag_place london = at(51.5074, -0.1278, 20);
    /* A stricter 700 km/h flags the seven-hour flight (about 790)... */
    struct ag_travel_opts okta = {.speed_kmh = 700};
    assert_int_equal(
        ag_travel_judge(&ny, T0, &london, T0 + 7 * HOUR_MS, &okta, NULL),
        AG_TRAVEL_IMPOSSIBLE);
    /* ...and a minimum past the distance, or a shorter window, none. */
    struct ag_travel_opts far = {.min_km = 6000};
    assert_int_equal(
        ag_travel_judge(&ny, T0, &london, T0 + HOUR_MS, &far, NULL),
        AG_TRAVEL_POSSIBLE);
    struct ag_travel_opts short_window = {.window_s = 1800};
    assert_int_equal(
        ag_travel_judge(&ny, T0, &london, T0 + HOUR_MS, &short_window, NULL),
        AG_TRAVEL_STALE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(places_are_rounded_to_a_tenth_of_a_degree),
        cmocka_unit_test(distances_are_the_great_circles),
        cmocka_unit_test(an_airliner_is_possible_and_a_teleport_is_not),
        cmocka_unit_test(near_places_and_wide_radii_are_never_impossible),
        cmocka_unit_test(the_thresholds_are_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
