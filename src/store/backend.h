/* store/backend.h: what a database backend gives the store (sqlite.c,
 * pg.c). store.c and stmt.c call through this table and nothing else, so
 * the resource files and everything above the store do not know which
 * database they run on.
 *
 * A backend's statement embeds db_stmt_t as its first member; the table's
 * functions receive it and cast. Each prepared statement belongs to one
 * connection and is used by one thread at a time, as the connection is. */
#ifndef TAXD_STORE_BACKEND_H
#define TAXD_STORE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/internal.h"

struct db_stmt {
    store_conn_t *conn;
    const store_sql_t *q;
};

typedef struct store_backend {
    const char *name; /* "sqlite", "postgresql": for logs */
    bool is_pg;
    /* Opens conn->native to target (a path, or a URL). false with *err
     * (malloc'd, never holding a password) when it cannot. */
    bool (*connect)(store_conn_t *conn, const char *target, char **err);
    void (*disconnect)(store_conn_t *conn);
    /* Applies pending schema changes on a fresh connection, safe when
     * several processes start together; fail_on_purpose: the test hook of
     * store_open_options_t. */
    bool (*migrate)(store_conn_t *conn, bool fail_on_purpose, char **err);
    /* Tunes a connection to be the group commit's writer; NULL: the backend
     * has no group commit (each writer commits on its own connection). */
    bool (*tune_writer)(store_conn_t *conn, char **err);

    /* A new prepared statement for q; NULL with *rc (db_error_t) set. */
    db_stmt_t *(*prepare)(store_conn_t *conn, const store_sql_t *q, int *rc);
    void (*finalize)(db_stmt_t *stmt);
    int (*step)(db_stmt_t *stmt);
    /* Ends a run of the statement and drops its bindings. */
    void (*reset)(db_stmt_t *stmt);
    bool (*bind_null)(db_stmt_t *stmt, int index);
    bool (*bind_int)(db_stmt_t *stmt, int index, int64_t value);
    bool (*bind_text)(db_stmt_t *stmt, int index, const char *text, size_t len);
    bool (*bind_blob)(db_stmt_t *stmt, int index, const void *blob, size_t len);
    bool (*column_is_null)(db_stmt_t *stmt, int col);
    int64_t (*column_int)(db_stmt_t *stmt, int col);
    const char *(*column_text)(db_stmt_t *stmt, int col, size_t *len);
    const void *(*column_blob)(db_stmt_t *stmt, int col, size_t *len);

    int64_t (*changes)(store_conn_t *conn);
    bool (*in_transaction)(store_conn_t *conn);
    /* The backend's words on conn's last failure, for the log line; never
     * a bound value. */
    const char *(*errmsg)(store_conn_t *conn);
    /* conn->deadline_ms changed (0: none). */
    void (*deadline_changed)(store_conn_t *conn);

    /* Transaction statements: a write, a read of one snapshot. */
    const store_sql_t *begin_write;
    const store_sql_t *begin_read;

    /* Optional (NULL: nothing to do on this backend). */
    store_status_t (*tune_bulk)(store_conn_t *conn);
    store_status_t (*checkpoint)(store_conn_t *conn);
} store_backend_t;

extern const store_backend_t store_sqlite_backend;
extern const store_backend_t store_pg_backend;

/* True when target names a PostgreSQL database (postgres:// or
 * postgresql://), false for a file path. */
bool store_target_is_pg(const char *target);

/* The target the store was opened on (a path or a URL with its password):
 * for a backend's own extra sessions (listen.c); never for a log line. */
const char *store_target(const store_t *store);

/* Finalizes every statement conn prepared and empties its cache (before it
 * closes, or when its session was lost and statements died with it). */
void conn_forget_statements(store_conn_t *conn);

/* Logs a failure of statement op on conn with the backend's words. */
void conn_log_failure(store_conn_t *conn, const char *msg, const char *op, int rc);

#endif
