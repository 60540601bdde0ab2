/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-process store's key table: AG_MEM_KEYS slots, found by hashing
 * the key and probing AG_MEM_PROBE slots; an expired slot is free, and
 * when a probe window is full the slot closest to expiry is evicted,
 * never one the check under way holds. A slot holds one kind of value, as
 * a Redis key has a type.
 */
#include "ag_store_mem_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

uint64_t ag_mem__hash(const char *s)
{
    unsigned char h[8];
    crypto_generichash(h, sizeof h, (const unsigned char *)s, strlen(s), NULL,
                       0);
    uint64_t v;
    memcpy(&v, h, sizeof v);
    return v;
}

void ag_mem__release(struct ag_mem_store *s, struct ag_mem_slot *sl)
{
    s->members -= sl->cap;
    free(sl->set);
    free(sl->fps);
    memset(sl, 0, sizeof *sl);
}

struct ag_mem_slot *ag_mem__find(struct ag_mem_store *s, const char *key,
                                 uint64_t now)
{
    uint64_t h = ag_mem__hash(key);
    for (size_t i = 0; i < AG_MEM_PROBE; i++) {
        struct ag_mem_slot *sl = &s->slots[(h + i) % s->nslots];
        if (sl->expire && sl->expire <= now)
            ag_mem__release(s, sl);
        if (sl->expire && strcmp(sl->key, key) == 0)
            return sl;
    }
    return NULL;
}

struct ag_mem_slot *ag_mem__pin(struct ag_mem_store *s, struct ag_mem_slot *sl)
{
    if (sl)
        sl->pin = s->check;
    return sl;
}

struct ag_mem_slot *ag_mem__claim(struct ag_mem_store *s, const char *key,
                                  uint64_t now)
{
    struct ag_mem_slot *sl = ag_mem__find(s, key, now);
    if (sl)
        return ag_mem__pin(s, sl);
    uint64_t h = ag_mem__hash(key);
    struct ag_mem_slot *victim = NULL;
    for (size_t i = 0; i < AG_MEM_PROBE; i++) {
        struct ag_mem_slot *c = &s->slots[(h + i) % s->nslots];
        if (!c->expire) {
            victim = c;
            break;
        }
        if (c->pin != s->check && (!victim || c->expire < victim->expire))
            victim = c;
    }
    if (!victim)
        victim = &s->scratch;
    ag_mem__release(s, victim);
    snprintf(victim->key, sizeof victim->key, "%s", key);
    victim->expire = now + 1; /* the caller sets the real expiry */
    return ag_mem__pin(s, victim);
}

uint64_t ag_mem__expiry_at(double at)
{
    return ((uint64_t)ceil(at / 1000) + 1) * 1000;
}

struct ag_mem_slot *ag_mem__state_of(struct ag_mem_store *s, const char *key,
                                     enum ag_mem_kind kind, uint64_t now)
{
    struct ag_mem_slot *sl = ag_mem__find(s, key, now);
    if (sl && sl->kind != AG_MEM_KIND_NONE && sl->kind != kind) {
        ag_mem__release(s, sl);
        return NULL;
    }
    return sl;
}

struct ag_mem_slot *ag_mem__state_seen(struct ag_mem_store *s, const char *key,
                                       enum ag_mem_kind kind, uint64_t now)
{
    struct ag_mem_slot *sl = ag_mem__find(s, key, now);
    if (sl && sl->kind != AG_MEM_KIND_NONE && sl->kind != kind)
        return NULL;
    return sl;
}

bool ag_mem__snapshot(const struct ag_mem_slot *sl, struct ag_mem_slot *copy,
                      struct ag_mem_slot **out)
{
    *out = NULL;
    if (!sl)
        return true;
    *copy = *sl;
    copy->fps = NULL;
    copy->set = NULL;
    if (sl->kind == AG_MEM_KIND_SET && sl->n) {
        copy->set = malloc(sl->n * sizeof *copy->set);
        if (!copy->set)
            return false;
        memcpy(copy->set, sl->set, sl->n * sizeof *copy->set);
    }
    copy->cap = copy->n;
    *out = copy;
    return true;
}
