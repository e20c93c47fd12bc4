/* store/tenants.c: tenants, their credentials and the operator's rate limits
 * (every operator change bumps the settings version in its transaction). */
#include "store/store.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "store/internal.h"

static const store_sql_t Q_TENANT_INSERT = {"tenant_insert",
    "INSERT INTO tenants (id, name, created_at) VALUES (?1, ?2, ?3)", NULL};
static const store_sql_t Q_TENANT_GET = {"tenant_get", "SELECT id, name, created_at FROM tenants WHERE id = ?1", NULL};
static const store_sql_t Q_TENANT_EXISTS = {"tenant_exists", "SELECT 1 FROM tenants WHERE id = ?1", NULL};
static const store_sql_t Q_TENANT_EACH = {"tenant_each", "SELECT id, name, created_at FROM tenants ORDER BY rowid", NULL};
static const store_sql_t Q_CREDENTIAL_INSERT = {"credential_insert",
    "INSERT INTO credentials (client_id, tenant_id, secret_hash,"
    " scopes, created_at, revoked_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, nullif(?6, CAST(0 AS BIGINT)))", NULL};
static const store_sql_t Q_CREDENTIAL_GET = {"credential_get",
    "SELECT client_id, tenant_id, secret_hash, scopes, created_at,"
    " coalesce(revoked_at, 0), coalesce(last_used_at, 0)"
    " FROM credentials WHERE client_id = ?1", NULL};
static const store_sql_t Q_CREDENTIAL_EXISTS = {"credential_exists",
    "SELECT 1 FROM credentials WHERE client_id = ?1", NULL};
static const store_sql_t Q_CREDENTIAL_REVOKE = {"credential_revoke",
    "UPDATE credentials SET revoked_at = ?2"
    " WHERE client_id = ?1 AND revoked_at IS NULL", NULL};
static const store_sql_t Q_CREDENTIAL_TOUCH = {"credential_touch",
    "UPDATE credentials SET last_used_at = ?2 WHERE client_id = ?1", NULL};
static const store_sql_t Q_REVOKED_EACH = {"revoked_each", "SELECT client_id FROM credentials"
    " WHERE revoked_at IS NOT NULL ORDER BY client_id", NULL};
static const store_sql_t Q_RATE_LIMIT_UPSERT = {"rate_limit_upsert",
    "INSERT INTO rate_limits (tenant_id, route, rate, burst)"
    " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (tenant_id, route)"
    " DO UPDATE SET rate = excluded.rate, burst = excluded.burst", NULL};
static const store_sql_t Q_RATE_LIMIT_EACH = {"rate_limit_each", "SELECT tenant_id, route, rate, burst"
    " FROM rate_limits ORDER BY tenant_id, route", NULL};
static const store_sql_t Q_FILER_INSERT = {"filer_insert",
    "INSERT INTO filers (uuid, tenant_id, id, name, is_default,"
    " created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)", NULL};

/* ---- tenants */

/* The reporting currency (?4, DOMAIN_REPORTING_CURRENCY), which every tenant holds. */
static const store_sql_t Q_REPORTING_ASSET_INSERT = {"reporting_asset_insert",
    "INSERT INTO assets (uuid, tenant_id, code, name, type, decimals, created_at)"
    " VALUES (?1, ?2, ?4, 'US Dollar', 'fiat', 2, ?3)", NULL};

typedef struct tenant_create_args {
    const store_tenant_t *tenant;
    const store_tenant_seed_t *seed;
    const store_credential_t *first; /* may be NULL */
} tenant_create_args_t;

static store_status_t credential_create_tx(store_conn_t *conn, const void *arg);

static store_status_t tenant_create_tx(store_conn_t *conn, const void *arg)
{
    const tenant_create_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, &Q_TENANT_INSERT, &stmt);
    if (status != STORE_OK)
        return status;
    if (!(bind_text(stmt, 1, a->tenant->id) && bind_text(stmt, 2, a->tenant->name) &&
          bind_int(stmt, 3, a->tenant->created_at)))
        return conn_bind_failed(conn, &Q_TENANT_INSERT, stmt);
    status = conn_run(conn, &Q_TENANT_INSERT, stmt);
    if (status != STORE_OK)
        return status;

    status = conn_prepare(conn, &Q_FILER_INSERT, &stmt);
    if (status != STORE_OK)
        return status;
    if (!(bind_text(stmt, 1, a->seed->default_filer_uuid) && bind_text(stmt, 2, a->tenant->id) &&
          bind_text(stmt, 3, DOMAIN_DEFAULT_FILER_ID) && bind_text(stmt, 4, "Default filer") &&
          bind_int(stmt, 5, 1) && bind_int(stmt, 6, a->tenant->created_at)))
        return conn_bind_failed(conn, &Q_FILER_INSERT, stmt);
    status = conn_run(conn, &Q_FILER_INSERT, stmt);
    if (status != STORE_OK)
        return status;

    status = conn_prepare(conn, &Q_REPORTING_ASSET_INSERT, &stmt);
    if (status != STORE_OK)
        return status;
    if (!(bind_text(stmt, 1, a->seed->usd_asset_uuid) && bind_text(stmt, 2, a->tenant->id) &&
          bind_int(stmt, 3, a->tenant->created_at) &&
          bind_text(stmt, 4, DOMAIN_REPORTING_CURRENCY)))
        return conn_bind_failed(conn, &Q_REPORTING_ASSET_INSERT, stmt);
    status = conn_run(conn, &Q_REPORTING_ASSET_INSERT, stmt);
    if (status != STORE_OK || a->first == NULL)
        return status;
    return credential_create_tx(conn, a->first);
}

store_status_t store_tenant_create(store_conn_t *conn, const store_tenant_t *tenant,
                                   const store_tenant_seed_t *seed,
                                   const store_credential_t *first)
{
    if (!text_fits(tenant->id, sizeof tenant->id) ||
        !text_fits(tenant->name, sizeof tenant->name) ||
        !text_fits(seed->default_filer_uuid, STORE_UUID_LEN) ||
        !text_fits(seed->usd_asset_uuid, STORE_UUID_LEN) ||
        (first != NULL && (!text_fits(first->client_id, sizeof first->client_id) ||
                           strcmp(first->tenant_id, tenant->id) != 0)))
        return store_bad_argument("tenant_create");
    tenant_create_args_t args = {tenant, seed, first};
    return conn_write(conn, tenant_create_tx, &args);
}

/* A row_decode_fn: record is a store_tenant_t. */
static store_status_t tenant_from_row(const store_sql_t *id, db_stmt_t *stmt, void *record)
{
    store_tenant_t *out = record;
    if (!column_copy(stmt, 0, out->id, sizeof out->id) ||
        !column_copy(stmt, 1, out->name, sizeof out->name))
        return store_bad_row(id);
    out->created_at = db_column_int(stmt, 2);
    return STORE_OK;
}

store_status_t store_tenant_get(store_conn_t *conn, const char *tenant_id, store_tenant_t *out)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_TENANT_GET, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    return conn_read_row(conn, &Q_TENANT_GET, stmt, tenant_from_row, out);
}

store_status_t store_tenant_each(store_conn_t *conn,
                                 int (*each)(const store_tenant_t *tenant, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare(conn, &Q_TENANT_EACH, &stmt);
    if (status != STORE_OK)
        return status;
    int rc;
    store_tenant_t tenant;
    while ((rc = db_step(stmt)) == DB_ROW) {
        status = tenant_from_row(&Q_TENANT_EACH, stmt, &tenant);
        if (status != STORE_OK || each(&tenant, ctx) != 0)
            break;
    }
    if (rc != DB_ROW && rc != DB_DONE)
        status = conn_fail(conn, &Q_TENANT_EACH, rc);
    stmt_done(stmt);
    return status;
}

/* ---- credentials */

static store_status_t credential_create_tx(store_conn_t *conn, const void *arg)
{
    const store_credential_t *cred = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, &Q_CREDENTIAL_INSERT, &stmt);
    if (status != STORE_OK)
        return status;
    bool bound = bind_text(stmt, 1, cred->client_id) && bind_text(stmt, 2, cred->tenant_id) &&
                 bind_blob(stmt, 3, cred->secret_hash, sizeof cred->secret_hash) &&
                 bind_int(stmt, 4, cred->scopes) && bind_int(stmt, 5, cred->created_at) &&
                 bind_int(stmt, 6, cred->revoked_at);
    if (!bound)
        return conn_bind_failed(conn, &Q_CREDENTIAL_INSERT, stmt);
    return conn_run(conn, &Q_CREDENTIAL_INSERT, stmt);
}

store_status_t store_credential_create(store_conn_t *conn, const store_credential_t *cred)
{
    if (!text_fits(cred->client_id, sizeof cred->client_id) ||
        !text_fits(cred->tenant_id, sizeof cred->tenant_id))
        return store_bad_argument("credential_create");
    return conn_write(conn, credential_create_tx, cred);
}

static store_status_t credential_from_row(db_stmt_t *stmt,
                                          store_credential_t *out)
{
    const void *hash = db_column_blob(stmt, 2, NULL);
    int64_t scopes = db_column_int(stmt, 3);
    if (!column_copy(stmt, 0, out->client_id, sizeof out->client_id) ||
        !column_copy(stmt, 1, out->tenant_id, sizeof out->tenant_id) || hash == NULL ||
        db_column_bytes(stmt, 2) != (int)sizeof out->secret_hash || scopes < 0 ||
        (uint64_t)scopes > UINT_MAX)
        return store_bad_row(&Q_CREDENTIAL_GET);
    memcpy(out->secret_hash, hash, sizeof out->secret_hash);
    out->scopes = (unsigned)scopes;
    out->created_at = db_column_int(stmt, 4);
    out->revoked_at = db_column_int(stmt, 5);
    out->last_used_at = db_column_int(stmt, 6);
    return STORE_OK;
}

store_status_t store_credential_get(store_conn_t *conn, const char *client_id,
                                    store_credential_t *out)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_CREDENTIAL_GET, client_id, &stmt);
    if (status != STORE_OK)
        return status;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        status = credential_from_row(stmt, out);
    else if (rc == DB_DONE)
        status = STORE_NOT_FOUND;
    else
        status = conn_fail(conn, &Q_CREDENTIAL_GET, rc);
    stmt_done(stmt);
    return status;
}

typedef struct credential_revoke_args {
    const char *client_id;
    int64_t now;
} credential_revoke_args_t;

/* Only a credential that was active changes (so the first revocation time is
 * kept) and only a change bumps the settings version. */
static store_status_t credential_revoke_tx(store_conn_t *conn, const void *arg)
{
    const credential_revoke_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_CREDENTIAL_REVOKE, a->client_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_int(stmt, 2, a->now))
        return conn_bind_failed(conn, &Q_CREDENTIAL_REVOKE, stmt);
    status = conn_run(conn, &Q_CREDENTIAL_REVOKE, stmt);
    if (status != STORE_OK)
        return status;
    if (conn_changes(conn) == 0)
        return conn_exists(conn, &Q_CREDENTIAL_EXISTS, a->client_id);
    return conn_bump_settings(conn);
}

store_status_t store_credential_revoke(store_conn_t *conn, const char *client_id, int64_t now)
{
    if (client_id == NULL)
        return store_bad_argument("credential_revoke");
    credential_revoke_args_t args = {client_id, now};
    return conn_write(conn, credential_revoke_tx, &args);
}

static store_status_t credential_touch_tx(store_conn_t *conn, const void *arg)
{
    const credential_revoke_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_CREDENTIAL_TOUCH, a->client_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_int(stmt, 2, a->now))
        return conn_bind_failed(conn, &Q_CREDENTIAL_TOUCH, stmt);
    status = conn_run(conn, &Q_CREDENTIAL_TOUCH, stmt);
    if (status == STORE_OK && conn_changes(conn) == 0)
        status = STORE_NOT_FOUND;
    return status;
}

store_status_t store_credential_touch(store_conn_t *conn, const char *client_id, int64_t now)
{
    if (client_id == NULL)
        return store_bad_argument("credential_touch");
    credential_revoke_args_t args = {client_id, now};
    return conn_write(conn, credential_touch_tx, &args);
}

store_status_t store_revoked_each(store_conn_t *conn,
                                  int (*each)(const char *client_id, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare(conn, &Q_REVOKED_EACH, &stmt);
    if (status != STORE_OK)
        return status;
    int rc;
    char client_id[STORE_ID_MAX];
    while ((rc = db_step(stmt)) == DB_ROW) {
        if (!column_copy(stmt, 0, client_id, sizeof client_id)) {
            status = store_bad_row(&Q_REVOKED_EACH);
            break;
        }
        if (each(client_id, ctx) != 0)
            break;
    }
    if (rc != DB_ROW && rc != DB_DONE)
        status = conn_fail(conn, &Q_REVOKED_EACH, rc);
    stmt_done(stmt);
    return status;
}

/* ---- rate limits */

static store_status_t rate_limit_set_tx(store_conn_t *conn, const void *arg)
{
    const store_rate_limit_t *limit = arg;
    store_status_t status = STORE_OK;
    if (limit->tenant_id[0] != '\0')
        status = conn_exists(conn, &Q_TENANT_EXISTS, limit->tenant_id);
    db_stmt_t *stmt;
    if (status == STORE_OK)
        status = conn_prepare(conn, &Q_RATE_LIMIT_UPSERT, &stmt);
    if (status != STORE_OK)
        return status;
    if (!(bind_text(stmt, 1, limit->tenant_id) && bind_text(stmt, 2, limit->route) &&
          bind_int(stmt, 3, limit->rate) && bind_int(stmt, 4, limit->burst)))
        return conn_bind_failed(conn, &Q_RATE_LIMIT_UPSERT, stmt);
    status = conn_run(conn, &Q_RATE_LIMIT_UPSERT, stmt);
    if (status != STORE_OK)
        return status;
    return conn_bump_settings(conn);
}

store_status_t store_rate_limit_set(store_conn_t *conn, const store_rate_limit_t *limit)
{
    if (!text_fits(limit->tenant_id, sizeof limit->tenant_id) ||
        !text_fits(limit->route, sizeof limit->route))
        return store_bad_argument("rate_limit_set");
    return conn_write(conn, rate_limit_set_tx, limit);
}

static store_status_t rate_limit_from_row(db_stmt_t *stmt,
                                          store_rate_limit_t *out)
{
    int64_t rate = db_column_int(stmt, 2);
    int64_t burst = db_column_int(stmt, 3);
    if (!column_copy(stmt, 0, out->tenant_id, sizeof out->tenant_id) ||
        !column_copy(stmt, 1, out->route, sizeof out->route) || rate <= 0 ||
        rate > UINT32_MAX || burst <= 0 || burst > UINT32_MAX)
        return store_bad_row(&Q_RATE_LIMIT_EACH);
    out->rate = (uint32_t)rate;
    out->burst = (uint32_t)burst;
    return STORE_OK;
}

store_status_t store_rate_limit_each(store_conn_t *conn,
                                     int (*each)(const store_rate_limit_t *limit, void *ctx),
                                     void *ctx)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare(conn, &Q_RATE_LIMIT_EACH, &stmt);
    if (status != STORE_OK)
        return status;
    int rc;
    store_rate_limit_t limit;
    while ((rc = db_step(stmt)) == DB_ROW) {
        status = rate_limit_from_row(stmt, &limit);
        if (status != STORE_OK || each(&limit, ctx) != 0)
            break;
    }
    if (rc != DB_ROW && rc != DB_DONE)
        status = conn_fail(conn, &Q_RATE_LIMIT_EACH, rc);
    stmt_done(stmt);
    return status;
}
