/* app: the process modes of taxd, which src/main.c dispatches to. Each builds
 * the service and what the mode runs from it (the HTTP server and the API's
 * context, the engines, the operator commands) and tears them down again;
 * main.c knows nothing of the parts. argv[0] is the first word after the
 * command; each returns the process exit status. */
#ifndef TAXD_APP_APP_H
#define TAXD_APP_APP_H

/* Once per process, before any thread (libcurl's global state): 0, or -1
 * after printing why on stderr. app_global_cleanup undoes it (atexit). */
int app_global_init(void);
void app_global_cleanup(void);

/* `taxd serve`: the HTTP API and, unless --no-workers, the engines, until
 * SIGTERM or SIGINT. 0, 1 when the start failed, 2 on a usage error. */
int app_serve(int argc, char **argv);

/* `taxd worker`: only the engines (same options and exit statuses). */
int app_worker(int argc, char **argv);

/* `taxd admin`: the operator commands (admin/admin.h), given what they need
 * by app/admin.c; 0 success, 1 refused or failed, 2 usage error. */
int app_admin(int argc, char **argv);

#endif
