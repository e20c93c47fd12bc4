/* reports/janitor: the engine that deletes what has passed its retention.
 * Reports (with their files) are deleted once 30 days have passed since
 * their creation (reports.expires_at, on the service clock). Readers never
 * depend on it: the status and download routes answer 404 for an expired
 * report before the janitor got to it, so its schedule only bounds how long
 * the bytes stay on disk. */
#ifndef TAXD_REPORTS_JANITOR_H
#define TAXD_REPORTS_JANITOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "store/store.h"

/* What the janitor needs; every pointer is borrowed and outlives the engine. */
typedef struct report_janitor_config {
    store_t *store;
    const taxd_clock_t *clock;    /* retention runs on the service clock */
    bool test_hooks;              /* run every 200 ms instead of every minute */
    const _Atomic bool *stopping; /* the process is stopping: end between batches */
} report_janitor_config_t;

/* Deletes every expired report, a batch per transaction (one step of the
 * engine's worker thread); returns the ms until the next run (60 s, or
 * 200 ms with --test-hooks so tests see the deletion soon after moving the
 * clock). */
int64_t report_janitor_step(const report_janitor_config_t *cfg, unsigned thread_index);

#endif
