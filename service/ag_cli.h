/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operators' CLI, for policy changes without HTTP:
 *   abuseguard policy list|get NAME|put NAME FILE|delete NAME|export|
 *                     import FILE [--db PATH]
 * (a database that belongs to a fleet takes no change here: the fleet
 * does, through an instance),
 * It opens the same database (--db, else $ABUSEGUARD_DB, else
 * AG_DB_DEFAULT_PATH; a new one is created and seeded like the service does)
 * and goes through the same validation and audit as the admin API (actor
 * "cli"). Running services pick the change up within a second.
 * Exit 0 on success, 1 if the policy does not exist or the database fails,
 * 2 for bad usage or an invalid policy.
 */
#ifndef AG_CLI_H
#define AG_CLI_H

/* argv[0] is "policy". On the database of a fleet member, put, delete
 * and import are refused with a message saying how to change the fleet
 * instead; diff, apply, and import with --url go to a running fleet
 * (ag_cli_remote_main). */
int ag_cli_main(int argc, char **argv);

/* "abuseguard policy diff|apply|import FILE --url URL --token-file FILE
 * [--json]": a policy file against a running fleet's admin API, shown or
 * applied as one change (ag_cli_fleet.c). argv[0] is "policy". */
int ag_cli_remote_main(int argc, char **argv);

/* "abuseguard fleet init [--from this|fleet|FILE] [service flags]": the
 * operator's choice between this host's set and its fleet's
 * (ag_cli_fleet.c, docs/operations.md). argv[0] is "fleet". */
int ag_cli_fleet_main(int argc, char **argv);

/* "abuseguard lua library|function|script ALGORITHM...": prints the Lua
 * code the Redis store loads, exactly as it composes it (ag_redis_code):
 * the function library, the name of its check function (for FCALL), or
 * the script for a set of algorithms. For the benchmarks and for an
 * operator who wants to read what runs in Redis. argv[0] is "lua". */
int ag_cli_lua_main(int argc, char **argv);

/* "abuseguard pwned import|check|verify ...": imports a Pwned Passwords
 * download into a corpus file, prints the counts of passwords read from
 * standard input, or checks a corpus whole (docs/pwned.md). Exit 0 on
 * success, 2 for bad usage or input (a malformed line, a damaged
 * corpus), 1 for an I/O failure. ag_cli_pwned.c; argv[0] is "pwned". */
int ag_cli_pwned_main(int argc, char **argv);

/* "abuseguard healthcheck [--ready] [service flags]": GET /healthz (with
 * --ready /readyz) of the service these flags and the environment
 * describe, on this host, for a platform's probes where no curl is
 * installed. Exit 0 for a 200, 1 for anything else, 2 for bad usage.
 * ag_cli_health.c; argv[0] is "healthcheck". */
int ag_cli_health_main(int argc, char **argv);

#endif
