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

/* The entry of the current table that e continues: the same policy name
 * and the same parameters (another window starts over), or NULL. */
static struct ag_shield *predecessor(struct ag_shield_table *old,
                                     const struct ag_shield *e)
{
    for (size_t i = 0; old && i < old->n; i++) {
        struct ag_shield *o = &old->shields[i];
        if (strcmp(o->policy->name, e->policy->name) == 0 &&
            o->params.window_ms == e->params.window_ms)
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
    atomic_init(&e->raised, false);
    atomic_init(&e->until_mono_ms, 0);
    ag_surge_init(&e->local, &e->params, now_ms);
    memset(&e->view, 0, sizeof e->view);
    snprintf(e->view.name, sizeof e->view.name, "%s", p->name);
    e->view.state = e->local;
    e->view.threshold = ag_surge_threshold(&e->local, &e->params);
    e->view.now_ms = now_ms;
    e->view.source = sh->o.store ? AG_SHIELD_SHARED : AG_SHIELD_LOCAL;
    e->said_local = false;
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
        struct ag_shield *e = &t->shields[t->n++];
        init_entry(sh, e, p, now);
        struct ag_shield *o = predecessor(sh->table, e);
        if (!o)
            continue;
        /* What the old entry counted and knew goes on here; a count that
         * lands on it after this is lost, which a count may be. */
        atomic_store(&e->count, atomic_exchange(&o->count, 0));
        atomic_store(&e->attempts, atomic_exchange(&o->attempts, 0));
        atomic_store(&e->raised, atomic_load(&o->raised));
        atomic_store(&e->until_mono_ms, atomic_load(&o->until_mono_ms));
        e->local = o->local;
        e->view.state = o->view.state;
        e->view.now_ms = o->view.now_ms;
        e->view.source = o->view.source;
        e->view.stepped = o->view.stepped;
        e->said_local = o->said_local;
        e->view.threshold = ag_surge_threshold(&e->view.state, &e->params);
    }
    pthread_mutex_unlock(&sh->lock);
    return t;
}

void ag_shields_publish(struct ag_shields *sh, struct ag_shield_table *t)
{
    ag_shield_table_ref(t);
    pthread_mutex_lock(&sh->lock);
    struct ag_shield_table *old = sh->table;
    sh->table = t;
    ag_shields__published(sh, old, t);
    pthread_mutex_unlock(&sh->lock);
    ag_shield_table_unref(old);
}

void ag_shields_count_check(struct ag_shield_table *t,
                            enum ag_endpoint endpoint, bool trusted)
{
    for (size_t i = 0; t && i < t->n; i++) {
        struct ag_shield *e = &t->shields[i];
        if (e->policy->endpoint != endpoint ||
            !ag_limiter_in_lane(e->policy, trusted))
            continue;
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
    const struct ag_shield *best = NULL;
    uint64_t best_ms = 0, now = 0;
    *retry_ms = 0;
    for (size_t i = 0; t && i < t->n; i++) {
        const struct ag_shield *e = &t->shields[i];
        if (!atomic_load_explicit(&e->raised, memory_order_relaxed) ||
            e->policy->endpoint != endpoint ||
            !ag_limiter_in_lane(e->policy, trusted))
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

/* Redis answers again after this instance shielded from its own counts,
 * and the shared state is lowered: it saw none of the attack meanwhile
 * (its hold ran out with nothing to move it on), but this instance's
 * counts still hold the shield. The raise goes back to the shared state
 * for what is left of the local hold, and holds there on every
 * instance's attempts from now on: the shield does not come down and go
 * straight back up once the attack's failures resume. AG_OK and *a, or
 * the call's error. */
static int resume_raise(struct ag_shields *sh, struct ag_shield *e,
                        uint64_t now, struct ag_redis_surge_answer *a)
{
    struct ag_redis_surge_call call = {.op = AG_SURGE_OP_RAISE,
                                       .for_ms = e->local.until_ms - now};
    return ag_redis_surge(sh->o.store, e->key, &e->params, &call, a);
}

/* While Redis answers, the local state follows the shared raise: raised
 * for at least what is left of the shared hold (this instance's own
 * attempts move it on from there), lowered with it. Otherwise an instance
 * whose share of a wave had not crossed the floor alone when the shared
 * shield went up would lower the shield the moment Redis went away. */
static void follow_shared(struct ag_shield *e,
                          const struct ag_redis_surge_answer *a, uint64_t now)
{
    if (!a->state.raised) {
        ag_surge_lower(&e->local);
        return;
    }
    uint64_t left =
        a->state.until_ms > a->now_ms ? a->state.until_ms - a->now_ms : 1;
    if (!e->local.raised || e->local.until_ms < now + left)
        ag_surge_raise(&e->local, &e->params, now, left);
}

void ag_shields__steps(struct ag_shields *sh, struct ag_shield *e,
                       const struct ag_redis_surge_call *call)
{
    uint64_t now = wall_ms(sh);
    unsigned local_changed = 0;
    switch (call->op) {
    case AG_SURGE_OP_STEP:
        local_changed = ag_surge_step(&e->local, &e->params, now, call->count,
                                      call->attempts);
        break;
    case AG_SURGE_OP_RAISE:
        local_changed =
            ag_surge_raise(&e->local, &e->params, now, call->for_ms);
        break;
    case AG_SURGE_OP_LOWER:
        local_changed = ag_surge_lower(&e->local);
        break;
    }
    struct ag_redis_surge_answer a;
    int rc = sh->o.store
                 ? ag_redis_surge(sh->o.store, e->key, &e->params, call, &a)
                 : AG_EINVAL;
    /* A store without Redis (the in-process one) shares nothing: every
     * shield is this instance's own, and nothing is wrong. */
    if (rc == AG_EINVAL)
        sh->o.store = NULL;
    if (rc == AG_OK && e->view.source == AG_SHIELD_LOCAL && e->local.raised &&
        !a.state.raised && call->op == AG_SURGE_OP_STEP)
        rc = resume_raise(sh, e, now, &a);
    enum ag_shield_source was = e->view.source;
    bool was_raised = e->view.state.raised;
    unsigned changed;
    if (rc == AG_OK) {
        follow_shared(e, &a, now);
        e->view.state = a.state;
        e->view.threshold = a.threshold;
        e->view.now_ms = a.now_ms;
        e->view.source = AG_SHIELD_SHARED;
        changed = a.changed;
    } else {
        e->view.state = e->local;
        e->view.threshold = ag_surge_threshold(&e->local, &e->params);
        e->view.now_ms = now;
        e->view.source = AG_SHIELD_LOCAL;
        changed = local_changed;
    }
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
        changed = 0;
        if (e->view.state.raised && !was_raised)
            changed = AG_SURGE_RAISED;
        else if (!e->view.state.raised && was_raised)
            changed = AG_SURGE_LOWERED;
    }
    e->view.stepped = true;
    publish_state(e, &e->view.state, e->view.now_ms);
    ag_shields__observe(sh, e);
    if (changed)
        ag_shields__announce(sh, e, changed, call->op != AG_SURGE_OP_STEP);
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

/* Runs the operator's op on the named shield. */
static int switch_shield(struct ag_shields *sh, const char *name,
                         const struct ag_redis_surge_call *call)
{
    pthread_mutex_lock(&sh->lock);
    struct ag_shield *e = find(sh, name);
    int rc = AG_ENOTFOUND;
    if (e) {
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
    return switch_shield(sh, name, &call);
}

int ag_shields_lower(struct ag_shields *sh, const char *name)
{
    struct ag_redis_surge_call call = {.op = AG_SURGE_OP_LOWER};
    return switch_shield(sh, name, &call);
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
