/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_pwned_live.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_pwned.h"
#include "ag_replaceable.h"

/* The corpora: slot i of the holder serves paths[i], a corpus of mode[i],
 * mapped (ag_replaceable: a change in place withdraws it). A struct
 * ag_pwned_hold is the holder's struct ag_replaceable_hold under the name
 * the header gives it: never defined here, only converted (all pointers
 * to structures share one representation, C17 6.2.5). */
struct ag_pwned_live {
    struct ag_replaceable *files;
    /* Each slot's mode, known once its first corpus opened; 0 before. */
    enum ag_pwned_mode mode[AG_PWNED_LIVE_FILES];
    /* The slot serving each mode, by enum ag_metrics_pwned; -1: none. */
    int slot_of[AG_METRICS_PWNED_MODES];
    struct ag_metrics *metrics;
};

static enum ag_metrics_pwned index_of(enum ag_pwned_mode mode)
{
    return mode == AG_PWNED_NTLM ? AG_METRICS_PWNED_NTLM
                                 : AG_METRICS_PWNED_SHA1;
}

static const char *mode_name(enum ag_pwned_mode mode)
{
    return mode == AG_PWNED_NTLM ? "NTLM" : "SHA-1";
}

static void publish_figures(struct ag_pwned_live *l, enum ag_pwned_mode mode,
                            const struct ag_pwned *p)
{
    const struct ag_pwned_info *in = ag_pwned_info(p);
    ag_metrics_pwned_corpus(l->metrics, index_of(mode), true, in->entries,
                            in->created_s);
}

static void log_loaded(const char *event, const char *path,
                       const struct ag_pwned *p)
{
    const struct ag_pwned_info *in = ag_pwned_info(p);
    char made[AG_CLOCK_RFC3339_MAX];
    ag_clock_rfc3339((uint64_t)(in->created_s > 0 ? in->created_s : 0) * 1000,
                     made);
    ag_log(AG_LOG_INFO, event,
           "%s: %s corpus of %llu hashes (min count %u), "
           "made %s",
           path, mode_name(in->mode), (unsigned long long)in->entries,
           in->min_count, made);
}

/* ---- the holder's ops -------------------------------------------------- */

/* Opens path as a corpus; a replacement must hold the slot's mode. */
static int load(void *ctx, size_t slot, const char *path, void **obj,
                struct ag_error *err)
{
    struct ag_pwned_live *l = ctx;
    char why[AG_ERROR_MSG_MAX];
    struct ag_pwned *p;
    int rc = ag_pwned_open(path, &p, why, sizeof why);
    if (rc)
        return ag_error_set(err, rc, "pwned-file", "%s", why);
    enum ag_pwned_mode want = l->mode[slot], got = ag_pwned_info(p)->mode;
    if (want && got != want) {
        ag_pwned_close(p);
        return ag_error_set(err, AG_EINVAL, "pwned-file",
                            "--pwned-file %s: now holds an %s corpus, where "
                            "the %s one was",
                            path, mode_name(got), mode_name(want));
    }
    *obj = p;
    return AG_OK;
}

static void close_corpus(void *ctx, size_t slot, void *obj)
{
    (void)ctx;
    (void)slot;
    ag_pwned_close(obj);
}

static void replaced(void *ctx, size_t slot, const char *path, const void *obj)
{
    struct ag_pwned_live *l = ctx;
    log_loaded("pwned_reloaded", path, obj);
    publish_figures(l, l->mode[slot], obj);
}

static void refused(void *ctx, size_t slot, const struct ag_error *why,
                    bool serving)
{
    struct ag_pwned_live *l = ctx;
    (void)slot;
    /* The line first: whoever sees the count finds it written. */
    ag_log(AG_LOG_ERROR, "pwned_reload_failed", "%s; %s", why->msg,
           serving ? "keeping the corpus loaded before"
                   : "still no corpus of this mode is served");
    ag_metrics_count(l->metrics, AG_M_PWNED_RELOAD_FAILURES);
}

/* Requests get the 404 "no corpus" until another file is renamed in. */
static void withdrawn(void *ctx, size_t slot, const char *path)
{
    struct ag_pwned_live *l = ctx;
    enum ag_pwned_mode mode = l->mode[slot];
    ag_log(AG_LOG_ERROR, "pwned_changed_in_place",
           "--pwned-file %s: the %s corpus file was changed in place; no %s "
           "corpus is served until a new file is renamed over the path "
           "(abuseguard pwned import does)",
           path, mode_name(mode), mode_name(mode));
    ag_metrics_pwned_corpus(l->metrics, index_of(mode), false, 0, 0);
    ag_metrics_count(l->metrics, AG_M_PWNED_RELOAD_FAILURES);
}

static void name(void *ctx, size_t slot, const char *path, char *out,
                 size_t outlen)
{
    (void)ctx;
    (void)slot;
    snprintf(out, outlen, "--pwned-file %s", path);
}

static const struct ag_replaceable_ops ops = {
    .load = load,
    .free = close_corpus,
    .replaced = replaced,
    .refused = refused,
    .withdrawn = withdrawn,
    .name = name,
};

/* ---- readers ----------------------------------------------------------- */

struct ag_pwned_hold *ag_pwned_live_hold(struct ag_pwned_live *l,
                                         enum ag_pwned_mode mode)
{
    if (!l || l->slot_of[index_of(mode)] < 0)
        return NULL;
    return (struct ag_pwned_hold *)ag_replaceable_hold(
        l->files, (size_t)l->slot_of[index_of(mode)]);
}

const struct ag_pwned *ag_pwned_hold_corpus(const struct ag_pwned_hold *h)
{
    return ag_replaceable_obj((const struct ag_replaceable_hold *)h);
}

void ag_pwned_hold_release(struct ag_pwned_hold *h)
{
    ag_replaceable_release((struct ag_replaceable_hold *)h);
}

void ag_pwned_live_tick(struct ag_pwned_live *l)
{
    ag_replaceable_tick(l->files);
}

size_t ag_pwned_live_retired(struct ag_pwned_live *l)
{
    return ag_replaceable_retired(l->files);
}

/* ---- start and stop ---------------------------------------------------- */

static void free_live(struct ag_pwned_live *l)
{
    ag_replaceable_free(l->files);
    free(l);
}

/* Opens path at start into slot i, the slot of its mode. */
static int load_first(struct ag_pwned_live *l, size_t i, const char *path,
                      struct ag_error *err)
{
    struct ag_error e = {0};
    int rc = ag_replaceable_add(l->files, i, path, &e);
    if (rc)
        return ag_error_set(err, rc, "pwned-file", "--pwned-file %s", e.msg);
    const struct ag_pwned *p = ag_replaceable_served(l->files, i);
    enum ag_pwned_mode mode = ag_pwned_info(p)->mode;
    int *slot = &l->slot_of[index_of(mode)];
    if (*slot >= 0)
        return ag_error_set(err, AG_EINVAL, "pwned-file",
                            "--pwned-file: %s and %s are both %s corpora; give "
                            "one of each mode at most",
                            ag_replaceable_path(l->files, (size_t)*slot), path,
                            mode_name(mode));
    *slot = (int)i;
    l->mode[i] = mode;
    publish_figures(l, mode, p);
    return AG_OK;
}

int ag_pwned_live_start(const struct ag_pwned_live_opts *o,
                        struct ag_pwned_live **out, struct ag_error *err)
{
    if (o->n > AG_PWNED_LIVE_FILES)
        return ag_error_set(err, AG_EINVAL, "pwned-file",
                            "--pwned-file is given more than %d times",
                            AG_PWNED_LIVE_FILES);
    struct ag_pwned_live *l = calloc(1, sizeof *l);
    if (!l)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    l->metrics = o->metrics;
    for (int i = 0; i < AG_METRICS_PWNED_MODES; i++)
        l->slot_of[i] = -1;
    if (ag_replaceable_new(
            &(struct ag_replaceable_opts){.ops = &ops,
                                          .ctx = l,
                                          .slots = AG_PWNED_LIVE_FILES,
                                          .read = AG_REPLACEABLE_MAPPED},
            &l->files)) {
        free(l);
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < o->n; i++) {
        int rc = load_first(l, i, o->paths[i], err);
        if (rc) {
            free_live(l);
            return rc;
        }
    }
    /* Said once every file is in: a refusal is the start's one line. */
    for (int m = 0; m < AG_METRICS_PWNED_MODES; m++)
        if (l->slot_of[m] >= 0) {
            size_t i = (size_t)l->slot_of[m];
            log_loaded("pwned_loaded", ag_replaceable_path(l->files, i),
                       ag_replaceable_served(l->files, i));
        }
    if (ag_replaceable_watch(l->files, o->interval_ms)) {
        free_live(l);
        return ag_error_set(err, AG_ENOMEM, NULL,
                            "cannot start the corpus watcher thread");
    }
    *out = l;
    return AG_OK;
}

void ag_pwned_live_stop(struct ag_pwned_live *l)
{
    if (!l)
        return;
    ag_replaceable_stop(l->files);
    for (int m = 0; m < AG_METRICS_PWNED_MODES; m++)
        if (l->slot_of[m] >= 0 &&
            ag_replaceable_served(l->files, (size_t)l->slot_of[m]))
            ag_metrics_pwned_corpus(l->metrics, (enum ag_metrics_pwned)m, false,
                                    0, 0);
    free_live(l);
}
