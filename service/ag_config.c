/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ag_db.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_identity.h"
#include "ag_log.h"
#include "ag_redis_addr.h"

/* K_URLS: repeatable; each value is one or more space-separated URLs. */
enum kind {
    K_STR,
    K_UINT,
    K_LISTEN,
    K_REDIS,
    K_LEVEL,
    K_FLAG,
    K_ONOFF,
    K_URLS
};

struct flag {
    const char *name; /* without the leading dashes */
    enum kind kind;
    size_t off;      /* offset of the field in struct ag_config */
    size_t size;     /* K_STR: the field's size */
    unsigned min;    /* K_UINT: smallest value */
    unsigned max;    /* K_UINT: largest value */
    const char *def; /* default, as text; NULL for none */
    const char *help;
};

#define F(field) offsetof(struct ag_config, field)
/* A number macro as text, for the help strings. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define S(field) sizeof(((struct ag_config *)0)->field)

static const struct flag flags[] = {
    {"listen", K_LISTEN, F(listen), 0, 0, 0, "127.0.0.1:8080",
     "address and port to serve HTTP on (HOST:PORT, [V6]:PORT)"},
    {"admin-listen", K_LISTEN, F(admin_listen), 0, 0, 0, "",
     "serve the admin API only here (HOST:PORT or unix:///path); empty: "
     "on --listen"},
    {"redis", K_REDIS, F(redis), 0, 0, 0, "redis://127.0.0.1:6379",
     "redis://[[user]:password@]host:port[/db], rediss://... (TLS) or "
     "unix:///path/to/socket"},
    {"redis-password-file", K_STR, F(redis_password_file),
     S(redis_password_file), 0, 0, "",
     "file holding the Redis password (mode 0600); wins over one in --redis"},
    {"redis-tls-ca-file", K_STR, F(redis.tls_ca_file), S(redis.tls_ca_file), 0,
     0, "", "CA bundle that verifies Redis's certificate; empty: the system's"},
    {"redis-tls-cert-file", K_STR, F(redis.tls_cert_file),
     S(redis.tls_cert_file), 0, 0, "",
     "client certificate for Redis (with --redis-tls-key-file)"},
    {"redis-tls-key-file", K_STR, F(redis.tls_key_file), S(redis.tls_key_file),
     0, 0, "", "the client certificate's private key"},
    {"redis-tls-server-name", K_STR, F(redis.tls_server_name),
     S(redis.tls_server_name), 0, 0, "",
     "name to send (SNI) and verify in Redis's certificate; empty: the host"},
    {"db", K_STR, F(db_path), S(db_path), 0, 0, AG_DB_DEFAULT_PATH,
     "SQLite policy database; created and migrated if absent"},
    {"secret-file", K_STR, F(secret_file), S(secret_file), 0, 0,
     "var/secret.key",
     "file of >= " STR(AG_SECRET_MIN) " random bytes keying identifier "
                                      "hashes (mode 0600)"},
    {"admin-token-file", K_STR, F(admin_token_file), S(admin_token_file), 0, 0,
     "", "file holding the admin API bearer token; empty: API off"},
    {"seed-dir", K_STR, F(seed_dir), S(seed_dir), 0, 0, "",
     "directory of *.json policies seeded into a new database; empty: the "
     "compiled-in policies/"},
    {"conn-timeout-s", K_UINT, F(conn_timeout_s), 0, 1, 3600, "10",
     "seconds a connection has for a whole request (headers and body) "
     "from its accept or its last response"},
    {"max-conns", K_UINT, F(max_conns), 0, 1, 100000, "1024",
     "concurrent HTTP connections at most"},
    /* Well above what a pooled auth backend holds open from one address,
     * well below --max-conns: one flooding client cannot take them all. */
    {"max-conns-per-ip", K_UINT, F(max_conns_per_ip), 0, 1, 100000, "256",
     "concurrent HTTP connections from one client address at most"},
    {"max-header-bytes", K_UINT, F(max_header_bytes), 0, 4096, 1048576, "16384",
     "memory per connection for request headers; more is a 431"},
    {"threads", K_UINT, F(threads), 0, 0, 256, "0",
     "HTTP worker threads; 0 = two per core"},

    {"redis-timeout-ms", K_UINT, F(redis_timeout_ms), 0, 1, 60000, "50",
     "Redis connect and command timeout in milliseconds"},
    {"phone-prefix-digits", K_UINT, F(phone_prefix_digits), 0, 2, 15, "7",
     "digits (country code included) that make a phone_prefix key"},
    /* Shorter than these would lump an ISP's customers into one key. */
    {"ipv6-ip-prefix", K_UINT, F(ipv6_ip_prefix), 0, 32, 128,
     STR(AG_IPV6_IP_PREFIX_DEFAULT),
     "bits of an IPv6 address its ip key counts (one host owns a /64)"},
    {"ipv6-group-prefix", K_UINT, F(ipv6_group_prefix), 0, 16, 128,
     STR(AG_IPV6_GROUP_PREFIX_DEFAULT),
     "bits of an IPv6 address its ip_prefix key counts (one site, a /48)"},
    {"ipv4-group-prefix", K_UINT, F(ipv4_group_prefix), 0, 8, 32,
     STR(AG_IPV4_GROUP_PREFIX_DEFAULT),
     "bits of an IPv4 address its ip_prefix key counts"},
    /* From a minute (tests, drills) to 400 days: a token is a remembered
     * login, not a permanent credential. */
    {"device-token-ttl-s", K_UINT, F(device_token_ttl_s), 0, 60, 34560000,
     STR(AG_DEVICE_TTL_DEFAULT_S),
     "seconds a device token from a successful login is trusted"},
    {"audit-retention-days", K_UINT, F(audit_retention_days), 0, 1, 36500,
     "365", "days audit rows are kept (the newest of each policy stays)"},
    {"deny-cache", K_ONOFF, F(deny_cache), 0, 0, 0, "on",
     "on: answer checks Redis denied from a local cache until Redis could "
     "allow them (no Redis call); off: ask Redis every time"},
    {"log-level", K_LEVEL, F(log_level), 0, 0, 0, "info",
     "debug, info, warn or error"},
    {"webhook-url", K_URLS, F(webhook_urls), 0, 0, 0, "",
     "http(s) URL POSTed each security event (repeatable, up to " STR(
         AG_CONFIG_WEBHOOKS_MAX) "; space-separated in one value)"},
    {"webhook-secret-file", K_STR, F(webhook_secret_file),
     S(webhook_secret_file), 0, 0, "",
     "file of >= " STR(AG_SECRET_MIN) " bytes keying the webhooks' "
                                      "HMAC-SHA256 signature (mode 0600)"},
    {"webhook-max-age-s", K_UINT, F(webhook_max_age_s), 0, 1, 604800, "3600",
     "seconds an event is retried to a failing receiver, then dropped"},
    {"events-max-len", K_UINT, F(events_max_len), 0, 100, 100000000, "10000",
     "security events the Redis stream keeps, about (XADD MAXLEN ~)"},
    {"config", K_STR, F(config_file), S(config_file), 0, 0, "",
     "file of key = value lines (the flags' names, # comments); flags and "
     "the environment win over it"},
    {"help", K_FLAG, F(help), 0, 0, 0, NULL, "print this help and exit"},
    {"version", K_FLAG, F(version), 0, 0, 0, NULL,
     "print the version and exit"},
};

#define NFLAGS (sizeof flags / sizeof flags[0])

static void env_name(const struct flag *f, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "ABUSEGUARD_");
    for (const char *s = f->name; *s && n + 1 < size; s++)
        out[n++] = *s == '-' ? '_' : (char)toupper((unsigned char)*s);
    out[n] = '\0';
}

void ag_config_usage(FILE *out)
{
    fprintf(out, "usage: abuseguard [flags]\n"
                 "       abuseguard policy list|get|put|delete|export|import "
                 "... --db PATH\n\nflags (environment variable, default):\n");
    for (size_t i = 0; i < NFLAGS; i++) {
        char env[64];
        env_name(&flags[i], env, sizeof env);
        fprintf(out, "  --%-18s %s\n  %-20s (%s", flags[i].name, flags[i].help,
                "", env);
        if (flags[i].def && *flags[i].def)
            fprintf(out, ", default %s", flags[i].def);
        fprintf(out, ")\n");
    }
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
    if (!*s || !isdigit((unsigned char)*s))
        return AG_EINVAL;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return AG_EINVAL;
    *out = (unsigned)v;
    return AG_OK;
}

static int parse_port(const char *s, int *port)
{
    unsigned v;
    if (parse_uint(s, 1, 65535, &v))
        return AG_EINVAL;
    *port = (int)v;
    return AG_OK;
}

static int parse_listen(const char *s, struct ag_listen_addr *out)
{
    memset(out, 0, sizeof *out);
    const char *unix_prefix = "unix://";
    if (strncmp(s, unix_prefix, strlen(unix_prefix)) == 0) {
        const char *path = s + strlen(unix_prefix);
        if (path[0] != '/' || strlen(path) >= sizeof out->path)
            return AG_EINVAL;
        strcpy(out->path, path);
        return AG_OK;
    }
    const char *colon = strrchr(s, ':');
    if (!colon)
        return AG_EINVAL;
    const char *host = s;
    size_t hlen = (size_t)(colon - s);
    if (hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']') {
        host++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof out->host)
        return AG_EINVAL;
    char h[sizeof out->host];
    memcpy(h, host, hlen);
    h[hlen] = '\0';
    if (strcmp(h, "localhost") == 0)
        strcpy(h, "127.0.0.1");
    unsigned char addr[16];
    if (inet_pton(AF_INET, h, addr) != 1 && inet_pton(AF_INET6, h, addr) != 1)
        return AG_EINVAL;
    if (parse_port(colon + 1, &out->port))
        return AG_EINVAL;
    strcpy(out->host, h);
    return AG_OK;
}

/* Adds each space-separated URL of val to c's webhooks: http:// or
 * https://, with a host. */
static int set_urls(struct ag_config *c, const struct flag *f, const char *val,
                    const char *origin, struct ag_error *err)
{
    const char *s = val;
    for (;;) {
        s += strspn(s, " \t");
        size_t n = strcspn(s, " \t");
        if (!n)
            return AG_OK;
        bool http = n > 7 && strncmp(s, "http://", 7) == 0;
        bool https = n > 8 && strncmp(s, "https://", 8) == 0;
        /* A host must follow the scheme: libcurl would otherwise fail
         * each delivery, long after the service started. */
        size_t host = http ? 7 : 8;
        if ((!http && !https) || s[host] == '/' || s[host] == ':')
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be an http:// or https:// URL "
                                "with a host",
                                origin, f->name);
        if (n >= AG_CONFIG_WEBHOOK_URL)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s is longer than %d bytes", origin,
                                f->name, AG_CONFIG_WEBHOOK_URL - 1);
        if (c->n_webhooks == AG_CONFIG_WEBHOOKS_MAX)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s is given more than %d times", origin,
                                f->name, AG_CONFIG_WEBHOOKS_MAX);
        memcpy(c->webhook_urls[c->n_webhooks], s, n);
        c->webhook_urls[c->n_webhooks++][n] = '\0';
        s += n;
    }
}

static int set_value(struct ag_config *c, const struct flag *f, const char *val,
                     const char *origin, struct ag_error *err)
{
    char *base = (char *)c;
    unsigned u;
    int level;
    switch (f->kind) {
    case K_STR:
        if (strlen(val) >= f->size)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: value too long for --%s", origin, f->name);
        strcpy(base + f->off, val);
        return AG_OK;
    case K_UINT:
        if (parse_uint(val, f->min, f->max, &u)) {
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be an integer from %u to %u",
                                origin, f->name, f->min, f->max);
        }
        memcpy(base + f->off, &u, sizeof u);
        return AG_OK;
    case K_LISTEN:
        if (f->off == F(admin_listen) && !*val) {
            c->admin_listen_set = false;
            return AG_OK;
        }
        if (parse_listen(val, (struct ag_listen_addr *)(base + f->off)))
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be a numeric HOST:PORT such as "
                                "127.0.0.1:8080 or [::1]:8080, or "
                                "unix:///absolute/path",
                                origin, f->name);
        if (f->off == F(admin_listen))
            c->admin_listen_set = true;
        return AG_OK;
    case K_REDIS:
        if (ag_redis_addr_parse(val, f->name, &c->redis, err)) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return ag_error_set(err, AG_EINVAL, f->name, "%s: %s", origin, why);
        }
        return AG_OK;
    case K_LEVEL:
        level = ag_log_level_parse(val);
        if (level < 0)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be debug, info, warn or error",
                                origin, f->name);
        c->log_level = level;
        return AG_OK;
    case K_FLAG:
        *(bool *)(void *)(base + f->off) = true;
        return AG_OK;
    case K_URLS:
        return set_urls(c, f, val, origin, err);
    case K_ONOFF:
        if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be on or off", origin, f->name);
        *(bool *)(void *)(base + f->off) = strcmp(val, "on") == 0;
        return AG_OK;
    }
    return AG_EINVAL;
}

static const struct flag *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (strlen(flags[i].name) == len &&
            strncmp(flags[i].name, name, len) == 0)
            return &flags[i];
    return NULL;
}

/* One key's value from the config file, and where it was. */
struct file_value {
    char val[1100];
    char origin[1100 + 32]; /* "<path> line <n>", for messages */
    bool set;
};

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Reads path's "key = value" lines into fv (one per flag); a one-line
 * error naming the line and key for anything else. */
static int read_config(const char *path, struct file_value *fv,
                       struct ag_error *err)
{
    FILE *in = fopen(path, "re");
    if (!in)
        return ag_error_set(err, AG_EINVAL, "config", "--config '%s': %s", path,
                            strerror(errno));
    char line[1200];
    int n = 0, rc = AG_OK;
    while (!rc && fgets(line, sizeof line, in)) {
        n++;
        if (!strchr(line, '\n') && !feof(in)) {
            rc = ag_error_set(err, AG_EINVAL, "config",
                              "%s line %d: longer than %zu bytes", path, n,
                              sizeof line - 2);
            break;
        }
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = ag_error_set(err, AG_EINVAL, "config",
                              "%s line %d: expected key = value", path, n);
            break;
        }
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        const struct flag *f = find_flag(key, strlen(key));
        if (!f || f->kind == K_FLAG || strcmp(f->name, "config") == 0) {
            rc = ag_error_set(err, AG_EINVAL, "config",
                              "%s line %d: unknown key '%.64s' (keys are the "
                              "flags' names, see --help)",
                              path, n, key);
            break;
        }
        struct file_value *v = &fv[f - flags];
        if (v->set) {
            rc = ag_error_set(err, AG_EINVAL, f->name,
                              "%s line %d: %s is set twice", path, n, f->name);
            break;
        }
        if (strlen(val) >= sizeof v->val) {
            rc = ag_error_set(err, AG_EINVAL, f->name,
                              "%s line %d: the value of %s is too long", path,
                              n, f->name);
            break;
        }
        strcpy(v->val, val);
        snprintf(v->origin, sizeof v->origin, "%s line %d", path, n);
        v->set = true;
    }
    if (!rc && ferror(in))
        rc = ag_error_set(err, AG_EINVAL, "config", "--config '%s': %s", path,
                          strerror(errno));
    fclose(in);
    return rc;
}

int ag_config_parse(struct ag_config *c, int argc, char **argv,
                    struct ag_error *err)
{
    memset(c, 0, sizeof *c);
    /* The command line first, so that a flag given there makes the
     * environment's value for it irrelevant, even a bad one. */
    const char *given[NFLAGS] = {0};
    /* The values of a repeated --webhook-url, joined by spaces. */
    char repeated[(AG_CONFIG_WEBHOOK_URL + 1) * AG_CONFIG_WEBHOOKS_MAX];
    repeated[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            return ag_error_set(err, AG_EINVAL, NULL,
                                "unexpected argument '%s'", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct flag *f = find_flag(name, nlen);
        if (!f)
            return ag_error_set(err, AG_EINVAL, NULL,
                                "unknown flag '%s' (see --help)", arg);
        const char *val = "";
        if (f->kind != K_FLAG) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return ag_error_set(err, AG_EINVAL, f->name,
                                    "--%s needs a value", f->name);
        }
        if (f->kind == K_URLS && given[f - flags]) {
            /* A repeated flag adds to the values before it. */
            size_t had = strlen(repeated);
            if (had + strlen(val) + 2 > sizeof repeated)
                return ag_error_set(err, AG_EINVAL, f->name,
                                    "--%s: too many values", f->name);
            if (given[f - flags] != repeated) {
                snprintf(repeated, sizeof repeated, "%s", given[f - flags]);
                had = strlen(repeated);
            }
            snprintf(repeated + had, sizeof repeated - had, " %s", val);
            val = repeated;
        }
        given[f - flags] = val;
    }
    /* The config file, from the flag or the environment: below both. */
    const struct flag *cf = find_flag("config", 6);
    const char *path = given[cf - flags];
    if (!path)
        path = getenv("ABUSEGUARD_CONFIG");
    struct file_value *fv = calloc(NFLAGS, sizeof *fv);
    if (!fv)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    if (path && *path && read_config(path, fv, err)) {
        free(fv);
        return AG_EINVAL;
    }
    int rc = AG_OK;
    for (size_t i = 0; i < NFLAGS && !rc; i++) {
        const struct flag *f = &flags[i];
        char env[64];
        env_name(f, env, sizeof env);
        const char *val = given[i];
        const char *origin = "command line";
        if (!val && f->kind != K_FLAG && (val = getenv(env)))
            origin = env;
        if (!val && fv[i].set) {
            val = fv[i].val;
            origin = fv[i].origin;
        }
        if (!val) {
            val = f->def;
            origin = "default";
        }
        if (val && set_value(c, f, val, origin, err))
            rc = AG_EINVAL;
    }
    free(fv);
    if (rc)
        return rc;
    static const struct {
        const char *flag;
        size_t off;
    } tls_flags[] = {
        {"redis-tls-ca-file", F(redis.tls_ca_file)},
        {"redis-tls-cert-file", F(redis.tls_cert_file)},
        {"redis-tls-key-file", F(redis.tls_key_file)},
        {"redis-tls-server-name", F(redis.tls_server_name)},
    };
    for (size_t i = 0; i < sizeof tls_flags / sizeof tls_flags[0]; i++)
        if (((const char *)c)[tls_flags[i].off] && !c->redis.tls)
            return ag_error_set(err, AG_EINVAL, tls_flags[i].flag,
                                "--%s needs a rediss:// --redis URL",
                                tls_flags[i].flag);
    if (c->redis.user[0] && !c->redis.password[0] && !c->redis_password_file[0])
        return ag_error_set(err, AG_EINVAL, "redis",
                            "--redis: the user needs a password, in the URL "
                            "or in --redis-password-file");
    if (!c->redis.tls_cert_file[0] != !c->redis.tls_key_file[0])
        return ag_error_set(err, AG_EINVAL,
                            c->redis.tls_cert_file[0] ? "redis-tls-key-file"
                                                      : "redis-tls-cert-file",
                            "--redis-tls-cert-file and --redis-tls-key-file "
                            "go together");
    if (c->n_webhooks && !c->webhook_secret_file[0])
        return ag_error_set(err, AG_EINVAL, "webhook-secret-file",
                            "--webhook-url needs --webhook-secret-file (the "
                            "key of its signatures)");
    if (!c->n_webhooks && c->webhook_secret_file[0])
        return ag_error_set(err, AG_EINVAL, "webhook-url",
                            "--webhook-secret-file is given but no "
                            "--webhook-url to sign for");
    /* The group holds the addresses it groups: a longer group prefix than
     * the ip key's would split one key over several groups. */
    if (c->ipv6_group_prefix > c->ipv6_ip_prefix)
        return ag_error_set(err, AG_EINVAL, "ipv6-group-prefix",
                            "--ipv6-group-prefix (%u) must not be longer "
                            "than --ipv6-ip-prefix (%u)",
                            c->ipv6_group_prefix, c->ipv6_ip_prefix);
    return AG_OK;
}

static int read_file(const char *path, unsigned char *buf, size_t cap,
                     size_t *len, bool need_private, const char *what,
                     struct ag_error *err)
{
    /* O_NONBLOCK so that opening a FIFO returns at once instead of waiting
     * for a writer that may never come; the type check below then refuses
     * it. On a regular file the flag changes nothing. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return ag_error_set(err, AG_EIO, what + 2, "%s '%s': %s", what, path,
                            strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return ag_error_set(err, AG_EINVAL, what + 2,
                            "%s '%s' is not a regular file", what, path);
    }
    if (need_private && (st.st_mode & 077)) {
        close(fd);
        return ag_error_set(err, AG_EINVAL, what + 2,
                            "%s '%s' is accessible by group or others (mode "
                            "%03o); run: chmod 600 %s",
                            what, path, (unsigned)(st.st_mode & 0777), path);
    }
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return ag_error_set(err, AG_EIO, what + 2, "%s '%s': %s", what,
                                path, strerror(errno));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap)
            break;
    }
    close(fd);
    *len = n;
    return AG_OK;
}

int ag_config_read_secret_for(const char *flag, const char *path,
                              unsigned char *key, size_t *len,
                              struct ag_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "--%s", flag);
    /* One byte past the cap tells a file that is too long from one that
     * fits exactly: a longer secret is refused, not cut short. */
    unsigned char buf[AG_SECRET_MAX + 1];
    int rc = read_file(path, buf, sizeof buf, len, true, what, err);
    if (rc == AG_OK && *len > AG_SECRET_MAX) {
        rc = ag_error_set(err, AG_EINVAL, flag,
                          "%s '%s' is longer than %d bytes", what, path,
                          AG_SECRET_MAX);
    }
    if (rc == AG_OK)
        memcpy(key, buf, *len);
    sodium_memzero(buf, sizeof buf);
    if (rc)
        return rc;

    if (*len < AG_SECRET_MIN) {
        return ag_error_set(err, AG_EINVAL, flag,
                            "%s '%s' holds %zu bytes; at least %d "
                            "random bytes are needed (head -c %d /dev/urandom "
                            "> %s)",
                            what, path, *len, AG_SECRET_MIN, AG_SECRET_MIN,
                            path);
    }
    /* One byte repeated (a file of zeros from a botched copy, or from
     * head -c on /dev/zero) is long enough but is no secret: anyone can
     * guess it and test a Redis dump against a list of phone numbers. */
    size_t i = 1;
    while (i < *len && key[i] == key[0])
        i++;
    if (i == *len) {
        unsigned byte = key[0];
        sodium_memzero(key, *len);
        return ag_error_set(err, AG_EINVAL, flag,
                            "%s '%s' is one byte (0x%02x) repeated; "
                            "fill it with random bytes (head -c %d "
                            "/dev/urandom > %s)",
                            what, path, byte, AG_SECRET_MIN, path);
    }
    return AG_OK;
}

int ag_config_read_secret(const char *path, unsigned char *key, size_t *len,
                          struct ag_error *err)
{
    return ag_config_read_secret_for("secret-file", path, key, len, err);
}

int ag_config_read_redis_password(struct ag_config *c, struct ag_error *err)
{
    if (!c->redis_password_file[0])
        return AG_OK;
    char buf[sizeof c->redis.password + 1024];
    size_t len = 0;
    int rc = read_file(c->redis_password_file, (unsigned char *)buf, sizeof buf,
                       &len, true, "--redis-password-file", err);
    while (rc == AG_OK && len > 0 && isspace((unsigned char)buf[len - 1]))
        len--;
    if (rc == AG_OK &&
        (len == 0 || len >= sizeof c->redis.password || memchr(buf, '\0', len)))
        rc = ag_error_set(err, AG_EINVAL, "redis-password-file",
                          "--redis-password-file '%s' must hold 1 to %zu "
                          "bytes of password text",
                          c->redis_password_file, sizeof c->redis.password - 1);
    if (rc == AG_OK) {
        memcpy(c->redis.password, buf, len);
        c->redis.password[len] = '\0';
    }
    sodium_memzero(buf, sizeof buf);
    return rc;
}

int ag_config_read_token(const char *path, char *token, struct ag_error *err)
{
    /* Read well past the cap, so that a long file is refused rather than
     * cut short, whatever white space trails the token. */
    char buf[AG_TOKEN_MAX + 1024];
    size_t len = 0;
    int rc = read_file(path, (unsigned char *)buf, sizeof buf, &len, false,
                       "--admin-token-file", err);
    if (rc)
        return rc;
    while (len > 0 && isspace((unsigned char)buf[len - 1]))
        len--;
    if (len < AG_TOKEN_MIN || len > AG_TOKEN_MAX || memchr(buf, '\0', len)) {
        return ag_error_set(
            err, AG_EINVAL, "admin-token-file",
            "--admin-token-file '%s' must hold %d to %d bytes of token "
            "text",
            path, AG_TOKEN_MIN, AG_TOKEN_MAX);
    }
    memcpy(token, buf, len);
    token[len] = '\0';
    return AG_OK;
}
