/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_otp_stats: the OTP conversion figures admins read (GET
 * /admin/otp/conversion): codes sent and codes verified per country
 * calling code and per number range (phone_prefix), exact across
 * instances because they are counted in Redis, by the hour.
 *
 * Redis holds no group in clear: each hour is one hash per grouping,
 * "ag::conv:<by>:<hour>", whose fields are the group's keyed digest
 * (ag_identity_digest, as its policy keys use) with ":s" (sent) and ":v"
 * (verified) counts, and ":n", the group's label sealed with a key derived
 * from the secret (crypto_secretbox, a random nonce each time), which only
 * this report opens. The hashes expire after AG_OTP_STATS_KEEP_S.
 *
 * Counting is sent without waiting (ag_store_tally): figures, not limits,
 * so a Redis outage loses figures, never a check's time. Thread-safe: a
 * struct ag_otp_stats is read-only after init.
 */
#ifndef AG_OTP_STATS_H
#define AG_OTP_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <sodium.h>

#include "ag_error.h"
#include "ag_identity.h"
#include "ag_request.h"
#include "ag_store.h"

#define AG_OTP_STATS_HOUR_S 3600u
#define AG_OTP_STATS_WINDOW_DEFAULT_S 86400u
#define AG_OTP_STATS_WINDOW_MAX_S (7u * 86400u)
/* Each hour's hashes live a day longer than the longest window. */
#define AG_OTP_STATS_KEEP_S (AG_OTP_STATS_WINDOW_MAX_S + 86400u)
/* Groups a report holds at most (the busiest first). */
#define AG_OTP_STATS_GROUPS_MAX 1000u

enum ag_otp_by { AG_OTP_BY_COUNTRY, AG_OTP_BY_PHONE_PREFIX };

struct ag_otp_stats {
    const struct ag_hasher *hasher; /* borrowed */
    unsigned char seal_key[crypto_secretbox_KEYBYTES];
};

/* Derives the sealing key from h's key; h must outlive st. */
void ag_otp_stats_init(struct ag_otp_stats *st, const struct ag_hasher *h);
void ag_otp_stats_wipe(struct ag_otp_stats *st);

/* "country" or "phone_prefix"; -1 for anything else. */
int ag_otp_by_parse(const char *s);

/* Counts one code sent (verified false) or verified for a phone of
 * country and phone_prefix (either may be "" or NULL: not counted) in the
 * hour of now_s. */
void ag_otp_stats_record(const struct ag_otp_stats *st, struct ag_store *store,
                         const char *country, const char *phone_prefix,
                         bool verified, uint64_t now_s);

/* The report over the whole hours that cover the last window_s seconds
 * (1 to AG_OTP_STATS_WINDOW_MAX_S): *out, a new {"by", "window_s",
 * "groups": [{"group", "sent", "verified", "ratio"}, ...]} object, most
 * sends first, ratio null where nothing was sent; the caller decrefs it.
 * AG_ESTORE when Redis cannot answer, AG_ENOMEM. */
int ag_otp_stats_report(const struct ag_otp_stats *st, struct ag_store *store,
                        enum ag_otp_by by, uint32_t window_s, uint64_t now_s,
                        json_t **out);

#endif
