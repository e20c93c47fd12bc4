/* store/sqlite.c: store.h on SQLite 3.40 in WAL mode.
 *
 * Connections. A store_t owns the database path and a mutex-protected free
 * list of idle connections. store_acquire pops one or opens a new one, so a
 * thread never shares a connection and connections can be opened with
 * SQLITE_OPEN_NOMUTEX (no per-call locking inside SQLite). The list only
 * grows to the number of threads that used the store at once; that is the
 * server's thread pool plus the engines, so no cap is needed here.
 *
 * Statements. Every statement is a static store_sql_t (a name for logs and
 * its SQL) in the store file of its resource; a connection finds its
 * prepared copy by the definition's address, prepares it the first time it
 * needs it, with
 * SQLITE_PREPARE_PERSISTENT, keeps it for its lifetime, and resets it and
 * clears its bindings after each use. Text is bound with SQLITE_STATIC: the
 * caller's strings outlive the step, and the reset drops the references.
 *
 * Writes. Each write runs in a transaction that starts with BEGIN IMMEDIATE (a
 * deferred transaction that reads and then writes fails with SQLITE_BUSY at
 * once in WAL mode) and ends with COMMIT, or ROLLBACK on any error; writes
 * that arrive together share one transaction, each in its own savepoint
 * (group commit, commit.c).
 * conn_write runs a body function between the two so that no path can leave a
 * transaction open. UPDATE statements are always stepped to SQLITE_DONE and
 * reset, so no statement holds the write lock past its function.
 *
 * Deadlines. A busy handler sleeps 1 ms doubling to 20 ms between lock
 * attempts and gives up at the connection's deadline (or 5 s after the wait
 * began when none is set); a progress handler, installed only while a deadline
 * is set, interrupts a statement that runs past it. Either sets timed_out, and
 * the SQLITE_BUSY / SQLITE_LOCKED / SQLITE_INTERRUPT that follows becomes
 * STORE_TIMEOUT. A call made after its deadline returns STORE_TIMEOUT without
 * touching the database. Writers of one process do not wait on SQLite's lock
 * against each other: they queue and are committed in batches (commit.c),
 * so the busy handler only arbitrates between processes.
 *
 * Callbacks. The *_each and list functions call the caller's function while
 * their statement is still stepping: a callback must not use the same
 * connection (it may use another one from the pool).
 *
 * Errors. SQLite failures are logged with the statement's name, the result
 * code and sqlite3_errmsg, never with bound values (they may be secrets). */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/errmsg.h"
#include "core/log.h"
#include "store/internal.h"
#include "store/migrations.h"

enum {
    STORE_DEFAULT_WAIT_MS = 5000, /* lock waits when no deadline is set */
    BUSY_SLEEP_MAX_MS = 20,
    PROGRESS_OPS = 1000,          /* VM steps between deadline checks */
};


static const store_sql_t Q_BEGIN = {"begin", "BEGIN IMMEDIATE"};
static const store_sql_t Q_BEGIN_READ = {"begin_read", "BEGIN DEFERRED"};
static const store_sql_t Q_COMMIT = {"commit", "COMMIT"};
static const store_sql_t Q_ROLLBACK = {"rollback", "ROLLBACK"};
static const store_sql_t Q_SETTINGS_GET = {"settings_get", "SELECT version FROM settings WHERE singleton = 1"};
static const store_sql_t Q_SETTINGS_BUMP = {"settings_bump",
    "UPDATE settings SET version = version + 1 WHERE singleton = 1"};

struct store {
    char *path;
    pthread_mutex_t lock; /* guards idle and out */
    store_conn_t *idle;
    size_t out;           /* connections acquired and not yet released */
    _Atomic bool fault;   /* test hook: every call fails as on an I/O error */
    commit_queue_t *commits; /* group commit of this process's writers */
};

const char *store_status_name(store_status_t status)
{
    switch (status) {
    case STORE_OK: return "ok";
    case STORE_NOT_FOUND: return "not_found";
    case STORE_CONFLICT: return "conflict";
    case STORE_TIMEOUT: return "timeout";
    case STORE_ERROR: return "error";
    }
    return "unknown";
}

/* ---- errors and logs */

static void conn_log(store_conn_t *conn, log_level_t level, const char *msg, const char *op, int rc)
{
    const char *detail = conn->db != NULL ? sqlite3_errmsg(conn->db) : sqlite3_errstr(rc);
    /* the errno tells a full disk from a read-only one behind an I/O error */
    int sys_errno = conn->db != NULL ? sqlite3_system_errno(conn->db) : 0;
    log_event(level, msg, json_pack("{s:s, s:i, s:s, s:i}", "op", op, "code", rc, "error", detail,
                                    "errno", sys_errno));
}

static bool conn_deadline_passed(const store_conn_t *conn)
{
    return conn->deadline_ms != 0 && clock_monotonic_ms() >= conn->deadline_ms;
}

/* Turns a failed result code of statement id into a status, logging what is
 * not an expected outcome (a taken key, a missing parent). */
store_status_t conn_fail(store_conn_t *conn, const store_sql_t *id, int rc)
{
    int thread_errno = errno; /* first: nothing below may change it */
    int primary = rc & 0xff;
    /* For the group commit's health (commit.c): SQLite keeps the errno of a
     * failed write of the WAL to itself (sqlite3_system_errno stays 0 for
     * it), so the thread's errno, read as SQLite returns, is the best word
     * on an I/O error; it only picks the reason an operator reads. */
    conn->last_rc = rc;
    conn->last_errno = conn->db != NULL ? sqlite3_system_errno(conn->db) : 0;
    if (conn->last_errno == 0 && primary == SQLITE_IOERR)
        conn->last_errno = thread_errno;
    bool lock_or_stop =
        primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_INTERRUPT;
    if (lock_or_stop && (conn->timed_out || conn_deadline_passed(conn))) {
        conn_log(conn, LOG_WARN, "store: deadline passed", id->name, rc);
        return STORE_TIMEOUT;
    }
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
        return STORE_CONFLICT;
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return STORE_NOT_FOUND;
    conn_log(conn, LOG_ERROR, "store: sqlite error", id->name, rc);
    return STORE_ERROR;
}

/* A row that does not fit its C struct means a corrupt or foreign database. */
store_status_t store_bad_row(const store_sql_t *id)
{
    log_event(LOG_ERROR, "store: row does not fit", json_pack("{s:s}", "op", id->name));
    return STORE_ERROR;
}

store_status_t store_bad_argument(const char *op)
{
    log_event(LOG_ERROR, "store: invalid argument", json_pack("{s:s}", "op", op));
    return STORE_ERROR;
}

/* ---- deadline handlers */

/* SQLite's busy handler: attempts counts the calls for the current lock, so
 * attempt 0 marks the start of a wait. Short sleeps first, because most locks
 * are held for one commit; never past the bound, so a timeout is on time. */
static int conn_busy_wait(void *arg, int attempts)
{
    store_conn_t *conn = arg;
    int64_t now = clock_monotonic_ms();
    if (attempts == 0)
        conn->wait_began_ms = now;
    int64_t limit =
        conn->deadline_ms != 0 ? conn->deadline_ms : conn->wait_began_ms + STORE_DEFAULT_WAIT_MS;
    if (now >= limit) {
        conn->timed_out = true;
        return 0;
    }
    int64_t pause = attempts < 5 ? (int64_t)1 << attempts : BUSY_SLEEP_MAX_MS;
    if (pause > BUSY_SLEEP_MAX_MS)
        pause = BUSY_SLEEP_MAX_MS;
    if (pause > limit - now)
        pause = limit - now;
    clock_sleep_ms(pause);
    return 1;
}

/* Called every PROGRESS_OPS VM steps while a deadline is set; non-zero makes
 * the running statement fail with SQLITE_INTERRUPT. */
static int conn_progress(void *arg)
{
    store_conn_t *conn = arg;
    if (conn->in_cleanup || !conn_deadline_passed(conn))
        return 0;
    conn->timed_out = true;
    return 1;
}

void store_set_deadline(store_conn_t *conn, int64_t deadline_ms)
{
    conn->deadline_ms = deadline_ms > 0 ? deadline_ms : 0;
    /* Without a deadline there is nothing to check: no per-step cost. */
    sqlite3_progress_handler(conn->db, conn->deadline_ms != 0 ? PROGRESS_OPS : 0,
                             conn->deadline_ms != 0 ? conn_progress : NULL, conn);
}

/* Every public operation starts here: a call made after its deadline does no
 * database work at all. */
store_status_t conn_enter(store_conn_t *conn)
{
    conn->timed_out = false;
    if (conn_deadline_passed(conn))
        return STORE_TIMEOUT;
    if (conn->fault != NULL && atomic_load(conn->fault))
        return STORE_ERROR;
    return STORE_OK;
}

/* ---- statements */

/* The connection's statement for q: found by q's address (open addressing),
 * prepared on first use. */
store_status_t conn_prepare(store_conn_t *conn, const store_sql_t *q, sqlite3_stmt **out)
{
    size_t mask = STMT_CACHE_SLOTS - 1;
    size_t i = ((uintptr_t)q >> 4) & mask;
    for (size_t probes = 0; probes < STMT_CACHE_SLOTS; probes++, i = (i + 1) & mask) {
        stmt_slot_t *slot = &conn->stmts[i];
        if (slot->key == q) {
            *out = slot->stmt;
            return STORE_OK;
        }
        if (slot->key != NULL)
            continue;
        /* Preparing reads the schema, which can wait on a lock. */
        sqlite3_stmt *stmt = NULL;
        int rc = sqlite3_prepare_v3(conn->db, q->sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
        if (rc != SQLITE_OK) {
            sqlite3_finalize(stmt);
            return conn_fail(conn, q, rc);
        }
        slot->key = q;
        slot->stmt = stmt;
        *out = stmt;
        return STORE_OK;
    }
    log_event(LOG_ERROR, "store: statement cache full", json_pack("{s:s}", "op", q->name));
    return STORE_ERROR;
}

void stmt_done(sqlite3_stmt *stmt)
{
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
}

bool bind_text(sqlite3_stmt *stmt, int index, const char *text)
{
    return sqlite3_bind_text(stmt, index, text, -1, SQLITE_STATIC) == SQLITE_OK;
}

bool bind_int(sqlite3_stmt *stmt, int index, int64_t value)
{
    return sqlite3_bind_int64(stmt, index, value) == SQLITE_OK;
}

bool bind_text_or_null(sqlite3_stmt *stmt, int index, const char *text)
{
    if (text == NULL || text[0] == '\0')
        return sqlite3_bind_null(stmt, index) == SQLITE_OK;
    return bind_text(stmt, index, text);
}

bool bind_blob_or_null(sqlite3_stmt *stmt, int index, const uint8_t *blob, size_t len)
{
    if (blob == NULL || len == 0)
        return sqlite3_bind_null(stmt, index) == SQLITE_OK;
    return sqlite3_bind_blob(stmt, index, blob, (int)len, SQLITE_STATIC) == SQLITE_OK;
}

store_status_t run_bound(store_conn_t *conn, const store_sql_t *q, sqlite3_stmt *stmt,
                         bool bound)
{
    if (!bound)
        return conn_bind_failed(conn, q, stmt);
    return conn_run(conn, q, stmt);
}

/* Binding fails only on a programming error (index, size): never a status a
 * caller could act on. */
store_status_t conn_bind_failed(store_conn_t *conn, const store_sql_t *id, sqlite3_stmt *stmt)
{
    conn_log(conn, LOG_ERROR, "store: bind failed", id->name, sqlite3_errcode(conn->db));
    stmt_done(stmt);
    return STORE_ERROR;
}

/* Steps a bound statement to SQLITE_DONE (ignoring any RETURNING rows, so the
 * statement finishes and releases what it holds) and resets it. */
store_status_t conn_run(store_conn_t *conn, const store_sql_t *id, sqlite3_stmt *stmt)
{
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    }
    store_status_t status = rc == SQLITE_DONE ? STORE_OK : conn_fail(conn, id, rc);
    stmt_done(stmt);
    return status;
}

/* Runs a statement without parameters. */
store_status_t conn_exec(store_conn_t *conn, const store_sql_t *id)
{
    sqlite3_stmt *stmt;
    store_status_t status = conn_prepare(conn, id, &stmt);
    if (status != STORE_OK)
        return status;
    return conn_run(conn, id, stmt);
}

/* Prepares a statement whose first parameter is key; on failure nothing is
 * left bound. */
store_status_t conn_prepare_key(store_conn_t *conn, const store_sql_t *id, const char *key,
                                       sqlite3_stmt **out)
{
    store_status_t status = conn_prepare(conn, id, out);
    if (status != STORE_OK)
        return status;
    if (!bind_text(*out, 1, key))
        return conn_bind_failed(conn, id, *out);
    return STORE_OK;
}

store_status_t conn_read_row(store_conn_t *conn, const store_sql_t *q, sqlite3_stmt *stmt,
                             row_decode_fn decode, void *record)
{
    store_status_t status;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        status = decode != NULL ? decode(q, stmt, record) : STORE_OK;
    else if (rc == SQLITE_DONE)
        status = STORE_NOT_FOUND;
    else
        status = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return status;
}

/* STORE_OK when a statement keyed by `key` returns a row, else STORE_NOT_FOUND. */
store_status_t conn_exists(store_conn_t *conn, const store_sql_t *id, const char *key)
{
    sqlite3_stmt *stmt;
    store_status_t status = conn_prepare_key(conn, id, key, &stmt);
    if (status != STORE_OK)
        return status;
    return conn_read_row(conn, id, stmt, NULL, NULL);
}

store_status_t conn_query_int(store_conn_t *conn, const store_sql_t *q, sqlite3_stmt *stmt,
                              int64_t *value)
{
    int rc = sqlite3_step(stmt);
    store_status_t status = STORE_OK;
    if (rc == SQLITE_ROW)
        *value = sqlite3_column_int64(stmt, 0);
    else if (rc != SQLITE_DONE)
        status = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return status;
}

/* Copies a TEXT column into a fixed buffer; false when it does not fit. */
bool column_copy(sqlite3_stmt *stmt, int col, char *out, size_t cap)
{
    const unsigned char *text = sqlite3_column_text(stmt, col);
    size_t len = (size_t)sqlite3_column_bytes(stmt, col);
    if (text == NULL || len >= cap)
        return false;
    memcpy(out, text, len);
    out[len] = '\0';
    return true;
}

bool column_copy_or_empty(sqlite3_stmt *stmt, int col, char *out, size_t cap)
{
    if (sqlite3_column_type(stmt, col) == SQLITE_NULL) {
        out[0] = '\0';
        return true;
    }
    return column_copy(stmt, col, out, cap);
}

bool column_blob_copy(sqlite3_stmt *stmt, int col, uint8_t *out, size_t cap, size_t *len)
{
    *len = 0;
    if (sqlite3_column_type(stmt, col) == SQLITE_NULL)
        return true;
    const void *blob = sqlite3_column_blob(stmt, col);
    int n = sqlite3_column_bytes(stmt, col);
    if (blob == NULL || n <= 0 || (size_t)n > cap)
        return false;
    memcpy(out, blob, (size_t)n);
    *len = (size_t)n;
    return true;
}

/* True when a caller's fixed-size field holds a NUL-terminated string. */
bool text_fits(const char *text, size_t cap)
{
    return text != NULL && memchr(text, '\0', cap) != NULL;
}

void page_start(store_page_t *page, store_conn_t *conn, const store_sql_t *q, sqlite3_stmt *stmt,
                size_t limit, store_status_t status)
{
    *page = (store_page_t){.conn = conn, .q = q, .stmt = status == STORE_OK ? stmt : NULL,
                           .limit = limit, .status = status, .ended = status != STORE_OK};
}

void page_open(store_page_t *page, store_conn_t *conn, const store_sql_t *q_first,
               const store_sql_t *q_after, const char *key, const char *after, size_t limit)
{
    bool from_start = after == NULL || after[0] == '\0';
    const store_sql_t *q = from_start ? q_first : q_after;
    sqlite3_stmt *stmt = NULL;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, q, key, &stmt);
    if (status == STORE_OK) {
        int64_t window = limit < (size_t)INT64_MAX ? (int64_t)limit + 1 : INT64_MAX;
        bool bound = from_start ? bind_int(stmt, 2, window)
                                : bind_text(stmt, 2, after) && bind_int(stmt, 3, window);
        if (!bound)
            status = conn_bind_failed(conn, q, stmt);
    }
    page_start(page, conn, q, stmt, limit, status);
}

/* Steps the statement once more; false (the page ended) unless it is on a row. */
static bool page_step(store_page_t *page)
{
    int rc = sqlite3_step(page->stmt);
    if (rc == SQLITE_ROW)
        return true;
    page->ended = true;
    if (rc != SQLITE_DONE)
        page->status = conn_fail(page->conn, page->q, rc);
    return false;
}

bool page_next(store_page_t *page, row_decode_fn decode, void *record)
{
    if (page->ended)
        return false;
    if (!page_step(page))
        return false;
    if (page->delivered == page->limit) { /* the row past the window's last */
        page->more = true;
        page->ended = true;
        return false;
    }
    if (decode(page->q, page->stmt, record) != STORE_OK) {
        page->status = STORE_ERROR;
        page->ended = true;
        return false;
    }
    page->delivered++;
    return true;
}

store_status_t page_close(store_page_t *page, bool *more)
{
    if (!page->ended) /* the caller stopped early: does a row follow? */
        page->more = page_step(page);
    if (page->stmt != NULL)
        stmt_done(page->stmt);
    if (more != NULL)
        *more = page->more;
    return page->status;
}

/* ---- transactions */

void conn_rollback(store_conn_t *conn)
{
    if (sqlite3_get_autocommit(conn->db))
        return; /* the error already ended the transaction */
    conn->in_cleanup = true;
    conn_exec(conn, &Q_ROLLBACK);
    conn->in_cleanup = false;
}

store_status_t conn_write_alone(store_conn_t *conn, tx_body_t body, const void *arg)
{
    store_status_t status = conn_exec(conn, &Q_BEGIN);
    if (status != STORE_OK)
        return status;
    status = body(conn, arg);
    if (status == STORE_OK)
        status = conn_exec(conn, &Q_COMMIT);
    if (status != STORE_OK)
        conn_rollback(conn);
    return status;
}

store_status_t conn_write(store_conn_t *conn, tx_body_t body, const void *arg)
{
    store_status_t status = conn_enter(conn);
    if (status == STORE_ERROR && conn->commits != NULL) /* the injected fault: an I/O error */
        commit_queue_note_failure(conn->commits, SQLITE_IOERR, 0);
    if (status != STORE_OK)
        return status;
    if (!sqlite3_get_autocommit(conn->db)) /* a write inside a write: a programming error */
        return store_bad_argument("nested write transaction");
    if (conn->commits == NULL)
        return conn_write_alone(conn, body, arg);
    return commit_queue_run(conn->commits, conn, body, arg);
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
    if (!sqlite3_get_autocommit(conn->db))
        return store_bad_argument("nested read transaction");
    /* BEGIN DEFERRED takes no lock; the first read fixes the snapshot */
    if ((status = conn_exec(conn, &Q_BEGIN_READ)) != STORE_OK)
        return status;
    status = fn(conn, arg);
    conn_rollback(conn); /* nothing was written: ending the snapshot is all it does */
    return status;
}

store_status_t conn_bump_settings(store_conn_t *conn)
{
    store_status_t status = conn_exec(conn, &Q_SETTINGS_BUMP);
    if (status == STORE_OK && sqlite3_changes(conn->db) != 1)
        return store_bad_row(&Q_SETTINGS_BUMP); /* the settings row is missing */
    return status;
}

/* ---- connections and the pool */

static void conn_close(store_conn_t *conn)
{
    if (conn == NULL)
        return;
    for (size_t i = 0; i < STMT_CACHE_SLOTS; i++)
        sqlite3_finalize(conn->stmts[i].stmt);
    if (sqlite3_close(conn->db) != SQLITE_OK)
        log_event(LOG_ERROR, "store: close failed", NULL);
    free(conn);
}

static bool conn_pragma(store_conn_t *conn, const char *sql, char **err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(conn->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        errmsg_set(err, "%s: %s", sql, msg != NULL ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return rc == SQLITE_OK;
}

/* Switching a new database to WAL takes an exclusive lock while holding a
 * read lock; when another opener holds a read lock too, SQLite answers
 * SQLITE_BUSY at once without calling the busy handler (waiting could
 * deadlock the two). So the switch is retried here, with the busy handler's
 * backoff and bound; the read lock is dropped between attempts. */
static int conn_step_wal(store_conn_t *conn, sqlite3_stmt *stmt)
{
    for (int attempt = 0;; attempt++) {
        int rc = sqlite3_step(stmt);
        if ((rc & 0xff) != SQLITE_BUSY || conn->timed_out || !conn_busy_wait(conn, attempt))
            return rc;
        sqlite3_reset(stmt);
    }
}

/* journal_mode answers with the mode in force; anything but WAL would break
 * the durability and concurrency promises of store.h. */
static bool conn_enable_wal(store_conn_t *conn, char **err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(conn->db, "PRAGMA journal_mode = WAL", -1, &stmt, NULL);
    if (rc == SQLITE_OK)
        rc = conn_step_wal(conn, stmt);
    bool ok = rc == SQLITE_ROW &&
              sqlite3_stricmp((const char *)sqlite3_column_text(stmt, 0), "wal") == 0;
    if (!ok)
        errmsg_set(err, "cannot enable WAL mode: %s",
                      rc == SQLITE_ROW ? "journal mode refused" : sqlite3_errmsg(conn->db));
    sqlite3_finalize(stmt);
    return ok;
}

/* Per-connection settings; pragmas are no-ops inside a transaction, and a new
 * connection is outside one. The busy handler goes first so that switching a
 * new database to WAL waits for a concurrent opener instead of failing. */
static bool conn_configure(store_conn_t *conn, char **err)
{
    sqlite3_extended_result_codes(conn->db, 1);
    sqlite3_busy_handler(conn->db, conn_busy_wait, conn);
    /* Double-quoted strings are identifiers only: a typo cannot become a literal. */
    sqlite3_db_config(conn->db, SQLITE_DBCONFIG_DQS_DML, 0, NULL);
    sqlite3_db_config(conn->db, SQLITE_DBCONFIG_DQS_DDL, 0, NULL);
    return conn_enable_wal(conn, err) && conn_pragma(conn, "PRAGMA synchronous = FULL", err) &&
           conn_pragma(conn, "PRAGMA foreign_keys = ON", err) &&
           conn_pragma(conn, "PRAGMA journal_size_limit = 67108864", err);
}

static store_conn_t *conn_open(const char *path, char **err)
{
    store_conn_t *conn = calloc(1, sizeof *conn);
    if (conn == NULL) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &conn->db, flags, NULL);
    if (rc != SQLITE_OK) {
        errmsg_set(err, "cannot open %s: %s", path,
                      conn->db != NULL ? sqlite3_errmsg(conn->db) : sqlite3_errstr(rc));
        conn_close(conn);
        return NULL;
    }
    if (!conn_configure(conn, err)) {
        conn_close(conn);
        return NULL;
    }
    return conn;
}

/* mkdir -p of the directory part of path, mode 0700 (the database holds
 * credential hashes). */
static bool store_make_parent(const char *path, char **err)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL || slash == path)
        return true;
    char *dir = strndup(path, (size_t)(slash - path));
    if (dir == NULL) {
        errmsg_set(err, "out of memory");
        return false;
    }
    bool ok = true;
    for (char *p = dir + 1; ok; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            errmsg_set(err, "cannot create directory %s: %s", dir, strerror(errno));
            ok = false;
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    free(dir);
    return ok;
}

/* Creates the database file readable by its owner only when it does not
 * exist yet (SQLite gives its -wal and -shm files the same mode): it holds
 * personal data, beside key files of mode 0600. An empty file is an empty
 * database. */
static bool store_create_private(const char *path, char **err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        close(fd);
        return true;
    }
    if (errno == EEXIST)
        return true;
    errmsg_set(err, "cannot create %s: %s", path, strerror(errno));
    return false;
}

/* An empty pool for path. */
static store_t *store_new(const char *path, char **err)
{
    store_t *store = calloc(1, sizeof *store);
    if (store == NULL || (store->path = strdup(path)) == NULL) {
        free(store);
        errmsg_set(err, "out of memory");
        return NULL;
    }
    if ((store->commits = commit_queue_new(store)) == NULL) {
        free(store->path);
        free(store);
        errmsg_set(err, "cannot create the commit queue");
        return NULL;
    }
    if (pthread_mutex_init(&store->lock, NULL) != 0) {
        commit_queue_free(store->commits);
        free(store->path);
        free(store);
        errmsg_set(err, "cannot create the pool lock");
        return NULL;
    }
    return store;
}

store_t *store_open(const char *path, char **err)
{
    if (err != NULL)
        *err = NULL;
    if (path == NULL || *path == '\0') {
        errmsg_set(err, "no database path");
        return NULL;
    }
    if (!store_make_parent(path, err) || !store_create_private(path, err))
        return NULL;
    store_t *store = store_new(path, err);
    if (store == NULL)
        return NULL;
    store_conn_t *conn = conn_open(path, err);
    if (conn == NULL || !store_migrations_apply(conn->db, err)) {
        conn_close(conn);
        store_close(store);
        return NULL;
    }
    store->idle = conn; /* the first request reuses it */
    return store;
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
    free(store->path);
    free(store);
}

store_conn_t *store_acquire(store_t *store)
{
    pthread_mutex_lock(&store->lock);
    store_conn_t *conn = store->idle;
    if (conn != NULL)
        store->idle = conn->next_idle;
    store->out++;
    pthread_mutex_unlock(&store->lock);
    if (conn != NULL) {
        conn->next_idle = NULL;
        conn->fault = &store->fault;
        conn->commits = store->commits;
        return conn;
    }
    /* Opened outside the lock: opening may wait on the database. */
    char *err = NULL;
    conn = conn_open(store->path, &err);
    if (conn != NULL) {
        conn->fault = &store->fault;
        conn->commits = store->commits;
        return conn;
    }
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
    store_conn_t *conn = conn_open(store->path, &err);
    /* temp_store: a statement that writes many rows (the inventory's 16-row
     * inserts) keeps a statement journal, the original of every page it
     * changes, which SQLite spills to a temporary file past 64 KiB: one
     * pwrite per page. In memory it is a few pages per statement; the
     * writer runs no large sorts. */
    if (conn == NULL || !conn_pragma(conn, "PRAGMA cache_size = -65536", &err) ||
        !conn_pragma(conn, "PRAGMA wal_autocheckpoint = 8192", &err) ||
        !conn_pragma(conn, "PRAGMA temp_store = MEMORY", &err)) {
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
    char *err = NULL;
    bool ok = conn_pragma(conn, "PRAGMA mmap_size = 4294967296", &err);
    if (!ok)
        log_event(LOG_WARN, "store: bulk tuning failed", json_pack("{s:s}", "error", err ? err : "?"));
    free(err);
    return ok ? STORE_OK : STORE_ERROR;
}

store_status_t store_checkpoint(store_conn_t *conn)
{
    static const store_sql_t Q_CHECKPOINT = {"checkpoint", "PRAGMA wal_checkpoint(PASSIVE)"};
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    int rc = sqlite3_wal_checkpoint_v2(conn->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return rc == SQLITE_OK || rc == SQLITE_BUSY ? STORE_OK : conn_fail(conn, &Q_CHECKPOINT, rc);
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
     * ROLLBACK, and such a connection must not serve anyone else. */
    bool healthy = sqlite3_get_autocommit(conn->db) != 0;
    pthread_mutex_lock(&store->lock);
    store->out--;
    if (healthy) {
        conn->next_idle = store->idle;
        store->idle = conn;
    }
    pthread_mutex_unlock(&store->lock);
    if (!healthy) {
        log_event(LOG_ERROR, "store: dropping a connection left in a transaction", NULL);
        conn_close(conn);
    }
}

/* ---- settings */

store_status_t store_settings_version(store_conn_t *conn, int64_t *version)
{
    store_status_t status = conn_enter(conn);
    sqlite3_stmt *stmt;
    if (status == STORE_OK)
        status = conn_prepare(conn, &Q_SETTINGS_GET, &stmt);
    if (status != STORE_OK)
        return status;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        *version = sqlite3_column_int64(stmt, 0);
    else if (rc == SQLITE_DONE)
        status = store_bad_row(&Q_SETTINGS_GET);
    else
        status = conn_fail(conn, &Q_SETTINGS_GET, rc);
    stmt_done(stmt);
    return status;
}

/* Reads a row of the database file (SELECT 1 would not touch it), so a locked
 * or unreadable database fails the health check. */
void store_health(store_t *store, int64_t now_ms, store_health_t *out)
{
    commit_queue_health(store->commits, now_ms, out);
}

static const store_sql_t Q_HEALTH_PROBE = {"health_probe",
    "INSERT INTO write_probe (singleton, at) VALUES (1, ?1)"
    " ON CONFLICT (singleton) DO UPDATE SET at = excluded.at"};

/* Writes the probe's time: new bytes, so the commit really writes a page
 * (SQLite skips a row rewritten as it is, and an empty commit writes nothing). */
static store_status_t health_probe_tx(store_conn_t *conn, const void *arg)
{
    const int64_t *at = arg;
    sqlite3_stmt *stmt;
    store_status_t status = conn_prepare(conn, &Q_HEALTH_PROBE, &stmt);
    if (status != STORE_OK)
        return status;
    return run_bound(conn, &Q_HEALTH_PROBE, stmt, bind_int(stmt, 1, *at));
}

store_status_t store_health_probe(store_conn_t *conn, int64_t now_ms)
{
    if (conn->commits == NULL || !commit_queue_probe_due(conn->commits, now_ms))
        return STORE_OK;
    return conn_write(conn, health_probe_tx, &now_ms);
}

store_status_t store_ping(store_conn_t *conn)
{
    int64_t version;
    return store_settings_version(conn, &version);
}
