/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_pwned_live: the corpora the service serves and their replacement.
 * Each mode is served from its file; a second file of one mode, a missing
 * or a damaged one is refused at start naming it; a file renamed over the
 * path is swapped in at the next look while a reader keeps the one it
 * holds until it lets go (then the watcher closes it); a replacement that
 * cannot be served (junk, the other mode, a missing path) keeps the last
 * good corpus and is counted once, and the next good one is taken; a
 * file changed in place stops its mode being served until another file
 * is renamed in; the gauges follow. The watcher's looks are driven by hand
 * (interval 0), so no test waits on a clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ag_buf.h"
#include "ag_error.h"
#include "ag_metrics.h"
#include "ag_pwned.h"
#include "ag_pwned_live.h"
#include "ag_test_metrics.h"
#include "ag_test_pwned.h"

struct fx {
    char dir[64];
    char sha1[128], ntlm[128];
    struct ag_metrics *m;
};

static const struct ag_test_range ranges[] = {{0x00abc, 3}, {0x21bd1, 5}};
static const struct ag_test_range more[] = {
    {0x00abc, 4}, {0x21bd1, 5}, {0xfffff, 1}};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ag_test_live.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->sha1, sizeof f->sha1, "%s/sha1.agp", f->dir);
    snprintf(f->ntlm, sizeof f->ntlm, "%s/ntlm.agp", f->dir);
    ag_test_corpus(f->sha1, AG_PWNED_SHA1, ranges, 2, 0, 1700000000);
    ag_test_corpus(f->ntlm, AG_PWNED_NTLM, ranges, 2, 0, 1700000000);
    f->m = ag_metrics_new();
    assert_non_null(f->m);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    ag_metrics_free(f->m);
    free(f);
    return 0;
}

static struct ag_pwned_live *start(struct fx *f, const char *a, const char *b)
{
    const char *paths[] = {a, b};
    struct ag_pwned_live *l = NULL;
    struct ag_error err;
    int rc = ag_pwned_live_start(&(struct ag_pwned_live_opts){.paths = paths,
                                                              .n = b ? 2 : 1,
                                                              .metrics = f->m},
                                 &l, &err);
    if (rc)
        fail_msg("start: %s", err.msg);
    return l;
}

/* Entries of the corpus of mode that l serves now; 0 when none. */
static uint64_t served(struct ag_pwned_live *l, enum ag_pwned_mode mode)
{
    struct ag_pwned_hold *h = ag_pwned_live_hold(l, mode);
    if (!h)
        return 0;
    uint64_t n = ag_pwned_info(ag_pwned_hold_corpus(h))->entries;
    ag_pwned_hold_release(h);
    return n;
}

static void each_mode_is_served_from_its_file(void **state)
{
    struct fx *f = *state;
    /* In either order: the header names the mode. */
    struct ag_pwned_live *l = start(f, f->ntlm, f->sha1);
    assert_int_equal(served(l, AG_PWNED_SHA1), 8);
    assert_int_equal(served(l, AG_PWNED_NTLM), 8);
    struct ag_pwned_hold *h = ag_pwned_live_hold(l, AG_PWNED_NTLM);
    assert_int_equal(ag_pwned_info(ag_pwned_hold_corpus(h))->mode,
                     AG_PWNED_NTLM);
    ag_pwned_hold_release(h);
    const char *text = ag_test_metrics_text(f->m);
    assert_non_null(
        strstr(text, "abuseguard_pwned_entries{mode=\"sha1\"} 8\n"));
    assert_non_null(
        strstr(text, "abuseguard_pwned_entries{mode=\"ntlm\"} 8\n"));
    assert_non_null(
        strstr(text, "abuseguard_pwned_corpus_age_seconds{mode=\"sha1\"} "));
    ag_pwned_live_stop(l);
}

static void a_mode_without_a_file_is_not_served(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_live *l = start(f, f->sha1, NULL);
    assert_null(ag_pwned_live_hold(l, AG_PWNED_NTLM));
    assert_null(ag_pwned_live_hold(NULL, AG_PWNED_SHA1));
    const char *text = ag_test_metrics_text(f->m);
    assert_null(strstr(text, "abuseguard_pwned_entries{mode=\"ntlm\"}"));
    assert_non_null(
        strstr(text, "abuseguard_pwned_lookups_total{mode=\"ntlm\"} 0\n"));
    ag_pwned_live_stop(l);
}

static void refused(struct fx *f, const char *a, const char *b, int code,
                    const char *needle)
{
    const char *paths[] = {a, b};
    struct ag_pwned_live *l = NULL;
    struct ag_error err;
    assert_int_equal(ag_pwned_live_start(
                         &(struct ag_pwned_live_opts){
                             .paths = paths, .n = b ? 2 : 1, .metrics = f->m},
                         &l, &err),
                     code);
    assert_null(l);
    assert_string_equal(err.field, "pwned-file");
    assert_non_null(strstr(err.msg, "--pwned-file"));
    if (!strstr(err.msg, needle))
        fail_msg("'%s' not in: %s", needle, err.msg);
    assert_null(strchr(err.msg, '\n'));
}

static void a_second_file_of_one_mode_is_refused_naming_both(void **state)
{
    struct fx *f = *state;
    char other[160];
    snprintf(other, sizeof other, "%s/other.agp", f->dir);
    ag_test_corpus(other, AG_PWNED_SHA1, more, 3, 0, 1700000000);
    refused(f, f->sha1, other, AG_EINVAL, f->sha1);
    refused(f, f->sha1, other, AG_EINVAL, other);
    refused(f, f->sha1, other, AG_EINVAL, "both SHA-1");
}

static void a_missing_or_damaged_file_is_refused_naming_it(void **state)
{
    struct fx *f = *state;
    char missing[160], junk[160];
    snprintf(missing, sizeof missing, "%s/missing.agp", f->dir);
    snprintf(junk, sizeof junk, "%s/junk.agp", f->dir);
    ag_test_junk(junk, 20000);
    refused(f, missing, NULL, AG_EIO, missing);
    refused(f, f->sha1, junk, AG_EINVAL, junk);
}

static void a_renamed_file_is_swapped_in_and_a_held_one_stays(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_live *l = start(f, f->sha1, f->ntlm);
    struct ag_pwned_hold *old = ag_pwned_live_hold(l, AG_PWNED_SHA1);
    const struct ag_pwned *op = ag_pwned_hold_corpus(old);

    ag_test_corpus(f->sha1, AG_PWNED_SHA1, more, 3, 5, 1700000100);
    ag_pwned_live_tick(l);
    assert_int_equal(served(l, AG_PWNED_SHA1), 10);
    assert_int_equal(served(l, AG_PWNED_NTLM), 8);
    /* The reader still reads the corpus it holds, every line of it. */
    struct ag_pwned_range r;
    char hex[AG_PWNED_SUFFIX_HEX_MAX + 1], line[64], want[64];
    ag_pwned_range(op, 0x00abc, &r);
    assert_int_equal(r.n, 3);
    for (uint32_t s = 0; s < 3; s++) {
        uint32_t count = ag_pwned_range_entry(&r, s, hex);
        snprintf(line, sizeof line, "%s:%u", hex, (unsigned)count);
        ag_test_line(want, sizeof want, AG_PWNED_SHA1, 0x00abc, s, 0);
        assert_string_equal(line, want);
    }
    assert_int_equal(ag_pwned_live_retired(l), 1);
    ag_pwned_live_tick(l); /* held: not closed */
    assert_int_equal(ag_pwned_live_retired(l), 1);
    ag_pwned_hold_release(old);
    ag_pwned_live_tick(l);
    assert_int_equal(ag_pwned_live_retired(l), 0);
    assert_non_null(strstr(ag_test_metrics_text(f->m),
                           "abuseguard_pwned_entries{mode=\"sha1\"} 10\n"));
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 0);
    ag_pwned_live_stop(l);
}

static void a_bad_replacement_keeps_the_last_good_one_counted_once(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_live *l = start(f, f->sha1, f->ntlm);

    ag_test_junk(f->sha1, 30000);
    ag_pwned_live_tick(l);
    ag_pwned_live_tick(l);
    assert_int_equal(served(l, AG_PWNED_SHA1), 8);
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 1);

    /* Another failure: the NTLM corpus where the SHA-1 one was. */
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/tmp.agp", f->dir);
    ag_test_corpus(tmp, AG_PWNED_NTLM, more, 3, 0, 1700000000);
    assert_int_equal(rename(tmp, f->sha1), 0);
    ag_pwned_live_tick(l);
    assert_int_equal(served(l, AG_PWNED_SHA1), 8);
    assert_int_equal(served(l, AG_PWNED_NTLM), 8);
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 2);

    /* And the path gone. */
    assert_int_equal(unlink(f->sha1), 0);
    ag_pwned_live_tick(l);
    ag_pwned_live_tick(l);
    assert_int_equal(served(l, AG_PWNED_SHA1), 8);
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 3);

    /* A good one again is taken at the next look. */
    ag_test_corpus(f->sha1, AG_PWNED_SHA1, more, 3, 1, 1700000000);
    ag_pwned_live_tick(l);
    assert_int_equal(served(l, AG_PWNED_SHA1), 10);
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 3);
    ag_pwned_live_stop(l);
}

static void an_unchanged_path_is_not_reopened(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_live *l = start(f, f->sha1, NULL);
    struct ag_pwned_hold *a = ag_pwned_live_hold(l, AG_PWNED_SHA1);
    ag_pwned_live_tick(l);
    struct ag_pwned_hold *b = ag_pwned_live_hold(l, AG_PWNED_SHA1);
    assert_ptr_equal(a, b);
    assert_int_equal(ag_pwned_live_retired(l), 0);
    ag_pwned_hold_release(a);
    ag_pwned_hold_release(b);
    ag_pwned_live_stop(l);
}

static void a_file_changed_in_place_is_no_longer_served(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_live *l = start(f, f->sha1, f->ntlm);
    struct ag_pwned_hold *old = ag_pwned_live_hold(l, AG_PWNED_SHA1);

    /* Grown where it lies, as rsync --inplace or a cp over it would. */
    int fd = open(f->sha1, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "junk", 4), 4);
    close(fd);
    ag_pwned_live_tick(l);
    assert_null(ag_pwned_live_hold(l, AG_PWNED_SHA1));
    assert_int_equal(served(l, AG_PWNED_NTLM), 8);
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 1);
    assert_null(strstr(ag_test_metrics_text(f->m),
                       "abuseguard_pwned_entries{mode=\"sha1\"}"));
    /* The reader that held it lets go; then it is closed. */
    assert_int_equal(ag_pwned_live_retired(l), 1);
    ag_pwned_hold_release(old);
    ag_pwned_live_tick(l);
    assert_int_equal(ag_pwned_live_retired(l), 0);

    /* Changed again, or finished: still the same file, still not served,
     * and said once. */
    assert_int_equal(truncate(f->sha1, 100), 0);
    ag_pwned_live_tick(l);
    assert_null(ag_pwned_live_hold(l, AG_PWNED_SHA1));
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 1);

    /* A new file renamed over the path is served again. */
    ag_test_corpus(f->sha1, AG_PWNED_SHA1, more, 3, 1, 1700000000);
    ag_pwned_live_tick(l);
    assert_int_equal(served(l, AG_PWNED_SHA1), 10);
    assert_non_null(strstr(ag_test_metrics_text(f->m),
                           "abuseguard_pwned_entries{mode=\"sha1\"} 10\n"));
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 1);
    ag_pwned_live_stop(l);
}

static void
a_bad_file_while_withdrawn_is_refused_then_a_good_one_served(void **state)
{
    struct fx *f = *state;
    struct ag_pwned_live *l = start(f, f->sha1, NULL);
    assert_int_equal(truncate(f->sha1, 100), 0);
    ag_pwned_live_tick(l);
    assert_null(ag_pwned_live_hold(l, AG_PWNED_SHA1));
    ag_test_junk(f->sha1, 30000);
    ag_pwned_live_tick(l);
    assert_null(ag_pwned_live_hold(l, AG_PWNED_SHA1));
    assert_int_equal(ag_metrics_get(f->m, AG_M_PWNED_RELOAD_FAILURES), 2);
    ag_test_corpus(f->sha1, AG_PWNED_SHA1, ranges, 2, 0, 1700000000);
    ag_pwned_live_tick(l);
    assert_int_equal(served(l, AG_PWNED_SHA1), 8);
    ag_pwned_live_stop(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(each_mode_is_served_from_its_file,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_mode_without_a_file_is_not_served,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_second_file_of_one_mode_is_refused_naming_both, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_missing_or_damaged_file_is_refused_naming_it, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_renamed_file_is_swapped_in_and_a_held_one_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_bad_replacement_keeps_the_last_good_one_counted_once, setup,
            teardown),
        cmocka_unit_test_setup_teardown(an_unchanged_path_is_not_reopened,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_file_changed_in_place_is_no_longer_served, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_bad_file_while_withdrawn_is_refused_then_a_good_one_served, setup,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
