/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flag table: every flag's name, field, bounds, default and help line,
 * and what each kind of value means (a number in range, a listen address,
 * a Redis URL handed to ag_redis_addr_parse, webhook URLs). Where a value
 * comes from, and the checks across flags, are ag_config.c's.
 */
#include "ag_config_impl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_db.h"
#include "ag_device.h"
#include "ag_error.h"
#include "ag_fleet.h"
#include "ag_identity.h"
#include "ag_log.h"
#include "ag_ocsf.h"
#include "ag_parse.h"
#include "ag_redis_addr.h"
#include "ag_webhook.h"

#define F(field) offsetof(struct ag_config, field)
/* A number macro as text, for the help strings. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define S(field) sizeof(((struct ag_config *)0)->field)

const struct ag_config__flag ag_config__flags[] = {
    {"listen", AG_CONFIG__LISTEN, F(listen), 0, 0, 0, "127.0.0.1:8080",
     "address and port to serve HTTP on (HOST:PORT, [V6]:PORT)"},
    {"admin-listen", AG_CONFIG__LISTEN, F(admin_listen), 0, 0, 0, "",
     "serve the admin API only here (HOST:PORT or unix:///path); empty: "
     "on --listen"},
    {"redis", AG_CONFIG__REDIS, F(redis), 0, 0, 0, "redis://127.0.0.1:6379",
     "redis://[[user]:password@]host:port[/db], rediss://... (TLS) or "
     "unix:///path/to/socket"},
    {"redis-password-file", AG_CONFIG__STR, F(redis_password_file),
     S(redis_password_file), 0, 0, "",
     "file holding the Redis password (mode 0600); wins over one in --redis"},
    {"redis-tls-ca-file", AG_CONFIG__STR, F(redis.tls_ca_file),
     S(redis.tls_ca_file), 0, 0, "",
     "CA bundle that verifies Redis's certificate; empty: the system's"},
    {"redis-tls-cert-file", AG_CONFIG__STR, F(redis.tls_cert_file),
     S(redis.tls_cert_file), 0, 0, "",
     "client certificate for Redis (with --redis-tls-key-file)"},
    {"redis-tls-key-file", AG_CONFIG__STR, F(redis.tls_key_file),
     S(redis.tls_key_file), 0, 0, "", "the client certificate's private key"},
    {"redis-tls-server-name", AG_CONFIG__STR, F(redis.tls_server_name),
     S(redis.tls_server_name), 0, 0, "",
     "name to send (SNI) and verify in Redis's certificate; empty: the host"},
    {"db", AG_CONFIG__STR, F(db_path), S(db_path), 0, 0, AG_DB_DEFAULT_PATH,
     "SQLite policy database; created and migrated if absent"},
    {"secret-file", AG_CONFIG__STR, F(secret_file), S(secret_file), 0, 0,
     "var/secret.key",
     "file of >= " STR(AG_SECRET_MIN) " random bytes keying identifier "
                                      "hashes (mode 0600)"},
    {"admin-token-file", AG_CONFIG__STR, F(admin_token_file),
     S(admin_token_file), 0, 0, "",
     "file holding the admin API bearer token; empty: API off"},
    {"seed-dir", AG_CONFIG__STR, F(seed_dir), S(seed_dir), 0, 0, "",
     "directory of *.json policies seeded into a new database; empty: the "
     "compiled-in policies/"},
    {"conn-timeout-s", AG_CONFIG__UINT, F(conn_timeout_s), 0, 1, 3600, "10",
     "seconds a connection has for a whole request (headers and body) "
     "from its accept or its last response"},
    {"max-conns", AG_CONFIG__UINT, F(max_conns), 0, 1, 100000, "1024",
     "concurrent HTTP connections at most"},
    /* Well above what a pooled auth backend holds open from one address,
     * well below --max-conns: one flooding client cannot take them all. */
    {"max-conns-per-ip", AG_CONFIG__UINT, F(max_conns_per_ip), 0, 1, 100000,
     "256", "concurrent HTTP connections from one client address at most"},
    {"max-header-bytes", AG_CONFIG__UINT, F(max_header_bytes), 0, 4096, 1048576,
     "16384", "memory per connection for request headers; more is a 431"},
    {"threads", AG_CONFIG__UINT, F(threads), 0, 0, 256, "0",
     "check loops (threads); 0 = one per core"},

    {"redis-timeout-ms", AG_CONFIG__UINT, F(redis_timeout_ms), 0, 1, 60000,
     "50", "Redis connect and command timeout in milliseconds"},
    {"phone-prefix-digits", AG_CONFIG__UINT, F(phone_prefix_digits), 0, 2, 15,
     "7", "digits (country code included) that make a phone_prefix key"},
    /* Shorter than these would lump an ISP's customers into one key. */
    {"ipv6-ip-prefix", AG_CONFIG__UINT, F(ipv6_ip_prefix), 0, 32, 128,
     STR(AG_IPV6_IP_PREFIX_DEFAULT),
     "bits of an IPv6 address its ip key counts (one host owns a /64)"},
    {"ipv6-group-prefix", AG_CONFIG__UINT, F(ipv6_group_prefix), 0, 16, 128,
     STR(AG_IPV6_GROUP_PREFIX_DEFAULT),
     "bits of an IPv6 address its ip_prefix key counts (one site, a /48)"},
    {"ipv4-group-prefix", AG_CONFIG__UINT, F(ipv4_group_prefix), 0, 8, 32,
     STR(AG_IPV4_GROUP_PREFIX_DEFAULT),
     "bits of an IPv4 address its ip_prefix key counts"},
    /* From a minute (tests, drills) to 400 days: a token is a remembered
     * login, not a permanent credential. */
    {"device-token-ttl-s", AG_CONFIG__UINT, F(device_token_ttl_s), 0, 60,
     34560000, STR(AG_DEVICE_TTL_DEFAULT_S),
     "seconds a device token from a successful login is trusted"},
    {"audit-retention-days", AG_CONFIG__UINT, F(audit_retention_days), 0, 1,
     36500, "365",
     "days audit rows are kept (the newest of each policy stays)"},
    {"deny-cache", AG_CONFIG__ONOFF, F(deny_cache), 0, 0, 0, "on",
     "on: answer checks Redis denied from a local cache until Redis could "
     "allow them (no Redis call); off: ask Redis every time"},
    {"fleet", AG_CONFIG__ONOFF, F(fleet), 0, 0, 0, "on",
     "on: policies, lists and the audit are one set for every instance on "
     "this Redis with this --fleet-name (docs/operations.md); off: this "
     "instance's database alone"},
    {"fleet-name", AG_CONFIG__STR, F(fleet_name), S(fleet_name), 0, 0,
     AG_FLEET_NAME_DEFAULT,
     "the fleet this instance belongs to: 1 to " STR(
         AG_FLEET_NAME_MAX) " of A-Z a-z 0-9 _ . - (two fleets may share a "
                            "Redis)"},
    {"fleet-poll-ms", AG_CONFIG__UINT, F(fleet_poll_ms), 0, 100, 60000,
     STR(AG_FLEET_POLL_MS),
     "milliseconds between an instance's looks at its fleet (changes "
     "arrive at once through Redis pub/sub; the look is the backstop, and "
     "the heartbeat)"},
    {"fleet-lag-event-s", AG_CONFIG__UINT, F(fleet_lag_event_s), 0, 1, 86400,
     "60",
     "seconds behind the fleet before an instance raises "
     "fleet_lagging"},
    {"challenge-pass", AG_CONFIG__WORD, F(strict_pass), 0, 0, 0, "lenient",
     "what a check's challenge_passed takes: strict, only the "
     "challenge_nonce of the answer that asked for the challenge; lenient, "
     "true too (deprecated: it proves nothing)"},
    {"log-level", AG_CONFIG__LEVEL, F(log_level), 0, 0, 0, "info",
     "debug, info, warn or error"},
    {"webhook-url", AG_CONFIG__URLS, F(webhook_urls), 0, 0, 0, "",
     "http(s) URL POSTed each security event (repeatable, up to " STR(
         AG_CONFIG_WEBHOOKS_MAX) "; space-separated in one value)"},
    {"webhook-secret-file", AG_CONFIG__STR, F(webhook_secret_file),
     S(webhook_secret_file), 0, 0, "",
     "file of >= " STR(AG_SECRET_MIN) " bytes keying the webhooks' "
                                      "HMAC-SHA256 signature (mode 0600)"},
    {"webhook-max-age-s", AG_CONFIG__UINT, F(webhook_max_age_s), 0, 1, 604800,
     "3600", "seconds an event is retried to a failing receiver, then dropped"},
    {"webhook-format", AG_CONFIG__WORD, F(webhook_ocsf), 0, 0, 0, "json",
     "the webhooks' bodies: json (abuseguard's events) or ocsf "
     "(OCSF " AG_OCSF_VERSION " Authentication, Detection Finding...: "
     "docs/events.md)"},
    {"events-max-len", AG_CONFIG__UINT, F(events_max_len), 0, 100, 100000000,
     "10000", "security events the Redis stream keeps, about (XADD MAXLEN ~)"},
    {"pwned-file", AG_CONFIG__PATHS, F(pwned_files), 0, 0, 0, "",
     "breached-password corpus (abuseguard pwned import) served at GET "
     "/range/{prefix}; repeatable: one SHA-1 and one NTLM file at most"},
    {"geoip-file", AG_CONFIG__STR, F(geoip_file), S(geoip_file), 0, 0, "",
     "MMDB country or city database (GeoLite2, DB-IP Lite): the address's "
     "country for ip_country keys and the answers' network; reloaded "
     "when another file is renamed over it"},
    {"asn-file", AG_CONFIG__STR, F(asn_file), S(asn_file), 0, 0, "",
     "MMDB ASN database (GeoLite2-ASN, DB-IP ASN Lite, IPinfo Lite): the "
     "address's autonomous system for asn keys; reloaded like geoip-file"},
    {"ip-list", AG_CONFIG__IPLISTS, F(ip_lists), 0, 0, 0, "",
     "NAME=PATH or NAME:FORMAT=PATH (plain, spamhaus, aws, gcp; detected "
     "by default): a named IP set (a Tor exit list, a FireHOL netset, "
     "cloud ranges), repeatable up to " STR(AG_CONFIG_IP_LISTS)},
    {"history-days", AG_CONFIG__UINT, F(history_days), 0, 0, 400, "90",
     "days a user's usual places (countries, networks, the last success's "
     "coarse place and time) are kept in Redis after their last success; "
     "0: none kept, and no new-place signals"},
    {"anonymising-lists", AG_CONFIG__STR, F(anonymising_lists),
     S(anonymising_lists), 0, 0, "",
     "--ip-list names (comma-separated) of VPN, Tor or hosting ranges: "
     "their addresses give no travel verdict and are a risk signal; "
     "empty: every --ip-list"},
    {"travel-speed-kmh", AG_CONFIG__UINT, F(travel_speed_kmh), 0, 100, 20000,
     "1000", "the speed beyond which two logins' journey is impossible"},
    {"config", AG_CONFIG__STR, F(config_file), S(config_file), 0, 0, "",
     "file of key = value lines (the flags' names, # comments); flags and "
     "the environment win over it"},
    {"help", AG_CONFIG__SWITCH, F(help), 0, 0, 0, NULL,
     "print this help and exit"},
    {"version", AG_CONFIG__SWITCH, F(version), 0, 0, 0, NULL,
     "print the version and exit"},
};

/* The two words of each AG_CONFIG__WORD flag: the first sets it true. */
static const struct {
    const char *flag, *yes, *no;
} words[] = {
    {"challenge-pass", "strict", "lenient"},
    {"webhook-format", "ocsf", "json"},
};

static int set_word(const struct ag_config__flag *f, char *base,
                    const char *val, const char *origin, struct ag_error *err)
{
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (strcmp(words[i].flag, f->name) != 0)
            continue;
        if (strcmp(val, words[i].yes) != 0 && strcmp(val, words[i].no) != 0)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be %s or %s", origin, f->name,
                                words[i].yes, words[i].no);
        *(bool *)(void *)(base + f->off) = strcmp(val, words[i].yes) == 0;
        return AG_OK;
    }
    return AG_EINVAL;
}

const size_t ag_config__nflags =
    sizeof ag_config__flags / sizeof ag_config__flags[0];
_Static_assert(sizeof ag_config__flags / sizeof ag_config__flags[0] <=
                   AG_CONFIG__FLAGS_MAX,
               "AG_CONFIG__FLAGS_MAX is too small for the flag table");

void ag_config__env_name(const struct ag_config__flag *f, char *out,
                         size_t size)
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
                 "... --db PATH\n"
                 "       abuseguard pwned import|check|verify ... "
                 "(breached passwords)\n"
                 "       abuseguard healthcheck [--ready] [flags] "
                 "(for probes)\n\nflags (environment variable, "
                 "default):\n");
    for (size_t i = 0; i < ag_config__nflags; i++) {
        char env[64];
        ag_config__env_name(&ag_config__flags[i], env, sizeof env);
        fprintf(out, "  --%-18s %s\n  %-20s (%s", ag_config__flags[i].name,
                ag_config__flags[i].help, "", env);
        if (ag_config__flags[i].def && *ag_config__flags[i].def)
            fprintf(out, ", default %s", ag_config__flags[i].def);
        fprintf(out, ")\n");
    }
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
    if (ag_parse_port(colon + 1, &out->port))
        return AG_EINVAL;
    strcpy(out->host, h);
    return AG_OK;
}

/* Adds each space-separated URL of val to c's webhooks, each judged by
 * ag_webhook_url_check: a URL that can never be delivered to stops the
 * start, instead of failing every event until it ages out. */
static int set_urls(struct ag_config *c, const struct ag_config__flag *f,
                    const char *val, const char *origin, struct ag_error *err)
{
    const char *s = val;
    for (;;) {
        s += strspn(s, " \t");
        size_t n = strcspn(s, " \t");
        if (!n)
            return AG_OK;
        if (n >= AG_CONFIG_WEBHOOK_URL)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s is longer than %d bytes", origin,
                                f->name, AG_CONFIG_WEBHOOK_URL - 1);
        if (c->n_webhooks == AG_CONFIG_WEBHOOKS_MAX)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s is given more than %d times", origin,
                                f->name, AG_CONFIG_WEBHOOKS_MAX);
        char *url = c->webhook_urls[c->n_webhooks];
        memcpy(url, s, n);
        url[n] = '\0';
        bool credential;
        if (ag_webhook_url_check(url, f->name, &credential, err)) {
            /* Named by its number, as the logs name a receiver: the URL
             * may hold a credential. */
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            sodium_memzero(url, n);
            return ag_error_set(err, AG_EINVAL, f->name, "%s: %s (receiver %u)",
                                origin, why, c->n_webhooks + 1);
        }
        c->n_webhooks++;
        s += n;
    }
}

/* Adds each space-separated word of val to a repeatable flag's slots:
 * max of slot_size bytes at slots, *n of them used; why_max follows the
 * refusal past max. */
static int add_words(char *slots, size_t slot_size, unsigned *n, unsigned max,
                     const char *why_max, const struct ag_config__flag *f,
                     const char *val, const char *origin, struct ag_error *err)
{
    const char *s = val;
    for (;;) {
        s += strspn(s, " \t");
        size_t len = strcspn(s, " \t");
        if (!len)
            return AG_OK;
        if (len >= slot_size)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s is longer than %zu bytes", origin,
                                f->name, slot_size - 1);
        if (*n == max)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s is given more than %u times%s",
                                origin, f->name, max, why_max);
        char *slot = slots + (size_t)(*n)++ * slot_size;
        memcpy(slot, s, len);
        slot[len] = '\0';
        s += len;
    }
}

/* Adds each space-separated path of val to c's corpora. */
static int set_paths(struct ag_config *c, const struct ag_config__flag *f,
                     const char *val, const char *origin, struct ag_error *err)
{
    return add_words(c->pwned_files[0], sizeof c->pwned_files[0],
                     &c->n_pwned_files, AG_CONFIG_PWNED_FILES,
                     " (one SHA-1 and one NTLM corpus at most)", f, val, origin,
                     err);
}

/* Adds each space-separated NAME=PATH of val to c's IP lists. */
static int set_ip_lists(struct ag_config *c, const struct ag_config__flag *f,
                        const char *val, const char *origin,
                        struct ag_error *err)
{
    return add_words(c->ip_lists[0], sizeof c->ip_lists[0], &c->n_ip_lists,
                     AG_CONFIG_IP_LISTS, "", f, val, origin, err);
}

bool ag_config__holds_credential(const struct ag_config__flag *f,
                                 const char *val)
{
    bool has = false;
    if (f->kind == AG_CONFIG__REDIS) {
        /* The Redis parser's own reading; a URL it refuses is judged by
         * its '@' (which a refusal on its own would not show). A user
         * alone is an ACL user, whose password is in its own file. */
        struct ag_redis_addr *a = calloc(1, sizeof *a);
        struct ag_error e;
        if (!a || ag_redis_addr_parse(val, f->name, a, &e))
            has = strchr(val, '@') != NULL;
        else
            has = a->password[0] != '\0';
        if (a)
            sodium_memzero(a, sizeof *a);
        free(a);
    } else if (f->kind == AG_CONFIG__URLS) {
        char url[AG_CONFIG_WEBHOOK_URL];
        for (const char *s = val + strspn(val, " \t"); *s && !has;
             s += strspn(s, " \t")) {
            size_t n = strcspn(s, " \t");
            struct ag_error e;
            bool cred = false;
            if (n < sizeof url) {
                memcpy(url, s, n);
                url[n] = '\0';
            }
            if (n >= sizeof url ||
                ag_webhook_url_check(url, f->name, &cred, &e))
                cred = memchr(s, '@', n) != NULL;
            has = cred;
            s += n;
        }
        sodium_memzero(url, sizeof url);
    }
    return has;
}

int ag_config__set_value(struct ag_config *c, const struct ag_config__flag *f,
                         const char *val, const char *origin,
                         struct ag_error *err)
{
    char *base = (char *)c;
    unsigned u;
    int level;
    switch (f->kind) {
    case AG_CONFIG__STR:
        if (strlen(val) >= f->size)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: value too long for --%s", origin, f->name);
        strcpy(base + f->off, val);
        return AG_OK;
    case AG_CONFIG__UINT:
        if (ag_parse_uint(val, f->min, f->max, &u)) {
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be an integer from %u to %u",
                                origin, f->name, f->min, f->max);
        }
        memcpy(base + f->off, &u, sizeof u);
        return AG_OK;
    case AG_CONFIG__LISTEN:
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
    case AG_CONFIG__REDIS:
        if (ag_redis_addr_parse(val, f->name, &c->redis, err)) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return ag_error_set(err, AG_EINVAL, f->name, "%s: %s", origin, why);
        }
        return AG_OK;
    case AG_CONFIG__LEVEL:
        level = ag_log_level_parse(val);
        if (level < 0)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be debug, info, warn or error",
                                origin, f->name);
        c->log_level = level;
        return AG_OK;
    case AG_CONFIG__SWITCH:
        *(bool *)(void *)(base + f->off) = true;
        return AG_OK;
    case AG_CONFIG__URLS:
        return set_urls(c, f, val, origin, err);
    case AG_CONFIG__PATHS:
        return set_paths(c, f, val, origin, err);
    case AG_CONFIG__IPLISTS:
        return set_ip_lists(c, f, val, origin, err);
    case AG_CONFIG__ONOFF:
        if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0)
            return ag_error_set(err, AG_EINVAL, f->name,
                                "%s: --%s must be on or off", origin, f->name);
        *(bool *)(void *)(base + f->off) = strcmp(val, "on") == 0;
        return AG_OK;
    case AG_CONFIG__WORD:
        return set_word(f, base, val, origin, err);
    }
    return AG_EINVAL;
}

const struct ag_config__flag *ag_config__find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < ag_config__nflags; i++)
        if (strlen(ag_config__flags[i].name) == len &&
            strncmp(ag_config__flags[i].name, name, len) == 0)
            return &ag_config__flags[i];
    return NULL;
}
