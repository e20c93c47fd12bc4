/* admin: the operator's commands (`taxd admin ...`). They work directly on the
 * database, print one JSON document on stdout, report errors as JSON on
 * stderr and exit non-zero on failure.
 *
 * admin/ never builds the service: the composition root parses the command
 * line with admin_parse, opens what the commands need (the database, the
 * keys) into an admin_context_t (admin/cli.h) and runs the command with
 * admin_run (app/admin.c). Nothing is opened for --help or a usage error. */
#ifndef TAXD_ADMIN_ADMIN_H
#define TAXD_ADMIN_ADMIN_H

#include <stdbool.h>

#include "admin/cli.h"
#include "core/config.h"

typedef struct admin_command admin_command_t;

/* A command line that names a command to run. */
typedef struct admin_invocation {
    taxd_config_t cfg;               /* from the environment, with --db applied */
    const admin_command_t *command;  /* static */
    args_t args;                     /* the words after the command's name */
} admin_invocation_t;

#define ADMIN_RUN (-1) /* admin_parse: open cfg's database, then admin_run */

/* argv[0] is the first word after "admin". Returns ADMIN_RUN when *inv
 * names a command to run, or else the process exit status to return at
 * once: 0 after --help, EXIT_USAGE after reporting a usage error. */
int admin_parse(int argc, char **argv, admin_invocation_t *inv);

/* Runs the command of a parsed command line over ctx. Returns the process
 * exit status: 0 success, EXIT_REFUSED refused or failed, EXIT_USAGE usage
 * error. */
int admin_run(const admin_context_t *ctx, const admin_invocation_t *inv);

/* False for a command that opens no service (migrate-db): the root then
 * calls admin_run_alone instead of opening the database and admin_run. */
bool admin_opens_service(const admin_invocation_t *inv);
int admin_run_alone(const admin_invocation_t *inv);

#endif
