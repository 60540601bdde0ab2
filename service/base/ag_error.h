/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Errors, one way for every module. Functions return 0 on success or one
 * of the negative codes below; codes are never combined. A limiter
 * decision (allowed or denied) is never an error: it travels in an
 * out-struct.
 *
 * Whatever refuses input (a request body, a policy record, a list entry, a
 * flag) also fills a struct ag_error: the code, the field at fault and a
 * sentence that starts with the field's name, so that every layer above
 * (HTTP, CLI, logs) can show the sentence and name the field without
 * parsing one out of the other.
 */
#ifndef AG_ERROR_H
#define AG_ERROR_H

#define AG_OK 0
#define AG_ENOMEM (-1)    /* allocation failed */
#define AG_EINVAL (-2)    /* input refused; the message says which field */
#define AG_ETOOBIG (-3)   /* a capped buffer or list would overflow */
#define AG_EIO (-4)       /* file or database I/O failed */
#define AG_ESTORE (-5)    /* the limiter store (Redis) failed or timed out */
#define AG_ENOTFOUND (-6) /* no such policy, entry or key */
#define AG_ECONFLICT (-7) /* it exists already */
#define AG_EPENDING (-8)  /* not done yet: the store must answer first */
#define AG_EUNKNOWN (-9)  /* sent to the store, no answer: it may be done */
#define AG_EREDIRECT                                                           \
    (-10)               /* not run: a Redis Cluster node redirected it         \
                           (MOVED, ASK) to another */
#define AG_ESTALE (-11) /* not done: it was read at another version (412) */

#define AG_ERROR_FIELD_MAX 32
#define AG_ERROR_MSG_MAX 224

struct ag_error {
    int code;                       /* AG_E*, never AG_OK once set */
    char field[AG_ERROR_FIELD_MAX]; /* "" when no one field is at fault */
    char msg[AG_ERROR_MSG_MAX];     /* a sentence, starting with the field */
};

/* Fills err (which may be NULL) with code, field (NULL for none) and the
 * formatted message. */
void ag_error_fill(struct ag_error *err, int code, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* ag_error_fill, then code, so that a refusal is one statement:
 * return ag_error_set(err, AG_EINVAL, "limit", "limit must be ...");
 * a macro so that the compiler sees which code comes back. */
#define ag_error_set(err, code, ...)                                           \
    (ag_error_fill((err), (code), __VA_ARGS__), (code))
/* The usual refusal: AG_EINVAL, field at fault, "<field> <why>". */
#define ag_error_refuse(err, field, why)                                       \
    ag_error_set((err), AG_EINVAL, (field), "%s %s", (field), (why))

#endif
