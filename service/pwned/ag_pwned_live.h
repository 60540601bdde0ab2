/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The corpora the service serves (--pwned-file): at most one of each mode,
 * each mapped from its path at start and replaced while the service runs
 * when the path names another file, as the policy database is (ag_reload):
 * a watcher thread looks at each path about once a second (stat(2): the
 * device, inode, size and modification time), off the request path.
 *
 * A new file is opened and checked on the watcher's thread, then swapped in
 * under a short lock. A reader holds the corpus it is answering from
 * (ag_pwned_live_hold) and the mapping stays until it lets go, however
 * many replacements happen meanwhile; the last reader does not unmap it
 * (a munmap of gigabytes is no work for a request): the watcher closes a
 * replaced corpus at its first look after its last reader let go.
 *
 * A replacement that cannot be opened, is damaged or holds the other mode
 * keeps the last good corpus: one line is logged and
 * abuseguard_pwned_reload_failures_total counts it, once per file; it is
 * tried again only when the path shows yet another file (a missing path
 * is such a failure too). Replace a corpus by renaming a new file over the
 * path (what `abuseguard pwned import` does): a file rewritten in place
 * changes under the readers' mapping, and a read past its new end is
 * SIGBUS. When the watcher sees the file it serves changed in place (the
 * same device and inode, another size or time) it stops serving that mode
 * (requests get the 404 "no corpus"), logs pwned_changed_in_place and
 * counts a reload failure, and serves again only when another file (a new
 * inode) is at the path; the crash in the second before it looks cannot
 * be prevented.
 *
 * Thread-safety: ag_pwned_live_hold and ag_pwned_hold_release from any
 * thread, any number at once; start, tick and stop from one thread.
 */
#ifndef AG_PWNED_LIVE_H
#define AG_PWNED_LIVE_H

#include <stddef.h>

#include "ag_error.h"
#include "ag_pwned.h"

#define AG_PWNED_LIVE_FILES 2 /* one SHA-1 and one NTLM corpus at most */
/* How often the watcher looks at the paths. */
#define AG_PWNED_LIVE_INTERVAL_MS 1000

struct ag_metrics;
struct ag_pwned_live;
/* A reader's hold on one corpus. */
struct ag_pwned_hold;

struct ag_pwned_live_opts {
    const char *const *paths; /* n of them, each copied */
    size_t n;                 /* at most AG_PWNED_LIVE_FILES */
    /* The corpora's gauges and reload failures; NULL: none. Borrowed. */
    struct ag_metrics *metrics;
    /* How often the watcher looks at the paths; 0: no watcher thread,
     * the caller looks with ag_pwned_live_tick (tests). */
    unsigned interval_ms;
};

/* Opens every path of o (each a corpus, no two of one mode), serves them
 * and starts the watcher. Returns AG_OK and the server in *out, or
 * AG_EIO (a path cannot be opened) or AG_EINVAL (not a corpus, damaged,
 * or a second corpus of one mode) with one line in err naming the path
 * (field "pwned-file"). Free with ag_pwned_live_stop. */
int ag_pwned_live_start(const struct ag_pwned_live_opts *o,
                        struct ag_pwned_live **out, struct ag_error *err);
/* Stops the watcher and closes every corpus; NULL does nothing. No hold
 * may be left (stop serving requests first). */
void ag_pwned_live_stop(struct ag_pwned_live *l);

/* The corpus of mode now served, held until ag_pwned_hold_release: valid
 * however it is replaced meanwhile. NULL when l is NULL or serves no
 * corpus of mode. One short lock; nothing allocated. */
struct ag_pwned_hold *ag_pwned_live_hold(struct ag_pwned_live *l,
                                         enum ag_pwned_mode mode);
const struct ag_pwned *ag_pwned_hold_corpus(const struct ag_pwned_hold *h);
/* Lets go of h (NULL: nothing); h is not to be used again. */
void ag_pwned_hold_release(struct ag_pwned_hold *h);

/* One look of the watcher, now: swaps in what changed and closes the
 * replaced corpora no reader holds any more. For tests (interval_ms 0). */
void ag_pwned_live_tick(struct ag_pwned_live *l);
/* Replaced corpora still mapped because a reader holds them. */
size_t ag_pwned_live_retired(struct ag_pwned_live *l);

#endif
