/* SPDX-License-Identifier: Apache-2.0 */
#include "ag_http_response.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_error.h"
#include "ag_lists.h"

void ag_http_response_init(struct ag_http_response *r)
{
    memset(r, 0, sizeof *r);
    ag_buf_init(&r->body, AG_HTTP_RESPONSE_MAX);
    ag_buf_init(&r->rl_policy_field, AG_RATELIMIT_FIELD_MAX);
    ag_buf_init(&r->rl_field, AG_RATELIMIT_FIELD_MAX);
}

void ag_http_response_free(struct ag_http_response *r)
{
    ag_buf_free(&r->body);
    ag_buf_free(&r->rl_policy_field);
    ag_buf_free(&r->rl_field);
}

static void field_uint(struct ag_buf *b, const char *name, uint64_t v);

/* An sf-string (RFC 8941 3.3.3): s in quotes, '"' and '\' escaped; a byte
 * outside printable ASCII (none in a policy name) becomes '?'. */
static void sf_string(struct ag_buf *b, const char *s)
{
    ag_buf_append(b, "\"", 1);
    for (;;) {
        /* The run up to the next byte that needs care: a policy name is
         * one run. */
        size_t run = 0;
        while (s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
               s[run] != '\\')
            run++;
        ag_buf_append(b, s, run);
        s += run;
        if (!*s)
            break;
        if (*s == '"' || *s == '\\')
            ag_buf_append(b, (const char[]){'\\', *s}, 2);
        else
            ag_buf_append(b, "?", 1);
        s++;
    }
    ag_buf_append(b, "\"", 1);
}

/* The RateLimit-Policy and RateLimit fields of a check: an item per
 * policy that enforces (shadow ones and waived challenges only report, so
 * they are no quota of the caller's). A denied item has r=0 and t its
 * retry (the reported denial's is Retry-After itself, so Retry-After is
 * never earlier than its t); an allowed one t until its window holds
 * nothing. */
static int ratelimit_fields(struct ag_http_response *r,
                            const struct ag_plan *plan,
                            const struct ag_limit_result *res,
                            const struct ag_decision *d)
{
    struct ag_buf *p = &r->rl_policy_field, *s = &r->rl_field;
    ag_buf_reset(p);
    ag_buf_reset(s);
    size_t items = 0;
    for (size_t i = 0; i < plan->n; i++) {
        const struct ag_limit_op *op = &plan->ops[i];
        if (op->shadow)
            continue;
        if (items++) {
            ag_buf_puts(p, ", ");
            ag_buf_puts(s, ", ");
        }
        sf_string(p, op->policy->name);
        field_uint(p, ";q=", op->policy->limit);
        field_uint(p, ";w=", op->policy->window_s);
        sf_string(s, op->policy->name);
        uint32_t t;
        if (!res[i].allowed)
            t = (int)i == d->denied_by
                    ? d->retry_after_s
                    : ag_limiter_seconds(res[i].retry_after_ms);
        else
            t = res[i].reset_after_ms
                    ? ag_limiter_seconds(res[i].reset_after_ms)
                    : 0;
        field_uint(s, ";r=", res[i].allowed ? res[i].remaining : 0);
        field_uint(s, ";t=", t);
    }
    int rc = ag_buf_error(p);
    return rc ? rc : ag_buf_error(s);
}

static int ascii_string(struct ag_buf *b, const char *s)
{
    char clean[512];
    size_t i;
    for (i = 0; s[i] && i + 1 < sizeof clean; i++)
        clean[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    clean[i] = '\0';
    return ag_buf_json_string(b, clean);
}

int ag_http_response_field_error(struct ag_http_response *r, int status,
                                 const char *msg, const char *field)
{
    r->status = status;
    ag_buf_reset(&r->body);
    int rc = ag_buf_puts(&r->body, "{\"error\":");
    rc = rc ? rc : ascii_string(&r->body, msg);
    if (field) {
        rc = rc ? rc : ag_buf_puts(&r->body, ",\"field\":");
        rc = rc ? rc : ascii_string(&r->body, field);
    }
    return rc ? rc : ag_buf_puts(&r->body, "}");
}

int ag_http_response_error(struct ag_http_response *r, int status,
                           const char *msg)
{
    return ag_http_response_field_error(r, status, msg, NULL);
}

int ag_http_response_refusal(struct ag_http_response *r, int status,
                             const struct ag_error *err)
{
    return ag_http_response_field_error(r, status, err->msg,
                                        err->field[0] ? err->field : NULL);
}

/* The reason phrase of the statuses answered without libmicrohttpd; it
 * is informative only (RFC 9112 4). */
static const char *reason(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}

size_t ag_http_response_raw(const struct ag_http_response *r, char *out,
                            size_t size)
{
    char retry[40] = "";
    if (r->retry_after)
        snprintf(retry, sizeof retry, "Retry-After: %" PRIu32 "\r\n",
                 r->retry_after);
    int n = snprintf(out, size,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: %s\r\n"
                     "Cache-Control: no-store\r\n"
                     "%s"
                     "Connection: close\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     r->status, reason(r->status),
                     r->content_type ? r->content_type : "application/json",
                     retry, r->body.len);
    if (n < 0 || (size_t)n >= size || (size_t)n + r->body.len > size)
        return 0;
    if (r->body.len)
        memcpy(out + n, r->body.p, r->body.len);
    return (size_t)n + r->body.len;
}

int ag_http_response_status(struct ag_http_response *r, int status,
                            const char *text)
{
    r->status = status;
    ag_buf_reset(&r->body);
    return ag_buf_printf(&r->body, "{\"status\":\"%s\"}", text);
}

/* The check responses are built with appends, not printf: they are on
 * every request's path. ag_buf keeps the first failure (its sticky
 * error), so a run of appends is checked once, at its end. */
static void field_uint(struct ag_buf *b, const char *name, uint64_t v)
{
    ag_buf_puts(b, name);
    ag_buf_uint(b, v);
}

static const char *device_name(bool trusted)
{
    return trusted ? "trusted" : "untrusted";
}

/* A decision of an inspect (AG_PLAN_PEEK) also shows the policy's block:
 * how long a running one has left, and its level where blocks grow. */
static void block_json(struct ag_buf *b, const struct ag_limit_op *op,
                       const struct ag_limit_result *res)
{
    if (res->blocked_ms)
        field_uint(b, ",\"blocked_for\":", ag_limiter_seconds(res->blocked_ms));
    if (op->policy->block_s && op->policy->block_growth > 1)
        field_uint(b, ",\"block_level\":", res->block_level);
}

static void decision_json(struct ag_buf *b, const struct ag_limit_op *op,
                          const struct ag_limit_result *res, bool peek,
                          bool cached)
{
    /* Policy names are [a-z0-9._-]: no escaping needed. */
    ag_buf_puts(b, "{\"policy\":\"");
    ag_buf_puts(b, op->policy->name);
    ag_buf_puts(b,
                res->allowed ? "\",\"allowed\":true" : "\",\"allowed\":false");
    field_uint(b, ",\"limit\":", op->policy->limit);
    field_uint(b, ",\"remaining\":", res->remaining);
    field_uint(b, ",\"reset_after\":",
               res->reset_after_ms ? ag_limiter_seconds(res->reset_after_ms)
                                   : 0);
    if (!res->allowed)
        field_uint(
            b, ",\"retry_after\":", ag_limiter_seconds(res->retry_after_ms));
    /* A passed challenge is planned as a shadow, but is one only if its
     * policy is. */
    if (op->policy->mode == AG_MODE_SHADOW || (op->shadow && !op->waived))
        ag_buf_puts(b, ",\"shadow\":true");
    if (op->policy->action == AG_ACTION_CHALLENGE)
        ag_buf_puts(b, ",\"action\":\"challenge\"");
    if (op->waived)
        ag_buf_puts(b, ",\"challenge_passed\":true");
    if (peek)
        block_json(b, op, res);
    if (cached)
        ag_buf_puts(b, ",\"cached\":true");
    ag_buf_puts(b, "}");
}

/* "skipped": the policies the plan left out for the network files
 * (struct ag_plan_skip), each with why: "not_loaded" with the flag that
 * loads what it lacks (and the list's name for --ip-list), or
 * "address_unknown". Policy and list names, and the flags, need no
 * escaping. */
static void skipped_json(struct ag_buf *b, const struct ag_plan *plan)
{
    ag_buf_puts(b, ",\"skipped\":[");
    for (size_t i = 0; i < plan->nskipped; i++) {
        const struct ag_plan_skip *k = &plan->skipped[i];
        ag_buf_puts(b, i ? ",{\"policy\":\"" : "{\"policy\":\"");
        ag_buf_puts(b, k->policy->name);
        const char *list = NULL;
        const char *flag =
            k->why == AG_SKIP_NOT_LOADED
                ? ag_limiter_net_missing(k->policy, plan->net.avail, &list)
                : NULL;
        if (!flag) {
            ag_buf_puts(b, "\",\"why\":\"address_unknown\"}");
            continue;
        }
        ag_buf_puts(b, "\",\"why\":\"not_loaded\",\"flag\":\"");
        ag_buf_puts(b, flag);
        if (list) {
            ag_buf_puts(b, "\",\"list\":\"");
            ag_buf_puts(b, list);
        }
        ag_buf_puts(b, "\"}");
    }
    ag_buf_puts(b, "]");
}

/* An enforcing policy that fails closed, in an inspect while the store
 * cannot answer: what it would say is unknown, and a check would be
 * refused for it. */
static bool unknown(const struct ag_limit_op *op, bool degraded)
{
    return degraded && !op->shadow && op->policy->fail == AG_FAIL_CLOSED;
}

/* The body of a check's answer (or, for a peek plan, an inspect's: with
 * "inspected", blocks, and fail-closed policies unknown while degraded). */
static void check_body(struct ag_buf *b, const struct ag_plan *plan,
                       const struct ag_limit_result *res,
                       const struct ag_decision *d, bool degraded, bool cached,
                       const char *nonce)
{
    bool peek = plan->kind == AG_PLAN_PEEK;
    const struct ag_limit_op *closed = NULL;
    for (size_t i = 0; peek && i < plan->n && !closed; i++)
        if (unknown(&plan->ops[i], degraded))
            closed = &plan->ops[i];
    ag_buf_reset(b);
    if (closed) {
        /* What the check would be answered: ag_http_response_unavailable. */
        ag_buf_puts(b, "{\"allowed\":false,\"reason\":\"store_unavailable\","
                       "\"policy\":\"");
        ag_buf_puts(b, closed->policy->name);
        ag_buf_puts(b, "\",\"retry_after\":1,");
    } else if (d->allowed) {
        ag_buf_puts(b, "{\"allowed\":true,");
    } else {
        ag_buf_puts(b, "{\"allowed\":false,\"policy\":\"");
        ag_buf_puts(b, plan->ops[d->denied_by].policy->name);
        ag_buf_puts(b, d->action == AG_ACTION_CHALLENGE
                           ? "\",\"action\":\"challenge\""
                           : "\",\"action\":\"deny\"");
        field_uint(b, ",\"retry_after\":", d->retry_after_s);
        ag_buf_puts(b, ",");
        /* Made by the service, base64url: nothing to escape. */
        if (nonce && nonce[0]) {
            ag_buf_puts(b, "\"challenge_nonce\":\"");
            ag_buf_puts(b, nonce);
            ag_buf_puts(b, "\",");
        }
    }
    ag_buf_puts(b, "\"device\":\"");
    ag_buf_puts(b, device_name(plan->trusted));
    ag_buf_puts(b, "\",");
    if (degraded)
        ag_buf_puts(b, "\"degraded\":true,");
    if (peek)
        ag_buf_puts(b, "\"inspected\":true,");
    ag_buf_puts(b, "\"decisions\":[");
    for (size_t i = 0; i < plan->n; i++) {
        if (i)
            ag_buf_puts(b, ",");
        if (peek && unknown(&plan->ops[i], degraded)) {
            ag_buf_puts(b, "{\"policy\":\"");
            ag_buf_puts(b, plan->ops[i].policy->name);
            field_uint(b, "\",\"allowed\":false,\"limit\":",
                       plan->ops[i].policy->limit);
            ag_buf_puts(b, ",\"unknown\":true}");
        } else {
            decision_json(b, &plan->ops[i], &res[i], peek, cached);
        }
    }
    ag_buf_puts(b, "]");
    if (plan->nskipped)
        skipped_json(b, plan);
    ag_buf_puts(b, "}");
}

static int check_response(struct ag_http_response *r,
                          const struct ag_plan *plan,
                          const struct ag_limit_result *res,
                          const struct ag_decision *d, bool degraded,
                          bool cached, const char *nonce)
{
    struct ag_buf *b = &r->body;
    check_body(b, plan, res, d, degraded, cached, nonce);
    r->status = d->allowed ? 200 : 429;
    if (!d->allowed)
        r->retry_after = d->retry_after_s;
    int rc = ag_buf_error(b);

    if (!rc)
        rc = ratelimit_fields(r, plan, res, d);
    r->rate_headers = d->tightest >= 0;
    if (r->rate_headers) {
        const struct ag_limit_result *t = &res[d->tightest];
        r->rl_limit = plan->ops[d->tightest].policy->limit;
        r->rl_remaining = t->remaining;
        r->rl_reset = d->allowed ? (t->reset_after_ms
                                        ? ag_limiter_seconds(t->reset_after_ms)
                                        : 0)
                                 : d->retry_after_s;
    }
    return rc;
}

int ag_http_response_check(struct ag_http_response *r,
                           const struct ag_plan *plan,
                           const struct ag_limit_result *res,
                           const struct ag_decision *d, bool degraded,
                           const char *nonce)
{
    return check_response(r, plan, res, d, degraded, false, nonce);
}

int ag_http_response_cached(struct ag_http_response *r,
                            const struct ag_plan *plan,
                            const struct ag_limit_result *res,
                            const struct ag_decision *d, const char *nonce)
{
    return check_response(r, plan, res, d, false, true, nonce);
}

int ag_http_response_inspect(struct ag_http_response *r,
                             const struct ag_plan *plan,
                             const struct ag_limit_result *res, bool degraded)
{
    struct ag_decision d;
    ag_limiter_decide(plan, res, &d);
    check_body(&r->body, plan, res, &d, degraded, false, NULL);
    r->status = 200;
    return ag_buf_error(&r->body);
}

int ag_http_response_inspect_listed(struct ag_http_response *r,
                                    const struct ag_list_entry *e, bool trusted)
{
    int rc = ag_http_response_listed(r, e, trusted);
    /* The listed body ends with "]}": "inspected" goes before its "}". */
    if (rc == AG_OK && r->body.len > 0) {
        r->body.len--;
        r->body.p[r->body.len] = '\0';
        rc = ag_buf_puts(&r->body, ",\"inspected\":true}");
    }
    r->status = 200;
    return rc;
}

int ag_http_response_unavailable(struct ag_http_response *r,
                                 const struct ag_limit_op *closed, bool trusted)
{
    ag_buf_reset(&r->body);
    r->status = 503;
    r->retry_after = 1;
    return ag_buf_printf(&r->body,
                         "{\"allowed\":false,\"reason\":\"store_unavailable\","
                         "\"policy\":\"%s\",\"retry_after\":1,"
                         "\"device\":\"%s\",\"degraded\":true}",
                         closed->policy->name, device_name(trusted));
}

int ag_http_response_listed(struct ag_http_response *r,
                            const struct ag_list_entry *e, bool trusted)
{
    bool allow = e->list == AG_LIST_ALLOW;
    r->status = allow ? 200 : 403;
    ag_buf_reset(&r->body);
    return ag_buf_printf(
        &r->body,
        "{\"allowed\":%s,\"list\":\"%s\",\"device\":\"%s\",\"decisions\":"
        "[{\"list\":\"%s\",\"id\":%lld,\"kind\":\"%s\",\"allowed\":%s}]}",
        allow ? "true" : "false", ag_list_name(e->list), device_name(trusted),
        ag_list_name(e->list), (long long)e->id, ag_list_kind_name(e->kind),
        allow ? "true" : "false");
}

int ag_http_response_device_token(struct ag_http_response *r, const char *token,
                                  uint32_t ttl_s)
{
    r->status = 200;
    ag_buf_reset(&r->body);
    return ag_buf_printf(&r->body,
                         "{\"device_token\":\"%s\",\"expires_in\":%u}", token,
                         (unsigned)ttl_s);
}

int ag_http_response_json(struct ag_http_response *r, int status,
                          const json_t *obj)
{
    r->status = status;
    ag_buf_reset(&r->body);
    /* 15 digits: a policy's min_ratio 0.2 reads 0.2, not the 17 digits of
     * its double, and still reads back as the same double. */
    char *text = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(15));
    if (!text)
        return AG_ENOMEM;
    int rc = ag_buf_puts(&r->body, text);
    free(text);
    return rc;
}
