/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "abuseguard pwned import|check|verify": the command line of the
 * breached-password corpus (docs/pwned.md). The work is the pwned
 * layer's; this file reads the arguments, shows progress on a terminal
 * and maps outcomes to exit codes: 0 ok, 2 bad usage or input, 1 I/O.
 */
#include "ag_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_parse.h"
#include "ag_pwned.h"
#include "ag_pwned_hash.h"
#include "ag_pwned_import.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define PROGRESS_MS 500
/* The longest password line check reads, in bytes; a longer one is an
 * error naming it. */
#define CHECK_LINE_MAX 4096
#define TEXT_OF(n) #n
#define TEXT(n) TEXT_OF(n)

static const char usage_text[] =
    "usage: abuseguard pwned import --mode sha1|ntlm [--min-count N] "
    "--output FILE INPUT...\n"
    "       abuseguard pwned check --file FILE   (passwords on standard "
    "input, one a line)\n"
    "       abuseguard pwned verify --file FILE\n";

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "abuseguard pwned: %s\n", why);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

static int exit_code(int rc)
{
    return rc == AG_EINVAL ? EXIT_USAGE : EXIT_FAIL;
}

/* Takes "--name VALUE" or "--name=VALUE" at argv[*i]; NULL if argv[*i]
 * is not that option. *missing is set when the value is absent. */
static const char *option(int argc, char **argv, int *i, const char *name,
                          bool *missing)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

/* "12.3 GB": a byte count for people. */
static void human_bytes(char *out, size_t len, uint64_t b)
{
    static const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static void human_time(char *out, size_t len, double s)
{
    if (s < 60)
        snprintf(out, len, "%.1f s", s);
    else if (s < 3600)
        snprintf(out, len, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(out, len, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

/* Set by SIGINT, SIGTERM or SIGHUP during an import, which then stops at
 * its next read and removes its temporary file: the one piece of state a
 * signal handler may touch. */
static volatile sig_atomic_t stop_import;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_import = 1;
}

/* Without SA_RESTART, so that a read waiting on a pipe returns. */
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

struct display {
    uint64_t start_ms;
    uint64_t next_ms;
    bool shown;
};

/* The terminal's progress line, redrawn in place every PROGRESS_MS. */
static void show_progress(void *ctx, const struct ag_pwned_import_stats *s)
{
    struct display *d = ctx;
    uint64_t now = ag_clock_mono_ms();
    if (now < d->next_ms)
        return;
    d->next_ms = now + PROGRESS_MS;
    double el = (double)(now - d->start_ms) / 1000.0;
    char read[32], total[32], left[32];
    human_bytes(read, sizeof(read), s->bytes_read);
    if (s->bytes_total) {
        human_bytes(total, sizeof(total), s->bytes_total);
        fprintf(stderr, "\r\033[Kimporting: %s of %s (%.0f%%)", read, total,
                100.0 * (double)s->bytes_read / (double)s->bytes_total);
    } else {
        fprintf(stderr, "\r\033[Kimporting: %s read", read);
    }
    /* The rates need some time gone by; the first line may come at 0. */
    if (el > 0) {
        double bps = (double)s->bytes_read / el;
        fprintf(stderr, ", %.2f M lines/s", (double)s->lines / el / 1e6);
        if (s->bytes_total && bps > 0) {
            uint64_t rest = s->bytes_total > s->bytes_read
                                ? s->bytes_total - s->bytes_read
                                : 0;
            human_time(left, sizeof(left), (double)rest / bps);
            fprintf(stderr, ", %s left", left);
        }
    }
    d->shown = true;
}

static int import_main(int argc, char **argv)
{
    struct ag_pwned_import im = {.min_count = 1};
    const char **inputs = calloc((size_t)argc, sizeof(*inputs));
    const char *mode = NULL, *min = NULL, *v;
    bool missing = false;

    if (!inputs)
        return EXIT_FAIL;
    for (int i = 1; i < argc; i++) {
        if ((v = option(argc, argv, &i, "--mode", &missing)))
            mode = v;
        else if ((v = option(argc, argv, &i, "--min-count", &missing)))
            min = v;
        else if ((v = option(argc, argv, &i, "--output", &missing)))
            im.output = v;
        else if (missing || (argv[i][0] == '-' && argv[i][1] != '\0')) {
            free(inputs);
            return usage(missing ? "an option lacks its value" : NULL);
        } else
            inputs[im.n_inputs++] = argv[i];
    }
    im.inputs = inputs;
    int rc = EXIT_USAGE;
    unsigned n = 1;
    if (!mode || !im.output || !im.n_inputs)
        rc = usage("import needs --mode, --output and at least one INPUT");
    else if (strcmp(mode, "sha1") && strcmp(mode, "ntlm"))
        rc = usage("--mode must be sha1 or ntlm");
    else if (min && ag_parse_uint(min, 1, UINT32_MAX, &n) != 0)
        rc = usage("--min-count must be a whole number from 1 to "
                   "4294967295");
    else
        rc = 0;
    if (rc) {
        free(inputs);
        return rc;
    }
    im.mode = strcmp(mode, "ntlm") == 0 ? AG_PWNED_NTLM : AG_PWNED_SHA1;
    if (min)
        im.min_count = n;

    struct display d = {.start_ms = ag_clock_mono_ms()};
    im.stop = &stop_import;
    catch_stop_signals();
    if (isatty(2)) {
        im.progress = show_progress;
        im.progress_ctx = &d;
    }
    struct ag_pwned_import_stats st;
    char why[640];
    rc = ag_pwned_import_run(&im, &st, why, sizeof(why));
    free(inputs);
    if (d.shown)
        fputs("\r\033[K", stderr);
    if (rc != AG_OK) {
        fprintf(stderr, "abuseguard pwned import: %s\n",
                rc == AG_ENOMEM ? "out of memory" : why);
        return exit_code(rc);
    }
    double el = (double)(ag_clock_mono_ms() - d.start_ms) / 1000.0;
    char size[32], took[32], partial[96] = "";
    human_bytes(size, sizeof(size), st.output_size);
    human_time(took, sizeof(took), el);
    if (st.folders && st.prefix_files < st.folders * AG_PWNED_PREFIXES)
        snprintf(partial, sizeof(partial),
                 "; %" PRIu64 " prefix files of %" PRIu64
                 " (a partial download?)",
                 st.prefix_files, st.folders * AG_PWNED_PREFIXES);
    fprintf(stderr,
            "abuseguard pwned import: %" PRIu64 " entries kept, %" PRIu64
            " dropped by --min-count %" PRIu32 ", %" PRIu64
            " lines; %s: %" PRIu64 " bytes (%s); %s (%.0f lines/s)%s\n",
            st.kept, st.dropped, im.min_count, st.lines, im.output,
            st.output_size, size, took, el > 0 ? (double)st.lines / el : 0.0,
            partial);
    return 0;
}

/* --file FILE, the one option of check and verify: the corpus opened,
 * or an exit code. */
static int open_file(int argc, char **argv, const char *cmd,
                     struct ag_pwned **p)
{
    const char *file = NULL, *v;
    bool missing = false;
    for (int i = 1; i < argc; i++) {
        if ((v = option(argc, argv, &i, "--file", &missing)))
            file = v;
        else
            return usage(missing ? "--file lacks its value" : NULL);
    }
    if (!file) {
        fprintf(stderr, "abuseguard pwned %s: --file FILE is required\n", cmd);
        return EXIT_USAGE;
    }
    char why[512];
    int rc = ag_pwned_open(file, p, why, sizeof(why));
    if (rc != AG_OK) {
        fprintf(stderr, "abuseguard pwned %s: %s\n", cmd,
                rc == AG_ENOMEM ? "out of memory" : why);
        return exit_code(rc);
    }
    return 0;
}

/* Hashes one password line (its line end gone) and prints its count;
 * an exit code on failure, said naming the line. */
static int check_line(const struct ag_pwned *p, const char *line, size_t len,
                      uint64_t lineno)
{
    uint8_t hash[AG_PWNED_SHA1_LEN];
    if (len && line[len - 1] == '\r')
        len--;
    const char *bad = NULL;
    int hr = AG_EINVAL;
    if (len > CHECK_LINE_MAX)
        bad = "longer than " TEXT(CHECK_LINE_MAX) " bytes";
    else if ((hr = ag_pwned_hash_password(ag_pwned_info(p)->mode, line, len,
                                          hash)) != AG_OK)
        bad = hr == AG_EINVAL ? "not valid UTF-8 (NTLM hashes its UTF-16 "
                                "form)"
                              : "the hash failed";
    if (!bad)
        printf("%" PRIu32 "\n", ag_pwned_lookup(p, hash));
    sodium_memzero(hash, sizeof(hash));
    if (!bad)
        return 0;
    fprintf(stderr,
            "abuseguard pwned check: standard input line %" PRIu64 ": %s\n",
            lineno, bad);
    return exit_code(hr);
}

/* Prints the count of each password read from standard input, one a
 * line, in order. The passwords are never echoed or logged, and pass
 * through one fixed buffer, read with read(2) (no stdio buffer holds a
 * copy) and wiped at the end; a line longer than CHECK_LINE_MAX bytes is
 * refused naming it. */
static int check_main(int argc, char **argv)
{
    struct ag_pwned *p;
    int rc = open_file(argc, argv, "check", &p);
    if (rc)
        return rc;
    /* A line, its CR LF, and room to see that it goes on. */
    char buf[CHECK_LINE_MAX + 3];
    size_t have = 0;
    uint64_t lineno = 0;
    bool eof = false;

    while (!rc && !eof) {
        ssize_t n = read(0, buf + have, sizeof(buf) - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fputs("abuseguard pwned check: cannot read standard input\n",
                  stderr);
            rc = EXIT_FAIL;
            break;
        }
        eof = n == 0;
        have += (size_t)n;
        size_t at = 0;
        char *nl;
        while (!rc && (nl = memchr(buf + at, '\n', have - at))) {
            rc = check_line(p, buf + at, (size_t)(nl - (buf + at)), ++lineno);
            at = (size_t)(nl - buf) + 1;
        }
        if (!rc && eof && at < have) /* the last line, without its end */
            rc = check_line(p, buf + at, have - at, ++lineno);
        else if (!rc && at == 0 && have == sizeof(buf))
            rc = check_line(p, buf, have, ++lineno); /* too long */
        memmove(buf, buf + at, have - at);
        have -= at;
    }
    sodium_memzero(buf, sizeof(buf));
    ag_pwned_close(p);
    if (fflush(stdout) != 0 && !rc)
        rc = EXIT_FAIL;
    return rc;
}

/* Reads the whole corpus against its checksum and says what it holds. */
static int verify_main(int argc, char **argv)
{
    struct ag_pwned *p;
    int rc = open_file(argc, argv, "verify", &p);
    if (rc)
        return rc;
    char why[512];
    rc = ag_pwned_verify(p, why, sizeof(why));
    if (rc != AG_OK) {
        fprintf(stderr, "abuseguard pwned verify: %s\n", why);
        ag_pwned_close(p);
        return exit_code(rc);
    }
    const struct ag_pwned_info *in = ag_pwned_info(p);
    char sum[AG_PWNED_CHECKSUM_LEN * 2 + 1], when[32];
    sodium_bin2hex(sum, sizeof(sum), in->checksum, sizeof(in->checksum));
    /* Open keeps the time within 1970 .. 9999; checked again here so
     * that a time that cannot be shown prints as a number, never as
     * whatever the buffer held. */
    time_t t = (time_t)in->created_s;
    struct tm tm;
    if (!gmtime_r(&t, &tm) ||
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(when, sizeof(when), "at %" PRId64 " s", in->created_s);
    printf("mode %s, %" PRIu64 " entries, min-count %" PRIu32
           ", created %s, %" PRIu64 " bytes, checksum %s: ok\n",
           in->mode == AG_PWNED_NTLM ? "ntlm" : "sha1", in->entries,
           in->min_count, when, in->file_size, sum);
    ag_pwned_close(p);
    return fflush(stdout) == 0 ? 0 : EXIT_FAIL;
}

int ag_cli_pwned_main(int argc, char **argv)
{
    if (argc < 2)
        return usage(NULL);
    if (strcmp(argv[1], "import") == 0)
        return import_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "check") == 0)
        return check_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "verify") == 0)
        return verify_main(argc - 1, argv + 1);
    return usage(NULL);
}
