/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An array is one block: its redisReply, the element pointer vector, then
 * one redisReply slot per element. A scalar element (integer, nil, string,
 * status, error) is written into its slot, a string's bytes still in their
 * own allocation; a nested array is a block of its own. So freeing walks
 * the elements, frees strings' bytes and nested blocks, then the block.
 * The reader calls these functions one value at a time, parents first,
 * and frees a half-built reply with ag_redis_reply_free on a protocol error:
 * unfilled elements are NULL.
 */
#include "ag_redis_reply.h"

#include <stdlib.h>
#include <string.h>

/* The slot of the value t reads, inside its parent's block; NULL for a
 * value at the top, which has no parent. */
static redisReply *slot(const redisReadTask *t)
{
    if (!t->parent)
        return NULL;
    redisReply *parent = t->parent->obj;
    redisReply *slots = (redisReply *)(parent->element + parent->elements);
    return &slots[t->idx];
}

/* Hooks r into its parent, if any; returns r. */
static void *attach(const redisReadTask *t, redisReply *r)
{
    if (t->parent) {
        redisReply *parent = t->parent->obj;
        parent->element[t->idx] = r;
    }
    return r;
}

/* A scalar's object: its slot, or for a top-level value a new one. */
static redisReply *scalar(const redisReadTask *t, int type)
{
    redisReply *r = slot(t);
    if (!r && !(r = calloc(1, sizeof *r)))
        return NULL;
    r->type = type;
    return r;
}

static void *create_string(const redisReadTask *t, char *str, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, str, len);
    copy[len] = '\0';
    redisReply *r = scalar(t, t->type);
    if (!r) {
        free(copy);
        return NULL;
    }
    r->str = copy;
    r->len = len;
    return attach(t, r);
}

static void *create_array(const redisReadTask *t, int elements)
{
    size_t n = elements > 0 ? (size_t)elements : 0;
    redisReply *r =
        calloc(1, sizeof *r + n * (sizeof(redisReply *) + sizeof *r));
    if (!r)
        return NULL;
    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = n ? (redisReply **)(r + 1) : NULL;
    return attach(t, r);
}

static void *create_integer(const redisReadTask *t, long long value)
{
    redisReply *r = scalar(t, REDIS_REPLY_INTEGER);
    if (!r)
        return NULL;
    r->integer = value;
    return attach(t, r);
}

static void *create_nil(const redisReadTask *t)
{
    redisReply *r = scalar(t, REDIS_REPLY_NIL);
    return r ? attach(t, r) : NULL;
}

redisReplyObjectFunctions ag_redis_reply_functions = {
    .createString = create_string,
    .createArray = create_array,
    .createInteger = create_integer,
    .createNil = create_nil,
    .freeObject = ag_redis_reply_free,
};

/* Frees what r owns, not r itself. */
static void free_contents(redisReply *r)
{
    if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *e = r->element[i];
            if (!e)
                continue;
            free_contents(e);
            if (e->type == REDIS_REPLY_ARRAY)
                free(e); /* a nested array is a block of its own */
        }
    } else {
        free(r->str);
    }
}

void ag_redis_reply_free(void *reply)
{
    if (!reply)
        return;
    free_contents(reply);
    free(reply);
}
