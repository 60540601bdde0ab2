/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A user's usual places (issue 40), without I/O: the short history a
 * successful login teaches, its text as Redis keeps it, and what a login
 * looks like against it (the signals new_country, new_asn, no_history
 * and impossible_travel, and a risk level).
 *
 * What is kept, under the user's keyed digest and nothing else: the
 * countries and autonomous systems of the last successful logins (at most
 * AG_HISTORY_KEEP of each, each with the day it was last seen, dropped
 * after the retention), and the last success's time, country and coarse
 * place (ag_travel: a tenth of a degree and the database's accuracy
 * radius). No address, city, device or time finer than the last one.
 *
 * The text, one line, fields apart by '|':
 *   1|<last ms>|<last country>|<lat_d10>,<lon_d10>,<radius km>,<ms>|
 *   <CC>:<day>,...|<asn>:<day>,...
 * the place (the last placed success's, and its time) empty when no
 * success had one, days since the Unix epoch. At most AG_HISTORY_TEXT_MAX
 * bytes.
 *
 * Pure functions; thread-safe.
 */
#ifndef AG_HISTORY_H
#define AG_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_travel.h"

#define AG_HISTORY_KEEP 10           /* countries, and networks, kept */
#define AG_HISTORY_RETENTION_DAYS 90 /* the default retention */
#define AG_HISTORY_TEXT_MAX 448      /* every field at its widest */
#define AG_HISTORY_KEY_PREFIX "ag::hist:"

struct ag_history {
    bool known;       /* any success was taught */
    uint64_t last_ms; /* the last taught success, Unix ms */
    char last_country[3];
    /* The last success that had a place (not an anonymising address's),
     * and when: impossible travel's start. */
    bool placed;
    struct ag_place place;
    uint64_t place_ms;
    size_t ncountries;
    struct {
        char code[3];
        uint32_t day;
    } countries[AG_HISTORY_KEEP];
    size_t nasns;
    struct {
        uint32_t asn;
        uint32_t day;
    } asns[AG_HISTORY_KEEP];
};

/* What a login brings to its history: what the network files saw. */
struct ag_login_place {
    char country[3]; /* "" unknown */
    uint32_t asn;    /* 0 unknown */
    bool placed;
    struct ag_place place;
    /* An address in a list the operator names as anonymising (VPN, Tor,
     * hosting): its place says nothing of the user's. */
    bool anonymising;
};

/* Parses text (len bytes; len 0: no history) into *h. AG_EINVAL for text
 * that is not a history of this version (*h then empty). */
int ag_history_parse(const char *text, size_t len, struct ag_history *h);

/* Formats h into out (AG_HISTORY_TEXT_MAX bytes); returns the length. */
size_t ag_history_format(const struct ag_history *h, char *out);

/* Why impossible_travel has a verdict or not. */
enum ag_history_travel {
    AG_HTRAVEL_POSSIBLE,
    AG_HTRAVEL_IMPOSSIBLE,
    AG_HTRAVEL_STALE,       /* the last success is older than the window */
    AG_HTRAVEL_NO_HISTORY,  /* no last place to start from */
    AG_HTRAVEL_NO_LOCATION, /* the address has no place (no City data) */
    AG_HTRAVEL_ANONYMISING, /* the address is in an anonymising list */
};
const char *ag_history_travel_name(enum ag_history_travel t);

/* The new-place signals (bit 1u << enum ag_signal each: new_country,
 * new_asn, no_history, impossible_travel) of a login at now_ms from at,
 * against h; travel says what the journey's judgement was, fig its
 * figures when judged. A country or network the files do not know is
 * never new. retention_days 0: AG_HISTORY_RETENTION_DAYS. */
unsigned ag_history_judge(const struct ag_history *h,
                          const struct ag_login_place *at, uint64_t now_ms,
                          uint32_t retention_days,
                          const struct ag_travel_opts *o,
                          enum ag_history_travel *travel,
                          struct ag_travel *fig);

/* Teaches h a success at now_ms from at, whose judgement gave signals
 * (ag_history_judge's), proven when a trusted device or a passed
 * challenge vouches for it. The rule (docs/decisions/usual-places.md):
 * the first success teaches everything; a proven one too; otherwise an
 * impossible journey or a new country teaches nothing at all, and a new
 * network in a usual country is learnt. Entries past the retention are
 * dropped, and the oldest past AG_HISTORY_KEEP. Returns whether h
 * changed. */
bool ag_history_teach(struct ag_history *h, const struct ag_login_place *at,
                      uint64_t now_ms, unsigned signals, bool proven,
                      uint32_t retention_days);

enum ag_risk_level { AG_RISK_LOW, AG_RISK_MEDIUM, AG_RISK_HIGH };
/* The level of a login's risk signals (bit 1u << enum ag_signal):
 * high for impossible_travel, or a new country with a listed address or
 * a breached password; medium for a new country, a listed address, a
 * breached password or no history; low otherwise (a new network alone,
 * or nothing). */
enum ag_risk_level ag_risk_level(unsigned signals);
const char *ag_risk_level_name(enum ag_risk_level l);

#endif
