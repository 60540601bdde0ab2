/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_replaceable: the holder of the files an operator replaces, with a
 * toy loader (a file is good when its text starts with "good"). A file
 * renamed over a path is served at the next look, and no reader sees it
 * before its user has said so; an unchanged path is not loaded again; a
 * damaged or missing replacement keeps the last good file and is refused
 * once however many looks see it; a replaced file a reader holds is not
 * freed, not even by its release, but by the first look after it; a
 * mapped file changed in place is withdrawn until another is renamed in,
 * where a copied one is loaded again, and one written to while it loads
 * is taken at the next look; every file loaded is freed once. Looks are
 * driven by hand (no watcher thread), so no test waits on a clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ag_error.h"
#include "ag_replaceable.h"

#define TOYS_MAX 64

/* What the toy loader makes of a file: its text, which load it was, and
 * the file kept open as a mapping would keep it (so that its inode is not
 * another file's while it is served). */
struct toy {
    char text[64];
    unsigned id; /* 1 for the first load, 2 for the next, ... */
    int fd;
};

struct fx {
    char dir[64];
    char path[3][128];
    struct ag_replaceable *r;
    unsigned loads; /* toys made */
    bool freed[TOYS_MAX + 1];
    unsigned nfreed;
    unsigned replaced, refused, withdrawn;
    bool refused_serving;
    char why[AG_ERROR_MSG_MAX];
    /* What a reader saw of the slot while ops->replaced ran. */
    char seen_during_replace[64];
    /* Run once, after the next load read its file. */
    void (*during_load)(struct fx *f);
};

static void write_file(const char *path, const char *text)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_true(fputs(text, out) >= 0);
    assert_int_equal(fclose(out), 0);
}

/* Writes text to a new file and renames it over path, as an updater. */
static void rename_in(struct fx *f, const char *text, const char *path)
{
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/new.tmp", f->dir);
    write_file(tmp, text);
    assert_int_equal(rename(tmp, path), 0);
}

/* ---- the toy user ------------------------------------------------------ */

static int load(void *ctx, size_t slot, const char *path, void **obj,
                struct ag_error *err)
{
    struct fx *f = ctx;
    (void)slot;
    char text[64] = "";
    FILE *in = fopen(path, "rb");
    if (!in)
        return ag_error_set(err, AG_EIO, "toy", "%s: cannot open", path);
    size_t n = fread(text, 1, sizeof text - 1, in);
    int fd = dup(fileno(in));
    fclose(in);
    assert_true(fd >= 0);
    text[n] = '\0';
    void (*fn)(struct fx *) = f->during_load;
    f->during_load = NULL;
    if (fn)
        fn(f);
    if (strncmp(text, "good", 4) != 0) {
        close(fd);
        return ag_error_set(err, AG_EINVAL, "toy", "%s: not good", path);
    }
    struct toy *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_true(f->loads < TOYS_MAX);
    snprintf(t->text, sizeof t->text, "%s", text);
    t->id = ++f->loads;
    t->fd = fd;
    *obj = t;
    return AG_OK;
}

static void free_toy(void *ctx, size_t slot, void *obj)
{
    struct fx *f = ctx;
    struct toy *t = obj;
    (void)slot;
    assert_false(f->freed[t->id]); /* once */
    f->freed[t->id] = true;
    f->nfreed++;
    close(t->fd);
    free(t);
}

static const char *served(struct ag_replaceable *r, size_t slot, char out[64])
{
    struct ag_replaceable_hold *h = ag_replaceable_hold(r, slot);
    const struct toy *t = h ? ag_replaceable_obj(h) : NULL;
    snprintf(out, 64, "%s", t ? t->text : "(none)");
    ag_replaceable_release(h);
    return out;
}

static void replaced(void *ctx, size_t slot, const char *path, const void *obj)
{
    struct fx *f = ctx;
    (void)path;
    (void)obj;
    f->replaced++;
    served(f->r, slot, f->seen_during_replace);
}

static void refused(void *ctx, size_t slot, const struct ag_error *why,
                    bool serving)
{
    struct fx *f = ctx;
    (void)slot;
    f->refused++;
    f->refused_serving = serving;
    snprintf(f->why, sizeof f->why, "%s", why->msg);
}

static void withdrawn(void *ctx, size_t slot, const char *path)
{
    struct fx *f = ctx;
    (void)slot;
    (void)path;
    f->withdrawn++;
}

static void name(void *ctx, size_t slot, const char *path, char *out,
                 size_t outlen)
{
    (void)ctx;
    snprintf(out, outlen, "toy %zu %s", slot, path);
}

static const struct ag_replaceable_ops ops = {
    .load = load,
    .free = free_toy,
    .replaced = replaced,
    .refused = refused,
    .withdrawn = withdrawn,
    .name = name,
};

/* ---- fixture ----------------------------------------------------------- */

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ag_test_replaceable.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    for (int i = 0; i < 3; i++)
        snprintf(f->path[i], sizeof f->path[i], "%s/file%d", f->dir, i);
    write_file(f->path[0], "good a");
    write_file(f->path[2], "good c");
    *state = f;
    return 0;
}

/* Frees the holder: every file loaded is freed, and once. */
static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];
    ag_replaceable_free(f->r);
    assert_int_equal(f->nfreed, f->loads);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* A holder of 3 slots read as read, serving path[0] in slot 0. */
static struct ag_replaceable *start(struct fx *f, enum ag_replaceable_read read)
{
    assert_int_equal(ag_replaceable_new(
                         &(struct ag_replaceable_opts){
                             .ops = &ops, .ctx = f, .slots = 3, .read = read},
                         &f->r),
                     AG_OK);
    struct ag_error err = {0};
    if (ag_replaceable_add(f->r, 0, f->path[0], &err) != AG_OK)
        fail_msg("add: %s", err.msg);
    return f->r;
}

/* ---- tests ------------------------------------------------------------- */

static void a_renamed_file_is_served_at_the_next_look(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_MAPPED);
    char buf[64];
    assert_string_equal(served(r, 0, buf), "good a");
    assert_string_equal(ag_replaceable_path(r, 0), f->path[0]);

    rename_in(f, "good bb", f->path[0]);
    assert_string_equal(served(r, 0, buf), "good a"); /* until a look */
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good bb");
    assert_int_equal(f->replaced, 1);
    /* Readers saw the old file while its user was told of the new. */
    assert_string_equal(f->seen_during_replace, "good a");
    assert_int_equal(f->refused, 0);
    assert_int_equal(ag_replaceable_retired(r), 0); /* no reader: freed */
    assert_true(f->freed[1]);
}

static void an_unchanged_path_is_not_loaded_again(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_COPIED);
    struct ag_replaceable_hold *a = ag_replaceable_hold(r, 0);
    ag_replaceable_tick(r);
    ag_replaceable_tick(r);
    struct ag_replaceable_hold *b = ag_replaceable_hold(r, 0);
    assert_ptr_equal(a, b);
    assert_int_equal(f->loads, 1);
    assert_int_equal(f->replaced, 0);
    ag_replaceable_release(a);
    ag_replaceable_release(b);
}

static void a_damaged_replacement_keeps_the_last_good_refused_once(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_MAPPED);
    char buf[64];
    rename_in(f, "junk", f->path[0]);
    for (int i = 0; i < 3; i++) {
        ag_replaceable_tick(r);
        assert_string_equal(served(r, 0, buf), "good a");
    }
    assert_int_equal(f->refused, 1);
    assert_true(f->refused_serving);
    assert_non_null(strstr(f->why, "not good"));
    assert_non_null(strstr(f->why, f->path[0]));

    /* Another damaged file is another refusal. */
    rename_in(f, "junk again", f->path[0]);
    ag_replaceable_tick(r);
    ag_replaceable_tick(r);
    assert_int_equal(f->refused, 2);

    /* A good one after it is served, and refused nothing. */
    rename_in(f, "good ddd", f->path[0]);
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good ddd");
    assert_int_equal(f->refused, 2);
    assert_int_equal(f->replaced, 1);
}

static void a_missing_path_is_refused_once_by_the_users_name(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_COPIED);
    char buf[64], want[256];
    assert_int_equal(unlink(f->path[0]), 0);
    ag_replaceable_tick(r);
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good a");
    assert_int_equal(f->refused, 1);
    snprintf(want, sizeof want, "toy 0 %s: No such file or directory",
             f->path[0]);
    assert_string_equal(f->why, want);
    assert_int_equal(f->loads, 1); /* no load tried */

    write_file(f->path[0], "good again");
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good again");
    assert_int_equal(f->refused, 1);
}

static void a_held_file_is_freed_by_the_first_look_after_release(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_MAPPED);
    char buf[64];
    struct ag_replaceable_hold *old = ag_replaceable_hold(r, 0);
    const struct toy *t = ag_replaceable_obj(old);

    rename_in(f, "good bb", f->path[0]);
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good bb");
    assert_int_equal(ag_replaceable_retired(r), 1);
    ag_replaceable_tick(r); /* held: not freed */
    assert_int_equal(ag_replaceable_retired(r), 1);
    assert_false(f->freed[1]);
    assert_string_equal(t->text, "good a"); /* still readable */

    ag_replaceable_release(old); /* a reader never frees */
    assert_false(f->freed[1]);
    assert_int_equal(ag_replaceable_retired(r), 1);
    ag_replaceable_tick(r);
    assert_true(f->freed[1]);
    assert_int_equal(ag_replaceable_retired(r), 0);
    assert_int_equal(f->nfreed, 1);
}

static void a_mapped_file_changed_in_place_is_withdrawn(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_MAPPED);
    char buf[64];
    struct ag_replaceable_hold *old = ag_replaceable_hold(r, 0);

    write_file(f->path[0], "good, but written in place");
    ag_replaceable_tick(r);
    assert_null(ag_replaceable_hold(r, 0));
    assert_null(ag_replaceable_served(r, 0));
    assert_int_equal(f->withdrawn, 1);
    assert_int_equal(f->refused, 0);
    assert_int_equal(ag_replaceable_retired(r), 1); /* the reader's */
    ag_replaceable_release(old);
    ag_replaceable_tick(r);
    assert_int_equal(ag_replaceable_retired(r), 0);

    /* Changed again: still that file, still withdrawn, said once. */
    write_file(f->path[0], "good x");
    ag_replaceable_tick(r);
    assert_null(ag_replaceable_hold(r, 0));
    assert_int_equal(f->withdrawn, 1);
    assert_int_equal(f->loads, 1);

    /* A damaged file renamed in is refused, with nothing served. */
    rename_in(f, "junk", f->path[0]);
    ag_replaceable_tick(r);
    assert_int_equal(f->refused, 1);
    assert_false(f->refused_serving);

    rename_in(f, "good renamed", f->path[0]);
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good renamed");
    assert_string_equal(f->seen_during_replace, "(none)");
}

static void a_copied_file_rewritten_in_place_is_loaded_again(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_COPIED);
    char buf[64];
    write_file(f->path[0], "good, written in place");
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good, written in place");
    assert_int_equal(f->withdrawn, 0);
    assert_int_equal(f->replaced, 1);
}

/* The writer of the file being loaded finishes it. */
static void finish(struct fx *f)
{
    FILE *out = fopen(f->path[0], "ab");
    assert_non_null(out);
    assert_true(fputs(" and its end", out) >= 0);
    assert_int_equal(fclose(out), 0);
}

static void a_copied_file_written_while_loaded_waits_a_look(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_COPIED);
    char buf[64];
    write_file(f->path[0], "good start"); /* parses, but is a part */
    f->during_load = finish;
    ag_replaceable_tick(r);
    assert_null(f->during_load);
    assert_string_equal(served(r, 0, buf), "good a");
    assert_int_equal(f->refused + f->replaced, 0); /* nothing said */
    assert_true(f->freed[2]);                      /* the part, dropped */
    ag_replaceable_tick(r);
    assert_string_equal(served(r, 0, buf), "good start and its end");
    assert_int_equal(f->refused, 0);
}

static void holding_all_takes_each_slot_and_none_for_an_empty_one(void **s)
{
    struct fx *f = *s;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_COPIED);
    struct ag_error err = {0};
    assert_int_equal(ag_replaceable_add(r, 2, f->path[2], &err), AG_OK);
    struct ag_replaceable_hold *held[3];
    ag_replaceable_hold_all(r, 3, held);
    assert_non_null(held[0]);
    assert_null(held[1]);
    assert_null(ag_replaceable_path(r, 1));
    assert_string_equal(((const struct toy *)ag_replaceable_obj(held[2]))->text,
                        "good c");

    rename_in(f, "good cc", f->path[2]);
    ag_replaceable_tick(r); /* slot 1, no path: not looked at */
    assert_int_equal(ag_replaceable_retired(r), 1);
    ag_replaceable_release_all(held, 3);
    ag_replaceable_tick(r);
    assert_int_equal(ag_replaceable_retired(r), 0);
}

static void add_refuses_what_the_loader_refuses_leaving_it_empty(void **s)
{
    struct fx *f = *s;
    struct ag_replaceable *r = start(f, AG_REPLACEABLE_MAPPED);
    struct ag_error err = {0};
    write_file(f->path[1], "junk");
    assert_int_equal(ag_replaceable_add(r, 1, f->path[1], &err), AG_EINVAL);
    assert_string_equal(err.field, "toy");
    assert_non_null(strstr(err.msg, "not good"));
    assert_null(ag_replaceable_path(r, 1));
    assert_null(ag_replaceable_served(r, 1));
    ag_replaceable_tick(r); /* not looked at: nothing refused */
    assert_int_equal(f->refused, 0);

    assert_int_equal(ag_replaceable_add(r, 0, f->path[2], &err), AG_EINVAL);
    assert_int_equal(ag_replaceable_add(r, 3, f->path[2], &err), AG_EINVAL);
    assert_int_equal(f->loads, 1);
}

/* Threads of this process, from /proc. */
static int threads(void)
{
    FILE *in = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    assert_non_null(in);
    while (fgets(line, sizeof line, in))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(in);
    return n;
}

static void a_watcher_runs_only_with_an_interval_and_a_path(void **state)
{
    struct fx *f = *state;
    struct ag_replaceable *empty;
    assert_int_equal(
        ag_replaceable_new(
            &(struct ag_replaceable_opts){.ops = &ops, .ctx = f, .slots = 2},
            &empty),
        AG_OK);
    int before = threads();
    assert_int_equal(ag_replaceable_watch(empty, 1000), AG_OK);
    assert_int_equal(threads(), before);
    ag_replaceable_free(empty);

    struct ag_replaceable *r = start(f, AG_REPLACEABLE_MAPPED);
    assert_int_equal(ag_replaceable_watch(r, 0), AG_OK);
    assert_int_equal(threads(), before);
    assert_int_equal(ag_replaceable_watch(r, 60000), AG_OK);
    assert_int_equal(threads(), before + 1);
    ag_replaceable_stop(r); /* at once, however long the interval */
    ag_replaceable_stop(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(a_renamed_file_is_served_at_the_next_look),
        T(an_unchanged_path_is_not_loaded_again),
        T(a_damaged_replacement_keeps_the_last_good_refused_once),
        T(a_missing_path_is_refused_once_by_the_users_name),
        T(a_held_file_is_freed_by_the_first_look_after_release),
        T(a_mapped_file_changed_in_place_is_withdrawn),
        T(a_copied_file_rewritten_in_place_is_loaded_again),
        T(a_copied_file_written_while_loaded_waits_a_look),
        T(holding_all_takes_each_slot_and_none_for_an_empty_one),
        T(add_refuses_what_the_loader_refuses_leaving_it_empty),
        T(a_watcher_runs_only_with_an_interval_and_a_path),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
