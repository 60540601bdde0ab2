/*
 * The operators' CLI, for policy changes without HTTP:
 *   abuseguard policy list|get NAME|put NAME FILE|delete NAME|export|
 *                     import FILE [--db PATH]
 * It opens the same database (--db, else $ABUSEGUARD_DB, else
 * AG_DB_DEFAULT_PATH; a new one is created and seeded like the service does)
 * and goes through the same validation and audit as the admin API (actor
 * "cli"). Running services pick the change up within a second.
 * Exit 0 on success, 1 if the policy does not exist or the database fails,
 * 2 for bad usage or an invalid policy.
 */
#ifndef AG_CLI_H
#define AG_CLI_H

/* argv[0] is "policy". */
int ag_cli_main(int argc, char **argv);

#endif
