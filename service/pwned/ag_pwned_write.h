/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes a corpus file (the layout in ag_pwned_impl.h, docs/pwned.md)
 * from hashes given in strictly increasing order, in one pass and in
 * bounded memory: the 8 MiB index and a 1 MiB buffer through which the
 * records stream to disk, however many there are.
 *
 * The file is written under "<path>.tmp.<pid>", synced, and only then
 * renamed over path, so that a service that maps path sees the old
 * corpus or the new one, never half of one; a writer that fails or is
 * aborted removes its temporary file and leaves path as it was.
 *
 * A writer is one import's, used from one thread. It carries its error:
 * after a call fails, ag_pwned_writer_error says why in one line.
 */
#ifndef AG_PWNED_WRITE_H
#define AG_PWNED_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "ag_pwned.h"

struct ag_pwned_writer;

/* Creates the temporary file next to path. AG_EINVAL for a bad mode,
 * AG_EIO (why says which file and what failed) or AG_ENOMEM; *out is the
 * writer on success, for ag_pwned_writer_finish or _abort to free. */
int ag_pwned_writer_open(const char *path, enum ag_pwned_mode mode,
                         uint32_t min_count, struct ag_pwned_writer **out,
                         char *why, size_t whylen);

/* Appends a hash (the mode's length in bytes) with its count (1 or more).
 * AG_EINVAL if the count is 0, the hash is not greater than the one before
 * it or its prefix would hold more than AG_PWNED_PREFIX_ENTRIES_MAX; AG_EIO
 * if the write failed; the writer is then only good for _abort. */
int ag_pwned_writer_add(struct ag_pwned_writer *w, const uint8_t *hash,
                        uint32_t count);

/* Entries added so far. */
uint64_t ag_pwned_writer_entries(const struct ag_pwned_writer *w);

/* Writes the index and the header (created_s: the import's end, in unix
 * seconds), syncs, renames the file over path and frees w. On failure
 * removes the temporary file, frees w and returns AG_EIO with why. On
 * success *size (if not NULL) is the file's size in bytes. */
int ag_pwned_writer_finish(struct ag_pwned_writer *w, int64_t created_s,
                           uint64_t *size, char *why, size_t whylen);

/* Removes the temporary file and frees w; path is left as it was. */
void ag_pwned_writer_abort(struct ag_pwned_writer *w);

/* The writer's last error, one line ("" if none). */
const char *ag_pwned_writer_error(const struct ag_pwned_writer *w);

#endif
