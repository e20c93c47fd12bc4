/* reports/runner: the engine that produces inventory-summary reports. Each
 * step claims one report with a lease (a pending one, or one whose lease
 * expired because its worker died), brings the included accounts' inventory
 * up to date, reads the rows in one read snapshot, streams the file into the
 * database and marks the report completed (or failed). */
#ifndef TAXD_REPORTS_RUNNER_H
#define TAXD_REPORTS_RUNNER_H

#include <stdint.h>

#include "app/service.h"

/* worker_step_fn (app/workers.h): one claim-and-produce; returns the ms to
 * wait before the next step (0 when more work may be waiting). */
int64_t report_runner_step(service_t *svc, unsigned thread_index);

#endif
