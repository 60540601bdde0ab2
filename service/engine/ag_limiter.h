/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The limiter engine, without I/O: turns a request and a policy set into a
 * plan (one operation per applicable policy, with its hashed Redis key), and
 * the store's per-policy results into one decision. A store executes the
 * plan between the two calls.
 *
 * Policies that are disabled, or whose key needs an identifier the request
 * lacks (an optional "device" or "user", a "device_token" of an untrusted
 * request), are left out of the plan, and so are those of the other lane:
 * a policy that applies_to "trusted" is planned only for a request the
 * service put in the trusted lane (ag_request_trust), one that applies_to
 * "untrusted" only for the others. A challenge policy of a request that
 * says challenge_passed is planned as a shadow one (counted and charged,
 * never denying) and marked waived. Signal policies (AG_ALG_SIGNAL) are
 * in no plan a store gets: planned apart (ag_limiter_plan_signals), they
 * join the plan, tripped, once the store answered, so that one decision
 * combines them with the rest. A decision is never an error:
 * ag_limiter_decide cannot fail.
 * Pure functions; thread-safe.
 */
#ifndef AG_LIMITER_H
#define AG_LIMITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_history.h"
#include "ag_identity.h"
#include "ag_policy.h"
#include "ag_request.h"

#define AG_PLAN_MAX 32 /* policies applied to one check at most */
/* A plan's ops at most: its policies and a challenge pass's single use
 * (ag_limiter_plan_pass), which never takes a policy's place. */
#define AG_PLAN_OPS (AG_PLAN_MAX + 1)
/* Signal policies applied to one check at most (of AG_PLAN_MAX). */
#define AG_SIGNALS_MAX 8
/* "ag:" name ":" digest, and room for a suffix such as ":b". */
#define AG_STORE_KEY_MAX (3 + AG_POLICY_NAME_MAX + 1 + AG_DIGEST_HEX + 8)
/* A policy's block key is its state key and this. */
#define AG_BLOCK_SUFFIX ":b"
#define AG_BLOCK_SUFFIX_LEN (sizeof AG_BLOCK_SUFFIX - 1)
/* Its block level key (how many blocks in a row, and when the last ends:
 * for block_growth) is its state key and this. */
#define AG_LEVEL_SUFFIX ":l"
#define AG_LEVEL_SUFFIX_LEN (sizeof AG_LEVEL_SUFFIX - 1)
/* Its lockout marker (ag_events: set while a denial lasts, so that one
 * lockout raises one event) is its state key and this. A clear deletes
 * it with the rest. */
#define AG_MARK_SUFFIX ":e"
#define AG_MARK_SUFFIX_LEN (sizeof AG_MARK_SUFFIX - 1)
/* A set of password fingerprint digests: "ag::fp:" and the user's digest
 * (the untrusted lane), or the digest of the user and one trusted device.
 * The empty policy name keeps it apart from every policy's key. */
#define AG_FP_KEY_PREFIX "ag::fp:"
/* Fingerprints of a user remembered at most: a repeat of one charges
 * nothing. */
#define AG_FP_KEEP 3
/* A caller-chosen nonce, with its NUL: see struct ag_plan. */
#define AG_NONCE_MAX 48

struct ag_limit_op {
    const struct ag_policy *policy; /* borrowed from the set */
    char key[AG_STORE_KEY_MAX];     /* "ag:<policy>:<digest>" */
    char member[AG_DIGEST_HEX + 1]; /* distinct: the subject's digest */
    bool charge; /* record the attempt if the check is allowed */
    bool shadow; /* may never deny the check */
    bool waived; /* a challenge the request passed: shadow for this check */
};

/* What a plan is for. */
enum ag_plan_kind {
    /* A check: every enabled policy of the endpoint; attempts-counting ones
     * are charged if no enforcing policy denies, failure-counting ones only
     * checked. */
    AG_PLAN_CHECK,
    /* A failed login (/report-login, success false): the failure-counting
     * login policies, each charged unless full or blocked. */
    AG_PLAN_FAILURE,
    /* A successful login: the failure-counting login policies whose key
     * holds both user and ip, and every consecutive policy, to be
     * cleared. */
    AG_PLAN_SUCCESS,
    /* One slot group of a check on Redis Cluster, the first half of an
     * all-or-nothing check across groups: evaluated and charged exactly as
     * an AG_PLAN_CHECK of the group's policies, and each result also
     * carries its undo token. Needs a nonce (below). Planned as a check
     * (ag_limiter_plan). */
    AG_PLAN_RESERVE,
    /* The second half, for a group whose reserve was allowed while another
     * group denied: undoes exactly what that reserve charged. Its ops are
     * the reserve's, in the same order, and so is its nonce; the tokens
     * come from the reserve's results (ag_store.h). Planned as a check. */
    AG_PLAN_RELEASE,
    /* An OTP code reported verified (/report-otp): the conversion policies
     * of the otp endpoint. A kind to plan with only: the plan
     * ag_limiter_plan makes is an AG_PLAN_FAILURE (record mode, the
     * stores' mode for a reported event), in which a conversion policy
     * counts a verification. */
    AG_PLAN_VERIFIED,
    /* The admin inspect: every policy a check would apply, planned as a
     * check, evaluated as a check would evaluate it, and nothing written
     * at all (no charge, block, level or expiry; the store's state is
     * left exactly as it was). Each result's remaining is what is left
     * now, before any attempt; allowed, whether the next attempt would
     * be; and blocked_ms and block_level are filled. On Redis Cluster each
     * slot group is peeked on its own: nothing to reserve or release. */
    AG_PLAN_PEEK,
};

/* Why a policy of the endpoint and lane was left out of a plan although
 * enabled: this instance lacks a network file it needs (a policy set
 * travels between hosts; the answer says so), or the files do not know
 * the request's address (its country or ASN), which no shared "unknown"
 * key may stand in for. */
enum ag_skip_why { AG_SKIP_NOT_LOADED, AG_SKIP_ADDRESS_UNKNOWN };
/* Skips a plan names (the first ones; skipped_more counts the rest). */
#define AG_PLAN_SKIPS_MAX 32

/* One skip. NOT_LOADED's file is ag_limiter_net_missing's of the policy
 * and the plan's net.avail. */
struct ag_plan_skip {
    const struct ag_policy *policy; /* borrowed from the set */
    enum ag_skip_why why;
};

struct ag_plan {
    enum ag_plan_kind kind;
    bool trusted; /* the lane it was planned for */
    size_t n;
    struct ag_limit_op ops[AG_PLAN_OPS];
    /* AG_PLAN_FAILURE only, and set by whoever makes one (the login
     * report; ag_limiter_plan clears them): the keyed digest of the
     * user and the password fingerprint ("" for none: every failure
     * charges), the lane's set of the last AG_FP_KEEP (AG_FP_KEY_PREFIX),
     * and how long one is remembered. A failure whose digest is in the set
     * charges no policy. Stores read them in no other plan. */
    char fp[AG_DIGEST_HEX + 1];
    char fp_key[AG_STORE_KEY_MAX];
    uint32_t fp_window_s;
    /* The check's nonce, unique per check across every instance (a
     * sliding log's member is the nonce): "" for the store to make one,
     * as it does for checks, failures and clears. An AG_PLAN_RESERVE and
     * its AG_PLAN_RELEASE must both carry the same caller-chosen one (a
     * store refuses either without), or the release could not find the
     * log members its reserve added. ag_limiter_plan clears it. */
    char nonce[AG_NONCE_MAX];
    /* Send ASKING first, on the same connection: a Redis Cluster ASK
     * redirected this plan's slot to the node it is sent to, this once. */
    bool asking;
    /* The request's ref (ag_request), for the events the plan's denials
     * raise; "" for none. */
    char ref[AG_REF_MAX + 1];
    /* The policies ag_limiter_plan and ag_limiter_plan_signals left out
     * for the network files (struct ag_plan_skip): the first
     * AG_PLAN_SKIPS_MAX, and the rest counted by why. Stores never read
     * them. */
    struct ag_plan_skip skipped[AG_PLAN_SKIPS_MAX];
    size_t nskipped;          /* of skipped[] */
    uint32_t skipped_more[2]; /* by enum ag_skip_why */
    /* What the network files saw of the request's address (ag_request),
     * for the log lines and events its denials raise. */
    struct ag_request_net net;
    /* A check or reserve only: the history to read beside it, or NULL
     * (ag_limiter_plan clears it). Not owned. */
    struct ag_plan_history *history;
    /* A login check's risk signals once judged (bit 1u << enum
     * ag_signal), for its log lines; 0 until then. Stores never read
     * it. */
    unsigned risk;
};

/* A user's history (ag_history) for the store to read in the same call
 * as a check's policies (lua/check.lua's "+h" modes): the caller sets
 * key; a store that read it sets read, the text (len bytes; 0: none
 * kept) and its clock at the check. A store that cannot (the in-process
 * one, a Cluster check none of whose slots is the key's) leaves read
 * false. */
struct ag_plan_history {
    char key[AG_STORE_KEY_MAX];
    bool read;
    size_t len;
    char text[AG_HISTORY_TEXT_MAX];
    uint64_t now_us;
};

/* What one policy said about one check. */
struct ag_limit_result {
    bool allowed;
    uint32_t remaining;      /* requests left in the window after this one */
    uint64_t retry_after_ms; /* denied: until an attempt can be allowed */
    uint64_t reset_after_ms; /* until the window holds nothing again */
    /* AG_PLAN_RESERVE: what undoes this policy's charge, passed back to
     * its AG_PLAN_RELEASE; 0 if it was not charged (denied, charge 0, a
     * shadow policy that denied), which is then not released. Opaque to
     * the caller. 0 after any other plan. */
    uint64_t undo;
    /* AG_PLAN_PEEK: the policy's running block, its milliseconds left (0:
     * none), and its block level, the blocks in a row so far (0 unless
     * its blocks grow, or once the row is over). 0 after any other
     * plan. */
    uint64_t blocked_ms;
    uint32_t block_level;
};

struct ag_decision {
    bool allowed;
    int denied_by;          /* plan index of the reported denial, or -1 */
    enum ag_action action;  /* denied: what the reported policy asks */
    uint32_t retry_after_s; /* denied: whole seconds, at least 1 */
    int tightest;           /* plan index for X-RateLimit-*, or -1 */
};

/* The keyed digests of one request's identifiers, each computed the first
 * time a check needs it (a list match, a one-part key, a distinct member)
 * and then reused: a keyed BLAKE2b is one of the larger costs of a check.
 * Borrows h and req, which must outlive it; one per check, one thread. */
struct ag_digests {
    const struct ag_hasher *hasher;
    const struct ag_request *req;
    /* Keys name their digest as a Redis Cluster hash tag,
     * "ag:<policy>:{<digest>}", so that a policy's state, block and level
     * keys share a slot, and so do all the policies of one identifier.
     * false: "ag:<policy>:<digest>". */
    bool tagged;
    unsigned done; /* bit (1u << kind) per digest computed */
    char hex[AG_KEY_COUNT][AG_DIGEST_HEX + 1];
};

void ag_digests_init(struct ag_digests *d, const struct ag_hasher *h,
                     const struct ag_request *req, bool tagged);
/* The digest of the request's identifier of kind (ag_identity_digest), or
 * NULL if the request lacks it. Valid as long as d is. */
const char *ag_digests_get(struct ag_digests *d, enum ag_key_kind kind);

/* Builds the plan of kind for d's request from the set's enabled policies
 * of its endpoint, in the set's order. The plan borrows policies from set,
 * which must outlive it. Returns AG_ETOOBIG if more than AG_PLAN_MAX
 * apply. */
/* The clear a verified OTP code makes (an AG_PLAN_SUCCESS): the enabled
 * otp_verify policies of every lane whose key holds the phone and the user
 * or the trusted device of d's request (/report-otp's), so that a user who
 * proves each code is never locked out by their own logins. Never those
 * keyed on the phone without either: they count an attacker's guesses at
 * that number too, and a verified code of the real user must not reset
 * them. Returns AG_ETOOBIG if more than AG_PLAN_MAX apply. */
int ag_limiter_plan_verified_clear(const struct ag_ruleset *set,
                                   struct ag_digests *d, struct ag_plan *plan);

int ag_limiter_plan(const struct ag_ruleset *set, enum ag_plan_kind kind,
                    struct ag_digests *d, struct ag_plan *plan);

/* Fills op for one policy p and d's request as ag_limiter_plan would;
 * false if the request lacks an identifier p's key needs. */
bool ag_limiter_plan_policy(const struct ag_policy *p, enum ag_plan_kind kind,
                            struct ag_digests *d, struct ag_limit_op *op);

/* The signal policies (AG_ALG_SIGNAL) that judge d's request when
 * planned as plan (a check or a peek; any other kind has none): those of
 * its endpoint and lane whose signal it carries (a computed one: its
 * address is in one of the policy's lists, or its country one of the
 * policy's countries) and whose key it can fill, enabled, in the set's
 * order, into ops (AG_SIGNALS_MAX of them), and their count into *n. One
 * that needs a network file or a fact of the address the service lacks
 * is skipped and added to plan's skips. Each trips, so each is planned as any
 * policy (its key names the digest a log line shows, never a store key; a
 * challenge the request passed is waived), but charges nothing: no store
 * ever sees one. ops borrow from set. AG_ETOOBIG if more than
 * AG_SIGNALS_MAX apply, or they and the plan's more than AG_PLAN_MAX. */
int ag_limiter_plan_signals(const struct ag_ruleset *set, struct ag_plan *plan,
                            struct ag_digests *d, struct ag_limit_op *ops,
                            size_t *n);

/* The network file p needs that avail lacks (avail NULL: none loaded),
 * as the flag that loads it: "--geoip-file" for a country (an ip_country
 * key or signal), "--asn-file" for an asn key, or "--ip-list" with *list
 * the first of its lists not loaded; NULL when it lacks none. */
const char *ag_limiter_net_missing(const struct ag_policy *p,
                                   const struct ag_net_avail *avail,
                                   const char **list);

/* The signal policies on a history signal that apply to the request of d
 * (its endpoint and lane; none for a trusted device, never judged by its
 * places), tripped or not, into ops (AG_SIGNALS_MAX) and *n: once the
 * history is read, ag_limiter_keep_tripped keeps those its signals trip.
 * AG_ETOOBIG past AG_SIGNALS_MAX. */
int ag_limiter_plan_history_signals(const struct ag_ruleset *set,
                                    struct ag_plan *plan, struct ag_digests *d,
                                    struct ag_limit_op *ops, size_t *n);
/* Keeps, in order, the ops whose signal is in signals (bit 1u << enum
 * ag_signal); returns how many. */
size_t ag_limiter_keep_tripped(struct ag_limit_op *ops, size_t n,
                               unsigned signals);
/* Does one of the n signal ops deny the check (an enforcing one whose
 * action is deny)? A check one denies is denied whatever the store says,
 * and charges nothing (ag_limiter_charge_nothing). A signal that
 * challenges does not: the attempt goes on to a second factor, so the
 * store charges and judges it as any check (a challenge is still an
 * attempt, and a limit it uses up denies: deny beats challenge); nor
 * does a shadow one or a challenge the request passed (waived). */
bool ag_limiter_signals_deny(const struct ag_limit_op *ops, size_t n);

/* Makes every op of plan charge nothing: the plan of a check a signal
 * denies (ag_limiter_signals_deny), which the store then only judges (a
 * denied check records nothing, as when one of the store's policies
 * denies it). */
void ag_limiter_charge_nothing(struct ag_plan *plan);

/* Adds the n signal ops of plan_signals to plan and their results
 * (tripped: not allowed, nothing remaining, nothing to wait for) to res,
 * the plan's results, keeping the set's order, once the store's results
 * are in; ag_limiter_decide then combines them all. plan->n + n is at
 * most AG_PLAN_MAX (ag_limiter_plan_signals saw to it). */
void ag_limiter_add_signals(struct ag_plan *plan, struct ag_limit_result *res,
                            const struct ag_limit_op *ops, size_t n);

/* Does p count and judge in the lane a request of trust trusted is in
 * (its applies_to)? The plans' rule, and the shields'. */
bool ag_limiter_in_lane(const struct ag_policy *p, bool trusted);

/* Combines per-policy results (plan->n of them) into the decision. When
 * several policies deny, a deny policy is reported before a challenge one
 * (a challenge cannot lift a denial), then the longest wait. The
 * tightest policy is the denying one, else the enforcing policy with the
 * fewest requests remaining (ties: the smaller limit, then plan order). */
void ag_limiter_decide(const struct ag_plan *plan,
                       const struct ag_limit_result *res,
                       struct ag_decision *d);

/* The digest of d's request that its check's answers are about, which a
 * challenge nonce is bound to (ag_challenge.h): the user's, or on an OTP
 * endpoint without a user the phone's; NULL if it has neither. */
const char *ag_digests_subject(struct ag_digests *d);

/* Appends to plan the op that charges a challenge nonce of id id_hex
 * once (ag_challenge_policy, "ag:challenge_pass:<id>", or "...:{<id>}"
 * when tagged, as a policy keyed on it would be). AG_OK, or AG_ETOOBIG
 * when the plan is full. */
int ag_limiter_plan_pass(struct ag_plan *plan, const char *id_hex, bool tagged);

/* Writes op's block key (its key, then AG_BLOCK_SUFFIX) into out, which
 * holds AG_STORE_KEY_MAX bytes; returns its length. */
size_t ag_limiter_block_key(const struct ag_limit_op *op, char *out);

/* Writes op's block level key (its key, then AG_LEVEL_SUFFIX) into out,
 * which holds AG_STORE_KEY_MAX bytes; returns its length. */
size_t ag_limiter_level_key(const struct ag_limit_op *op, char *out);

/* Writes op's lockout marker key (its key, then AG_MARK_SUFFIX) into out,
 * which holds AG_STORE_KEY_MAX bytes; returns its length. */
size_t ag_limiter_mark_key(const struct ag_limit_op *op, char *out);

/* Whole seconds for a millisecond wait: rounded up, at least 1. */
uint32_t ag_limiter_seconds(uint64_t ms);

#endif
