/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_error.h"
#include "ag_parse.h"

/* Decodes n bytes of a URL's userinfo part (%XX escapes) into out, which
 * holds size bytes; AG_EINVAL for a bad escape, a NUL or too long. */
static int url_decode(const char *s, size_t n, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
                !isxdigit((unsigned char)s[i + 2]))
                return AG_EINVAL;
            char hex[3] = {s[i + 1], s[i + 2], '\0'};
            c = (unsigned char)strtoul(hex, NULL, 16);
            i += 2;
        }
        if (c == '\0' || o + 1 >= size)
            return AG_EINVAL;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return AG_OK;
}

/* Whether the hlen bytes at h are a host a connection can be made to: a
 * name or an IPv4 address (letters, digits, '.', '-', '_'), or, when
 * bracketed, an IPv6 address. Anything else (a bracket left open, a
 * control character) would start a service that never connects. */
static bool host_ok(const char *h, size_t hlen, bool bracketed)
{
    if (bracketed) {
        char v6[INET6_ADDRSTRLEN];
        unsigned char addr[16];
        if (hlen >= sizeof v6)
            return false;
        memcpy(v6, h, hlen);
        v6[hlen] = '\0';
        return inet_pton(AF_INET6, v6, addr) == 1;
    }
    for (size_t i = 0; i < hlen; i++)
        if (!isalnum((unsigned char)h[i]) && !strchr(".-_", h[i]))
            return false;
    return hlen > 0;
}

/* One HOST:PORT (or [V6]:PORT) of n bytes at s. */
static int parse_hostport(const char *s, size_t n,
                          struct ag_redis_hostport *out)
{
    const char *colon = NULL;
    for (const char *p = s; p < s + n; p++)
        if (*p == ':')
            colon = p;
    if (!colon || colon == s)
        return AG_EINVAL;
    const char *h = s;
    size_t hlen = (size_t)(colon - s);
    bool bracketed = hlen > 2 && h[0] == '[' && h[hlen - 1] == ']';
    if (bracketed) {
        h++;
        hlen -= 2;
    }
    char port[8] = {0};
    size_t plen = (size_t)(s + n - colon - 1);
    if (hlen >= sizeof out->host || plen == 0 || plen >= sizeof port ||
        !host_ok(h, hlen, bracketed))
        return AG_EINVAL;
    memcpy(out->host, h, hlen);
    out->host[hlen] = '\0';
    memcpy(port, colon + 1, plen);
    return ag_parse_port(port, &out->port);
}

/* "h1:p1,h2:p2,..." after the credentials, then "/master_name" for
 * sentinels (named) and nothing for cluster seeds. */
static int parse_seeds(const char *s, bool named, const char *name,
                       struct ag_redis_addr *out, struct ag_error *err)
{
    const char *slash = strchr(s, '/');
    if (named &&
        (!slash || !slash[1] || strlen(slash + 1) >= sizeof out->master_name ||
         strchr(slash + 1, '/')))
        return ag_error_set(err, AG_EINVAL, name,
                            "--%s: a sentinel URL ends with /master_name",
                            name);
    if (!named && slash)
        return ag_error_set(err, AG_EINVAL, name,
                            "--%s: a cluster URL has no path (a cluster "
                            "has database 0 only)",
                            name);
    if (!slash)
        slash = s + strlen(s);
    for (const char *p = s; p < slash;) {
        const char *comma = memchr(p, ',', (size_t)(slash - p));
        const char *end = comma ? comma : slash;
        if (out->n_seeds == AG_SEEDS_MAX)
            return ag_error_set(err, AG_EINVAL, name,
                                "--%s: at most %d addresses", name,
                                AG_SEEDS_MAX);
        if (parse_hostport(p, (size_t)(end - p), &out->seeds[out->n_seeds]))
            return ag_error_set(err, AG_EINVAL, name,
                                "--%s: address %d is not host:port (a "
                                "name, an IPv4 address or [IPv6], the port "
                                "1 to 65535)",
                                name, out->n_seeds + 1);
        out->n_seeds++;
        p = comma ? comma + 1 : slash;
        if (comma && p == slash)
            return ag_error_set(err, AG_EINVAL, name,
                                "--%s: an empty sentinel after ','", name);
    }
    if (!out->n_seeds)
        return ag_error_set(err, AG_EINVAL, name,
                            "--%s: a %s URL needs host:port", name,
                            named ? "sentinel" : "cluster");
    if (named)
        strcpy(out->master_name, slash + 1);
    return AG_OK;
}

int ag_redis_addr_parse(const char *url, const char *name,
                        struct ag_redis_addr *out, struct ag_error *err)
{
    /* The TLS options come from their own flags, which may have been
     * applied already. */
    struct ag_redis_addr keep = *out;
    memset(out, 0, sizeof *out);
    memcpy(out->tls_ca_file, keep.tls_ca_file, sizeof out->tls_ca_file);
    memcpy(out->tls_cert_file, keep.tls_cert_file, sizeof out->tls_cert_file);
    memcpy(out->tls_key_file, keep.tls_key_file, sizeof out->tls_key_file);
    memcpy(out->tls_server_name, keep.tls_server_name,
           sizeof out->tls_server_name);
    sodium_memzero(&keep, sizeof keep);
    const char *unix_prefix = "unix://";
    if (strncmp(url, unix_prefix, strlen(unix_prefix)) == 0) {
        const char *path = url + strlen(unix_prefix);
        if (path[0] != '/' || strlen(path) >= sizeof out->path)
            return ag_error_set(err, AG_EINVAL, name,
                                "--%s: unix socket path must be absolute and "
                                "under %zu bytes",
                                name, sizeof out->path);
        out->kind = AG_REDIS_UNIX;
        strcpy(out->path, path);
        return AG_OK;
    }
    static const struct {
        const char *scheme;
        bool tls;
        enum ag_redis_kind kind;
    } schemes[] = {
        {"redis://", false, AG_REDIS_TCP},
        {"rediss://", true, AG_REDIS_TCP},
        {"redis+sentinel://", false, AG_REDIS_SENTINEL},
        {"rediss+sentinel://", true, AG_REDIS_SENTINEL},
        {"redis+cluster://", false, AG_REDIS_CLUSTER},
        {"rediss+cluster://", true, AG_REDIS_CLUSTER},
    };
    const char *s = NULL;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strncmp(url, schemes[i].scheme, strlen(schemes[i].scheme)) == 0) {
            s = url + strlen(schemes[i].scheme);
            out->tls = schemes[i].tls;
            out->kind = schemes[i].kind;
        }
    if (!s)
        return ag_error_set(err, AG_EINVAL, name,
                            "--%s: expected redis://[[user]:password@]"
                            "host:port[/db], rediss://... (TLS), "
                            "redis+sentinel://[[user]:password@]host:port,"
                            "host:port.../master or unix:///path",
                            name);
    const char *at = strrchr(s, '@');
    if (at) {
        /* Never echoed: the text holds the password. user@ alone is an
         * ACL user whose password is in --redis-password-file. */
        const char *colon = memchr(s, ':', (size_t)(at - s));
        const char *user_end = colon ? colon : at;
        if (url_decode(s, (size_t)(user_end - s), out->user,
                       sizeof out->user) ||
            (colon && url_decode(colon + 1, (size_t)(at - colon - 1),
                                 out->password, sizeof out->password)) ||
            (colon && !out->password[0]) || (!colon && !out->user[0])) {
            sodium_memzero(out->password, sizeof out->password);
            return ag_error_set(err, AG_EINVAL, name,
                                "--%s: credentials must be "
                                "'user:password@', ':password@' or 'user@' "
                                "(%%-escape ':', '@' and '/' in them)",
                                name);
        }
        s = at + 1;
    }
    if (out->kind == AG_REDIS_SENTINEL)
        return parse_seeds(s, true, name, out, err);
    if (out->kind == AG_REDIS_CLUSTER)
        return parse_seeds(s, false, name, out, err);
    const char *slash = strchr(s, '/');
    struct ag_redis_hostport hp;
    if (parse_hostport(s, (size_t)((slash ? slash : s + strlen(s)) - s), &hp))
        return ag_error_set(err, AG_EINVAL, name,
                            "--%s: expected host:port (a name, an IPv4 "
                            "address or [IPv6]), the port 1 to 65535",
                            name);
    memcpy(out->host, hp.host, sizeof out->host);
    out->port = hp.port;
    if (slash && slash[1]) {
        unsigned db;
        if (ag_parse_uint(slash + 1, 0, 1000000, &db))
            return ag_error_set(err, AG_EINVAL, name,
                                "--%s: database must be a number", name);
        out->db = (int)db;
    }
    return AG_OK;
}
