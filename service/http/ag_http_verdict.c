/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_verdict.h"

#include <stdbool.h>
#include <string.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_network.h"
#include "ag_verdict.h"

/* Appends s to t (cap bytes) at at; returns the new length, past cap
 * when it did not fit (the caller checks once). */
static size_t put(char *t, size_t at, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (at + n < cap)
        memcpy(t + at, s, n);
    return at + n;
}

/* "network": what the network files saw of the address, only what is
 * known ({} when nothing is): country, asn, and the lists that hold it in
 * a range that is not private or CGNAT (a match of those alone is the
 * integrator's load balancer, counted by ag_network, not a signal). No
 * address, city or coordinates. Country codes, digits and list names
 * ([a-z0-9_-]) need no escaping. Into t; returns its length, or cap or
 * more if it did not fit. */
static size_t network_text(char *t, size_t cap, const struct ag_verdict *v)
{
    const struct ag_request_net *n = &v->net;
    size_t at = put(t, 0, cap, "\"network\":{");
    const char *sep = "";
    if (n->country[0]) {
        at = put(t, at, cap, "\"country\":\"");
        at = put(t, at, cap, n->country);
        at = put(t, at, cap, "\"");
        sep = ",";
    }
    if (n->asn[0]) {
        at = put(t, at, cap, sep);
        at = put(t, at, cap, "\"asn\":");
        at = put(t, at, cap, n->asn);
        sep = ",";
    }
    if (n->lists) {
        at = put(t, at, cap, sep);
        at = put(t, at, cap, "\"lists\":[");
        const char *lsep = "";
        size_t nl = ag_network_nlists(v->network);
        for (size_t i = 0; i < nl && i < AG_REQUEST_NET_LISTS; i++) {
            if (!(n->lists & 1u << i))
                continue;
            at = put(t, at, cap, lsep);
            at = put(t, at, cap, "\"");
            at = put(t, at, cap, ag_network_list_name(v->network, i));
            at = put(t, at, cap, "\"");
            lsep = ",";
        }
        at = put(t, at, cap, "]");
    }
    return put(t, at, cap, "}");
}

/* "risk", a login check's (ag_verdict_risk): its risk signals, their
 * level, what impossible travel's judgement was ("unknown" when the
 * history was not read), whether the history was read, and
 * "shield_as_untrusted" when a risky-scoped shield challenged it for
 * want of one. Into t at at; returns the new length (past cap: did not
 * fit). */
static size_t risk_text(char *t, size_t at, size_t cap,
                        const struct ag_verdict_risk *k)
{
    at = put(t, at, cap, "\"risk\":{\"signals\":[");
    const char *sep = "";
    for (int i = 0; i < AG_SIGNAL_COUNT; i++) {
        if (!(k->signals & 1u << i))
            continue;
        at = put(t, at, cap, sep);
        at = put(t, at, cap, "\"");
        at = put(t, at, cap, ag_signal_name((enum ag_signal)i));
        at = put(t, at, cap, "\"");
        sep = ",";
    }
    at = put(t, at, cap, "],\"level\":\"");
    at = put(t, at, cap, ag_risk_level_name(k->level));
    at = put(t, at, cap, "\",\"travel\":\"");
    at = put(t, at, cap,
             k->judged ? ag_history_travel_name(k->travel) : "unknown");
    at = put(t, at, cap, "\",\"history\":\"");
    at = put(t, at, cap, k->judged ? "read" : "unread");
    at = put(t, at, cap, "\"");
    if (k->risky_fallback)
        at = put(t, at, cap, ",\"shield_as_untrusted\":true");
    return put(t, at, cap, "}");
}

/* Puts "network" (when a lookup was made) and "risk" (a login check's)
 * first in r's JSON object body: made beside it, then the body is moved
 * up in place (no allocation once the body's buffer has room, as it has
 * after the first answers of a connection). */
static int add_network(struct ag_http_response *r, const struct ag_verdict *v)
{
    struct ag_buf *b = &r->body;
    bool net = v->net.looked && v->network;
    bool risk =
        v->risk.wanted && v->kind == AG_VERDICT_DECIDED && !v->inspected;
    if ((!net && !risk) || b->len < 2 || b->p[0] != '{')
        return AG_OK;
    /* At most 32 list names of 32 bytes, quoted: under 1.3 KiB; the risk
     * under 256 bytes. */
    char text[2048];
    size_t n = net ? network_text(text, sizeof text, v) : 0;
    if (net && risk)
        n = put(text, n, sizeof text, ",");
    if (risk)
        n = risk_text(text, n, sizeof text, &v->risk);
    if (n >= sizeof text)
        return AG_ETOOBIG;
    /* "{" + network + "," + the rest, or "{" + network + "}" for "{}". */
    bool comma = b->len > 2;
    size_t old = b->len;
    if (comma)
        text[n++] = ',';
    int rc = ag_buf_append(b, text, n); /* room for it, moved below */
    if (rc)
        return rc;
    memmove(b->p + 1 + n, b->p + 1, old - 1);
    memcpy(b->p + 1, text, n);
    return AG_OK;
}

static int render(struct ag_http_response *r, const struct ag_verdict *v)
{
    switch (v->kind) {
    case AG_VERDICT_REFUSED:
        return ag_http_response_refusal(r, 400, &v->err);
    case AG_VERDICT_UNAVAILABLE:
        return ag_http_response_error(r, 503, v->why);
    case AG_VERDICT_DECIDED:
        if (v->inspected)
            return ag_http_response_inspect(r, v->plan, v->res, v->degraded);
        if (v->cached)
            return ag_http_response_cached(r, v->plan, v->res, &v->decision,
                                           v->nonce);
        return ag_http_response_check(r, v->plan, v->res, &v->decision,
                                      v->degraded, v->nonce);
    case AG_VERDICT_LISTED:
        if (v->inspected)
            return ag_http_response_inspect_listed(r, v->entry, v->trusted);
        return ag_http_response_listed(r, v->entry, v->trusted);
    case AG_VERDICT_STORE_DOWN:
        return ag_http_response_unavailable(r, v->closed, v->trusted);
    case AG_VERDICT_RECORDED:
        r->status = 204;
        ag_buf_reset(&r->body);
        return AG_OK;
    case AG_VERDICT_TOKEN:
        return ag_http_response_device_token(r, v->token, v->ttl_s);
    }
    return AG_EINVAL;
}

int ag_http_verdict_render(struct ag_http_response *r,
                           const struct ag_verdict *v)
{
    int rc = render(r, v);
    if (rc == AG_OK &&
        (v->kind == AG_VERDICT_DECIDED || v->kind == AG_VERDICT_LISTED ||
         v->kind == AG_VERDICT_STORE_DOWN))
        rc = add_network(r, v);
    return rc;
}
