/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_redis_script.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "ag_embedded.h"
#include "ag_error.h"
#include "ag_redis_direct.h"
#include "ag_redis_reply.h"

#define SCRIPTS_MAX 32 /* embedded Lua files at most */

/* Every embedded script's SHA1, found once: the texts are compiled in, so
 * they hold for the process's life. */
static pthread_once_t sha_once = PTHREAD_ONCE_INIT;
static char shas[SCRIPTS_MAX][41];

static void find_shas(void)
{
    for (size_t i = 0; i < ag_embedded_lua_count && i < SCRIPTS_MAX; i++) {
        const struct ag_embedded_file *f = &ag_embedded_lua[i];
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (EVP_Digest(f->data, f->len, md, &mdlen, EVP_sha1(), NULL) == 1 &&
            mdlen == 20)
            sodium_bin2hex(shas[i], sizeof shas[i], md, mdlen);
    }
}

typedef int (*send_fn)(void *via, int argc, const char **argv,
                       const size_t *lens, void **reply);

/* Sends argv through the store: AG_OK and *reply; AG_EINVAL for a store
 * without Redis; else AG_ESTORE. */
static int store_send(void *store, int argc, const char **argv,
                      const size_t *lens, void **reply)
{
    void *r = NULL;
    int rc = ag_store_command(store, argc, argv, lens, 3, &r);
    if (rc == AG_EINVAL)
        return rc;
    if (rc != AG_OK || !r)
        return AG_ESTORE;
    *reply = r;
    return AG_OK;
}

static int direct_send(void *direct, int argc, const char **argv,
                       const size_t *lens, void **reply)
{
    return ag_redis_direct_command(direct, argc, argv, lens, reply);
}

static int run(send_fn send, void *via, const char *piece, int nkeys, int nargs,
               const char *const *args, const size_t *arglens, void **reply)
{
    pthread_once(&sha_once, find_shas);
    size_t at = SCRIPTS_MAX;
    for (size_t i = 0; i < ag_embedded_lua_count && i < SCRIPTS_MAX; i++)
        if (strcmp(ag_embedded_lua[i].name, piece) == 0 && shas[i][0])
            at = i;
    if (at == SCRIPTS_MAX || nkeys < 1 || nargs < nkeys ||
        nargs > AG_REDIS_SCRIPT_ARGS)
        return AG_EINVAL;
    char numkeys[12];
    snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    const char *argv[3 + AG_REDIS_SCRIPT_ARGS] = {"EVALSHA", shas[at], numkeys};
    size_t lens[3 + AG_REDIS_SCRIPT_ARGS] = {7, 40, strlen(numkeys)};
    for (int i = 0; i < nargs; i++) {
        argv[3 + i] = args[i];
        lens[3 + i] = arglens[i];
    }
    redisReply *r = NULL;
    int rc = send(via, 3 + nargs, argv, lens, (void **)&r);
    if (rc == AG_OK && r->type == REDIS_REPLY_ERROR &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
        ag_redis_reply_free(r);
        r = NULL;
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = ag_embedded_lua[at].data;
        lens[1] = ag_embedded_lua[at].len;
        rc = send(via, 3 + nargs, argv, lens, (void **)&r);
    }
    if (rc == AG_OK)
        *reply = r;
    return rc;
}

int ag_redis_script_run(struct ag_store *store, const char *piece, int nkeys,
                        int nargs, const char *const *argv, const size_t *lens,
                        void **reply)
{
    return run(store_send, store, piece, nkeys, nargs, argv, lens, reply);
}

int ag_redis_script_run_direct(struct ag_redis_direct *direct,
                               const char *piece, int nkeys, int nargs,
                               const char *const *argv, const size_t *lens,
                               void **reply)
{
    return run(direct_send, direct, piece, nkeys, nargs, argv, lens, reply);
}
