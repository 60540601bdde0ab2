#include "ag_resp.h"

#include <string.h>

/* "<prefix><n>\r\n": a multibulk count or a bulk length. */
static int header(struct ag_buf *b, char prefix, uint64_t n)
{
    /* One append per statement: the operands of | run in no set order. */
    int rc = ag_buf_append(b, &prefix, 1);
    rc |= ag_buf_uint(b, n);
    rc |= ag_buf_append(b, "\r\n", 2);
    return rc;
}

int ag_resp_command(struct ag_buf *b, size_t argc)
{
    return header(b, '*', argc);
}

int ag_resp_arg(struct ag_buf *b, const void *data, size_t len)
{
    int rc = header(b, '$', len);
    rc |= ag_buf_append(b, data, len);
    rc |= ag_buf_append(b, "\r\n", 2);
    return rc;
}

int ag_resp_str(struct ag_buf *b, const char *s)
{
    return ag_resp_arg(b, s, strlen(s));
}

int ag_resp_uint(struct ag_buf *b, uint64_t v)
{
    char out[AG_UINT_TEXT];
    size_t len;
    const char *digits = ag_uint_text(out, v, &len);
    return ag_resp_arg(b, digits, len);
}
