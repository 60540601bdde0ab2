/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The import (ag_pwned_import.h): first every input is looked at (it
 * exists, what kind it is, a folder's names and their order), so that a
 * mistyped path fails before anything is written; then each is read
 * through one buffer into the parser, whose hashes go to the writer.
 */
#include "ag_pwned_import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ag_error.h"
#include "ag_pwned_parse.h"
#include "ag_pwned_write.h"

#define READ_SIZE ((size_t)4 << 20)
#define STDIN_NAME "standard input"

/* One file of a folder: its prefix and its name as found. */
struct prefix_file {
    uint32_t prefix;
    char name[12]; /* "XXXXX.txt" */
};

struct run {
    const struct ag_pwned_import *im;
    struct ag_pwned_import_stats *st;
    struct ag_pwned_parser parser;
    struct ag_pwned_writer *w;
    char *buf; /* READ_SIZE bytes */
    char *why;
    size_t whylen;
};

static int say(struct run *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int say(struct run *r, int code, const char *fmt, ...)
{
    if (r->why && r->whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, r->whylen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int emit(void *ctx, const uint8_t *hash, uint32_t count)
{
    struct run *r = ctx;
    int rc = ag_pwned_writer_add(r->w, hash, count);
    if (rc != AG_OK)
        say(r, rc, "%s", ag_pwned_writer_error(r->w));
    return rc;
}

static void progress(struct run *r)
{
    r->st->lines = r->parser.lines;
    r->st->kept = r->parser.kept;
    r->st->dropped = r->parser.dropped;
    if (r->im->progress)
        r->im->progress(r->im->progress_ctx, r->st);
}

/* Reads fd to its end into the parser as the source name (prefix: see
 * ag_pwned_parse_begin). */
static int read_source(struct run *r, int fd, const char *name, int prefix)
{
    size_t have = 0;
    ag_pwned_parse_begin(&r->parser, name, prefix);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (;;) {
        if (r->im->stop && *r->im->stop)
            return say(r, AG_EIO,
                       "%s: interrupted; the output is left as "
                       "it was",
                       name);
        ssize_t n = read(fd, r->buf + have, READ_SIZE - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return say(r, AG_EIO, "%s: read: %s", name, strerror(errno));
        if (n == 0)
            break;
        have += (size_t)n;
        r->st->bytes_read += (uint64_t)n;
        size_t used;
        int rc = ag_pwned_parse_feed(&r->parser, r->buf, have, &used);
        if (rc == AG_EINVAL)
            return say(r, rc, "%s", r->parser.err);
        if (rc != AG_OK)
            return rc; /* the writer's, said by emit */
        if (used == 0 && have == READ_SIZE) {
            r->parser.line++;
            ag_pwned_parse_fail(&r->parser,
                                "no line end in %zu bytes: not "
                                "a HASH:COUNT file",
                                READ_SIZE);
            return say(r, AG_EINVAL, "%s", r->parser.err);
        }
        memmove(r->buf, r->buf + used, have - used);
        have -= used;
        progress(r);
    }
    int rc = ag_pwned_parse_end(&r->parser, r->buf, have);
    if (rc == AG_EINVAL)
        return say(r, rc, "%s", r->parser.err);
    return rc;
}

static int read_path(struct run *r, const char *path, int dirfd,
                     const char *name, int prefix)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return say(r, AG_EIO, "%s: %s", path, strerror(errno));
    int rc = read_source(r, fd, path, prefix);
    close(fd);
    return rc;
}

/* "XXXXX.txt", any case: its prefix, or -1. */
static int prefix_of_name(const char *name)
{
    unsigned v = 0;
    for (int i = 0; i < 5; i++) {
        char c = name[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return -1;
        v = v << 4 | d;
    }
    return strcmp(name + 5, ".txt") == 0 ? (int)v : -1;
}

static int by_prefix(const void *a, const void *b)
{
    uint32_t x = ((const struct prefix_file *)a)->prefix;
    uint32_t y = ((const struct prefix_file *)b)->prefix;
    return x < y ? -1 : x > y;
}

/* The folder's prefix files in prefix order (*out, the caller frees);
 * AG_EINVAL for anything else in it or a prefix found twice. With
 * total, adds their sizes to it. */
static int list_folder(struct run *r, const char *path, int dirfd,
                       struct prefix_file **out, size_t *n, uint64_t *total)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct prefix_file *files = NULL;
    size_t len = 0, cap = 0;
    struct dirent *e;
    int rc = AG_OK;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return say(r, AG_EIO, "%s: %s", path, strerror(errno));
    }
    while (rc == AG_OK && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int prefix = prefix_of_name(e->d_name);
        if (prefix < 0) {
            rc = say(r, AG_EINVAL,
                     "%s/%s: not a prefix file (XXXXX.txt): a folder to "
                     "import holds only what the downloader wrote",
                     path, e->d_name);
            break;
        }
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            struct prefix_file *nf = realloc(files, ncap * sizeof(*nf));
            if (!nf) {
                rc = AG_ENOMEM;
                break;
            }
            files = nf;
            cap = ncap;
        }
        files[len].prefix = (uint32_t)prefix;
        memcpy(files[len].name, e->d_name, 10);
        files[len].name[10] = '\0';
        len++;
        /* A folder by a prefix file's name is refused input, not a read
         * that fails later; the type from readdir spares a stat where the
         * file system gives it. */
        struct stat st;
        bool is_dir = e->d_type == DT_DIR;
        if ((total || e->d_type == DT_UNKNOWN) &&
            fstatat(dirfd, e->d_name, &st, 0) == 0) {
            is_dir = S_ISDIR(st.st_mode);
            if (total)
                *total += (uint64_t)st.st_size;
        }
        if (is_dir)
            rc = say(r, AG_EINVAL,
                     "%s/%s: a folder, not a prefix file: a folder to import "
                     "holds only what the downloader wrote",
                     path, e->d_name);
    }
    closedir(d);
    if (rc == AG_OK && len)
        qsort(files, len, sizeof(*files), by_prefix);
    for (size_t i = 1; rc == AG_OK && i < len; i++)
        if (files[i].prefix == files[i - 1].prefix)
            rc = say(r, AG_EINVAL, "%s: %s and %s are the same prefix", path,
                     files[i - 1].name, files[i].name);
    if (rc != AG_OK) {
        free(files);
        return rc == AG_ENOMEM ? say(r, rc, "out of memory") : rc;
    }
    *out = files;
    *n = len;
    return AG_OK;
}

static int read_folder(struct run *r, const char *path, int dirfd)
{
    struct prefix_file *files;
    size_t n;
    int rc = list_folder(r, path, dirfd, &files, &n, NULL);
    size_t plen = strlen(path) + 16;
    char *name = malloc(plen);

    if (rc != AG_OK || !name) {
        free(name);
        if (rc == AG_OK)
            free(files);
        return rc == AG_OK ? say(r, AG_ENOMEM, "out of memory") : rc;
    }
    r->st->folders++;
    for (size_t i = 0; rc == AG_OK && i < n; i++) {
        snprintf(name, plen, "%s/%s", path, files[i].name);
        rc = read_path(r, name, dirfd, files[i].name, (int)files[i].prefix);
        r->st->prefix_files += rc == AG_OK;
    }
    free(name);
    free(files);
    return rc;
}

/* Whether the input st is the output, or the folder the output is
 * written in: an input there would be replaced by the corpus, or would
 * meet the temporary file among its prefix files. */
static bool is_output(const struct stat *st, const struct stat *out,
                      const struct stat *out_dir)
{
    if (out && st->st_dev == out->st_dev && st->st_ino == out->st_ino)
        return true;
    return out_dir && S_ISDIR(st->st_mode) && st->st_dev == out_dir->st_dev &&
           st->st_ino == out_dir->st_ino;
}

/* Stats the output (out, NULL when it is not there yet) and its folder
 * (out_dir, NULL when that is missing: the writer then says so). */
static int look_at_output(struct run *r, struct stat *out, struct stat *out_dir,
                          bool *has_out, bool *has_dir)
{
    const char *output = r->im->output;
    *has_out = stat(output, out) == 0;
    char *dir = strdup(output);
    if (!dir)
        return say(r, AG_ENOMEM, "out of memory");
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0'; /* "/x" is written in "/" */
    *has_dir = stat(slash ? dir : ".", out_dir) == 0;
    free(dir);
    return AG_OK;
}

/* Checks that every input can be read and none is the output before
 * anything is written, and sums their sizes when a progress display wants
 * them. */
static int look_at_inputs(struct run *r)
{
    const struct ag_pwned_import *im = r->im;
    int stdin_seen = 0;
    uint64_t total = 0;
    int known = 1;
    struct stat out, out_dir;
    bool has_out = false, has_dir = false;
    int rc = look_at_output(r, &out, &out_dir, &has_out, &has_dir);
    if (rc != AG_OK)
        return rc;

    for (size_t i = 0; i < im->n_inputs; i++) {
        const char *in = im->inputs[i];
        struct stat st;
        if (strcmp(in, "-") == 0) {
            if (stdin_seen++)
                return say(r, AG_EINVAL, "'-' (standard input) given twice");
            if (fstat(0, &st) != 0) {
                known = 0;
                continue;
            }
            if (is_output(&st, has_out ? &out : NULL, NULL))
                return say(r, AG_EINVAL,
                           "standard input is the output %s: write the "
                           "corpus to another file",
                           im->output);
            if (S_ISREG(st.st_mode))
                total += (uint64_t)st.st_size;
            else
                known = 0;
            continue;
        }
        if (stat(in, &st) != 0)
            return say(r, errno == ENOENT ? AG_EINVAL : AG_EIO, "%s: %s", in,
                       strerror(errno));
        if (is_output(&st, has_out ? &out : NULL, has_dir ? &out_dir : NULL))
            return say(r, AG_EINVAL,
                       "%s: %s the output %s: write the corpus to another "
                       "file",
                       in, S_ISDIR(st.st_mode) ? "holds" : "is", im->output);
        if (S_ISDIR(st.st_mode)) {
            int fd = open(in, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd < 0)
                return say(r, AG_EIO, "%s: %s", in, strerror(errno));
            struct prefix_file *files = NULL;
            size_t n;
            rc = list_folder(r, in, fd, &files, &n,
                             im->progress ? &total : NULL);
            free(files);
            close(fd);
            if (rc != AG_OK)
                return rc;
        } else if (S_ISREG(st.st_mode)) {
            total += (uint64_t)st.st_size;
        } else {
            known = 0; /* a FIFO, say: read it as it comes */
        }
    }
    r->st->bytes_total = known ? total : 0;
    return AG_OK;
}

static int read_input(struct run *r, const char *in)
{
    if (strcmp(in, "-") == 0)
        return read_source(r, 0, STDIN_NAME, -1);
    struct stat st;
    if (stat(in, &st) != 0)
        return say(r, AG_EIO, "%s: %s", in, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return read_path(r, in, AT_FDCWD, in, -1);
    int fd = open(in, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return say(r, AG_EIO, "%s: %s", in, strerror(errno));
    int rc = read_folder(r, in, fd);
    close(fd);
    return rc;
}

int ag_pwned_import_run(const struct ag_pwned_import *im,
                        struct ag_pwned_import_stats *st, char *why,
                        size_t whylen)
{
    struct run r = {.im = im, .st = st, .why = why, .whylen = whylen};
    memset(st, 0, sizeof(*st));
    if (whylen)
        why[0] = '\0';
    if (im->min_count < 1)
        return say(&r, AG_EINVAL, "--min-count must be 1 or more");
    int rc = look_at_inputs(&r);
    if (rc != AG_OK)
        return rc;
    r.buf = malloc(READ_SIZE);
    if (!r.buf)
        return say(&r, AG_ENOMEM, "out of memory");
    rc = ag_pwned_writer_open(im->output, im->mode, im->min_count, &r.w, why,
                              whylen);
    if (rc != AG_OK) {
        free(r.buf);
        return rc;
    }
    ag_pwned_parser_init(&r.parser, im->mode, im->min_count, emit, &r);
    for (size_t i = 0; rc == AG_OK && i < im->n_inputs; i++)
        rc = read_input(&r, im->inputs[i]);
    free(r.buf);
    progress(&r);
    /* A stop that came after the last read (or raced it) still stops:
     * the output is replaced only by an import nobody stopped. */
    if (rc == AG_OK && im->stop && *im->stop)
        rc = say(&r, AG_EIO, "interrupted; the output is left as it was");
    if (rc != AG_OK) {
        ag_pwned_writer_abort(r.w);
        return rc;
    }
    int64_t created = im->created_s ? im->created_s : (int64_t)time(NULL);
    return ag_pwned_writer_finish(r.w, created, &st->output_size, why, whylen);
}
