/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A policy set held in memory, as JSON: what a history's records add up
 * to, to compare with this instance's own without writing anything (a
 * join, abuseguard fleet init's diff), and the difference between two
 * sets, field by field (abuseguard policy diff). Pure functions of their
 * arguments; no I/O.
 *
 * A set is {"policies": {name: policy record}, "lists": [entry rows]}.
 * The operations are ag_db_fleet.h's; only their shape is checked here,
 * since the database's apply validates every value. Two sets are the
 * same when they hold the same policy records and the same entries,
 * whatever the entries' ids and the rows' versions (two hosts that added
 * the same entries in another order hold the same lists).
 */
#ifndef AG_FLEET_SET_H
#define AG_FLEET_SET_H

#include <stdbool.h>

#include <jansson.h>

/* An empty set; NULL when out of memory. The caller owns it. */
json_t *ag_fleet_set_new(void);

/* The set of an export or a snapshot operation ({"policies": [{"version",
 * "policy"}], "lists": [{"version", "entry"}]}); NULL if it is not one
 * (or out of memory). The caller owns it. */
json_t *ag_fleet_set_from_snapshot(const json_t *snap);

/* The record schema (ag_fleet_record.h) a change's body needs: 2 when
 * one of its operations holds what a binary of schema 1 refuses (a
 * policy with lists or countries, or a computed signal, ip_listed or
 * ip_country; an asn or ip_country list entry: issue 39's), else 1. A
 * record is written with the schema it needs, so a member not yet
 * upgraded applies every other record and holds on these, naming the
 * upgrade, instead of refusing a field it does not know. */
unsigned ag_fleet_set_schema(const json_t *body);

/* Applies a change's body ({"ops": [...]}) to set; AG_OK, or AG_EINVAL
 * if an operation is not of a known shape (set is then partly changed:
 * the caller drops it), AG_ENOMEM. */
int ag_fleet_set_apply(json_t *set, const json_t *body);

/* What changes from policies a to policies b (objects of name: record):
 * {"added": [names], "changed": [{"name", "fields": [{"field", "before",
 * "after"}]}], "removed": [names]}, names sorted; a field absent from one
 * side is null there. *same: nothing changes. NULL when out of memory. */
json_t *ag_fleet_policies_diff(const json_t *a, const json_t *b, bool *same);

/* What changes from set a to set b: {"policies": (as above), "lists":
 * {"added": n, "removed": n}}. */
json_t *ag_fleet_set_diff(const json_t *a, const json_t *b, bool *same);

#endif
