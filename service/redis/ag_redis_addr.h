/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where Redis is: one server over TCP or a unix socket, a master found
 * through Redis Sentinel, or a Redis Cluster found from seed nodes, with
 * the credentials and TLS settings to reach it. The address is plain data
 * (copied by whoever keeps it: the store, the pipe, the subscriber), and
 * ag_redis_addr_parse reads one from its URL, so that the module that
 * connects is the one that knows the URL forms (the configuration only
 * hands it the flag's value).
 *
 * The password lives in the struct: whoever copies an address wipes its
 * copy's password (sodium_memzero) when done with it. A refusal never
 * shows the password.
 *
 * Thread-safety: ag_redis_addr_parse keeps no state; any thread may call
 * it on its own out.
 */
#ifndef AG_REDIS_ADDR_H
#define AG_REDIS_ADDR_H

#include <stdbool.h>

#include "ag_error.h"

enum ag_redis_kind {
    AG_REDIS_TCP,
    AG_REDIS_UNIX,
    AG_REDIS_SENTINEL, /* the master found through sentinels */
    AG_REDIS_CLUSTER,  /* a Redis Cluster, found from seed nodes */
};

#define AG_SEEDS_MAX 8 /* sentinel or seed node addresses in a URL */

struct ag_redis_hostport {
    char host[256];
    int port;
};

struct ag_redis_addr {
    enum ag_redis_kind kind;
    char host[256]; /* TCP only */
    int port;       /* TCP only */
    char path[108]; /* unix only: the socket path */
    /* Sentinel: where to ask, in order, for master_name's address.
     * Cluster: the seed nodes, asked in order for the slot map. */
    struct ag_redis_hostport seeds[AG_SEEDS_MAX];
    int n_seeds;
    char master_name[256];
    char user[256];         /* ACL user; empty: AUTH with the password alone */
    char password[256];     /* empty: no AUTH */
    int db;                 /* SELECT after connect when non-zero */
    bool tls;               /* rediss://: TLS, the server's certificate and
                               name verified */
    char tls_ca_file[1024]; /* CA bundle; empty: the system's store */
    char tls_cert_file[1024];  /* client certificate; empty: none */
    char tls_key_file[1024];   /* its private key */
    char tls_server_name[256]; /* SNI and the name to verify; empty: host */
};

/* Parses a Redis URL into out:
 *   redis://[[user]:password@]host:port[/db]   (user and password
 *                                               %-decoded)
 *   rediss://...                                (the same over TLS)
 *   redis+sentinel://[creds@]host:port,host:port.../master_name
 *   redis+cluster://[creds@]host:port,host:port...  (seed nodes)
 *   rediss+sentinel://..., rediss+cluster://...  (over TLS)
 *   unix:///path/to/socket
 * Keeps out's tls_* file and name fields, which come from elsewhere (their
 * own flags) and may have been set before; everything else is reset.
 * name is the option the URL came from, without its dashes (such as
 * "redis"): a refusal is AG_EINVAL with err's field name and a message
 * that starts "--<name>: ", and never holds the password. */
int ag_redis_addr_parse(const char *url, const char *name,
                        struct ag_redis_addr *out, struct ag_error *err);

#endif
