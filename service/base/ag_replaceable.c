/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_replaceable.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ag_clock.h"

/* A file as served: what was loaded from it and its readers. */
struct ag_replaceable_hold {
    void *obj;
    size_t slot; /* for ops->free */
    /* Readers holding it. Only ever raised under the lock while it is
     * served, so that once replaced it only goes down, and 0 then stays 0:
     * the watcher may free it. */
    atomic_uint readers;
    struct ag_replaceable_hold *next; /* on the retired list */
};

/* What a path named when it was last looked at. */
struct ident {
    int missing; /* stat's errno; 0: the rest is the file's */
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns;
};

/* One path and the file served from it. */
struct slot {
    char *path;                      /* NULL: an empty slot */
    struct ag_replaceable_hold *cur; /* served; swapped under the lock */
    struct ident loaded;             /* the file cur came from */
    struct ident failed;             /* the last file that failed to load */
    bool has_failed;                 /* watcher only, like loaded */
    /* MAPPED: cur withdrawn because the file it came from (loaded)
     * changed in place, and the path still names that file: only another
     * one brings a file back. Watcher only. */
    bool in_place;
};

struct ag_replaceable {
    const struct ag_replaceable_ops *ops;
    void *ctx;
    enum ag_replaceable_read read;
    pthread_mutex_t lock;                /* guards the slots' cur */
    struct ag_replaceable_hold *retired; /* replaced, still held */
    unsigned interval_ms;
    pthread_t thread;
    bool running;
    pthread_mutex_t stop_lock; /* guards stopping */
    pthread_cond_t wake;
    bool stopping;
    size_t nslots;
    struct slot slots[];
};

/* ---- files ------------------------------------------------------------- */

static struct ident look(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return (struct ident){.missing = errno ? errno : ENOENT};
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

/* Loads slot's path as a new hold; err says why not. */
static int open_hold(struct ag_replaceable *r, size_t slot,
                     struct ag_replaceable_hold **out, struct ag_error *err)
{
    const char *path = r->slots[slot].path;
    struct ag_replaceable_hold *h = calloc(1, sizeof *h);
    if (!h)
        return ag_error_set(err, AG_ENOMEM, NULL, "%s: out of memory", path);
    int rc = r->ops->load(r->ctx, slot, path, &h->obj, err);
    if (rc) {
        free(h);
        return rc;
    }
    h->slot = slot;
    atomic_init(&h->readers, 0);
    *out = h;
    return AG_OK;
}

static void close_hold(struct ag_replaceable *r, struct ag_replaceable_hold *h)
{
    r->ops->free(r->ctx, h->slot, h->obj);
    free(h);
}

/* ---- readers ----------------------------------------------------------- */

/* Raises the readers of slot's file, if any; under the lock. */
static struct ag_replaceable_hold *take(struct slot *s)
{
    struct ag_replaceable_hold *h = s->cur;
    if (h)
        atomic_fetch_add_explicit(&h->readers, 1, memory_order_relaxed);
    return h;
}

struct ag_replaceable_hold *ag_replaceable_hold(struct ag_replaceable *r,
                                                size_t slot)
{
    pthread_mutex_lock(&r->lock);
    struct ag_replaceable_hold *h = take(&r->slots[slot]);
    pthread_mutex_unlock(&r->lock);
    return h;
}

void ag_replaceable_hold_all(struct ag_replaceable *r, size_t n,
                             struct ag_replaceable_hold **out)
{
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < n; i++)
        out[i] = take(&r->slots[i]);
    pthread_mutex_unlock(&r->lock);
}

void *ag_replaceable_obj(const struct ag_replaceable_hold *h)
{
    return h->obj;
}

void ag_replaceable_release(struct ag_replaceable_hold *h)
{
    /* Release: the reader's last look at the file happens before the
     * watcher, which reads 0 with acquire, frees it. */
    if (h)
        atomic_fetch_sub_explicit(&h->readers, 1, memory_order_release);
}

void ag_replaceable_release_all(struct ag_replaceable_hold *const *held,
                                size_t n)
{
    for (size_t i = 0; i < n; i++)
        ag_replaceable_release(held[i]);
}

const char *ag_replaceable_path(const struct ag_replaceable *r, size_t slot)
{
    return slot < r->nslots ? r->slots[slot].path : NULL;
}

void *ag_replaceable_served(const struct ag_replaceable *r, size_t slot)
{
    const struct ag_replaceable_hold *h = r->slots[slot].cur;
    return h ? h->obj : NULL;
}

/* ---- the watcher ------------------------------------------------------- */

/* Frees the replaced files no reader holds any more. */
static void sweep(struct ag_replaceable *r)
{
    struct ag_replaceable_hold **pp = &r->retired;
    while (*pp) {
        struct ag_replaceable_hold *h = *pp;
        if (atomic_load_explicit(&h->readers, memory_order_acquire) == 0) {
            *pp = h->next;
            close_hold(r, h);
        } else {
            pp = &h->next;
        }
    }
}

/* Makes h what s serves (NULL: nothing) and puts what it served before on
 * the retired list, freed once no reader holds it. */
static void swap(struct ag_replaceable *r, struct slot *s,
                 struct ag_replaceable_hold *h)
{
    pthread_mutex_lock(&r->lock);
    struct ag_replaceable_hold *old = s->cur;
    s->cur = h;
    pthread_mutex_unlock(&r->lock);
    if (old) {
        old->next = r->retired;
        r->retired = old;
    }
}

/* A replacement of s that cannot be served: refused once for the file
 * now at the path, which is not tried again. */
static void refuse(struct ag_replaceable *r, struct slot *s,
                   const struct ident *now, const struct ag_error *why)
{
    s->failed = *now;
    s->has_failed = true;
    if (r->ops->refused)
        r->ops->refused(r->ctx, (size_t)(s - r->slots), why, s->cur != NULL);
}

/* The path names no file: refused with the user's name for it. */
static void refuse_missing(struct ag_replaceable *r, struct slot *s,
                           const struct ident *now)
{
    char name[AG_ERROR_MSG_MAX];
    size_t slot = (size_t)(s - r->slots);
    if (r->ops->name)
        r->ops->name(r->ctx, slot, s->path, name, sizeof name);
    else
        snprintf(name, sizeof name, "%s", s->path);
    struct ag_error why = {0};
    ag_error_fill(&why, AG_EIO, NULL, "%s: %s", name, strerror(now->missing));
    refuse(r, s, now, &why);
}

/* MAPPED: the file s serves was changed where it lies (truncated, copied
 * over, rsync --inplace) instead of replaced by a rename: a reader's
 * mapping now shows whatever the writer left, and a read past a new end
 * is SIGBUS. s serves nothing until another file is renamed in. */
static void withdraw(struct ag_replaceable *r, struct slot *s)
{
    if (r->ops->withdrawn)
        r->ops->withdrawn(r->ctx, (size_t)(s - r->slots), s->path);
    swap(r, s, NULL);
    s->in_place = true;
    s->has_failed = false;
}

/* Whether follow is done with s before loading: the path names the file
 * s serves, one it refused, or (MAPPED) the one it withdrew. */
static bool settled(struct ag_replaceable *r, struct slot *s,
                    const struct ident *now)
{
    if (s->cur && same(now, &s->loaded))
        return true;
    if (r->read == AG_REPLACEABLE_MAPPED && same_file(now, &s->loaded) &&
        (s->cur || s->in_place)) {
        if (s->cur)
            withdraw(r, s);
        return true;
    }
    /* The path names another file: once the one changed in place is gone
     * from it (and unmapped) its inode may come back as a new file's. */
    s->in_place = false;
    return s->has_failed && same(now, &s->failed);
}

/* Looks at one path and swaps in the file now there if it is another. */
static void follow(struct ag_replaceable *r, struct slot *s)
{
    size_t slot = (size_t)(s - r->slots);
    struct ident now = look(s->path);
    if (settled(r, s, &now))
        return;
    if (now.missing) {
        refuse_missing(r, s, &now);
        return;
    }
    struct ag_error why = {0};
    struct ag_replaceable_hold *h = NULL;
    int rc = open_hold(r, slot, &h, &why);
    /* COPIED: written to while it was read (a copy in place still going):
     * what was read may be a part, refused or, worse, one that parses.
     * Taken at the next look, once the writer is done; nothing said. */
    if (r->read == AG_REPLACEABLE_COPIED) {
        struct ident after = look(s->path);
        if (!same(&after, &now)) {
            if (!rc)
                close_hold(r, h);
            return;
        }
    }
    if (rc) {
        refuse(r, s, &now, &why);
        return;
    }
    /* Said and counted first: whoever is answered from the new file finds
     * its line written and its gauges set. */
    if (r->ops->replaced)
        r->ops->replaced(r->ctx, slot, s->path, h->obj);
    swap(r, s, h);
    s->loaded = now;
    s->has_failed = false;
}

void ag_replaceable_tick(struct ag_replaceable *r)
{
    for (size_t i = 0; i < r->nslots; i++)
        if (r->slots[i].path)
            follow(r, &r->slots[i]);
    sweep(r);
}

size_t ag_replaceable_retired(const struct ag_replaceable *r)
{
    size_t n = 0;
    for (const struct ag_replaceable_hold *h = r->retired; h; h = h->next)
        n++;
    return n;
}

static void *watch(void *arg)
{
    struct ag_replaceable *r = arg;
    pthread_mutex_lock(&r->stop_lock);
    while (!r->stopping) {
        struct timespec until = ag_clock_deadline(r->interval_ms);
        while (!r->stopping && pthread_cond_timedwait(&r->wake, &r->stop_lock,
                                                      &until) != ETIMEDOUT)
            ;
        if (r->stopping)
            break;
        pthread_mutex_unlock(&r->stop_lock);
        ag_replaceable_tick(r);
        pthread_mutex_lock(&r->stop_lock);
    }
    pthread_mutex_unlock(&r->stop_lock);
    return NULL;
}

/* ---- start and stop ---------------------------------------------------- */

int ag_replaceable_new(const struct ag_replaceable_opts *o,
                       struct ag_replaceable **out)
{
    struct ag_replaceable *r =
        calloc(1, sizeof *r + o->slots * sizeof r->slots[0]);
    if (!r)
        return AG_ENOMEM;
    r->ops = o->ops;
    r->ctx = o->ctx;
    r->read = o->read;
    r->nslots = o->slots;
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->stop_lock, NULL);
    ag_clock_cond_init(&r->wake);
    *out = r;
    return AG_OK;
}

int ag_replaceable_add(struct ag_replaceable *r, size_t slot, const char *path,
                       struct ag_error *err)
{
    if (slot >= r->nslots || r->slots[slot].path)
        return ag_error_set(err, AG_EINVAL, NULL,
                            "slot %zu of %zu is taken or out of range", slot,
                            r->nslots);
    struct slot *s = &r->slots[slot];
    s->path = strdup(path);
    if (!s->path)
        return ag_error_set(err, AG_ENOMEM, NULL, "%s: out of memory", path);
    /* Looked at first: a file renamed in while this one loads is
     * another, taken at the first look. */
    s->loaded = look(path);
    int rc = open_hold(r, slot, &s->cur, err);
    if (rc) {
        free(s->path);
        s->path = NULL;
    }
    return rc;
}

int ag_replaceable_watch(struct ag_replaceable *r, unsigned interval_ms)
{
    bool any = false;
    for (size_t i = 0; i < r->nslots; i++)
        any = any || r->slots[i].path;
    if (!interval_ms || !any || r->running)
        return AG_OK;
    r->interval_ms = interval_ms;
    if (pthread_create(&r->thread, NULL, watch, r) != 0)
        return AG_ENOMEM;
    r->running = true;
    return AG_OK;
}

void ag_replaceable_stop(struct ag_replaceable *r)
{
    if (!r->running)
        return;
    pthread_mutex_lock(&r->stop_lock);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->stop_lock);
    pthread_join(r->thread, NULL);
    r->running = false;
}

void ag_replaceable_free(struct ag_replaceable *r)
{
    if (!r)
        return;
    ag_replaceable_stop(r);
    for (size_t i = 0; i < r->nslots; i++) {
        if (r->slots[i].cur)
            close_hold(r, r->slots[i].cur);
        free(r->slots[i].path);
    }
    while (r->retired) {
        struct ag_replaceable_hold *h = r->retired;
        r->retired = h->next;
        close_hold(r, h);
    }
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->stop_lock);
    pthread_cond_destroy(&r->wake);
    free(r);
}
