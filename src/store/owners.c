/* store/owners.c: the tenant's account owners.
 *
 * One row per owner in account_owners, unique on (tenant_id, id): a taken
 * caller id surfaces as STORE_CONFLICT straight from the constraint, so a
 * create needs no read-before-write and two racing creates cannot both win.
 * Optional text is bound through nullif(?, '') and read back through
 * coalesce(col, ''), so the C struct's "" and the table's NULL are the same
 * absence and a row has one shape. The TIN arrives and leaves sealed; this
 * file never holds a clear TIN.
 *
 * An update replaces the whole row by uuid within the tenant (the handler did
 * the merge): one statement, no partial column lists to keep in step with the
 * API, and the tenant in the WHERE clause keeps a uuid from reaching across
 * tenants. */
#include "store/owners.h"

#include <limits.h>
#include <string.h>

#include "store/internal.h"

#define OWNER_COLUMNS                                                                         \
    "uuid, id, name, account_owner_type, coalesce(tax_country_code, ''), tin_sealed,"         \
    " coalesce(tin_type, ''), coalesce(birth_date, ''), coalesce(email, ''),"                 \
    " coalesce(address_line1, ''), coalesce(address_line2, ''), coalesce(address_city, ''),"  \
    " coalesce(address_state, ''), coalesce(address_postal_code, ''),"                        \
    " coalesce(address_country_code, ''), created_at, updated_at"

static const store_sql_t Q_OWNER_INSERT = {"owner_insert",
    "INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type,"
    " tax_country_code, tin_sealed, tin_type, birth_date, email, address_line1, address_line2,"
    " address_city, address_state, address_postal_code, address_country_code, created_at,"
    " updated_at) VALUES (?1, ?2, ?3, ?4, ?5, nullif(?6, ''), ?7, nullif(?8, ''),"
    " nullif(?9, ''), nullif(?10, ''), nullif(?11, ''), nullif(?12, ''), nullif(?13, ''),"
    " nullif(?14, ''), nullif(?15, ''), nullif(?16, ''), ?17, ?18)", NULL};
static const store_sql_t Q_OWNER_UPDATE = {"owner_update",
    "UPDATE account_owners SET name = ?4, account_owner_type = ?5,"
    " tax_country_code = nullif(?6, ''), tin_sealed = ?7, tin_type = nullif(?8, ''),"
    " birth_date = nullif(?9, ''), email = nullif(?10, ''), address_line1 = nullif(?11, ''),"
    " address_line2 = nullif(?12, ''), address_city = nullif(?13, ''),"
    " address_state = nullif(?14, ''), address_postal_code = nullif(?15, ''),"
    " address_country_code = nullif(?16, ''), updated_at = ?18"
    " WHERE uuid = ?1 AND tenant_id = ?2", NULL}; /* ?3 (id) and ?17 (created_at) never change */
static const store_sql_t Q_OWNER_GET = {"owner_get", "SELECT " OWNER_COLUMNS
    " FROM account_owners WHERE tenant_id = ?1 AND id = ?2", NULL};
static const store_sql_t Q_OWNER_LIST_FIRST = {"owner_list", "SELECT " OWNER_COLUMNS
    " FROM account_owners WHERE tenant_id = ?1 ORDER BY id LIMIT ?2", NULL};
static const store_sql_t Q_OWNER_LIST_AFTER = {"owner_list_after", "SELECT " OWNER_COLUMNS
    " FROM account_owners WHERE tenant_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3", NULL};
static const store_sql_t Q_OWNER_UUID = {"owner_uuid",
    "SELECT uuid FROM account_owners WHERE tenant_id = ?1 AND id = ?2", NULL};
static const store_sql_t Q_OWNER_ID_OF = {"owner_id_of",
    "SELECT id FROM account_owners WHERE uuid = ?1", NULL};

/* ---- lookups other records need */

/* Steps a statement expected to return one TEXT column into out. */
static store_status_t owner_one_text(store_conn_t *conn, const store_sql_t *q,
                                     db_stmt_t *stmt, char *out, size_t cap)
{
    int rc = db_step(stmt);
    store_status_t status;
    if (rc == DB_ROW)
        status = column_copy(stmt, 0, out, cap) ? STORE_OK : store_bad_row(q);
    else if (rc == DB_DONE)
        status = STORE_NOT_FOUND;
    else
        status = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return status;
}

store_status_t store_owner_uuid(store_conn_t *conn, const char *tenant_id, const char *id,
                                char uuid[STORE_UUID_LEN])
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_OWNER_UUID, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_OWNER_UUID, stmt);
    return owner_one_text(conn, &Q_OWNER_UUID, stmt, uuid, STORE_UUID_LEN);
}

store_status_t store_owner_id_of(store_conn_t *conn, const char *owner_uuid,
                                 char id[STORE_ID_MAX])
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_OWNER_ID_OF, owner_uuid, &stmt);
    if (status != STORE_OK)
        return status;
    return owner_one_text(conn, &Q_OWNER_ID_OF, stmt, id, STORE_ID_MAX);
}

/* ---- create and update */

/* Every string field is terminated within its array and the sealed TIN fits:
 * the binds below read them with strlen and a length. */
static bool owner_fits(const store_owner_t *o)
{
    return text_fits(o->uuid, sizeof o->uuid) && text_fits(o->id, sizeof o->id) &&
           text_fits(o->name, sizeof o->name) &&
           text_fits(o->account_owner_type, sizeof o->account_owner_type) &&
           text_fits(o->tax_country_code, sizeof o->tax_country_code) &&
           o->tin_sealed_len <= sizeof o->tin_sealed &&
           text_fits(o->tin_type, sizeof o->tin_type) &&
           text_fits(o->birth_date, sizeof o->birth_date) &&
           text_fits(o->email, sizeof o->email) &&
           text_fits(o->address_line1, sizeof o->address_line1) &&
           text_fits(o->address_line2, sizeof o->address_line2) &&
           text_fits(o->address_city, sizeof o->address_city) &&
           text_fits(o->address_state, sizeof o->address_state) &&
           text_fits(o->address_postal_code, sizeof o->address_postal_code) &&
           text_fits(o->address_country_code, sizeof o->address_country_code);
}

/* Insert and update share one parameter layout (?1..?18), so one binder
 * serves both and they cannot drift apart. */
static bool owner_bind(db_stmt_t *stmt, const char *tenant_id, const store_owner_t *o)
{
    bool ok = bind_text(stmt, 1, o->uuid) && bind_text(stmt, 2, tenant_id) &&
              bind_text(stmt, 3, o->id) && bind_text(stmt, 4, o->name) &&
              bind_text(stmt, 5, o->account_owner_type) && bind_text(stmt, 6, o->tax_country_code);
    if (!ok)
        return false;
    return bind_blob_or_null(stmt, 7, o->tin_sealed, o->tin_sealed_len) &&
           bind_text(stmt, 8, o->tin_type) &&
           bind_text(stmt, 9, o->birth_date) && bind_text(stmt, 10, o->email) &&
           bind_text(stmt, 11, o->address_line1) && bind_text(stmt, 12, o->address_line2) &&
           bind_text(stmt, 13, o->address_city) && bind_text(stmt, 14, o->address_state) &&
           bind_text(stmt, 15, o->address_postal_code) &&
           bind_text(stmt, 16, o->address_country_code) && bind_int(stmt, 17, o->created_at) &&
           bind_int(stmt, 18, o->updated_at);
}

typedef struct owner_write_args {
    const char *tenant_id;
    const store_owner_t *owner;
} owner_write_args_t;

static store_status_t owner_create_tx(store_conn_t *conn, const void *arg)
{
    const owner_write_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, &Q_OWNER_INSERT, &stmt);
    if (status != STORE_OK)
        return status;
    if (!owner_bind(stmt, a->tenant_id, a->owner))
        return conn_bind_failed(conn, &Q_OWNER_INSERT, stmt);
    return conn_run(conn, &Q_OWNER_INSERT, stmt);
}

store_status_t store_owner_create_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const store_owner_t *owner)
{
    if (!text_fits(tenant_id, STORE_UUID_LEN) || !owner_fits(owner))
        return store_bad_argument("owner_create");
    owner_write_args_t args = {tenant_id, owner};
    return owner_create_tx(conn, &args);
}

store_status_t store_owner_create(store_conn_t *conn, const char *tenant_id,
                                  const store_owner_t *owner)
{
    if (!text_fits(tenant_id, STORE_UUID_LEN) || !owner_fits(owner))
        return store_bad_argument("owner_create");
    owner_write_args_t args = {tenant_id, owner};
    return conn_write(conn, owner_create_tx, &args);
}

static store_status_t owner_update_tx(store_conn_t *conn, const void *arg)
{
    const owner_write_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, &Q_OWNER_UPDATE, &stmt);
    if (status != STORE_OK)
        return status;
    if (!owner_bind(stmt, a->tenant_id, a->owner))
        return conn_bind_failed(conn, &Q_OWNER_UPDATE, stmt);
    status = conn_run(conn, &Q_OWNER_UPDATE, stmt);
    if (status == STORE_OK && conn_changes(conn) == 0)
        return STORE_NOT_FOUND; /* rolled back by conn_write: nothing was written anyway */
    return status;
}

store_status_t store_owner_update_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const store_owner_t *owner)
{
    if (!text_fits(tenant_id, STORE_UUID_LEN) || !owner_fits(owner))
        return store_bad_argument("owner_update");
    owner_write_args_t args = {tenant_id, owner};
    return owner_update_tx(conn, &args);
}

store_status_t store_owner_update(store_conn_t *conn, const char *tenant_id,
                                  const store_owner_t *owner)
{
    if (!text_fits(tenant_id, STORE_UUID_LEN) || !owner_fits(owner))
        return store_bad_argument("owner_update");
    owner_write_args_t args = {tenant_id, owner};
    return conn_write(conn, owner_update_tx, &args);
}

/* ---- reads */

/* A row_decode_fn: record is a store_owner_t. */
static store_status_t owner_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_owner_t *out = record;
    const void *sealed = db_column_blob(stmt, 5, NULL);
    size_t sealed_len = (size_t)db_column_bytes(stmt, 5);
    if (sealed_len > sizeof out->tin_sealed)
        return store_bad_row(q);
    if (!column_copy(stmt, 0, out->uuid, sizeof out->uuid) ||
        !column_copy(stmt, 1, out->id, sizeof out->id) ||
        !column_copy(stmt, 2, out->name, sizeof out->name) ||
        !column_copy(stmt, 3, out->account_owner_type, sizeof out->account_owner_type) ||
        !column_copy(stmt, 4, out->tax_country_code, sizeof out->tax_country_code) ||
        !column_copy(stmt, 6, out->tin_type, sizeof out->tin_type) ||
        !column_copy(stmt, 7, out->birth_date, sizeof out->birth_date) ||
        !column_copy(stmt, 8, out->email, sizeof out->email) ||
        !column_copy(stmt, 9, out->address_line1, sizeof out->address_line1) ||
        !column_copy(stmt, 10, out->address_line2, sizeof out->address_line2) ||
        !column_copy(stmt, 11, out->address_city, sizeof out->address_city) ||
        !column_copy(stmt, 12, out->address_state, sizeof out->address_state) ||
        !column_copy(stmt, 13, out->address_postal_code, sizeof out->address_postal_code) ||
        !column_copy(stmt, 14, out->address_country_code, sizeof out->address_country_code))
        return store_bad_row(q);
    out->tin_sealed_len = sealed != NULL ? sealed_len : 0;
    if (out->tin_sealed_len > 0)
        memcpy(out->tin_sealed, sealed, out->tin_sealed_len);
    out->created_at = db_column_int(stmt, 15);
    out->updated_at = db_column_int(stmt, 16);
    return STORE_OK;
}

store_status_t store_owner_get(store_conn_t *conn, const char *tenant_id, const char *id,
                               store_owner_t *out)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_OWNER_GET, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_OWNER_GET, stmt);
    return conn_read_row(conn, &Q_OWNER_GET, stmt, owner_from_row, out);
}

store_status_t store_owner_list(store_conn_t *conn, const char *tenant_id, const char *after_id,
                                size_t limit, int (*each)(const store_owner_t *owner, void *ctx),
                                void *ctx, bool *more)
{
    store_page_t page;
    page_open(&page, conn, &Q_OWNER_LIST_FIRST, &Q_OWNER_LIST_AFTER, tenant_id, after_id, limit);
    store_owner_t owner;
    while (page_next(&page, owner_from_row, &owner))
        if (each(&owner, ctx) != 0)
            break;
    return page_close(&page, more);
}
