/* store/commit: group commit. Writers of one process that arrive while a
 * write transaction is being made queue behind it; the first of them then
 * leads: it takes every queued write, runs each in its own SAVEPOINT inside
 * one BEGIN IMMEDIATE ... COMMIT on the queue's writer connection, and
 * hands every writer its status. One fsync then acknowledges a whole batch, where
 * writers each committing alone would take turns on SQLite's lock, each
 * paying an fsync and sleeping in the busy handler between attempts.
 *
 * Guarantees kept from the one-writer-one-transaction design:
 *  - a write's status is STORE_OK only after the COMMIT that holds it
 *    succeeded (a 2xx still means durable);
 *  - a write that fails is rolled back to its savepoint and leaves no trace,
 *    and does not disturb the others of its batch;
 *  - a write is never run after its caller's deadline: a queued write whose
 *    deadline passes is withdrawn (STORE_TIMEOUT), and a batch is run under
 *    the latest deadline of its writes;
 *  - an error that ends the whole SQLite transaction (an interrupt, an I/O
 *    error) fails every write of the batch that had not failed on its own.
 * A batch of one runs without savepoints: BEGIN, body, COMMIT.
 *
 * Leadership passes to the head of the queue after each batch, so a leader
 * answers its own caller after one batch instead of serving everyone. Other
 * processes on the same database still take turns through SQLite's lock.
 *
 * Health (store_health, GET /healthz): the queue is where every write of
 * the process passes, so it keeps what a load balancer needs to know in
 * atomics: when a transaction last ran to its end, whether the last one
 * failed on storage (and the error code and errno, for the reason), and how
 * many writes are pending since when. They are written under q->lock (never
 * held across a batch) and read without it, so reading them waits for no
 * writer, however long SQLite's write lock is held elsewhere. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"
#include "store/internal.h"

static const store_sql_t Q_BEGIN_BATCH = {"batch_begin", "BEGIN IMMEDIATE", NULL};
static const store_sql_t Q_COMMIT_BATCH = {"batch_commit", "COMMIT", NULL};
static const store_sql_t Q_SAVEPOINT = {"batch_savepoint", "SAVEPOINT write", NULL};
static const store_sql_t Q_RELEASE = {"batch_release", "RELEASE write", NULL};
static const store_sql_t Q_ROLLBACK_TO = {"batch_rollback_to", "ROLLBACK TO write", NULL};

typedef struct commit_job {
    tx_body_t body;
    const void *arg;
    store_conn_t *conn;       /* the caller's: a batch runs on it if the writer cannot open */
    int64_t deadline_ms;      /* the caller's; 0 = none */
    store_status_t status;
    bool taken;               /* in a batch: its outcome must be awaited */
    bool done;
    bool lead;                /* this writer runs the next batch */
    pthread_cond_t wake;      /* signalled when done or lead is set: each waiter has its own,
                               * so a batch wakes its own writers and the next leader, not
                               * every writer queued behind it (at 16 writers a shared
                               * broadcast was most of the context switches of an upsert) */
    struct commit_job *next;
} commit_job_t;

struct commit_queue {
    store_t *store;
    store_conn_t *writer;   /* opened by the first leader; used by one leader at a time */
    pthread_mutex_t lock;
    pthread_condattr_t monotonic; /* each job's wake: CLOCK_MONOTONIC, for the deadline waits */
    commit_job_t *head, *tail;
    bool leading;           /* a batch is running or leadership is being handed over */

    /* health: see the top of the file */
    _Atomic int64_t last_commit_ms;   /* monotonic; 0 never */
    _Atomic int64_t fault;            /* 0, or the store's db_error_t << 32 | the errno it saw */
    _Atomic int64_t pending;          /* jobs queued or in a running batch */
    _Atomic int64_t pending_since_ms; /* set before pending leaves 0 */
    _Atomic int64_t probe_ms;         /* the last recovery probe (store_health_probe) */
};

commit_queue_t *commit_queue_new(store_t *store)
{
    commit_queue_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return NULL;
    q->store = store;
    bool attr = pthread_condattr_init(&q->monotonic) == 0;
    if (!attr || pthread_condattr_setclock(&q->monotonic, CLOCK_MONOTONIC) != 0 ||
        pthread_mutex_init(&q->lock, NULL) != 0) {
        if (attr)
            pthread_condattr_destroy(&q->monotonic);
        free(q);
        return NULL;
    }
    return q;
}

void commit_queue_free(commit_queue_t *q)
{
    if (q == NULL)
        return;
    conn_close_writer(q->writer);
    pthread_condattr_destroy(&q->monotonic);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

static bool past(int64_t deadline_ms)
{
    return deadline_ms != 0 && clock_monotonic_ms() >= deadline_ms;
}

/* ---- health */

/* Failures of the storage under the database, as opposed to a write's own
 * (a constraint) or a wait (a lock held elsewhere, a deadline). */
static bool storage_failure(int rc)
{
    switch (rc) {
    case DB_ERR_FULL:
    case DB_ERR_IO:
    case DB_ERR_READONLY:
    case DB_ERR_CORRUPT:
    case DB_ERR_PERM:
        return true;
    default:
        return false;
    }
}

static bool lock_or_stop(int rc)
{
    return rc == DB_ERR_BUSY || rc == DB_ERR_INTERRUPTED;
}

static void note_failure(commit_queue_t *q, int rc, int sys_errno)
{
    atomic_store(&q->fault, (int64_t)rc << 32 | (uint32_t)sys_errno);
}

void commit_queue_note_failure(commit_queue_t *q, int rc, int sys_errno)
{
    note_failure(q, rc, sys_errno);
}

/* After a batch ran on conn (whose last_rc was cleared before it): a job
 * that committed, or one that failed on its own rules, proves the write
 * path works; a storage failure marks it failed; a batch that only waited
 * (timeouts, a lock held elsewhere) tells nothing. */
static void note_outcome(commit_queue_t *q, const store_conn_t *conn, const commit_job_t *batch)
{
    bool committed = false, answered = false;
    for (const commit_job_t *j = batch; j != NULL; j = j->next) {
        committed |= j->status == STORE_OK;
        answered |= j->status != STORE_TIMEOUT;
    }
    if (!committed && storage_failure(conn->last_rc)) {
        note_failure(q, conn->last_rc, conn->last_errno);
        return;
    }
    if (committed || (answered && !lock_or_stop(conn->last_rc))) {
        atomic_store(&q->last_commit_ms, clock_monotonic_ms());
        atomic_store(&q->fault, 0);
    }
}

void commit_queue_note_alone(commit_queue_t *q, const store_conn_t *conn, store_status_t status)
{
    commit_job_t alone = {.status = status};
    note_outcome(q, conn, &alone);
}

/* What a failed commit's code and errno mean to an operator. */
static const char *failure_words(int rc, int sys_errno)
{
    if (sys_errno == ENOSPC || sys_errno == EDQUOT || rc == DB_ERR_FULL)
        return "disk full";
    if (sys_errno == EROFS || rc == DB_ERR_READONLY)
        return "database is read-only";
    if (sys_errno == EACCES || sys_errno == EPERM || rc == DB_ERR_PERM)
        return "database file cannot be written";
    if (rc == DB_ERR_CORRUPT)
        return "database file is corrupt";
    return "I/O error";
}

void commit_queue_health(commit_queue_t *q, int64_t now_ms, store_health_t *out)
{
    /* pending before its start time: a writer sets the time first */
    int64_t pending = atomic_load(&q->pending);
    int64_t since = atomic_load(&q->pending_since_ms);
    int64_t last = atomic_load(&q->last_commit_ms);
    int64_t fault = atomic_load(&q->fault);
    *out = (store_health_t){.ok = true,
                            .commit_failed = fault != 0,
                            .last_commit_ms = last,
                            .pending = pending,
                            .pending_since_ms = pending > 0 ? since : 0};
    if (fault != 0) {
        out->ok = false;
        snprintf(out->reason, sizeof out->reason, "the last commit failed: %s",
                 failure_words((int)(fault >> 32), (int)(uint32_t)fault));
        return;
    }
    int64_t waiting_from = since > last ? since : last;
    if (pending > 0 && now_ms - waiting_from >= STORE_HEALTH_STALL_MS) {
        out->ok = false;
        snprintf(out->reason, sizeof out->reason,
                 "writes are pending and none has committed for %lld s",
                 (long long)((now_ms - waiting_from) / 1000));
    }
}

bool commit_queue_probe_due(commit_queue_t *q, int64_t now_ms)
{
    if (atomic_load(&q->fault) == 0)
        return false;
    int64_t last = atomic_load(&q->probe_ms);
    if (last != 0 && now_ms - last < 1000)
        return false;
    return atomic_compare_exchange_strong(&q->probe_ms, &last, now_ms);
}

/* ---- the queue (called with q->lock held) */

static void enqueue(commit_queue_t *q, commit_job_t *job)
{
    if (atomic_load(&q->pending) == 0)
        atomic_store(&q->pending_since_ms, clock_monotonic_ms());
    atomic_store(&q->pending, atomic_load(&q->pending) + 1);
    if (q->tail != NULL)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
}

static void withdraw(commit_queue_t *q, commit_job_t *job)
{
    commit_job_t **link = &q->head, *prev = NULL;
    while (*link != NULL && *link != job) {
        prev = *link;
        link = &(*link)->next;
    }
    if (*link == NULL)
        return;
    *link = job->next;
    if (q->tail == job)
        q->tail = prev;
}

/* Every queued job, in arrival order, now owned by the caller's batch. */
static commit_job_t *take_all(commit_queue_t *q)
{
    commit_job_t *batch = q->head;
    for (commit_job_t *j = batch; j != NULL; j = j->next)
        j->taken = true;
    q->head = q->tail = NULL;
    return batch;
}

/* Waits until the job is done or must lead. false: its deadline passed while
 * it was still queued, and it was withdrawn. */
static bool await_turn(commit_queue_t *q, commit_job_t *job)
{
    while (!job->done && !job->lead) {
        if (job->deadline_ms == 0 || job->taken) {
            pthread_cond_wait(&job->wake, &q->lock);
            continue;
        }
        struct timespec until = {.tv_sec = job->deadline_ms / 1000,
                                 .tv_nsec = (long)(job->deadline_ms % 1000) * 1000000L};
        int rc = pthread_cond_timedwait(&job->wake, &q->lock, &until);
        if (rc == ETIMEDOUT && !job->taken && !job->lead && !job->done) {
            withdraw(q, job);
            return false;
        }
    }
    return true;
}

/* ---- running a batch (no lock held) */

static int64_t batch_deadline(const commit_job_t *batch)
{
    int64_t latest = 0;
    for (const commit_job_t *j = batch; j != NULL; j = j->next) {
        if (j->deadline_ms == 0)
            return 0;
        if (j->deadline_ms > latest)
            latest = j->deadline_ms;
    }
    return latest;
}

/* One job inside the open transaction, in its own savepoint. false when the
 * whole transaction ended under it (SQLite rolled it back). */
static bool run_in_savepoint(store_conn_t *conn, commit_job_t *job)
{
    if (past(job->deadline_ms)) {
        job->status = STORE_TIMEOUT;
        return true;
    }
    job->status = conn_exec(conn, &Q_SAVEPOINT);
    if (job->status != STORE_OK)
        return conn_in_transaction(conn);
    job->status = job->body(conn, job->arg);
    if (!conn_in_transaction(conn))
        return false;
    if (job->status == STORE_OK)
        job->status = conn_exec(conn, &Q_RELEASE);
    if (job->status != STORE_OK) {
        conn->in_cleanup = true; /* undoing must not be interrupted */
        store_status_t undone = conn_exec(conn, &Q_ROLLBACK_TO);
        if (undone == STORE_OK)
            undone = conn_exec(conn, &Q_RELEASE);
        conn->in_cleanup = false;
        if (undone != STORE_OK)
            return false;
    }
    return conn_in_transaction(conn);
}

/* Sets every job that had succeeded so far (or not yet run) to status. */
static void fail_survivors(commit_job_t *batch, const commit_job_t *reached, store_status_t status)
{
    bool ran = true;
    for (commit_job_t *j = batch; j != NULL; j = j->next) {
        if (!ran || j->status == STORE_OK)
            j->status = status;
        if (j == reached)
            ran = false;
    }
}

static void run_many(store_conn_t *conn, commit_job_t *batch)
{
    store_status_t st = conn_exec(conn, &Q_BEGIN_BATCH);
    if (st != STORE_OK) {
        fail_survivors(batch, NULL, st);
        return;
    }
    for (commit_job_t *j = batch; j != NULL; j = j->next) {
        j->status = STORE_OK;
        if (!run_in_savepoint(conn, j)) {
            store_status_t why = j->status != STORE_OK ? j->status : STORE_ERROR;
            fail_survivors(batch, j, why);
            conn_rollback(conn);
            return;
        }
    }
    st = conn_exec(conn, &Q_COMMIT_BATCH);
    if (st != STORE_OK) {
        conn_rollback(conn);
        fail_survivors(batch, NULL, st);
    }
}

/* The connection batches run on: the queue's writer, whose page cache stays
 * warm from batch to batch (a pooled connection's is dropped whenever
 * another connection has written), or the leader's own if it cannot open. */
static store_conn_t *batch_conn(commit_queue_t *q, store_conn_t *leader)
{
    if (q->writer != NULL && conn_in_transaction(q->writer)) {
        /* a failed ROLLBACK left it in a transaction: it must not serve again */
        conn_close_writer(q->writer);
        q->writer = NULL;
    }
    if (q->writer == NULL)
        q->writer = conn_open_writer(q->store);
    return q->writer != NULL ? q->writer : leader;
}

static void run_batch(store_conn_t *conn, commit_job_t *batch)
{
    int64_t own = conn->deadline_ms;
    conn->last_rc = conn->last_errno = 0;
    store_set_deadline(conn, batch_deadline(batch));
    if (batch->next == NULL)
        batch->status = past(batch->deadline_ms) ? STORE_TIMEOUT
                                                 : conn_write_alone(conn, batch->body, batch->arg);
    else
        run_many(conn, batch);
    store_set_deadline(conn, own);
}

/* A job leaves the queue's count (q->lock held). */
static void job_leaves(commit_queue_t *q)
{
    atomic_store(&q->pending, atomic_load(&q->pending) - 1);
}

/* commit_queue_run with the job set up: queue it, then wait for its batch or
 * lead one. */
static store_status_t commit_queue_run_job(commit_queue_t *q, commit_job_t *job)
{
    pthread_mutex_lock(&q->lock);
    enqueue(q, job);
    if (!q->leading) {
        q->leading = true;
        job->lead = true;
    }
    if (!await_turn(q, job)) {
        job_leaves(q);
        pthread_mutex_unlock(&q->lock);
        return STORE_TIMEOUT;
    }
    if (job->done) {
        job_leaves(q);
        pthread_mutex_unlock(&q->lock);
        return job->status;
    }
    commit_job_t *batch = take_all(q);
    pthread_mutex_unlock(&q->lock);

    store_conn_t *conn = batch_conn(q, job->conn);
    run_batch(conn, batch);
    note_outcome(q, conn, batch);

    pthread_mutex_lock(&q->lock);
    job_leaves(q);
    for (commit_job_t *j = batch, *next; j != NULL; j = next) {
        next = j->next; /* a waiter's job dies once it sees done */
        j->done = true;
        if (j != job)
            pthread_cond_signal(&j->wake); /* returns before the waiter can take the lock */
    }
    if (q->head != NULL) {
        q->head->lead = true;
        pthread_cond_signal(&q->head->wake);
    } else {
        q->leading = false;
    }
    pthread_mutex_unlock(&q->lock);
    return job->status;
}

store_status_t commit_queue_run(commit_queue_t *q, store_conn_t *conn, tx_body_t body,
                                const void *arg)
{
    commit_job_t job = {.body = body, .arg = arg, .conn = conn, .deadline_ms = conn->deadline_ms};
    if (pthread_cond_init(&job.wake, &q->monotonic) != 0)
        return STORE_ERROR;
    store_status_t status = commit_queue_run_job(q, &job);
    pthread_cond_destroy(&job.wake);
    return status;
}
