/* SPDX-License-Identifier: Apache-2.0 */
/* What a shield's raise or lowering tells: one log line and one event
 * (shield_raised, shield_lowered) with its figures (no identifier: a
 * shield counts the whole site); and what each step shows: the metrics'
 * gauges and the overview's sample of the minute. Exactly one instance
 * announces each shared raise and lowering, the one whose step the
 * script told (ag_redis_surge.h); every instance shows its steps. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ag_events.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_overview.h"
#include "ag_shields_impl.h"

/* One announcement: the log line and the event of type t. */
static void tell(struct ag_shields *sh, const struct ag_shield *e,
                 enum ag_event_type t, enum ag_shields_by by)
{
    static const char *const bys[] = {
        [AG_SHIELDS_BY_COUNTS] = "counts",
        [AG_SHIELDS_BY_OPERATOR] = "operator",
        [AG_SHIELDS_RESUMED] = "resumed",
    };
    const struct ag_shield_view *v = &e->view;
    bool raised = t != AG_EV_SHIELD_LOWERED;
    ag_log(raised ? AG_LOG_WARN : AG_LOG_INFO, ag_event_type_name(t),
           "policy=%s count=%" PRIu64 " rate=%" PRIu64 " baseline=%.3f "
           "threshold=%" PRIu64 " since_ms=%" PRIu64 " until_ms=%" PRIu64
           " source=%s by=%s",
           e->policy->name, v->state.count, v->state.prev_count,
           (double)v->state.baseline_milli / 1000.0, v->threshold,
           v->state.since_ms, v->state.until_ms,
           v->source == AG_SHIELD_SHARED ? "shared" : "local", bys[by]);
    struct ag_event ev;
    ag_event_init(&ev, t);
    snprintf(ev.policy, sizeof ev.policy, "%s", e->policy->name);
    ev.endpoint = (int)e->policy->endpoint;
    snprintf(ev.action, sizeof ev.action, "%s",
             e->policy->action == AG_ACTION_CHALLENGE ? "challenge" : "deny");
    ev.shield = (struct ag_event_shield){
        .rate = v->state.prev_count,
        .current = v->state.count,
        .baseline_milli = v->state.baseline_milli,
        .threshold = v->threshold,
        .since_ms = v->state.since_ms,
        /* A lowered shield's end is the step that lowered it. */
        .until_ms = raised ? v->state.until_ms : v->now_ms,
        .local = v->source == AG_SHIELD_LOCAL,
        .by_operator = by == AG_SHIELDS_BY_OPERATOR,
        .resumed = by == AG_SHIELDS_RESUMED,
    };
    ag_events_raise(sh->o.events, &ev);
}

void ag_shields__announce(struct ag_shields *sh, const struct ag_shield *e,
                          unsigned changed, enum ag_shields_by by)
{
    if (changed & AG_SURGE_RAISED)
        tell(sh, e, AG_EV_SHIELD_RAISED, by);
    else if (changed & AG_SURGE_LOWERED)
        tell(sh, e, AG_EV_SHIELD_LOWERED, by);
    if (changed & AG_SURGE_LONG)
        tell(sh, e, AG_EV_SHIELD_LONG, AG_SHIELDS_BY_COUNTS);
}

/* The gauges of view. */
static void set_gauges(struct ag_metrics *m, const struct ag_shield_view *v)
{
    struct ag_metrics_shield fig = {
        .raised = v->state.raised,
        .local = v->source == AG_SHIELD_LOCAL,
        .rate = v->state.prev_count,
        .baseline_milli = v->state.baseline_milli,
        .threshold = v->threshold,
        .raised_s = v->state.raised && v->now_ms > v->state.since_ms
                        ? (v->now_ms - v->state.since_ms) / 1000
                        : 0,
        .by_operator = v->state.raised && v->state.by_operator,
        .learning = v->young,
        .others = v->others,
        .disagreements = v->disagreements,
    };
    ag_metrics_shield(m, v->name, &fig);
}

void ag_shields__observe(struct ag_shields *sh, const struct ag_shield *e)
{
    const struct ag_shield_view *v = &e->view;
    set_gauges(sh->o.metrics, v);
    struct ag_overview_shield s = {
        .count = v->state.count,
        .baseline_milli = v->state.baseline_milli,
        .threshold = v->threshold,
        .raised = v->state.raised,
    };
    /* This instance's clock, as the overview's checks are counted by. */
    ag_overview_shield(sh->o.overview, sh->o.clock_ms(sh->o.clock_ctx), v->name,
                       &s);
}

/* Is a shield named name in t? */
static bool has(const struct ag_shield_table *t, const char *name)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (strcmp(t->shields[i].view.name, name) == 0)
            return true;
    return false;
}

void ag_shields__published(struct ag_shields *sh,
                           const struct ag_shield_table *old,
                           const struct ag_shield_table *t)
{
    for (size_t i = 0; old && i < old->n; i++)
        if (!has(t, old->shields[i].view.name))
            ag_metrics_shield(sh->o.metrics, old->shields[i].view.name, NULL);
    for (size_t i = 0; t && i < t->n; i++)
        set_gauges(sh->o.metrics, &t->shields[i].view);
}
