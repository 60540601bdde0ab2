/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The corpus writer (ag_pwned_write.h). The records are written first,
 * from their final offset on, through a buffer that is also fed to the
 * checksum; the index grows in memory as the prefixes go by; the end
 * writes the index and then the header, which makes the file valid,
 * syncs it and renames it into place.
 */
#include "ag_pwned_write.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "ag_error.h"
#include "ag_pwned_impl.h"

#define BUF_SIZE ((size_t)1 << 20)

struct ag_pwned_writer {
    int fd;
    enum ag_pwned_mode mode;
    uint32_t min_count;
    unsigned hash_len;
    unsigned suffix_len;
    unsigned record_size;
    uint64_t entries;
    uint32_t next_prefix;  /* the first index slot not yet written */
    uint64_t prefix_first; /* the entry the last prefix seen starts at */
    uint8_t last[AG_PWNED_SHA1_LEN];
    uint8_t *index; /* AG_PWNED_INDEX_SIZE bytes, little-endian */
    uint8_t *buf;   /* records not yet written */
    size_t buf_len;
    crypto_generichash_state sum;
    char *path;
    char *tmp;
    char err[256];
};

static void fail(struct ag_pwned_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(struct ag_pwned_writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof(w->err), fmt, ap);
    va_end(ap);
}

static void copy_why(const struct ag_pwned_writer *w, char *why, size_t whylen)
{
    if (why && whylen)
        snprintf(why, whylen, "%s", w->err);
}

static void free_writer(struct ag_pwned_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    free(w->index);
    free(w->buf);
    free(w->path);
    free(w->tmp);
    free(w);
}

/* Writes all n bytes at the file's offset, across short writes. */
static int write_all(struct ag_pwned_writer *w, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            fail(w, "%s: write: %s", w->tmp, strerror(errno));
            return AG_EIO;
        }
        p += k;
        n -= (size_t)k;
    }
    return AG_OK;
}

static int pwrite_all(struct ag_pwned_writer *w, const uint8_t *p, size_t n,
                      off_t off)
{
    while (n) {
        ssize_t k = pwrite(w->fd, p, n, off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            fail(w, "%s: write: %s", w->tmp, strerror(errno));
            return AG_EIO;
        }
        p += k;
        n -= (size_t)k;
        off += k;
    }
    return AG_OK;
}

static int flush(struct ag_pwned_writer *w)
{
    crypto_generichash_update(&w->sum, w->buf, w->buf_len);
    int rc = write_all(w, w->buf, w->buf_len);
    w->buf_len = 0;
    return rc;
}

int ag_pwned_writer_open(const char *path, enum ag_pwned_mode mode,
                         uint32_t min_count, struct ag_pwned_writer **out,
                         char *why, size_t whylen)
{
    *out = NULL;
    unsigned hash_len = ag_pwned_hash_len((int)mode);
    if (!hash_len) {
        if (why && whylen)
            snprintf(why, whylen, "unknown corpus mode %d", (int)mode);
        return AG_EINVAL;
    }
    if (sodium_init() < 0) {
        if (why && whylen)
            snprintf(why, whylen, "libsodium failed to start");
        return AG_EIO;
    }
    struct ag_pwned_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return AG_ENOMEM;
    w->fd = -1;
    w->mode = mode;
    w->min_count = min_count;
    w->hash_len = hash_len;
    w->suffix_len = hash_len - AG_PWNED_SKIP;
    w->record_size = w->suffix_len + 4;
    size_t tlen = strlen(path) + 32;
    w->path = strdup(path);
    w->tmp = malloc(tlen);
    w->index = calloc(1, AG_PWNED_INDEX_SIZE);
    w->buf = malloc(BUF_SIZE);
    if (!w->path || !w->tmp || !w->index || !w->buf) {
        free_writer(w);
        return AG_ENOMEM;
    }
    snprintf(w->tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    /* A file of this name is a dead process's (the pid is ours now). */
    unlink(w->tmp);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        fail(w, "%s: %s", w->tmp, strerror(errno));
        copy_why(w, why, whylen);
        free_writer(w);
        return AG_EIO;
    }
    if (lseek(w->fd, (off_t)AG_PWNED_RECORDS_OFF, SEEK_SET) < 0) {
        fail(w, "%s: lseek: %s", w->tmp, strerror(errno));
        copy_why(w, why, whylen);
        ag_pwned_writer_abort(w);
        return AG_EIO;
    }
    crypto_generichash_init(&w->sum, NULL, 0, AG_PWNED_CHECKSUM_LEN);
    *out = w;
    return AG_OK;
}

/* Sets the index slots up to and including prefix to the current count
 * of entries: the prefixes between the last one seen and this one are
 * empty, and this one starts here. */
static void index_up_to(struct ag_pwned_writer *w, uint32_t prefix)
{
    while (w->next_prefix <= prefix) {
        ag_pwned_put64(w->index + (size_t)w->next_prefix * 8, w->entries);
        w->next_prefix++;
    }
}

int ag_pwned_writer_add(struct ag_pwned_writer *w, const uint8_t *hash,
                        uint32_t count)
{
    /* The reader refuses both (ag_pwned.h): a count 0 is a padding
     * line's, and a range answer is sized from its count. */
    if (count == 0) {
        fail(w, "hash %" PRIu64 " has count 0; counts start at 1", w->entries);
        return AG_EINVAL;
    }
    if (w->entries && ag_pwned_hash_cmp(hash, w->last, w->hash_len) <= 0) {
        fail(w, "hash %" PRIu64 " is not greater than the one before it",
             w->entries);
        return AG_EINVAL;
    }
    memcpy(w->last, hash, w->hash_len);
    uint32_t prefix = ag_pwned_prefix_of(hash);
    if (prefix >= w->next_prefix) {
        index_up_to(w, prefix);
        w->prefix_first = w->entries;
    }
    if (w->entries - w->prefix_first >= AG_PWNED_PREFIX_ENTRIES_MAX) {
        fail(w,
             "prefix %05" PRIX32 " holds more than %u hashes, the most a "
             "prefix may hold: not a Pwned Passwords corpus",
             prefix, AG_PWNED_PREFIX_ENTRIES_MAX);
        return AG_EINVAL;
    }
    if (BUF_SIZE - w->buf_len < w->record_size) {
        int rc = flush(w);
        if (rc != AG_OK)
            return rc;
    }
    uint8_t *r = w->buf + w->buf_len;
    memcpy(r, hash + AG_PWNED_SKIP, w->suffix_len);
    ag_pwned_put32(r + w->suffix_len, count);
    w->buf_len += w->record_size;
    w->entries++;
    return AG_OK;
}

uint64_t ag_pwned_writer_entries(const struct ag_pwned_writer *w)
{
    return w->entries;
}

const char *ag_pwned_writer_error(const struct ag_pwned_writer *w)
{
    return w->err;
}

static void fill_header(struct ag_pwned_writer *w, uint8_t *h,
                        int64_t created_s, uint64_t size)
{
    memset(h, 0, AG_PWNED_HEADER_SIZE);
    memcpy(h + AG_PWNED_HDR_MAGIC, AG_PWNED_MAGIC, AG_PWNED_MAGIC_LEN);
    ag_pwned_put32(h + AG_PWNED_HDR_VERSION, AG_PWNED_VERSION);
    ag_pwned_put32(h + AG_PWNED_HDR_MODE, (uint32_t)w->mode);
    ag_pwned_put32(h + AG_PWNED_HDR_SUFFIX_BYTES, w->suffix_len);
    ag_pwned_put32(h + AG_PWNED_HDR_RECORD_SIZE, w->record_size);
    ag_pwned_put64(h + AG_PWNED_HDR_ENTRIES, w->entries);
    ag_pwned_put32(h + AG_PWNED_HDR_MIN_COUNT, w->min_count);
    ag_pwned_put64(h + AG_PWNED_HDR_CREATED, (uint64_t)created_s);
    ag_pwned_put64(h + AG_PWNED_HDR_INDEX_OFF, AG_PWNED_INDEX_OFF);
    ag_pwned_put64(h + AG_PWNED_HDR_RECORDS_OFF, AG_PWNED_RECORDS_OFF);
    ag_pwned_put64(h + AG_PWNED_HDR_FILE_SIZE, size);
    crypto_generichash_final(&w->sum, h + AG_PWNED_HDR_CHECKSUM,
                             AG_PWNED_CHECKSUM_LEN);
    crypto_generichash(h + AG_PWNED_HDR_SELF_SUM, AG_PWNED_CHECKSUM_LEN, h,
                       AG_PWNED_HDR_SELF, NULL, 0);
}

/* Makes the rename itself durable; a file system that cannot sync a
 * directory (EINVAL) has nothing to sync. */
static int sync_dir(struct ag_pwned_writer *w)
{
    char *copy = strdup(w->path);
    if (!copy)
        return AG_ENOMEM;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = AG_OK;
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL)) {
        fail(w, "%s: sync its folder: %s", w->path, strerror(errno));
        rc = AG_EIO;
    }
    if (fd >= 0)
        close(fd);
    free(copy);
    return rc;
}

int ag_pwned_writer_finish(struct ag_pwned_writer *w, int64_t created_s,
                           uint64_t *size, char *why, size_t whylen)
{
    uint8_t h[AG_PWNED_HEADER_SIZE];
    uint64_t file_size =
        AG_PWNED_RECORDS_OFF + w->entries * (uint64_t)w->record_size;
    int rc = flush(w);

    index_up_to(w, AG_PWNED_PREFIXES);
    crypto_generichash_update(&w->sum, w->index, AG_PWNED_INDEX_SIZE);
    fill_header(w, h, created_s, file_size);
    if (rc == AG_OK)
        rc = pwrite_all(w, w->index, AG_PWNED_INDEX_SIZE,
                        (off_t)AG_PWNED_INDEX_OFF);
    if (rc == AG_OK)
        rc = pwrite_all(w, h, sizeof(h), 0);
    if (rc == AG_OK && fsync(w->fd) != 0) {
        fail(w, "%s: fsync: %s", w->tmp, strerror(errno));
        rc = AG_EIO;
    }
    if (rc == AG_OK) {
        int fd = w->fd;
        w->fd = -1;
        if (close(fd) != 0) {
            fail(w, "%s: close: %s", w->tmp, strerror(errno));
            rc = AG_EIO;
        }
    }
    if (rc == AG_OK && rename(w->tmp, w->path) != 0) {
        fail(w, "rename %s to %s: %s", w->tmp, w->path, strerror(errno));
        rc = AG_EIO;
    }
    if (rc != AG_OK) {
        copy_why(w, why, whylen);
        ag_pwned_writer_abort(w);
        return rc;
    }
    rc = sync_dir(w);
    copy_why(w, why, whylen);
    if (size)
        *size = file_size;
    free_writer(w);
    return rc;
}

void ag_pwned_writer_abort(struct ag_pwned_writer *w)
{
    if (!w)
        return;
    unlink(w->tmp);
    free_writer(w);
}
