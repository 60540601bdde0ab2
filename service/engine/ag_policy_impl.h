/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seam between the policy record's validator (ag_policy.c) and the
 * signal algorithm's own fields (ag_policy_signal.c: signal, lists,
 * countries), shared by those two files and nothing else. Calls go one
 * way: the validator calls the signal part.
 */
#ifndef AG_POLICY_IMPL_H
#define AG_POLICY_IMPL_H

#include <jansson.h>

#include "ag_error.h"
#include "ag_policy.h"

/* obj's field, NULL when absent or null (null reads as absent: a row's
 * empty column). Defined in ag_policy_signal.c, which ag_policy.c calls
 * and never the other way. */
const json_t *ag_policy__field(const json_t *obj, const char *field);

/* Reads the signal algorithm's fields of obj into p, whose endpoint,
 * algorithm and counting fields are read already, and refuses them in a
 * policy of another algorithm; refuses a signal policy's counting fields
 * that are not a signal's. AG_OK or AG_EINVAL with err naming the
 * field. */
int ag_policy__read_signal(const json_t *obj, struct ag_policy *p,
                           struct ag_error *err);

/* Puts p's signal fields into o (nothing for another algorithm): AG_OK,
 * or AG_ENOMEM. */
int ag_policy__write_signal(json_t *o, const struct ag_policy *p);

#endif
