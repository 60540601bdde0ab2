/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: policy files, as the seed directory, the CLI import
 * and the admin API read them. Every accepted policy must survive a round
 * trip through its JSON form unchanged. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ag_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error err;
    if (ag_policy_parse_file((const char *)data, size, &ps, &n, &err) != 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        json_t *o = ag_policy_to_json(&ps[i]);
        struct ag_policy back;
        if (!o || ag_policy_from_json(o, NULL, &back, &err) != 0 ||
            strcmp(back.name, ps[i].name) != 0 || back.limit != ps[i].limit ||
            back.window_s != ps[i].window_s ||
            back.algorithm != ps[i].algorithm || back.nkeys != ps[i].nkeys)
            __builtin_trap();
        json_decref(o);
    }
    free(ps);
    return 0;
}
