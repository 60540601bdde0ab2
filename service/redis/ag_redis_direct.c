/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_direct.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <sodium.h>

#include "ag_log.h"
#include "ag_redis_link.h"
#include "ag_redis_reply.h"
#include "ag_redis_sentinel.h"
#include "ag_redis_slot.h"

struct ag_redis_direct {
    pthread_mutex_t lock;
    struct ag_redis_addr addr; /* as configured */
    unsigned timeout_ms;
    struct ag_redis_tls *tls;   /* NULL without TLS */
    struct ag_redis_link *link; /* NULL: connect at the next command */
    int next_seed;              /* cluster: the seed to try next */
    bool no_tls;                /* TLS settings that could not be made */
    /* Cluster: the node a MOVED named last, tried before the seeds. */
    char node_host[AG_REDIS_HOST_MAX];
    int node_port;
};

int ag_redis_direct_new(const struct ag_redis_addr *addr, unsigned timeout_ms,
                        struct ag_redis_direct **out, struct ag_error *err)
{
    *out = NULL;
    struct ag_redis_direct *d = calloc(1, sizeof *d);
    if (!d)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    d->addr = *addr;
    d->timeout_ms = timeout_ms;
    if (addr->tls && ag_redis_tls_new(addr, &d->tls, err) != AG_OK) {
        /* As the store does: the service runs, and every command fails
         * (the store's log says why). */
        ag_log(AG_LOG_WARN, "redis_direct", "%s", err->msg);
        d->no_tls = true;
    }
    pthread_mutex_init(&d->lock, NULL);
    *out = d;
    return AG_OK;
}

void ag_redis_direct_free(struct ag_redis_direct *d)
{
    if (!d)
        return;
    ag_redis_link_close(d->link);
    ag_redis_tls_free(d->tls);
    pthread_mutex_destroy(&d->lock);
    sodium_memzero(&d->addr, sizeof d->addr);
    free(d);
}

static void drop(struct ag_redis_direct *d);

/* Connects to host:port (a cluster node) or where the address says. */
static int connect_to(struct ag_redis_direct *d, const char *host, int port)
{
    struct ag_redis_addr a = d->addr;
    struct ag_error err = {0};
    int rc = AG_OK;
    if (host) {
        a.kind = AG_REDIS_TCP;
        snprintf(a.host, sizeof a.host, "%s", host);
        a.port = port;
        a.db = 0;
    } else if (a.kind == AG_REDIS_SENTINEL) {
        rc =
            ag_redis_sentinel_master(&d->addr, d->tls, d->timeout_ms, &a, &err);
    }
    if (rc == AG_OK)
        rc = ag_redis_link_open(&a, d->tls, d->timeout_ms, &d->link, &err);
    sodium_memzero(a.password, sizeof a.password);
    if (rc) {
        ag_log(AG_LOG_DEBUG, "redis_direct", "%s", err.msg);
        return AG_ESTORE;
    }
    /* Named, so that CLIENT LIST tells it from the checks' connections;
     * an ACL without CLIENT leaves it unnamed, which changes nothing. */
    static const char name[] =
        "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$16\r\nabuseguard-fleet\r\n";
    void *r = NULL;
    if (ag_redis_link_append(d->link, name, sizeof name - 1) ||
        ag_redis_link_get_reply(d->link, &r)) {
        drop(d);
        return AG_ESTORE;
    }
    ag_redis_reply_free(r);
    return AG_OK;
}

static int connect_link(struct ag_redis_direct *d)
{
    if (d->addr.kind != AG_REDIS_CLUSTER)
        return connect_to(d, NULL, 0);
    if (d->node_host[0] && connect_to(d, d->node_host, d->node_port) == AG_OK)
        return AG_OK;
    d->node_host[0] = '\0';
    const struct ag_redis_hostport *seed =
        &d->addr.seeds[d->next_seed++ % d->addr.n_seeds];
    return connect_to(d, seed->host, seed->port);
}

static void drop(struct ag_redis_direct *d)
{
    ag_redis_link_close(d->link);
    d->link = NULL;
}

/* Sends the formatted command (ASKING first if asking) on the link. */
static int send_on(struct ag_redis_direct *d, const char *cmd, size_t len,
                   bool asking, redisReply **reply)
{
    static const char ask[] = "*1\r\n$6\r\nASKING\r\n";
    void *r = NULL;
    if (asking) {
        if (ag_redis_link_append(d->link, ask, sizeof ask - 1) ||
            ag_redis_link_get_reply(d->link, &r))
            return AG_ESTORE;
        ag_redis_reply_free(r);
        r = NULL;
    }
    if (ag_redis_link_append(d->link, cmd, len) ||
        ag_redis_link_get_reply(d->link, &r))
        return AG_ESTORE;
    *reply = r;
    return AG_OK;
}

static bool error_is(const redisReply *r, const char *prefix)
{
    return r->type == REDIS_REPLY_ERROR &&
           strncmp(r->str, prefix, strlen(prefix)) == 0;
}

int ag_redis_direct_command(struct ag_redis_direct *d, int argc,
                            const char **argv, const size_t *lens, void **reply)
{
    *reply = NULL;
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0)
        return AG_ESTORE;
    pthread_mutex_lock(&d->lock);
    redisReply *r = NULL;
    /* A link Redis closed while it sat idle (a restart, CLIENT KILL,
     * its timeout) is made again rather than failing the command. */
    if (d->link && ag_redis_link_stale(d->link))
        drop(d);
    int rc = d->link ? AG_OK : d->no_tls ? AG_ESTORE : connect_link(d);
    if (rc == AG_OK)
        rc = send_on(d, cmd, (size_t)len, false, &r);
    if (rc == AG_OK && d->addr.kind == AG_REDIS_CLUSTER &&
        r->type == REDIS_REPLY_ERROR) {
        struct ag_redis_redirect to;
        if (ag_redis_slot_parse_redirect(r->str, r->len, &to) == AG_OK) {
            /* Followed once: the node named, on a link of its own for an
             * ASK (this once) or as the link from now on for a MOVED. */
            ag_redis_reply_free(r);
            r = NULL;
            drop(d);
            if (to.kind == AG_REDIS_MOVED && to.host[0]) {
                snprintf(d->node_host, sizeof d->node_host, "%s", to.host);
                d->node_port = to.port;
            }
            rc = to.host[0] ? connect_to(d, to.host, to.port) : AG_ESTORE;
            if (rc == AG_OK)
                rc = send_on(d, cmd, (size_t)len, to.kind == AG_REDIS_ASK, &r);
        }
    }
    if (rc != AG_OK)
        drop(d);
    else if (error_is(r, "READONLY") || error_is(r, "MASTERDOWN"))
        drop(d); /* a failover: ask the sentinels again next time */
    pthread_mutex_unlock(&d->lock);
    redisFreeCommand(cmd);
    if (rc == AG_OK)
        *reply = r;
    return rc;
}
