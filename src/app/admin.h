/* app/admin: `taxd admin ...`. The operator's commands (admin/admin.h) get
 * what they need from here: the database and the keys are opened the way
 * `taxd serve` opens them, so that both agree on every key file and route. */
#ifndef TAXD_APP_ADMIN_H
#define TAXD_APP_ADMIN_H

/* argv[0] is the first word after "admin". Returns the process exit status:
 * 0 success, 1 refused or failed, 2 usage error. */
int app_admin_main(int argc, char **argv);

#endif
