/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service's verdicts (ag_verdict.h) as HTTP responses: the one place
 * where the check layer's data meets the wire format, so that the check
 * path knows no HTTP and ag_http_response knows no verdict. Each kind is
 * rendered by the ag_http_response builder that answers it; the status,
 * headers and body are those builders' alone.
 *
 * Not thread-safe on one response; the verdict is only read.
 */
#ifndef AG_HTTP_VERDICT_H
#define AG_HTTP_VERDICT_H

#include "ag_http_response.h"
#include "ag_verdict.h"

/* The answer to v, a verdict of the service (ag_verdict.h), each kind by
 * the ag_http_response builder that renders it: REFUSED a 400 naming the field
 * (ag_http_response_refusal), UNAVAILABLE a 503 with its sentence,
 * DECIDED ag_http_response_check (_cached when from the deny cache,
 * _inspect when inspected), LISTED ag_http_response_listed (or
 * _inspect_listed), STORE_DOWN ag_http_response_unavailable, RECORDED a
 * 204 with no body, TOKEN ag_http_response_device_token. Reads v only;
 * the caller releases it. */
int ag_http_verdict_render(struct ag_http_response *r,
                           const struct ag_verdict *v);

#endif
