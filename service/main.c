/*
 * abuseguard: wiring only. Reads the configuration, opens the policy
 * database, connects the store and serves HTTP until SIGTERM or SIGINT,
 * then drains and exits 0. Exit 2 is a configuration error, 1 any other
 * failure to start.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ag_config.h"
#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_http.h"
#include "ag_log.h"
#include "ag_policy.h"
#include "ag_policy_db.h"
#include "ag_service.h"
#include "ag_store.h"

#define EXIT_CONFIG 2

/* Appends the policies of one file to *all. */
static int add_seed_file(const char *name, const char *text, size_t len,
                         struct ag_policy **all, size_t *n)
{
    struct ag_policy *ps;
    size_t count;
    struct ag_policy_error perr;
    int rc = ag_policy_parse_file(text, len, &ps, &count, &perr);
    if (rc) {
        fprintf(stderr, "abuseguard: seed policies %s: %s\n", name, perr.msg);
        return rc;
    }
    struct ag_policy *grown = realloc(*all, (*n + count + 1) * sizeof *ps);
    if (!grown) {
        free(ps);
        return AG_ENOMEM;
    }
    memcpy(grown + *n, ps, count * sizeof *ps);
    *all = grown;
    *n += count;
    free(ps);
    return AG_OK;
}

static int read_whole(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return AG_EIO;
    char *buf = malloc(1024 * 1024 + 1);
    size_t n = buf ? fread(buf, 1, 1024 * 1024 + 1, f) : 0;
    int bad = !buf || ferror(f) || n > 1024 * 1024;
    fclose(f);
    if (bad) {
        free(buf);
        return AG_EIO;
    }
    *text = buf;
    *len = n;
    return AG_OK;
}

static int json_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* The policies seeded into a new database: every *.json of seed_dir in name
 * order, or the compiled-in policies/ when seed_dir is empty. */
static int load_seed(const char *seed_dir, struct ag_policy **all, size_t *n)
{
    *all = NULL;
    *n = 0;
    if (!seed_dir[0]) {
        for (size_t i = 0; i < ag_embedded_policies_count; i++) {
            const struct ag_embedded_file *f = &ag_embedded_policies[i];
            int rc = add_seed_file(f->name, f->data, f->len, all, n);
            if (rc)
                return rc;
        }
        return AG_OK;
    }
    struct dirent **names;
    int count = scandir(seed_dir, &names, json_name, alphasort);
    if (count < 0) {
        fprintf(stderr, "abuseguard: --seed-dir '%s' cannot be read\n",
                seed_dir);
        return AG_EIO;
    }
    int rc = AG_OK;
    for (int i = 0; i < count; i++) {
        char path[2048];
        char *text = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", seed_dir, names[i]->d_name);
        if (!rc && read_whole(path, &text, &len)) {
            fprintf(stderr, "abuseguard: cannot read %s\n", path);
            rc = AG_EIO;
        }
        if (!rc)
            rc = add_seed_file(path, text, len, all, n);
        free(text);
        free(names[i]);
    }
    free(names);
    return rc;
}

/* Opens the database and returns the loaded policy set. */
static struct ag_policy_set *open_policies(const struct ag_config *cfg,
                                           struct ag_policy_db **db)
{
    struct ag_policy *seed, *ps = NULL;
    size_t nseed, n = 0;
    char err[512];
    if (load_seed(cfg->seed_dir, &seed, &nseed))
        return NULL;
    int rc = ag_policy_db_open(cfg->db_path, seed, nseed, db, err, sizeof err);
    free(seed);
    if (!rc)
        rc = ag_policy_db_load(*db, &ps, &n, err, sizeof err);
    if (rc) {
        fprintf(stderr, "abuseguard: %s\n", err);
        return NULL;
    }
    struct ag_policy_set *set = ag_policy_set_new(ps, n, 1);
    free(ps);
    if (set)
        ag_log(AG_LOG_INFO, "policies_loaded", "%zu policies, schema %d",
               set->count, ag_policy_db_schema_version(*db));
    return set;
}

int main(int argc, char **argv)
{
    struct ag_config cfg;
    char err[512];
    if (ag_config_parse(&cfg, argc, argv, err, sizeof err)) {
        fprintf(stderr, "abuseguard: %s\n", err);
        return EXIT_CONFIG;
    }
    if (cfg.help) {
        ag_config_usage(stdout);
        return 0;
    }
    ag_log_set_level((enum ag_log_level)cfg.log_level);
    if (sodium_init() < 0) {
        fprintf(stderr, "abuseguard: libsodium failed to initialise\n");
        return 1;
    }

    unsigned char secret[AG_SECRET_MAX];
    size_t secret_len;
    if (ag_config_read_secret(cfg.secret_file, secret, &secret_len, err,
                              sizeof err)) {
        fprintf(stderr, "abuseguard: %s\n", err);
        return EXIT_CONFIG;
    }
    struct ag_hasher hasher;
    ag_hasher_init(&hasher, secret, secret_len);
    sodium_memzero(secret, sizeof secret);

    /* Kept for the admin API; read now so a bad file stops the start. */
    static char admin_token[AG_TOKEN_MAX + 1];
    if (cfg.admin_token_file[0] &&
        ag_config_read_token(cfg.admin_token_file, admin_token, err,
                             sizeof err)) {
        fprintf(stderr, "abuseguard: %s\n", err);
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

    struct ag_policy_db *db = NULL;
    struct ag_policy_set *set = open_policies(&cfg, &db);
    if (!set) {
        ag_policy_db_close(db);
        return 1;
    }
    struct ag_store *store =
        ag_store_redis_new(&cfg.redis, cfg.redis_timeout_ms);
    if (!store) {
        fprintf(stderr, "abuseguard: out of memory\n");
        return 1;
    }
    struct ag_service svc;
    ag_service_init(&svc, &hasher, store);
    svc.opts.phone_prefix_digits = cfg.phone_prefix_digits;
    ag_service_set_policies(&svc, set);

    struct ag_http *http;
    int status = 0;
    if (ag_http_start(&cfg, &svc, &http, err, sizeof err)) {
        fprintf(stderr, "abuseguard: %s\n", err);
        status = 1;
    } else {
        ag_log(AG_LOG_INFO, "listening", "http on %s:%d", cfg.listen_host,
               cfg.listen_port);
        int sig = 0;
        sigwait(&stop, &sig);
        ag_log(AG_LOG_INFO, "stopping", "signal %d: draining", sig);
        ag_http_quiesce(http);
        ag_http_stop(http);
    }
    ag_service_fini(&svc);
    ag_store_destroy(store);
    ag_policy_db_close(db);
    ag_hasher_wipe(&hasher);
    sodium_memzero(admin_token, sizeof admin_token);
    ag_log(AG_LOG_INFO, "stopped", "exit %d", status);
    return status;
}
