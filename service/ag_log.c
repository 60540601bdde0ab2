#include "ag_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ag_buf.h"

static enum ag_log_level min_level = AG_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

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
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    struct ag_buf b;
    ag_buf_init(&b, 4096);
    int rc = ag_buf_printf(&b, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",", when,
                           ts.tv_nsec / 1000000L, names[level]);
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
