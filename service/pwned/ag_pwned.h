/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Pwned Passwords corpus in abuseguard's own file format: the hashes of
 * breached passwords (SHA-1 or NTLM, one mode a file) with how often each
 * was seen, sorted, with an index by the 20-bit prefix (the 5 hex digits
 * the HIBP range API takes), so that one range is a slice of the mapped
 * file. `abuseguard pwned import` writes it (ag_pwned_write.c); the
 * service maps it read-only and answers GET /range/{prefix} from it.
 *
 * The file is immutable once written: a new corpus is a new file renamed
 * over the old one, and a reader keeps the mapping it opened until it
 * closes it. ag_pwned_open checks everything it can without reading the
 * records (magic, version, mode, header checksum, sizes, the index); the
 * records' checksum, which the header carries and the ETag is made from,
 * is checked by ag_pwned_verify, which reads the whole file.
 *
 * A struct ag_pwned is immutable after open: any number of threads may
 * read it at once. Nothing here allocates per lookup.
 */
#ifndef AG_PWNED_H
#define AG_PWNED_H

#include <stddef.h>
#include <stdint.h>

enum ag_pwned_mode { AG_PWNED_SHA1 = 1, AG_PWNED_NTLM = 2 };

#define AG_PWNED_PREFIXES (1u << 20) /* 5 hex digits */
#define AG_PWNED_SHA1_LEN 20         /* bytes of a SHA-1 hash */
#define AG_PWNED_NTLM_LEN 16         /* bytes of an NTLM (MD4) hash */
#define AG_PWNED_SUFFIX_HEX_MAX 35   /* hex digits after the prefix (SHA-1) */
#define AG_PWNED_CHECKSUM_LEN 32
/* The latest creation time a corpus may carry: 9999-12-31T23:59:59Z, the
 * last second a four-digit year prints, so that every reader can show and
 * subtract it; earlier than 0 (1970) is refused too. */
#define AG_PWNED_CREATED_MAX INT64_C(253402300799)
/* The most entries one prefix may hold. The full corpus (about 10^9
 * hashes over 2^20 prefixes) has about 950 a prefix and some 2 000 at
 * most; a range answer is sized from its count, so this bounds one answer
 * (about 3 MiB) whatever a crafted file claims, while a corpus would need
 * some 30 times the hashes of today's before a real prefix neared it. */
#define AG_PWNED_PREFIX_ENTRIES_MAX 65536u

struct ag_pwned;

struct ag_pwned_info {
    enum ag_pwned_mode mode;
    uint64_t entries;   /* hashes kept */
    uint32_t min_count; /* the import's --min-count */
    int64_t created_s;  /* unix seconds the import finished */
    uint64_t file_size; /* bytes */
    uint8_t checksum[AG_PWNED_CHECKSUM_LEN]; /* of the records and index */
};

/* Maps path read-only and checks its header and index (a creation time
 * from 0 to AG_PWNED_CREATED_MAX, no prefix over
 * AG_PWNED_PREFIX_ENTRIES_MAX entries). On failure returns AG_EIO (cannot
 * open or map) or AG_EINVAL (not a regular file, not a corpus, or
 * damaged) and writes one line naming the path and the fault to why.
 * Never blocks on what the path names (a FIFO is refused at once). */
int ag_pwned_open(const char *path, struct ag_pwned **out, char *why,
                  size_t whylen);
void ag_pwned_close(struct ag_pwned *p);

const struct ag_pwned_info *ag_pwned_info(const struct ag_pwned *p);

/* Reads every record and checks the checksum, the order and that no
 * count is 0 (a padding line's count); AG_EINVAL with why if not. */
int ag_pwned_verify(const struct ag_pwned *p, char *why, size_t whylen);

/* The entries whose hash starts with prefix (0 .. AG_PWNED_PREFIXES - 1),
 * in hash order: a view into the mapping, valid while p is open. */
struct ag_pwned_range {
    const struct ag_pwned *p;
    uint64_t first; /* index of the first entry */
    uint64_t n;     /* entries in the range */
};
void ag_pwned_range(const struct ag_pwned *p, uint32_t prefix,
                    struct ag_pwned_range *r);

/* Entry i (0 .. r->n - 1) of the range: writes its suffix, the hex digits
 * after the prefix in upper case (35 for SHA-1, 27 for NTLM), to hex
 * (AG_PWNED_SUFFIX_HEX_MAX + 1 bytes, NUL-terminated) and returns its
 * count. */
uint32_t ag_pwned_range_entry(const struct ag_pwned_range *r, uint64_t i,
                              char *hex);

/* Writes the suffix of a hash, given its bytes from the third on (tail,
 * tail_len bytes: the first one's high half is the prefix's last digit),
 * as upper-case hex digits (2 * tail_len - 1) to hex, NUL-terminated. */
void ag_pwned_suffix_hex(const uint8_t *tail, size_t tail_len, char *hex);

/* The count of a whole binary hash (AG_PWNED_SHA1_LEN or AG_PWNED_NTLM_LEN
 * bytes, by the corpus's mode), 0 if the corpus does not hold it. */
uint32_t ag_pwned_lookup(const struct ag_pwned *p, const uint8_t *hash);

#endif
