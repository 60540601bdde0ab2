/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prints one OCSF event a line for every event type abuseguard raises,
 * each with every field that type can carry set (a key, a ref, the
 * network, a shield's, the fleet's or a journey's figures), as the
 * webhooks would send it: ag_event_json, then ag_ocsf_text.
 * tests/integration/test_ocsf_schema.py validates each against the OCSF
 * schema, so that the types no integration test provokes (the breaker,
 * the fleet, a journey) are checked too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_endpoint.h"
#include "ag_events.h"
#include "ag_ocsf.h"

static void fill(struct ag_event *e, enum ag_event_type t)
{
    ag_event_init(e, t);
    snprintf(e->id, sizeof e->id, "5f0c2a9e1b7d4c36-%d", (int)t);
    e->time_ms = 1796306531408ull;
    snprintf(e->policy, sizeof e->policy, "%s",
             t == AG_EV_PASSWORD_SPRAY     ? "login.password_spray"
             : t == AG_EV_CONVERSION_BLOCK ? "otp.conversion"
             : (t == AG_EV_SHIELD_RAISED || t == AG_EV_SHIELD_LOWERED ||
                t == AG_EV_SHIELD_LONG)
                 ? "login.site_failures"
                 : "login.user_ip");
    e->endpoint = t == AG_EV_CONVERSION_BLOCK ? AG_EP_OTP : AG_EP_LOGIN;
    snprintf(e->key, sizeof e->key, "0123456789abcdef0123456789abcdef");
    snprintf(e->ref, sizeof e->ref, "u-4711");
    snprintf(e->action, sizeof e->action, "%s",
             t == AG_EV_PASSWORD_SPRAY ? "deny" : "challenge");
    e->retry_after_s = 897;
    e->level = 2;
    snprintf(e->lane, sizeof e->lane, "untrusted");
    if (t == AG_EV_LIST_CHANGED) {
        snprintf(e->list, sizeof e->list, "deny");
        snprintf(e->change, sizeof e->change, "add");
        e->entry = 7;
    } else if (t == AG_EV_POLICY_CHANGED) {
        snprintf(e->change, sizeof e->change, "delete");
    }
    memcpy(e->net.country, "DE", 3);
    memcpy(e->net.asn, "3320", 5);
    snprintf(e->net.lists, sizeof e->net.lists, "tor");
    e->shield = (struct ag_event_shield){
        .rate = 900,
        .current = 120,
        .baseline_milli = 150000,
        .threshold = 750,
        .since_ms = 1796306000000ull,
        .until_ms = 1796306600000ull,
    };
    e->fleet = (struct ag_event_fleet){
        .version = 41, .head = 42, .record = 42, .lag_s = 75};
    snprintf(e->fleet.reason, sizeof e->fleet.reason, "a newer schema");
    snprintf(e->fleet.instance, sizeof e->fleet.instance, "%s",
             "0011223344556677");
    e->travel = (struct ag_event_travel){
        .from = "DE", .to = "AU", .km = 16000, .kmh = 8000};
}

int main(void)
{
    for (int t = 0; t < AG_EV_COUNT; t++) {
        struct ag_event e;
        fill(&e, (enum ag_event_type)t);
        char *ours = ag_event_json(&e);
        char *ocsf = ours ? ag_ocsf_text(ours, strlen(ours)) : NULL;
        if (!ocsf) {
            fprintf(stderr, "ocsf_samples: %s: not rendered\n",
                    ag_event_type_name((enum ag_event_type)t));
            return 1;
        }
        printf("%s\n", ocsf);
        free(ocsf);
        free(ours);
    }
    return 0;
}
