/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An MMDB database (ag_geo.h): a private copy opened with libmaxminddb,
 * checked once for the field its kind needs, then read with lookups that
 * allocate nothing.
 *
 * libmaxminddb's MMDB_open takes a path, opens it and maps it
 * (MAP_SHARED, read-only) and closes its descriptor (1.7.1's map_file).
 * Given "/proc/self/fd/N" of a memfd holding our copy, it maps the memfd;
 * the mapping keeps the memory after both descriptors are closed, until
 * MMDB_close unmaps it. Without /proc (a chroot, a container without it),
 * that open fails and the copy goes to a temporary file instead, which is
 * unlinked as soon as MMDB_open has mapped it: private too, but for the
 * moment between its creation and the unlink.
 *
 * MMDB_get_value callocs its path array on every call (1.7.1's
 * MMDB_vget_value), so lookups use MMDB_aget_value with the static paths
 * below.
 */
/* memfd_create(2) and F_ADD_SEALS */
#define _GNU_SOURCE

#include "ag_geo.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <maxminddb.h>

/* Where a database keeps its kind's field. */
enum layout {
    LAYOUT_MAXMIND, /* country.iso_code, autonomous_system_number */
    LAYOUT_IPINFO,  /* country_code, asn ("AS174") */
};

struct ag_geo {
    MMDB_s mmdb;
    enum ag_geo_kind kind;
    enum layout layout; /* found at open, so a lookup reads one path */
};

/* A record without country.iso_code has no country for us, even if it
 * has registered_country.iso_code: that is where the network's holder
 * registered it, not where it is used (MaxMind leaves country out for
 * satellite providers and some anycast networks), and a rule on
 * "country XX" must not match addresses used elsewhere. */
static const char *const country_path[] = {"country", "iso_code", NULL};
static const char *const ipinfo_country_path[] = {"country_code", NULL};
static const char *const asn_path[] = {"autonomous_system_number", NULL};
static const char *const ipinfo_asn_path[] = {"asn", NULL};

/* At open, the search tree is walked from its first (lowest) network
 * until one record holds the kind's field: at most SAMPLE_RECORDS data
 * records and SAMPLE_NODES nodes, so that a database of the wrong kind
 * is refused after a bounded walk (a few milliseconds). */
#define SAMPLE_RECORDS 64
#define SAMPLE_NODES 65536

/* libmaxminddb's offsets are 32 bits: no MMDB file is larger. */
#define FILE_MAX UINT32_MAX
#define COPY_CHUNK (1u << 20)

static const char *kind_field(enum ag_geo_kind kind)
{
    return kind == AG_GEO_ASN ? "asn-file" : "geoip-file";
}

static const char *const *kind_path(enum ag_geo_kind kind, enum layout l)
{
    if (kind == AG_GEO_ASN)
        return l == LAYOUT_IPINFO ? ipinfo_asn_path : asn_path;
    return l == LAYOUT_IPINFO ? ipinfo_country_path : country_path;
}

/* An ISO 3166-1 alpha-2 code, upper-cased into out; anything else (a
 * continent-only "EU" is two letters and kept, as the database says) is
 * no country. */
static void take_country(const MMDB_entry_data_s *d, struct ag_geo_result *out)
{
    if (d->type != MMDB_DATA_TYPE_UTF8_STRING ||
        d->data_size != AG_GEO_COUNTRY_LEN)
        return;
    for (size_t i = 0; i < AG_GEO_COUNTRY_LEN; i++) {
        char c = d->utf8_string[i];
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        if (c < 'A' || c > 'Z') {
            out->country[0] = '\0';
            return;
        }
        out->country[i] = c;
    }
    out->country[AG_GEO_COUNTRY_LEN] = '\0';
}

/* IPinfo's "AS174": "AS" (either case) and 1 to 10 digits that fit 32
 * bits; anything else is no ASN. */
static uint32_t parse_as_text(const char *s, uint32_t len)
{
    if (len < 3 || len > 12 || (s[0] != 'A' && s[0] != 'a') ||
        (s[1] != 'S' && s[1] != 's'))
        return 0;
    uint64_t v = 0;
    for (uint32_t i = 2; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v <= UINT32_MAX ? (uint32_t)v : 0;
}

static void take_asn(const MMDB_entry_data_s *d, struct ag_geo_result *out)
{
    switch (d->type) {
    case MMDB_DATA_TYPE_UINT16:
        out->asn = d->uint16;
        break;
    case MMDB_DATA_TYPE_UINT32:
        out->asn = d->uint32;
        break;
    case MMDB_DATA_TYPE_UINT64:
        out->asn = d->uint64 <= UINT32_MAX ? (uint32_t)d->uint64 : 0;
        break;
    case MMDB_DATA_TYPE_INT32:
        out->asn = d->int32 > 0 ? (uint32_t)d->int32 : 0;
        break;
    case MMDB_DATA_TYPE_UTF8_STRING:
        out->asn = parse_as_text(d->utf8_string, d->data_size);
        break;
    default:
        break;
    }
}

/* Reads kind's field in layout l from the record at entry into out.
 * A field that is absent or of another shape is no value (AG_OK);
 * AG_EIO if libmaxminddb finds the data damaged. */
static int read_field(MMDB_entry_s *entry, enum ag_geo_kind kind, enum layout l,
                      struct ag_geo_result *out)
{
    MMDB_entry_data_s d;
    int st = MMDB_aget_value(entry, &d, kind_path(kind, l));

    if (st == MMDB_LOOKUP_PATH_DOES_NOT_MATCH_DATA_ERROR)
        return AG_OK;
    if (st != MMDB_SUCCESS)
        return AG_EIO;
    if (!d.has_data)
        return AG_OK;
    if (kind == AG_GEO_ASN)
        take_asn(&d, out);
    else
        take_country(&d, out);
    return AG_OK;
}

static bool has_value(enum ag_geo_kind kind, const struct ag_geo_result *r)
{
    return kind == AG_GEO_ASN ? r->asn != 0 : r->country[0] != '\0';
}

/* Finds ip's record in g: AG_OK with *r (r->found_entry false on a
 * miss, an IPv6 address in an IPv4-only database among them), or AG_EIO
 * if libmaxminddb reports the database corrupt. */
static int find(const struct ag_geo *g, const struct ag_ip *ip,
                MMDB_lookup_result_s *r)
{
    union {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
    } a;

    memset(r, 0, sizeof(*r));
    memset(&a, 0, sizeof(a));
    if (ip->family == AF_INET) {
        a.in.sin_family = AF_INET;
        memcpy(&a.in.sin_addr, ip->addr, 4);
    } else if (ip->family == AF_INET6) {
        /* libmaxminddb would answer an error; for us it is a miss. */
        if (g->mmdb.metadata.ip_version == 4)
            return AG_OK;
        a.in6.sin6_family = AF_INET6;
        memcpy(&a.in6.sin6_addr, ip->addr, 16);
    } else {
        return AG_OK;
    }
    int st;
    *r = MMDB_lookup_sockaddr(&g->mmdb, &a.sa, &st);
    return st == MMDB_SUCCESS ? AG_OK : AG_EIO;
}

/* One number of the record's location at path: AG_OK with *v (NAN if
 * absent or of another type), or AG_EIO. */
static int read_number(MMDB_entry_s *entry, const char *const *path, double *v)
{
    MMDB_entry_data_s d;
    int st = MMDB_aget_value(entry, &d, path);
    *v = NAN;
    if (st == MMDB_LOOKUP_PATH_DOES_NOT_MATCH_DATA_ERROR)
        return AG_OK;
    if (st != MMDB_SUCCESS)
        return AG_EIO;
    if (!d.has_data)
        return AG_OK;
    if (d.type == MMDB_DATA_TYPE_DOUBLE)
        *v = d.double_value;
    else if (d.type == MMDB_DATA_TYPE_FLOAT)
        *v = d.float_value;
    else if (d.type == MMDB_DATA_TYPE_UINT16)
        *v = d.uint16;
    else if (d.type == MMDB_DATA_TYPE_UINT32)
        *v = d.uint32;
    return AG_OK;
}

static const char *const latitude_path[] = {"location", "latitude", NULL};
static const char *const longitude_path[] = {"location", "longitude", NULL};
static const char *const radius_path[] = {"location", "accuracy_radius", NULL};

/* The record's location into out, if it has one in range. */
static int read_location(MMDB_entry_s *entry, struct ag_geo_result *out)
{
    double lat, lon, radius;
    if (read_number(entry, latitude_path, &lat) != AG_OK ||
        read_number(entry, longitude_path, &lon) != AG_OK ||
        read_number(entry, radius_path, &radius) != AG_OK)
        return AG_EIO;
    if (!(lat >= -90.0 && lat <= 90.0 && lon >= -180.0 && lon <= 180.0))
        return AG_OK; /* NAN fails every comparison */
    out->located = true;
    out->latitude = lat;
    out->longitude = lon;
    out->accuracy_km =
        radius >= 1.0 && radius <= 65535.0 ? (uint16_t)radius : 0;
    return AG_OK;
}

/* The one walk of the tree both lookups take: the record's field, and
 * with locate, for a country database in MaxMind's layout, its
 * location. */
static int look(const struct ag_geo *g, const struct ag_ip *ip, bool locate,
                struct ag_geo_result *out)
{
    memset(out, 0, sizeof(*out));
    MMDB_lookup_result_s r;
    if (find(g, ip, &r) != AG_OK)
        return AG_EIO;
    if (!r.found_entry)
        return AG_OK;
    out->found = true;
    if (read_field(&r.entry, g->kind, g->layout, out) != AG_OK ||
        (locate && g->kind == AG_GEO_COUNTRY && g->layout == LAYOUT_MAXMIND &&
         read_location(&r.entry, out) != AG_OK)) {
        memset(out, 0, sizeof(*out));
        return AG_EIO;
    }
    return AG_OK;
}

int ag_geo_lookup(const struct ag_geo *g, const struct ag_ip *ip,
                  struct ag_geo_result *out)
{
    return look(g, ip, false, out);
}

int ag_geo_locate(const struct ag_geo *g, const struct ag_ip *ip,
                  struct ag_geo_result *out)
{
    return look(g, ip, true, out);
}

/* Whether the record at entry holds kind's field (*hit), and in which
 * layout (g->layout). */
static int sample_record(struct ag_geo *g, MMDB_entry_s *entry, bool *hit)
{
    static const enum layout layouts[] = {LAYOUT_MAXMIND, LAYOUT_IPINFO};

    *hit = false;
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        struct ag_geo_result r;
        memset(&r, 0, sizeof(r));
        if (read_field(entry, g->kind, layouts[i], &r) != AG_OK)
            return AG_EIO;
        if (has_value(g->kind, &r)) {
            g->layout = layouts[i];
            *hit = true;
            return AG_OK;
        }
    }
    return AG_OK;
}

/* Walks the tree depth first, lowest networks first, until a record holds
 * kind's field (AG_OK), the bounds run out (AG_ENOTFOUND, with the
 * records seen in *seen) or the tree is damaged (AG_EIO). The stack
 * holds at most one pending right child a level: 129 for IPv6. */
static int find_layout(struct ag_geo *g, unsigned *seen)
{
    uint32_t stack[130];
    size_t top = 0;
    unsigned nodes = 0;

    *seen = 0;
    stack[top++] = 0;
    while (top > 0 && nodes < SAMPLE_NODES && *seen < SAMPLE_RECORDS) {
        uint32_t n = stack[--top];
        MMDB_search_node_s node;
        if (MMDB_read_node(&g->mmdb, n, &node) != MMDB_SUCCESS)
            return AG_EIO;
        nodes++;
        /* Right first onto the stack, so that the left is taken next. */
        uint64_t rec[2] = {node.right_record, node.left_record};
        uint8_t type[2] = {node.right_record_type, node.left_record_type};
        MMDB_entry_s *entry[2] = {&node.right_record_entry,
                                  &node.left_record_entry};
        for (int i = 1; i >= 0; i--) {
            if (type[i] != MMDB_RECORD_TYPE_DATA)
                continue;
            bool hit;
            if (sample_record(g, entry[i], &hit) != AG_OK)
                return AG_EIO;
            if (hit)
                return AG_OK;
            (*seen)++;
        }
        for (int i = 0; i < 2; i++) {
            if (type[i] == MMDB_RECORD_TYPE_INVALID)
                return AG_EIO;
            if (type[i] != MMDB_RECORD_TYPE_SEARCH_NODE)
                continue;
            if (top == sizeof(stack) / sizeof(stack[0]))
                return AG_EIO; /* deeper than any address: a loop */
            stack[top++] = (uint32_t)rec[i];
        }
    }
    return AG_ENOTFOUND;
}

/* Copies src from its current offset to its end into dst; AG_OK with
 * *n bytes, AG_EINVAL past FILE_MAX, AG_EIO (errno kept), AG_ENOMEM. */
static int copy_all(int src, int dst, size_t *n)
{
    char *buf = malloc(COPY_CHUNK);
    if (buf == NULL)
        return AG_ENOMEM;
    int rc = AG_OK;
    *n = 0;
    for (;;) {
        ssize_t r = read(src, buf, COPY_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? AG_EIO : AG_OK;
            break;
        }
        if ((uint64_t)*n + (uint64_t)r > FILE_MAX) {
            rc = AG_EINVAL;
            break;
        }
        for (ssize_t off = 0; off < r;) {
            ssize_t w = write(dst, buf + off, (size_t)(r - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rc = AG_EIO;
                break;
            }
            off += w;
        }
        if (rc != AG_OK)
            break;
        *n += (size_t)r;
    }
    int saved = errno;
    free(buf);
    errno = saved;
    return rc;
}

/* Refusal for copy_all's code, or AG_ENOTFOUND for an empty file (which
 * mmap would refuse with an error that reads as I/O). */
static int copy_failed(int rc, const char *field, const char *path,
                       const char *what, struct ag_error *err)
{
    if (rc == AG_ENOTFOUND)
        return ag_error_set(err, AG_EINVAL, field,
                            "%s %s is empty, not an MMDB database", field,
                            path);
    if (rc == AG_ENOMEM)
        return ag_error_set(err, AG_ENOMEM, field, "%s %s: out of memory",
                            field, path);
    if (rc == AG_EINVAL)
        return ag_error_set(err, AG_EINVAL, field,
                            "%s %s is larger than 4 GiB: not an MMDB file",
                            field, path);
    return ag_error_set(err, AG_EIO, field, "%s %s: %s: %s", field, path, what,
                        strerror(errno));
}

/* Maps a copy of src at path (the fallback): a temporary file in
 * $TMPDIR or /tmp, unlinked once mapped. *st is MMDB_open's status. */
static int open_via_tmp(MMDB_s *mmdb, int src, const char *field,
                        const char *path, int *st, struct ag_error *err)
{
    const char *dir = getenv("TMPDIR");
    char tmp[4096];

    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    int len = snprintf(tmp, sizeof(tmp), "%s/ag-geo-XXXXXX", dir);
    if (len < 0 || (size_t)len >= sizeof(tmp)) {
        dir = "/tmp";
        snprintf(tmp, sizeof(tmp), "%s/ag-geo-XXXXXX", dir);
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return ag_error_set(err, AG_EIO, field,
                            "%s %s: cannot create a private copy in %s: %s",
                            field, path, dir, strerror(errno));
    size_t n;
    int rc = copy_all(src, fd, &n);
    if (rc == AG_OK && n == 0)
        rc = AG_ENOTFOUND;
    if (rc == AG_OK)
        *st = MMDB_open(tmp, MMDB_MODE_MMAP, mmdb);
    int saved = errno;
    unlink(tmp);
    close(fd);
    errno = saved;
    if (rc != AG_OK)
        return copy_failed(rc, field, path, "copying", err);
    return AG_OK;
}

/* Copies the file at src into memory and opens the copy; *st is
 * MMDB_open's status when AG_OK comes back. */
static int open_private(MMDB_s *mmdb, int src, const char *field,
                        const char *path, int *st, struct ag_error *err)
{
    int fd = memfd_create("ag-geo", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) /* no memfd (old kernel, seccomp): a temporary file */
        return open_via_tmp(mmdb, src, field, path, st, err);

    size_t n;
    int rc = copy_all(src, fd, &n);
    if (rc == AG_OK && n == 0)
        rc = AG_ENOTFOUND;
    if (rc != AG_OK) {
        int saved = errno;
        close(fd);
        errno = saved;
        return copy_failed(rc, field, path, "reading", err);
    }
    /* Only this process holds the memfd, but another process of the same
     * user could open /proc/<pid>/fd/N while it is open: sealed, nobody
     * can change it. A kernel without seals leaves it unsealed, which is
     * no worse than a private file. */
    (void)fcntl(fd, F_ADD_SEALS,
                F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);

    char proc[32];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    *st = MMDB_open(proc, MMDB_MODE_MMAP, mmdb);
    if (*st == MMDB_FILE_OPEN_ERROR && lseek(fd, 0, SEEK_SET) == 0) {
        /* No /proc: the copy of the copy goes to a temporary file. */
        rc = open_via_tmp(mmdb, fd, field, path, st, err);
    }
    close(fd);
    return rc;
}

/* Refusal for MMDB_open's status st. */
static int mmdb_failed(int st, const char *field, const char *path,
                       struct ag_error *err)
{
    switch (st) {
    case MMDB_OUT_OF_MEMORY_ERROR:
        return ag_error_set(err, AG_ENOMEM, field, "%s %s: out of memory",
                            field, path);
    case MMDB_FILE_OPEN_ERROR:
    case MMDB_IO_ERROR:
        return ag_error_set(err, AG_EIO, field,
                            "%s %s: cannot map its private copy (%s)", field,
                            path, MMDB_strerror(st));
    default:
        return ag_error_set(err, AG_EINVAL, field,
                            "%s %s is not an MMDB database or is damaged "
                            "(libmaxminddb: %s)",
                            field, path, MMDB_strerror(st));
    }
}

int ag_geo_open(const char *path, enum ag_geo_kind kind, struct ag_geo **out,
                struct ag_error *err)
{
    const char *field = kind_field(kind);

    *out = NULL;
    /* O_NONBLOCK so that a FIFO is refused below instead of waiting for
     * a writer; it changes nothing in a regular file's reads. */
    int src = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (src < 0)
        return ag_error_set(err, AG_EIO, field, "%s %s cannot be opened: %s",
                            field, path, strerror(errno));
    struct stat sb;
    if (fstat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(src);
        return ag_error_set(err, AG_EINVAL, field,
                            "%s %s is not a regular file", field, path);
    }
    struct ag_geo *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        close(src);
        return ag_error_set(err, AG_ENOMEM, field, "%s %s: out of memory",
                            field, path);
    }
    g->kind = kind;
    int st = MMDB_SUCCESS;
    int rc = open_private(&g->mmdb, src, field, path, &st, err);
    close(src);
    if (rc != AG_OK) {
        free(g);
        return rc;
    }
    if (st != MMDB_SUCCESS) {
        free(g);
        return mmdb_failed(st, field, path, err);
    }

    unsigned seen;
    rc = find_layout(g, &seen);
    if (rc == AG_OK) {
        *out = g;
        return AG_OK;
    }
    const char *type = ag_geo_type(g);
    if (rc == AG_EIO)
        rc = ag_error_set(err, AG_EINVAL, field,
                          "%s %s is damaged: its search tree or data cannot "
                          "be read (type \"%s\")",
                          field, path, type);
    else if (seen == 0)
        rc = ag_error_set(err, AG_EINVAL, field,
                          "%s %s holds no network (type \"%s\")", field, path,
                          type);
    else if (kind == AG_GEO_ASN)
        rc = ag_error_set(err, AG_EINVAL, field,
                          "%s %s is not an ASN database: no "
                          "autonomous_system_number (or IPinfo's asn) in "
                          "the %u records sampled (type \"%s\")",
                          field, path, seen, type);
    else
        rc = ag_error_set(err, AG_EINVAL, field,
                          "%s %s is not a country or city database: no "
                          "country.iso_code (or IPinfo's country_code) in "
                          "the %u records sampled (type \"%s\")",
                          field, path, seen, type);
    ag_geo_close(g);
    return rc;
}

void ag_geo_close(struct ag_geo *g)
{
    if (g == NULL)
        return;
    MMDB_close(&g->mmdb);
    free(g);
}

uint64_t ag_geo_build_epoch(const struct ag_geo *g)
{
    return g->mmdb.metadata.build_epoch;
}

const char *ag_geo_type(const struct ag_geo *g)
{
    const char *t = g->mmdb.metadata.database_type;
    return t != NULL ? t : "";
}

size_t ag_geo_bytes(const struct ag_geo *g)
{
    return (size_t)g->mmdb.file_size;
}
