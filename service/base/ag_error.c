/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_error.h"

#include <stdarg.h>
#include <stdio.h>

void ag_error_fill(struct ag_error *err, int code, const char *field,
                   const char *fmt, ...)
{
    if (!err)
        return;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}
