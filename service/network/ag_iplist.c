/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Named IP lists (ag_iplist.h): what an entry means, the tables and the
 * lookup; ag_iplist_formats.c finds the entries in each format's text.
 * A parse reads every entry into growable range arrays, one for each
 * family and class (special or not), then sorts and merges each; the
 * four merged arrays become the list's tables, each split into its low
 * bounds and its high bounds so that a bisection walks only the low
 * bounds (more of them to a cache line) and reads one high bound at the
 * end. Measured by bench/iplist_bench.c: about 30 ns a lookup in
 * 100 000 prefixes, IPv4 or IPv6.
 *
 * Special ranges get tables of their own rather than a flag per range:
 * merging a special range with a public neighbour would blur which of the
 * two an address hit, and a lookup that asks the public tables first and
 * the special ones second answers "only special ranges hold it" exactly.
 */
#include "ag_iplist.h"
#include "ag_iplist_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIELD AG_IPLIST_FIELD

/* The longest address or CIDR: INET6_ADDRSTRLEN (with its NUL) and
 * "/128". */
#define CIDR_MAX (INET6_ADDRSTRLEN + 4)
/* How much of a refused entry a message shows. */
#define SHOWN_MAX 48

struct u128 {
    uint64_t hi, lo;
};

struct range4 {
    uint32_t lo, hi;
};

struct range6 {
    struct u128 lo, hi;
};

/* A merged table: lo[i] <= hi[i] < lo[i + 1] - 1 (disjoint, not
 * adjacent). */
struct table4 {
    uint32_t *lo, *hi;
    size_t n;
};

struct table6 {
    struct u128 *lo, *hi;
    size_t n;
};

enum { PUBLIC = 0, SPECIAL = 1 };

struct ag_iplist {
    struct table4 v4[2]; /* [PUBLIC], [SPECIAL] */
    struct table6 v6[2];
    size_t entries, special;
};

/* The entries read so far, unsorted. */
struct builder {
    struct range4 *r4[2];
    size_t n4[2], cap4[2];
    struct range6 *r6[2];
    size_t n6[2], cap6[2];
    size_t entries, special;
    struct ag_error *err;
};

/* Special space, as the header lists it: an entry is special if it lies
 * wholly inside one of these. */
static const struct range4 special4[] = {
    {0x00000000u, 0x00ffffffu}, /* 0.0.0.0/8, "this network" */
    {0x0a000000u, 0x0affffffu}, /* 10.0.0.0/8 */
    {0x64400000u, 0x647fffffu}, /* 100.64.0.0/10, carrier-grade NAT */
    {0x7f000000u, 0x7fffffffu}, /* 127.0.0.0/8 */
    {0xa9fe0000u, 0xa9feffffu}, /* 169.254.0.0/16 */
    {0xac100000u, 0xac1fffffu}, /* 172.16.0.0/12 */
    {0xc0a80000u, 0xc0a8ffffu}, /* 192.168.0.0/16 */
};

static const struct range6 special6[] = {
    /* ::1 */
    {{0, 1}, {0, 1}},
    /* fc00::/7, unique local */
    {{0xfc00000000000000ull, 0}, {0xfdffffffffffffffull, UINT64_MAX}},
    /* fe80::/10, link-local */
    {{0xfe80000000000000ull, 0}, {0xfebfffffffffffffull, UINT64_MAX}},
};

static bool u128_le(struct u128 a, struct u128 b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo <= b.lo);
}

static uint32_t load32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static uint64_t load64(const unsigned char *p)
{
    return (uint64_t)load32(p) << 32 | load32(p + 4);
}

/* --- Reading entries ---------------------------------------------------- */

static int no_memory(struct builder *b)
{
    return ag_error_set(b->err, AG_ENOMEM, FIELD, "%s: out of memory", FIELD);
}

/* Grows *arr (of size bytes an item) to hold one more than *n. */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return AG_OK;
    size_t ncap = *cap ? *cap * 2 : 256;
    if (ncap > SIZE_MAX / size)
        return AG_ENOMEM;
    void *p = realloc(*arr, ncap * size);
    if (!p)
        return AG_ENOMEM;
    *arr = p;
    *cap = ncap;
    return AG_OK;
}

static int add4(struct builder *b, uint32_t lo, uint32_t hi)
{
    int cls = PUBLIC;
    for (size_t i = 0; i < sizeof(special4) / sizeof(special4[0]); i++)
        if (lo >= special4[i].lo && hi <= special4[i].hi)
            cls = SPECIAL;
    if (grow((void **)&b->r4[cls], &b->cap4[cls], b->n4[cls],
             sizeof(struct range4)) != AG_OK)
        return no_memory(b);
    b->r4[cls][b->n4[cls]++] = (struct range4){lo, hi};
    b->entries++;
    b->special += cls == SPECIAL;
    return AG_OK;
}

static int add6(struct builder *b, struct u128 lo, struct u128 hi)
{
    int cls = PUBLIC;
    for (size_t i = 0; i < sizeof(special6) / sizeof(special6[0]); i++)
        if (u128_le(special6[i].lo, lo) && u128_le(hi, special6[i].hi))
            cls = SPECIAL;
    if (grow((void **)&b->r6[cls], &b->cap6[cls], b->n6[cls],
             sizeof(struct range6)) != AG_OK)
        return no_memory(b);
    b->r6[cls][b->n6[cls]++] = (struct range6){lo, hi};
    b->entries++;
    b->special += cls == SPECIAL;
    return AG_OK;
}

/* Refuses the entry s (n bytes) found at where ("line 7",
 * "prefixes[3].ip_prefix"), showing it printable and cut short. */
static int bad_entry(struct builder *b, const char *where, const char *s,
                     size_t n)
{
    char shown[SHOWN_MAX + 4];
    size_t k = n < SHOWN_MAX ? n : SHOWN_MAX;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)s[i];
        shown[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    strcpy(shown + k, n > k ? "..." : "");
    return ag_error_set(b->err, AG_EINVAL, FIELD,
                        "%s %s: '%s' is not an address or CIDR", FIELD, where,
                        shown);
}

/* An ag_iplist_add_fn: adds the address or CIDR s (n bytes, trimmed,
 * no NUL needed) to the builder ctx. inet_pton reads the
 * address, so the shorthand and octal forms inet_aton takes ("1.2.3",
 * "010.0.0.1") are refused rather than read as some other address;
 * the host bits of a CIDR are cleared; an IPv4-mapped IPv6 entry
 * (::ffff:a.b.c.d/96 or longer) becomes the IPv4 entry it names, since
 * lookups read such addresses as IPv4. */
static int add_entry(void *ctx, const char *where, const char *s, size_t n)
{
    struct builder *b = ctx;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
    char buf[CIDR_MAX];
    unsigned char a[16] = {0};
    unsigned bits = 0, max;
    int family;

    if (n == 0 || n >= sizeof(buf))
        return bad_entry(b, where, s, n);
    /* Only address characters: inet_pton would stop at a NUL byte. s
     * need not end in one. */
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr("0123456789abcdefABCDEF.:/", s[i]))
            return bad_entry(b, where, s, n);
    memcpy(buf, s, n);
    buf[n] = '\0';

    char *slash = strchr(buf, '/');
    if (slash) {
        const char *d = slash + 1;
        size_t nd = strlen(d);
        if (nd == 0 || nd > 3 || strspn(d, "0123456789") != nd)
            return bad_entry(b, where, s, n);
        bits = (unsigned)atoi(d);
        *slash = '\0';
    }
    family = strchr(buf, ':') ? AF_INET6 : AF_INET;
    max = family == AF_INET ? 32 : 128;
    if (inet_pton(family, buf, a) != 1)
        return bad_entry(b, where, s, n);
    if (!slash)
        bits = max;
    if (bits > max)
        return bad_entry(b, where, s, n);

    if (family == AF_INET6 && bits >= 96 && !memcmp(a, mapped, 12)) {
        memmove(a, a + 12, 4);
        family = AF_INET;
        bits -= 96;
    }
    if (family == AF_INET) {
        uint32_t mask = bits ? UINT32_MAX << (32 - bits) : 0;
        uint32_t lo = load32(a) & mask;
        return add4(b, lo, lo | ~mask);
    }
    struct u128 mask = {UINT64_MAX, UINT64_MAX};
    if (bits <= 64) {
        mask.hi = bits ? UINT64_MAX << (64 - bits) : 0;
        mask.lo = 0;
    } else {
        mask.lo = UINT64_MAX << (128 - bits);
    }
    struct u128 lo = {load64(a) & mask.hi, load64(a + 8) & mask.lo};
    struct u128 hi = {lo.hi | ~mask.hi, lo.lo | ~mask.lo};
    return add6(b, lo, hi);
}

/* --- Building the tables ------------------------------------------------ */

static int cmp4(const void *x, const void *y)
{
    const struct range4 *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static int cmp6(const void *x, const void *y)
{
    const struct range6 *a = x, *b = y;
    if (a->lo.hi != b->lo.hi)
        return a->lo.hi < b->lo.hi ? -1 : 1;
    return a->lo.lo < b->lo.lo ? -1 : a->lo.lo > b->lo.lo;
}

/* Sorts r and merges overlapping and adjacent ranges into t. */
static int build4(struct table4 *t, struct range4 *r, size_t n)
{
    size_t k = 0;
    if (n == 0)
        return AG_OK;
    qsort(r, n, sizeof(*r), cmp4);
    for (size_t i = 1; i < n; i++) {
        /* Adjacent too: r[k].hi + 1 == r[i].lo, unless hi is the top. */
        if (r[k].hi == UINT32_MAX || r[i].lo <= r[k].hi + 1) {
            if (r[i].hi > r[k].hi)
                r[k].hi = r[i].hi;
        } else {
            r[++k] = r[i];
        }
    }
    t->n = k + 1;
    t->lo = malloc(2 * t->n * sizeof(uint32_t));
    if (!t->lo)
        return AG_ENOMEM;
    t->hi = t->lo + t->n;
    for (size_t i = 0; i < t->n; i++) {
        t->lo[i] = r[i].lo;
        t->hi[i] = r[i].hi;
    }
    return AG_OK;
}

static int build6(struct table6 *t, struct range6 *r, size_t n)
{
    size_t k = 0;
    if (n == 0)
        return AG_OK;
    qsort(r, n, sizeof(*r), cmp6);
    for (size_t i = 1; i < n; i++) {
        struct u128 next = r[k].hi; /* r[k].hi + 1, when it is not the top */
        bool top = next.hi == UINT64_MAX && next.lo == UINT64_MAX;
        next.lo++;
        next.hi += next.lo == 0;
        if (top || u128_le(r[i].lo, next)) {
            if (!u128_le(r[i].hi, r[k].hi))
                r[k].hi = r[i].hi;
        } else {
            r[++k] = r[i];
        }
    }
    t->n = k + 1;
    t->lo = malloc(2 * t->n * sizeof(struct u128));
    if (!t->lo)
        return AG_ENOMEM;
    t->hi = t->lo + t->n;
    for (size_t i = 0; i < t->n; i++) {
        t->lo[i] = r[i].lo;
        t->hi[i] = r[i].hi;
    }
    return AG_OK;
}

static void builder_free(struct builder *b)
{
    for (int c = 0; c < 2; c++) {
        free(b->r4[c]);
        free(b->r6[c]);
    }
}

int ag_iplist_parse(const char *text, size_t len, enum ag_iplist_format f,
                    struct ag_iplist **out, struct ag_error *err)
{
    struct builder b = {.err = err};
    int rc;

    *out = NULL;
    rc = ag_iplist_read(text, len, f, add_entry, &b, err);
    if (rc == AG_OK && b.entries == 0)
        rc = ag_error_set(err, AG_EINVAL, FIELD, "%s holds no address or CIDR",
                          FIELD);

    struct ag_iplist *l = NULL;
    if (rc == AG_OK && !(l = calloc(1, sizeof(*l))))
        rc = no_memory(&b);
    for (int c = 0; c < 2 && rc == AG_OK; c++) {
        if (build4(&l->v4[c], b.r4[c], b.n4[c]) != AG_OK ||
            build6(&l->v6[c], b.r6[c], b.n6[c]) != AG_OK)
            rc = no_memory(&b);
    }
    builder_free(&b);
    if (rc != AG_OK) {
        ag_iplist_free(l);
        return rc;
    }
    l->entries = b.entries;
    l->special = b.special;
    *out = l;
    return AG_OK;
}

/* Reads all of fd into *buf (caller frees), refusing more than
 * AG_IPLIST_FILE_MAX bytes. */
static int read_all(int fd, char **buf, size_t *len)
{
    struct stat st;
    size_t cap = 1 << 16, n = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0 &&
        (uint64_t)st.st_size < AG_IPLIST_FILE_MAX)
        cap = (size_t)st.st_size + 1; /* + 1 to see the end at once */
    char *p = malloc(cap);
    if (!p)
        return AG_ENOMEM;
    for (;;) {
        if (n == cap) {
            if (cap > AG_IPLIST_FILE_MAX) {
                free(p);
                return AG_ETOOBIG;
            }
            char *q = realloc(p, cap * 2);
            if (!q) {
                free(p);
                return AG_ENOMEM;
            }
            p = q;
            cap *= 2;
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(p);
            return AG_EIO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > AG_IPLIST_FILE_MAX) {
        free(p);
        return AG_ETOOBIG;
    }
    *buf = p;
    *len = n;
    return AG_OK;
}

int ag_iplist_load(const char *path, enum ag_iplist_format f,
                   struct ag_iplist **out, struct ag_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc, fd;

    *out = NULL;
    do {
        fd = open(path, O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return ag_error_set(err, AG_EIO, FIELD, "%s %s: %s", FIELD, path,
                            strerror(errno));
    rc = read_all(fd, &buf, &len);
    int saved = errno;
    close(fd);
    if (rc == AG_EIO)
        return ag_error_set(err, AG_EIO, FIELD, "%s %s: %s", FIELD, path,
                            strerror(saved));
    if (rc == AG_ETOOBIG)
        return ag_error_set(err, AG_EINVAL, FIELD,
                            "%s %s is larger than %u MiB", FIELD, path,
                            (unsigned)(AG_IPLIST_FILE_MAX >> 20));
    if (rc == AG_ENOMEM)
        return ag_error_set(err, AG_ENOMEM, FIELD, "%s: out of memory", FIELD);
    rc = ag_iplist_parse(buf, len, f, out, err);
    free(buf);
    return rc;
}

void ag_iplist_free(struct ag_iplist *l)
{
    if (!l)
        return;
    for (int c = 0; c < 2; c++) {
        free(l->v4[c].lo);
        free(l->v6[c].lo);
    }
    free(l);
}

/* --- Lookup ------------------------------------------------------------- */

/* Bisection for the last range starting at or below x: the step moves
 * base without a branch the predictor could miss (a conditional move),
 * so every lookup of a table costs the same log2(n) steps. */
static bool in4(const struct table4 *t, uint32_t x)
{
    const uint32_t *base = t->lo;
    size_t n = t->n;
    if (n == 0)
        return false;
    while (n > 1) {
        size_t half = n / 2;
        base = base[half] <= x ? base + half : base;
        n -= half;
    }
    return *base <= x && x <= t->hi[base - t->lo];
}

/* The same over 128-bit bounds, in two steps so that the loop compares
 * one 64-bit word (a 128-bit compare compiles to branches): first the
 * last range whose upper half starts at or below x's; only when that
 * range shares x's upper half but starts above x (x lies in the first
 * 2^64 addresses of a range, or among single hosts of one /64) does a
 * second, whole-width bisection look below it. */
static bool in6(const struct table6 *t, struct u128 x)
{
    const struct u128 *base = t->lo;
    size_t n = t->n;
    if (n == 0)
        return false;
    while (n > 1) {
        size_t half = n / 2;
        base = base[half].hi <= x.hi ? base + half : base;
        n -= half;
    }
    if (base->hi > x.hi)
        return false;
    if (base->hi == x.hi && base->lo > x.lo) {
        size_t lo = 0, hi = (size_t)(base - t->lo); /* in [lo, hi) */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (u128_le(t->lo[mid], x))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            return false;
        base = t->lo + lo - 1;
    }
    return u128_le(x, t->hi[base - t->lo]);
}

enum ag_iplist_hit ag_iplist_match(const struct ag_iplist *l,
                                   const struct ag_ip *ip)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
    if (ip->family == AF_INET ||
        (ip->family == AF_INET6 && !memcmp(ip->addr, mapped, 12))) {
        uint32_t x = load32(ip->family == AF_INET ? ip->addr : ip->addr + 12);
        if (in4(&l->v4[PUBLIC], x))
            return AG_IPLIST_HIT;
        return in4(&l->v4[SPECIAL], x) ? AG_IPLIST_HIT_SPECIAL : AG_IPLIST_MISS;
    }
    if (ip->family != AF_INET6)
        return AG_IPLIST_MISS;
    struct u128 x = {load64(ip->addr), load64(ip->addr + 8)};
    if (in6(&l->v6[PUBLIC], x))
        return AG_IPLIST_HIT;
    return in6(&l->v6[SPECIAL], x) ? AG_IPLIST_HIT_SPECIAL : AG_IPLIST_MISS;
}

size_t ag_iplist_entries(const struct ag_iplist *l)
{
    return l->entries;
}

size_t ag_iplist_special(const struct ag_iplist *l)
{
    return l->special;
}

size_t ag_iplist_bytes(const struct ag_iplist *l)
{
    size_t n = sizeof(*l);
    for (int c = 0; c < 2; c++) {
        n += l->v4[c].n * 2 * sizeof(uint32_t);
        n += l->v6[c].n * 2 * sizeof(struct u128);
    }
    return n;
}
