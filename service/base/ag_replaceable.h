/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ag_replaceable: the one holder of the files an operator replaces while
 * the service runs (the breached-password corpora of ag_pwned_live, the
 * MMDB databases and IP lists of ag_network). It knows nothing of what a
 * file holds: its user loads and frees through a table of functions
 * (struct ag_replaceable_ops, as Redis's ConnectionType) and says what a
 * load, a refusal or a withdrawal means in its own log lines and metrics.
 *
 * Each slot serves one path. A watcher thread looks at every path about
 * as often as it is told (stat(2): the device, inode, size and
 * modification time), off the request path, and loads a file the path
 * names anew on its own thread; what loaded is swapped in under a short
 * lock. A replacement that cannot be loaded (missing, damaged, refused by
 * the loader) keeps the last good file and is refused once: one call of
 * ops->refused however many looks see the same file; it is tried again
 * only when the path shows yet another file.
 *
 * How a file changed in place (the same device and inode, another size or
 * time) is taken depends on how its readers read it:
 * - AG_REPLACEABLE_MAPPED: readers read the file itself for as long as it
 *   is served (a mapping). A rename is the only safe replacement; a
 *   change in place is withdrawn (ops->withdrawn, the slot serves nothing)
 *   and serves again only when another file (a new inode) is at the path.
 * - AG_REPLACEABLE_COPIED: the load reads the file whole and readers read
 *   only what it made. A change in place is another file to load; a file
 *   that changes while it is loaded is dropped, nothing said or counted,
 *   and taken at the next look (an operator's cp is seen half-written).
 *
 * A reader holds what it reads from (ag_replaceable_hold) and it stays
 * however many replacements happen meanwhile; the last reader does not
 * free it (unmapping or freeing tens of megabytes is no work for a
 * request): the watcher frees a replaced file at its first look after its
 * last reader let go.
 *
 * Thread-safety: the hold and release functions, ag_replaceable_obj and
 * ag_replaceable_path from any thread, any number at once; the rest from
 * one thread, the owner's. Once ag_replaceable_watch started the watcher,
 * it alone looks and calls the ops until ag_replaceable_stop (the ops of
 * a look run on the thread that looks: the watcher, or the owner's in
 * ag_replaceable_tick and ag_replaceable_add).
 */
#ifndef AG_REPLACEABLE_H
#define AG_REPLACEABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_error.h"

struct ag_replaceable;
/* A reader's hold on one loaded file. */
struct ag_replaceable_hold;

enum ag_replaceable_read {
    AG_REPLACEABLE_MAPPED, /* readers read the file while it is served */
    AG_REPLACEABLE_COPIED, /* the load reads it whole; readers, a copy */
};

/* What a user does with its files. ctx is opts.ctx; slot, the slot the
 * file is for; obj, what load made. load and free are required, the
 * others may be NULL. */
struct ag_replaceable_ops {
    /* Loads the file at path into *obj: AG_OK, or an AG_E* code with err
     * saying why in one line that names the file. Called at
     * ag_replaceable_add and at each look that finds another file. */
    int (*load)(void *ctx, size_t slot, const char *path, void **obj,
                struct ag_error *err);
    void (*free)(void *ctx, size_t slot, void *obj);
    /* obj, loaded at a look, is about to replace what slot serves: say so
     * and set its gauges. No reader sees it before this returns. */
    void (*replaced)(void *ctx, size_t slot, const char *path, const void *obj);
    /* A replacement of slot cannot be served, for the reason in why: log
     * one line and count it. serving: slot still serves the file loaded
     * before (it serves nothing once withdrawn). */
    void (*refused)(void *ctx, size_t slot, const struct ag_error *why,
                    bool serving);
    /* AG_REPLACEABLE_MAPPED: the file slot serves was changed in place;
     * slot serves nothing from when this returns. Log, count, unset its
     * gauges. */
    void (*withdrawn)(void *ctx, size_t slot, const char *path);
    /* How a line names slot's file, for a path found missing
     * ("<name>: No such file or directory"); NULL: the path. */
    void (*name)(void *ctx, size_t slot, const char *path, char *out,
                 size_t outlen);
};

struct ag_replaceable_opts {
    const struct ag_replaceable_ops *ops; /* borrowed; outlives the holder */
    void *ctx;                            /* handed to every op */
    size_t slots;                         /* 0 to slots - 1 */
    enum ag_replaceable_read read;
};

/* A holder of o->slots empty slots: AG_OK and *out, or AG_ENOMEM. Free
 * with ag_replaceable_free. */
int ag_replaceable_new(const struct ag_replaceable_opts *o,
                       struct ag_replaceable **out);
/* Stops the watcher, then frees every file (served or replaced, through
 * ops->free) and r; NULL does nothing. No hold may be left. */
void ag_replaceable_free(struct ag_replaceable *r);

/* Serves path (copied) in the empty slot: loads it now, on the caller's
 * thread. AG_OK; or what ops->load returned, with its err; or AG_ENOMEM,
 * or AG_EINVAL for a slot out of range or in use. A slot that failed
 * stays empty; ag_replaceable_free is the way out. */
int ag_replaceable_add(struct ag_replaceable *r, size_t slot, const char *path,
                       struct ag_error *err);
/* Starts the watcher thread, which looks every interval_ms; none is
 * started for 0 (the owner looks with ag_replaceable_tick) or when no
 * slot serves a path. AG_OK, or AG_ENOMEM: no thread. Once at most. */
int ag_replaceable_watch(struct ag_replaceable *r, unsigned interval_ms);
/* Stops the watcher thread and waits for its look to end; then the
 * owner's thread alone touches r. Again, or with no thread: nothing. */
void ag_replaceable_stop(struct ag_replaceable *r);

/* One look, now: loads and swaps in what changed and frees the replaced
 * files no reader holds any more. The watcher's, or the owner's with no
 * watcher (tests). */
void ag_replaceable_tick(struct ag_replaceable *r);
/* Replaced files still loaded because a reader holds them. */
size_t ag_replaceable_retired(const struct ag_replaceable *r);

/* The path slot serves from, as added; NULL for an empty slot. Fixed from
 * ag_replaceable_add to ag_replaceable_free. */
const char *ag_replaceable_path(const struct ag_replaceable *r, size_t slot);
/* What slot serves now, NULL for nothing: for the owner while no watcher
 * runs (before ag_replaceable_watch, after ag_replaceable_stop); a
 * reader takes a hold instead. */
void *ag_replaceable_served(const struct ag_replaceable *r, size_t slot);

/* What slot serves now, held until ag_replaceable_release: valid however
 * it is replaced meanwhile. NULL when slot serves nothing. One short
 * lock; nothing allocated. */
struct ag_replaceable_hold *ag_replaceable_hold(struct ag_replaceable *r,
                                                size_t slot);
/* Slots 0 to n - 1 held at once, under one lock: out[i] is slot i's hold,
 * NULL where it serves nothing. */
void ag_replaceable_hold_all(struct ag_replaceable *r, size_t n,
                             struct ag_replaceable_hold **out);
/* What h holds: an obj that ops->load made. Borrowed until released. */
void *ag_replaceable_obj(const struct ag_replaceable_hold *h);
/* Lets go of h (NULL: nothing); h is not to be used again. */
void ag_replaceable_release(struct ag_replaceable_hold *h);
/* ag_replaceable_release of each of held[0] to held[n - 1]. */
void ag_replaceable_release_all(struct ag_replaceable_hold *const *held,
                                size_t n);

#endif
