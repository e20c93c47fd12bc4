/* engines: the background engines a process runs (`taxd serve` unless
 * --no-workers, and `taxd worker`), with their thread counts from the
 * configuration. */
#ifndef TAXD_APP_ENGINES_H
#define TAXD_APP_ENGINES_H

#include "app/workers.h"

/* Starts every engine; NULL with *err malloc'd on failure. The service keeps
 * the handle (svc->workers) so handlers can wake the engines. */
workers_t *engines_start(service_t *svc, char **err);

#endif
