/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet's command line (ag_cli.h):
 *   abuseguard policy diff|apply|import FILE --url URL --token-file FILE
 *                     [--json]
 * sends a policy file to a running fleet's admin API (POST
 * /admin/policies/apply): diff shows what would change, apply makes the
 * policies the file's (removing any other), import adds and replaces
 * without removing; each as one versioned change, all or nothing.
 *   abuseguard fleet init [--from this|fleet|FILE] [service flags]
 * chooses between a host's set and its fleet's when they differ: without
 * --from it shows the difference; --from this (or a policy FILE, with
 * this host's lists) makes the fleet's set this one, as a new history
 * every instance takes; --from fleet makes this host take the fleet's.
 * It reads the service's own flags (--config, --redis, --db,
 * --secret-file, --fleet-name) to reach the fleet.
 * Exit 0 on success, 2 for bad usage or a refused file, 1 when the
 * service or the fleet failed.
 */
#include "ag_cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>

#include "ag_config.h"
#include "ag_db_fleet.h"
#include "ag_error.h"
#include "ag_fleet.h"
#include "ag_identity.h"
#include "ag_policy.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define ANSWER_MAX (16u * 1024 * 1024) /* an admin answer at most */
#define URL_MAX 2048
#define TIMEOUT_S 60

struct answer {
    char *p;
    size_t len;
    bool toobig;
};

static size_t take(char *data, size_t size, size_t n, void *arg)
{
    struct answer *a = arg;
    size_t len = size * n;
    if (a->len + len > ANSWER_MAX) {
        a->toobig = true;
        return 0;
    }
    char *grown = realloc(a->p, a->len + len + 1);
    if (!grown)
        return 0;
    memcpy(grown + a->len, data, len);
    a->p = grown;
    a->len += len;
    a->p[a->len] = '\0';
    return len;
}

/* POSTs body to base's /admin/policies/apply with the bearer token:
 * *status and *out (parsed JSON, the caller's), or EXIT_FAIL with a line
 * on stderr. */
static int post(const char *base, const char *token, const char *body,
                long *status, json_t **out)
{
    char url[URL_MAX], auth[AG_TOKEN_MAX + 32];
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    if (n + sizeof "/admin/policies/apply" > sizeof url) {
        fprintf(stderr, "abuseguard policy: --url is too long\n");
        return EXIT_USAGE;
    }
    snprintf(url, sizeof url, "%.*s/admin/policies/apply", (int)n, base);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, auth);
    struct curl_slist *h2 =
        h ? curl_slist_append(h, "Content-Type: application/json") : NULL;
    struct answer a = {0};
    CURLcode cc = CURLE_OUT_OF_MEMORY;
    if (c && h2) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h2);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)TIMEOUT_S);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        cc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    }
    sodium_memzero(auth, sizeof auth);
    curl_slist_free_all(h2 ? h2 : h);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK) {
        fprintf(stderr, "abuseguard policy: %s: %s\n", url,
                a.toobig ? "the answer is too long" : curl_easy_strerror(cc));
        free(a.p);
        return EXIT_FAIL;
    }
    *out = a.p ? json_loadb(a.p, a.len, 0, NULL) : NULL;
    free(a.p);
    if (!*out) {
        fprintf(stderr, "abuseguard policy: %s answered %ld without JSON\n",
                url, *status);
        return EXIT_FAIL;
    }
    return 0;
}

/* A JSON value as one line of text, for the diff. */
static void print_value(const json_t *v)
{
    char *text =
        json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    fputs(text ? text : "?", stdout);
    free(text);
}

/* The policies' difference (ag_fleet_policies_diff) for people. */
static void print_diff(const json_t *d)
{
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(d, "added"), i, v)
    {
        printf("+ %s\n", json_string_value(v));
    }
    json_array_foreach(json_object_get(d, "changed"), i, v)
    {
        printf("~ %s\n", json_string_value(json_object_get(v, "name")));
        size_t k;
        const json_t *f;
        json_array_foreach(json_object_get(v, "fields"), k, f)
        {
            printf("    %s: ", json_string_value(json_object_get(f, "field")));
            print_value(json_object_get(f, "before"));
            fputs(" -> ", stdout);
            print_value(json_object_get(f, "after"));
            fputc('\n', stdout);
        }
    }
    json_array_foreach(json_object_get(d, "removed"), i, v)
    {
        printf("- %s\n", json_string_value(v));
    }
    printf("%zu added, %zu changed, %zu removed\n",
           json_array_size(json_object_get(d, "added")),
           json_array_size(json_object_get(d, "changed")),
           json_array_size(json_object_get(d, "removed")));
}

int ag_cli_remote_main(int argc, char **argv)
{
    static const char usage[] =
        "usage: abuseguard policy diff|apply|import FILE --url URL "
        "--token-file FILE [--json]\n";
    const char *cmd = argc > 1 ? argv[1] : "", *file = NULL, *url = NULL,
               *token_file = NULL;
    bool as_json = false;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--token-file") == 0 && i + 1 < argc)
            token_file = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            as_json = true;
        else if (strncmp(argv[i], "--", 2) != 0 && !file)
            file = argv[i];
        else {
            fputs(usage, stderr);
            return EXIT_USAGE;
        }
    }
    bool diff = strcmp(cmd, "diff") == 0, import = strcmp(cmd, "import") == 0;
    if (!file || !url || !token_file ||
        (!diff && !import && strcmp(cmd, "apply") != 0)) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    char token[AG_TOKEN_MAX + 1];
    struct ag_error err;
    if (ag_config_read_token(token_file, token, &err)) {
        fprintf(stderr, "abuseguard policy: %s\n", err.msg);
        return EXIT_USAGE;
    }
    json_error_t jerr;
    json_t *f = strcmp(file, "-") == 0
                    ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr)
                    : json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
    if (!f) {
        fprintf(stderr, "abuseguard policy: %s: %s at line %d column %d\n",
                file, jerr.text, jerr.line, jerr.column);
        sodium_memzero(token, sizeof token);
        return EXIT_USAGE;
    }
    json_t *req = json_pack("{s:O?, s:b, s:b}", "policies",
                            json_object_get(f, "policies"), "prune", !import,
                            "dry_run", diff);
    json_decref(f);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    long status = 0;
    json_t *out = NULL;
    int rc = EXIT_FAIL;
    if (body && curl_global_init(CURL_GLOBAL_DEFAULT) == 0) {
        rc = post(url, token, body, &status, &out);
        curl_global_cleanup();
    }
    free(body);
    sodium_memzero(token, sizeof token);
    if (rc)
        return rc;
    if (status >= 400) {
        const char *field = json_string_value(json_object_get(out, "field"));
        fprintf(stderr, "abuseguard policy: %s%s%s%s (HTTP %ld)\n",
                json_string_value(json_object_get(out, "error")),
                field ? " (field: " : "", field ? field : "", field ? ")" : "",
                status);
        json_decref(out);
        return status < 500 ? EXIT_USAGE : EXIT_FAIL;
    }
    if (as_json) {
        char *text = json_dumps(out, JSON_INDENT(2));
        puts(text ? text : "{}");
        free(text);
    } else {
        print_diff(json_object_get(out, "diff"));
        json_int_t v = json_integer_value(json_object_get(out, "version"));
        if (diff)
            printf("dry run: nothing changed\n");
        else if (json_is_true(json_object_get(out, "changed")))
            printf("applied as version %lld\n", (long long)v);
        else
            printf("nothing to change (version %lld)\n", (long long)v);
    }
    /* Policies the instance keeps but skips (a network file it lacks). */
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(out, "warnings"), i, w)
        fprintf(stderr, "warning: %s\n", json_string_value(w));
    json_decref(out);
    return 0;
}

/* The records of policy file path, validated; NULL with a line on
 * stderr. */
static json_t *file_records(const char *path)
{
    json_error_t jerr;
    json_t *f = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    char *text = f ? json_dumps(f, JSON_COMPACT) : NULL;
    json_decref(f);
    if (!text) {
        fprintf(stderr, "abuseguard fleet: %s: %s\n", path, jerr.text);
        return NULL;
    }
    struct ag_policy *ps = NULL;
    size_t n = 0;
    struct ag_error perr;
    int rc = ag_policy_parse_file(text, strlen(text), &ps, &n, &perr);
    free(text);
    if (rc) {
        fprintf(stderr, "abuseguard fleet: %s: %s (field: %s)\n", path,
                perr.msg, perr.field);
        return NULL;
    }
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++)
        if (json_array_append_new(out, ag_policy_to_json(&ps[i]))) {
            json_decref(out);
            out = NULL;
        }
    free(ps);
    return out;
}

/* fleet init against the fleet cfg names: shows the difference and, with
 * from (this, or a file's records), makes it the fleet's set. */
static int init(const struct ag_config *cfg, const char *from,
                const json_t *records)
{
    unsigned char secret[AG_SECRET_MAX];
    size_t len = 0;
    struct ag_error err;
    if (ag_config_read_secret(cfg->secret_file, secret, &len, &err)) {
        fprintf(stderr, "abuseguard fleet: %s\n", err.msg);
        return EXIT_USAGE;
    }
    struct ag_hasher h;
    ag_hasher_init(&h, secret, len);
    sodium_memzero(secret, sizeof secret);
    struct ag_fleet *f = NULL;
    struct ag_fleet_opts o = {.on = true,
                              .name = cfg->fleet_name,
                              .db_path = cfg->db_path,
                              .redis = &cfg->redis,
                              .redis_timeout_ms = cfg->redis_timeout_ms,
                              .secret = h.key,
                              .secret_len = h.keylen,
                              .passive = true};
    int rc = ag_fleet_start(&o, &f, &err);
    ag_hasher_wipe(&h);
    json_t *diff = NULL;
    if (!rc)
        rc = ag_fleet_init(f, records, from != NULL, &diff, &err);
    if (rc) {
        fprintf(stderr, "abuseguard fleet: %s\n", err.msg);
    } else {
        const json_t *pd = json_object_get(diff, "policies");
        const json_t *ld = json_object_get(diff, "lists");
        printf("fleet %s, from its set to %s:\n", cfg->fleet_name,
               records ? "the file's policies and this host's lists"
                       : "this host's");
        print_diff(pd);
        printf("lists: %lld entries added, %lld removed\n",
               (long long)json_integer_value(json_object_get(ld, "added")),
               (long long)json_integer_value(json_object_get(ld, "removed")));
        if (from)
            printf("done: the fleet's set is this one now; every instance "
                   "takes it\n");
        else
            printf("nothing changed: abuseguard fleet init --from this (or "
                   "--from FILE) makes this the fleet's set; --from fleet "
                   "makes this host take the fleet's\n");
    }
    json_decref(diff);
    ag_fleet_stop(f);
    return rc == AG_OK        ? 0
           : rc == AG_EINVAL  ? EXIT_USAGE
           : rc == AG_ETOOBIG ? EXIT_USAGE
                              : EXIT_FAIL;
}

/* fleet init --from fleet: this host's database leaves its history and
 * takes the fleet's at its instance's next step. */
static int forget(const struct ag_config *cfg)
{
    struct ag_db *db = NULL;
    struct ag_error err;
    int rc = ag_db_open(cfg->db_path, NULL, 0, &db, &err);
    if (!rc)
        rc = ag_db_fleet_forget(db, "cli", &err);
    ag_db_close(db);
    if (rc) {
        fprintf(stderr, "abuseguard fleet: %s\n", err.msg);
        return EXIT_FAIL;
    }
    printf("this host takes fleet %s's set at its instance's next step "
           "(within %d s while it runs)\n",
           cfg->fleet_name, AG_FLEET_POLL_MS / 1000);
    return 0;
}

int ag_cli_fleet_main(int argc, char **argv)
{
    static const char usage[] =
        "usage: abuseguard fleet init [--from this|fleet|FILE] [--config "
        "FILE] [the service's --redis, --db, --secret-file, --fleet-name]\n";
    if (argc < 2 || strcmp(argv[1], "init") != 0) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    /* --from is ours; the rest are the service's flags. */
    const char *from = NULL;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return EXIT_FAIL;
    int nrest = 0;
    static char prog[] = "abuseguard fleet init";
    rest[nrest++] = prog;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
            from = argv[++i];
        else if (strncmp(argv[i], "--from=", 7) == 0)
            from = argv[i] + 7;
        else
            rest[nrest++] = argv[i];
    }
    struct ag_config cfg;
    struct ag_error err;
    int rc = ag_config_parse(&cfg, nrest, rest, &err);
    free(rest);
    if (rc || (from && !from[0])) {
        fprintf(stderr, "abuseguard fleet: %s\n%s", rc ? err.msg : "--from",
                usage);
        return EXIT_USAGE;
    }
    if (sodium_init() < 0)
        return EXIT_FAIL;
    if (ag_config_read_redis_password(&cfg, &err)) {
        fprintf(stderr, "abuseguard fleet: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (from && strcmp(from, "fleet") == 0)
        rc = forget(&cfg);
    else if (from && strcmp(from, "this") != 0) {
        json_t *records = file_records(from);
        rc = records ? init(&cfg, from, records) : EXIT_USAGE;
        json_decref(records);
    } else {
        rc = init(&cfg, from, NULL);
    }
    sodium_memzero(cfg.redis.password, sizeof cfg.redis.password);
    return rc;
}
