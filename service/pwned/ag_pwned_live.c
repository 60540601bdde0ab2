/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_pwned_live.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ag_clock.h"
#include "ag_error.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_pwned.h"

/* A corpus as served: the mapping and its readers. */
struct ag_pwned_hold {
    struct ag_pwned *p;
    /* Readers holding it. Only ever raised under the lock while it is
     * served, so that once replaced it only goes down, and 0 then stays 0:
     * the watcher may close it. */
    atomic_uint readers;
    struct ag_pwned_hold *next; /* on the retired list */
};

/* What a path named when it was last looked at. */
struct ident {
    bool missing;
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns;
};

/* One mode's corpus and where it comes from. */
struct slot {
    char *path;                /* NULL: no corpus of this mode */
    struct ag_pwned_hold *cur; /* served; swapped under the lock */
    struct ident loaded;       /* the file cur came from */
    struct ident failed;       /* the last file that failed to load */
    bool has_failed;           /* watcher only, like loaded */
    /* cur withdrawn because the file it mapped (loaded) changed in
     * place, and the path still names that file: only another one brings
     * a corpus back. Watcher only. */
    bool in_place;
};

struct ag_pwned_live {
    struct slot slots[AG_METRICS_PWNED_MODES]; /* by enum ag_metrics_pwned */
    struct ag_metrics *metrics;
    pthread_mutex_t lock;          /* guards the slots' cur */
    struct ag_pwned_hold *retired; /* replaced, still held; watcher only */
    unsigned interval_ms;
    pthread_t thread;
    bool running;
    pthread_mutex_t stop_lock; /* guards stopping */
    pthread_cond_t wake;
    bool stopping;
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

static struct ident look(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return (struct ident){.missing = true};
    return (struct ident){
        .dev = st.st_dev,
        .ino = st.st_ino,
        .size = st.st_size,
        .mtime_ns =
            (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
    };
}

static bool same(const struct ident *a, const struct ident *b)
{
    if (a->missing || b->missing)
        return a->missing == b->missing;
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns;
}

/* Whether a and b are one file, whatever its size and time. */
static bool same_file(const struct ident *a, const struct ident *b)
{
    return !a->missing && !b->missing && a->dev == b->dev && a->ino == b->ino;
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

/* Opens path as a corpus served as a new hold. */
static int open_hold(const char *path, struct ag_pwned_hold **out, char *why,
                     size_t whylen)
{
    struct ag_pwned_hold *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(why, whylen, "%s: out of memory", path);
        return AG_ENOMEM;
    }
    int rc = ag_pwned_open(path, &h->p, why, whylen);
    if (rc) {
        free(h);
        return rc;
    }
    atomic_init(&h->readers, 0);
    *out = h;
    return AG_OK;
}

static void close_hold(struct ag_pwned_hold *h)
{
    ag_pwned_close(h->p);
    free(h);
}

struct ag_pwned_hold *ag_pwned_live_hold(struct ag_pwned_live *l,
                                         enum ag_pwned_mode mode)
{
    if (!l)
        return NULL;
    struct slot *s = &l->slots[index_of(mode)];
    pthread_mutex_lock(&l->lock);
    struct ag_pwned_hold *h = s->cur;
    if (h)
        atomic_fetch_add_explicit(&h->readers, 1, memory_order_relaxed);
    pthread_mutex_unlock(&l->lock);
    return h;
}

const struct ag_pwned *ag_pwned_hold_corpus(const struct ag_pwned_hold *h)
{
    return h->p;
}

void ag_pwned_hold_release(struct ag_pwned_hold *h)
{
    /* Release: the reader's last look at the mapping happens before the
     * watcher, which reads 0 with acquire, unmaps it. */
    if (h)
        atomic_fetch_sub_explicit(&h->readers, 1, memory_order_release);
}

/* Closes the replaced corpora no reader holds any more. */
static void sweep(struct ag_pwned_live *l)
{
    struct ag_pwned_hold **pp = &l->retired;
    while (*pp) {
        struct ag_pwned_hold *h = *pp;
        if (atomic_load_explicit(&h->readers, memory_order_acquire) == 0) {
            *pp = h->next;
            close_hold(h);
        } else {
            pp = &h->next;
        }
    }
}

/* A replacement of s that cannot be served: logged and counted once for
 * the file now at the path, which is not tried again. */
static void refuse(struct ag_pwned_live *l, struct slot *s,
                   const struct ident *now, const char *why)
{
    s->failed = *now;
    s->has_failed = true;
    /* The line first: whoever sees the count finds it written. */
    ag_log(AG_LOG_ERROR, "pwned_reload_failed", "%s; %s", why,
           s->cur ? "keeping the corpus loaded before"
                  : "still no corpus of this mode is served");
    ag_metrics_count(l->metrics, AG_M_PWNED_RELOAD_FAILURES);
}

/* Puts h, which s no longer serves, on the retired list, closed once no
 * reader holds it. */
static void retire(struct ag_pwned_live *l, struct ag_pwned_hold *h)
{
    if (!h)
        return;
    h->next = l->retired;
    l->retired = h;
}

/* The file s serves was changed where it lies (truncated, copied over,
 * rsync --inplace) instead of replaced by a rename: its mapping now shows
 * whatever the writer left, and a read past a new end is SIGBUS. Stops
 * serving the mode (requests get the 404 "no corpus") until another file
 * is renamed in; logged and counted once. */
static void withdraw(struct ag_pwned_live *l, struct slot *s,
                     enum ag_pwned_mode mode)
{
    ag_log(AG_LOG_ERROR, "pwned_changed_in_place",
           "--pwned-file %s: the %s corpus file was changed in place; no %s "
           "corpus is served until a new file is renamed over the path "
           "(abuseguard pwned import does)",
           s->path, mode_name(mode), mode_name(mode));
    ag_metrics_pwned_corpus(l->metrics, index_of(mode), false, 0, 0);
    ag_metrics_count(l->metrics, AG_M_PWNED_RELOAD_FAILURES);
    pthread_mutex_lock(&l->lock);
    struct ag_pwned_hold *old = s->cur;
    s->cur = NULL;
    pthread_mutex_unlock(&l->lock);
    retire(l, old);
    s->in_place = true;
    s->has_failed = false;
}

/* Looks at one path and swaps in the file now there if it is another. */
static void follow(struct ag_pwned_live *l, struct slot *s,
                   enum ag_pwned_mode mode)
{
    struct ident now = look(s->path);
    if (s->cur && same(&now, &s->loaded))
        return;
    if (same_file(&now, &s->loaded) && (s->cur || s->in_place)) {
        if (s->cur)
            withdraw(l, s, mode);
        return;
    }
    /* The path names another file: once the one changed in place is gone
     * from it (and unmapped) its inode may come back as a new file's. */
    s->in_place = false;
    if (s->has_failed && same(&now, &s->failed))
        return;
    char why[AG_ERROR_MSG_MAX];
    if (now.missing) {
        snprintf(why, sizeof why, "--pwned-file %s: %s", s->path,
                 strerror(ENOENT));
        refuse(l, s, &now, why);
        return;
    }
    struct ag_pwned_hold *h;
    if (open_hold(s->path, &h, why, sizeof why)) {
        refuse(l, s, &now, why);
        return;
    }
    enum ag_pwned_mode got = ag_pwned_info(h->p)->mode;
    if (got != mode) {
        snprintf(why, sizeof why,
                 "--pwned-file %s: now holds an %s corpus, where the %s one "
                 "was",
                 s->path, mode_name(got), mode_name(mode));
        close_hold(h);
        refuse(l, s, &now, why);
        return;
    }
    /* Said and counted first: whoever is answered from the new corpus
     * finds its line written and its gauges set. */
    log_loaded("pwned_reloaded", s->path, h->p);
    publish_figures(l, mode, h->p);
    pthread_mutex_lock(&l->lock);
    struct ag_pwned_hold *old = s->cur;
    s->cur = h;
    pthread_mutex_unlock(&l->lock);
    retire(l, old);
    s->loaded = now;
    s->has_failed = false;
}

void ag_pwned_live_tick(struct ag_pwned_live *l)
{
    static const enum ag_pwned_mode modes[AG_METRICS_PWNED_MODES] = {
        [AG_METRICS_PWNED_SHA1] = AG_PWNED_SHA1,
        [AG_METRICS_PWNED_NTLM] = AG_PWNED_NTLM,
    };
    for (int i = 0; i < AG_METRICS_PWNED_MODES; i++)
        if (l->slots[i].path)
            follow(l, &l->slots[i], modes[i]);
    sweep(l);
}

size_t ag_pwned_live_retired(struct ag_pwned_live *l)
{
    size_t n = 0;
    for (const struct ag_pwned_hold *h = l->retired; h; h = h->next)
        n++;
    return n;
}

static void *watch(void *arg)
{
    struct ag_pwned_live *l = arg;
    pthread_mutex_lock(&l->stop_lock);
    while (!l->stopping) {
        struct timespec until = ag_clock_deadline(l->interval_ms);
        while (!l->stopping && pthread_cond_timedwait(&l->wake, &l->stop_lock,
                                                      &until) != ETIMEDOUT)
            ;
        if (l->stopping)
            break;
        pthread_mutex_unlock(&l->stop_lock);
        ag_pwned_live_tick(l);
        pthread_mutex_lock(&l->stop_lock);
    }
    pthread_mutex_unlock(&l->stop_lock);
    return NULL;
}

static void free_live(struct ag_pwned_live *l)
{
    for (int i = 0; i < AG_METRICS_PWNED_MODES; i++) {
        if (l->slots[i].cur)
            close_hold(l->slots[i].cur);
        free(l->slots[i].path);
    }
    while (l->retired) {
        struct ag_pwned_hold *h = l->retired;
        l->retired = h->next;
        close_hold(h);
    }
    pthread_mutex_destroy(&l->lock);
    pthread_mutex_destroy(&l->stop_lock);
    pthread_cond_destroy(&l->wake);
    free(l);
}

/* Opens path at start into its mode's slot. */
static int load_first(struct ag_pwned_live *l, const char *path,
                      struct ag_error *err)
{
    char why[AG_ERROR_MSG_MAX];
    struct ident now = look(path);
    struct ag_pwned_hold *h;
    int rc = open_hold(path, &h, why, sizeof why);
    if (rc)
        return ag_error_set(err, rc, "pwned-file", "--pwned-file %s", why);
    enum ag_pwned_mode mode = ag_pwned_info(h->p)->mode;
    struct slot *s = &l->slots[index_of(mode)];
    if (s->path) {
        rc = ag_error_set(err, AG_EINVAL, "pwned-file",
                          "--pwned-file: %s and %s are both %s corpora; give "
                          "one of each mode at most",
                          s->path, path, mode_name(mode));
        close_hold(h);
        return rc;
    }
    s->path = strdup(path);
    if (!s->path) {
        close_hold(h);
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    s->cur = h;
    s->loaded = now;
    publish_figures(l, mode, h->p);
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
    l->interval_ms = o->interval_ms;
    pthread_mutex_init(&l->lock, NULL);
    pthread_mutex_init(&l->stop_lock, NULL);
    ag_clock_cond_init(&l->wake);
    for (size_t i = 0; i < o->n; i++) {
        int rc = load_first(l, o->paths[i], err);
        if (rc) {
            free_live(l);
            return rc;
        }
    }
    /* Said once every file is in: a refusal is the start's one line. */
    for (int i = 0; i < AG_METRICS_PWNED_MODES; i++)
        if (l->slots[i].cur)
            log_loaded("pwned_loaded", l->slots[i].path, l->slots[i].cur->p);
    if (l->interval_ms && o->n) {
        if (pthread_create(&l->thread, NULL, watch, l) != 0) {
            free_live(l);
            return ag_error_set(err, AG_ENOMEM, NULL,
                                "cannot start the corpus watcher thread");
        }
        l->running = true;
    }
    *out = l;
    return AG_OK;
}

void ag_pwned_live_stop(struct ag_pwned_live *l)
{
    if (!l)
        return;
    if (l->running) {
        pthread_mutex_lock(&l->stop_lock);
        l->stopping = true;
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->stop_lock);
        pthread_join(l->thread, NULL);
    }
    for (int i = 0; i < AG_METRICS_PWNED_MODES; i++)
        if (l->slots[i].cur)
            ag_metrics_pwned_corpus(l->metrics, (enum ag_metrics_pwned)i, false,
                                    0, 0);
    free_live(l);
}
