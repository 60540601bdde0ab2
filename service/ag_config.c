/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where each value comes from: the command line, then the environment,
 * then the --config file, then the default (the flag table,
 * ag_config_flags.c, says what each value means), and the checks that
 * look at several flags at once.
 */
#include "ag_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "ag_config_impl.h"
#include "ag_error.h"

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
 * error naming the line and key for anything else. A credential inline
 * in a file that group or others can read is refused, as OpenSSH refuses
 * a private key that others can read: its place is a private file
 * (--redis-password-file), or the file made private. */
static int read_config(const char *path, struct file_value *fv,
                       struct ag_error *err)
{
    FILE *in = fopen(path, "re");
    if (!in)
        return ag_error_set(err, AG_EINVAL, "config", "--config '%s': %s", path,
                            strerror(errno));
    struct stat st;
    if (fstat(fileno(in), &st)) {
        fclose(in);
        return ag_error_set(err, AG_EINVAL, "config", "--config '%s': %s", path,
                            strerror(errno));
    }
    bool shared = (st.st_mode & 044) != 0;
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
        const struct ag_config__flag *f =
            ag_config__find_flag(key, strlen(key));
        if (!f || f->kind == AG_CONFIG__SWITCH ||
            strcmp(f->name, "config") == 0) {
            rc = ag_error_set(err, AG_EINVAL, "config",
                              "%s line %d: unknown key '%.64s' (keys are the "
                              "flags' names, see --help)",
                              path, n, key);
            break;
        }
        struct file_value *v = &fv[f - ag_config__flags];
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
        if (shared && ag_config__holds_credential(f, val)) {
            /* Named, never shown: the value is the credential. */
            rc = ag_error_set(
                err, AG_EINVAL, f->name,
                "%s line %d: %s holds a credential, and the file is readable "
                "by group or others (mode %03o): chmod 600 it%s",
                path, n, f->name, (unsigned)(st.st_mode & 0777),
                f->kind == AG_CONFIG__REDIS
                    ? ", or move the password to redis-password-file"
                    : "");
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
    sodium_memzero(line, sizeof line);
    return rc;
}

int ag_config_parse(struct ag_config *c, int argc, char **argv,
                    struct ag_error *err)
{
    memset(c, 0, sizeof *c);
    /* The command line first, so that a flag given there makes the
     * environment's value for it irrelevant, even a bad one. */
    const char *given[AG_CONFIG__FLAGS_MAX] = {0};
    /* The values of a repeated --webhook-url, --pwned-file and
     * --ip-list, joined by spaces. */
    char repeated[3][(AG_CONFIG_WEBHOOK_URL + 1) * AG_CONFIG_WEBHOOKS_MAX];
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            return ag_error_set(err, AG_EINVAL, NULL,
                                "unexpected argument '%s'", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct ag_config__flag *f = ag_config__find_flag(name, nlen);
        if (!f)
            return ag_error_set(err, AG_EINVAL, NULL,
                                "unknown flag '%s' (see --help)", arg);
        const char *val = "";
        if (f->kind != AG_CONFIG__SWITCH) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return ag_error_set(err, AG_EINVAL, f->name,
                                    "--%s needs a value", f->name);
        }
        int many = f->kind == AG_CONFIG__URLS      ? 1
                   : f->kind == AG_CONFIG__PATHS   ? 2
                   : f->kind == AG_CONFIG__IPLISTS ? 3
                                                   : 0;
        if (many && given[f - ag_config__flags]) {
            /* A repeated flag adds to the values before it. */
            char *joined = repeated[many - 1];
            if (given[f - ag_config__flags] != joined)
                snprintf(joined, sizeof repeated[0], "%s",
                         given[f - ag_config__flags]);
            size_t had = strlen(joined);
            if (had + strlen(val) + 2 > sizeof repeated[0])
                return ag_error_set(err, AG_EINVAL, f->name,
                                    "--%s: too many values", f->name);
            snprintf(joined + had, sizeof repeated[0] - had, " %s", val);
            val = joined;
        }
        given[f - ag_config__flags] = val;
    }
    /* The config file, from the flag or the environment: below both. */
    const struct ag_config__flag *cf = ag_config__find_flag("config", 6);
    const char *path = given[cf - ag_config__flags];
    if (!path)
        path = getenv("ABUSEGUARD_CONFIG");
    struct file_value *fv = calloc(ag_config__nflags, sizeof *fv);
    if (!fv)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    if (path && *path && read_config(path, fv, err)) {
        sodium_memzero(fv, ag_config__nflags * sizeof *fv);
        free(fv);
        return AG_EINVAL;
    }
    int rc = AG_OK;
    for (size_t i = 0; i < ag_config__nflags && !rc; i++) {
        const struct ag_config__flag *f = &ag_config__flags[i];
        char env[64];
        ag_config__env_name(f, env, sizeof env);
        const char *val = given[i];
        const char *origin = "command line";
        if (!val && f->kind != AG_CONFIG__SWITCH && (val = getenv(env)))
            origin = env;
        if (!val && fv[i].set) {
            val = fv[i].val;
            origin = fv[i].origin;
        }
        if (!val) {
            val = f->def;
            origin = "default";
        }
        if (val && ag_config__set_value(c, f, val, origin, err))
            rc = AG_EINVAL;
    }
    /* The file's values may hold a credential (a private file's). */
    sodium_memzero(fv, ag_config__nflags * sizeof *fv);
    free(fv);
    if (rc)
        return rc;
    static const struct {
        const char *flag;
        size_t off;
    } tls_flags[] = {
        {"redis-tls-ca-file", offsetof(struct ag_config, redis.tls_ca_file)},
        {"redis-tls-cert-file",
         offsetof(struct ag_config, redis.tls_cert_file)},
        {"redis-tls-key-file", offsetof(struct ag_config, redis.tls_key_file)},
        {"redis-tls-server-name",
         offsetof(struct ag_config, redis.tls_server_name)},
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
    if (!ag_fleet_name_valid(c->fleet_name))
        return ag_error_set(err, AG_EINVAL, "fleet-name",
                            "--fleet-name must be 1 to %d of A-Z a-z 0-9 _ . "
                            "-",
                            AG_FLEET_NAME_MAX);
    /* The group holds the addresses it groups: a longer group prefix than
     * the ip key's would split one key over several groups. */
    if (c->ipv6_group_prefix > c->ipv6_ip_prefix)
        return ag_error_set(err, AG_EINVAL, "ipv6-group-prefix",
                            "--ipv6-group-prefix (%u) must not be longer "
                            "than --ipv6-ip-prefix (%u)",
                            c->ipv6_group_prefix, c->ipv6_ip_prefix);
    return AG_OK;
}
