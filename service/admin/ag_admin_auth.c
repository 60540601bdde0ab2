/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_admin_auth.h"

#include <arpa/inet.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "ag_limiter.h"
#include "ag_log.h"
#include "ag_policy.h"

struct ag_admin_auth {
    pthread_mutex_t lock;      /* makes check, compare and record one step */
    struct ag_store *failures; /* owned; keyed by client address */
    struct ag_policy policy;   /* the sliding_log the failures count in */
    unsigned char token_hash[crypto_generichash_BYTES];
};

int ag_admin_auth_new(const char *token, ag_clock_fn clock, void *clock_ctx,
                      struct ag_admin_auth **out, struct ag_error *err)
{
    struct ag_admin_auth *a = calloc(1, sizeof *a);
    if (!a)
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    /* A sliding log holds one member per failure, so the limit bounds the
     * members of each address. */
    a->failures = ag_store_mem_new(
        AG_ADMIN_AUTH_ADDRS, (size_t)AG_ADMIN_AUTH_ADDRS * AG_ADMIN_AUTH_FAILS,
        clock, clock_ctx);
    if (!a->failures) {
        free(a);
        return ag_error_set(err, AG_ENOMEM, NULL, "out of memory");
    }
    /* Built in code, not read from the policy database: an edit there
     * must not be able to switch off the admin API's own protection. */
    snprintf(a->policy.name, sizeof a->policy.name, "admin.auth_fail");
    a->policy.endpoint = AG_EP_LOGIN; /* unused: the plan is built here */
    a->policy.key[0] = AG_KEY_IP;
    a->policy.nkeys = 1;
    a->policy.algorithm = AG_ALG_SLIDING_LOG;
    a->policy.limit = AG_ADMIN_AUTH_FAILS;
    a->policy.window_s = AG_ADMIN_AUTH_WINDOW_S;
    a->policy.block_growth = 1;
    a->policy.counts = AG_COUNTS_FAILURES;
    a->policy.enabled = true;
    pthread_mutex_init(&a->lock, NULL);
    crypto_generichash(a->token_hash, sizeof a->token_hash,
                       (const unsigned char *)token, strlen(token), NULL, 0);
    *out = a;
    return AG_OK;
}

void ag_admin_auth_free(struct ag_admin_auth *a)
{
    if (!a)
        return;
    ag_store_destroy(a->failures);
    pthread_mutex_destroy(&a->lock);
    sodium_memzero(a->token_hash, sizeof a->token_hash);
    free(a);
}

/* Compares the presented token with ours in time independent of where
 * they differ and of their lengths: both are hashed to a fixed size
 * first, then compared with sodium_memcmp. The scheme is matched without
 * regard to case and white space may follow the token (RFC 7235 section
 * 2.1, RFC 9110 section 5.5): a client or proxy that spells it "bearer" or
 * pads the field is not refused. */
static bool authorized(const struct ag_admin_auth *a, const char *header)
{
    static const char scheme[] = "Bearer";
    if (!header || strncasecmp(header, scheme, sizeof scheme - 1) != 0)
        return false;
    const char *token = header + sizeof scheme - 1;
    if (*token != ' ')
        return false;
    while (*token == ' ')
        token++;
    size_t len = strlen(token);
    while (len > 0 && (token[len - 1] == ' ' || token[len - 1] == '\t'))
        len--;
    if (len == 0)
        return false;
    unsigned char h[crypto_generichash_BYTES];
    crypto_generichash(h, sizeof h, (const unsigned char *)token, len, NULL, 0);
    return sodium_memcmp(h, a->token_hash, sizeof h) == 0;
}

/* A plan of the one policy for client: kind AG_PLAN_CHECK with nothing
 * charged asks whether the address is throttled, AG_PLAN_FAILURE records
 * a failure. The key is the address (this store never leaves the process,
 * so there is nothing to hide it from), an IPv6 one by its /64: one host
 * owns a /64, and rotating inside it must not buy more guesses. */
static void plan_for(const struct ag_admin_auth *a, const char *client,
                     enum ag_plan_kind kind, struct ag_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->kind = kind;
    plan->n = 1;
    struct ag_limit_op *op = &plan->ops[0];
    op->policy = &a->policy;
    struct ag_ip ip;
    char net[AG_IP_PREFIX_MAX];
    const char *who = client ? client : "";
    if (client && ag_identity_ip(client, &ip, "client", NULL) == AG_OK) {
        ag_identity_ip_net(&ip,
                           ip.family == AF_INET6 ? AG_IPV6_IP_PREFIX_DEFAULT
                                                 : ag_ip_bits(ip.family),
                           net);
        who = net;
    }
    /* The policy's name is this module's own, short: the key always fits
     * (a cut one would still be one client's). */
    if (snprintf(op->key, sizeof op->key, "ag:%s:%s", a->policy.name, who) >=
        (int)sizeof op->key)
        op->key[sizeof op->key - 1] = '\0';
    op->charge = kind == AG_PLAN_FAILURE;
}

enum ag_admin_auth_verdict ag_admin_auth_check(struct ag_admin_auth *a,
                                               const char *client,
                                               const char *header,
                                               uint32_t *retry_after_s)
{
    struct ag_plan plan;
    struct ag_limit_result res;
    enum ag_admin_auth_verdict v = AG_ADMIN_AUTH_OK;
    pthread_mutex_lock(&a->lock);
    plan_for(a, client, AG_PLAN_CHECK, &plan);
    /* The in-process store cannot fail; were it to, the request is judged
     * on its token alone rather than locking every operator out. */
    if (ag_store_check(a->failures, &plan, &res) == AG_OK && !res.allowed) {
        *retry_after_s = ag_limiter_seconds(res.retry_after_ms);
        v = AG_ADMIN_AUTH_THROTTLED;
    } else if (!authorized(a, header)) {
        plan_for(a, client, AG_PLAN_FAILURE, &plan);
        ag_store_check(a->failures, &plan, &res);
        v = AG_ADMIN_AUTH_DENIED;
    }
    pthread_mutex_unlock(&a->lock);
    if (v == AG_ADMIN_AUTH_DENIED) {
        ag_log(AG_LOG_WARN, "admin_auth_failed",
               "a missing or wrong admin token from %s",
               client && client[0] ? client : "an unknown address");
    }
    return v;
}
