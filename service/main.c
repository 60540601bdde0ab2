/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abuseguard: wiring only. Reads the configuration, prepares the policy
 * database, starts the policy watcher, the store and the HTTP server, and
 * serves until SIGTERM or SIGINT, then drains and exits 0. Exit 2 is a
 * configuration error, 1 any other failure to start.
 * "abuseguard policy ..." is the operators' CLI (ag_cli), and
 * "abuseguard pwned ..." the breached-password corpus's (ag_cli_pwned.c),
 * "abuseguard fleet ..." the fleet's (ag_cli_fleet.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_admin.h"
#include "ag_admin_routes.h"
#include "ag_cli.h"
#include "ag_config.h"
#include "ag_db.h"
#include "ag_deny_cache.h"
#include "ag_endpoint.h"
#include "ag_error.h"
#include "ag_events.h"
#include "ag_fleet.h"
#include "ag_http.h"
#include "ag_log.h"
#include "ag_metrics.h"
#include "ag_network.h"
#include "ag_ocsf.h"
#include "ag_policy.h"
#include "ag_pwned.h"
#include "ag_pwned_live.h"
#include "ag_redis_sub.h"
#include "ag_reload.h"
#include "ag_service.h"
#include "ag_shields.h"
#include "ag_store.h"
#include "ag_store_cluster.h"
#include "ag_store_redis.h"
#include "ag_webhook.h"

#define EXIT_CONFIG 2
/* How often each instance asks SQLite whether the policies changed. */
#define RELOAD_INTERVAL_MS 200

/* The HTTP layer's options, from the configuration's. */
static void http_listen(const struct ag_listen_addr *a,
                        struct ag_http_listen *out)
{
    snprintf(out->host, sizeof out->host, "%s", a->host);
    out->port = a->port;
    snprintf(out->path, sizeof out->path, "%s", a->path);
}

static void http_options(const struct ag_config *cfg, struct ag_http_options *o)
{
    *o = (struct ag_http_options){
        .admin_apart = cfg->admin_listen_set,
        .conn_timeout_s = cfg->conn_timeout_s,
        .max_conns = cfg->max_conns,
        .max_conns_per_ip = cfg->max_conns_per_ip,
        .max_header_bytes = cfg->max_header_bytes,
        .threads = cfg->threads,
    };
    http_listen(&cfg->listen, &o->listen);
    http_listen(&cfg->admin_listen, &o->admin_listen);
}

/* The watcher's new rulesets go to the service. */
static void publish(void *svc, struct ag_ruleset *set)
{
    ag_service_set_ruleset(svc, set);
}

/* The deny cache hears, through its subscriber, the keys other instances
 * cleared; it answers only while it hears them all. */
static void deny_cache_message(void *cache, const char *key, size_t len)
{
    (void)len;
    ag_deny_cache_invalidate(cache, key);
}

static void deny_cache_live(void *cache, bool live)
{
    ag_deny_cache_set_live(cache, live);
}

/* The fleet hears through its subscriber that a record was appended. */
static void fleet_message(void *fleet, const char *text, size_t len)
{
    (void)text;
    (void)len;
    ag_fleet_wake(fleet);
}

static void fleet_live(void *fleet, bool live)
{
    ag_fleet_channel(fleet, live);
}

/* The operator files this instance serves, for its fleet heartbeat: each
 * corpus's mode, size and checksum, so that an instance that loaded
 * another shows. */
/* The network files of cfg (--geoip-file, --asn-file, --ip-list). */
static int start_network(struct ag_config *cfg, struct ag_metrics *metrics,
                         struct ag_network **out, struct ag_error *err)
{
    struct ag_network_list_opt lists[AG_CONFIG_IP_LISTS];
    for (unsigned i = 0; i < cfg->n_ip_lists; i++)
        if (ag_network_list_opt_parse(cfg->ip_lists[i], &lists[i], err))
            return AG_EINVAL;
    return ag_network_start(
        &(struct ag_network_opts){
            .geoip_path = cfg->geoip_file[0] ? cfg->geoip_file : NULL,
            .asn_path = cfg->asn_file[0] ? cfg->asn_file : NULL,
            .lists = lists,
            .nlists = cfg->n_ip_lists,
            .metrics = metrics,
            .interval_ms = AG_NETWORK_INTERVAL_MS},
        out, err);
}

/* The lists --anonymising-lists names, as bits of the network's lists
 * (every list when it names none); a name that is no --ip-list's is
 * refused on stderr. */
static int anonymising_mask(const struct ag_config *cfg,
                            const struct ag_network *network, uint32_t *out)
{
    *out = 0;
    char names[sizeof cfg->anonymising_lists];
    memcpy(names, cfg->anonymising_lists, sizeof names);
    char *save = NULL;
    for (char *w = strtok_r(names, ", ", &save); w;
         w = strtok_r(NULL, ", ", &save)) {
        int i = ag_network_list_index(network, w);
        if (i < 0) {
            fprintf(stderr,
                    "abuseguard: anonymising-lists: \"%s\" is no --ip-list "
                    "name\n",
                    w);
            return AG_EINVAL;
        }
        *out |= 1u << i;
    }
    if (!*out)
        *out = UINT32_MAX;
    return AG_OK;
}

static void stop_files(struct ag_pwned_live *pwned, struct ag_network *network)
{
    ag_network_stop(network);
    ag_pwned_live_stop(pwned);
}

static json_t *loaded_files(void *pwned)
{
    json_t *out = json_array();
    const enum ag_pwned_mode modes[] = {AG_PWNED_SHA1, AG_PWNED_NTLM};
    for (size_t i = 0; out && i < 2; i++) {
        struct ag_pwned_hold *h = ag_pwned_live_hold(pwned, modes[i]);
        if (!h)
            continue;
        const struct ag_pwned_info *in = ag_pwned_info(ag_pwned_hold_corpus(h));
        char sum[2 * AG_PWNED_CHECKSUM_LEN + 1];
        sodium_bin2hex(sum, sizeof sum, in->checksum, sizeof in->checksum);
        json_t *o =
            json_pack("{s:s, s:s, s:I, s:I, s:s}", "kind", "pwned", "mode",
                      in->mode == AG_PWNED_SHA1 ? "sha1" : "ntlm", "entries",
                      (json_int_t)in->entries, "created_s",
                      (json_int_t)in->created_s, "checksum", sum);
        ag_pwned_hold_release(h);
        if (!o || json_array_append_new(out, o)) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/* The metrics know no endpoint: they are handed the names, in the enum's
 * order, so that the service's enum ag_endpoint is their index. */
static void name_endpoints(struct ag_metrics *m)
{
    const char *names[AG_EP_COUNT];
    for (int e = 0; e < AG_EP_COUNT; e++)
        names[e] = ag_endpoint_name((enum ag_endpoint)e);
    ag_metrics_name_endpoints(m, names, AG_EP_COUNT);
}

int main(int argc, char **argv)
{

    if (argc > 1 && strcmp(argv[1], "policy") == 0)
        return ag_cli_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "lua") == 0)
        return ag_cli_lua_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "pwned") == 0)
        return ag_cli_pwned_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "fleet") == 0)
        return ag_cli_fleet_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "healthcheck") == 0)
        return ag_cli_health_main(argc - 1, argv + 1);
    struct ag_config cfg;
    struct ag_error cerr;
    if (ag_config_parse(&cfg, argc, argv, &cerr)) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        return EXIT_CONFIG;
    }
    if (cfg.help) {
        ag_config_usage(stdout);
        return 0;
    }
    if (cfg.version) {
        printf("abuseguard %s%s%s\n", AG_VERSION, AG_GIT_DESCRIBE[0] ? " " : "",
               AG_GIT_DESCRIBE);
        return 0;
    }
    ag_log_set_level((enum ag_log_level)cfg.log_level);
    struct ag_http_options hopts;
    http_options(&cfg, &hopts);
    /* Now, so that a limit too low for --max-conns stops the start before
     * anything is opened, rather than refusing clients under load. */
    int rc = ag_http_reserve_fds(&hopts, &cerr);
    if (rc) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        return rc == AG_EINVAL ? EXIT_CONFIG : 1;
    }
    if (sodium_init() < 0) {
        fprintf(stderr, "abuseguard: libsodium failed to initialise\n");
        return 1;
    }

    if (ag_config_read_redis_password(&cfg, &cerr)) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        return EXIT_CONFIG;
    }
    unsigned char secret[AG_SECRET_MAX];
    size_t secret_len;
    if (ag_config_read_secret(cfg.secret_file, secret, &secret_len, &cerr)) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        return EXIT_CONFIG;
    }
    struct ag_hasher hasher;
    ag_hasher_init(&hasher, secret, secret_len);
    sodium_memzero(secret, sizeof secret);

    /* Kept for the admin API; read now so a bad file stops the start. */
    static char admin_token[AG_TOKEN_MAX + 1];
    if (cfg.admin_token_file[0] &&
        ag_config_read_token(cfg.admin_token_file, admin_token, &cerr)) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        return EXIT_CONFIG;
    }

    /* The webhooks' signing key, read now so a bad file stops the start;
     * the webhooks keep their own copy. */
    static unsigned char webhook_key[AG_SECRET_MAX];
    size_t webhook_key_len = 0;
    if (cfg.n_webhooks && ag_config_read_secret_for(
                              "webhook-secret-file", cfg.webhook_secret_file,
                              webhook_key, &webhook_key_len, &cerr)) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        return EXIT_CONFIG;
    }

    /* Block the stop signals before any thread starts, so that only the
     * sigwait below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct ag_metrics *metrics = ag_metrics_new();
    if (!metrics) {
        fprintf(stderr, "abuseguard: out of memory\n");
        return 1;
    }
    /* The breached-password corpora, mapped now so that a missing or
     * damaged file stops the start; the watcher follows replacements. */
    const char *pwned_paths[AG_CONFIG_PWNED_FILES];
    for (unsigned i = 0; i < cfg.n_pwned_files; i++)
        pwned_paths[i] = cfg.pwned_files[i];
    struct ag_pwned_live *pwned = NULL;
    rc = ag_pwned_live_start(
        &(struct ag_pwned_live_opts){.paths = pwned_paths,
                                     .n = cfg.n_pwned_files,
                                     .metrics = metrics,
                                     .interval_ms = AG_PWNED_LIVE_INTERVAL_MS},
        &pwned, &cerr);
    if (rc) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        ag_metrics_free(metrics);
        return rc == AG_ENOMEM ? 1 : EXIT_CONFIG;
    }
    /* The network files, loaded now so that a missing or damaged one
     * stops the start; the watcher follows replacements. */
    struct ag_network *network = NULL;
    rc = start_network(&cfg, metrics, &network, &cerr);
    if (rc) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        ag_pwned_live_stop(pwned);
        ag_metrics_free(metrics);
        return rc == AG_ENOMEM ? 1 : EXIT_CONFIG;
    }

    /* Create, migrate and seed the database, then let the watcher load
     * the first policy set and follow later edits. */
    struct ag_db *db = NULL;
    if (ag_db_open_seeded(cfg.db_path, cfg.seed_dir, &db, &cerr)) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        stop_files(pwned, network);
        ag_metrics_free(metrics);
        return 1;
    }
    ag_log(AG_LOG_INFO, "database_ready", "schema version %d",
           ag_db_schema_version(db));
    ag_db_close(db);

    name_endpoints(metrics);
    /* The events before the store, whose breaker tells them; attached to
     * it once it exists. */
    struct ag_webhooks *hooks = NULL;
    struct ag_events *events = NULL;
    const char *urls[AG_CONFIG_WEBHOOKS_MAX];
    for (unsigned i = 0; i < cfg.n_webhooks; i++)
        urls[i] = cfg.webhook_urls[i];
    int hrc = cfg.n_webhooks
                  ? ag_webhooks_new(
                        &(struct ag_webhook_opts){
                            .urls = urls,
                            .n = cfg.n_webhooks,
                            .key = webhook_key,
                            .key_len = webhook_key_len,
                            .max_age_s = cfg.webhook_max_age_s,
                            .metrics = metrics,
                            .render = cfg.webhook_ocsf ? ag_ocsf_text : NULL,
                        },
                        &hooks)
                  : AG_OK;
    sodium_memzero(webhook_key, sizeof webhook_key);
    struct ag_events_opts eo = {
        .metrics = metrics,
        .hooks = hooks,
        .max_len = cfg.events_max_len,
    };
    if (hrc || ag_events_new(&eo, &events)) {
        fprintf(stderr, "abuseguard: out of memory\n");
        stop_files(pwned, network);
        return 1;
    }
    struct ag_store_redis_opts ropts = {
        .addr = &cfg.redis,
        .timeout_ms = cfg.redis_timeout_ms,
        .metrics = metrics,
        .breaker = ag_events_breaker,
        .breaker_arg = events,
    };
    bool cluster = cfg.redis.kind == AG_REDIS_CLUSTER;
    struct ag_store *store =
        cluster ? ag_store_cluster_new(&ropts) : ag_store_redis_new(&ropts);
    /* The deny cache and its subscriber, which keeps its own copy of the
     * address: it answers nothing until subscribed. */
    struct ag_deny_cache *deny_cache = NULL;
    struct ag_redis_sub *sub = NULL;
    if (cfg.deny_cache) {
        struct ag_deny_cache_opts dopts = {.entries = AG_DENY_CACHE_ENTRIES,
                                           .metrics = metrics};
        struct ag_redis_sub_opts sub_opts = {
            .channel = AG_DENY_CACHE_CHANNEL,
            .log = "deny_cache",
            .what = "the deny cache",
            .message = deny_cache_message,
            .live = deny_cache_live,
            .metrics = metrics,
        };
        if (ag_deny_cache_new(&dopts, &deny_cache) ||
            ((sub_opts.ctx = deny_cache),
             ag_redis_sub_start(&cfg.redis, cfg.redis_timeout_ms, &sub_opts,
                                &sub, &cerr))) {
            fprintf(stderr, "abuseguard: deny cache: %s\n",
                    deny_cache ? cerr.msg : "out of memory");
            stop_files(pwned, network);
            return 1;
        }
    }
    /* The fleet: a first step now, so that a new instance starts with the
     * fleet's set; its thread once the watcher runs. Its subscriber keeps
     * its own copy of the address. */
    struct ag_fleet *fleet = NULL;
    struct ag_redis_sub *fleet_sub = NULL;
    struct ag_fleet_opts fopts = {
        .on = cfg.fleet,
        .name = cfg.fleet_name,
        .db_path = cfg.db_path,
        .redis = &cfg.redis,
        .redis_timeout_ms = cfg.redis_timeout_ms,
        .secret = hasher.key,
        .secret_len = hasher.keylen,
        .events = events,
        .metrics = metrics,
        .binary = AG_VERSION,
        .files = loaded_files,
        .files_ctx = pwned,
        .lag_event_s = cfg.fleet_lag_event_s,
        .poll_ms = cfg.fleet_poll_ms,
    };
    if (store && ag_fleet_start(&fopts, &fleet, &cerr)) {
        fprintf(stderr, "abuseguard: fleet: %s\n", cerr.msg);
        stop_files(pwned, network);
        return 1;
    }
    if (cfg.fleet) {
        struct ag_redis_sub_opts sub_opts = {
            .channel = ag_fleet_channel_name(fleet),
            .log = "fleet",
            .what = "hearing the fleet's changes at once (the poll still "
                    "brings them)",
            .message = fleet_message,
            .live = fleet_live,
            .ctx = fleet,
            .metrics = metrics,
        };
        if (ag_redis_sub_start(&cfg.redis, cfg.redis_timeout_ms, &sub_opts,
                               &fleet_sub, &cerr)) {
            fprintf(stderr, "abuseguard: fleet: %s\n", cerr.msg);
            stop_files(pwned, network);
            return 1;
        }
    }
    /* The store keeps its own copy. */
    sodium_memzero(cfg.redis.password, sizeof cfg.redis.password);
    struct ag_store *fallback =
        ag_store_mem_new(AG_MEM_KEYS, AG_MEM_MEMBERS, NULL, NULL);
    if (!metrics || !store || !fallback) {
        fprintf(stderr, "abuseguard: out of memory\n");
        stop_files(pwned, network);
        return 1;
    }
    ag_events_attach(events, store);
    uint32_t anonymising;
    if (anonymising_mask(&cfg, network, &anonymising)) {
        stop_files(pwned, network);
        return 2;
    }
    struct ag_service_opts sopts = {
        .hasher = &hasher,
        .store = store,
        .fallback = fallback,
        .metrics = metrics,
        .request =
            {
                .phone_prefix_digits = cfg.phone_prefix_digits,
                .ipv6_ip_prefix = cfg.ipv6_ip_prefix,
                .ipv6_group_prefix = cfg.ipv6_group_prefix,
                .ipv4_group_prefix = cfg.ipv4_group_prefix,
                .strict_pass = cfg.strict_pass,
            },
        .device_token_ttl_s = cfg.device_token_ttl_s,
        .tagged_keys = cluster,
        .events = events,
        .deny_cache = deny_cache,
        .network = network,
        .history_days = cfg.history_days,
        .anonymising_lists = anonymising,
        .travel_speed_kmh = cfg.travel_speed_kmh,
        .shield_sync_ms = AG_SHIELDS_SYNC_MS,
    };
    struct ag_service *svc = NULL;
    if (ag_service_new(&sopts, &svc)) {
        fprintf(stderr, "abuseguard: out of memory\n");
        stop_files(pwned, network);
        return 1;
    }

    int status = 0;
    struct ag_reload *reload = NULL;
    struct ag_admin *admin = NULL;
    struct ag_http *http = NULL;
    bool failed =
        ag_reload_start(cfg.db_path, publish, svc, metrics, RELOAD_INTERVAL_MS,
                        AG_RELOAD_SYNC_TIMEOUT_MS, cfg.audit_retention_days,
                        &reload, &cerr) ||
        ag_fleet_run(fleet, reload, &cerr) ||
        (admin_token[0] && ag_admin_new(cfg.db_path, admin_token, svc, &hasher,
                                        reload, fleet, &admin, &cerr));
    /* The admin part's routes (its API and console, or, off, the 404 that
     * says so) are served beside the HTTP layer's own. */
    struct ag_http_route admin_routes[AG_ADMIN_ROUTES];
    if (!failed) {
        hopts.routes = admin_routes;
        hopts.nroutes = ag_admin_routes(admin, admin_routes);
        hopts.pwned = pwned;
        failed = ag_http_start(&hopts, svc, metrics, &http, &cerr) != AG_OK;
    }
    if (failed) {
        fprintf(stderr, "abuseguard: %s\n", cerr.msg);
        status = 1;
    } else {
        if (cfg.listen.host[0])
            ag_log(AG_LOG_INFO, "listening", "http on %s:%d", cfg.listen.host,
                   cfg.listen.port);
        else
            ag_log(AG_LOG_INFO, "listening", "http on unix://%s",
                   cfg.listen.path);
        if (admin && cfg.admin_listen_set && cfg.admin_listen.host[0])
            ag_log(AG_LOG_INFO, "admin_listening", "admin API only on %s:%d",
                   cfg.admin_listen.host, cfg.admin_listen.port);
        else if (admin && cfg.admin_listen_set)
            ag_log(AG_LOG_INFO, "admin_listening",
                   "admin API only on unix://%s", cfg.admin_listen.path);
        int sig = 0;
        sigwait(&stop, &sig);
        /* Listeners closed first, so that the line means new connections go
         * elsewhere already. */
        ag_http_quiesce(http);
        ag_log(AG_LOG_INFO, "stopping", "signal %d: draining", sig);
        ag_http_stop(http);
    }
    ag_admin_free(admin);
    ag_redis_sub_stop(fleet_sub);
    ag_fleet_stop(fleet);
    ag_reload_stop(reload);
    ag_redis_sub_stop(sub);
    ag_service_free(svc);
    /* No new marker or append once the store goes; what its pipe still
     * holds answers into the events, which outlive it. */
    ag_events_attach(events, NULL);
    ag_deny_cache_free(deny_cache);
    ag_store_destroy(store);
    ag_events_free(events);
    ag_webhooks_free(hooks);
    ag_store_destroy(fallback);
    /* Last of the threads' users: every recv(2) reads its table. */
    ag_http_free(http);
    /* After the server: no request holds a corpus or a network file any
     * more. */
    stop_files(pwned, network);
    ag_metrics_free(metrics);
    ag_hasher_wipe(&hasher);
    sodium_memzero(admin_token, sizeof admin_token);
    ag_log(AG_LOG_INFO, "stopped", "exit %d", status);
    return status;
}
