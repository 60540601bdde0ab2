/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service's internals, shared by its three files and by no other
 * module: ag_service.c is the core (the service, its ruleset, lanes and
 * plans, the storage of checks, the queue of resets the store missed);
 * ag_service_check.c the public path (checks and reports) and
 * ag_service_admin.c the support desk's (resets, inspects) are built on
 * it. Calls go one way, from the two paths into the core, never back,
 * and the names carry a double underscore, as libuv marks its internal
 * ones, so that no other module mistakes them for the API.
 *
 * Thread-safety is ag_service.h's: everything here may be called from
 * many threads at once, except what one check (struct ag_check) owns.
 */
#ifndef AG_SERVICE_IMPL_H
#define AG_SERVICE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ag_challenge.h"
#include "ag_device.h"
#include "ag_events.h"
#include "ag_limiter.h"
#include "ag_network.h"
#include "ag_otp_stats.h"
#include "ag_request.h"
#include "ag_service.h"
#include "ag_shields.h"
#include "ag_store.h"
#include "ag_verdict.h"

/* A reset the store could not take yet: its key and the policy it was
 * planned from (a copy: the ruleset may change meanwhile). */
struct ag_service__pending {
    struct ag_policy policy;
    char key[AG_STORE_KEY_MAX];
};

struct ag_service {
    struct ag_service_opts o;
    struct ag_otp_stats stats; /* the conversion figures (ag_otp_stats) */
    pthread_mutex_t lock;      /* guards set */
    struct ag_ruleset *set;    /* NULL until the first load */
    /* The set's shields, swapped with it under the lock. */
    struct ag_shield_table *shield_table;
    struct ag_shields *shields;
    struct ag_overview *overview; /* owned */
    /* Resets the store missed. The lock guards the queue only, never a
     * store call; one thread at a time (flushing) sends them. */
    pthread_mutex_t pending_lock;
    atomic_size_t npending; /* read without the lock on every check */
    atomic_bool flushing;
    struct ag_service__pending pending[AG_SERVICE_PENDING_RESETS];
    atomic_size_t waiting; /* checks the store holds, not yet resumed */
    struct ag_device_key device_key; /* derived from the hasher's key */
    uint32_t device_ttl_s;
    struct ag_challenge_key challenge_key; /* likewise */
    /* When a check last passed with true (CLOCK_MONOTONIC ms; 0: never),
     * for the deprecation line, said once a minute at most. */
    atomic_uint_fast64_t pass_true_said_ms;
    /* The network files loaded (o.network's), as every request carries
     * them (ag_request_net), and the list names it points to. */
    struct ag_net_avail net_avail;
    const char *net_lists[AG_NETWORK_LISTS_MAX];
};

/* A check between its two halves: the plan for the store, and where the
 * store's results go. An inspect keeps its plan in one too. Once decided,
 * its verdict borrows from it (struct ag_verdict's owner). */
struct ag_check {
    struct ag_service *svc;
    struct ag_request_net net; /* what the network files saw: the answer's */
    enum ag_endpoint endpoint;
    uint64_t start;         /* microseconds, for the latency histogram */
    struct ag_ruleset *set; /* the plan borrows from it */
    struct ag_shield_table *shields; /* set's: a reference */
    const struct ag_check_waiter *waiter;
    /* Who has the check while the store holds it (enum
     * ag_service__check_state): the waiter may go away meanwhile. */
    atomic_int state;
    int store_rc;
    /* The deny cache's clock and epoch, read before the store call was
     * sent (ag_deny_cache.h). */
    uint64_t sent_us;
    uint64_t epoch;
    char country[AG_COUNTRY_MAX];        /* otp: the phone's calling code */
    char phone_prefix[AG_PHONE_MAX + 1]; /* otp: its number range */
    struct ag_plan plan;
    struct ag_limit_result res[AG_PLAN_OPS];
    /* The signal policies that judge it (ag_limiter_plan_signals): kept
     * apart from the plan while the store has it, which never sees one,
     * and added to it before the plan is decided (then nsignals is 0). */
    struct ag_limit_op signals[AG_SIGNALS_MAX];
    size_t nsignals;
    /* The digest a challenge nonce of its answer is bound to
     * (ag_challenge_subject; "" if none), set by a check, whose answer
     * then carries one if it asks for a challenge. An inspect leaves it
     * "". */
    char subject[AG_DIGEST_HEX + 1];
    /* The user's usual places (ag_service_risk.c), a login check's: the
     * history the store reads beside the policies (plan.history points
     * here when it is wanted), what this login brings to it, the risk
     * signals known before it is read (a listed address, a breached
     * password), the signal policies on its signals (tripped once it is
     * read), a raised risky-scoped shield left to judge until then, and
     * the risk judged. */
    struct ag_plan_history hist;
    struct ag_login_place at;
    unsigned early_risk;
    struct ag_limit_op late[AG_SIGNALS_MAX];
    size_t nlate;
    const struct ag_shield *risky;
    uint64_t risky_ms;
    bool challenge_passed;
    struct ag_verdict_risk risk;
};

/* A check the store holds is WAITING; its answer moves it to RESUMING
 * while the waiter is resumed, then ANSWERED. A waiter that goes away
 * while it waits makes it ABANDONED, and the answer frees it. */
enum ag_service__check_state {
    AG_CHECK_WAITING,
    AG_CHECK_RESUMING,
    AG_CHECK_ANSWERED,
    AG_CHECK_ABANDONED,
};

/* A check's storage, uninitialised, or NULL; give it back with
 * ag_service__check_free (NULL allowed), which does not touch its set. */
struct ag_check *ag_service__check_new(void);
void ag_service__check_free(struct ag_check *c);

/* Puts req in the trusted lane if its device token verifies for its user
 * (d holds req's digests). */
void ag_service__trust_device(struct ag_service *s, struct ag_request *req,
                              struct ag_digests *d);

/* Decides the lane of req (whose digests d holds) and, for a check or an
 * inspect, whether the challenge it says it passed is a pass (a nonce,
 * verified: its single use then joins the plan; true, while lenient),
 * then plans it against the active set: AG_OK, with *set the reference
 * the plan borrows from (unref it when done) and, if shields is not
 * NULL, *shields a reference to that set's shields
 * (ag_shield_table_unref); or an error, *set (and *shields) NULL and v
 * the unavailable verdict saying why. */
int ag_service__plan(struct ag_service *s, enum ag_plan_kind kind,
                     struct ag_request *req, struct ag_digests *d,
                     struct ag_ruleset **set, struct ag_shield_table **shields,
                     struct ag_plan *p, struct ag_verdict *v);

/* Plans c's signal policies for req (whose digests d holds) beside c's
 * plan, which is planned: AG_OK; or AG_ETOOBIG, v the unavailable verdict
 * saying why. */
/* Looks the request's ip up in the network files, for the policies keyed
 * on what they say and the answer (req->net); no lookup without files or
 * an ip. */
void ag_service__look_up_network(struct ag_service *s, struct ag_request *req);
int ag_service__plan_signals(struct ag_check *c, struct ag_digests *d,
                             struct ag_verdict *v);

/* The allow or deny entry that settles the request, if any. */
const struct ag_list_entry *
ag_service__match_lists(const struct ag_ruleset *set, struct ag_digests *d);

/* A raised shield of c's table that judges req (ag_shields_judge), unless
 * a challenge req passed waives it: c's plan becomes that shield's op
 * alone, denied for as long as it holds, with its result, and true. With
 * count (a check, not an inspect) the shield's judgement is counted in
 * the metrics and the overview, a shadow or waived one's too; those
 * answer nothing, false. */
bool ag_service__shielded(struct ag_service *s, struct ag_check *c,
                          const struct ag_request *req, bool count);
/* ag_service__shielded's answer once sh (raised, holding ms) judges c, in
 * the lane trusted, passed: a challenge of c's was passed. */
bool ag_service__shield_answer(struct ag_service *s, struct ag_check *c,
                               const struct ag_shield *sh, uint64_t ms,
                               bool passed, bool count);

/* The user's usual places (ag_service_risk.c). Before the store: wants
 * the history of req's user read beside c's plan when it has anything to
 * judge (a login with a user, network files, --history-days), and plans
 * the signal policies on its signals; AG_ETOOBIG (v unavailable) past
 * AG_SIGNALS_MAX of them. */
int ag_service__risk_plan(struct ag_service *s, struct ag_check *c,
                          const struct ag_request *req, struct ag_digests *d,
                          struct ag_verdict *v);
/* After it: judges c's risk from what the store read (none while it is
 * out: c->risk.judged false), counts it (asked: the store was asked for
 * the history, and an unread one is counted as such), and adds the
 * signal policies it trips to c's signals. Nothing for a check whose
 * history is not kept. */
void ag_service__risk_judge(struct ag_service *s, struct ag_check *c,
                            bool asked);
/* Does c carry a signal that a risky-scoped shield challenges, or was its
 * history not read (the shield then acts as untrusted-scoped)? */
bool ag_service__risky(const struct ag_check *c);
/* A login success's lesson to its user's history, and the events of a
 * new country or an impossible journey (ag_service_risk.c). proven: a
 * trusted device or a passed challenge vouches for it. */
void ag_service__risk_teach(struct ag_service *s, const struct ag_request *req,
                            struct ag_digests *d, bool proven);

/* A login event of type naming req's user by its keyed digest (that in
 * the keys of the policies keyed on the user alone), with req's ref and
 * network: account_recovered, breached_password_login, the new-place
 * events. */
void ag_service__user_event(struct ag_event *e, enum ag_event_type type,
                            const struct ag_request *req, struct ag_digests *d);

/* The keys of p were cleared (a reset, a successful login): dropped from
 * this instance's deny cache, and, when the store took the clear (told),
 * from every other instance's through the store. */
void ag_service__cleared(struct ag_service *s, const struct ag_plan *p,
                         bool told);

/* Queues the cleared op for the store; false if the queue is full. */
bool ag_service__queue_reset(struct ag_service *s,
                             const struct ag_limit_op *op);
/* Sends the queued resets, if any, before this instance asks the store
 * to judge anything. */
void ag_service__send_resets(struct ag_service *s);

#endif
