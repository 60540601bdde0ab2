/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Structured logging: one JSON object a line on stderr,
 * {"ts":"2026-12-02T14:20:21.123Z","level":"info","event":"...","msg":"..."}.
 * Callers must never pass a plaintext identifier (user, phone, IP, device):
 * log the keyed hash instead. The one exception is the client address of
 * a failed admin authentication (ag_admin_auth.h), a lead for the operator.
 * Lines below the configured level are dropped, and so are lines below
 * "error" past AG_LOG_PER_SECOND in one second, so a flood of denials
 * cannot flood the log; the next second starts with one
 * "log_suppressed" line saying how many were dropped.
 * Thread-safe: each line is written with one write(2).
 */
#ifndef AG_LOG_H
#define AG_LOG_H

enum ag_log_level {
    AG_LOG_DEBUG = 0,
    AG_LOG_INFO,
    AG_LOG_WARN,
    AG_LOG_ERROR,
};

#include <stdbool.h>
#include <stdint.h>

#define AG_LOG_PER_SECOND 200

/* Lines dropped by the per-second cap since the start. */
uint64_t ag_log_suppressed_total(void);

/* Sets the lowest level written; set once at start, before any thread. */

void ag_log_set_level(enum ag_log_level level);
/* Parses "debug", "info", "warn" or "error"; -1 if none of them. */
int ag_log_level_parse(const char *s);
void ag_log(enum ag_log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One kind of line that may repeat for as long as a fault lasts (a
 * receiver down, Redis refusing an append), written once per interval at
 * most and saying how many it stands for: when the next may be, and how
 * many were held back since the last. Zeroed, the next is allowed at
 * once. Not locked: the caller's lock guards it. */
struct ag_log_gate {
    uint64_t next_ms;
    unsigned long held;
};

/* True if a line may be written at now_ms (*held: how many were not since
 * the last; the next then waits every_ms); else counts this one held. */
bool ag_log_gate_open(struct ag_log_gate *g, uint64_t now_ms, uint64_t every_ms,
                      unsigned long *held);

#endif
