/* admin: the operator's commands (`taxd admin ...`). They work directly on the
 * database, print one JSON document on stdout, report errors as JSON on
 * stderr and exit non-zero on failure. */
#ifndef TAXD_ADMIN_ADMIN_H
#define TAXD_ADMIN_ADMIN_H

/* argv[0] is the first word after "admin". Returns the process exit status:
 * 0 success, 1 refused or failed, 2 usage error. */
int admin_main(int argc, char **argv);

#endif
