/* workpool: see workpool.h. One lock; a condition variable for the read and
 * write workers and one for the bulk workers: a worker that finds nothing it
 * may run sleeps; a push or a finished write wakes one (a finished write may
 * let a queued write run). */
#include "http/workpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct queue {
    workpool_job_t *head, *tail;
} queue_t;

struct workpool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    queue_t queues[3];
    pthread_cond_t bulk_wake;
    unsigned queued;
    unsigned writers_running;
    unsigned max_writers;
    bool stopping;
    workpool_run_fn run;
    void *user;
    unsigned thread_count;
    pthread_t *threads;
};

/* Bulk workers lower their own CPU priority; Linux applies a thread's nice
 * value to that thread alone. */
#define BULK_NICE 10



static void enqueue(queue_t *q, workpool_job_t *job)
{
    job->next = NULL;
    if (q->tail != NULL)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
}

static workpool_job_t *dequeue(queue_t *q)
{
    workpool_job_t *job = q->head;
    if (job != NULL) {
        q->head = job->next;
        if (q->head == NULL)
            q->tail = NULL;
    }
    return job;
}

/* The next job this worker may run (lock held), reads first. */
static workpool_job_t *next_job(workpool_t *pool, workpool_class_t *cls)
{
    workpool_job_t *job = dequeue(&pool->queues[WORKPOOL_READ]);
    *cls = WORKPOOL_READ;
    if (job == NULL && pool->writers_running < pool->max_writers) {
        job = dequeue(&pool->queues[WORKPOOL_WRITE]);
        *cls = WORKPOOL_WRITE;
    }
    return job;
}

static void *bulk_main(void *arg)
{
    workpool_t *pool = arg;
    setpriority(PRIO_PROCESS, (id_t)gettid(), BULK_NICE); /* best effort */
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        workpool_job_t *job = dequeue(&pool->queues[WORKPOOL_BULK]);
        if (job == NULL) {
            if (pool->stopping)
                break;
            pthread_cond_wait(&pool->bulk_wake, &pool->lock);
            continue;
        }
        pool->queued--;
        pthread_mutex_unlock(&pool->lock);
        pool->run(pool->user, job);
        pthread_mutex_lock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void *worker_main(void *arg)
{
    workpool_t *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        workpool_class_t cls;
        workpool_job_t *job = next_job(pool, &cls);
        if (job == NULL) {
            if (pool->stopping)
                break;
            pthread_cond_wait(&pool->wake, &pool->lock);
            continue;
        }
        pool->queued--;
        if (cls == WORKPOOL_WRITE)
            pool->writers_running++;
        pthread_mutex_unlock(&pool->lock);
        pool->run(pool->user, job);
        pthread_mutex_lock(&pool->lock);
        if (cls == WORKPOOL_WRITE) {
            pool->writers_running--;
            if (pool->queues[WORKPOOL_WRITE].head != NULL)
                pthread_cond_signal(&pool->wake);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

workpool_t *workpool_start(unsigned threads, unsigned reserved_for_reads, unsigned bulk_threads,
                           workpool_run_fn run, void *user)
{
    if (bulk_threads < 1)
        bulk_threads = 1;
    if (threads < 2)
        threads = 2;
    if (reserved_for_reads < 1)
        reserved_for_reads = 1;
    if (reserved_for_reads >= threads)
        reserved_for_reads = threads - 1;
    workpool_t *pool = calloc(1, sizeof *pool);
    if (pool == NULL ||
        (pool->threads = calloc(threads + bulk_threads, sizeof *pool->threads)) == NULL) {
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->bulk_wake, NULL);
    pool->max_writers = threads - reserved_for_reads;
    pool->run = run;
    pool->user = user;
    for (unsigned i = 0; i < threads + bulk_threads; i++) {
        void *(*main_fn)(void *) = i < threads ? worker_main : bulk_main;
        if (pthread_create(&pool->threads[i], NULL, main_fn, pool) != 0)
            break;
        pool->thread_count++;
    }
    if (pool->thread_count < threads + bulk_threads) {
        workpool_stop(pool);
        return NULL;
    }
    return pool;
}

void workpool_push(workpool_t *pool, workpool_job_t *job, workpool_class_t cls)
{
    pthread_mutex_lock(&pool->lock);
    enqueue(&pool->queues[cls], job);
    pool->queued++;
    pthread_cond_signal(cls == WORKPOOL_BULK ? &pool->bulk_wake : &pool->wake);
    pthread_mutex_unlock(&pool->lock);
}

unsigned workpool_queued(workpool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    unsigned n = pool->queued;
    pthread_mutex_unlock(&pool->lock);
    return n;
}

void workpool_stop(workpool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_cond_broadcast(&pool->bulk_wake);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i < pool->thread_count; i++)
        pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->bulk_wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->threads);
    free(pool);
}
