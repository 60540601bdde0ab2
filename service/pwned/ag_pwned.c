/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The corpus reader: maps a file that ag_pwned_write.c wrote, checks what
 * it can without touching the records, and answers ranges and lookups
 * from the mapping (ag_pwned_impl.h has the layout).
 */
#include "ag_pwned.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ag_error.h"
#include "ag_pwned_impl.h"

struct ag_pwned {
    const uint8_t *map; /* the whole file, read-only */
    size_t map_len;
    const uint8_t *index;
    const uint8_t *records;
    unsigned suffix_len;  /* hash bytes in a record */
    unsigned record_size; /* suffix_len + 4 */
    struct ag_pwned_info info;
    char *path; /* for messages; owned */
};

static void say(char *why, size_t whylen, const char *path, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));

static void say(char *why, size_t whylen, const char *path, const char *fmt,
                ...)
{
    if (!why || !whylen)
        return;
    int n = snprintf(why, whylen, "%s: ", path);
    if (n < 0 || (size_t)n >= whylen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + n, whylen - (size_t)n, fmt, ap);
    va_end(ap);
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static uint64_t index_at(const struct ag_pwned *p, uint32_t prefix)
{
    return ag_pwned_get64(p->index + (size_t)prefix * 8);
}

/* Checks the header of a mapping of size bytes and fills p from it;
 * AG_EINVAL with why on the first fault. */
static int check_header(struct ag_pwned *p, const char *path, char *why,
                        size_t whylen)
{
    const uint8_t *h = p->map;
    uint8_t sum[crypto_generichash_BYTES];

    if (memcmp(h + AG_PWNED_HDR_MAGIC, AG_PWNED_MAGIC, AG_PWNED_MAGIC_LEN)) {
        say(why, whylen, path, "not an abuseguard pwned corpus (bad magic)");
        return AG_EINVAL;
    }
    uint32_t version = ag_pwned_get32(h + AG_PWNED_HDR_VERSION);
    if (version != AG_PWNED_VERSION) {
        say(why, whylen, path,
            "corpus format version %" PRIu32 ", this build reads %u", version,
            AG_PWNED_VERSION);
        return AG_EINVAL;
    }
    crypto_generichash(sum, sizeof(sum), h, AG_PWNED_HDR_SELF, NULL, 0);
    if (memcmp(sum, h + AG_PWNED_HDR_SELF_SUM, sizeof(sum))) {
        say(why, whylen, path, "the header's checksum does not match");
        return AG_EINVAL;
    }
    uint32_t mode = ag_pwned_get32(h + AG_PWNED_HDR_MODE);
    unsigned hash_len = ag_pwned_hash_len((int)mode);
    if (!hash_len) {
        say(why, whylen, path, "unknown mode %" PRIu32, mode);
        return AG_EINVAL;
    }
    p->suffix_len = hash_len - AG_PWNED_SKIP;
    p->record_size = p->suffix_len + 4;
    if (ag_pwned_get32(h + AG_PWNED_HDR_SUFFIX_BYTES) != p->suffix_len ||
        ag_pwned_get32(h + AG_PWNED_HDR_RECORD_SIZE) != p->record_size ||
        ag_pwned_get64(h + AG_PWNED_HDR_INDEX_OFF) != AG_PWNED_INDEX_OFF ||
        ag_pwned_get64(h + AG_PWNED_HDR_RECORDS_OFF) != AG_PWNED_RECORDS_OFF ||
        ag_pwned_get32(h + AG_PWNED_HDR_RESERVED1) != 0 ||
        !all_zero(h + AG_PWNED_HDR_RESERVED2,
                  AG_PWNED_HDR_SELF - AG_PWNED_HDR_RESERVED2)) {
        say(why, whylen, path,
            "the header's layout fields are not version "
            "1's");
        return AG_EINVAL;
    }
    p->info.mode = (enum ag_pwned_mode)mode;
    p->info.entries = ag_pwned_get64(h + AG_PWNED_HDR_ENTRIES);
    p->info.min_count = ag_pwned_get32(h + AG_PWNED_HDR_MIN_COUNT);
    p->info.created_s = (int64_t)ag_pwned_get64(h + AG_PWNED_HDR_CREATED);
    /* Readers print and subtract it (verify, the log, the age gauge). */
    if (p->info.created_s < 0 || p->info.created_s > AG_PWNED_CREATED_MAX) {
        say(why, whylen, path,
            "the header's creation time %" PRId64
            " is not a time from 1970 to 9999: damaged",
            p->info.created_s);
        return AG_EINVAL;
    }
    p->info.file_size = ag_pwned_get64(h + AG_PWNED_HDR_FILE_SIZE);
    memcpy(p->info.checksum, h + AG_PWNED_HDR_CHECKSUM, AG_PWNED_CHECKSUM_LEN);

    uint64_t max_entries = (UINT64_MAX - AG_PWNED_RECORDS_OFF) / p->record_size;
    uint64_t want =
        p->info.entries <= max_entries
            ? AG_PWNED_RECORDS_OFF + p->info.entries * p->record_size
            : 0;
    if (p->info.file_size != p->map_len || want != p->map_len) {
        say(why, whylen, path,
            "the file is %zu bytes, its header says %" PRIu64 " (%" PRIu64
            " entries make %" PRIu64 "): truncated or damaged",
            p->map_len, p->info.file_size, p->info.entries, want);
        return AG_EINVAL;
    }
    return AG_OK;
}

/* The index must run from 0 to the count of entries without going
 * down, or a range would read outside the records; and no prefix may hold
 * more than AG_PWNED_PREFIX_ENTRIES_MAX, since a range answer is sized
 * from its count. */
static int check_index(const struct ag_pwned *p, const char *path, char *why,
                       size_t whylen)
{
    if (index_at(p, 0) != 0 ||
        index_at(p, AG_PWNED_PREFIXES) != p->info.entries) {
        say(why, whylen, path,
            "the index does not run from 0 to the count of entries");
        return AG_EINVAL;
    }
    uint64_t last = 0;
    for (uint32_t i = 1; i <= AG_PWNED_PREFIXES; i++) {
        uint64_t v = index_at(p, i);
        if (v < last) {
            say(why, whylen, path, "the index goes down at prefix %05" PRIX32,
                i - 1);
            return AG_EINVAL;
        }
        if (v - last > AG_PWNED_PREFIX_ENTRIES_MAX) {
            say(why, whylen, path,
                "prefix %05" PRIX32 " holds %" PRIu64
                " entries, more than the %u a prefix may hold: damaged",
                i - 1, v - last, AG_PWNED_PREFIX_ENTRIES_MAX);
            return AG_EINVAL;
        }
        last = v;
    }
    return AG_OK;
}

int ag_pwned_open(const char *path, struct ag_pwned **out, char *why,
                  size_t whylen)
{
    *out = NULL;
    if (sodium_init() < 0) {
        say(why, whylen, path, "libsodium failed to start");
        return AG_EIO;
    }
    /* Non-blocking: opening a FIFO would wait for a writer, and the
     * watcher, the start and the stop with it. The flag does nothing to a
     * regular file's reads, and mmap ignores it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        say(why, whylen, path, "%s", strerror(errno));
        return AG_EIO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        say(why, whylen, path, "%s", strerror(errno));
        close(fd);
        return AG_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        say(why, whylen, path, "not a regular file");
        close(fd);
        return AG_EINVAL;
    }
    if ((uint64_t)st.st_size < AG_PWNED_RECORDS_OFF) {
        say(why, whylen, path,
            "%jd bytes, shorter than a corpus's header and index "
            "(%" PRIu64 "): not a corpus, or truncated",
            (intmax_t)st.st_size, (uint64_t)AG_PWNED_RECORDS_OFF);
        close(fd);
        return AG_EINVAL;
    }
    struct ag_pwned *p = calloc(1, sizeof(*p));
    if (!p) {
        close(fd);
        return AG_ENOMEM;
    }
    p->path = strdup(path);
    if (!p->path) {
        free(p);
        close(fd);
        return AG_ENOMEM;
    }
    p->map_len = (size_t)st.st_size;
    void *m = mmap(NULL, p->map_len, PROT_READ, MAP_SHARED, fd, 0);
    close(fd); /* the mapping keeps the file */
    if (m == MAP_FAILED) {
        say(why, whylen, path, "mmap: %s", strerror(errno));
        free(p->path);
        free(p);
        return AG_EIO;
    }
    p->map = m;
    p->index = p->map + AG_PWNED_INDEX_OFF;
    p->records = p->map + AG_PWNED_RECORDS_OFF;
    int rc = check_header(p, path, why, whylen);
    if (rc == AG_OK)
        rc = check_index(p, path, why, whylen);
    if (rc != AG_OK) {
        ag_pwned_close(p);
        return rc;
    }
    *out = p;
    return AG_OK;
}

void ag_pwned_close(struct ag_pwned *p)
{
    if (!p)
        return;
    munmap((void *)p->map, p->map_len);
    free(p->path);
    free(p);
}

const struct ag_pwned_info *ag_pwned_info(const struct ag_pwned *p)
{
    return &p->info;
}

/* The records must lie in the slice of their prefix (the half byte they
 * hold), go strictly up and count at least 1 (0 is a padding line's
 * count, which would let a padded answer repeat a real suffix): a
 * writer's fault the checksum would not see. */
static int check_records(const struct ag_pwned *p, char *why, size_t whylen)
{
    for (uint32_t pre = 0; pre < AG_PWNED_PREFIXES; pre++) {
        uint64_t a = index_at(p, pre), b = index_at(p, pre + 1);
        const uint8_t *prev = NULL;
        for (uint64_t i = a; i < b; i++) {
            const uint8_t *r = p->records + i * p->record_size;
            if ((r[0] >> 4) != (pre & 0xf) ||
                (prev && memcmp(prev, r, p->suffix_len) >= 0)) {
                say(why, whylen, p->path,
                    "entry %" PRIu64 " is out of order or out of its "
                    "prefix %05" PRIX32,
                    i, pre);
                return AG_EINVAL;
            }
            if (ag_pwned_get32(r + p->suffix_len) == 0) {
                say(why, whylen, p->path,
                    "entry %" PRIu64 " of prefix %05" PRIX32
                    " has count 0: damaged",
                    i, pre);
                return AG_EINVAL;
            }
            prev = r;
        }
    }
    return AG_OK;
}

int ag_pwned_verify(const struct ag_pwned *p, char *why, size_t whylen)
{
    crypto_generichash_state st;
    uint8_t sum[crypto_generichash_BYTES];
    const size_t chunk = (size_t)1 << 24;
    uint64_t len = p->info.entries * p->record_size;

    crypto_generichash_init(&st, NULL, 0, sizeof(sum));
    for (uint64_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? (size_t)(len - off) : chunk;
        crypto_generichash_update(&st, p->records + off, n);
    }
    crypto_generichash_update(&st, p->index, AG_PWNED_INDEX_SIZE);
    crypto_generichash_final(&st, sum, sizeof(sum));
    if (memcmp(sum, p->info.checksum, sizeof(sum))) {
        say(why, whylen, p->path,
            "the records' checksum does not match the header's: damaged");
        return AG_EINVAL;
    }
    return check_records(p, why, whylen);
}

void ag_pwned_range(const struct ag_pwned *p, uint32_t prefix,
                    struct ag_pwned_range *r)
{
    r->p = p;
    if (prefix >= AG_PWNED_PREFIXES) {
        r->first = 0;
        r->n = 0;
        return;
    }
    r->first = index_at(p, prefix);
    r->n = index_at(p, prefix + 1) - r->first;
}

void ag_pwned_suffix_hex(const uint8_t *tail, size_t tail_len, char *hex)
{
    static const char digits[] = "0123456789ABCDEF";
    char *o = hex;

    /* The first byte's high half is the prefix's last digit. */
    *o++ = digits[tail[0] & 0xf];
    for (size_t k = 1; k < tail_len; k++) {
        *o++ = digits[tail[k] >> 4];
        *o++ = digits[tail[k] & 0xf];
    }
    *o = '\0';
}

uint32_t ag_pwned_range_entry(const struct ag_pwned_range *r, uint64_t i,
                              char *hex)
{
    const struct ag_pwned *p = r->p;
    const uint8_t *rec = p->records + (r->first + i) * p->record_size;
    ag_pwned_suffix_hex(rec, p->suffix_len, hex);
    return ag_pwned_get32(rec + p->suffix_len);
}

uint32_t ag_pwned_lookup(const struct ag_pwned *p, const uint8_t *hash)
{
    struct ag_pwned_range r;
    ag_pwned_range(p, ag_pwned_prefix_of(hash), &r);
    const uint8_t *key = hash + AG_PWNED_SKIP;
    uint64_t lo = r.first, hi = r.first + r.n;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const uint8_t *rec = p->records + mid * p->record_size;
        int c = memcmp(rec, key, p->suffix_len);
        if (c == 0)
            return ag_pwned_get32(rec + p->suffix_len);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}
