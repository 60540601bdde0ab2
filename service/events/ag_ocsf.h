/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The security events (ag_events.h) rendered in the Open Cybersecurity
 * Schema Framework (OCSF, AG_OCSF_VERSION), which SIEMs such as Amazon
 * Security Lake and Splunk ingest as they are: a login challenged or
 * turned away is an Authentication (3002), an admin's reset an Account
 * Change (3001), a policy or list change an Entity Management (3004), and
 * every detection (a spray, a shield, a breached-password login, a new
 * place, the breaker, the fleet) a Detection Finding (2004).
 * docs/events.md has the table; docs/decisions/ocsf-events.md the why.
 *
 * Pure: our event's JSON object in, an OCSF object out, no I/O, no state,
 * any thread. It works from the JSON, not from struct ag_event, so that
 * the stream's entries (which hold only the JSON) render as the webhooks'
 * bodies do. The OCSF object carries nothing our event does not: the
 * key's digest and the caller's ref for the user, the network's country
 * and AS number for the source, never an identifier or an address; and
 * the whole event, unchanged, under "unmapped", so that nothing is lost.
 * The webhooks render at delivery, on their own threads (ag_webhook_opts
 * render), never on a check's.
 */
#ifndef AG_OCSF_H
#define AG_OCSF_H

#include <jansson.h>

/* The OCSF version the events are written in, and validated against in
 * tests/ocsf/. */
#define AG_OCSF_VERSION "1.8.0"

/* How the events are sent and paged: our own JSON (the default) or
 * OCSF. */
enum ag_event_format {
    AG_EVENT_FORMAT_JSON,
    AG_EVENT_FORMAT_OCSF,
};

/* "json" or "ocsf" as its format; -1 for anything else (NULL too). */
int ag_event_format_parse(const char *text);

/* The OCSF event for ev (borrowed: ag_event_json's object, or an entry
 * of GET /admin/events with its "stream_id"). An event of a type this
 * build does not know is a Detection Finding of unknown severity. NULL
 * when ev is not an object or out of memory; the caller decrefs. */
json_t *ag_ocsf_event(const json_t *ev);

/* The same from our event's JSON text (len bytes): the OCSF event as
 * compact JSON. Caller frees with free(); NULL if text is not an event
 * object, or out of memory. */
char *ag_ocsf_text(const char *text, size_t len);

#endif
