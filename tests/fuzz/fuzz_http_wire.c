/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the framing validator. The first byte picks where the
 * rest of the input is cut in two; the verdict and the count of heads must
 * be those of the rest fed whole, however the pieces fall. */
#include <stddef.h>
#include <stdint.h>

#include "ag_http_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    size_t cut = n ? data[0] % (n + 1) : 0;

    struct ag_wire whole, split, bytes;
    ag_wire_init(&whole);
    ag_wire_init(&split);
    ag_wire_init(&bytes);
    enum ag_wire_fault f = ag_wire_feed(&whole, p, n);
    ag_wire_feed(&split, p, cut);
    enum ag_wire_fault g = ag_wire_feed(&split, p + cut, n - cut);
    enum ag_wire_fault h = ag_wire_feed(&bytes, p, 0);
    for (size_t i = 0; i < n; i++)
        h = ag_wire_feed(&bytes, p + i, 1);
    if (f != g || whole.requests != split.requests)
        __builtin_trap(); /* the cut changed the verdict */
    if (f != h || whole.requests != bytes.requests)
        __builtin_trap(); /* feeding byte by byte changed the verdict */
    if (!ag_wire_fault_text(f)[0])
        __builtin_trap(); /* every verdict can be told to the client */
    return 0;
}
