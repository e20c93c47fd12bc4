/* workpool: the threads that run request handlers, apart from the threads
 * that move bytes. A handler may wait (on the database's write lock, on a
 * long computation); while it does, it holds a worker, never a connection
 * thread, so connections are still accepted, read and answered.
 *
 * Two queues, because what one kind of request waits on must not take what
 * the other kind needs: reads (GET, HEAD) never wait on SQLite's write lock,
 * writes may wait on it for seconds when another process holds it. Writes
 * may occupy at most threads - reserved_for_reads workers, so reads always
 * have workers, however many writes are stuck. A third queue, bulk, has
 * threads of its own that run at a lower CPU priority (nice +10): requests
 * with large bodies go there, so that parsing megabytes never takes the CPU
 * from small requests (on two cores it otherwise would). Each queue is first
 * in, first out. */
#ifndef TAXD_HTTP_WORKPOOL_H
#define TAXD_HTTP_WORKPOOL_H

#include <stdbool.h>

typedef enum workpool_class {
    WORKPOOL_READ,
    WORKPOOL_WRITE,
    WORKPOOL_BULK,
} workpool_class_t;

/* A job is embedded in the caller's own struct (no allocation to queue). */
typedef struct workpool_job {
    struct workpool_job *next;
} workpool_job_t;

typedef void (*workpool_run_fn)(void *user, workpool_job_t *job);

typedef struct workpool workpool_t;

/* Starts `threads` workers for reads and writes (at least 2;
 * reserved_for_reads at least 1 and below threads) and bulk_threads (at least
 * 1) for bulk. run(user, job) runs each job once. NULL on failure. */
workpool_t *workpool_start(unsigned threads, unsigned reserved_for_reads, unsigned bulk_threads,
                           workpool_run_fn run, void *user);

/* Queues a job; it runs as soon as a worker of its class is free. */
void workpool_push(workpool_t *pool, workpool_job_t *job, workpool_class_t cls);

/* Jobs queued and not yet started (both classes). */
unsigned workpool_queued(workpool_t *pool);

/* Runs what is queued, then stops the workers and frees the pool. */
void workpool_stop(workpool_t *pool);

#endif
