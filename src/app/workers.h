/* workers: the background engines of a process. Each engine is a step
 * function run in a loop by its own threads: a step does one unit of work
 * (claim a report and produce it, ...) and says how long to wait before the
 * next. Work is always claimed through leases in the database, never through
 * memory alone, so any number of processes may run engines on one database
 * (`taxd serve` runs them by default, `taxd serve --no-workers` runs none,
 * `taxd worker` runs only them). workers_wake cuts the wait short, so work
 * created in this process starts at once. */
#ifndef TAXD_APP_WORKERS_H
#define TAXD_APP_WORKERS_H

#include <stdint.h>

#include "app/service.h"

/* One step of an engine. Returns how many ms to wait before the next step
 * (0: go on at once, there may be more work). */
typedef int64_t (*worker_step_fn)(service_t *svc, unsigned thread_index);

typedef struct worker_engine {
    const char *name; /* also its threads' name (top -H, perf), at most 15 bytes */
    worker_step_fn step;
    unsigned threads;
} worker_engine_t;

typedef struct workers workers_t;

/* Starts every engine's threads. NULL with *err malloc'd on failure. */
workers_t *workers_start(service_t *svc, const worker_engine_t *engines, size_t count,
                         char **err);
/* Wakes every waiting thread (new work was committed here). */
void workers_wake(workers_t *workers);
/* Asks every thread to stop after its current step, joins them, frees. */
void workers_stop(workers_t *workers);

#endif
