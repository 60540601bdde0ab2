/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the configuration: what ag_config.c (where each value comes
 * from, and the checks across flags) and ag_config_flags.c (the flag
 * table and what each kind of value means) share, and no other module
 * may use. The table is the one place a flag is written down: its name
 * (and so its variable and its config file key), its field, its bounds,
 * its default and its help line.
 *
 * Read-only data and functions without state: safe from any thread.
 */
#ifndef AG_CONFIG_IMPL_H
#define AG_CONFIG_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_config.h"
#include "ag_error.h"

/* What a flag's value is, and so how ag_config__set_value reads it. */
enum ag_config__kind {
    AG_CONFIG__STR,    /* text into a char array of size bytes */
    AG_CONFIG__UINT,   /* a decimal number from min to max */
    AG_CONFIG__LISTEN, /* HOST:PORT, [V6]:PORT or unix:///path */
    AG_CONFIG__REDIS,  /* a Redis URL (ag_redis_addr_parse) */
    AG_CONFIG__LEVEL,  /* debug, info, warn or error */
    AG_CONFIG__SWITCH, /* no value: given or not (--help) */
    AG_CONFIG__ONOFF,  /* on or off */
    /* One of two words, the first true (ag_config_flags.c's words[]). */
    AG_CONFIG__WORD,
    /* Repeatable; each value is one or more space-separated URLs. */
    AG_CONFIG__URLS,
    /* Repeatable; each value is one or more space-separated paths. */
    AG_CONFIG__PATHS,
    /* Repeatable; each value one or more space-separated NAME=PATH. */
    AG_CONFIG__IPLISTS,
};

struct ag_config__flag {
    const char *name; /* without the leading dashes */
    enum ag_config__kind kind;
    size_t off;      /* offset of the field in struct ag_config */
    size_t size;     /* AG_CONFIG__STR: the field's size */
    unsigned min;    /* AG_CONFIG__UINT: smallest value */
    unsigned max;    /* AG_CONFIG__UINT: largest value */
    const char *def; /* default, as text; NULL for none */
    const char *help;
};

/* Flags the table may hold, for the arrays sized by it (one value per
 * flag); ag_config_flags.c asserts that the table fits. */
#define AG_CONFIG__FLAGS_MAX 64

/* The table, in --help order, and its length. */
extern const struct ag_config__flag ag_config__flags[];
extern const size_t ag_config__nflags;

/* The flag called name (len bytes, without dashes), or NULL. */
const struct ag_config__flag *ag_config__find_flag(const char *name,
                                                   size_t len);
/* Writes f's environment variable (ABUSEGUARD_SOME_FLAG) into out. */
void ag_config__env_name(const struct ag_config__flag *f, char *out,
                         size_t size);
/* Whether val, a value of f, holds a credential inline: a password in a
 * Redis URL, a user or password in a webhook URL (a file that others can
 * read must not hold one). Judged on the text alone, so that a value
 * another source overrides is judged too: the file shows it all the
 * same. */
bool ag_config__holds_credential(const struct ag_config__flag *f,
                                 const char *val);
/* Reads val into f's field of c. origin ("command line", the variable's
 * name, "<file> line <n>", "default") starts the one-line refusal, which
 * names the flag: AG_EINVAL with err's field the flag's name. */
int ag_config__set_value(struct ag_config *c, const struct ag_config__flag *f,
                         const char *val, const char *origin,
                         struct ag_error *err);

#endif
