/* store/stmt.c: the statement helpers every store file uses (internal.h),
 * over whichever backend the connection speaks (backend.h).
 *
 * Statements. Every statement is a static store_sql_t (a name for logs and
 * its SQL) in the store file of its resource; a connection finds its
 * prepared copy by the definition's address, prepares it the first time it
 * needs it, keeps it for its lifetime, and resets it and drops its bindings
 * after each use.
 *
 * Callbacks. The *_each and list functions call the caller's function while
 * their statement is still stepping: a callback must not use the same
 * connection (it may use another one from the pool).
 *
 * Errors. Failures are logged with the statement's name, the neutral code
 * and the backend's message, never with bound values (they may be secrets). */
#include <errno.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/backend.h"
#include "store/internal.h"

/* ---- errors and logs */

void conn_log_failure(store_conn_t *conn, const char *msg, const char *op, int rc)
{
    const char *detail = conn->be->errmsg(conn);
    /* waits, a lost server and a transaction store.c runs again are the
     * database's weather, not taxd's faults */
    bool weather = rc == DB_ERR_BUSY || rc == DB_ERR_INTERRUPTED || rc == DB_ERR_UNAVAILABLE ||
                   rc == DB_ERR_RETRY;
    log_event(weather ? LOG_WARN : LOG_ERROR,
              msg,
              json_pack("{s:s, s:s, s:i, s:s, s:i}", "backend", conn->be->name, "op", op, "code",
                        rc, "error", detail != NULL ? detail : "", "errno", conn->last_errno));
}

static bool conn_deadline_passed(const store_conn_t *conn)
{
    return conn->deadline_ms != 0 && clock_monotonic_ms() >= conn->deadline_ms;
}

/* Turns a failed result code of statement id into a status, logging what is
 * not an expected outcome (a taken key, a missing parent). */
store_status_t conn_fail(store_conn_t *conn, const store_sql_t *id, int rc)
{
    conn->last_rc = rc;
    bool lock_or_stop = rc == DB_ERR_BUSY || rc == DB_ERR_INTERRUPTED;
    if (lock_or_stop && (conn->timed_out || conn_deadline_passed(conn))) {
        conn_log_failure(conn, "store: deadline passed", id->name, rc);
        return STORE_TIMEOUT;
    }
    switch (rc) {
    case DB_ERR_UNIQUE:
        return STORE_CONFLICT;
    case DB_ERR_FOREIGN_KEY:
        return STORE_NOT_FOUND;
    case DB_ERR_BAD_TEXT:
        /* a path's id may hold any byte; no stored row can: SQLite finds
         * none, PostgreSQL refuses the text, and both mean "not found" */
        return STORE_NOT_FOUND;
    case DB_ERR_UNAVAILABLE:
        conn->broken = true;
        conn_log_failure(conn, "store: database unavailable", id->name, rc);
        return STORE_UNAVAILABLE;
    case DB_ERR_RETRY: /* conn_write_alone runs the transaction again */
        conn_log_failure(conn, "store: transaction to run again", id->name, rc);
        return STORE_ERROR;
    default:
        conn_log_failure(conn, "store: database error", id->name, rc);
        return STORE_ERROR;
    }
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

/* ---- the backend's statement layer */

int db_step(db_stmt_t *stmt)
{
    return stmt->conn->be->step(stmt);
}

bool db_column_is_null(db_stmt_t *stmt, int col)
{
    return stmt->conn->be->column_is_null(stmt, col);
}

int64_t db_column_int(db_stmt_t *stmt, int col)
{
    return stmt->conn->be->column_int(stmt, col);
}

const char *db_column_text(db_stmt_t *stmt, int col)
{
    size_t len;
    return stmt->conn->be->column_text(stmt, col, &len);
}

size_t db_column_bytes(db_stmt_t *stmt, int col)
{
    size_t len = 0;
    if (stmt->conn->be->column_blob(stmt, col, &len) == NULL)
        return 0;
    return len;
}

const void *db_column_blob(db_stmt_t *stmt, int col, size_t *len)
{
    size_t ignored;
    return stmt->conn->be->column_blob(stmt, col, len != NULL ? len : &ignored);
}

bool bind_null(db_stmt_t *stmt, int index)
{
    return stmt->conn->be->bind_null(stmt, index);
}

bool bind_text_len(db_stmt_t *stmt, int index, const char *text, size_t len)
{
    return stmt->conn->be->bind_text(stmt, index, text, len);
}

bool bind_blob(db_stmt_t *stmt, int index, const void *blob, size_t len)
{
    return stmt->conn->be->bind_blob(stmt, index, blob, len);
}

int64_t conn_changes(store_conn_t *conn)
{
    return conn->be->changes(conn);
}

bool conn_in_transaction(store_conn_t *conn)
{
    return conn->be->in_transaction(conn);
}

bool conn_is_pg(const store_conn_t *conn)
{
    return conn->be->is_pg;
}

/* ---- statements */

/* The connection's statement for q: found by q's address (open addressing),
 * prepared on first use. */
store_status_t conn_prepare(store_conn_t *conn, const store_sql_t *q, db_stmt_t **out)
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
        int rc = DB_ERR_OTHER;
        db_stmt_t *stmt = conn->be->prepare(conn, q, &rc);
        if (stmt == NULL)
            return conn_fail(conn, q, rc);
        slot->key = q;
        slot->stmt = stmt;
        *out = stmt;
        return STORE_OK;
    }
    log_event(LOG_ERROR, "store: statement cache full", json_pack("{s:s}", "op", q->name));
    return STORE_ERROR;
}

/* Finalizes every statement conn prepared (before it closes). */
void conn_forget_statements(store_conn_t *conn)
{
    for (size_t i = 0; i < STMT_CACHE_SLOTS; i++) {
        if (conn->stmts[i].stmt != NULL)
            conn->be->finalize(conn->stmts[i].stmt);
        conn->stmts[i] = (stmt_slot_t){0};
    }
}

void stmt_done(db_stmt_t *stmt)
{
    stmt->conn->be->reset(stmt);
}

bool bind_text(db_stmt_t *stmt, int index, const char *text)
{
    if (text == NULL) /* as SQLite binds a NULL pointer */
        return bind_null(stmt, index);
    return bind_text_len(stmt, index, text, strlen(text));
}

bool bind_int(db_stmt_t *stmt, int index, int64_t value)
{
    return stmt->conn->be->bind_int(stmt, index, value);
}

bool bind_text_or_null(db_stmt_t *stmt, int index, const char *text)
{
    if (text == NULL || text[0] == '\0')
        return bind_null(stmt, index);
    return bind_text(stmt, index, text);
}

bool bind_blob_or_null(db_stmt_t *stmt, int index, const uint8_t *blob, size_t len)
{
    if (blob == NULL || len == 0)
        return bind_null(stmt, index);
    return bind_blob(stmt, index, blob, len);
}

store_status_t run_bound(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt, bool bound)
{
    if (!bound)
        return conn_bind_failed(conn, q, stmt);
    return conn_run(conn, q, stmt);
}

/* Binding fails only on a programming error (index, size): never a status a
 * caller could act on. */
store_status_t conn_bind_failed(store_conn_t *conn, const store_sql_t *id, db_stmt_t *stmt)
{
    conn_log_failure(conn, "store: bind failed", id->name, DB_ERR_OTHER);
    stmt_done(stmt);
    return STORE_ERROR;
}

/* Steps a bound statement to DB_DONE (ignoring any RETURNING rows, so the
 * statement finishes and releases what it holds) and resets it. */
store_status_t conn_run(store_conn_t *conn, const store_sql_t *id, db_stmt_t *stmt)
{
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW) {
    }
    store_status_t status = rc == DB_DONE ? STORE_OK : conn_fail(conn, id, rc);
    stmt_done(stmt);
    return status;
}

/* Runs a statement without parameters. */
store_status_t conn_exec(store_conn_t *conn, const store_sql_t *id)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, id, &stmt);
    if (status != STORE_OK)
        return status;
    return conn_run(conn, id, stmt);
}

/* Prepares a statement whose first parameter is key; on failure nothing is
 * left bound. */
store_status_t conn_prepare_key(store_conn_t *conn, const store_sql_t *id, const char *key,
                                db_stmt_t **out)
{
    store_status_t status = conn_prepare(conn, id, out);
    if (status != STORE_OK)
        return status;
    if (!bind_text(*out, 1, key))
        return conn_bind_failed(conn, id, *out);
    return STORE_OK;
}

store_status_t conn_read_row(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                             row_decode_fn decode, void *record)
{
    store_status_t status;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        status = decode != NULL ? decode(q, stmt, record) : STORE_OK;
    else if (rc == DB_DONE)
        status = STORE_NOT_FOUND;
    else
        status = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return status;
}

/* STORE_OK when a statement keyed by `key` returns a row, else STORE_NOT_FOUND. */
store_status_t conn_exists(store_conn_t *conn, const store_sql_t *id, const char *key)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, id, key, &stmt);
    if (status != STORE_OK)
        return status;
    return conn_read_row(conn, id, stmt, NULL, NULL);
}

store_status_t conn_query_int(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                              int64_t *value)
{
    int rc = db_step(stmt);
    store_status_t status = STORE_OK;
    if (rc == DB_ROW)
        *value = db_column_int(stmt, 0);
    else if (rc != DB_DONE)
        status = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return status;
}

/* Copies a TEXT column into a fixed buffer; false when it does not fit. */
bool column_copy(db_stmt_t *stmt, int col, char *out, size_t cap)
{
    size_t len = 0;
    const char *text = stmt->conn->be->column_text(stmt, col, &len);
    if (text == NULL || len >= cap)
        return false;
    memcpy(out, text, len);
    out[len] = '\0';
    return true;
}

bool column_copy_or_empty(db_stmt_t *stmt, int col, char *out, size_t cap)
{
    if (db_column_is_null(stmt, col)) {
        out[0] = '\0';
        return true;
    }
    return column_copy(stmt, col, out, cap);
}

bool column_blob_copy(db_stmt_t *stmt, int col, uint8_t *out, size_t cap, size_t *len)
{
    *len = 0;
    if (db_column_is_null(stmt, col))
        return true;
    size_t n = 0;
    const void *blob = db_column_blob(stmt, col, &n);
    if (blob == NULL || n == 0 || n > cap)
        return false;
    memcpy(out, blob, n);
    *len = n;
    return true;
}

/* True when a caller's fixed-size field holds a NUL-terminated string. */
bool text_fits(const char *text, size_t cap)
{
    return text != NULL && memchr(text, '\0', cap) != NULL;
}

/* ---- pages */

void page_start(store_page_t *page, store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
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
    db_stmt_t *stmt = NULL;
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
    int rc = db_step(page->stmt);
    if (rc == DB_ROW)
        return true;
    page->ended = true;
    if (rc != DB_DONE)
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
