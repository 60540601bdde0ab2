/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_shields.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ag_clock.h"
#include "ag_log.h"
#include "ag_redis_surge.h"
#include "ag_shields_impl.h"
#include "ag_store.h"

static uint64_t realtime_ms(void *ctx)
{
    (void)ctx;
    return ag_clock_wall_ms();
}

static uint64_t wall_ms(const struct ag_shields *sh)
{
    return sh->o.clock_ms(sh->o.clock_ctx);
}

int ag_shields_new(const struct ag_shields_opts *o, struct ag_shields **out)
{
    struct ag_shields *sh = calloc(1, sizeof *sh);
    if (!sh)
        return AG_ENOMEM;
    sh->o = *o;
    if (!sh->o.clock_ms) {
        sh->o.clock_ms = realtime_ms;
        sh->o.clock_ctx = NULL;
    }
    pthread_mutex_init(&sh->lock, NULL);
    ag_clock_cond_init(&sh->wake);
    *out = sh;
    return AG_OK;
}

void ag_shields_free(struct ag_shields *sh)
{
    if (!sh)
        return;
    if (sh->started) {
        pthread_mutex_lock(&sh->lock);
        sh->stopping = true;
        pthread_cond_signal(&sh->wake);
        pthread_mutex_unlock(&sh->lock);
        pthread_join(sh->thread, NULL);
    }
    ag_shield_table_unref(sh->table);
    pthread_cond_destroy(&sh->wake);
    pthread_mutex_destroy(&sh->lock);
    free(sh);
}

struct ag_shield_table *ag_shield_table_ref(struct ag_shield_table *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void ag_shield_table_unref(struct ag_shield_table *t)
{
    if (t &&
        atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) {
        ag_ruleset_unref(t->set);
        free(t);
    }
}

/* "ag:<policy>:<digest of the site>" (tagged: "{<digest>}"), as a plan's
 * key for a policy keyed on ["site"] would be. */
static void shield_key(const struct ag_shields *sh, const struct ag_policy *p,
                       char *out)
{
    char digest[AG_DIGEST_HEX + 1];
    ag_identity_digest(sh->o.hasher, AG_KEY_SITE, "site", digest);
    snprintf(out, AG_STORE_KEY_MAX,
             sh->o.tagged_keys ? "ag:%s:{%s}" : "ag:%s:%s", p->name, digest);
}

/* The shield's shape: what it counts and its window, the parameters its
 * learned state belongs to ("login.untrusted.failures.all.w60",
 * "login.untrusted.failures.unknown_user.w60"). Its limit, factor,
 * baseline period and hold are no part of it: an edit of those keeps
 * what the shield learned. */
static void shape_of(const struct ag_policy *p, char *out)
{
    static const char *const lanes[] = {
        [AG_LANE_ALL] = "all",
        [AG_LANE_TRUSTED] = "trusted",
        [AG_LANE_UNTRUSTED] = "untrusted",
    };
    char reasons[64] = "all";
    /* Every reason named is every reason: the same shape. */
    unsigned all = (1u << AG_REASON_COUNT) - 1;
    if (p->reasons && (p->reasons & all) != all) {
        size_t n = 0;
        for (unsigned r = 0; r < AG_REASON_COUNT; r++)
            if (p->reasons & 1u << r)
                n += (size_t)snprintf(reasons + n, sizeof reasons - n, "%s%s",
                                      n ? "+" : "",
                                      ag_reason_name((enum ag_reason)r));
    }
    snprintf(out, AG_SURGE_SHAPE_MAX + 1, "%s.%s.%s.%s.w%u",
             ag_endpoint_name(p->endpoint), lanes[p->applies_to],
             p->counts == AG_COUNTS_FAILURES ? "failures" : "attempts", reasons,
             (unsigned)p->window_s);
}

/* The entry of the current table that e continues: the same policy name
 * and the same shape (another shape has a state of its own), or NULL. */
static struct ag_shield *predecessor(struct ag_shield_table *old,
                                     const struct ag_shield *e)
{
    for (size_t i = 0; old && i < old->n; i++) {
        struct ag_shield *o = &old->shields[i];
        if (strcmp(o->policy->name, e->policy->name) == 0 &&
            strcmp(o->view.shape, e->view.shape) == 0)
            return o;
    }
    return NULL;
}

static void init_entry(struct ag_shields *sh, struct ag_shield *e,
                       const struct ag_policy *p, uint64_t now_ms)
{
    e->policy = p;
    ag_surge_params_of(p, &e->params);
    shield_key(sh, p, e->key);
    atomic_init(&e->count, 0);
    atomic_init(&e->attempts, 0);
    atomic_init(&e->passes, 0);
    atomic_init(&e->raised, false);
    atomic_init(&e->until_mono_ms, 0);
    ag_surge_init(&e->local, &e->params, now_ms);
    memset(&e->view, 0, sizeof e->view);
    snprintf(e->view.name, sizeof e->view.name, "%s", p->name);
    shape_of(p, e->view.shape);
    e->view.state = e->local;
    e->view.threshold = ag_surge_threshold(&e->local, &e->params);
    e->view.young = true;
    e->view.now_ms = now_ms;
    e->view.source = sh->o.store ? AG_SHIELD_SHARED : AG_SHIELD_LOCAL;
    e->said_local = false;
    e->known_version = 0;
    e->own_until_ms = e->own_since_ms = 0;
    e->shape_since_mono = ag_clock_mono_ms();
    e->disagree_logged_mono = 0;
}

/* A new entry of a new shape (a window or what it counts edited) whose
 * shield was raised under its old shape keeps the raise for what is left
 * of its hold: locally at once, and in the new shape's shared state with
 * its first step, as a raise of this instance's own (unless the operator
 * switched that state meanwhile). An edit during an attack drops no
 * shield. Under the lock. */
static void carry_raise(struct ag_shields *sh, struct ag_shield *e,
                        const struct ag_shield_table *old, uint64_t now)
{
    (void)sh;
    for (size_t i = 0; old && i < old->n; i++) {
        const struct ag_shield *o = &old->shields[i];
        if (strcmp(o->policy->name, e->policy->name) != 0)
            continue;
        if (strcmp(o->view.shape, e->view.shape) == 0 ||
            !o->view.state.raised || e->view.state.raised)
            return;
        const struct ag_surge_state *was = &o->view.state;
        uint64_t left =
            was->until_ms > o->view.now_ms ? was->until_ms - o->view.now_ms : 1;
        ag_surge_follow(&e->local, &e->params, now, was, o->view.now_ms);
        e->local.switch_version = 0;
        e->own_since_ms = now;
        e->own_until_ms = now + left;
        e->view.state = e->local;
        e->view.now_ms = now;
        e->view.source = o->view.source;
        e->view.stepped = true;
        atomic_store(&e->raised, true);
        atomic_store(&e->until_mono_ms, ag_clock_mono_ms() + left);
        return;
    }
}

struct ag_shield_table *ag_shields_table_new(struct ag_shields *sh,
                                             struct ag_ruleset *set)
{
    size_t n = 0;
    for (size_t i = 0; set && i < set->count; i++)
        if (set->policies[i].algorithm == AG_ALG_SURGE &&
            set->policies[i].enabled)
            n++;
    struct ag_shield_table *t =
        calloc(1, sizeof *t + n * sizeof(struct ag_shield));
    if (!t)
        return NULL;
    atomic_init(&t->refs, 1);
    /* Its entries borrow their policies from set; a table of none
     * borrows nothing. */
    t->set = n ? ag_ruleset_ref(set) : NULL;
    uint64_t now = wall_ms(sh);
    pthread_mutex_lock(&sh->lock);
    for (size_t i = 0; set && i < set->count; i++) {
        const struct ag_policy *p = &set->policies[i];
        if (p->algorithm != AG_ALG_SURGE || !p->enabled)
            continue;
        init_entry(sh, &t->shields[t->n++], p, now);
    }
    pthread_mutex_unlock(&sh->lock);
    return t;
}

/* What the published table's entries counted and knew goes on in t's,
 * taken when t replaces it (under sh->lock): a switch or a step made on
 * the old table after t was made is not lost. A count that lands on an
 * old entry after this is lost, which a count may be. */
static void inherit(struct ag_shields *sh, struct ag_shield_table *t)
{
    uint64_t now = wall_ms(sh);
    for (size_t i = 0; t && i < t->n; i++) {
        struct ag_shield *e = &t->shields[i];
        struct ag_shield *o = predecessor(sh->table, e);
        if (!o)
            continue;
        atomic_store(&e->count, atomic_exchange(&o->count, 0));
        atomic_store(&e->attempts, atomic_exchange(&o->attempts, 0));
        atomic_store(&e->passes, atomic_exchange(&o->passes, 0));
        atomic_store(&e->raised, atomic_load(&o->raised));
        atomic_store(&e->until_mono_ms, atomic_load(&o->until_mono_ms));
        e->local = o->local;
        e->view.state = o->view.state;
        e->view.now_ms = o->view.now_ms;
        e->view.source = o->view.source;
        e->view.stepped = o->view.stepped;
        e->view.others = o->view.others;
        memcpy(e->view.other, o->view.other, sizeof e->view.other);
        e->view.disagreements = o->view.disagreements;
        e->said_local = o->said_local;
        e->known_version = o->known_version;
        e->own_until_ms = o->own_until_ms;
        e->own_since_ms = o->own_since_ms;
        e->shape_since_mono = o->shape_since_mono;
        e->disagree_logged_mono = o->disagree_logged_mono;
        e->view.threshold = ag_surge_threshold(&e->view.state, &e->params);
        e->view.young = ag_surge_young(&e->view.state, &e->params);
    }
    for (size_t i = 0; t && i < t->n; i++)
        carry_raise(sh, &t->shields[i], sh->table, now);
}

void ag_shields_publish(struct ag_shields *sh, struct ag_shield_table *t)
{
    ag_shield_table_ref(t);
    pthread_mutex_lock(&sh->lock);
    inherit(sh, t);
    struct ag_shield_table *old = sh->table;
    sh->table = t;
    ag_shields__published(sh, old, t);
    pthread_mutex_unlock(&sh->lock);
    ag_shield_table_unref(old);
}

void ag_shields_count_check(struct ag_shield_table *t,
                            enum ag_endpoint endpoint, bool trusted,
                            bool passed)
{
    for (size_t i = 0; t && i < t->n; i++) {
        struct ag_shield *e = &t->shields[i];
        if (e->policy->endpoint != endpoint ||
            !ag_limiter_in_lane(e->policy, trusted))
            continue;
        if (passed) {
            atomic_fetch_add_explicit(&e->passes, 1, memory_order_relaxed);
            continue;
        }
        atomic_fetch_add_explicit(&e->attempts, 1, memory_order_relaxed);
        if (e->policy->counts == AG_COUNTS_ATTEMPTS)
            atomic_fetch_add_explicit(&e->count, 1, memory_order_relaxed);
    }
}

void ag_shields_count_failure(struct ag_shield_table *t, bool trusted,
                              enum ag_reason reason)
{
    for (size_t i = 0; t && i < t->n; i++) {
        struct ag_shield *e = &t->shields[i];
        const struct ag_policy *p = e->policy;
        if (p->endpoint != AG_EP_LOGIN || p->counts != AG_COUNTS_FAILURES ||
            !ag_limiter_in_lane(e->policy, trusted) ||
            (p->reasons && !(p->reasons & 1u << reason)))
            continue;
        atomic_fetch_add_explicit(&e->count, 1, memory_order_relaxed);
    }
}

/* Is a before b as the shield that judges: enforcing before shadow, deny
 * before challenge, then the longer hold. */
static bool judges_before(const struct ag_shield *a, uint64_t a_ms,
                          const struct ag_shield *b, uint64_t b_ms)
{
    bool a_shadow = a->policy->mode == AG_MODE_SHADOW;
    bool b_shadow = b->policy->mode == AG_MODE_SHADOW;
    if (a_shadow != b_shadow)
        return !a_shadow;
    if (a->policy->action != b->policy->action)
        return a->policy->action == AG_ACTION_DENY;
    return a_ms > b_ms;
}

const struct ag_shield *ag_shields_judge(struct ag_shield_table *t,
                                         enum ag_endpoint endpoint,
                                         bool trusted, uint64_t *retry_ms)
{
    return ag_shields_judge_scope(t, endpoint, trusted, AG_SHIELD_SCOPE_ANY,
                                  retry_ms);
}

const struct ag_shield *ag_shields_judge_scope(struct ag_shield_table *t,
                                               enum ag_endpoint endpoint,
                                               bool trusted,
                                               enum ag_shield_scope scope,
                                               uint64_t *retry_ms)
{
    const struct ag_shield *best = NULL;
    uint64_t best_ms = 0, now = 0;
    *retry_ms = 0;
    for (size_t i = 0; t && i < t->n; i++) {
        const struct ag_shield *e = &t->shields[i];
        if (!atomic_load_explicit(&e->raised, memory_order_relaxed) ||
            e->policy->endpoint != endpoint ||
            !ag_limiter_in_lane(e->policy, trusted) ||
            (scope != AG_SHIELD_SCOPE_ANY &&
             e->policy->scope_risky != (scope == AG_SHIELD_SCOPE_RISKY)))
            continue;
        if (!now)
            now = ag_clock_mono_ms();
        uint64_t until =
            atomic_load_explicit(&e->until_mono_ms, memory_order_relaxed);
        /* Until the next sync says otherwise it holds: at least 1 ms. */
        uint64_t ms = until > now ? until - now : 1;
        if (!best || judges_before(e, ms, best, best_ms)) {
            best = e;
            best_ms = ms;
        }
    }
    *retry_ms = best_ms;
    return best;
}

/* What checks read of e: raised, until when on the monotonic clock. */
static void publish_state(struct ag_shield *e, const struct ag_surge_state *st,
                          uint64_t now_ms)
{
    uint64_t left =
        st->raised && st->until_ms > now_ms ? st->until_ms - now_ms : 0;
    atomic_store_explicit(&e->until_mono_ms, ag_clock_mono_ms() + left,
                          memory_order_relaxed);
    atomic_store_explicit(&e->raised, st->raised, memory_order_release);
}

/* Runs call on e's shared state: AG_OK and *a, or the call's error. */
static int shared(struct ag_shields *sh, struct ag_shield *e,
                  const struct ag_redis_surge_call *call,
                  struct ag_redis_surge_answer *a)
{
    return ag_redis_surge(sh->o.store, e->key, e->view.shape, &e->params, call,
                          a);
}

/* Steps e's local state by call at now: what changed, and whether this
 * instance's own counts raised or renewed it (by a step). */
static unsigned step_local(struct ag_shield *e,
                           const struct ag_redis_surge_call *call, uint64_t now,
                           bool *own)
{
    struct ag_surge_state *st = &e->local;
    uint64_t until = st->raised ? st->until_ms : 0;
    unsigned changed = 0;
    *own = false;
    switch (call->op) {
    case AG_SURGE_OP_STEP:
        changed = ag_surge_step(st, &e->params, now,
                                &(struct ag_surge_counts){
                                    call->count, call->attempts, call->passes},
                                NULL);
        *own = st->raised && !st->by_operator && st->until_ms > until;
        break;
    case AG_SURGE_OP_RAISE:
        changed = ag_surge_raise(st, &e->params, now, call->for_ms);
        break;
    case AG_SURGE_OP_LOWER:
        changed = ag_surge_lower(st, &e->params, now, call->for_ms);
        break;
    }
    return changed;
}

/* Another shape of e's shield in use elsewhere: counted, and said at most
 * once a minute; this instance's own old shape, still fresh just after an
 * edit, is none. */
static void note_others(struct ag_shield *e,
                        const struct ag_redis_surge_answer *a)
{
    uint64_t mono = ag_clock_mono_ms();
    bool grace = mono - e->shape_since_mono < AG_SHIELDS_SHAPE_GRACE_MS;
    e->view.others = grace ? 0 : a->others;
    snprintf(e->view.other, sizeof e->view.other, "%s", grace ? "" : a->other);
    if (!e->view.others)
        return;
    e->view.disagreements++;
    if (e->disagree_logged_mono &&
        mono - e->disagree_logged_mono < AG_SHIELDS_DISAGREE_LOG_MS)
        return;
    e->disagree_logged_mono = mono;
    ag_log(AG_LOG_WARN, "shield_disagreement",
           "policy=%s shape=%s others=%llu other=%s instances use another "
           "configuration of this shield: each keeps its own state until "
           "they agree",
           e->policy->name, e->view.shape, (unsigned long long)a->others,
           a->other);
}

void ag_shields__steps(struct ag_shields *sh, struct ag_shield *e,
                       const struct ag_redis_surge_call *call)
{
    uint64_t now = wall_ms(sh);
    bool own;
    unsigned local_changed = step_local(e, call, now, &own);
    /* The operator's switch, even one Redis did not take, outranks what
     * this instance's own counts did meanwhile: none of it goes back. */
    if (call->op != AG_SURGE_OP_STEP)
        e->own_until_ms = e->own_since_ms = 0;
    /* A raise or renewal this instance's own counts made while Redis did
     * not answer goes back with the next step that reaches it, for what
     * is left of its hold, unless the operator switched meanwhile
     * (ag_surge_step's resume): the shared state saw none of the attack
     * meanwhile. A copy of the shared raise is no such thing. */
    struct ag_redis_surge_call shared_call = *call;
    if (call->op == AG_SURGE_OP_STEP && e->own_until_ms > now)
        shared_call.resume =
            (struct ag_surge_resume){.for_ms = e->own_until_ms - now,
                                     .known = e->known_version,
                                     .raised_at_ms = e->own_since_ms};
    struct ag_redis_surge_answer a;
    int rc = sh->o.store ? shared(sh, e, &shared_call, &a) : AG_EINVAL;
    /* A store without Redis (the in-process one) shares nothing: every
     * shield is this instance's own, and nothing is wrong. */
    if (rc == AG_EINVAL)
        sh->o.store = NULL;
    if (rc != AG_OK && own) {
        if (!e->own_until_ms)
            e->own_since_ms = now;
        e->own_until_ms = e->local.until_ms;
    }
    bool resumed = rc == AG_OK && (a.changed & AG_SURGE_RESUMED);
    enum ag_shield_source was = e->view.source;
    bool was_raised = e->view.state.raised;
    unsigned changed;
    if (rc == AG_OK) {
        e->own_until_ms = e->own_since_ms = 0;
        e->known_version = a.state.switch_version;
        ag_surge_follow(&e->local, &e->params, now, &a.state, a.now_ms);
        e->view.state = a.state;
        e->view.threshold = a.threshold;
        e->view.now_ms = a.now_ms;
        e->view.source = AG_SHIELD_SHARED;
        note_others(e, &a);
        changed = a.changed;
    } else {
        e->view.state = e->local;
        e->view.threshold = ag_surge_threshold(&e->local, &e->params);
        e->view.now_ms = now;
        e->view.source = AG_SHIELD_LOCAL;
        e->view.others = 0;
        e->view.other[0] = '\0';
        changed = local_changed;
    }
    e->view.young = ag_surge_young(&e->view.state, &e->params);
    /* Crossing between the shared state and this instance's own raises or
     * lowers the shield here: said once, by this instance. A shield that
     * never had the shared state (Redis not up yet at start) crosses
     * nothing when it first gets it. */
    bool cross = false;
    if (e->view.source == AG_SHIELD_LOCAL && was == AG_SHIELD_SHARED &&
        e->view.stepped && sh->o.store) {
        ag_log(AG_LOG_WARN, "shield_local",
               "policy=%s Redis does not answer: shielding from this "
               "instance's own counts",
               e->policy->name);
        e->said_local = cross = true;
    } else if (e->view.source == AG_SHIELD_SHARED && e->said_local) {
        ag_log(AG_LOG_INFO, "shield_shared",
               "policy=%s Redis answers again: shielding from every "
               "instance's counts",
               e->policy->name);
        e->said_local = false;
        cross = true;
    }
    if (cross) {
        changed &= AG_SURGE_LONG;
        if (e->view.state.raised && !was_raised)
            changed |= AG_SURGE_RAISED;
        else if (!e->view.state.raised && was_raised)
            changed |= AG_SURGE_LOWERED;
    }
    e->view.stepped = true;
    publish_state(e, &e->view.state, e->view.now_ms);
    ag_shields__observe(sh, e);
    /* A raise of this instance's own that went back to the shared state
     * is news to every other instance: said as a raise, resumed. */
    if (resumed)
        ag_shields__announce(sh, e, AG_SURGE_RAISED, AG_SHIELDS_RESUMED);
    else if (changed)
        ag_shields__announce(sh, e, changed,
                             call->op == AG_SURGE_OP_STEP
                                 ? AG_SHIELDS_BY_COUNTS
                                 : AG_SHIELDS_BY_OPERATOR);
}

void ag_shields_sync(struct ag_shields *sh)
{
    pthread_mutex_lock(&sh->lock);
    struct ag_shield_table *t = sh->table;
    for (size_t i = 0; t && i < t->n; i++) {
        struct ag_shield *e = &t->shields[i];
        struct ag_redis_surge_call call = {
            .op = AG_SURGE_OP_STEP,
            .count = atomic_exchange(&e->count, 0),
            .attempts = atomic_exchange(&e->attempts, 0),
            .passes = atomic_exchange(&e->passes, 0),
        };
        ag_shields__steps(sh, e, &call);
    }
    pthread_mutex_unlock(&sh->lock);
}

static void *sync_main(void *arg)
{
    struct ag_shields *sh = arg;
    pthread_mutex_lock(&sh->lock);
    while (!sh->stopping) {
        struct timespec at = ag_clock_deadline(sh->sync_ms);
        pthread_cond_timedwait(&sh->wake, &sh->lock, &at);
        if (sh->stopping)
            break;
        pthread_mutex_unlock(&sh->lock);
        ag_shields_sync(sh);
        pthread_mutex_lock(&sh->lock);
    }
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

int ag_shields_start(struct ag_shields *sh, unsigned sync_ms)
{
    sh->sync_ms = sync_ms ? sync_ms : AG_SHIELDS_SYNC_MS;
    if (pthread_create(&sh->thread, NULL, sync_main, sh) != 0)
        return AG_ENOMEM;
    sh->started = true;
    return AG_OK;
}

/* The current table's entry named name, under the lock; or NULL. */
static struct ag_shield *find(struct ag_shields *sh, const char *name)
{
    for (size_t i = 0; sh->table && i < sh->table->n; i++)
        if (strcmp(sh->table->shields[i].policy->name, name) == 0)
            return &sh->table->shields[i];
    return NULL;
}

/* Runs the operator's op on the named shield; a lower's for_ms of
 * UINT64_MAX is the shield's hold, told in *quiet_ms. */
static int switch_shield(struct ag_shields *sh, const char *name,
                         struct ag_redis_surge_call *call, uint64_t *quiet_ms)
{
    pthread_mutex_lock(&sh->lock);
    struct ag_shield *e = find(sh, name);
    int rc = AG_ENOTFOUND;
    if (e) {
        if (call->for_ms == UINT64_MAX)
            call->for_ms = e->params.block_ms;
        if (quiet_ms)
            *quiet_ms = call->for_ms;
        ag_shields__steps(sh, e, call);
        rc = e->view.source == AG_SHIELD_SHARED || !sh->o.store ? AG_OK
                                                                : AG_ESTORE;
    }
    pthread_mutex_unlock(&sh->lock);
    return rc;
}

int ag_shields_raise(struct ag_shields *sh, const char *name, uint32_t for_s)
{
    struct ag_redis_surge_call call = {.op = AG_SURGE_OP_RAISE,
                                       .for_ms = (uint64_t)for_s * 1000};
    return switch_shield(sh, name, &call, NULL);
}

int ag_shields_lower(struct ag_shields *sh, const char *name, uint32_t for_s,
                     uint32_t *quiet_s)
{
    struct ag_redis_surge_call call = {.op = AG_SURGE_OP_LOWER,
                                       .for_ms = for_s == AG_SHIELDS_LOWER_HOLD
                                                     ? UINT64_MAX
                                                     : (uint64_t)for_s * 1000};
    uint64_t quiet_ms = 0;
    int rc = switch_shield(sh, name, &call, &quiet_ms);
    if (quiet_s)
        *quiet_s = (uint32_t)(quiet_ms / 1000);
    return rc;
}

int ag_shields_views(struct ag_shields *sh, struct ag_shield_view **out,
                     size_t *n)
{
    pthread_mutex_lock(&sh->lock);
    size_t count = sh->table ? sh->table->n : 0;
    struct ag_shield_view *v = malloc((count ? count : 1) * sizeof *v);
    for (size_t i = 0; v && i < count; i++)
        v[i] = sh->table->shields[i].view;
    pthread_mutex_unlock(&sh->lock);
    if (!v)
        return AG_ENOMEM;
    *out = v;
    *n = count;
    return AG_OK;
}
