/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The map is a table of 16384 node indexes (-1 for an uncovered slot) and
 * a growable array of nodes, so an owner lookup is one load. Nodes are
 * never removed: an index once handed out names the same node for the
 * life of the map, even after MOVED has taken all its slots.
 */
#include "ag_redis_slot.h"

#include <stdlib.h>
#include <string.h>

/* CRC16/XMODEM by byte, as crc16tab in Redis's crc16.c; generated from the
 * polynomial 0x1021. */
static const uint16_t crc16tab[256] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7, 0x8108,
    0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef, 0x1231, 0x0210,
    0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6, 0x9339, 0x8318, 0xb37b,
    0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de, 0x2462, 0x3443, 0x0420, 0x1401,
    0x64e6, 0x74c7, 0x44a4, 0x5485, 0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee,
    0xf5cf, 0xc5ac, 0xd58d, 0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6,
    0x5695, 0x46b4, 0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d,
    0xc7bc, 0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b, 0x5af5,
    0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12, 0xdbfd, 0xcbdc,
    0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a, 0x6ca6, 0x7c87, 0x4ce4,
    0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41, 0xedae, 0xfd8f, 0xcdec, 0xddcd,
    0xad2a, 0xbd0b, 0x8d68, 0x9d49, 0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13,
    0x2e32, 0x1e51, 0x0e70, 0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a,
    0x9f59, 0x8f78, 0x9188, 0x81a9, 0xb1ca, 0xa1eb, 0xd10c, 0xc12d, 0xf14e,
    0xe16f, 0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e, 0x02b1,
    0x1290, 0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256, 0xb5ea, 0xa5cb,
    0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d, 0x34e2, 0x24c3, 0x14a0,
    0x0481, 0x7466, 0x6447, 0x5424, 0x4405, 0xa7db, 0xb7fa, 0x8799, 0x97b8,
    0xe75f, 0xf77e, 0xc71d, 0xd73c, 0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657,
    0x7676, 0x4615, 0x5634, 0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9,
    0xb98a, 0xa9ab, 0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882,
    0x28a3, 0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
    0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92, 0xfd2e,
    0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8, 0x8dc9, 0x7c26, 0x6c07,
    0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1, 0xef1f, 0xff3e, 0xcf5d,
    0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8, 0x6e17, 0x7e36, 0x4e55, 0x5e74,
    0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};

uint16_t ag_redis_slot_crc16(const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)(crc << 8) ^ crc16tab[((crc >> 8) ^ p[i]) & 0xff];
    return crc;
}

uint16_t ag_redis_slot(const char *key, size_t len)
{
    const char *open = len ? memchr(key, '{', len) : NULL;
    if (open) {
        size_t after = (size_t)(open - key) + 1;
        const char *close = memchr(open + 1, '}', len - after);
        /* "{}" is no tag: the whole key hashes. */
        if (close && close > open + 1)
            return ag_redis_slot_crc16(open + 1, (size_t)(close - open - 1)) &
                   (AG_REDIS_SLOTS - 1);
    }
    return ag_redis_slot_crc16(key, len) & (AG_REDIS_SLOTS - 1);
}

struct node {
    char host[AG_REDIS_HOST_MAX];
    int port;
};

struct ag_redis_slot_map {
    int16_t owner[AG_REDIS_SLOTS]; /* node index, or -1 */
    struct node *nodes;
    size_t n, cap;
};

void ag_redis_slot_map_free(struct ag_redis_slot_map *m)
{
    if (!m)
        return;
    free(m->nodes);
    free(m);
}

static struct ag_redis_slot_map *map_new(void)
{
    struct ag_redis_slot_map *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    for (size_t s = 0; s < AG_REDIS_SLOTS; s++)
        m->owner[s] = -1;
    return m;
}

/* The index of host:port in m, added if new; -1 if it cannot be added
 * (hlen must be below AG_REDIS_HOST_MAX). */
static int node_index(struct ag_redis_slot_map *m, const char *host,
                      size_t hlen, int port)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->nodes[i].port == port && strlen(m->nodes[i].host) == hlen &&
            memcmp(m->nodes[i].host, host, hlen) == 0)
            return (int)i;
    }
    if (m->n == AG_REDIS_SLOT_NODES_MAX)
        return -1;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 4;
        if (cap > AG_REDIS_SLOT_NODES_MAX)
            cap = AG_REDIS_SLOT_NODES_MAX;
        struct node *nodes = realloc(m->nodes, cap * sizeof *nodes);
        if (!nodes)
            return -1;
        m->nodes = nodes;
        m->cap = cap;
    }
    memcpy(m->nodes[m->n].host, host, hlen);
    m->nodes[m->n].host[hlen] = '\0';
    m->nodes[m->n].port = port;
    return (int)m->n++;
}

#define FIELD "CLUSTER SLOTS"

/* Checks entry i of a CLUSTER SLOTS reply and fills its slots in m. */
static int add_entry(struct ag_redis_slot_map *m, const redisReply *e, size_t i,
                     struct ag_error *err)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
        return ag_error_set(err, AG_EINVAL, FIELD,
                            FIELD " entry %zu is not an array of a range and "
                                  "a master",
                            i);
    const redisReply *start = e->element[0], *end = e->element[1];
    if (start->type != REDIS_REPLY_INTEGER || end->type != REDIS_REPLY_INTEGER)
        return ag_error_set(err, AG_EINVAL, FIELD,
                            FIELD " entry %zu: the range is not two integers",
                            i);
    if (start->integer < 0 || end->integer >= AG_REDIS_SLOTS ||
        start->integer > end->integer)
        return ag_error_set(err, AG_EINVAL, FIELD,
                            FIELD " entry %zu: the range %lld-%lld is not "
                                  "within 0-%d with start <= end",
                            i, start->integer, end->integer,
                            AG_REDIS_SLOTS - 1);
    const redisReply *master = e->element[2];
    if (master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
        master->element[0]->type != REDIS_REPLY_STRING ||
        master->element[1]->type != REDIS_REPLY_INTEGER)
        return ag_error_set(err, AG_EINVAL, FIELD,
                            FIELD " entry %zu: the master is not an array "
                                  "of a string ip and an integer port",
                            i);
    const redisReply *ip = master->element[0], *port = master->element[1];
    if (port->integer < 1 || port->integer > 65535)
        return ag_error_set(err, AG_EINVAL, FIELD,
                            FIELD " entry %zu: the master's port %lld is not "
                                  "within 1-65535",
                            i, port->integer);
    if (ip->len >= AG_REDIS_HOST_MAX || memchr(ip->str, '\0', ip->len))
        return ag_error_set(err, AG_EINVAL, FIELD,
                            FIELD " entry %zu: the master's ip is longer "
                                  "than %d bytes or holds a NUL",
                            i, AG_REDIS_HOST_MAX - 1);
    for (size_t k = 3; k < e->elements; k++) {
        if (e->element[k]->type != REDIS_REPLY_ARRAY)
            return ag_error_set(err, AG_EINVAL, FIELD,
                                FIELD " entry %zu: replica %zu is not an "
                                      "array",
                                i, k - 3);
    }
    for (long long s = start->integer; s <= end->integer; s++) {
        if (m->owner[s] != -1)
            return ag_error_set(err, AG_EINVAL, FIELD,
                                FIELD " entry %zu: slot %lld is in an "
                                      "earlier range too",
                                i, s);
    }
    int node = node_index(m, ip->str, ip->len, (int)port->integer);
    if (node < 0)
        return m->n == AG_REDIS_SLOT_NODES_MAX
                   ? ag_error_set(err, AG_EINVAL, FIELD,
                                  FIELD " names more than %d masters",
                                  AG_REDIS_SLOT_NODES_MAX)
                   : ag_error_set(err, AG_ENOMEM, FIELD,
                                  FIELD ": out of memory");
    for (long long s = start->integer; s <= end->integer; s++)
        m->owner[s] = (int16_t)node;
    return AG_OK;
}

int ag_redis_slot_map_from_reply(const redisReply *r,
                                 struct ag_redis_slot_map **out,
                                 struct ag_error *err)
{
    *out = NULL;
    if (!r)
        return ag_error_set(err, AG_EINVAL, FIELD, FIELD " has no reply");
    if (r->type == REDIS_REPLY_ERROR)
        return ag_error_set(err, AG_EINVAL, FIELD, FIELD " failed: %.*s",
                            (int)(r->len > 160 ? 160 : r->len), r->str);
    if (r->type != REDIS_REPLY_ARRAY)
        return ag_error_set(err, AG_EINVAL, FIELD,
                            FIELD " replied with a non-array (type %d)",
                            r->type);
    struct ag_redis_slot_map *m = map_new();
    if (!m)
        return ag_error_set(err, AG_ENOMEM, FIELD, FIELD ": out of memory");
    for (size_t i = 0; i < r->elements; i++) {
        int rc = add_entry(m, r->element[i], i, err);
        if (rc) {
            ag_redis_slot_map_free(m);
            return rc;
        }
    }
    *out = m;
    return AG_OK;
}

size_t ag_redis_slot_map_nodes(const struct ag_redis_slot_map *m)
{
    return m->n;
}

const char *ag_redis_slot_map_host(const struct ag_redis_slot_map *m, size_t i)
{
    return m->nodes[i].host;
}

int ag_redis_slot_map_port(const struct ag_redis_slot_map *m, size_t i)
{
    return m->nodes[i].port;
}

int ag_redis_slot_map_owner(const struct ag_redis_slot_map *m, uint16_t slot)
{
    return slot < AG_REDIS_SLOTS ? m->owner[slot] : -1;
}

bool ag_redis_slot_map_complete(const struct ag_redis_slot_map *m)
{
    for (size_t s = 0; s < AG_REDIS_SLOTS; s++) {
        if (m->owner[s] == -1)
            return false;
    }
    return true;
}

void ag_redis_slot_map_moved(struct ag_redis_slot_map *m, uint16_t slot,
                             const char *host, int port)
{
    if (slot >= AG_REDIS_SLOTS)
        return;
    size_t hlen = strlen(host);
    int node = hlen < AG_REDIS_HOST_MAX ? node_index(m, host, hlen, port) : -1;
    m->owner[slot] = (int16_t)node;
}

/* Reads the decimal number at *p (below end), at most max, without sign or
 * leading zeros past a single "0"; advances *p. -1 if there is none. */
static long decimal(const char **p, const char *end, long max)
{
    const char *s = *p;
    long v = 0;
    if (s == end || *s < '0' || *s > '9')
        return -1;
    if (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9')
        return -1;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v > max)
            return -1;
    }
    *p = s;
    return v;
}

int ag_redis_slot_parse_redirect(const char *err, size_t len,
                                 struct ag_redis_redirect *out)
{
    const char *p = err, *end = err + len;
    if (len > 6 && memcmp(p, "MOVED ", 6) == 0) {
        out->kind = AG_REDIS_MOVED;
        p += 6;
    } else if (len > 4 && memcmp(p, "ASK ", 4) == 0) {
        out->kind = AG_REDIS_ASK;
        p += 4;
    } else {
        return AG_EINVAL;
    }
    long slot = decimal(&p, end, AG_REDIS_SLOTS - 1);
    if (slot < 0 || p == end || *p != ' ')
        return AG_EINVAL;
    p++;
    /* The port follows the last colon: an IPv6 host holds colons. */
    const char *colon = NULL;
    for (const char *q = p; q < end; q++) {
        if (*q == ':')
            colon = q;
        else if (*q == ' ' || *q == '\0')
            return AG_EINVAL;
    }
    if (!colon || (size_t)(colon - p) >= AG_REDIS_HOST_MAX)
        return AG_EINVAL;
    const char *q = colon + 1;
    long port = decimal(&q, end, 65535);
    if (port < 1 || q != end)
        return AG_EINVAL;
    out->slot = (uint16_t)slot;
    memcpy(out->host, p, (size_t)(colon - p));
    out->host[colon - p] = '\0';
    out->port = (int)port;
    return AG_OK;
}
