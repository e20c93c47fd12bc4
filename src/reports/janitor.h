/* reports/janitor: the engine that deletes what has passed its retention.
 * Reports (with their files) are deleted once 30 days have passed since
 * their creation (reports.expires_at, on the service clock). Readers never
 * depend on it: the status and download routes answer 404 for an expired
 * report before the janitor got to it, so its schedule only bounds how long
 * the bytes stay on disk. */
#ifndef TAXD_REPORTS_JANITOR_H
#define TAXD_REPORTS_JANITOR_H

#include <stdint.h>

#include "app/service.h"

/* worker_step_fn (app/workers.h): deletes every expired report, a batch per
 * transaction; returns the ms until the next run (60 s, or 200 ms with
 * --test-hooks so tests see the deletion soon after moving the clock). */
int64_t report_janitor_step(service_t *svc, unsigned thread_index);

#endif
