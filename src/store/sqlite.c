/* store/sqlite.c: the SQLite backend (backend.h), SQLite 3.40 in WAL mode.
 *
 * Connections are opened with SQLITE_OPEN_NOMUTEX (a connection is used by
 * one thread at a time), WAL, synchronous=FULL and foreign keys on.
 * Statements are prepared with SQLITE_PREPARE_PERSISTENT; text is bound
 * with SQLITE_STATIC: the caller's strings outlive the step, and the reset
 * drops the references.
 *
 * Writes start with BEGIN IMMEDIATE: a deferred transaction that reads and
 * then writes fails with SQLITE_BUSY at once in WAL mode. Writers of one
 * process share transactions through the group commit (commit.c), whose
 * writer connection this backend tunes.
 *
 * Deadlines. A busy handler sleeps 1 ms doubling to 20 ms between lock
 * attempts and gives up at the connection's deadline (or 5 s after the wait
 * began when none is set); a progress handler, installed only while a deadline
 * is set, interrupts a statement that runs past it. Either sets timed_out, and
 * the SQLITE_BUSY / SQLITE_LOCKED / SQLITE_INTERRUPT that follows becomes
 * STORE_TIMEOUT. Writers of one process do not wait on SQLite's lock
 * against each other: they queue and are committed in batches (commit.c),
 * so the busy handler only arbitrates between processes. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/errmsg.h"
#include "core/log.h"
#include "store/backend.h"
#include "store/internal.h"
#include "store/migrations.h"

enum {
    STORE_DEFAULT_WAIT_MS = 5000, /* lock waits when no deadline is set */
    BUSY_SLEEP_MAX_MS = 20,
    PROGRESS_OPS = 1000,          /* VM steps between deadline checks */
};

static const store_sql_t Q_BEGIN = {"begin", "BEGIN IMMEDIATE", NULL};
static const store_sql_t Q_BEGIN_READ = {"begin_read", "BEGIN DEFERRED", NULL};

typedef struct lite_stmt {
    db_stmt_t base;
    sqlite3_stmt *s;
} lite_stmt_t;

static sqlite3 *lite_db(store_conn_t *conn)
{
    return conn->native;
}

static sqlite3_stmt *lite(db_stmt_t *stmt)
{
    return ((lite_stmt_t *)stmt)->s;
}

/* ---- errors */

/* SQLite's result code in the store's words; conn's last_errno gets the
 * system errno behind an I/O error. */
static int lite_error(store_conn_t *conn, int rc)
{
    int thread_errno = errno; /* first: nothing below may change it */
    sqlite3 *db = lite_db(conn);
    /* SQLite keeps the errno of a failed write of the WAL to itself
     * (sqlite3_system_errno stays 0 for it), so the thread's errno, read as
     * SQLite returns, is the best word on an I/O error; it only picks the
     * reason an operator reads. */
    conn->last_errno = db != NULL ? sqlite3_system_errno(db) : 0;
    int primary = rc & 0xff;
    if (conn->last_errno == 0 && primary == SQLITE_IOERR)
        conn->last_errno = thread_errno;
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
        return DB_ERR_UNIQUE;
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return DB_ERR_FOREIGN_KEY;
    switch (primary) {
    case SQLITE_CONSTRAINT: return DB_ERR_CONSTRAINT;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return DB_ERR_BUSY;
    case SQLITE_INTERRUPT: return DB_ERR_INTERRUPTED;
    case SQLITE_FULL: return DB_ERR_FULL;
    case SQLITE_READONLY: return DB_ERR_READONLY;
    case SQLITE_PERM:
    case SQLITE_CANTOPEN: return DB_ERR_PERM;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return DB_ERR_CORRUPT;
    case SQLITE_IOERR: return DB_ERR_IO;
    case SQLITE_NOMEM: return DB_ERR_NOMEM;
    default: return DB_ERR_OTHER;
    }
}

static const char *lite_errmsg(store_conn_t *conn)
{
    return lite_db(conn) != NULL ? sqlite3_errmsg(lite_db(conn)) : "no connection";
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
    if (conn->in_cleanup || conn->deadline_ms == 0 || clock_monotonic_ms() < conn->deadline_ms)
        return 0;
    conn->timed_out = true;
    return 1;
}

static void lite_deadline_changed(store_conn_t *conn)
{
    /* Without a deadline there is nothing to check: no per-step cost. */
    sqlite3_progress_handler(lite_db(conn), conn->deadline_ms != 0 ? PROGRESS_OPS : 0,
                             conn->deadline_ms != 0 ? conn_progress : NULL, conn);
}

/* ---- statements */

static db_stmt_t *lite_prepare(store_conn_t *conn, const store_sql_t *q, int *rc)
{
    lite_stmt_t *stmt = calloc(1, sizeof *stmt);
    if (stmt == NULL) {
        *rc = DB_ERR_NOMEM;
        return NULL;
    }
    int src = sqlite3_prepare_v3(lite_db(conn), q->sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt->s,
                                 NULL);
    if (src != SQLITE_OK) {
        sqlite3_finalize(stmt->s);
        free(stmt);
        *rc = lite_error(conn, src);
        return NULL;
    }
    stmt->base = (db_stmt_t){.conn = conn, .q = q};
    return &stmt->base;
}

static void lite_finalize(db_stmt_t *stmt)
{
    sqlite3_finalize(lite(stmt));
    free(stmt);
}

static int lite_step(db_stmt_t *stmt)
{
    int rc = sqlite3_step(lite(stmt));
    if (rc == SQLITE_ROW)
        return DB_ROW;
    if (rc == SQLITE_DONE)
        return DB_DONE;
    return lite_error(stmt->conn, rc);
}

static void lite_reset(db_stmt_t *stmt)
{
    sqlite3_reset(lite(stmt));
    sqlite3_clear_bindings(lite(stmt));
}

static bool lite_bind_null(db_stmt_t *stmt, int index)
{
    return sqlite3_bind_null(lite(stmt), index) == SQLITE_OK;
}

static bool lite_bind_int(db_stmt_t *stmt, int index, int64_t value)
{
    return sqlite3_bind_int64(lite(stmt), index, value) == SQLITE_OK;
}

static bool lite_bind_text(db_stmt_t *stmt, int index, const char *text, size_t len)
{
    return sqlite3_bind_text64(lite(stmt), index, text, len, SQLITE_STATIC, SQLITE_UTF8) ==
           SQLITE_OK;
}

static bool lite_bind_blob(db_stmt_t *stmt, int index, const void *blob, size_t len)
{
    /* an empty blob is still a blob, not NULL: SQLite needs a non-NULL pointer */
    return sqlite3_bind_blob64(lite(stmt), index, len > 0 ? blob : "", len, SQLITE_STATIC) ==
           SQLITE_OK;
}

static bool lite_column_is_null(db_stmt_t *stmt, int col)
{
    return sqlite3_column_type(lite(stmt), col) == SQLITE_NULL;
}

static int64_t lite_column_int(db_stmt_t *stmt, int col)
{
    return sqlite3_column_int64(lite(stmt), col);
}

static const char *lite_column_text(db_stmt_t *stmt, int col, size_t *len)
{
    const char *text = (const char *)sqlite3_column_text(lite(stmt), col);
    *len = (size_t)sqlite3_column_bytes(lite(stmt), col);
    return text;
}

static const void *lite_column_blob(db_stmt_t *stmt, int col, size_t *len)
{
    const void *blob = sqlite3_column_blob(lite(stmt), col);
    *len = (size_t)sqlite3_column_bytes(lite(stmt), col);
    if (blob == NULL && sqlite3_column_type(lite(stmt), col) != SQLITE_NULL)
        return ""; /* an empty blob */
    return blob;
}

static int64_t lite_changes(store_conn_t *conn)
{
    return sqlite3_changes64(lite_db(conn));
}

static bool lite_in_transaction(store_conn_t *conn)
{
    return !sqlite3_get_autocommit(lite_db(conn));
}

/* ---- connections */

static bool conn_pragma(store_conn_t *conn, const char *sql, char **err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(lite_db(conn), sql, NULL, NULL, &msg);
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
    int rc = sqlite3_prepare_v2(lite_db(conn), "PRAGMA journal_mode = WAL", -1, &stmt, NULL);
    if (rc == SQLITE_OK)
        rc = conn_step_wal(conn, stmt);
    bool ok = rc == SQLITE_ROW &&
              sqlite3_stricmp((const char *)sqlite3_column_text(stmt, 0), "wal") == 0;
    if (!ok)
        errmsg_set(err, "cannot enable WAL mode: %s",
                   rc == SQLITE_ROW ? "journal mode refused" : sqlite3_errmsg(lite_db(conn)));
    sqlite3_finalize(stmt);
    return ok;
}

/* Per-connection settings; pragmas are no-ops inside a transaction, and a new
 * connection is outside one. The busy handler goes first so that switching a
 * new database to WAL waits for a concurrent opener instead of failing. */
static bool conn_configure(store_conn_t *conn, char **err)
{
    sqlite3 *db = lite_db(conn);
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_handler(db, conn_busy_wait, conn);
    /* Double-quoted strings are identifiers only: a typo cannot become a literal. */
    sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 0, NULL);
    return conn_enable_wal(conn, err) && conn_pragma(conn, "PRAGMA synchronous = FULL", err) &&
           conn_pragma(conn, "PRAGMA foreign_keys = ON", err) &&
           conn_pragma(conn, "PRAGMA journal_size_limit = 67108864", err);
}

/* mkdir -p of the directory part of path, mode 0700 (the database holds
 * credential hashes). */
static bool make_parent(const char *path, char **err)
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
static bool create_private(const char *path, char **err)
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

static bool lite_connect(store_conn_t *conn, const char *path, char **err)
{
    if (!make_parent(path, err) || !create_private(path, err))
        return false;
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &db, flags, NULL);
    conn->native = db;
    if (rc != SQLITE_OK) {
        errmsg_set(err, "cannot open %s: %s", path,
                   db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        return false;
    }
    return conn_configure(conn, err);
}

static void lite_disconnect(store_conn_t *conn)
{
    if (conn->native != NULL && sqlite3_close(lite_db(conn)) != SQLITE_OK)
        log_event(LOG_ERROR, "store: close failed", NULL);
    conn->native = NULL;
}

static bool lite_migrate(store_conn_t *conn, bool fail_on_purpose, char **err)
{
    return store_migrations_apply(lite_db(conn), fail_on_purpose, err);
}

/* The group commit's writer (commit.c). temp_store: a statement that writes
 * many rows (the inventory's 16-row inserts) keeps a statement journal, the
 * original of every page it changes, which SQLite spills to a temporary
 * file past 64 KiB: one pwrite per page. In memory it is a few pages per
 * statement; the writer runs no large sorts. */
static bool lite_tune_writer(store_conn_t *conn, char **err)
{
    return conn_pragma(conn, "PRAGMA cache_size = -65536", err) &&
           conn_pragma(conn, "PRAGMA wal_autocheckpoint = 8192", err) &&
           conn_pragma(conn, "PRAGMA temp_store = MEMORY", err);
}

static store_status_t lite_tune_bulk(store_conn_t *conn)
{
    char *err = NULL;
    bool ok = conn_pragma(conn, "PRAGMA mmap_size = 4294967296", &err);
    if (!ok)
        log_event(LOG_WARN, "store: bulk tuning failed", json_pack("{s:s}", "error", err ? err : "?"));
    free(err);
    return ok ? STORE_OK : STORE_ERROR;
}

static store_status_t lite_checkpoint(store_conn_t *conn)
{
    static const store_sql_t Q_CHECKPOINT = {"checkpoint", "PRAGMA wal_checkpoint(PASSIVE)", NULL};
    int rc = sqlite3_wal_checkpoint_v2(lite_db(conn), NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc == SQLITE_OK || rc == SQLITE_BUSY)
        return STORE_OK;
    return conn_fail(conn, &Q_CHECKPOINT, lite_error(conn, rc));
}

const store_backend_t store_sqlite_backend = {
    .name = "sqlite",
    .is_pg = false,
    .connect = lite_connect,
    .disconnect = lite_disconnect,
    .migrate = lite_migrate,
    .tune_writer = lite_tune_writer,
    .prepare = lite_prepare,
    .finalize = lite_finalize,
    .step = lite_step,
    .reset = lite_reset,
    .bind_null = lite_bind_null,
    .bind_int = lite_bind_int,
    .bind_text = lite_bind_text,
    .bind_blob = lite_bind_blob,
    .column_is_null = lite_column_is_null,
    .column_int = lite_column_int,
    .column_text = lite_column_text,
    .column_blob = lite_column_blob,
    .changes = lite_changes,
    .in_transaction = lite_in_transaction,
    .errmsg = lite_errmsg,
    .deadline_changed = lite_deadline_changed,
    .begin_write = &Q_BEGIN,
    .begin_read = &Q_BEGIN_READ,
    .tune_bulk = lite_tune_bulk,
    .checkpoint = lite_checkpoint,
};
