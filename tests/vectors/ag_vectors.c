/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vector runner: JSON to plans, plans through a store, results against
 * the expected ones. See ag_vectors.h.
 */
#include "ag_vectors.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_limiter.h"
#include "ag_policy.h"

#define POLICIES_MAX 8

static void die(const char *what, const char *name)
{
    fprintf(stderr, "algorithms.json: %s (%s)\n", what, name ? name : "?");
    abort();
}

json_t *ag_vectors_load(void)
{
    json_error_t err;
    json_t *root = json_load_file(AG_VECTORS_FILE, 0, &err);
    if (!root) {
        fprintf(stderr, "%s:%d: %s\n", AG_VECTORS_FILE, err.line, err.text);
        abort();
    }
    if (!json_is_array(json_object_get(root, "vectors")))
        die("no \"vectors\" array", AG_VECTORS_FILE);
    return root;
}

static uint32_t uint_field(const json_t *o, const char *field, json_int_t dflt)
{
    const json_t *v = json_object_get(o, field);
    if (!v)
        return (uint32_t)dflt;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        die("not an unsigned integer", field);
    return (uint32_t)json_integer_value(v);
}

/* The policies of vector v, with their keys (prefix + the policy's "key",
 * which defaults to its name: two versions of one policy share a key). */
static size_t policies_of(const json_t *v, const char *prefix,
                          struct ag_policy *p, char keys[][AG_STORE_KEY_MAX])
{
    const json_t *list = json_object_get(v, "policies");
    size_t n = json_array_size(list);
    if (n == 0 || n > POLICIES_MAX)
        die("policies: 1 to 8", json_string_value(json_object_get(v, "name")));
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(list, i);
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *alg = json_string_value(json_object_get(o, "algorithm"));
        const char *key = json_string_value(json_object_get(o, "key"));
        int a = -1;
        for (int k = 0; alg && k < AG_ALG_STORE_COUNT; k++)
            if (strcmp(ag_algorithm_name((enum ag_algorithm)k), alg) == 0)
                a = k;
        if (!name || a < 0)
            die("a policy needs a name and a known algorithm", name);
        memset(&p[i], 0, sizeof p[i]);
        snprintf(p[i].name, sizeof p[i].name, "%s", name);
        p[i].endpoint = AG_EP_LOGIN;
        p[i].key[0] = AG_KEY_USER;
        p[i].nkeys = 1;
        p[i].algorithm = (enum ag_algorithm)a;
        p[i].limit = uint_field(o, "limit", -1);
        p[i].window_s = uint_field(o, "window_s", -1);
        p[i].block_s = uint_field(o, "block_s", 0);
        p[i].block_growth = uint_field(o, "block_growth", 1);
        p[i].block_max_s = uint_field(o, "block_max_s", p[i].block_s);
        /* As ag_policy_from_json keeps it: parts per million. */
        const json_t *ratio = json_object_get(o, "min_ratio");
        if (ratio && !json_is_number(ratio))
            die("min_ratio: a number", name);
        p[i].min_ratio_ppm =
            ratio ? (uint32_t)(json_number_value(ratio) * AG_RATIO_ONE + 0.5)
                  : 0;
        if ((p[i].algorithm == AG_ALG_CONVERSION) != (p[i].min_ratio_ppm > 0))
            die("min_ratio: for conversion, and only for it", name);
        p[i].enabled = true;
        snprintf(keys[i], AG_STORE_KEY_MAX, "ag:%s:%s", prefix,
                 key ? key : name);
    }
    return n;
}

static size_t policy_index(const struct ag_policy *p, size_t n,
                           const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(p[i].name, name) == 0)
            return i;
    die("a step names an unknown policy", name);
    return 0;
}

void ag_vectors_result_text(const struct ag_limit_result *r, char *out,
                            size_t len)
{
    snprintf(out, len, "[%d, %u, %llu, %llu, %llu, %u]", r->allowed,
             r->remaining, (unsigned long long)r->retry_after_ms,
             (unsigned long long)r->reset_after_ms,
             (unsigned long long)r->blocked_ms, r->block_level);
}

/* The plan of one step: its "ops", each a policy's name or an object
 * {"policy", "member", "charge" (default true), "shadow" (default
 * false)}; a failure's "fp" and "fp_window_s", its fingerprint set being
 * the vector's own key (prefix), or with "fp_set" that key and the
 * set's name. */
static void plan_of(const json_t *step, const char *prefix,
                    const struct ag_policy *p, size_t np,
                    char keys[][AG_STORE_KEY_MAX], struct ag_plan *plan)
{
    /* "verified", a verified code for conversion, is recorded as a failure
     * is: both are reported events (check.lua's mode "record"). */
    static const char *const kinds[] = {"check", "failure", "verified", "clear",
                                        "peek"};
    static const enum ag_plan_kind kind_of[] = {AG_PLAN_CHECK, AG_PLAN_FAILURE,
                                                AG_PLAN_FAILURE,
                                                AG_PLAN_SUCCESS, AG_PLAN_PEEK};
    const size_t nkinds = sizeof kinds / sizeof kinds[0];
    const char *kind = json_string_value(json_object_get(step, "plan"));
    memset(plan, 0, sizeof *plan);
    size_t k = 0;
    while (kind && k < nkinds && strcmp(kind, kinds[k]) != 0)
        k++;
    if (k == nkinds)
        die("plan: \"check\", \"failure\", \"verified\", \"clear\" or "
            "\"peek\"",
            kind);
    plan->kind = kind_of[k];
    const char *fp = json_string_value(json_object_get(step, "fp"));
    if (fp && plan->kind != AG_PLAN_FAILURE)
        die("only a failure has a fingerprint", fp);
    /* The user whose set it is, where a vector has several (a spray):
     * each its own set. */
    const char *set = json_string_value(json_object_get(step, "fp_set"));
    if (set && !fp)
        die("fp_set without a fingerprint", set);
    if (fp) {
        snprintf(plan->fp, sizeof plan->fp, "%s", fp);
        snprintf(plan->fp_key, sizeof plan->fp_key, "%s%s%s%s",
                 AG_FP_KEY_PREFIX, prefix, set ? ":" : "", set ? set : "");
        if (!json_object_get(step, "fp_window_s"))
            die("a fingerprint needs fp_window_s", fp);
        plan->fp_window_s = uint_field(step, "fp_window_s", 0);
    }
    const json_t *ops = json_object_get(step, "ops");
    size_t i;
    const json_t *o;
    json_array_foreach(ops, i, o)
    {
        struct ag_limit_op *op = &plan->ops[plan->n++];
        const char *name =
            json_is_string(o) ? json_string_value(o)
                              : json_string_value(json_object_get(o, "policy"));
        size_t k = policy_index(p, np, name);
        const char *member = json_string_value(json_object_get(o, "member"));
        const json_t *charge = json_object_get(o, "charge");
        op->policy = &p[k];
        snprintf(op->key, sizeof op->key, "%s", keys[k]);
        snprintf(op->member, sizeof op->member, "%s", member ? member : "");
        op->charge = charge ? json_is_true(charge) : true;
        op->shadow = json_is_true(json_object_get(o, "shadow"));
    }
    if (plan->n == 0)
        die("a step without ops", kind);
}

int ag_vectors_run(const json_t *v, struct ag_store *s, const char *prefix,
                   ag_vectors_time_fn set_time, void *ctx, char *why,
                   size_t why_len)
{
    const char *vname = json_string_value(json_object_get(v, "name"));
    struct ag_policy p[POLICIES_MAX];
    char keys[POLICIES_MAX][AG_STORE_KEY_MAX];
    size_t np = policies_of(v, prefix, p, keys);
    const json_t *epoch = json_object_get(v, "epoch_us");
    if (!json_is_integer(epoch))
        die("no epoch_us", vname);
    const json_t *steps = json_object_get(v, "steps");
    size_t i;
    const json_t *step;
    json_array_foreach(steps, i, step)
    {
        const json_t *t = json_object_get(step, "t_us");
        const json_t *expect = json_object_get(step, "expect");
        if (!json_is_integer(t))
            die("a step without t_us", vname);
        struct ag_plan plan;
        plan_of(step, prefix, p, np, keys, &plan);
        bool clear = plan.kind == AG_PLAN_SUCCESS;
        if (json_array_size(expect) != (clear ? 0 : plan.n))
            die("expect needs one result per op (none for a clear)", vname);
        uint64_t now =
            (uint64_t)(json_integer_value(epoch) + json_integer_value(t));
        set_time(ctx, now);
        struct ag_limit_result res[AG_PLAN_MAX];
        memset(res, 0, sizeof res);
        if (clear && ag_store_clear(s, &plan) != AG_OK) {
            snprintf(why, why_len, "%s step %zu: the clear failed", vname, i);
            return -1;
        }
        if (clear)
            continue;
        if (ag_store_check(s, &plan, res) != AG_OK) {
            snprintf(why, why_len, "%s step %zu: the store failed", vname, i);
            return -1;
        }
        for (size_t k = 0; k < plan.n; k++) {
            const json_t *e = json_array_get(expect, k);
            /* A peek's result may add its block: blocked_ms and level,
             * 0 and 0 when left out. */
            struct ag_limit_result want = {
                .allowed = json_integer_value(json_array_get(e, 0)) != 0,
                .remaining = (uint32_t)json_integer_value(json_array_get(e, 1)),
                .retry_after_ms =
                    (uint64_t)json_integer_value(json_array_get(e, 2)),
                .reset_after_ms =
                    (uint64_t)json_integer_value(json_array_get(e, 3)),
                .blocked_ms =
                    (uint64_t)json_integer_value(json_array_get(e, 4)),
                .block_level =
                    (uint32_t)json_integer_value(json_array_get(e, 5)),
            };
            size_t width = json_array_size(e);
            if (width != 4 && (width != 6 || plan.kind != AG_PLAN_PEEK))
                die("a result is [allowed, remaining, retry, reset], and a "
                    "peek's may add [blocked_ms, block_level]",
                    vname);
            if (want.allowed == res[k].allowed &&
                want.remaining == res[k].remaining &&
                want.retry_after_ms == res[k].retry_after_ms &&
                want.reset_after_ms == res[k].reset_after_ms &&
                want.blocked_ms == res[k].blocked_ms &&
                want.block_level == res[k].block_level)
                continue;
            char got_text[128], want_text[128];
            ag_vectors_result_text(&res[k], got_text, sizeof got_text);
            ag_vectors_result_text(&want, want_text, sizeof want_text);
            snprintf(why, why_len,
                     "%s step %zu (t_us %lld), policy %s: got %s, want %s",
                     vname, i, (long long)json_integer_value(t),
                     plan.ops[k].policy->name, got_text, want_text);
            return -1;
        }
    }
    return 0;
}
