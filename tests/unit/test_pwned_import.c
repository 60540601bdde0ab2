/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_pwned_import: a single file, a folder of prefix files (read in
 * prefix order whatever the folder's order, names in either case),
 * several inputs in the order given, and standard input all import into
 * a corpus that answers their hashes; progress sees the inputs' size;
 * inputs are checked before anything is written (a missing one, a stray
 * file in a folder, a prefix twice, '-' twice); a refused import leaves
 * the previous output as it was and no temporary file, and so does one
 * stopped by its caller.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ag_error.h"
#include "ag_pwned.h"
#include "ag_pwned_import.h"

struct fx {
    char dir[64];
    char out[128];
};

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        rm_tree(p);
    }
    closedir(d);
    rmdir(path);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/ag_test_pwned_import.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->out, sizeof(f->out), "%s/corpus", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    rm_tree(f->dir);
    free(f);
    return 0;
}

/* Writes text to dir/name and returns the path (static, one at a time
 * per slot). */
static const char *put(const struct fx *f, const char *name, const char *text)
{
    static char path[4][256];
    static int slot;
    char *p = path[slot++ % 4];
    snprintf(p, 256, "%s/%s", f->dir, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return p;
}

/* Names in the fixture's folder other than the inputs: the output and
 * anything left beside it. */
static int leftovers(const struct fx *f)
{
    DIR *d = opendir(f->dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, "corpus", 6) == 0;
    closedir(d);
    return n;
}

static void hash_of(const char *hex, uint8_t *out)
{
    for (size_t i = 0; hex[2 * i]; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

static uint32_t lookup(const char *path, const char *hex)
{
    struct ag_pwned *p;
    char why[512];
    uint8_t h[20];
    if (ag_pwned_open(path, &p, why, sizeof(why)) != AG_OK)
        fail_msg("%s", why);
    hash_of(hex, h);
    uint32_t c = ag_pwned_lookup(p, h);
    ag_pwned_close(p);
    return c;
}

static int run(const struct fx *f, enum ag_pwned_mode mode, uint32_t min,
               const char **inputs, size_t n, struct ag_pwned_import_stats *st,
               char *why, size_t whylen)
{
    struct ag_pwned_import im = {.mode = mode,
                                 .min_count = min,
                                 .output = f->out,
                                 .inputs = inputs,
                                 .n_inputs = n,
                                 .created_s = 1700000000};
    return ag_pwned_import_run(&im, st, why, whylen);
}

#define A "000000005AD76BD555C1D6D771DE417A4B87E4B4"
#define B "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"
#define C "FFFFFFFFF9E8B2B0D1F3B3A0A0A26F7F1B5D6A3C"

static void single_file_imports_with_min_count(void **state)
{
    struct fx *f = *state;
    const char *in[] = {
        put(f, "one.txt", A ":1\r\n" B ":10434004\r\n" C ":2\r\n")};
    struct ag_pwned_import_stats st;
    char why[512];
    assert_int_equal(run(f, AG_PWNED_SHA1, 2, in, 1, &st, why, sizeof(why)),
                     AG_OK);
    assert_int_equal(st.lines, 3);
    assert_int_equal(st.kept, 2);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(lookup(f->out, A), 0);
    assert_int_equal(lookup(f->out, B), 10434004);
    assert_int_equal(lookup(f->out, C), 2);
    struct stat sb;
    assert_int_equal(stat(f->out, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, st.output_size);
    assert_int_equal(leftovers(f), 1);
}

static void folder_is_read_in_prefix_order_whatever_the_case(void **state)
{
    struct fx *f = *state;
    char folder[256];
    snprintf(folder, sizeof(folder), "%s/dl", f->dir);
    assert_int_equal(mkdir(folder, 0755), 0);
    /* Lower-case names; fffff before 00000 in no particular order. */
    put(f, "dl/fffff.txt", "FFFF9E8B2B0D1F3B3A0A0A26F7F1B5D6A3C:2");
    put(f, "dl/5baa6.txt", "1E4C9B93F3F0682250B6CF8331B7EE68FD8:10434004\r\n");
    put(f, "dl/00000.txt", "0005AD76BD555C1D6D771DE417A4B87E4B4:4\r\n");
    put(f, "dl/00001.txt", "");
    const char *in[] = {folder};
    struct ag_pwned_import_stats st;
    char why[512];
    if (run(f, AG_PWNED_SHA1, 1, in, 1, &st, why, sizeof(why)) != AG_OK)
        fail_msg("%s", why);
    assert_int_equal(st.kept, 3);
    assert_int_equal(st.folders, 1);
    assert_int_equal(st.prefix_files, 4);
    assert_int_equal(lookup(f->out, A), 4);
    assert_int_equal(lookup(f->out, B), 10434004);
    assert_int_equal(lookup(f->out, C), 2);
}

static void several_inputs_are_read_in_the_order_given(void **state)
{
    struct fx *f = *state;
    const char *in[] = {put(f, "a.txt", A ":4\n"), put(f, "b.txt", B ":5\n")};
    struct ag_pwned_import_stats st;
    char why[512];
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, in, 2, &st, why, sizeof(why)),
                     AG_OK);
    assert_int_equal(lookup(f->out, A), 4);
    assert_int_equal(lookup(f->out, B), 5);
    /* The other way round, the second file's first line is out of
     * order: refused, naming it, and the corpus is the first import's. */
    const char *rev[] = {in[1], in[0]};
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, rev, 2, &st, why, sizeof(why)),
                     AG_EINVAL);
    assert_non_null(strstr(why, "a.txt line 1:"));
    assert_non_null(strstr(why, "lower than"));
    assert_int_equal(lookup(f->out, B), 5);
    assert_int_equal(leftovers(f), 1);
}

static void standard_input_is_read_for_a_dash(void **state)
{
    struct fx *f = *state;
    const char *src = put(f, "stdin.txt", A ":4\n" C ":7\n");
    int saved = dup(0);
    int fd = open(src, O_RDONLY);
    assert_true(saved >= 0 && fd >= 0);
    assert_int_equal(dup2(fd, 0), 0);
    close(fd);
    const char *in[] = {"-"};
    struct ag_pwned_import_stats st;
    char why[512];
    int rc = run(f, AG_PWNED_SHA1, 1, in, 1, &st, why, sizeof(why));
    dup2(saved, 0);
    close(saved);
    assert_int_equal(rc, AG_OK);
    assert_int_equal(lookup(f->out, C), 7);
    const char *twice[] = {"-", "-"};
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, twice, 2, &st, why, sizeof(why)),
                     AG_EINVAL);
    assert_non_null(strstr(why, "given twice"));
}

static void seen(void *ctx, const struct ag_pwned_import_stats *s)
{
    struct ag_pwned_import_stats *last = ctx;
    *last = *s;
}

static void progress_sees_the_size_of_the_inputs(void **state)
{
    struct fx *f = *state;
    static const char text[] = A ":4\n" B ":5\n";
    const char *in[] = {put(f, "p.txt", text)};
    struct ag_pwned_import_stats last = {0}, st;
    struct ag_pwned_import im = {.mode = AG_PWNED_SHA1,
                                 .min_count = 1,
                                 .output = f->out,
                                 .inputs = in,
                                 .n_inputs = 1,
                                 .progress = seen,
                                 .progress_ctx = &last};
    char why[512];
    assert_int_equal(ag_pwned_import_run(&im, &st, why, sizeof(why)), AG_OK);
    assert_int_equal(last.bytes_total, strlen(text));
    assert_int_equal(last.bytes_read, strlen(text));
    assert_int_equal(last.lines, 2);
}

static void inputs_are_checked_before_anything_is_written(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_import_stats st;
    char why[512], folder[256], missing[256];
    snprintf(missing, sizeof(missing), "%s/nothing-here", f->dir);
    const char *in[] = {put(f, "ok.txt", A ":4\n"), missing};
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, in, 2, &st, why, sizeof(why)),
                     AG_EINVAL);
    assert_non_null(strstr(why, "nothing-here"));
    assert_int_equal(leftovers(f), 0);

    snprintf(folder, sizeof(folder), "%s/dl", f->dir);
    assert_int_equal(mkdir(folder, 0755), 0);
    put(f, "dl/00000.txt", "0005AD76BD555C1D6D771DE417A4B87E4B4:4\n");
    put(f, "dl/README", "notes\n");
    in[1] = folder;
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, in, 2, &st, why, sizeof(why)),
                     AG_EINVAL);
    assert_non_null(strstr(why, "dl/README: not a prefix file"));
    assert_int_equal(leftovers(f), 0);

    char p[300];
    snprintf(p, sizeof(p), "%s/README", folder);
    unlink(p);
    put(f, "dl/0000a.txt", "");
    put(f, "dl/0000A.txt", "");
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, in, 2, &st, why, sizeof(why)),
                     AG_EINVAL);
    assert_non_null(strstr(why, "the same prefix"));
    assert_int_equal(leftovers(f), 0);
}

static void malformed_import_leaves_the_previous_output_as_it_was(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_import_stats st;
    char why[512];
    const char *good[] = {put(f, "good.txt", A ":4\n")};
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, good, 1, &st, why, sizeof(why)),
                     AG_OK);
    const char *bad[] = {put(f, "bad.txt", B ":5\n" C "\n")};
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, bad, 1, &st, why, sizeof(why)),
                     AG_EINVAL);
    assert_non_null(strstr(why, "bad.txt line 2: no ':' and count"));
    assert_int_equal(lookup(f->out, A), 4);
    assert_int_equal(lookup(f->out, B), 0);
    assert_int_equal(leftovers(f), 1);
}

static void a_stopped_import_leaves_the_previous_output(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_import_stats st;
    char why[512];
    const char *in[] = {put(f, "good.txt", A ":4\n")};
    assert_int_equal(run(f, AG_PWNED_SHA1, 1, in, 1, &st, why, sizeof(why)),
                     AG_OK);
    volatile sig_atomic_t stop = 1;
    const char *more[] = {put(f, "more.txt", A ":4\n" B ":5\n")};
    struct ag_pwned_import im = {.mode = AG_PWNED_SHA1,
                                 .min_count = 1,
                                 .output = f->out,
                                 .inputs = more,
                                 .n_inputs = 1,
                                 .stop = &stop};
    assert_int_equal(ag_pwned_import_run(&im, &st, why, sizeof(why)), AG_EIO);
    assert_non_null(strstr(why, "interrupted"));
    assert_int_equal(lookup(f->out, B), 0);
    assert_int_equal(leftovers(f), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(single_file_imports_with_min_count),
        T(folder_is_read_in_prefix_order_whatever_the_case),
        T(several_inputs_are_read_in_the_order_given),
        T(standard_input_is_read_for_a_dash),
        T(progress_sees_the_size_of_the_inputs),
        T(inputs_are_checked_before_anything_is_written),
        T(malformed_import_leaves_the_previous_output_as_it_was),
        T(a_stopped_import_leaves_the_previous_output),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
