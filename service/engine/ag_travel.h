/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Impossible travel (issue 40), without I/O: where a login was, kept
 * coarse, and whether two logins of one user are further apart than a
 * person can travel in the time between them.
 *
 * A place is what a City database says of an address (location.latitude,
 * location.longitude, location.accuracy_radius), rounded to a tenth of a
 * degree (about 11 km of latitude, less of longitude away from the
 * equator): nothing finer is kept, and the rounding is added to the
 * slack a judgement allows. The distance is the great circle's
 * (haversine, on the mean Earth radius), less both accuracy radii and
 * both roundings; a journey is impossible when what is left is at least
 * min_km and, over the time between, faster than speed_kmh (1000 km/h by
 * default, as PingOne and Airlock judge; an airliner cruises at 900). A
 * last login older than window_s gives no verdict: after a day, anywhere
 * is reachable, and a stale place says nothing.
 *
 * Pure functions; thread-safe.
 */
#ifndef AG_TRAVEL_H
#define AG_TRAVEL_H

#include <stdbool.h>
#include <stdint.h>

#define AG_TRAVEL_SPEED_KMH 1000u
#define AG_TRAVEL_MIN_KM 100u
#define AG_TRAVEL_WINDOW_S 86400u
/* The accuracy radius taken for a database that gives none: a City
 * record's radius is typically tens to hundreds of kilometres, and a
 * wider one flags fewer real travellers. */
#define AG_TRAVEL_RADIUS_DEFAULT_KM 100u
/* A place's rounding, at most: half a tenth of a degree's cell diagonal
 * at the equator (sqrt(5.56^2 + 5.56^2) km), rounded up. */
#define AG_TRAVEL_ROUNDING_KM 8u

/* A coarse place: tenths of a degree, and the database's accuracy
 * radius in kilometres. */
struct ag_place {
    int16_t lat_d10;    /* -900 to 900 */
    int16_t lon_d10;    /* -1800 to 1800 (both ends the antimeridian) */
    uint16_t radius_km; /* 0: AG_TRAVEL_RADIUS_DEFAULT_KM */
};

/* Rounds lat and lon (degrees) to a place with radius_km (0 for the
 * default); false, *out untouched, for a latitude or longitude that is no
 * number or out of range. */
bool ag_place_from(double lat, double lon, uint16_t radius_km,
                   struct ag_place *out);

/* The great-circle distance between two places' centres, in km. */
double ag_travel_km(const struct ag_place *a, const struct ag_place *b);

struct ag_travel_opts {
    uint32_t speed_kmh; /* 0: AG_TRAVEL_SPEED_KMH */
    uint32_t min_km;    /* 0: AG_TRAVEL_MIN_KM */
    uint32_t window_s;  /* 0: AG_TRAVEL_WINDOW_S */
};

enum ag_travel_verdict {
    AG_TRAVEL_STALE,      /* the last login is older than the window */
    AG_TRAVEL_POSSIBLE,   /* near enough, or slow enough */
    AG_TRAVEL_IMPOSSIBLE, /* too far, too fast */
};

/* What a judgement saw: the distance, what is left of it once the radii
 * and roundings are taken off (never below 0), the hours between, and
 * the speed that needs (0 when nothing is left; a journey of no time
 * with something left needs an infinite speed: HUGE_VAL). */
struct ag_travel {
    double km;
    double effective_km;
    double hours;
    double kmh;
};

/* Judges a journey from from, at from_ms, to to, at now_ms (Unix
 * milliseconds; a now before from, two instances' clocks apart, is no
 * time at all). o NULL: the defaults. fig may be NULL. */
enum ag_travel_verdict
ag_travel_judge(const struct ag_place *from, uint64_t from_ms,
                const struct ag_place *to, uint64_t now_ms,
                const struct ag_travel_opts *o, struct ag_travel *fig);

#endif
