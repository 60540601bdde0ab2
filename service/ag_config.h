/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line and environment configuration. Every flag --some-flag may also
 * be given as the environment variable ABUSEGUARD_SOME_FLAG; a flag on the
 * command line wins over the environment, which wins over the default.
 * ag_config_parse validates every value and reports the first bad one as a
 * one-line message naming the flag. The struct is filled once at start and
 * read-only afterwards.
 *
 * Three files, one job each: ag_config.c takes each value from where it
 * comes from and checks the flags that go together; ag_config_flags.c
 * holds the flag table and reads each kind of value (a Redis URL through
 * ag_redis_addr_parse, the Redis layer's); ag_config_files.c reads the
 * secret, password and token files.
 */
#ifndef AG_CONFIG_H
#define AG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ag_error.h"
#include "ag_fleet_ids.h"
#include "ag_redis_addr.h"

#define AG_SECRET_MIN 32           /* bytes a secret file must hold at least */
#define AG_SECRET_MAX 4096         /* bytes read from a secret file at most */
#define AG_TOKEN_MIN 16            /* bytes of admin token at least */
#define AG_TOKEN_MAX 1024          /* bytes of admin token at most */
#define AG_CONFIG_WEBHOOKS_MAX 8   /* --webhook-url given at most */
#define AG_CONFIG_WEBHOOK_URL 1024 /* bytes of one, with its NUL */
#define AG_CONFIG_PWNED_FILES 2    /* --pwned-file given at most */
#define AG_CONFIG_IP_LISTS 32      /* --ip-list given at most */

/* Where to serve: a numeric TCP address and port, or a unix socket. */
struct ag_listen_addr {
    char host[64];  /* numeric address to bind; empty: the unix socket */
    int port;       /* TCP only */
    char path[108]; /* unix only: the socket path */
};

struct ag_config {
    struct ag_listen_addr listen;
    /* Where the admin API lives when admin_listen_set; the public
     * listener then answers 404 for /admin/. */
    struct ag_listen_addr admin_listen;
    bool admin_listen_set;
    struct ag_redis_addr redis;
    char redis_password_file[1024]; /* empty: the URL's password, if any */
    char db_path[1024];
    char secret_file[1024];
    char admin_token_file[1024];   /* empty: admin API off */
    char seed_dir[1024];           /* empty: seed the compiled-in policies */
    unsigned conn_timeout_s;       /* a whole request within it */
    unsigned max_conns;            /* concurrent connections at most */
    unsigned max_conns_per_ip;     /* of them from one address at most */
    unsigned max_header_bytes;     /* per-connection memory for headers */
    unsigned threads;              /* HTTP worker threads; 0 = 2 per core */
    unsigned redis_timeout_ms;     /* connect and command timeout */
    unsigned phone_prefix_digits;  /* digits in a phone_prefix key */
    unsigned ipv6_ip_prefix;       /* bits of an IPv6 ip key */
    unsigned ipv6_group_prefix;    /* bits of an IPv6 ip_prefix key */
    unsigned ipv4_group_prefix;    /* bits of an IPv4 ip_prefix key */
    unsigned device_token_ttl_s;   /* seconds a device token lives */
    unsigned audit_retention_days; /* audit rows older are pruned */
    bool deny_cache;               /* --deny-cache on (the default) */
    bool fleet;                    /* --fleet on (the default) */
    char fleet_name[AG_FLEET_NAME_MAX + 1]; /* --fleet-name */
    unsigned fleet_lag_event_s; /* behind this long: fleet_lagging */
    unsigned fleet_poll_ms;     /* a step at least this often */
    bool strict_pass;           /* --challenge-pass strict */
    int log_level;              /* enum ag_log_level */
    /* Security event receivers (--webhook-url, repeatable; several in one
     * value, the environment's or the file's, separated by spaces). */
    char webhook_urls[AG_CONFIG_WEBHOOKS_MAX][AG_CONFIG_WEBHOOK_URL];
    unsigned n_webhooks;
    char webhook_secret_file[1024]; /* the HMAC key; needed with a URL */
    unsigned webhook_max_age_s;     /* an event older is dropped */
    unsigned events_max_len;        /* the event stream's cap */
    /* --webhook-format ocsf; false: json, the default. */
    bool webhook_ocsf;
    /* Breached-password corpora served at GET /range (--pwned-file,
     * repeatable: one SHA-1 and one NTLM file at most; several in one
     * value separated by spaces, like --webhook-url). */
    char pwned_files[AG_CONFIG_PWNED_FILES][1024];
    unsigned n_pwned_files;
    /* The network files (ag_network): a country and an ASN database, and
     * named IP sets, each "NAME=PATH" or "NAME:FORMAT=PATH" as given
     * (--ip-list, repeatable; checked when the files are loaded). */
    char geoip_file[1024];
    char asn_file[1024];
    char ip_lists[AG_CONFIG_IP_LISTS][1100];
    unsigned n_ip_lists;
    /* The user's usual places (issue 40): days a history is kept (0:
     * none kept or read), the --ip-list names whose addresses are
     * anonymising ("": every list), the speed beyond which a journey is
     * impossible. */
    unsigned history_days;
    char anonymising_lists[1100];
    unsigned travel_speed_kmh;
    bool help;              /* --help was given */
    bool version;           /* --version was given */
    char config_file[1024]; /* --config; empty: none */
};

/* Fills c from defaults, the environment and argv (argv[0] is skipped).
 * Returns 0, or AG_EINVAL with a one-line message in err, whose field is
 * the flag at fault (without its dashes) where one is. */
int ag_config_parse(struct ag_config *c, int argc, char **argv,
                    struct ag_error *err);
/* Writes the usage text, listing every flag, its variable and default. */
void ag_config_usage(FILE *out);

/* Reads a secret file: refuses one that is missing, unreadable, not a
 * regular file (a FIFO is refused at once, never waited on), shorter than
 * AG_SECRET_MIN bytes, one byte repeated (all zeros), or readable or
 * writable by group or others. key must hold AG_SECRET_MAX bytes; *len
 * receives the length. The caller should sodium_memzero the key when done. */
int ag_config_read_secret(const char *path, unsigned char *key, size_t *len,
                          struct ag_error *err);
/* The same for the secret file of flag (without its dashes, such as
 * "webhook-secret-file"), which its messages name. */
int ag_config_read_secret_for(const char *flag, const char *path,
                              unsigned char *key, size_t *len,
                              struct ag_error *err);
/* Reads --redis-password-file, when given, into c->redis.password (it wins
 * over a password in the URL): a private regular file (mode checked like
 * the secret file's), trailing white space trimmed, 1 to 255 bytes. */
int ag_config_read_redis_password(struct ag_config *c, struct ag_error *err);
/* Reads the admin token: a private regular file (mode checked like the
 * secret file's), its content with trailing whitespace trimmed,
 * AG_TOKEN_MIN to AG_TOKEN_MAX bytes, not one byte repeated (refused
 * like the secret file's). token must hold AG_TOKEN_MAX + 1 bytes. */
int ag_config_read_token(const char *path, char *token, struct ag_error *err);

#endif
