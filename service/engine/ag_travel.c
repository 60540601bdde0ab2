/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_travel.h"

#include <math.h>
#include <stddef.h>

/* The mean Earth radius (IUGG), km. */
#define EARTH_KM 6371.0088

bool ag_place_from(double lat, double lon, uint16_t radius_km,
                   struct ag_place *out)
{
    if (!isfinite(lat) || !isfinite(lon) || lat < -90.0 || lat > 90.0 ||
        lon < -180.0 || lon > 180.0)
        return false;
    out->lat_d10 = (int16_t)lround(lat * 10.0);
    out->lon_d10 = (int16_t)lround(lon * 10.0);
    out->radius_km = radius_km ? radius_km : AG_TRAVEL_RADIUS_DEFAULT_KM;
    return true;
}

static double radians(int16_t d10)
{
    return (double)d10 / 10.0 * (M_PI / 180.0);
}

double ag_travel_km(const struct ag_place *a, const struct ag_place *b)
{
    double la1 = radians(a->lat_d10), la2 = radians(b->lat_d10);
    double dla = la2 - la1;
    double dlo = radians(b->lon_d10) - radians(a->lon_d10);
    double s1 = sin(dla / 2), s2 = sin(dlo / 2);
    double h = s1 * s1 + cos(la1) * cos(la2) * s2 * s2;
    /* h can pass 1 by a rounding error for antipodes. */
    return 2.0 * EARTH_KM * asin(sqrt(h < 1.0 ? h : 1.0));
}

static uint32_t or_default(uint32_t v, uint32_t def)
{
    return v ? v : def;
}

static uint16_t radius(const struct ag_place *p)
{
    return p->radius_km ? p->radius_km : AG_TRAVEL_RADIUS_DEFAULT_KM;
}

enum ag_travel_verdict
ag_travel_judge(const struct ag_place *from, uint64_t from_ms,
                const struct ag_place *to, uint64_t now_ms,
                const struct ag_travel_opts *o, struct ag_travel *fig)
{
    struct ag_travel_opts d = o ? *o : (struct ag_travel_opts){0};
    uint32_t speed = or_default(d.speed_kmh, AG_TRAVEL_SPEED_KMH);
    uint32_t min_km = or_default(d.min_km, AG_TRAVEL_MIN_KM);
    uint32_t window_s = or_default(d.window_s, AG_TRAVEL_WINDOW_S);
    struct ag_travel t = {0};
    uint64_t ms = now_ms > from_ms ? now_ms - from_ms : 0;
    t.hours = (double)ms / 3600000.0;
    t.km = ag_travel_km(from, to);
    double slack =
        (double)radius(from) + radius(to) + 2.0 * AG_TRAVEL_ROUNDING_KM;
    t.effective_km = t.km > slack ? t.km - slack : 0.0;
    if (t.effective_km > 0.0)
        t.kmh = ms ? t.effective_km / t.hours : HUGE_VAL;
    if (fig)
        *fig = t;
    if (ms > (uint64_t)window_s * 1000)
        return AG_TRAVEL_STALE;
    if (t.effective_km < (double)min_km || t.kmh <= (double)speed)
        return AG_TRAVEL_POSSIBLE;
    return AG_TRAVEL_IMPOSSIBLE;
}
