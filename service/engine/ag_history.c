/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_history.h"

#include <stdio.h>
#include <string.h>

#include "ag_endpoint.h"
#include "ag_error.h"

#define DAY_MS 86400000ull

/* ---- the text ----------------------------------------------------------- */

/* Reads an unsigned decimal of at most max from *p up to end; advances. */
static bool read_uint(const char **p, const char *end, uint64_t max,
                      uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (s == end || *s < '0' || *s > '9')
        return false;
    while (s < end && *s >= '0' && *s <= '9') {
        if (v > (max - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
        s++;
    }
    *p = s;
    *out = v;
    return true;
}

static bool read_int(const char **p, const char *end, int64_t lim, int64_t *out)
{
    bool neg = *p < end && **p == '-';
    if (neg)
        (*p)++;
    uint64_t v;
    if (!read_uint(p, end, (uint64_t)lim, &v))
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static bool eat(const char **p, const char *end, char c)
{
    if (*p == end || **p != c)
        return false;
    (*p)++;
    return true;
}

static bool upper_code(const char *s, const char *end)
{
    return end - s >= 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' &&
           s[1] <= 'Z';
}

static bool parse_place(const char **p, const char *end, struct ag_history *h)
{
    if (*p < end && **p == '|')
        return true; /* none */
    int64_t lat, lon;
    uint64_t r, ms;
    if (!read_int(p, end, 900, &lat) || !eat(p, end, ',') ||
        !read_int(p, end, 1800, &lon) || !eat(p, end, ',') ||
        !read_uint(p, end, UINT16_MAX, &r) || !eat(p, end, ',') ||
        !read_uint(p, end, UINT64_MAX / 2, &ms))
        return false;
    h->placed = true;
    h->place = (struct ag_place){(int16_t)lat, (int16_t)lon, (uint16_t)r};
    h->place_ms = ms;
    return true;
}

static bool parse_countries(const char **p, const char *end,
                            struct ag_history *h)
{
    while (*p < end && **p != '|') {
        if (h->ncountries == AG_HISTORY_KEEP || !upper_code(*p, end))
            return false;
        memcpy(h->countries[h->ncountries].code, *p, 2);
        h->countries[h->ncountries].code[2] = '\0';
        *p += 2;
        uint64_t day;
        if (!eat(p, end, ':') || !read_uint(p, end, UINT32_MAX, &day))
            return false;
        h->countries[h->ncountries++].day = (uint32_t)day;
        if (*p < end && **p != '|' &&
            (!eat(p, end, ',') || *p == end || **p == '|'))
            return false;
    }
    return true;
}

static bool parse_asns(const char **p, const char *end, struct ag_history *h)
{
    while (*p < end) {
        uint64_t asn, day;
        if (h->nasns == AG_HISTORY_KEEP ||
            !read_uint(p, end, UINT32_MAX, &asn) || asn == 0 ||
            !eat(p, end, ':') || !read_uint(p, end, UINT32_MAX, &day))
            return false;
        h->asns[h->nasns].asn = (uint32_t)asn;
        h->asns[h->nasns++].day = (uint32_t)day;
        if (*p < end && (!eat(p, end, ',') || *p == end))
            return false;
    }
    return true;
}

int ag_history_parse(const char *text, size_t len, struct ag_history *h)
{
    memset(h, 0, sizeof *h);
    if (len == 0)
        return AG_OK;
    const char *p = text, *end = text + len;
    uint64_t last;
    bool ok = eat(&p, end, '1') && eat(&p, end, '|') &&
              read_uint(&p, end, UINT64_MAX / 2, &last) && eat(&p, end, '|');
    if (ok && p < end && *p != '|') {
        ok = upper_code(p, end);
        if (ok) {
            memcpy(h->last_country, p, 2);
            p += 2;
        }
    }
    ok = ok && eat(&p, end, '|') && parse_place(&p, end, h) &&
         eat(&p, end, '|') && parse_countries(&p, end, h) &&
         eat(&p, end, '|') && parse_asns(&p, end, h);
    if (!ok) {
        memset(h, 0, sizeof *h);
        return AG_EINVAL;
    }
    h->known = true;
    h->last_ms = last;
    return AG_OK;
}

size_t ag_history_format(const struct ag_history *h, char *out)
{
    size_t n = 0, cap = AG_HISTORY_TEXT_MAX;
#define PUT(...)                                                               \
    do {                                                                       \
        int w = snprintf(out + n, cap - n, __VA_ARGS__);                       \
        n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0;                     \
    } while (0)
    PUT("1|%llu|%s|", (unsigned long long)h->last_ms, h->last_country);
    if (h->placed)
        PUT("%d,%d,%u,%llu", h->place.lat_d10, h->place.lon_d10,
            (unsigned)h->place.radius_km, (unsigned long long)h->place_ms);
    PUT("|");
    for (size_t i = 0; i < h->ncountries; i++)
        PUT("%s%s:%u", i ? "," : "", h->countries[i].code,
            (unsigned)h->countries[i].day);
    PUT("|");
    for (size_t i = 0; i < h->nasns; i++)
        PUT("%s%u:%u", i ? "," : "", (unsigned)h->asns[i].asn,
            (unsigned)h->asns[i].day);
#undef PUT
    return n;
}

/* ---- judging ------------------------------------------------------------ */

static uint32_t retention(uint32_t days)
{
    return days ? days : AG_HISTORY_RETENTION_DAYS;
}

/* Is day within the retention of today? */
static bool live(uint32_t day, uint32_t today, uint32_t days)
{
    return day + retention(days) > today;
}

static int find_country(const struct ag_history *h, const char *code,
                        uint32_t today, uint32_t days)
{
    for (size_t i = 0; i < h->ncountries; i++)
        if (strcmp(h->countries[i].code, code) == 0 &&
            live(h->countries[i].day, today, days))
            return (int)i;
    return -1;
}

static int find_asn(const struct ag_history *h, uint32_t asn, uint32_t today,
                    uint32_t days)
{
    for (size_t i = 0; i < h->nasns; i++)
        if (h->asns[i].asn == asn && live(h->asns[i].day, today, days))
            return (int)i;
    return -1;
}

/* Does h hold anything still within the retention? */
static bool remembers(const struct ag_history *h, uint32_t today, uint32_t days)
{
    for (size_t i = 0; i < h->ncountries; i++)
        if (live(h->countries[i].day, today, days))
            return true;
    for (size_t i = 0; i < h->nasns; i++)
        if (live(h->asns[i].day, today, days))
            return true;
    return false;
}

const char *ag_history_travel_name(enum ag_history_travel t)
{
    static const char *const names[] = {
        [AG_HTRAVEL_POSSIBLE] = "possible",
        [AG_HTRAVEL_IMPOSSIBLE] = "impossible",
        [AG_HTRAVEL_STALE] = "stale",
        [AG_HTRAVEL_NO_HISTORY] = "no_history",
        [AG_HTRAVEL_NO_LOCATION] = "no_location",
        [AG_HTRAVEL_ANONYMISING] = "anonymising",
    };
    return names[t];
}

#define BIT(s) (1u << (s))

unsigned ag_history_judge(const struct ag_history *h,
                          const struct ag_login_place *at, uint64_t now_ms,
                          uint32_t retention_days,
                          const struct ag_travel_opts *o,
                          enum ag_history_travel *travel, struct ag_travel *fig)
{
    uint32_t today = (uint32_t)(now_ms / DAY_MS);
    memset(fig, 0, sizeof *fig);
    if (!h->known || !remembers(h, today, retention_days)) {
        *travel = AG_HTRAVEL_NO_HISTORY;
        return BIT(AG_SIGNAL_NO_HISTORY);
    }
    unsigned signals = 0;
    if (at->country[0] &&
        find_country(h, at->country, today, retention_days) < 0)
        signals |= BIT(AG_SIGNAL_NEW_COUNTRY);
    if (at->asn && find_asn(h, at->asn, today, retention_days) < 0)
        signals |= BIT(AG_SIGNAL_NEW_ASN);
    if (at->anonymising)
        *travel = AG_HTRAVEL_ANONYMISING;
    else if (!at->placed)
        *travel = AG_HTRAVEL_NO_LOCATION;
    else if (!h->placed)
        *travel = AG_HTRAVEL_NO_HISTORY;
    else {
        enum ag_travel_verdict v =
            ag_travel_judge(&h->place, h->place_ms, &at->place, now_ms, o, fig);
        *travel = v == AG_TRAVEL_IMPOSSIBLE ? AG_HTRAVEL_IMPOSSIBLE
                  : v == AG_TRAVEL_STALE    ? AG_HTRAVEL_STALE
                                            : AG_HTRAVEL_POSSIBLE;
        if (v == AG_TRAVEL_IMPOSSIBLE)
            signals |= BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL);
    }
    return signals;
}

/* ---- teaching ----------------------------------------------------------- */

/* Drops entries past the retention, keeping the order. */
static void prune(struct ag_history *h, uint32_t today, uint32_t days)
{
    size_t n = 0;
    for (size_t i = 0; i < h->ncountries; i++)
        if (live(h->countries[i].day, today, days))
            h->countries[n++] = h->countries[i];
    h->ncountries = n;
    n = 0;
    for (size_t i = 0; i < h->nasns; i++)
        if (live(h->asns[i].day, today, days))
            h->asns[n++] = h->asns[i];
    h->nasns = n;
}

/* The index of the entry seen longest ago, of n with days day[i*stride]. */
static size_t oldest(const uint32_t *day, size_t stride, size_t n)
{
    size_t at = 0;
    for (size_t i = 1; i < n; i++)
        if (day[i * stride] < day[at * stride])
            at = i;
    return at;
}

static void learn_country(struct ag_history *h, const char *code,
                          uint32_t today, uint32_t days)
{
    int i = find_country(h, code, today, days);
    if (i < 0) {
        i = h->ncountries < AG_HISTORY_KEEP
                ? (int)h->ncountries++
                : (int)oldest(&h->countries[0].day,
                              sizeof h->countries[0] / sizeof(uint32_t),
                              h->ncountries);
        memcpy(h->countries[i].code, code, 3);
    }
    h->countries[i].day = today;
}

static void learn_asn(struct ag_history *h, uint32_t asn, uint32_t today,
                      uint32_t days)
{
    int i = find_asn(h, asn, today, days);
    if (i < 0) {
        i = h->nasns < AG_HISTORY_KEEP
                ? (int)h->nasns++
                : (int)oldest(&h->asns[0].day,
                              sizeof h->asns[0] / sizeof(uint32_t), h->nasns);
        h->asns[i].asn = asn;
    }
    h->asns[i].day = today;
}

bool ag_history_teach(struct ag_history *h, const struct ag_login_place *at,
                      uint64_t now_ms, unsigned signals, bool proven,
                      uint32_t retention_days)
{
    uint32_t today = (uint32_t)(now_ms / DAY_MS);
    prune(h, today, retention_days);
    bool first = !h->known || (h->ncountries == 0 && h->nasns == 0);
    if (!at->country[0] && !at->asn && !at->placed)
        return false; /* nothing to learn from */
    if (!first && !proven &&
        ((signals &
          (BIT(AG_SIGNAL_NEW_COUNTRY) | BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL))) ||
         !at->country[0]))
        return false; /* unproven: only a usual country's success */
    if (at->country[0])
        learn_country(h, at->country, today, retention_days);
    if (at->asn)
        learn_asn(h, at->asn, today, retention_days);
    h->known = true;
    h->last_ms = now_ms;
    /* An anonymising address's place is the exit's, not the user's:
     * the last place stays as it was, with its own time. */
    if (at->country[0] && !at->anonymising)
        memcpy(h->last_country, at->country, 3);
    if (at->placed && !at->anonymising) {
        h->placed = true;
        h->place = at->place;
        h->place_ms = now_ms;
    }
    return true;
}

/* ---- risk --------------------------------------------------------------- */

enum ag_risk_level ag_risk_level(unsigned s)
{
    bool new_country = s & BIT(AG_SIGNAL_NEW_COUNTRY);
    bool bad_addr_or_pw =
        s & (BIT(AG_SIGNAL_IP_LISTED) | BIT(AG_SIGNAL_PASSWORD_BREACHED));
    if ((s & BIT(AG_SIGNAL_IMPOSSIBLE_TRAVEL)) ||
        (new_country && bad_addr_or_pw))
        return AG_RISK_HIGH;
    if (new_country || bad_addr_or_pw || (s & BIT(AG_SIGNAL_NO_HISTORY)))
        return AG_RISK_MEDIUM;
    return AG_RISK_LOW;
}

const char *ag_risk_level_name(enum ag_risk_level l)
{
    return l == AG_RISK_HIGH ? "high" : l == AG_RISK_MEDIUM ? "medium" : "low";
}
