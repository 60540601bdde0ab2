/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: check and report bodies, for every endpoint. Any input
 * must parse or be refused with a message; the sanitizers catch the rest. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ag_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ag_request req;
    struct ag_error err;
    for (int ep = 0; ep < AG_EP_COUNT; ep++) {
        err.msg[0] = err.field[0] = '\0';
        if (ag_request_parse((enum ag_endpoint)ep, (const char *)data, size,
                             NULL, &req, &err) &&
            (!err.msg[0] || !err.field[0]))
            __builtin_trap(); /* a refusal always says why, and of what */
    }
    if (ag_request_parse_report((const char *)data, size, NULL, &req, &err) ==
            0 &&
        !(req.have & 1u << AG_KEY_USER))
        __builtin_trap(); /* an accepted report has its user */
    return 0;
}
