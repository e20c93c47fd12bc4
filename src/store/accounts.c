/* store/accounts.c: a tenant's accounts.
 *
 * The table references its owner and filer by service uuid (so a caller id
 * could one day change without touching accounts), while the interface
 * speaks caller ids. Each statement does the translation itself: reads join
 * account_owners and filers back to their caller ids, writes resolve the
 * caller ids with scalar subqueries on (tenant_id, id). Those two tables
 * belong to other store files; reading them here is deliberate, because a
 * second round trip through their functions would cost a statement per
 * reference and could not share this file's transaction.
 *
 * Create and update each run in one BEGIN IMMEDIATE transaction. One
 * statement (Q_ACCOUNT_REFS) answers all three questions a create asks
 * before inserting: is the id taken, which uuid has the owner, which the
 * filer; a NULL subquery result tells exactly which reference is missing,
 * which a foreign-key failure of the INSERT could not. The UNIQUE and
 * foreign-key constraints still guard the INSERT, so a bug here cannot store
 * a duplicate or a dangling reference.
 *
 * Update is read, merge, write inside the transaction: the caller's merge
 * function decides the new record from the stored one, so two concurrent
 * PATCHes cannot combine into a record neither asked for (for example
 * AUSTRIA without a year). A merge that changes nothing writes nothing.
 *
 * Lists use keyset pagination on the (tenant_id, id) unique index; the owner
 * filter has its own statement so that it can use the owner_uuid index
 * instead of scanning every account of the tenant. */
#include "store/accounts.h"

#include <limits.h>
#include <string.h>

#include "store/internal.h"

#define ACCOUNT_COLUMNS                                                                    \
    "a.uuid, a.id, o.id, f.id, a.name, a.cost_basis_method, a.austria_tax_year,"           \
    " a.created_at, a.updated_at"
#define ACCOUNT_FROM                                                                       \
    " FROM accounts a JOIN account_owners o ON o.uuid = a.owner_uuid"                      \
    " JOIN filers f ON f.uuid = a.filer_uuid"

static const store_sql_t Q_ACCOUNT_GET = {"account_get", "SELECT " ACCOUNT_COLUMNS ACCOUNT_FROM
    " WHERE a.tenant_id = ?1 AND a.id = ?2", NULL};
static const store_sql_t Q_ACCOUNT_LIST = {"account_list", "SELECT " ACCOUNT_COLUMNS ACCOUNT_FROM
    " WHERE a.tenant_id = ?1 AND a.id > ?2 ORDER BY a.id LIMIT ?3", NULL};
static const store_sql_t Q_ACCOUNT_LIST_OWNER = {"account_list_owner",
    "SELECT " ACCOUNT_COLUMNS ACCOUNT_FROM
    " WHERE a.owner_uuid = (SELECT uuid FROM account_owners WHERE tenant_id = ?1 AND id = ?4)"
    " AND a.tenant_id = ?1 AND a.id > ?2 ORDER BY a.id LIMIT ?3", NULL};
/* ?1 tenant, ?2 owner caller id, ?3 filer caller id, ?4 account caller id. */
static const store_sql_t Q_ACCOUNT_REFS = {"account_refs",
    "SELECT (SELECT uuid FROM account_owners WHERE tenant_id = ?1 AND id = ?2),"
    " (SELECT uuid FROM filers WHERE tenant_id = ?1 AND id = ?3),"
    " EXISTS (SELECT 1 FROM accounts WHERE tenant_id = ?1 AND id = ?4)", NULL};
static const store_sql_t Q_ACCOUNT_INSERT = {"account_insert",
    "INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid, name,"
    " cost_basis_method, austria_tax_year, created_at, updated_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)", NULL};
/* A new cost basis method changes every lot: the inventory becomes dirty from
 * the account's first transaction (SET expressions read the old row). */
static const store_sql_t Q_ACCOUNT_UPDATE = {"account_update",
    "UPDATE accounts SET owner_uuid = ?2, filer_uuid = ?3, name = ?4, cost_basis_method = ?5,"
    " austria_tax_year = ?6, updated_at = ?7,"
    " dirty_from = CASE WHEN cost_basis_method IS ?5 THEN dirty_from"
    "   ELSE coalesce((SELECT min(datetime) FROM transactions WHERE account = accounts.seq),"
    "                 dirty_from) END,"
    " inventory_version = inventory_version + (cost_basis_method IS NOT ?5)"
    " WHERE uuid = ?1",
    /* PostgreSQL: IS is IS NOT DISTINCT FROM, and a boolean adds as an int */
    "UPDATE accounts SET owner_uuid = $2, filer_uuid = $3, name = $4, cost_basis_method = $5,"
    " austria_tax_year = $6, updated_at = $7,"
    " dirty_from = CASE WHEN cost_basis_method IS NOT DISTINCT FROM $5 THEN dirty_from"
    "   ELSE coalesce((SELECT min(datetime) FROM transactions WHERE account = accounts.seq),"
    "                 dirty_from) END,"
    " inventory_version = inventory_version + (cost_basis_method IS DISTINCT FROM $5)::int"
    " WHERE uuid = $1"};
static const store_sql_t Q_ACCOUNT_UUID = {"account_uuid",
    "SELECT uuid, cost_basis_method FROM accounts WHERE tenant_id = ?1 AND id = ?2", NULL};

bool store_account_method_valid(const char *method, int austria_tax_year)
{
    domain_method_t m;
    return domain_name_index(DOMAIN_ACCOUNT_METHOD_NAMES, method) >= 0 &&
           domain_method_parse(method, &m) &&
           (m == DOMAIN_METHOD_AUSTRIA) == (austria_tax_year != 0);
}

/* ---- rows and bindings */

/* A row_decode_fn: record is a store_account_t. */
static store_status_t account_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_account_t *out = record;
    if (!column_copy(stmt, 0, out->uuid, sizeof out->uuid) ||
        !column_copy(stmt, 1, out->id, sizeof out->id) ||
        !column_copy(stmt, 2, out->owner_id, sizeof out->owner_id) ||
        !column_copy(stmt, 3, out->filer_id, sizeof out->filer_id) ||
        !column_copy_or_empty(stmt, 4, out->name, sizeof out->name) ||
        !column_copy(stmt, 5, out->cost_basis_method, sizeof out->cost_basis_method))
        return store_bad_row(q);
    int64_t year = db_column_int(stmt, 6); /* NULL reads as 0 */
    if (year < 0 || year > INT_MAX)
        return store_bad_row(q);
    out->austria_tax_year = (int)year;
    out->created_at = db_column_int(stmt, 7);
    out->updated_at = db_column_int(stmt, 8);
    return STORE_OK;
}

/* "" and 0 are the structs' "none": they are stored as NULL. */
static bool bind_int_or_null(db_stmt_t *stmt, int index, int value)
{
    if (value == 0)
        return bind_null(stmt, index);
    return bind_int(stmt, index, value);
}

static bool account_fits(const store_account_t *a)
{
    return text_fits(a->uuid, sizeof a->uuid) && text_fits(a->id, sizeof a->id) &&
           text_fits(a->owner_id, sizeof a->owner_id) &&
           text_fits(a->filer_id, sizeof a->filer_id) && text_fits(a->name, sizeof a->name) &&
           text_fits(a->cost_basis_method, sizeof a->cost_basis_method) &&
           store_account_method_valid(a->cost_basis_method, a->austria_tax_year);
}

/* ---- reads */

/* The account by caller id, without conn_enter (also used inside writes). */
static store_status_t account_read(store_conn_t *conn, const char *tenant_id, const char *id,
                                   store_account_t *out)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_ACCOUNT_GET, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_ACCOUNT_GET, stmt);
    return conn_read_row(conn, &Q_ACCOUNT_GET, stmt, account_from_row, out);
}

store_status_t store_account_get(store_conn_t *conn, const char *tenant_id, const char *id,
                                 store_account_t *out)
{
    store_status_t status = conn_enter(conn);
    if (status != STORE_OK)
        return status;
    return account_read(conn, tenant_id, id, out);
}

/* Binds the page window: one row more than the limit tells whether more follow. */
static store_status_t account_list_prepare(store_conn_t *conn, const char *tenant_id,
                                           const char *owner_id, const char *after_id,
                                           size_t limit, const store_sql_t **q,
                                           db_stmt_t **stmt)
{
    *q = owner_id != NULL ? &Q_ACCOUNT_LIST_OWNER : &Q_ACCOUNT_LIST;
    store_status_t status = conn_prepare_key(conn, *q, tenant_id, stmt);
    if (status != STORE_OK)
        return status;
    /* Every caller id is at least one byte long, so all of them sort after "". */
    const char *after = after_id != NULL ? after_id : "";
    int64_t window = limit < (size_t)INT64_MAX ? (int64_t)limit + 1 : INT64_MAX;
    bool bound = bind_text(*stmt, 2, after) && bind_int(*stmt, 3, window) &&
                 (owner_id == NULL || bind_text(*stmt, 4, owner_id));
    if (!bound)
        return conn_bind_failed(conn, *q, *stmt);
    return STORE_OK;
}

store_status_t store_account_list(store_conn_t *conn, const char *tenant_id, const char *owner_id,
                                  const char *after_id, size_t limit,
                                  int (*each)(const store_account_t *account, void *ctx),
                                  void *ctx, bool *more)
{
    const store_sql_t *q = NULL;
    db_stmt_t *stmt = NULL;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = account_list_prepare(conn, tenant_id, owner_id, after_id, limit, &q, &stmt);
    store_page_t page;
    page_start(&page, conn, q, stmt, limit, status);
    store_account_t account;
    while (page_next(&page, account_from_row, &account))
        if (each(&account, ctx) != 0)
            break;
    return page_close(&page, more);
}

store_status_t store_account_uuid(store_conn_t *conn, const char *tenant_id, const char *id,
                                  char uuid[STORE_UUID_LEN],
                                  char method[DOMAIN_METHOD_SIZE])
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare_key(conn, &Q_ACCOUNT_UUID, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_ACCOUNT_UUID, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        status = column_copy(stmt, 0, uuid, STORE_UUID_LEN) &&
                         column_copy(stmt, 1, method, DOMAIN_METHOD_SIZE)
                     ? STORE_OK
                     : store_bad_row(&Q_ACCOUNT_UUID);
    else if (rc == DB_DONE)
        status = STORE_NOT_FOUND;
    else
        status = conn_fail(conn, &Q_ACCOUNT_UUID, rc);
    stmt_done(stmt);
    return status;
}

/* ---- references */

typedef struct account_refs {
    bool id_taken;
    char owner_uuid[STORE_UUID_LEN]; /* "" when the owner does not exist */
    char filer_uuid[STORE_UUID_LEN]; /* "" when the filer does not exist */
} account_refs_t;

/* Resolves the owner and filer caller ids of `a` and tells whether its id is taken. */
static store_status_t account_refs(store_conn_t *conn, const char *tenant_id,
                                   const store_account_t *a, account_refs_t *out)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_ACCOUNT_REFS, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!(bind_text(stmt, 2, a->owner_id) && bind_text(stmt, 3, a->filer_id) &&
          bind_text(stmt, 4, a->id)))
        return conn_bind_failed(conn, &Q_ACCOUNT_REFS, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        out->id_taken = db_column_int(stmt, 2) != 0;
        if (!column_copy_or_empty(stmt, 0, out->owner_uuid, sizeof out->owner_uuid) ||
            !column_copy_or_empty(stmt, 1, out->filer_uuid, sizeof out->filer_uuid))
            status = store_bad_row(&Q_ACCOUNT_REFS);
    } else {
        /* A SELECT without FROM always yields its one row. */
        status = rc == DB_DONE ? store_bad_row(&Q_ACCOUNT_REFS)
                                   : conn_fail(conn, &Q_ACCOUNT_REFS, rc);
    }
    stmt_done(stmt);
    return status;
}

/* STORE_NOT_FOUND naming the first missing reference (owner before filer). */
static store_status_t refs_missing(const account_refs_t *refs, store_account_missing_t *missing)
{
    if (refs->owner_uuid[0] == '\0') {
        *missing = STORE_ACCOUNT_MISSING_OWNER;
        return STORE_NOT_FOUND;
    }
    if (refs->filer_uuid[0] == '\0') {
        *missing = STORE_ACCOUNT_MISSING_FILER;
        return STORE_NOT_FOUND;
    }
    return STORE_OK;
}

/* ---- create */

typedef struct account_create_args {
    const char *tenant_id;
    const store_account_t *account;
    store_account_missing_t *missing;
} account_create_args_t;

static store_status_t account_insert(store_conn_t *conn, const char *tenant_id,
                                     const store_account_t *a, const account_refs_t *refs)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, &Q_ACCOUNT_INSERT, &stmt);
    if (status != STORE_OK)
        return status;
    if (!(bind_text(stmt, 1, a->uuid) && bind_text(stmt, 2, tenant_id) &&
          bind_text(stmt, 3, a->id) && bind_text(stmt, 4, refs->owner_uuid) &&
          bind_text(stmt, 5, refs->filer_uuid) && bind_text_or_null(stmt, 6, a->name) &&
          bind_text(stmt, 7, a->cost_basis_method) &&
          bind_int_or_null(stmt, 8, a->austria_tax_year) && bind_int(stmt, 9, a->created_at)))
        return conn_bind_failed(conn, &Q_ACCOUNT_INSERT, stmt);
    return conn_run(conn, &Q_ACCOUNT_INSERT, stmt);
}

static store_status_t account_create_tx(store_conn_t *conn, const void *arg)
{
    const account_create_args_t *args = arg;
    account_refs_t refs;
    store_status_t status = account_refs(conn, args->tenant_id, args->account, &refs);
    if (status != STORE_OK)
        return status;
    if (refs.id_taken)
        return STORE_CONFLICT;
    status = refs_missing(&refs, args->missing);
    if (status != STORE_OK)
        return status;
    return account_insert(conn, args->tenant_id, args->account, &refs);
}

store_status_t store_account_create(store_conn_t *conn, const char *tenant_id,
                                    const store_account_t *account,
                                    store_account_missing_t *missing)
{
    *missing = STORE_ACCOUNT_MISSING_NONE;
    if (!text_fits(tenant_id, STORE_UUID_LEN) || !account_fits(account))
        return store_bad_argument("account_create");
    account_create_args_t args = {tenant_id, account, missing};
    return conn_write(conn, account_create_tx, &args);
}

/* ---- update */

typedef struct account_update_args {
    const char *tenant_id;
    const char *id;
    store_account_merge_fn merge;
    void *ctx;
    int64_t now;
    store_account_t *out;
    store_account_missing_t *missing;
} account_update_args_t;

static bool account_changed(const store_account_t *a, const store_account_t *b)
{
    return strcmp(a->owner_id, b->owner_id) != 0 || strcmp(a->filer_id, b->filer_id) != 0 ||
           strcmp(a->name, b->name) != 0 ||
           strcmp(a->cost_basis_method, b->cost_basis_method) != 0 ||
           a->austria_tax_year != b->austria_tax_year;
}

static store_status_t account_write(store_conn_t *conn, const store_account_t *a,
                                    const account_refs_t *refs)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare(conn, &Q_ACCOUNT_UPDATE, &stmt);
    if (status != STORE_OK)
        return status;
    if (!(bind_text(stmt, 1, a->uuid) && bind_text(stmt, 2, refs->owner_uuid) &&
          bind_text(stmt, 3, refs->filer_uuid) && bind_text_or_null(stmt, 4, a->name) &&
          bind_text(stmt, 5, a->cost_basis_method) &&
          bind_int_or_null(stmt, 6, a->austria_tax_year) && bind_int(stmt, 7, a->updated_at)))
        return conn_bind_failed(conn, &Q_ACCOUNT_UPDATE, stmt);
    return conn_run(conn, &Q_ACCOUNT_UPDATE, stmt);
}

/* Lets the caller's merge decide the new record; keeps what it may not change. */
static store_status_t account_merge(const account_update_args_t *args,
                                    const store_account_t *current, store_account_t *next)
{
    *next = *current;
    if (!args->merge(current, next, args->ctx)) {
        *args->out = *current;
        return STORE_CONFLICT;
    }
    memcpy(next->uuid, current->uuid, sizeof next->uuid);
    memcpy(next->id, current->id, sizeof next->id);
    next->created_at = current->created_at;
    next->updated_at = current->updated_at;
    if (!account_fits(next))
        return store_bad_argument("account_update");
    return STORE_OK;
}

static store_status_t account_update_tx(store_conn_t *conn, const void *arg)
{
    const account_update_args_t *args = arg;
    store_account_t current, next;
    store_status_t status = account_read(conn, args->tenant_id, args->id, &current);
    if (status == STORE_NOT_FOUND)
        *args->missing = STORE_ACCOUNT_MISSING_ACCOUNT;
    if (status == STORE_OK)
        status = account_merge(args, &current, &next);
    if (status != STORE_OK)
        return status;
    if (!account_changed(&current, &next)) {
        *args->out = current;
        return STORE_OK;
    }
    account_refs_t refs;
    status = account_refs(conn, args->tenant_id, &next, &refs);
    if (status == STORE_OK)
        status = refs_missing(&refs, args->missing);
    if (status != STORE_OK)
        return status;
    next.updated_at = args->now;
    status = account_write(conn, &next, &refs);
    if (status == STORE_OK)
        *args->out = next;
    return status;
}

store_status_t store_account_update(store_conn_t *conn, const char *tenant_id, const char *id,
                                    store_account_merge_fn merge, void *ctx, int64_t now,
                                    store_account_t *out, store_account_missing_t *missing)
{
    *missing = STORE_ACCOUNT_MISSING_NONE;
    if (!text_fits(tenant_id, STORE_UUID_LEN) || id == NULL || merge == NULL)
        return store_bad_argument("account_update");
    account_update_args_t args = {tenant_id, id, merge, ctx, now, out, missing};
    return conn_write(conn, account_update_tx, &args);
}
