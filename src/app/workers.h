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

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One step of an engine over its own state. Returns how many ms to wait
 * before the next step (0: go on at once, there may be more work). */
typedef int64_t (*worker_step_fn)(void *engine, unsigned thread_index);

typedef struct worker_engine {
    const char *name; /* also its threads' name (top -H, perf), at most 15 bytes */
    worker_step_fn step;
    void *engine;     /* handed to every step of every thread of the engine */
    /* Frees engine once its threads stopped (workers_stop, or a failed
     * workers_start). NULL: the caller keeps it alive until workers_stop
     * returns and frees it then. */
    void (*release)(void *engine);
    unsigned threads;
} worker_engine_t;

typedef struct workers workers_t;

/* Starts every engine's threads; the engines with a release function are
 * the workers' from now on, also on failure. workers_stop raises
 * *stopping before it joins the threads, so that a long step that polls it
 * ends early. NULL with *err malloc'd on failure. */
workers_t *workers_start(const worker_engine_t *engines, size_t count, _Atomic bool *stopping,
                         char **err);
/* Wakes every waiting thread (new work was committed here). */
void workers_wake(workers_t *workers);
/* Asks every thread to stop after its current step, joins them, frees. */
void workers_stop(workers_t *workers);

#endif
