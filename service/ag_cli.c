/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "ag_db.h"
#include "ag_db_fleet.h"
#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_policy.h"
#include "ag_redis_code.h"

#define ACTOR "cli"
#define EXIT_FAIL 1
#define EXIT_USAGE 2

static int usage(void)
{
    fprintf(stderr, "usage: abuseguard policy list|get NAME|put NAME FILE|"
                    "delete NAME|export|import FILE [--db PATH] [--create]\n"
                    "       abuseguard policy diff|apply|import FILE --url URL "
                    "--token-file FILE [--json]\n");
    return EXIT_USAGE;
}

/* A change made to one member's database alone would fork its host from
 * the fleet: refused, with how to make it. */
static int member_refusal(struct ag_db *db, const char *cmd,
                          struct ag_error *err)
{
    struct ag_db_fleet row;
    if (ag_db_fleet_get(db, &row, err))
        return EXIT_FAIL;
    if (!row.member)
        return 0;
    ag_error_fill(err, AG_EINVAL, NULL,
                  "this database belongs to fleet '%s' (version %lld): a %s "
                  "here would change this host alone. Change the fleet "
                  "through any instance: abuseguard policy apply|import FILE "
                  "--url http://HOST:PORT --token-file FILE, or the admin "
                  "API",
                  row.name, (long long)row.version, cmd);
    return EXIT_USAGE;
}

/* Prints o, which it takes over; a NULL o is out of memory. */
static int print_json(json_t *o, struct ag_error *err)
{
    int rc = o ? json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15))
               : -1;
    json_decref(o);
    if (rc) {
        ag_error_fill(err, AG_EIO, NULL, "cannot write the JSON out");
        return EXIT_FAIL;
    }
    fputc('\n', stdout);
    return 0;
}

static json_t *read_json(const char *path, struct ag_error *err)
{
    json_error_t jerr;
    json_t *v = strcmp(path, "-") == 0
                    ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr)
                    : json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!v)
        ag_error_fill(err, AG_EINVAL, NULL, "%s: %s at line %d column %d", path,
                      jerr.text, jerr.line, jerr.column);
    return v;
}

static int all_policies(struct ag_db *db, json_t **out, struct ag_error *err)
{
    struct ag_policy *ps;
    size_t n;
    int rc = ag_db_policies_load(db, &ps, &n, err);
    if (rc)
        return rc;
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        json_t *v = ag_policy_to_json(&ps[i]);
        if (!v || json_array_append_new(list, v)) {
            json_decref(list);
            list = NULL;
        }
    }
    free(ps);
    /* A list with a policy missing would export a smaller set than the
     * database holds: none at all, and an error, instead. */
    *out = list ? json_pack("{s:o}", "policies", list) : NULL;
    if (!*out)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    return AG_OK;
}

static int run(struct ag_db *db, const char *cmd, const char *arg1,
               const char *arg2, struct ag_error *err)
{
    struct ag_policy p;
    struct ag_error perr;
    json_t *o;
    int rc;
    if (strcmp(cmd, "list") == 0 || strcmp(cmd, "export") == 0) {
        if ((rc = all_policies(db, &o, err)))
            return EXIT_FAIL;
        if (strcmp(cmd, "export") == 0)
            return print_json(o, err);
        const json_t *v;
        size_t i;
        json_array_foreach(json_object_get(o, "policies"), i, v)
        {
            char *line = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(15));
            printf("%s\n", line ? line : "");
            free(line);
        }
        json_decref(o);
        return 0;
    }
    if (strcmp(cmd, "get") == 0 && arg1) {
        rc = ag_db_policy_get(db, arg1, &p, err);
        if (rc == AG_ENOTFOUND)
            ag_error_fill(err, rc, "name", "no policy named '%.*s'",
                          AG_POLICY_NAME_MAX, arg1);
        return rc ? EXIT_FAIL
                  : print_json(
                        json_pack("{s:o}", "policy", ag_policy_to_json(&p)),
                        err);
    }
    /* A change: its input is judged first (a bad file is named as
     * anywhere), then whether this database may take it alone. */
    if (strcmp(cmd, "delete") == 0 && arg1) {
        if ((rc = member_refusal(db, cmd, err)))
            return rc;
        rc = ag_db_policy_delete(db, arg1, ACTOR, err);
        if (rc == AG_ENOTFOUND)
            ag_error_fill(err, rc, "name", "no policy named '%.*s'",
                          AG_POLICY_NAME_MAX, arg1);
        return rc ? EXIT_FAIL : 0;
    }
    if (strcmp(cmd, "put") == 0 && arg1 && arg2) {
        if (!(o = read_json(arg2, err)))
            return EXIT_USAGE;
        rc = ag_policy_from_json(o, arg1, &p, &perr);
        json_decref(o);
        if (rc) {
            *err = perr;
            return EXIT_USAGE;
        }
        if ((rc = member_refusal(db, cmd, err)))
            return rc;
        bool created;
        rc = ag_db_policy_save(db, &p, ACTOR, &created, err);
        if (rc)
            return rc == AG_ETOOBIG ? EXIT_USAGE : EXIT_FAIL;
        fprintf(stderr, "%s %s\n", created ? "created" : "replaced", p.name);
        return 0;
    }
    if (strcmp(cmd, "import") == 0 && arg1) {
        if (!(o = read_json(arg1, err)))
            return EXIT_USAGE;
        char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        struct ag_policy *ps = NULL;
        size_t n = 0;
        rc = text ? ag_policy_parse_file(text, strlen(text), &ps, &n, &perr)
                  : AG_ENOMEM;
        free(text);
        if (rc) {
            *err = perr;
            return EXIT_USAGE;
        }
        int refused = member_refusal(db, cmd, err);
        if (!refused)
            rc = ag_db_policies_import(db, ps, n, ACTOR, err);
        free(ps);
        if (refused)
            return refused;
        if (!rc)
            fprintf(stderr, "imported %zu policies\n", n);
        return rc == AG_ETOOBIG ? EXIT_USAGE : rc ? EXIT_FAIL : 0;
    }
    return usage();
}

int ag_cli_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--url") == 0 || strncmp(argv[i], "--url=", 6) == 0)
            return ag_cli_remote_main(argc, argv);
    if (argc > 1 &&
        (strcmp(argv[1], "diff") == 0 || strcmp(argv[1], "apply") == 0))
        return ag_cli_remote_main(argc, argv);
    const char *db_path = getenv("ABUSEGUARD_DB");
    const char *seed_dir = getenv("ABUSEGUARD_SEED_DIR");
    const char *pos[3] = {NULL, NULL, NULL};
    int npos = 0;
    bool create = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--create") == 0)
            create = true;
        else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
            db_path = argv[++i];
        else if (strncmp(argv[i], "--db=", 5) == 0)
            db_path = argv[i] + 5;
        else if (strncmp(argv[i], "--", 2) == 0 || npos == 3)
            return usage();
        else
            pos[npos++] = argv[i];
    }
    if (!pos[0])
        return usage();
    if (!db_path)
        db_path = AG_DB_DEFAULT_PATH;
    /* A mistyped path would otherwise be a new, seeded database that
     * takes the edit and tells no one: it is a usage error unless asked
     * for. */
    struct stat st;
    if (!create && stat(db_path, &st) != 0) {
        fprintf(stderr,
                "abuseguard policy: no database at %s (--create makes "
                "a new one)\n",
                db_path);
        return EXIT_USAGE;
    }
    struct ag_error err = {0};
    struct ag_db *db;
    if (ag_db_open_seeded(db_path, seed_dir, &db, &err)) {
        fprintf(stderr, "abuseguard policy: %s\n", err.msg);
        return EXIT_FAIL;
    }
    int rc = run(db, pos[0], pos[1], pos[2], &err);
    ag_db_close(db);
    if (rc && err.msg[0])
        fprintf(stderr, "abuseguard policy: %s\n", err.msg);
    return rc;
}

int ag_cli_lua_main(int argc, char **argv)
{
    static const char usage_text[] =
        "usage: abuseguard lua library|function|script ALGORITHM...\n";
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    unsigned mask = 0;
    for (int i = 2; i < argc; i++) {
        int a = -1;
        for (int k = 0; k < AG_ALG_STORE_COUNT; k++)
            if (strcmp(argv[i], ag_algorithm_name((enum ag_algorithm)k)) == 0)
                a = k;
        if (a < 0) {
            fprintf(stderr, "abuseguard lua: no algorithm '%s'\n", argv[i]);
            return EXIT_USAGE;
        }
        mask |= 1u << a;
    }
    bool script = strcmp(argv[1], "script") == 0;
    if ((script && !mask) || (!script && argc > 2) ||
        (!script && strcmp(argv[1], "library") != 0 &&
         strcmp(argv[1], "function") != 0)) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    struct ag_redis_code code;
    if (ag_redis_code_init(&code, ag_embedded_lua, ag_embedded_lua_count)) {
        fputs("abuseguard lua: cannot compose the code\n", stderr);
        return EXIT_FAIL;
    }
    if (script)
        fwrite(code.scripts[mask].text, 1, code.scripts[mask].len, stdout);
    else if (strcmp(argv[1], "library") == 0)
        fwrite(code.library.text, 1, code.library.len, stdout);
    else
        printf("%s\n", code.function);
    ag_redis_code_free(&code);
    return fflush(stdout) == 0 ? 0 : EXIT_FAIL;
}
