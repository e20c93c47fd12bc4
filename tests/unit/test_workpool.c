/* Unit tests for src/http/workpool.c: writes stuck on a lock never take the
 * workers reads need, bulk jobs have threads of their own, and every queued
 * job runs before the pool stops. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "core/clock.h"
#include "http/workpool.h"

typedef struct job {
    workpool_job_t link;
    workpool_class_t cls;
    _Atomic bool done;
} job_t;

typedef struct fixture {
    pthread_mutex_t lock;
    pthread_cond_t release;
    bool released;
    _Atomic int writers_now, writers_peak;
} fixture_t;

static void run(void *user, workpool_job_t *link)
{
    fixture_t *fx = user;
    job_t *job = (job_t *)link;
    if (job->cls != WORKPOOL_READ) { /* writes and bulk wait to be released */
        int now = atomic_fetch_add(&fx->writers_now, 1) + 1;
        int peak = atomic_load(&fx->writers_peak);
        while (now > peak && !atomic_compare_exchange_weak(&fx->writers_peak, &peak, now))
            ;
        pthread_mutex_lock(&fx->lock);
        while (!fx->released)
            pthread_cond_wait(&fx->release, &fx->lock);
        pthread_mutex_unlock(&fx->lock);
        atomic_fetch_sub(&fx->writers_now, 1);
    }
    atomic_store(&job->done, true);
}

static bool wait_done(job_t *job, int64_t ms)
{
    int64_t until = clock_monotonic_ms() + ms;
    while (!atomic_load(&job->done) && clock_monotonic_ms() < until)
        clock_sleep_ms(1);
    return atomic_load(&job->done);
}

static void release(fixture_t *fx)
{
    pthread_mutex_lock(&fx->lock);
    fx->released = true;
    pthread_cond_broadcast(&fx->release);
    pthread_mutex_unlock(&fx->lock);
}

static void test_stuck_writes_leave_workers_for_reads(void **state)
{
    (void)state;
    fixture_t fx = {.lock = PTHREAD_MUTEX_INITIALIZER, .release = PTHREAD_COND_INITIALIZER};
    workpool_t *pool = workpool_start(4, 1, 1, run, &fx);
    assert_non_null(pool);
    job_t writes[10] = {0}, read = {.cls = WORKPOOL_READ}, bulk = {.cls = WORKPOOL_BULK};
    for (int i = 0; i < 10; i++) {
        writes[i].cls = WORKPOOL_WRITE;
        workpool_push(pool, &writes[i].link, WORKPOOL_WRITE);
    }
    clock_sleep_ms(50);
    assert_int_equal(atomic_load(&fx.writers_now), 3); /* 4 workers, 1 kept for reads */
    workpool_push(pool, &read.link, WORKPOOL_READ);
    assert_true(wait_done(&read, 2000));
    workpool_push(pool, &bulk.link, WORKPOOL_BULK); /* its own thread: runs though writes wait */
    clock_sleep_ms(50);
    assert_int_equal(atomic_load(&fx.writers_now), 4);
    assert_int_equal(workpool_queued(pool), 7);
    release(&fx);
    workpool_stop(pool); /* runs every queued write first */
    for (int i = 0; i < 10; i++)
        assert_true(atomic_load(&writes[i].done));
    assert_true(atomic_load(&bulk.done));
    assert_int_equal(atomic_load(&fx.writers_peak), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_writes_leave_workers_for_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
