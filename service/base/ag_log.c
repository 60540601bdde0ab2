/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ag_buf.h"

static enum ag_log_level min_level = AG_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

/* The per-second cap: process-wide, like stderr itself. */
static atomic_llong window;          /* the second being counted */
static atomic_int in_window;         /* lines let through in it */
static atomic_uint_fast64_t dropped; /* in this window */
static atomic_uint_fast64_t dropped_total;

uint64_t ag_log_suppressed_total(void)
{
    return atomic_load(&dropped_total);
}

static void emit(const struct timespec *ts, enum ag_log_level level,
                 const char *event, const char *msg);

/* Whether a line of level stamped ts may be written. */
static bool admit(const struct timespec *ts, enum ag_log_level level)
{
    long long now = (long long)ts->tv_sec;
    long long seen = atomic_load(&window);
    if (now != seen && atomic_compare_exchange_strong(&window, &seen, now)) {
        atomic_store(&in_window, 0);
        uint64_t n = atomic_exchange(&dropped, 0);
        if (n) {
            char msg[64];
            snprintf(msg, sizeof msg, "%llu lines dropped by the rate cap",
                     (unsigned long long)n);
            emit(ts, AG_LOG_WARN, "log_suppressed", msg);
        }
    }
    if (level >= AG_LOG_ERROR ||
        atomic_fetch_add(&in_window, 1) < AG_LOG_PER_SECOND)
        return true;
    atomic_fetch_add(&dropped, 1);
    atomic_fetch_add(&dropped_total, 1);
    return false;
}

void ag_log_set_level(enum ag_log_level level)
{
    min_level = level;
}

int ag_log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void ag_log(enum ag_log_level level, const char *event, const char *fmt, ...)
{
    if (level < min_level)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (!admit(&ts, level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(&ts, level, event, msg);
}

static void emit(const struct timespec *ts, enum ag_log_level level,
                 const char *event, const char *msg)
{
    struct tm tm;
    gmtime_r(&ts->tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    struct ag_buf b;
    ag_buf_init(&b, 4096);
    int rc = ag_buf_printf(&b, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",", when,
                           ts->tv_nsec / 1000000L, names[level]);

    rc = rc ? rc : ag_buf_puts(&b, "\"event\":");
    rc = rc ? rc : ag_buf_json_string(&b, event);
    rc = rc ? rc : ag_buf_puts(&b, ",\"msg\":");
    rc = rc ? rc : ag_buf_json_string(&b, msg);
    rc = rc ? rc : ag_buf_puts(&b, "}\n");
    if (!rc && write(STDERR_FILENO, b.p, b.len) < 0) {
        /* Nowhere left to report a failed log write. */
    }
    ag_buf_free(&b);
}

bool ag_log_gate_open(struct ag_log_gate *g, uint64_t now_ms, uint64_t every_ms,
                      unsigned long *held)
{
    if (now_ms < g->next_ms) {
        g->held++;
        return false;
    }
    g->next_ms = now_ms + every_ms;
    *held = g->held;
    g->held = 0;
    return true;
}
