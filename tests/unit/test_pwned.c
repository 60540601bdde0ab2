/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_pwned and ag_pwned_write: what the writer writes the reader reads
 * back (every range's slice, lookups that hit and miss, the first and last
 * prefixes, empty prefixes, both modes); the writer refuses hashes out of
 * order and leaves the previous file alone when it fails or is aborted;
 * open refuses a file that is not a corpus or is damaged in its header
 * (a creation time no reader can print), its size or its index (a prefix
 * over the cap), refuses a FIFO without waiting for a writer, and verify
 * finds a flipped record byte or a count 0 that open cannot see.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ag_error.h"
#include "ag_pwned.h"
#include "ag_pwned_impl.h"
#include "ag_pwned_write.h"

struct fx {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/ag_test_pwned.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/corpus.agp", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Files in the fixture's folder, the corpus included. */
static int files_in(const struct fx *f)
{
    DIR *d = opendir(f->dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A hash of len bytes that starts with the 20-bit prefix and goes on
 * with bytes derived from seq: increasing seq within a prefix gives
 * increasing hashes. */
static void make_hash(uint8_t *h, unsigned len, uint32_t prefix, uint32_t seq)
{
    memset(h, 0, len);
    h[0] = (uint8_t)(prefix >> 12);
    h[1] = (uint8_t)(prefix >> 4);
    h[2] = (uint8_t)((prefix & 0xf) << 4 | ((seq >> 24) & 0xf));
    h[3] = (uint8_t)(seq >> 16);
    h[4] = (uint8_t)(seq >> 8);
    h[5] = (uint8_t)seq;
    for (unsigned i = 6; i < len; i++)
        h[i] = (uint8_t)(0xa5 ^ i ^ seq);
}

/* The prefixes the round trip fills, with how many entries each. */
static const struct {
    uint32_t prefix;
    uint32_t n;
} filled[] = {
    {0x00000, 3}, {0x00001, 1}, {0x00abc, 5},
    {0x7ffff, 2}, {0x80000, 1}, {0xfffff, 4},
};

static uint32_t count_of(uint32_t prefix, uint32_t seq)
{
    return prefix % 1000 + seq * 7 + 1;
}

static void write_corpus(const char *path, enum ag_pwned_mode mode)
{
    struct ag_pwned_writer *w;
    char why[256];
    unsigned len = ag_pwned_hash_len(mode);
    uint8_t h[AG_PWNED_SHA1_LEN];

    assert_int_equal(ag_pwned_writer_open(path, mode, 3, &w, why, sizeof(why)),
                     AG_OK);
    for (size_t k = 0; k < sizeof(filled) / sizeof(filled[0]); k++)
        for (uint32_t s = 0; s < filled[k].n; s++) {
            make_hash(h, len, filled[k].prefix, s * 1000 + 1);
            assert_int_equal(
                ag_pwned_writer_add(w, h, count_of(filled[k].prefix, s)),
                AG_OK);
        }
    uint64_t size = 0;
    assert_int_equal(
        ag_pwned_writer_finish(w, 1700000000, &size, why, sizeof(why)), AG_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal((uint64_t)st.st_size, size);
}

static void round_trip(const char *path, enum ag_pwned_mode mode)
{
    struct ag_pwned *p;
    char why[256];
    unsigned len = ag_pwned_hash_len(mode);
    uint8_t h[AG_PWNED_SHA1_LEN];

    write_corpus(path, mode);
    assert_int_equal(ag_pwned_open(path, &p, why, sizeof(why)), AG_OK);
    assert_int_equal(ag_pwned_verify(p, why, sizeof(why)), AG_OK);
    const struct ag_pwned_info *info = ag_pwned_info(p);
    assert_int_equal(info->mode, mode);
    assert_int_equal(info->entries, 16);
    assert_int_equal(info->min_count, 3);
    assert_int_equal(info->created_s, 1700000000);

    for (size_t k = 0; k < sizeof(filled) / sizeof(filled[0]); k++) {
        struct ag_pwned_range r;
        ag_pwned_range(p, filled[k].prefix, &r);
        assert_int_equal(r.n, filled[k].n);
        for (uint32_t s = 0; s < filled[k].n; s++) {
            char hex[AG_PWNED_SUFFIX_HEX_MAX + 1], want[64];
            make_hash(h, len, filled[k].prefix, s * 1000 + 1);
            /* The suffix is the hash's hex after the 5 prefix digits. */
            for (unsigned i = 0; i < len; i++)
                snprintf(want + 2 * i, 3, "%02X", h[i]);
            assert_int_equal(ag_pwned_range_entry(&r, s, hex),
                             count_of(filled[k].prefix, s));
            assert_string_equal(hex, want + 5);
            assert_int_equal(strlen(hex), len * 2 - 5);
            assert_int_equal(ag_pwned_lookup(p, h),
                             count_of(filled[k].prefix, s));
            /* A neighbour of a stored hash is not in the corpus. */
            h[len - 1] ^= 1;
            assert_int_equal(ag_pwned_lookup(p, h), 0);
        }
    }
    /* Prefixes with nothing: between, before the last, past the end. */
    struct ag_pwned_range r;
    uint32_t empty[] = {0x00002, 0x00abb, 0x00abd, 0x7fffe, 0xffffe};
    for (size_t k = 0; k < sizeof(empty) / sizeof(empty[0]); k++) {
        ag_pwned_range(p, empty[k], &r);
        assert_int_equal(r.n, 0);
        make_hash(h, len, empty[k], 1);
        assert_int_equal(ag_pwned_lookup(p, h), 0);
    }
    ag_pwned_range(p, AG_PWNED_PREFIXES, &r);
    assert_int_equal(r.n, 0);
    ag_pwned_close(p);
}

static void sha1_round_trip_reads_back_every_range_and_lookup(void **state)
{
    struct fx *f = *state;
    round_trip(f->path, AG_PWNED_SHA1);
    assert_int_equal(files_in(f), 1); /* no temporary file left */
}

static void ntlm_round_trip_reads_back_every_range_and_lookup(void **state)
{
    struct fx *f = *state;
    round_trip(f->path, AG_PWNED_NTLM);
    assert_int_equal(files_in(f), 1);
}

static void empty_corpus_opens_with_every_range_empty(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_writer *w;
    struct ag_pwned *p;
    char why[256];
    uint8_t h[AG_PWNED_SHA1_LEN] = {0};

    assert_int_equal(
        ag_pwned_writer_open(f->path, AG_PWNED_SHA1, 1, &w, why, sizeof(why)),
        AG_OK);
    assert_int_equal(ag_pwned_writer_finish(w, 1, NULL, why, sizeof(why)),
                     AG_OK);
    assert_int_equal(ag_pwned_open(f->path, &p, why, sizeof(why)), AG_OK);
    assert_int_equal(ag_pwned_verify(p, why, sizeof(why)), AG_OK);
    assert_int_equal(ag_pwned_info(p)->entries, 0);
    struct ag_pwned_range r;
    ag_pwned_range(p, 0, &r);
    assert_int_equal(r.n, 0);
    ag_pwned_range(p, AG_PWNED_PREFIXES - 1, &r);
    assert_int_equal(r.n, 0);
    assert_int_equal(ag_pwned_lookup(p, h), 0);
    ag_pwned_close(p);
}

static void writer_refuses_a_hash_out_of_order_or_repeated(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_writer *w;
    char why[256];
    uint8_t a[AG_PWNED_SHA1_LEN], b[AG_PWNED_SHA1_LEN];

    make_hash(a, AG_PWNED_SHA1_LEN, 5, 2);
    make_hash(b, AG_PWNED_SHA1_LEN, 5, 1);
    assert_int_equal(
        ag_pwned_writer_open(f->path, AG_PWNED_SHA1, 1, &w, why, sizeof(why)),
        AG_OK);
    assert_int_equal(ag_pwned_writer_add(w, a, 1), AG_OK);
    assert_int_equal(ag_pwned_writer_add(w, a, 1), AG_EINVAL);
    assert_int_equal(ag_pwned_writer_add(w, b, 1), AG_EINVAL);
    assert_non_null(strstr(ag_pwned_writer_error(w), "not greater"));
    ag_pwned_writer_abort(w);
    assert_int_equal(files_in(f), 0);
}

static void aborted_writer_leaves_the_previous_file_as_it_was(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_writer *w;
    struct ag_pwned *p;
    char why[256];
    uint8_t h[AG_PWNED_SHA1_LEN];

    write_corpus(f->path, AG_PWNED_SHA1);
    assert_int_equal(
        ag_pwned_writer_open(f->path, AG_PWNED_SHA1, 1, &w, why, sizeof(why)),
        AG_OK);
    make_hash(h, AG_PWNED_SHA1_LEN, 9, 9);
    assert_int_equal(ag_pwned_writer_add(w, h, 1), AG_OK);
    assert_int_equal(files_in(f), 2); /* the corpus and the temporary */
    ag_pwned_writer_abort(w);
    assert_int_equal(files_in(f), 1);
    assert_int_equal(ag_pwned_open(f->path, &p, why, sizeof(why)), AG_OK);
    assert_int_equal(ag_pwned_info(p)->entries, 16);
    assert_int_equal(ag_pwned_lookup(p, h), 0);
    ag_pwned_close(p);
}

static void writer_into_a_missing_folder_fails_naming_it(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_writer *w;
    char why[256], path[256];

    snprintf(path, sizeof(path), "%s/no/such/corpus", f->dir);
    assert_int_equal(
        ag_pwned_writer_open(path, AG_PWNED_SHA1, 1, &w, why, sizeof(why)),
        AG_EIO);
    assert_null(w);
    assert_non_null(strstr(why, "/no/such/corpus.tmp."));
}

/* Rewrites n bytes of the file at off. */
static void patch(const char *path, long off, const void *bytes, size_t n)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
    close(fd);
}

/* Rewrites the header's own checksum after a change to its fields, so
 * that a test reaches the check behind it. */
static void reseal_header(const char *path)
{
    uint8_t h[AG_PWNED_HEADER_SIZE];
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
    crypto_generichash(h + AG_PWNED_HDR_SELF_SUM, AG_PWNED_CHECKSUM_LEN, h,
                       AG_PWNED_HDR_SELF, NULL, 0);
    assert_int_equal(pwrite(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
    close(fd);
}

static void open_refused(const char *path, int code, const char *why_has)
{
    struct ag_pwned *p = (struct ag_pwned *)1;
    char why[256] = "";
    assert_int_equal(ag_pwned_open(path, &p, why, sizeof(why)), code);
    assert_null(p);
    if (!strstr(why, why_has) || !strstr(why, path))
        fail_msg("why \"%s\" should name %s and say \"%s\"", why, path,
                 why_has);
}

static void open_refuses_a_missing_or_short_file(void **state)
{
    struct fx *f = *state;
    open_refused(f->path, AG_EIO, "No such file");
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs("0000000A2A3B4C5D6E7F8091A2B3C4D5E6F70:3\n", fp);
    fclose(fp);
    open_refused(f->path, AG_EINVAL, "shorter than a corpus");
}

static void open_refuses_a_bad_magic(void **state)
{
    struct fx *f = *state;
    write_corpus(f->path, AG_PWNED_SHA1);
    patch(f->path, AG_PWNED_HDR_MAGIC, "NOTPWNED", 8);
    open_refused(f->path, AG_EINVAL, "bad magic");
}

static void open_refuses_a_header_whose_checksum_fails(void **state)
{
    struct fx *f = *state;
    write_corpus(f->path, AG_PWNED_SHA1);
    uint8_t entries[8];
    ag_pwned_put64(entries, 17);
    patch(f->path, AG_PWNED_HDR_ENTRIES, entries, 8);
    open_refused(f->path, AG_EINVAL, "header's checksum");
}

static void open_refuses_another_version_or_mode(void **state)
{
    struct fx *f = *state;
    uint8_t v[4];
    write_corpus(f->path, AG_PWNED_SHA1);
    ag_pwned_put32(v, 2);
    patch(f->path, AG_PWNED_HDR_VERSION, v, 4);
    reseal_header(f->path);
    open_refused(f->path, AG_EINVAL, "version 2");
    write_corpus(f->path, AG_PWNED_SHA1);
    ag_pwned_put32(v, 3);
    patch(f->path, AG_PWNED_HDR_MODE, v, 4);
    reseal_header(f->path);
    open_refused(f->path, AG_EINVAL, "unknown mode 3");
}

static void open_refuses_a_truncated_or_grown_file(void **state)
{
    struct fx *f = *state;
    struct stat st;
    write_corpus(f->path, AG_PWNED_SHA1);
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(truncate(f->path, st.st_size - 1), 0);
    open_refused(f->path, AG_EINVAL, "truncated or damaged");
    assert_int_equal(truncate(f->path, st.st_size + 22), 0);
    open_refused(f->path, AG_EINVAL, "truncated or damaged");
    /* A header that claims one entry more than the file holds. */
    write_corpus(f->path, AG_PWNED_SHA1);
    uint8_t entries[8];
    ag_pwned_put64(entries, 17);
    patch(f->path, AG_PWNED_HDR_ENTRIES, entries, 8);
    reseal_header(f->path);
    open_refused(f->path, AG_EINVAL, "17 entries");
}

static void open_refuses_an_index_that_goes_down(void **state)
{
    struct fx *f = *state;
    uint8_t v[8];
    write_corpus(f->path, AG_PWNED_SHA1);
    /* Prefix 00abc starts at entry 4; make 00abd's slot say 2. */
    ag_pwned_put64(v, 2);
    patch(f->path, (long)(AG_PWNED_INDEX_OFF + 0xabdu * 8), v, 8);
    open_refused(f->path, AG_EINVAL, "goes down at prefix 00ABC");
    /* And one whose last slot is not the count of entries. */
    write_corpus(f->path, AG_PWNED_SHA1);
    ag_pwned_put64(v, 15);
    patch(f->path, (long)(AG_PWNED_INDEX_OFF + AG_PWNED_PREFIXES * 8ul), v, 8);
    open_refused(f->path, AG_EINVAL, "does not run from 0");
}

static void writer_refuses_a_count_of_0(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_writer *w;
    char why[256];
    uint8_t h[AG_PWNED_SHA1_LEN];

    make_hash(h, AG_PWNED_SHA1_LEN, 5, 2);
    assert_int_equal(
        ag_pwned_writer_open(f->path, AG_PWNED_SHA1, 1, &w, why, sizeof(why)),
        AG_OK);
    assert_int_equal(ag_pwned_writer_add(w, h, 0), AG_EINVAL);
    assert_non_null(strstr(ag_pwned_writer_error(w), "count 0"));
    ag_pwned_writer_abort(w);
    assert_int_equal(files_in(f), 0);
}

/* Writes a SHA-1 corpus whose prefix 00000 holds n entries and 00001 one. */
static void write_full_prefix(const char *path, uint32_t n)
{
    struct ag_pwned_writer *w;
    char why[256];
    uint8_t h[AG_PWNED_SHA1_LEN];
    assert_int_equal(
        ag_pwned_writer_open(path, AG_PWNED_SHA1, 1, &w, why, sizeof(why)),
        AG_OK);
    for (uint32_t s = 0; s < n; s++) {
        make_hash(h, AG_PWNED_SHA1_LEN, 0, s);
        assert_int_equal(ag_pwned_writer_add(w, h, 1), AG_OK);
    }
    make_hash(h, AG_PWNED_SHA1_LEN, 1, 0);
    assert_int_equal(ag_pwned_writer_add(w, h, 1), AG_OK);
    assert_int_equal(ag_pwned_writer_finish(w, 1, NULL, why, sizeof(why)),
                     AG_OK);
}

static void writer_refuses_a_prefix_over_the_cap(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_writer *w;
    char why[256];
    uint8_t h[AG_PWNED_SHA1_LEN];

    /* The cap itself is a good corpus. */
    write_full_prefix(f->path, AG_PWNED_PREFIX_ENTRIES_MAX);
    struct ag_pwned *p;
    assert_int_equal(ag_pwned_open(f->path, &p, why, sizeof(why)), AG_OK);
    ag_pwned_close(p);
    assert_int_equal(
        ag_pwned_writer_open(f->path, AG_PWNED_SHA1, 1, &w, why, sizeof(why)),
        AG_OK);
    for (uint32_t s = 0; s < AG_PWNED_PREFIX_ENTRIES_MAX; s++) {
        make_hash(h, AG_PWNED_SHA1_LEN, 0xabcde, s);
        assert_int_equal(ag_pwned_writer_add(w, h, 1), AG_OK);
    }
    make_hash(h, AG_PWNED_SHA1_LEN, 0xabcde, AG_PWNED_PREFIX_ENTRIES_MAX);
    assert_int_equal(ag_pwned_writer_add(w, h, 1), AG_EINVAL);
    assert_non_null(strstr(ag_pwned_writer_error(w), "prefix ABCDE"));
    ag_pwned_writer_abort(w);
}

static void open_refuses_a_creation_time_outside_1970_to_9999(void **state)
{
    struct fx *f = *state;
    const int64_t bad[] = {INT64_MAX, INT64_MIN, -1, AG_PWNED_CREATED_MAX + 1};
    uint8_t v[8];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_corpus(f->path, AG_PWNED_SHA1);
        ag_pwned_put64(v, (uint64_t)bad[i]);
        patch(f->path, AG_PWNED_HDR_CREATED, v, 8);
        reseal_header(f->path);
        open_refused(f->path, AG_EINVAL, "creation time");
    }
    /* The last second of 9999 is still a time. */
    struct ag_pwned *p;
    char why[256];
    write_corpus(f->path, AG_PWNED_SHA1);
    ag_pwned_put64(v, (uint64_t)AG_PWNED_CREATED_MAX);
    patch(f->path, AG_PWNED_HDR_CREATED, v, 8);
    reseal_header(f->path);
    assert_int_equal(ag_pwned_open(f->path, &p, why, sizeof(why)), AG_OK);
    assert_int_equal(ag_pwned_info(p)->created_s, AG_PWNED_CREATED_MAX);
    ag_pwned_close(p);
}

static void open_refuses_a_prefix_over_the_cap_naming_it(void **state)
{
    struct fx *f = *state;
    /* A file the writer would not write: its index moves prefix 00001's
     * one entry into 00000, which then holds one more than the cap. The
     * index stays in order and the sizes agree, so only the cap sees it. */
    write_full_prefix(f->path, AG_PWNED_PREFIX_ENTRIES_MAX);
    uint8_t v[8];
    ag_pwned_put64(v, AG_PWNED_PREFIX_ENTRIES_MAX + 1);
    patch(f->path, (long)(AG_PWNED_INDEX_OFF + 1 * 8), v, 8);
    open_refused(f->path, AG_EINVAL, "prefix 00000 holds 65537 entries");
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "ag_pwned_open waited on a FIFO\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(1);
}

static void open_refuses_a_fifo_without_waiting_for_a_writer(void **state)
{
    struct fx *f = *state;
    assert_int_equal(mkfifo(f->path, 0600), 0);
    /* No writer ever comes: an open that waits for one fails the test
     * when the alarm rings, long after a prompt refusal. */
    signal(SIGALRM, on_alarm);
    alarm(30);
    open_refused(f->path, AG_EINVAL, "not a regular file");
    alarm(0);
    signal(SIGALRM, SIG_DFL);
}

static void verify_finds_a_flipped_record_byte(void **state)
{
    struct fx *f = *state;
    struct ag_pwned *p;
    char why[256];
    write_corpus(f->path, AG_PWNED_SHA1);
    uint8_t b = 0x5a;
    patch(f->path, (long)(AG_PWNED_RECORDS_OFF + 22 * 7 + 9), &b, 1);
    /* Open does not read the records: it cannot see it. */
    assert_int_equal(ag_pwned_open(f->path, &p, why, sizeof(why)), AG_OK);
    assert_int_equal(ag_pwned_verify(p, why, sizeof(why)), AG_EINVAL);
    assert_non_null(strstr(why, "checksum does not match"));
    assert_non_null(strstr(why, f->path));
    ag_pwned_close(p);
}

/* Rewrites the header's records checksum to fit the records and index
 * now in the file, then reseals the header. */
static void reseal_records(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    size_t len = (size_t)st.st_size;
    uint8_t *all = malloc(len);
    assert_non_null(all);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, all, len, 0), (ssize_t)len);
    close(fd);
    crypto_generichash_state cs;
    uint8_t sum[AG_PWNED_CHECKSUM_LEN];
    crypto_generichash_init(&cs, NULL, 0, sizeof(sum));
    crypto_generichash_update(&cs, all + AG_PWNED_RECORDS_OFF,
                              len - AG_PWNED_RECORDS_OFF);
    crypto_generichash_update(&cs, all + AG_PWNED_INDEX_OFF,
                              AG_PWNED_INDEX_SIZE);
    crypto_generichash_final(&cs, sum, sizeof(sum));
    free(all);
    patch(path, AG_PWNED_HDR_CHECKSUM, sum, sizeof(sum));
    reseal_header(path);
}

static void verify_refuses_a_count_of_0(void **state)
{
    struct fx *f = *state;
    struct ag_pwned *p;
    char why[256];
    write_corpus(f->path, AG_PWNED_SHA1);
    /* Entry 7's count, its checksums made to fit. */
    uint8_t zero[4] = {0};
    patch(f->path, (long)(AG_PWNED_RECORDS_OFF + 22 * 7 + 18), zero, 4);
    reseal_records(f->path);
    assert_int_equal(ag_pwned_open(f->path, &p, why, sizeof(why)), AG_OK);
    assert_int_equal(ag_pwned_verify(p, why, sizeof(why)), AG_EINVAL);
    if (!strstr(why, "entry 7 of prefix 00ABC has count 0"))
        fail_msg("why: %s", why);
    ag_pwned_close(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(sha1_round_trip_reads_back_every_range_and_lookup),
        T(ntlm_round_trip_reads_back_every_range_and_lookup),
        T(empty_corpus_opens_with_every_range_empty),
        T(writer_refuses_a_hash_out_of_order_or_repeated),
        T(aborted_writer_leaves_the_previous_file_as_it_was),
        T(writer_into_a_missing_folder_fails_naming_it),
        T(open_refuses_a_missing_or_short_file),
        T(open_refuses_a_bad_magic),
        T(open_refuses_a_header_whose_checksum_fails),
        T(open_refuses_another_version_or_mode),
        T(open_refuses_a_truncated_or_grown_file),
        T(open_refuses_an_index_that_goes_down),
        T(verify_finds_a_flipped_record_byte),
        T(writer_refuses_a_count_of_0),
        T(writer_refuses_a_prefix_over_the_cap),
        T(open_refuses_a_creation_time_outside_1970_to_9999),
        T(open_refuses_a_prefix_over_the_cap_naming_it),
        T(verify_refuses_a_count_of_0),
        T(open_refuses_a_fifo_without_waiting_for_a_writer),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
