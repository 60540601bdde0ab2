/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening a database that is seeded when new: the core migrates it and,
 * when it created the schema, runs the seed handed to it, which saves the
 * given policies (every *.json of a directory, or the compiled-in
 * policies/) inside the migrating transaction.
 */
#include "ag_db.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_db_core_impl.h"
#include "ag_db_tx_impl.h"
#include "ag_embedded.h"
#include "ag_error.h"

/* The policies a new database starts with. */
struct seed {
    const struct ag_policy *ps;
    size_t n;
};

/* The core's seed hook: runs inside its migrating transaction. */
static int save_seed(struct ag_db *db, void *arg, struct ag_error *err)
{
    const struct seed *s = arg;
    int rc = AG_OK;
    for (size_t i = 0; !rc && i < s->n; i++)
        rc = ag_db__policy_save_in_tx(db, &s->ps[i], "seed", NULL, err);
    /* The set is the seed's: a fleet this database joins gives it the
     * fleet's instead (ag_db_fleet.h). */
    if (!rc)
        rc = ag_db__exec(
            db->db, "UPDATE fleet SET pristine = 1, touched = 0 WHERE id = 1",
            err);
    return rc;
}

int ag_db_open(const char *path, const struct ag_policy *seed, size_t n,
               struct ag_db **out, struct ag_error *err)
{
    struct seed s = {seed, n};
    return ag_db_connect(path, save_seed, &s, out, err);
}

/* Appends the policies of one file to *all. */
static int add_seed_file(const char *name, const char *text, size_t len,
                         struct ag_policy **all, size_t *n,
                         struct ag_error *err)
{
    struct ag_policy *ps;
    size_t count;
    struct ag_error perr;
    int rc = ag_policy_parse_file(text, len, &ps, &count, &perr);
    if (rc) {
        return ag_error_set(err, rc, NULL, "seed policies %s: %s", name,
                            perr.msg);
    }
    struct ag_policy *grown = realloc(*all, (*n + count + 1) * sizeof *ps);
    if (!grown) {
        free(ps);
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    memcpy(grown + *n, ps, count * sizeof *ps);
    *all = grown;
    *n += count;
    free(ps);
    return AG_OK;
}

/* A seed file is a handful of policies; anything near this is a mistake. */
#define SEED_FILE_MAX (1024 * 1024) /* bytes */

static int read_whole(const char *path, char **text, size_t *len,
                      struct ag_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ag_error_set(err, AG_EIO, "seed-dir", "seed-dir: cannot read %s",
                            path);
    /* One byte more than the cap tells a file at the cap from a longer
     * one. */
    char *buf = malloc(SEED_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, SEED_FILE_MAX + 1, f) : 0;
    int rc = AG_OK;
    if (!buf)
        rc = ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    else if (ferror(f))
        rc = ag_error_set(err, AG_EIO, "seed-dir", "seed-dir: cannot read %s",
                          path);
    else if (n > SEED_FILE_MAX)
        rc = ag_error_set(err, AG_ETOOBIG, "seed-dir",
                          "seed-dir: %s is larger than %d bytes", path,
                          SEED_FILE_MAX);
    fclose(f);
    if (rc) {
        free(buf);
        return rc;
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
static int load_seed(const char *seed_dir, struct ag_policy **all, size_t *n,
                     struct ag_error *err)
{
    *all = NULL;
    *n = 0;
    if (!seed_dir[0]) {
        for (size_t i = 0; i < ag_embedded_policies_count; i++) {
            const struct ag_embedded_file *f = &ag_embedded_policies[i];
            int rc = add_seed_file(f->name, f->data, f->len, all, n, err);
            if (rc)
                return rc;
        }
        return AG_OK;
    }
    struct dirent **names;
    int count = scandir(seed_dir, &names, json_name, alphasort);
    if (count < 0) {
        return ag_error_set(err, AG_EIO, "seed-dir",
                            "seed-dir '%s' cannot be read", seed_dir);
    }
    int rc = AG_OK;
    for (int i = 0; i < count; i++) {
        char path[2048];
        char *text = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", seed_dir, names[i]->d_name);
        if (!rc)
            rc = read_whole(path, &text, &len, err);
        if (!rc)
            rc = add_seed_file(path, text, len, all, n, err);
        free(text);
        free(names[i]);
    }
    free(names);
    return rc;
}

int ag_db_open_seeded(const char *path, const char *seed_dir,
                      struct ag_db **out, struct ag_error *err)
{
    struct ag_policy *seed = NULL;
    size_t n = 0;
    int rc = load_seed(seed_dir ? seed_dir : "", &seed, &n, err);
    if (!rc)
        rc = ag_db_open(path, seed, n, out, err);
    free(seed);
    return rc;
}
