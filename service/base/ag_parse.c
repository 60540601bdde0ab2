/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "ag_error.h"

int ag_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
    if (!*s || !isdigit((unsigned char)*s))
        return AG_EINVAL;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return AG_EINVAL;
    *out = (unsigned)v;
    return AG_OK;
}

int ag_parse_port(const char *s, int *port)
{
    unsigned v;
    if (ag_parse_uint(s, 1, 65535, &v))
        return AG_EINVAL;
    *port = (int)v;
    return AG_OK;
}
