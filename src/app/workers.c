/* workers: see workers.h. Threads wait on one condition variable with a
 * timeout, so a wake reaches them at once and a stop is never later than the
 * current step. */
#include "app/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"

typedef struct worker_thread {
    workers_t *owner;
    const worker_engine_t *engine;
    unsigned index;
    pthread_t thread;
    bool started;
} worker_thread_t;

struct workers {
    _Atomic bool *stop_flag;  /* raised by workers_stop; the engines poll it */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    uint64_t wakes; /* bumped by workers_wake: a wake during a step is not lost */
    worker_engine_t *engines; /* a copy: the caller's table may be on its stack */
    size_t engine_count;
    worker_thread_t *threads;
    size_t thread_count;
};

/* Waits up to ms, or until woken or stopping. Returns false when stopping. */
static bool wait_for(workers_t *w, int64_t ms, uint64_t seen)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->lock);
    while (!w->stopping && w->wakes == seen)
        if (pthread_cond_timedwait(&w->wake, &w->lock, &until) == ETIMEDOUT)
            break;
    bool go_on = !w->stopping;
    pthread_mutex_unlock(&w->lock);
    return go_on;
}

static void *thread_main(void *arg)
{
    worker_thread_t *t = arg;
    workers_t *w = t->owner;
    pthread_setname_np(pthread_self(), t->engine->name);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        bool stop = w->stopping;
        uint64_t seen = w->wakes;
        pthread_mutex_unlock(&w->lock);
        if (stop)
            break;
        int64_t pause = t->engine->step(t->engine->engine, t->index);
        if (pause > 0 && !wait_for(w, pause, seen))
            break;
    }
    return NULL;
}

static void release_engines(const worker_engine_t *engines, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (engines[i].release != NULL)
            engines[i].release(engines[i].engine);
}

workers_t *workers_start(const worker_engine_t *engines, size_t count, _Atomic bool *stopping,
                         char **err)
{
    workers_t *w = calloc(1, sizeof *w);
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += engines[i].threads;
    if (w == NULL || (w->threads = calloc(total ? total : 1, sizeof *w->threads)) == NULL ||
        (w->engines = calloc(count ? count : 1, sizeof *w->engines)) == NULL) {
        if (w != NULL)
            free(w->threads);
        free(w);
        release_engines(engines, count);
        *err = strdup("workers: out of memory");
        return NULL;
    }
    memcpy(w->engines, engines, count * sizeof *engines);
    w->engine_count = count;
    w->stop_flag = stopping;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    for (size_t i = 0; i < count; i++)
        for (unsigned k = 0; k < engines[i].threads; k++) {
            worker_thread_t *t = &w->threads[w->thread_count++];
            *t = (worker_thread_t){.owner = w, .engine = &w->engines[i], .index = k};
            if (pthread_create(&t->thread, NULL, thread_main, t) != 0) {
                w->thread_count--;
                workers_stop(w);
                *err = strdup("workers: cannot start a thread");
                return NULL;
            }
            t->started = true;
        }
    log_event(LOG_INFO, "workers started", json_pack("{s:i}", "threads", (json_int_t)total));
    return w;
}

void workers_wake(workers_t *workers)
{
    if (workers == NULL)
        return;
    pthread_mutex_lock(&workers->lock);
    workers->wakes++;
    pthread_cond_broadcast(&workers->wake);
    pthread_mutex_unlock(&workers->lock);
}

void workers_stop(workers_t *workers)
{
    if (workers == NULL)
        return;
    /* Steps that run long (a report) poll the stop flag between pieces of
     * work, so a stop is not delayed by a whole step. */
    atomic_store(workers->stop_flag, true);
    pthread_mutex_lock(&workers->lock);
    workers->stopping = true;
    pthread_cond_broadcast(&workers->wake);
    pthread_mutex_unlock(&workers->lock);
    for (size_t i = 0; i < workers->thread_count; i++)
        if (workers->threads[i].started)
            pthread_join(workers->threads[i].thread, NULL);
    pthread_cond_destroy(&workers->wake);
    pthread_mutex_destroy(&workers->lock);
    release_engines(workers->engines, workers->engine_count);
    free(workers->threads);
    free(workers->engines);
    free(workers);
}
