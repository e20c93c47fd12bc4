/* reports/runner: the engine that produces inventory-summary reports. Each
 * step claims one report with a lease (a pending one, or one whose lease
 * expired because its worker died), brings the included accounts' inventory
 * up to date, reads the rows in one read snapshot, streams the file into the
 * database and marks the report completed (or failed). */
#ifndef TAXD_REPORTS_RUNNER_H
#define TAXD_REPORTS_RUNNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "store/store.h"

/* What the runner needs; every pointer is borrowed and outlives the engine. */
typedef struct report_runner_config {
    store_t *store;
    const taxd_clock_t *clock;    /* the service clock: expiry, finished_at */
    int64_t lease_ms;             /* a claimed report's lease (renewed as work goes on) */
    unsigned max_leases;          /* expired leases before a report is failed */
    bool test_hooks;              /* honour a report's test directive (fail, pause=<ms>) */
    const _Atomic bool *stopping; /* the process is stopping: give the report back */
} report_runner_config_t;

/* One claim-and-produce (one step of the engine's worker threads); returns
 * the ms to wait before the next step (0 when more work may be waiting). */
int64_t report_runner_step(const report_runner_config_t *cfg, unsigned thread_index);

#endif
