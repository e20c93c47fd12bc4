/* store/store.c: store.h's pool, transactions, settings and health, the
 * same on both backends (backend.h: sqlite.c, pg.c).
 *
 * Connections. A store_t owns the database target (a path or a URL), its
 * backend and a mutex-protected free list of idle connections.
 * store_acquire pops one or opens a new one, so a thread never shares a
 * connection. The list only grows to the number of threads that used the
 * store at once; that is the server's thread pool plus the engines, so no
 * cap is needed here. A connection that was lost (conn->broken), left in a
 * transaction, or grown by one huge statement (conn->retire) is closed at
 * release instead of going back.
 *
 * Writes. Each write runs in one transaction (backend.h's begin_write: BEGIN
 * IMMEDIATE on SQLite, SERIALIZABLE on PostgreSQL) that ends with COMMIT, or
 * ROLLBACK on any error. conn_write runs a body function between the two so
 * that no path can leave a transaction open. On SQLite, writers of one
 * process share transactions (group commit, commit.c); on PostgreSQL each
 * commits on its own connection, and a transaction the server refused to
 * serialize (a deadlock, a serialization failure) runs again from its
 * start (until the request's deadline, or a few times for an engine) before
 * the caller hears STORE_ERROR: a SERIALIZABLE write keeps every
 * read-check-write of the store files as safe as SQLite's single writer made
 * it. Two kinds of write say instead which rows they serialise on and run
 * at READ COMMITTED: claims (conn_write_claim, FOR UPDATE SKIP LOCKED) and
 * transaction writes (conn_write_locking, their accounts locked first),
 * where SSI aborted writers that only looked alike. */
#include "store/store.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/errmsg.h"
#include "core/log.h"
#include "store/backend.h"
#include "store/internal.h"

enum {
    WRITE_RETRIES = 8,       /* PostgreSQL: runs of a refused transaction beyond the first */
    WRITE_RETRIES_DEADLINE = 10000, /* the same within a deadline: a bound that never binds */
    RETRY_PAUSE_MAX_MS = 64, /* the longest pause between two runs */
};

static const store_sql_t Q_COMMIT = {"commit", "COMMIT", NULL};
static const store_sql_t Q_ROLLBACK = {"rollback", "ROLLBACK", NULL};
static const store_sql_t Q_SETTINGS_GET = {"settings_get",
    "SELECT version FROM settings WHERE singleton = 1", NULL};
static const store_sql_t Q_SETTINGS_BUMP = {"settings_bump",
    "UPDATE settings SET version = version + 1 WHERE singleton = 1", NULL};

struct store {
    char *target;          /* the path or URL */
    const store_backend_t *be;
    pthread_mutex_t lock;  /* guards idle and out */
    store_conn_t *idle;
    size_t out;            /* connections acquired and not yet released */
    _Atomic bool fault;    /* test hook: every call fails as on an I/O error */
    commit_queue_t *commits; /* group commit and write health; batches only on SQLite */
    _Atomic int64_t unavailable_since_ms; /* PostgreSQL: monotonic; 0 while reachable */
};

const char *store_status_name(store_status_t status)
{
    switch (status) {
    case STORE_OK: return "ok";
    case STORE_NOT_FOUND: return "not_found";
    case STORE_CONFLICT: return "conflict";
    case STORE_TIMEOUT: return "timeout";
    case STORE_ERROR: return "error";
    case STORE_UNAVAILABLE: return "unavailable";
    }
    return "unknown";
}

bool store_target_is_pg(const char *target)
{
    return strncmp(target, "postgres://", 11) == 0 || strncmp(target, "postgresql://", 13) == 0;
}

void store_set_deadline(store_conn_t *conn, int64_t deadline_ms)
{
    conn->deadline_ms = deadline_ms > 0 ? deadline_ms : 0;
    conn->be->deadline_changed(conn);
}

/* ---- transactions */

void conn_rollback(store_conn_t *conn)
{
    if (!conn_in_transaction(conn))
        return; /* the error already ended the transaction */
    conn->in_cleanup = true;
    conn_exec(conn, &Q_ROLLBACK);
    conn->in_cleanup = false;
}

static store_status_t conn_write_once(store_conn_t *conn, const store_sql_t *begin,
                                      tx_body_t body, const void *arg)
{
    conn->last_rc = 0;
    store_status_t status = conn_exec(conn, begin);
    if (status != STORE_OK)
        return status;
    status = body(conn, arg);
    if (status == STORE_OK)
        status = conn_exec(conn, &Q_COMMIT);
    if (status != STORE_OK)
        conn_rollback(conn);
    return status;
}

/* A pause before the next run of a refused transaction: growing, with
 * jitter, so that the writers that collided do not collide again. */
static void retry_pause(int attempt)
{
    int64_t cap = (int64_t)1 << (attempt < 6 ? attempt : 6);
    if (cap > RETRY_PAUSE_MAX_MS)
        cap = RETRY_PAUSE_MAX_MS;
    clock_sleep_ms(1 + (int64_t)(clock_monotonic_ms() % cap));
}

/* Runs body in a transaction begun by begin, again (a few times) while the
 * server refuses to serialize it. */
static store_status_t conn_write_retried(store_conn_t *conn, const store_sql_t *begin,
                                         tx_body_t body, const void *arg)
{
    /* With a deadline (a request's), the refused transaction runs again
     * until it passes: SSI never refuses the retry for the same conflict
     * twice, so under contention every writer gets through in the end, and
     * a client's write is never refused for having met another; without
     * one (an engine's), a few runs, and the engine's next step tries again. */
    int limit = conn->deadline_ms > 0 ? WRITE_RETRIES_DEADLINE : WRITE_RETRIES;
    store_status_t status = conn_write_once(conn, begin, body, arg);
    for (int attempt = 0; status != STORE_OK && conn->last_rc == DB_ERR_RETRY &&
                          attempt < limit && conn_enter(conn) == STORE_OK;
         attempt++) {
        retry_pause(attempt);
        status = conn_write_once(conn, begin, body, arg);
    }
    return status;
}

store_status_t conn_write_alone(store_conn_t *conn, tx_body_t body, const void *arg)
{
    return conn_write_retried(conn, conn->be->begin_write, body, arg);
}

/* A claim's transaction on PostgreSQL: READ COMMITTED, where FOR UPDATE SKIP
 * LOCKED and an UPDATE's re-check of its WHERE on the newest row version are
 * what make a claim exclusive (row locks, not SSI). At SERIALIZABLE two
 * claimers that each read the queue and write a different row form a
 * read-write cycle and one is aborted, however disjoint their rows. */
static const store_sql_t Q_BEGIN_CLAIM = {"begin_claim", "BEGIN IMMEDIATE",
                                          "BEGIN ISOLATION LEVEL READ COMMITTED"};

static store_status_t conn_write_read_committed(store_conn_t *conn, tx_body_t body,
                                                const void *arg)
{
    if (!conn->be->is_pg)
        return conn_write(conn, body, arg);
    store_status_t status = conn_enter(conn);
    if (status != STORE_OK)
        return status;
    if (conn_in_transaction(conn))
        return store_bad_argument("nested write transaction");
    return conn_write_retried(conn, &Q_BEGIN_CLAIM, body, arg);
}

store_status_t conn_write_claim(store_conn_t *conn, tx_body_t body, const void *arg)
{
    return conn_write_read_committed(conn, body, arg);
}

/* The same transaction as a claim's; the body's locks, not SSI, make it
 * correct (internal.h). At SERIALIZABLE, writers of one account each read
 * its open event and its rows and then write them: every pair aborts one,
 * and under a burst the reruns pile up past lock_timeout and deadlines. */
store_status_t conn_write_locking(store_conn_t *conn, tx_body_t body, const void *arg)
{
    return conn_write_read_committed(conn, body, arg);
}

store_status_t conn_retry(store_conn_t *conn, const char *why)
{
    log_event(LOG_WARN, "store: transaction to run again", json_pack("{s:s}", "op", why));
    conn->last_rc = DB_ERR_RETRY;
    return STORE_ERROR;
}

store_status_t conn_write(store_conn_t *conn, tx_body_t body, const void *arg)
{
    store_status_t status = conn_enter(conn);
    if (status == STORE_ERROR && conn->health != NULL) /* the injected fault: an I/O error */
        commit_queue_note_failure(conn->health, DB_ERR_IO, 0);
    if (status != STORE_OK)
        return status;
    if (conn_in_transaction(conn)) /* a write inside a write: a programming error */
        return store_bad_argument("nested write transaction");
    if (conn->commits != NULL)
        return commit_queue_run(conn->commits, conn, body, arg);
    status = conn_write_alone(conn, body, arg);
    if (conn->health != NULL)
        commit_queue_note_alone(conn->health, conn, status);
    return status;
}

store_status_t store_write(store_conn_t *conn, store_write_fn fn, const void *arg)
{
    return conn_write(conn, fn, arg);
}

store_status_t store_read(store_conn_t *conn, store_write_fn fn, const void *arg)
{
    store_status_t status = conn_enter(conn);
    if (status != STORE_OK)
        return status;
    if (conn_in_transaction(conn))
        return store_bad_argument("nested read transaction");
    /* the snapshot is fixed by the first read (SQLite) or at once (PostgreSQL) */
    if ((status = conn_exec(conn, conn->be->begin_read)) != STORE_OK)
        return status;
    status = fn(conn, arg);
    conn_rollback(conn); /* nothing was written: ending the snapshot is all it does */
    return status;
}

store_status_t conn_bump_settings(store_conn_t *conn)
{
    store_status_t status = conn_exec(conn, &Q_SETTINGS_BUMP);
    if (status == STORE_OK && conn_changes(conn) != 1)
        return store_bad_row(&Q_SETTINGS_BUMP); /* the settings row is missing */
    return status;
}

/* ---- connections and the pool */

static void conn_close(store_conn_t *conn)
{
    if (conn == NULL)
        return;
    conn_forget_statements(conn);
    conn->be->disconnect(conn);
    free(conn);
}

static store_conn_t *conn_open(const store_backend_t *be, const char *target, char **err)
{
    store_conn_t *conn = calloc(1, sizeof *conn);
    if (conn == NULL) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    conn->be = be;
    if (!be->connect(conn, target, err)) {
        be->disconnect(conn);
        free(conn);
        return NULL;
    }
    return conn;
}

/* An empty pool for target. */
static store_t *store_new(const char *target, char **err)
{
    store_t *store = calloc(1, sizeof *store);
    if (store == NULL || (store->target = strdup(target)) == NULL) {
        free(store);
        errmsg_set(err, "out of memory");
        return NULL;
    }
    store->be = store_target_is_pg(target) ? &store_pg_backend : &store_sqlite_backend;
    if ((store->commits = commit_queue_new(store)) == NULL) {
        free(store->target);
        free(store);
        errmsg_set(err, "cannot create the commit queue");
        return NULL;
    }
    if (pthread_mutex_init(&store->lock, NULL) != 0) {
        commit_queue_free(store->commits);
        free(store->target);
        free(store);
        errmsg_set(err, "cannot create the pool lock");
        return NULL;
    }
    return store;
}

store_t *store_open(const char *target, char **err)
{
    store_open_options_t none = {0};
    return store_open_with(target, &none, err);
}

store_t *store_open_with(const char *target, const store_open_options_t *opts, char **err)
{
    if (err != NULL)
        *err = NULL;
    if (target == NULL || *target == '\0') {
        errmsg_set(err, "no database path");
        return NULL;
    }
    store_t *store = store_new(target, err);
    if (store == NULL)
        return NULL;
    store_conn_t *conn = conn_open(store->be, target, err);
    if (conn == NULL || !store->be->migrate(conn, opts->fail_migration, err)) {
        conn_close(conn);
        store_close(store);
        return NULL;
    }
    store->idle = conn; /* the first request reuses it */
    return store;
}

const char *store_target(const store_t *store)
{
    return store->target;
}

bool store_is_pg(const store_t *store)
{
    return store->be->is_pg;
}

void store_close(store_t *store)
{
    if (store == NULL)
        return;
    if (store->out != 0)
        log_event(LOG_ERROR, "store: closed with connections still acquired",
                  json_pack("{s:I}", "count", (json_int_t)store->out));
    while (store->idle != NULL) {
        store_conn_t *conn = store->idle;
        store->idle = conn->next_idle;
        conn_close(conn);
    }
    pthread_mutex_destroy(&store->lock);
    commit_queue_free(store->commits);
    free(store->target);
    free(store);
}

static store_conn_t *conn_handed_out(store_t *store, store_conn_t *conn)
{
    conn->next_idle = NULL;
    conn->fault = &store->fault;
    /* PostgreSQL's writers commit each on its own connection: the queue
     * keeps only their health there */
    conn->commits = store->be->tune_writer != NULL ? store->commits : NULL;
    conn->health = store->commits;
    conn->broken = false;
    conn->retire = false;
    return conn;
}

store_conn_t *store_acquire(store_t *store)
{
    pthread_mutex_lock(&store->lock);
    store_conn_t *conn = store->idle;
    if (conn != NULL)
        store->idle = conn->next_idle;
    store->out++;
    pthread_mutex_unlock(&store->lock);
    if (conn != NULL)
        return conn_handed_out(store, conn);
    /* Opened outside the lock: opening may wait on the database. */
    char *err = NULL;
    conn = conn_open(store->be, store->target, &err);
    if (conn != NULL) {
        atomic_store(&store->unavailable_since_ms, 0);
        return conn_handed_out(store, conn);
    }
    int64_t zero = 0;
    atomic_compare_exchange_strong(&store->unavailable_since_ms, &zero, clock_monotonic_ms());
    log_event(LOG_ERROR, "store: cannot open connection",
              json_pack("{s:s}", "error", err != NULL ? err : "unknown"));
    free(err);
    pthread_mutex_lock(&store->lock);
    store->out--;
    pthread_mutex_unlock(&store->lock);
    return NULL;
}

store_conn_t *conn_open_writer(store_t *store)
{
    char *err = NULL;
    store_conn_t *conn = conn_open(store->be, store->target, &err);
    if (conn == NULL || !store->be->tune_writer(conn, &err)) {
        log_event(LOG_ERROR, "store: cannot open the writer connection",
                  json_pack("{s:s}", "error", err != NULL ? err : "unknown"));
        free(err);
        conn_close(conn);
        return NULL;
    }
    conn->fault = &store->fault;
    return conn; /* commits stays NULL: the writer commits alone */
}

void conn_close_writer(store_conn_t *conn)
{
    conn_close(conn);
}

store_status_t store_tune_bulk(store_conn_t *conn)
{
    return conn->be->tune_bulk != NULL ? conn->be->tune_bulk(conn) : STORE_OK;
}

store_status_t store_checkpoint(store_conn_t *conn)
{
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    return conn->be->checkpoint != NULL ? conn->be->checkpoint(conn) : STORE_OK;
}

void store_set_fault(store_t *store, bool failing)
{
    atomic_store(&store->fault, failing);
}

void store_release(store_t *store, store_conn_t *conn)
{
    if (conn == NULL)
        return;
    store_set_deadline(conn, 0);
    /* Every function ends its transaction; one still open means a failed
     * ROLLBACK, and such a connection must not serve anyone else; nor may
     * one whose server went away. */
    bool in_tx = conn_in_transaction(conn);
    bool healthy = !in_tx && !conn->broken && !conn->retire;
    if (conn->broken) {
        int64_t zero = 0;
        atomic_compare_exchange_strong(&store->unavailable_since_ms, &zero, clock_monotonic_ms());
    } else if (store->be->is_pg) {
        atomic_store(&store->unavailable_since_ms, 0);
    }
    pthread_mutex_lock(&store->lock);
    store->out--;
    if (healthy) {
        conn->next_idle = store->idle;
        store->idle = conn;
    }
    pthread_mutex_unlock(&store->lock);
    if (!healthy) {
        if (in_tx)
            log_event(LOG_ERROR, "store: dropping a connection left in a transaction", NULL);
        conn_close(conn);
    }
}

/* ---- settings */

store_status_t store_settings_version(store_conn_t *conn, int64_t *version)
{
    store_status_t status = conn_enter(conn);
    db_stmt_t *stmt;
    if (status == STORE_OK)
        status = conn_prepare(conn, &Q_SETTINGS_GET, &stmt);
    if (status != STORE_OK)
        return status;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        *version = db_column_int(stmt, 0);
    else if (rc == DB_DONE)
        status = store_bad_row(&Q_SETTINGS_GET);
    else
        status = conn_fail(conn, &Q_SETTINGS_GET, rc);
    stmt_done(stmt);
    return status;
}

/* ---- health */

void store_health(store_t *store, int64_t now_ms, store_health_t *out)
{
    commit_queue_health(store->commits, now_ms, out);
    int64_t since = atomic_load(&store->unavailable_since_ms);
    if (!out->ok || since == 0)
        return;
    out->ok = false;
    snprintf(out->reason, sizeof out->reason,
             "the database server cannot be reached (for %lld ms)", (long long)(now_ms - since));
}

static const store_sql_t Q_HEALTH_PROBE = {"health_probe",
    "INSERT INTO write_probe (singleton, at) VALUES (1, ?1)"
    " ON CONFLICT (singleton) DO UPDATE SET at = excluded.at", NULL};

/* Writes the probe's time: new bytes, so the commit really writes a page
 * (SQLite skips a row rewritten as it is, and an empty commit writes nothing). */
static store_status_t health_probe_tx(store_conn_t *conn, const void *arg)
{
    const int64_t *at = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, &Q_HEALTH_PROBE, &stmt);
    if (status != STORE_OK)
        return status;
    return run_bound(conn, &Q_HEALTH_PROBE, stmt, bind_int(stmt, 1, *at));
}

store_status_t store_health_probe(store_conn_t *conn, int64_t now_ms)
{
    if (conn->health == NULL || !commit_queue_probe_due(conn->health, now_ms))
        return STORE_OK;
    return conn_write(conn, health_probe_tx, &now_ms);
}

/* Reads a row (SELECT 1 would not touch the database), so a locked or
 * unreadable database fails the readiness check. */
store_status_t store_ping(store_conn_t *conn)
{
    int64_t version;
    return store_settings_version(conn, &version);
}
