/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP, the Redis wire protocol, written straight into an ag_buf: a command
 * is "*<argc>\r\n" and then each argument as "$<len>\r\n<bytes>\r\n". The
 * check path formats one EVALSHA per request; building it here, without an
 * argv array or printf, is the cheaper form of hiredis's
 * redisFormatCommandArgv, byte for byte the same
 * (tests/unit/test_redis_cmd.c). The calls return nothing: a failure
 * (AG_ETOOBIG past the buffer's cap, or AG_ENOMEM) sticks to the ag_buf,
 * later calls then do nothing, and the caller checks ag_buf_error once the
 * command is written; a command with an error must be dropped.
 */
#ifndef AG_REDIS_CMD_H
#define AG_REDIS_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "ag_buf.h"

/* Starts a command of argc arguments. */
void ag_redis_cmd_command(struct ag_buf *b, size_t argc);
/* One argument of len bytes (binary safe). */
void ag_redis_cmd_arg(struct ag_buf *b, const void *data, size_t len);
/* One argument: the NUL-terminated s. */
void ag_redis_cmd_str(struct ag_buf *b, const char *s);
/* One argument: v in decimal. */
void ag_redis_cmd_uint(struct ag_buf *b, uint64_t v);

#endif
