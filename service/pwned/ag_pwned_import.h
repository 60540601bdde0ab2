/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `abuseguard pwned import` without its command line: reads the inputs
 * in the order given (a file of HASH:COUNT lines, a folder of per-prefix
 * XXXXX.txt files read in prefix order, or "-" for standard input),
 * parses them (ag_pwned_parse.h) and streams the hashes kept into a new
 * corpus file (ag_pwned_write.h), which replaces the output only once it
 * is whole. Memory stays bounded whatever the input's size: a read
 * buffer, the writer's index and buffer, and for a folder its list of
 * names.
 *
 * Single-threaded; one import at a time per output.
 */
#ifndef AG_PWNED_IMPORT_H
#define AG_PWNED_IMPORT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_pwned.h"

struct ag_pwned_import_stats {
    uint64_t bytes_total;  /* of the inputs, 0 if unknown (a pipe) */
    uint64_t bytes_read;   /* so far */
    uint64_t lines;        /* read so far */
    uint64_t kept;         /* entries written */
    uint64_t dropped;      /* lines below min_count */
    uint64_t folders;      /* inputs that were folders */
    uint64_t prefix_files; /* files read from them */
    uint64_t output_size;  /* bytes, once the output is in place */
};

/* Called after each buffer read; throttling the display is its own
 * business. */
typedef void (*ag_pwned_progress_fn)(void *ctx,
                                     const struct ag_pwned_import_stats *s);

struct ag_pwned_import {
    enum ag_pwned_mode mode;
    uint32_t min_count; /* 1 or more */
    const char *output;
    const char *const *inputs; /* paths, or "-" (at most once) */
    size_t n_inputs;
    int64_t created_s; /* the header's time; 0 for now */
    /* NULL for no progress; then the inputs' total size is not
     * computed either (a folder's is a stat per file). */
    ag_pwned_progress_fn progress;
    void *progress_ctx;
    /* When not NULL and set (by a signal handler, say), the import stops
     * at its next read, as if the read had failed: AG_EIO. A handler
     * installed without SA_RESTART also wakes a read that waits on a
     * pipe. */
    const volatile sig_atomic_t *stop;
};

/* Runs the import. AG_OK with st filled; AG_EINVAL for input that is
 * refused (a malformed or out-of-order line, a missing input, a folder
 * entry that is not a prefix file), AG_EIO for a read or write that
 * failed or an import stopped, AG_ENOMEM; why then holds one line naming the
 * file (and the line). Whatever the failure, the output is left as it was and
 * no temporary file remains. */
int ag_pwned_import_run(const struct ag_pwned_import *im,
                        struct ag_pwned_import_stats *st, char *why,
                        size_t whylen);

#endif
