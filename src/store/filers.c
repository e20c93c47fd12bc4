/* store/filers.c: the tenant's filers, read by caller id and listed in caller-id
 * order with keyset pagination. */
#include "store/store.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "store/internal.h"

#define FILER_COLUMNS "uuid, id, name, is_default, created_at, updated_at"
static const store_sql_t Q_FILER_GET = {"filer_get", "SELECT " FILER_COLUMNS
    " FROM filers WHERE tenant_id = ?1 AND id = ?2"};
static const store_sql_t Q_FILER_LIST_FIRST = {"filer_list", "SELECT " FILER_COLUMNS " FROM filers"
    " WHERE tenant_id = ?1 ORDER BY id LIMIT ?2"};
static const store_sql_t Q_FILER_LIST_AFTER = {"filer_list_after",
    "SELECT " FILER_COLUMNS " FROM filers"
    " WHERE tenant_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3"};

/* ---- filers */

static store_status_t filer_from_row(const store_sql_t *id, sqlite3_stmt *stmt,
                                     store_filer_t *out)
{
    if (!column_copy(stmt, 0, out->uuid, sizeof out->uuid) ||
        !column_copy(stmt, 1, out->id, sizeof out->id) ||
        !column_copy(stmt, 2, out->name, sizeof out->name))
        return store_bad_row(id);
    out->is_default = sqlite3_column_int64(stmt, 3) != 0;
    out->created_at = sqlite3_column_int64(stmt, 4);
    out->updated_at = sqlite3_column_int64(stmt, 5);
    return STORE_OK;
}

store_status_t store_filer_get(store_conn_t *conn, const char *tenant_id, const char *id,
                               store_filer_t *out)
{
    sqlite3_stmt *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_FILER_GET, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_FILER_GET, stmt);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        status = filer_from_row(&Q_FILER_GET, stmt, out);
    else if (rc == SQLITE_DONE)
        status = STORE_NOT_FOUND;
    else
        status = conn_fail(conn, &Q_FILER_GET, rc);
    stmt_done(stmt);
    return status;
}

/* Binds the page window: one row more than the limit tells whether more follow. */
static store_status_t filer_list_prepare(store_conn_t *conn, const char *tenant_id,
                                         const char *after_id, size_t limit, const store_sql_t **id,
                                         sqlite3_stmt **stmt)
{
    bool from_start = after_id == NULL || after_id[0] == '\0';
    *id = from_start ? &Q_FILER_LIST_FIRST : &Q_FILER_LIST_AFTER;
    store_status_t status = conn_prepare_key(conn, *id, tenant_id, stmt);
    if (status != STORE_OK)
        return status;
    int64_t window = limit < (size_t)INT64_MAX ? (int64_t)limit + 1 : INT64_MAX;
    bool bound = from_start ? bind_int(*stmt, 2, window)
                            : bind_text(*stmt, 2, after_id) && bind_int(*stmt, 3, window);
    if (!bound)
        return conn_bind_failed(conn, *id, *stmt);
    return STORE_OK;
}

store_status_t store_filer_list(store_conn_t *conn, const char *tenant_id, const char *after_id,
                                size_t limit, int (*each)(const store_filer_t *filer, void *ctx),
                                void *ctx, bool *more)
{
    const store_sql_t *id;
    sqlite3_stmt *stmt;
    bool follows = false;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = filer_list_prepare(conn, tenant_id, after_id, limit, &id, &stmt);
    if (status != STORE_OK)
        return status;
    int rc;
    size_t delivered = 0;
    store_filer_t filer;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (delivered == limit) {
            follows = true;
            break;
        }
        status = filer_from_row(id, stmt, &filer);
        if (status != STORE_OK)
            break;
        delivered++;
        if (each(&filer, ctx) != 0) {
            /* Stopped early: "more" still means rows after the last one delivered. */
            rc = sqlite3_step(stmt);
            follows = rc == SQLITE_ROW;
            break;
        }
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        status = conn_fail(conn, id, rc);
    stmt_done(stmt);
    if (more != NULL)
        *more = follows;
    return status;
}
