/* engines: the background engines a process runs (`taxd serve` unless
 * --no-workers, and `taxd worker`), with their thread counts from the
 * configuration. Each engine gets a narrow configuration of its own, filled
 * in here from the service; none of them sees the service itself. */
#ifndef TAXD_APP_ENGINES_H
#define TAXD_APP_ENGINES_H

#include "app/service.h"
#include "app/workers.h"

/* Starts every engine; NULL with *err malloc'd on failure. The service keeps
 * the handle (svc->workers) so handlers can wake the engines. */
workers_t *engines_start(service_t *svc, char **err);

#endif
