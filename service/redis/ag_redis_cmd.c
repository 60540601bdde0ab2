/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_cmd.h"

#include <string.h>

#include "ag_error.h"

/* "<prefix><n>\r\n": a multibulk count or a bulk length. */
static void header(struct ag_buf *b, char prefix, uint64_t n)
{
    /* The buffer keeps the first error: the results need no checking. */
    ag_buf_append(b, &prefix, 1);
    ag_buf_uint(b, n);
    ag_buf_append(b, "\r\n", 2);
}

void ag_redis_cmd_command(struct ag_buf *b, size_t argc)
{
    header(b, '*', argc);
}

void ag_redis_cmd_arg(struct ag_buf *b, const void *data, size_t len)
{
    /* Reserved once and written in place: a check has some thirty
     * arguments, and an append apiece for each of their five parts was 5%
     * of the service's instructions per check. */
    char out[AG_UINT_TEXT];
    size_t dlen;
    const char *digits = ag_uint_text(out, len, &dlen);
    if (ag_buf_reserve(b, 1 + dlen + 2 + len + 2) != AG_OK)
        return;
    char *p = b->p + b->len;
    *p++ = '$';
    memcpy(p, digits, dlen);
    p += dlen;
    *p++ = '\r';
    *p++ = '\n';
    if (len)
        memcpy(p, data, len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
    *p = '\0';
    b->len = (size_t)(p - b->p);
}

void ag_redis_cmd_str(struct ag_buf *b, const char *s)
{
    ag_redis_cmd_arg(b, s, strlen(s));
}

void ag_redis_cmd_uint(struct ag_buf *b, uint64_t v)
{
    char out[AG_UINT_TEXT];
    size_t len;
    const char *digits = ag_uint_text(out, v, &len);
    ag_redis_cmd_arg(b, digits, len);
}
