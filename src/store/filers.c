/* store/filers.c: the tenant's filers. Read by caller id and listed in
 * caller-id order with keyset pagination; created, patched and deleted on
 * behalf of the API (store/filers.h).
 *
 * Design and trade-offs:
 *  - Every statement names the tenant, so a filer of another tenant is not
 *    found rather than refused: the store cannot leak another tenant's
 *    records whatever the caller passes.
 *  - The TIN is an opaque sealed blob here (core/tin.h seals it for the
 *    tenant and the filer's uuid). NULL in the column is "no TIN".
 *  - A patch is one UPDATE ... RETURNING keyed by (tenant, uuid): the row
 *    the client gets back is exactly the row written, and a filer re-created
 *    under the same caller id is never given a TIN sealed for its
 *    predecessor.
 *  - Delete checks "default" and "has accounts" inside the same BEGIN
 *    IMMEDIATE transaction as the DELETE: no account can be created against
 *    the filer between the check and the delete, and the refusal is reported
 *    as a reason rather than as a foreign-key failure (which conn_fail would
 *    map to STORE_NOT_FOUND). */
#include "store/filers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/tin.h"
#include "store/internal.h"

#define FILER_COLUMNS "uuid, id, name, is_default, tin_sealed, created_at, updated_at"
static const store_sql_t Q_FILER_GET = {"filer_get", "SELECT " FILER_COLUMNS
    " FROM filers WHERE tenant_id = ?1 AND id = ?2", NULL};
static const store_sql_t Q_FILER_LIST_FIRST = {"filer_list", "SELECT " FILER_COLUMNS " FROM filers"
    " WHERE tenant_id = ?1 ORDER BY id LIMIT ?2", NULL};
static const store_sql_t Q_FILER_LIST_AFTER = {"filer_list_after",
    "SELECT " FILER_COLUMNS " FROM filers"
    " WHERE tenant_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3", NULL};
static const store_sql_t Q_FILER_CREATE = {"filer_create",
    "INSERT INTO filers (uuid, tenant_id, id, name, is_default, tin_sealed, created_at,"
    " updated_at) VALUES (?2, ?1, ?3, ?4, 0, ?5, ?6, ?7)", NULL};
/* ?4: 0 keeps the TIN, 1 clears it, 2 sets it to ?5 (store_filer_tin_change_t). */
static const store_sql_t Q_FILER_UPDATE = {"filer_update",
    "UPDATE filers SET name = coalesce(?3, name),"
    " tin_sealed = CASE ?4 WHEN 0 THEN tin_sealed WHEN 1 THEN NULL ELSE ?5 END,"
    " updated_at = ?6"
    " WHERE tenant_id = ?1 AND uuid = ?2 RETURNING " FILER_COLUMNS,
    /* PostgreSQL: a bare CASE operand would be inferred as text */
    "UPDATE filers SET name = coalesce($3, name),"
    " tin_sealed = CASE $4::bigint WHEN 0 THEN tin_sealed WHEN 1 THEN NULL ELSE $5 END,"
    " updated_at = $6"
    " WHERE tenant_id = $1 AND uuid = $2 RETURNING " FILER_COLUMNS};
static const store_sql_t Q_FILER_DELETE_CHECK = {"filer_delete_check",
    "SELECT uuid, is_default,"
    " EXISTS (SELECT 1 FROM accounts WHERE accounts.filer_uuid = filers.uuid)"
    " FROM filers WHERE tenant_id = ?1 AND id = ?2", NULL};
static const store_sql_t Q_FILER_DELETE = {"filer_delete", "DELETE FROM filers WHERE uuid = ?1", NULL};

/* ---- rows */

/* A row_decode_fn: record is a store_filer_t. */
static store_status_t filer_from_row(const store_sql_t *id, db_stmt_t *stmt, void *record)
{
    store_filer_t *out = record;
    if (!column_copy(stmt, 0, out->uuid, sizeof out->uuid) ||
        !column_copy(stmt, 1, out->id, sizeof out->id) ||
        !column_copy(stmt, 2, out->name, sizeof out->name) ||
        /* NULL is "no TIN"; an empty or oversized blob cannot come from tin_seal */
        !column_blob_copy(stmt, 4, out->tin_sealed, sizeof out->tin_sealed, &out->tin_sealed_len))
        return store_bad_row(id);
    out->is_default = db_column_int(stmt, 3) != 0;
    out->created_at = db_column_int(stmt, 5);
    out->updated_at = db_column_int(stmt, 6);
    return STORE_OK;
}

/* ---- reads */

store_status_t store_filer_get(store_conn_t *conn, const char *tenant_id, const char *id,
                               store_filer_t *out)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_FILER_GET, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_FILER_GET, stmt);
    return conn_read_row(conn, &Q_FILER_GET, stmt, filer_from_row, out);
}

store_status_t store_filer_list(store_conn_t *conn, const char *tenant_id, const char *after_id,
                                size_t limit, int (*each)(const store_filer_t *filer, void *ctx),
                                void *ctx, bool *more)
{
    store_page_t page;
    page_open(&page, conn, &Q_FILER_LIST_FIRST, &Q_FILER_LIST_AFTER, tenant_id, after_id, limit);
    store_filer_t filer;
    while (page_next(&page, filer_from_row, &filer))
        if (each(&filer, ctx) != 0)
            break;
    return page_close(&page, more);
}

/* ---- create */

typedef struct filer_create_args {
    const char *tenant_id;
    const store_filer_t *filer;
} filer_create_args_t;

static store_status_t filer_create_tx(store_conn_t *conn, const void *arg)
{
    const filer_create_args_t *a = arg;
    const store_filer_t *f = a->filer;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_FILER_CREATE, a->tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    bool bound = bind_text(stmt, 2, f->uuid) && bind_text(stmt, 3, f->id) &&
                 bind_text(stmt, 4, f->name) &&
                 bind_blob_or_null(stmt, 5, f->tin_sealed, f->tin_sealed_len) &&
                 bind_int(stmt, 6, f->created_at) && bind_int(stmt, 7, f->updated_at);
    if (!bound)
        return conn_bind_failed(conn, &Q_FILER_CREATE, stmt);
    return conn_run(conn, &Q_FILER_CREATE, stmt);
}

store_status_t store_filer_create(store_conn_t *conn, const char *tenant_id,
                                  const store_filer_t *filer)
{
    if (tenant_id == NULL || !text_fits(filer->uuid, sizeof filer->uuid) ||
        !text_fits(filer->id, sizeof filer->id) || !text_fits(filer->name, sizeof filer->name) ||
        filer->is_default || filer->tin_sealed_len > sizeof filer->tin_sealed)
        return store_bad_argument("filer_create");
    filer_create_args_t args = {tenant_id, filer};
    return conn_write(conn, filer_create_tx, &args);
}

/* ---- update */

typedef struct filer_update_args {
    const char *tenant_id;
    const char *uuid;
    const store_filer_patch_t *patch;
    store_filer_t *out;
} filer_update_args_t;

static bool bind_patch(db_stmt_t *stmt, const store_filer_patch_t *p)
{
    const uint8_t *sealed = p->tin == STORE_FILER_TIN_SET ? p->tin_sealed : NULL;
    return bind_text(stmt, 3, p->name) && bind_int(stmt, 4, (int64_t)p->tin) &&
           bind_blob_or_null(stmt, 5, sealed, p->tin_sealed_len) && bind_int(stmt, 6, p->updated_at);
}

/* Steps the UPDATE ... RETURNING: the first row is the result; stepping on
 * to DB_DONE finishes the statement so it holds nothing afterwards. */
static store_status_t filer_update_tx(store_conn_t *conn, const void *arg)
{
    const filer_update_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_FILER_UPDATE, a->tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, a->uuid) || !bind_patch(stmt, a->patch))
        return conn_bind_failed(conn, &Q_FILER_UPDATE, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        status = filer_from_row(&Q_FILER_UPDATE, stmt, a->out);
        while ((rc = db_step(stmt)) == DB_ROW)
            ;
    } else {
        status = STORE_NOT_FOUND;
    }
    if (rc != DB_DONE)
        status = conn_fail(conn, &Q_FILER_UPDATE, rc);
    stmt_done(stmt);
    return status;
}

static bool patch_fits(const store_filer_patch_t *p)
{
    if (p->name != NULL && !text_fits(p->name, DOMAIN_NAME_SIZE))
        return false;
    switch (p->tin) {
    case STORE_FILER_TIN_KEEP:
    case STORE_FILER_TIN_CLEAR: return true;
    case STORE_FILER_TIN_SET:
        return p->tin_sealed != NULL && p->tin_sealed_len > 0 &&
               p->tin_sealed_len <= STORE_TIN_SEALED_MAX;
    default: return false;
    }
}

store_status_t store_filer_update(store_conn_t *conn, const char *tenant_id, const char *uuid,
                                  const store_filer_patch_t *patch, store_filer_t *out)
{
    if (tenant_id == NULL || uuid == NULL || !patch_fits(patch))
        return store_bad_argument("filer_update");
    filer_update_args_t args = {tenant_id, uuid, patch, out};
    return conn_write(conn, filer_update_tx, &args);
}

/* ---- delete */

typedef struct filer_delete_args {
    const char *tenant_id;
    const char *id;
    store_filer_refusal_t *refusal;
} filer_delete_args_t;

/* Reads the filer's uuid and whether it may go; STORE_NOT_FOUND when absent. */
static store_status_t filer_delete_check(store_conn_t *conn, const filer_delete_args_t *a,
                                         char uuid[STORE_UUID_LEN])
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_FILER_DELETE_CHECK, a->tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, a->id))
        return conn_bind_failed(conn, &Q_FILER_DELETE_CHECK, stmt);
    int rc = db_step(stmt);
    if (rc == DB_DONE) {
        status = STORE_NOT_FOUND;
    } else if (rc != DB_ROW) {
        status = conn_fail(conn, &Q_FILER_DELETE_CHECK, rc);
    } else if (!column_copy(stmt, 0, uuid, STORE_UUID_LEN)) {
        status = store_bad_row(&Q_FILER_DELETE_CHECK);
    } else if (db_column_int(stmt, 1) != 0) {
        *a->refusal = STORE_FILER_IS_DEFAULT;
        status = STORE_CONFLICT;
    } else if (db_column_int(stmt, 2) != 0) {
        *a->refusal = STORE_FILER_HAS_ACCOUNTS;
        status = STORE_CONFLICT;
    }
    stmt_done(stmt);
    return status;
}

static store_status_t filer_delete_tx(store_conn_t *conn, const void *arg)
{
    const filer_delete_args_t *a = arg;
    char uuid[STORE_UUID_LEN];
    store_status_t status = filer_delete_check(conn, a, uuid);
    if (status != STORE_OK)
        return status;
    db_stmt_t *stmt;
    status = conn_prepare_key(conn, &Q_FILER_DELETE, uuid, &stmt);
    if (status != STORE_OK)
        return status;
    return conn_run(conn, &Q_FILER_DELETE, stmt);
}

store_status_t store_filer_delete(store_conn_t *conn, const char *tenant_id, const char *id,
                                  store_filer_refusal_t *refusal)
{
    store_filer_refusal_t ignored;
    if (refusal == NULL)
        refusal = &ignored;
    *refusal = STORE_FILER_DELETABLE;
    if (tenant_id == NULL || id == NULL)
        return store_bad_argument("filer_delete");
    filer_delete_args_t args = {tenant_id, id, refusal};
    return conn_write(conn, filer_delete_tx, &args);
}
