/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_verdict.h"

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_http_response.h"
#include "ag_verdict.h"

int ag_http_verdict_render(struct ag_http_response *r,
                           const struct ag_verdict *v)
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
