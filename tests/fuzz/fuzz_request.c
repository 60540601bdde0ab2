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
    char err[256];
    for (int ep = 0; ep < AG_EP_COUNT; ep++) {
        err[0] = '\0';
        if (ag_request_parse((enum ag_endpoint)ep, (const char *)data, size,
                             NULL, &req, err, sizeof err) &&
            !err[0])
            __builtin_trap(); /* a refusal always says why */
    }
    if (ag_request_parse_report((const char *)data, size, NULL, &req, err,
                                sizeof err) == 0 &&
        !(req.have & 1u << AG_KEY_USER))
        __builtin_trap(); /* an accepted report has its user */
    return 0;
}
