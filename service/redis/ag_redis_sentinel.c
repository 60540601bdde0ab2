/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ag_redis_reply.h"

/* One sentinel's answer: AG_OK with host and port, or a reason. */
static int ask(const struct ag_redis_addr *a, const struct ag_redis_hostport *s,
               const struct ag_redis_tls *tls, unsigned timeout_ms,
               char host[256], int *port, char *why, size_t whysize)
{
    struct ag_redis_addr sa;
    memset(&sa, 0, sizeof sa);
    sa.kind = AG_REDIS_TCP;
    memcpy(sa.host, s->host, sizeof sa.host);
    sa.port = s->port;
    sa.tls = a->tls;
    memcpy(sa.tls_server_name, a->tls_server_name, sizeof sa.tls_server_name);
    struct ag_redis_link *l = NULL;
    struct ag_error err;
    if (ag_redis_link_open(&sa, tls, timeout_ms, &l, &err) != AG_OK) {
        snprintf(why, whysize, "%s", err.msg);
        return AG_ESTORE;
    }
    const char *argv[] = {"SENTINEL", "get-master-addr-by-name",
                          a->master_name};
    size_t lens[] = {8, 23, strlen(a->master_name)};
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, 3, argv, lens);
    redisReply *r = NULL;
    int rc = AG_ESTORE;
    if (len < 0 || ag_redis_link_append(l, cmd, (size_t)len) != AG_OK ||
        ag_redis_link_get_reply(l, (void **)&r) != AG_OK) {
        snprintf(why, whysize, "%s", ag_redis_link_error(l));
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_STRING &&
               r->element[0]->len < 256) {
        char *end;
        long p = strtol(r->element[1]->str, &end, 10);
        if (*end == '\0' && p > 0 && p < 65536) {
            memcpy(host, r->element[0]->str, r->element[0]->len + 1);
            *port = (int)p;
            rc = AG_OK;
        } else {
            snprintf(why, whysize, "a port that is no port");
        }
    } else if (r->type == REDIS_REPLY_NIL ||
               (r->type == REDIS_REPLY_ARRAY && r->elements == 0)) {
        snprintf(why, whysize, "it knows no master '%s'", a->master_name);
    } else {
        snprintf(why, whysize, "%s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "an unexpected reply");
    }
    ag_redis_reply_free(r);
    redisFreeCommand(cmd);
    ag_redis_link_close(l);
    return rc;
}

int ag_redis_sentinel_master(const struct ag_redis_addr *a,
                             const struct ag_redis_tls *tls,
                             unsigned timeout_ms, struct ag_redis_addr *master,
                             struct ag_error *err)
{
    char why[AG_ERROR_MSG_MAX] = "no sentinel";
    int last = 0;
    for (int i = 0; i < a->n_seeds; i++) {
        char host[256];
        int port;
        last = i;
        if (ask(a, &a->seeds[i], tls, timeout_ms, host, &port, why,
                sizeof why) != AG_OK)
            continue;
        *master = *a;
        master->kind = AG_REDIS_TCP;
        memcpy(master->host, host, sizeof master->host);
        master->port = port;
        return AG_OK;
    }
    return ag_error_set(err, AG_ESTORE, NULL,
                        "sentinel: no master '%s' from %d sentinels (the "
                        "last, %s:%d: %s)",
                        a->master_name, a->n_seeds, a->seeds[last].host,
                        a->seeds[last].port, why);
}
