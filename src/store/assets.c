/* store/assets.c: a tenant's assets.
 *
 * Batches. POST /v1/assets may create up to 1,000 assets and answers per
 * element, so one failing element must not undo the others, yet the 200 must
 * mean that every created element is durable. The whole batch is therefore
 * one BEGIN IMMEDIATE transaction in which each element is checked with two
 * SELECTs (code taken? name taken?) before its INSERT. The write lock is held
 * from BEGIN, so nothing can take a code between the check and the insert,
 * and a duplicate inside the same batch is seen by the check like any other
 * existing asset (the first element wins). Trade-off: two extra indexed reads
 * per element instead of a SAVEPOINT and a failed INSERT per conflict; they
 * are cheap, they tell a code conflict from a name conflict without parsing
 * SQLite's message, and they keep constraint failures (which abort a
 * statement) out of the normal path.
 *
 * Addressing. An asset is addressed by its uuid or its code. A code cannot
 * look like a uuid (at most 32 characters), but the lookup still falls back to
 * the code when a uuid-shaped key is not a uuid of the tenant, so the rule is
 * simply "uuid first, then code". Every lookup is scoped by tenant: another
 * tenant's asset is not found.
 *
 * Deletes check, inside their transaction, that the asset is not the
 * reporting currency (every tenant has it, DOMAIN_REPORTING_CURRENCY) and that no transaction_assets row
 * references it; the foreign key would refuse the latter too, but as a
 * generic constraint error that could not be told from others. */
#include "store/assets.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/ids.h"
#include "core/log.h"
#include "store/internal.h"

#define ASSET_COLUMNS "uuid, code, name, type, decimals, created_at"

static const store_sql_t Q_ASSET_BY_UUID = {"asset_by_uuid", "SELECT " ASSET_COLUMNS
    " FROM assets WHERE tenant_id = ?1 AND uuid = ?2", NULL};
static const store_sql_t Q_ASSET_BY_CODE = {"asset_by_code", "SELECT " ASSET_COLUMNS
    " FROM assets WHERE tenant_id = ?1 AND code = ?2", NULL};
static const store_sql_t Q_ASSET_CODE_TAKEN = {"asset_code_taken",
    "SELECT 1 FROM assets WHERE tenant_id = ?1 AND code = ?2", NULL};
static const store_sql_t Q_ASSET_NAME_TAKEN = {"asset_name_taken",
    "SELECT 1 FROM assets WHERE tenant_id = ?1 AND name = ?2", NULL};
static const store_sql_t Q_ASSET_INSERT = {"asset_insert",
    "INSERT INTO assets (uuid, tenant_id, code, name, type, decimals, created_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", NULL};
static const store_sql_t Q_ASSET_LIST_FIRST = {"asset_list", "SELECT " ASSET_COLUMNS
    " FROM assets WHERE tenant_id = ?1 ORDER BY code LIMIT ?2", NULL};
static const store_sql_t Q_ASSET_LIST_AFTER = {"asset_list_after", "SELECT " ASSET_COLUMNS
    " FROM assets WHERE tenant_id = ?1 AND code > ?2 ORDER BY code LIMIT ?3", NULL};
static const store_sql_t Q_ASSET_REFERENCED = {"asset_referenced",
    "SELECT 1 FROM assets WHERE uuid = ?1 AND tx_refs > 0", NULL};
static const store_sql_t Q_ASSET_REFS_ADD = {"asset_refs_add",
    "UPDATE assets SET tx_refs = tx_refs + ?3 WHERE tenant_id = ?1 AND code = ?2", NULL};
static const store_sql_t Q_ASSET_DELETE = {"asset_delete",
    "DELETE FROM assets WHERE tenant_id = ?1 AND uuid = ?2", NULL};

/* ---- rules */

/* What a caller's struct must hold before it may reach an INSERT, so every
 * row read back fits the struct again. */
static bool asset_fits(const store_asset_t *a)
{
    return text_fits(a->uuid, sizeof a->uuid) && domain_asset_code_valid(a->code) &&
           text_fits(a->name, sizeof a->name) && a->name[0] != '\0' &&
           text_fits(a->type, sizeof a->type) && a->type[0] != '\0' &&
           (a->decimals == STORE_ASSET_NO_DECIMALS ||
            (a->decimals >= 0 && a->decimals <= DOMAIN_ASSET_DECIMALS_MAX));
}

/* ---- rows */

/* A row_decode_fn: record is a store_asset_t. */
static store_status_t asset_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_asset_t *out = record;
    if (!column_copy(stmt, 0, out->uuid, sizeof out->uuid) ||
        !column_copy(stmt, 1, out->code, sizeof out->code) ||
        !column_copy(stmt, 2, out->name, sizeof out->name) ||
        !column_copy(stmt, 3, out->type, sizeof out->type))
        return store_bad_row(q);
    if (db_column_is_null(stmt, 4)) {
        out->decimals = STORE_ASSET_NO_DECIMALS;
    } else {
        int64_t decimals = db_column_int(stmt, 4);
        if (decimals < 0 || decimals > DOMAIN_ASSET_DECIMALS_MAX)
            return store_bad_row(q);
        out->decimals = (int)decimals;
    }
    out->created_at = db_column_int(stmt, 5);
    return STORE_OK;
}

/* Runs q bound to (tenant_id, value): one row into out (may be NULL: only
 * "is there one"), STORE_NOT_FOUND when none. */
static store_status_t asset_query(store_conn_t *conn, const store_sql_t *q,
                                  const char *tenant_id, const char *value, store_asset_t *out)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, q, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, value))
        return conn_bind_failed(conn, q, stmt);
    return conn_read_row(conn, q, stmt, out != NULL ? asset_from_row : NULL, out);
}

/* uuid first (stored lowercase, so a key in capitals is lowered), then code. */
static store_status_t asset_find(store_conn_t *conn, const char *tenant_id, const char *key,
                                 store_asset_t *out)
{
    if (ids_is_uuid_v4(key)) {
        char lowered[STORE_UUID_LEN];
        for (size_t i = 0; i < sizeof lowered; i++)
            lowered[i] = (char)tolower((unsigned char)key[i]);
        store_status_t status = asset_query(conn, &Q_ASSET_BY_UUID, tenant_id, lowered, out);
        if (status != STORE_NOT_FOUND)
            return status;
    }
    return asset_query(conn, &Q_ASSET_BY_CODE, tenant_id, key, out);
}

static store_status_t asset_insert(store_conn_t *conn, const char *tenant_id,
                                   const store_asset_t *a)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_ASSET_INSERT, a->uuid, &stmt);
    if (status != STORE_OK)
        return status;
    bool bound = bind_text(stmt, 2, tenant_id) && bind_text(stmt, 3, a->code) &&
                 bind_text(stmt, 4, a->name) && bind_text(stmt, 5, a->type) &&
                 (a->decimals == STORE_ASSET_NO_DECIMALS
                      ? bind_null(stmt, 6)
                      : bind_int(stmt, 6, a->decimals)) &&
                 bind_int(stmt, 7, a->created_at);
    if (!bound)
        return conn_bind_failed(conn, &Q_ASSET_INSERT, stmt);
    return conn_run(conn, &Q_ASSET_INSERT, stmt);
}

/* ---- batch create */

typedef struct batch_args {
    const char *tenant_id;
    const store_asset_t *assets;
    size_t count;
    store_asset_outcome_t *outcomes;
} batch_args_t;

/* One element: STORE_OK with its outcome, or a failure that ends the batch. */
static store_status_t batch_element(store_conn_t *conn, const char *tenant_id,
                                    const store_asset_t *a, store_asset_outcome_t *outcome)
{
    store_status_t status = asset_query(conn, &Q_ASSET_CODE_TAKEN, tenant_id, a->code, NULL);
    if (status == STORE_OK) {
        *outcome = STORE_ASSET_CONFLICT_CODE;
        return STORE_OK;
    }
    if (status != STORE_NOT_FOUND)
        return status;
    status = asset_query(conn, &Q_ASSET_NAME_TAKEN, tenant_id, a->name, NULL);
    if (status == STORE_OK) {
        *outcome = STORE_ASSET_CONFLICT_NAME;
        return STORE_OK;
    }
    if (status != STORE_NOT_FOUND)
        return status;
    /* A conflict here could only be a uuid collision: a failure, not an outcome. */
    status = asset_insert(conn, tenant_id, a);
    if (status == STORE_CONFLICT) {
        log_event(LOG_ERROR, "store: asset uuid already taken",
                  json_pack("{s:s}", "op", Q_ASSET_INSERT.name));
        status = STORE_ERROR;
    }
    if (status == STORE_OK)
        *outcome = STORE_ASSET_CREATED;
    return status;
}

static store_status_t batch_tx(store_conn_t *conn, const void *arg)
{
    const batch_args_t *b = arg;
    for (size_t i = 0; i < b->count; i++) {
        store_status_t status = batch_element(conn, b->tenant_id, &b->assets[i], &b->outcomes[i]);
        if (status != STORE_OK)
            return status;
    }
    return STORE_OK;
}

store_status_t store_assets_create_batch(store_conn_t *conn, const char *tenant_id,
                                         const store_asset_t *assets, size_t count,
                                         store_asset_outcome_t *outcomes)
{
    if (tenant_id == NULL || (count > 0 && (assets == NULL || outcomes == NULL)))
        return store_bad_argument("assets_create_batch");
    for (size_t i = 0; i < count; i++) {
        if (!asset_fits(&assets[i]))
            return store_bad_argument("assets_create_batch");
    }
    batch_args_t args = {tenant_id, assets, count, outcomes};
    return conn_write(conn, batch_tx, &args);
}

/* ---- reads */

store_status_t store_asset_get(store_conn_t *conn, const char *tenant_id, const char *key,
                               store_asset_t *out)
{
    if (tenant_id == NULL || key == NULL || out == NULL)
        return store_bad_argument("asset_get");
    store_status_t status = conn_enter(conn);
    if (status != STORE_OK)
        return status;
    return asset_find(conn, tenant_id, key, out);
}

store_status_t store_asset_list(store_conn_t *conn, const char *tenant_id,
                                const char *after_code, size_t limit,
                                int (*each)(const store_asset_t *asset, void *ctx), void *ctx,
                                bool *more)
{
    if (tenant_id == NULL || each == NULL)
        return store_bad_argument("asset_list");
    store_page_t page;
    page_open(&page, conn, &Q_ASSET_LIST_FIRST, &Q_ASSET_LIST_AFTER, tenant_id, after_code, limit);
    store_asset_t asset;
    while (page_next(&page, asset_from_row, &asset))
        if (each(&asset, ctx) != 0)
            break;
    return page_close(&page, more);
}

/* ---- delete */

typedef struct delete_args {
    const char *tenant_id;
    const char *key;
    store_asset_refusal_t *refusal;
    store_asset_t *found;
} delete_args_t;

static store_status_t delete_tx(store_conn_t *conn, const void *arg)
{
    const delete_args_t *d = arg;
    store_status_t status = asset_find(conn, d->tenant_id, d->key, d->found);
    if (status != STORE_OK)
        return status;
    if (strcmp(d->found->code, DOMAIN_REPORTING_CURRENCY) == 0) {
        *d->refusal = STORE_ASSET_REFUSED_REPORTING;
        return STORE_CONFLICT;
    }
    status = conn_exists(conn, &Q_ASSET_REFERENCED, d->found->uuid);
    if (status == STORE_OK) {
        *d->refusal = STORE_ASSET_REFUSED_REFERENCED;
        return STORE_CONFLICT;
    }
    if (status != STORE_NOT_FOUND)
        return status;
    db_stmt_t *stmt;
    status = conn_prepare_key(conn, &Q_ASSET_DELETE, d->tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, d->found->uuid))
        return conn_bind_failed(conn, &Q_ASSET_DELETE, stmt);
    return conn_run(conn, &Q_ASSET_DELETE, stmt);
}

store_status_t store_asset_delete(store_conn_t *conn, const char *tenant_id, const char *key,
                                  store_asset_refusal_t *refusal, store_asset_t *out)
{
    if (tenant_id == NULL || key == NULL)
        return store_bad_argument("asset_delete");
    store_asset_refusal_t ignored_refusal;
    store_asset_t ignored_asset;
    store_asset_refusal_t *r = refusal != NULL ? refusal : &ignored_refusal;
    *r = STORE_ASSET_REFUSED_NONE;
    delete_args_t args = {tenant_id, key, r, out != NULL ? out : &ignored_asset};
    return conn_write(conn, delete_tx, &args);
}

/* ---- ensure (for transactions that name an asset by code) */

typedef struct ensure_args {
    const char *tenant_id;
    const char *code;
    const char *type;
    char *uuid;
    int64_t now;
    const char *new_uuid;
} ensure_args_t;

static store_status_t ensure_body(store_conn_t *conn, const ensure_args_t *e)
{
    store_asset_t asset;
    store_status_t status = asset_query(conn, &Q_ASSET_BY_CODE, e->tenant_id, e->code, &asset);
    if (status == STORE_OK) {
        memcpy(e->uuid, asset.uuid, STORE_UUID_LEN);
        return STORE_OK;
    }
    if (status != STORE_NOT_FOUND)
        return status;
    /* A transaction must not fail because some asset is named like this
     * code: then the name carries the new uuid, which no name can hold yet
     * (a name with this uuid would belong to an asset with this uuid). */
    status = asset_query(conn, &Q_ASSET_NAME_TAKEN, e->tenant_id, e->code, NULL);
    if (status != STORE_OK && status != STORE_NOT_FOUND)
        return status;
    memset(&asset, 0, sizeof asset);
    snprintf(asset.uuid, sizeof asset.uuid, "%s", e->new_uuid);
    snprintf(asset.code, sizeof asset.code, "%s", e->code);
    if (status == STORE_OK)
        snprintf(asset.name, sizeof asset.name, "%s (%s)", e->code, e->new_uuid);
    else
        snprintf(asset.name, sizeof asset.name, "%s", e->code);
    snprintf(asset.type, sizeof asset.type, "%s", e->type);
    asset.decimals = STORE_ASSET_NO_DECIMALS;
    asset.created_at = e->now;
    /* Code and name are free (checked under the write lock): a conflict now
     * is a uuid collision, which the caller sees as STORE_CONFLICT. On
     * PostgreSQL there is no write lock: a writer of another account may
     * have created the asset (or taken the name) since the reads above, and
     * the transaction runs again to find it; a true uuid collision then
     * runs again until the retries or the deadline run out. */
    status = asset_insert(conn, e->tenant_id, &asset);
    if (status == STORE_CONFLICT && conn_is_pg(conn))
        return conn_retry(conn, "asset_ensure");
    if (status == STORE_OK)
        memcpy(e->uuid, asset.uuid, STORE_UUID_LEN);
    return status;
}

static bool ensure_args_ok(const ensure_args_t *e)
{
    return e->tenant_id != NULL && e->uuid != NULL && domain_asset_code_valid(e->code) &&
           e->type != NULL && e->type[0] != '\0' && text_fits(e->type, DOMAIN_ASSET_TYPE_SIZE) &&
           e->new_uuid != NULL && text_fits(e->new_uuid, STORE_UUID_LEN);
}

static store_status_t ensure_tx(store_conn_t *conn, const void *arg)
{
    return ensure_body(conn, arg);
}

store_status_t store_asset_ensure_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const char *code, const char *type,
                                        char uuid[STORE_UUID_LEN], int64_t now,
                                        const char *new_uuid)
{
    ensure_args_t args = {tenant_id, code, type, uuid, now, new_uuid};
    if (!ensure_args_ok(&args))
        return store_bad_argument("asset_ensure");
    return ensure_body(conn, &args);
}

store_status_t store_asset_refs_add_in_tx(store_conn_t *conn, const char *tenant_id,
                                         const char *code, int delta, bool *found)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_ASSET_REFS_ADD, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    status = run_bound(conn, &Q_ASSET_REFS_ADD, stmt,
                       bind_text(stmt, 2, code) && bind_int(stmt, 3, delta));
    *found = status == STORE_OK && conn_changes(conn) == 1;
    return status;
}

store_status_t store_asset_ensure(store_conn_t *conn, const char *tenant_id, const char *code,
                                  const char *type, char uuid[STORE_UUID_LEN], int64_t now,
                                  const char *new_uuid)
{
    ensure_args_t args = {tenant_id, code, type, uuid, now, new_uuid};
    if (!ensure_args_ok(&args))
        return store_bad_argument("asset_ensure");
    return conn_write(conn, ensure_tx, &args);
}
