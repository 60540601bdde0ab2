/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_verdict.h"

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_network.h"
#include "ag_verdict.h"

/* "network": what the network files saw of the address, only what is
 * known ({} when nothing is): country, asn, and the lists that hold it in
 * a range that is not private or CGNAT (a match of those alone is the
 * integrator's load balancer, counted by ag_network, not a signal). No
 * address, city or coordinates. Country codes, digits and list names
 * ([a-z0-9_-]) need no escaping. */
static void network_json(struct ag_buf *b, const struct ag_verdict *v)
{
    const struct ag_request_net *n = &v->net;
    ag_buf_puts(b, "\"network\":{");
    const char *sep = "";
    if (n->country[0]) {
        ag_buf_puts(b, "\"country\":\"");
        ag_buf_puts(b, n->country);
        ag_buf_puts(b, "\"");
        sep = ",";
    }
    if (n->asn[0]) {
        ag_buf_puts(b, sep);
        ag_buf_puts(b, "\"asn\":");
        ag_buf_puts(b, n->asn);
        sep = ",";
    }
    if (n->lists) {
        ag_buf_puts(b, sep);
        ag_buf_puts(b, "\"lists\":[");
        const char *lsep = "";
        size_t nl = ag_network_nlists(v->network);
        for (size_t i = 0; i < nl && i < 32; i++) {
            if (!(n->lists & 1u << i))
                continue;
            ag_buf_puts(b, lsep);
            ag_buf_puts(b, "\"");
            ag_buf_puts(b, ag_network_list_name(v->network, i));
            ag_buf_puts(b, "\"");
            lsep = ",";
        }
        ag_buf_puts(b, "]");
    }
    ag_buf_puts(b, "}");
}

/* Puts "network" first in r's JSON object body. */
static int add_network(struct ag_http_response *r, const struct ag_verdict *v)
{
    if (!v->net.looked || !v->network || r->body.len < 2 || r->body.p[0] != '{')
        return AG_OK;
    struct ag_buf rest;
    ag_buf_init(&rest, r->body.max);
    ag_buf_append(&rest, r->body.p + 1, r->body.len - 1);
    ag_buf_reset(&r->body);
    ag_buf_puts(&r->body, "{");
    network_json(&r->body, v);
    /* "{}" stays an object with network alone. */
    if (rest.len > 1)
        ag_buf_puts(&r->body, ",");
    ag_buf_append(&r->body, rest.p, rest.len);
    int rc = ag_buf_error(&rest) ? ag_buf_error(&rest) : ag_buf_error(&r->body);
    ag_buf_free(&rest);
    return rc;
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
