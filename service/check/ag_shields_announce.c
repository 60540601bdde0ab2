/* SPDX-License-Identifier: Apache-2.0 */
/* What a shield's raise or lowering tells: one log line with its figures
 * (no identifier: a shield counts the whole site). */
#include <inttypes.h>

#include "ag_log.h"
#include "ag_shields_impl.h"

void ag_shields__announce(struct ag_shields *sh, const struct ag_shield *e,
                          unsigned changed)
{
    (void)sh;
    const struct ag_shield_view *v = &e->view;
    bool raised = changed & AG_SURGE_RAISED;
    ag_log(raised ? AG_LOG_WARN : AG_LOG_INFO,
           raised ? "shield_raised" : "shield_lowered",
           "policy=%s count=%" PRIu64 " rate=%" PRIu64 " baseline=%.3f "
           "threshold=%" PRIu64 " until_ms=%" PRIu64 " source=%s",
           e->policy->name, v->state.count, v->state.prev_count,
           (double)v->state.baseline_milli / 1000.0, v->threshold,
           v->state.until_ms,
           v->source == AG_SHIELD_SHARED ? "shared" : "local");
}
