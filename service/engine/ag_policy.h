/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy record: one shape for the SQLite row, the JSON files in
 * policies/ and the admin API. ag_policy_from_json is the only validator;
 * every path that creates a policy goes through it, so a policy in memory is
 * always valid. A policy set is an immutable, reference-counted array: a
 * request takes a reference and reads it without locks while a reload
 * builds and publishes a new set.
 *
 * Record:
 *   {"name": "login.user", "endpoint": "login", "key": ["user"],
 *    "algorithm": "sliding_log", "limit": 10, "window_s": 900,
 *    "block_s": 0, "block_growth": 1, "block_max_s": 0,
 *    "counts": "attempts", "fail": "open", "mode": "enforce",
 *    "applies_to": "all", "action": "deny", "enabled": true}
 */
#ifndef AG_POLICY_H
#define AG_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ag_endpoint.h"
#include "ag_error.h"
#include "ag_identity.h"

#define AG_POLICY_NAME_MAX 64
/* The name a challenge nonce's single use is counted under
 * (ag_challenge.h): no policy may take it. */
#define AG_POLICY_CHALLENGE_PASS "challenge_pass"
#define AG_POLICY_KEYS_MAX 4 /* key parts in one policy */
#define AG_LIMIT_MAX 1000000000u
#define AG_WINDOW_MAX 2592000u /* 30 days, in seconds */
/* Members one sorted set may hold: the bound on limit for sliding_log and
 * distinct, which store one member per request or subject. */
#define AG_SET_LIMIT_MAX 10000u
/* surge's factor is kept in thousandths: 1500 = 1.5. */
#define AG_FACTOR_ONE 1000u
#define AG_FACTOR_MIN 1500u
#define AG_FACTOR_MAX 100000u
#define AG_SURGE_FACTOR_DEFAULT 5000u     /* 5 */
#define AG_SURGE_BASELINE_DEFAULT 604800u /* 7 days, in seconds */
/* min_ratio is kept in parts per million: 1 = 0.000001. */
#define AG_RATIO_ONE 1000000u
/* An ip_listed signal policy's "lists": at most this many names, each an
 * --ip-list NAME ([a-z0-9_-], 1 to AG_POLICY_LIST_NAME_MAX). */
#define AG_POLICY_LISTS_MAX 8
#define AG_POLICY_LIST_NAME_MAX 32
/* An ip_country signal policy's "countries", ISO 3166-1 alpha-2 codes
 * ("AA" to "ZZ"), kept as one bit each: AG_POLICY_COUNTRY_BIT. */
#define AG_POLICY_COUNTRY_BITS (26 * 26)
#define AG_POLICY_COUNTRY_BIT(a, b) (((a) - 'A') * 26 + ((b) - 'A'))

/* A policy's needs: the country database (an ip_country key or signal),
 * the ASN database (an asn key), the IP lists (ip_listed). */
#define AG_POLICY_NEEDS_COUNTRY 1u
#define AG_POLICY_NEEDS_ASN 2u
#define AG_POLICY_NEEDS_LISTS 4u

/* Each value is also the algorithm's code in the Lua driver's specs:
 * service/redis/ag_redis_code.c registers lua/<name>.lua's table under it. */
enum ag_algorithm {
    AG_ALG_SLIDING_LOG,
    AG_ALG_FIXED_WINDOW,
    AG_ALG_SLIDING_WINDOW,
    AG_ALG_TOKEN_BUCKET,
    AG_ALG_DISTINCT, /* distinct subjects (ag_endpoint_subject) per key */
    /* Failures in a row, cleared by a success; counts failures only. */
    AG_ALG_CONSECUTIVE,
    /* Sends against verified codes (lua/conversion.lua), for SMS pumping:
     * otp only, counts attempts, needs min_ratio. */
    AG_ALG_CONVERSION,
    /* The algorithms above are the store's: a check's plan runs them in
     * Redis (lua/<name>.lua) or the in-process store. */
    AG_ALG_STORE_COUNT,
    /* A site-wide shield (ag_surge.h, service/check/ag_shields.h): key
     * ["site"], counted in each instance and shared a few times a second,
     * never in a check's plan. Raised while the count per window exceeds
     * max(limit, factor x baseline). */
    AG_ALG_SURGE = AG_ALG_STORE_COUNT,
    /* A signal of the request (ag_signal, in ag_endpoint.h): trips on
     * every check that carries it, judged by the service without the
     * store and never in a check's plan (ag_limiter_plan_signals). Counts
     * nothing, holds nothing, costs no Redis call. */
    AG_ALG_SIGNAL,
    AG_ALG_COUNT
};

enum ag_counts { AG_COUNTS_ATTEMPTS, AG_COUNTS_FAILURES };
/* Which lane of requests a policy counts and judges: a request is in the
 * trusted lane when it carries a valid device token for its user. */
enum ag_lane { AG_LANE_ALL, AG_LANE_TRUSTED, AG_LANE_UNTRUSTED };
/* What a policy does when it trips: deny, or ask for a challenge (a
 * CAPTCHA, a second factor) that the caller vouches for on its retry. */
enum ag_action { AG_ACTION_DENY, AG_ACTION_CHALLENGE };
#define AG_BLOCK_GROWTH_MAX 16u /* block_growth at most */
/* How long after the end of its block a key's block level is remembered:
 * a block within this of the previous one is the next level. */
#define AG_BLOCK_LEVEL_S 86400u
enum ag_fail { AG_FAIL_OPEN, AG_FAIL_CLOSED };
enum ag_mode { AG_MODE_ENFORCE, AG_MODE_SHADOW };

struct ag_policy {
    char name[AG_POLICY_NAME_MAX + 1];
    enum ag_endpoint endpoint;
    enum ag_key_kind key[AG_POLICY_KEYS_MAX];
    size_t nkeys;
    enum ag_algorithm algorithm;
    uint32_t limit;    /* requests per window (bucket capacity) */
    uint32_t window_s; /* window length, seconds */
    uint32_t block_s;  /* seconds a key stays denied once denied; 0 = off */
    /* Each block of a key within AG_BLOCK_LEVEL_S of the previous one lasts
     * block_growth times longer (1: no growth), up to block_max_s. */
    uint32_t block_growth;
    uint32_t block_max_s;
    /* conversion only (0 for the others): a send is allowed once it judges
     * only while verified / sends >= min_ratio; 1 = 1 / AG_RATIO_ONE. */
    uint32_t min_ratio_ppm;
    /* surge only (0 for the others): the factor over the baseline above
     * which the shield is raised, in thousandths (AG_FACTOR_ONE), and how
     * far back the baseline is learned. */
    uint32_t factor_milli;
    uint32_t baseline_s;
    /* surge only: while raised, the shield challenges only the checks
     * with a risk signal (scope "risky"), not every one of its lane
     * ("untrusted", the default). */
    bool scope_risky;
    /* A policy that counts failures: the failure reasons it counts (bit
     * 1u << enum ag_reason each; 0: all). 0 for the others. */
    unsigned reasons;
    /* signal only (0 for the others): the signal it trips on. */
    enum ag_signal signal;
    /* ip_listed only (none for the others): the --ip-list names it trips
     * on, distinct, in the record's order. */
    char lists[AG_POLICY_LISTS_MAX][AG_POLICY_LIST_NAME_MAX + 1];
    size_t nlists;
    /* ip_country only (all 0 for the others): bit AG_POLICY_COUNTRY_BIT
     * of each country it trips on. */
    uint8_t countries[(AG_POLICY_COUNTRY_BITS + 7) / 8];
    /* What it needs of the service's network files (AG_POLICY_NEEDS_*
     * bits), derived from its key and signal: the planner looks no
     * further into a policy that needs none. */
    unsigned needs;
    enum ag_counts counts;
    enum ag_fail fail;
    enum ag_mode mode;
    enum ag_lane applies_to;
    enum ag_action action;
    bool enabled;
};

/* Builds a policy from a JSON object and validates every field. Optional
 * fields take their defaults (block_s 0, block_growth 1, block_max_s
 * block_s when block_growth is 1 and else the larger of block_s and
 * AG_BLOCK_LEVEL_S, counts "attempts", fail "open", mode "enforce",
 * applies_to "all", action "deny", enabled true); unknown fields are
 * refused. min_ratio, a number above 0 and at most 1 kept to parts per
 * million, is required for conversion and refused for the others. surge
 * takes key ["site"] only, block_s of at least 1 and no block_growth, and
 * two fields the others refuse: factor (1.5 to 100, kept to thousandths;
 * default 5) and baseline_s (2 x window_s to 30 days; default 7 days). A
 * policy that counts failures takes reasons (a list of failure reasons it
 * counts; default all), which the others refuse. signal takes fields
 * the others refuse: signal (an ag_signal its endpoint may use;
 * required); for ip_listed, lists (1 to AG_POLICY_LISTS_MAX distinct
 * --ip-list names; required); for ip_country, countries (1 or more
 * distinct ISO 3166-1 alpha-2 codes, upper or lower case, kept upper;
 * required). Its limit and window_s are 1 (their default for it: a
 * signal counts nothing), no block, counts "attempts" and fail "open"
 * (it never asks the store). null reads as
 * absent (a row's empty column). If name is not
 * NULL it is the name from elsewhere (an admin URL): the body's "name" may
 * then be omitted but must equal it if present. */
int ag_policy_from_json(const json_t *obj, const char *name,
                        struct ag_policy *out, struct ag_error *err);
/* Returns a new JSON object for p (every field, min_ratio only for
 * conversion, factor and baseline_s only for surge, reasons only when
 * a policy names them, signal only for signal, lists and countries
 * only for the signals that take them, countries sorted); caller owns
 * (json_decref).
 * NULL only when out of memory. */
json_t *ag_policy_to_json(const struct ag_policy *p);

const char *ag_algorithm_name(enum ag_algorithm a);
bool ag_policy_name_valid(const char *s);
/* Is s (len bytes) a list name, as --ip-list takes it and an ip_listed
 * policy's lists hold: 1 to AG_POLICY_LIST_NAME_MAX of [a-z0-9_-]? */
bool ag_policy_list_name_valid(const char *s, size_t len);
/* AG_OK for a valid name, else AG_EINVAL with err saying what one is. */
int ag_policy_name_check(const char *s, struct ag_error *err);

struct ag_list_entry; /* ag_lists.h */

/* An immutable set of policies and the allow and deny lists that go with
 * them, shared by reference: what one check sees, from one load. */
struct ag_ruleset {
    atomic_uint refs;
    uint64_t version; /* increases with every load; for logs and metrics */
    struct ag_list_entry *lists; /* owned; NULL when there are none */
    size_t nlists;
    size_t count;
    struct ag_policy policies[]; /* sorted by name */
};

/* Returns a set holding a copy of the n policies, sorted by name, with one
 * reference; NULL when out of memory. Release with ag_ruleset_unref. */
struct ag_ruleset *ag_ruleset_new(const struct ag_policy *p, size_t n,
                                  uint64_t version);
/* Gives the set its lists: takes ownership of the malloc'd array of n
 * entries. Only before the set is shared. */
void ag_ruleset_adopt_lists(struct ag_ruleset *s, struct ag_list_entry *lists,
                            size_t n);
struct ag_ruleset *ag_ruleset_ref(struct ag_ruleset *s);

void ag_ruleset_unref(struct ag_ruleset *s);

/* True if a and b hold the same policies, every field alike (the lists
 * are not compared); false also when out of memory. NULL is the same only
 * as NULL. */
bool ag_ruleset_same_policies(const struct ag_ruleset *a,
                              const struct ag_ruleset *b);

/* Parses a policy file: {"policies": [<policy>, ...]}. On success *out is a
 * malloc'd array of *n policies that the caller frees. Names must be
 * unique. On failure err says which policy and field. */
int ag_policy_parse_file(const char *text, size_t len, struct ag_policy **out,
                         size_t *n, struct ag_error *err);

#endif
