/* store/tenant_delete.c: removing a tenant, every row of it, in one
 * transaction (`taxd admin tenant delete`), and the list of deleted tenants
 * whose tokens every process refuses.
 *
 * Every table that holds a tenant's rows is named below, children before
 * parents so that no foreign key is ever broken midway: tables keyed by the
 * tenant's id, those keyed by its integer rowid (transactions) or by its
 * accounts' seq (the inventory, which has no foreign key), and those reached
 * through a parent (deliveries, secrets, chunks, the current tax
 * documentation). A new table of tenant data must be added to DELETES;
 * tests/api/test_admin.py counts every table's rows before a tenant's data
 * and after its purge, so a forgotten one fails there.
 *
 * Tokens are not stored, and a token names its tenant: the tenant's id goes
 * into deleted_tenants and the settings version moves in the same
 * transaction, so every running process refuses the tenant's tokens from
 * its settings snapshot within its refresh interval, whatever its token
 * cache holds. */
#include <string.h>

#include "core/domain.h"
#include "store/internal.h"
#include "store/store.h"

#define OF_TENANT "tenant_id = ?1"
#define TENANT_ROWID "(SELECT rowid FROM tenants WHERE id = ?1)"
#define ACCOUNT_SEQS "(SELECT seq FROM accounts WHERE tenant_id = ?1)"
#define SUBSCRIPTION_IDS "(SELECT id FROM subscriptions WHERE tenant_id = ?1)"

/* ?1 tenant id, ?2 the reporting currency every tenant is seeded with. */
static const store_sql_t Q_TENANT_DATA = {"tenant_data",
    "SELECT (SELECT count(*) FROM account_owners WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM accounts WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM transactions WHERE tenant = " TENANT_ROWID "),"
    " (SELECT count(*) FROM assets WHERE " OF_TENANT " AND code <> ?2),"
    " (SELECT count(*) FROM filers WHERE " OF_TENANT " AND is_default = 0),"
    " (SELECT count(*) FROM reports WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM subscriptions WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM events WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM tin_checks WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM tax_documents WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM tax_forms WHERE " OF_TENANT "),"
    " (SELECT count(*) FROM tax_documentation_files WHERE " OF_TENANT ")", NULL};

static const store_sql_t Q_TENANT_EXISTS = {"tenant_delete_exists",
    "SELECT 1 FROM tenants WHERE id = ?1", NULL};

/* Each binds ?1 to the tenant id; run in this order. */
static const store_sql_t DELETES[] = {
    {"purge_deliveries", "DELETE FROM deliveries WHERE subscription_id IN " SUBSCRIPTION_IDS
                         " OR event_id IN (SELECT id FROM events WHERE " OF_TENANT ")", NULL},
    {"purge_subscription_secrets",
     "DELETE FROM subscription_secrets WHERE subscription_id IN " SUBSCRIPTION_IDS, NULL},
    {"purge_subscriptions", "DELETE FROM subscriptions WHERE " OF_TENANT, NULL},
    /* the shared rate buckets of its routes: keys "api\n<tenant>\n<route>"
     * (app/service.c); `_` stands for the newlines, a uuid has none of _ % */
    {"purge_rate_buckets", "DELETE FROM rate_buckets WHERE key LIKE 'api_' || ?1 || '_%'", NULL},
    {"purge_events", "DELETE FROM events WHERE " OF_TENANT, NULL},
    {"purge_report_chunks",
     "DELETE FROM report_chunks WHERE report_id IN (SELECT id FROM reports WHERE " OF_TENANT ")", NULL},
    {"purge_report_ids",
     "DELETE FROM report_ids WHERE report_id IN (SELECT id FROM reports WHERE " OF_TENANT ")", NULL},
    {"purge_reports", "DELETE FROM reports WHERE " OF_TENANT, NULL},
    {"purge_tax_forms", "DELETE FROM tax_forms WHERE " OF_TENANT, NULL},
    /* before tax_documents, which its rows reference */
    {"purge_tax_documentation_files", "DELETE FROM tax_documentation_files WHERE " OF_TENANT, NULL},
    {"purge_tax_documentation_current",
     "DELETE FROM tax_documentation_current WHERE owner_uuid IN"
     " (SELECT uuid FROM account_owners WHERE " OF_TENANT ")", NULL},
    {"purge_tax_documents", "DELETE FROM tax_documents WHERE " OF_TENANT, NULL},
    {"purge_tin_checks", "DELETE FROM tin_checks WHERE " OF_TENANT, NULL},
    {"purge_inventory_summaries", "DELETE FROM inventory_summaries WHERE account IN " ACCOUNT_SEQS, NULL},
    {"purge_inventory_lots", "DELETE FROM inventory_lots WHERE account IN " ACCOUNT_SEQS, NULL},
    {"purge_inventory_reliefs", "DELETE FROM inventory_reliefs WHERE account IN " ACCOUNT_SEQS, NULL},
    {"purge_provided_lots", "DELETE FROM provided_lots WHERE account IN " ACCOUNT_SEQS, NULL},
    {"purge_disposition_methods",
     "DELETE FROM disposition_methods WHERE account IN " ACCOUNT_SEQS, NULL},
    {"purge_transactions", "DELETE FROM transactions WHERE tenant = " TENANT_ROWID
                           " OR account IN " ACCOUNT_SEQS, NULL},
    {"purge_accounts", "DELETE FROM accounts WHERE " OF_TENANT, NULL},
    {"purge_assets", "DELETE FROM assets WHERE " OF_TENANT, NULL},
    {"purge_account_owners", "DELETE FROM account_owners WHERE " OF_TENANT, NULL},
    {"purge_filers", "DELETE FROM filers WHERE " OF_TENANT, NULL},
    {"purge_credentials", "DELETE FROM credentials WHERE " OF_TENANT, NULL},
    {"purge_rate_limits", "DELETE FROM rate_limits WHERE " OF_TENANT, NULL},
    {"purge_tenant", "DELETE FROM tenants WHERE id = ?1", NULL},
};

static const store_sql_t Q_DELETED_INSERT = {"deleted_tenant_insert",
    "INSERT INTO deleted_tenants (id, deleted_at) VALUES (?1, ?2)", NULL};
static const store_sql_t Q_DELETED_EACH = {"deleted_tenant_each",
    "SELECT id FROM deleted_tenants ORDER BY id", NULL};

typedef struct delete_args {
    const char *tenant_id;
    bool purge;
    int64_t now;
    store_tenant_data_t *data;
} delete_args_t;

/* tax_documentation_files is counted (and reported) but not asked here: each
 * of its rows is made of one of the tenant's tax_documents, which already
 * count. */
static bool holds_data(const store_tenant_data_t *d)
{
    return d->account_owners || d->accounts || d->transactions || d->assets || d->filers ||
           d->reports || d->subscriptions || d->events || d->tin_checks || d->tax_documents ||
           d->tax_forms;
}

static store_status_t count_data(store_conn_t *conn, const char *tenant_id,
                                 store_tenant_data_t *d)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, &Q_TENANT_DATA, tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    if (!bind_text(stmt, 2, DOMAIN_REPORTING_CURRENCY))
        return conn_bind_failed(conn, &Q_TENANT_DATA, stmt);
    int rc = db_step(stmt);
    if (rc != DB_ROW) {
        status = conn_fail(conn, &Q_TENANT_DATA, rc);
        stmt_done(stmt);
        return status;
    }
    int64_t *fields[] = {&d->account_owners, &d->accounts, &d->transactions, &d->assets,
                         &d->filers, &d->reports, &d->subscriptions, &d->events,
                         &d->tin_checks, &d->tax_documents, &d->tax_forms,
                         &d->tax_documentation_files};
    for (int i = 0; i < (int)(sizeof fields / sizeof fields[0]); i++)
        *fields[i] = db_column_int(stmt, i);
    stmt_done(stmt);
    return STORE_OK;
}

static store_status_t run_keyed(store_conn_t *conn, const store_sql_t *q, const char *key)
{
    db_stmt_t *stmt;
    store_status_t status = conn_prepare_key(conn, q, key, &stmt);
    return status == STORE_OK ? conn_run(conn, q, stmt) : status;
}

static store_status_t tenant_delete_tx(store_conn_t *conn, const void *arg)
{
    const delete_args_t *a = arg;
    store_status_t status = conn_exists(conn, &Q_TENANT_EXISTS, a->tenant_id);
    if (status == STORE_OK)
        status = count_data(conn, a->tenant_id, a->data);
    if (status != STORE_OK)
        return status;
    if (!a->purge && holds_data(a->data))
        return STORE_CONFLICT;
    for (size_t i = 0; i < sizeof DELETES / sizeof DELETES[0]; i++)
        if ((status = run_keyed(conn, &DELETES[i], a->tenant_id)) != STORE_OK)
            return status;
    db_stmt_t *stmt;
    status = conn_prepare_key(conn, &Q_DELETED_INSERT, a->tenant_id, &stmt);
    if (status != STORE_OK)
        return status;
    status = run_bound(conn, &Q_DELETED_INSERT, stmt, bind_int(stmt, 2, a->now));
    if (status != STORE_OK)
        return status;
    return conn_bump_settings(conn);
}

store_status_t store_tenant_delete(store_conn_t *conn, const char *tenant_id, bool purge,
                                   int64_t now, store_tenant_data_t *data)
{
    if (tenant_id == NULL || !text_fits(tenant_id, STORE_UUID_LEN))
        return STORE_NOT_FOUND; /* no tenant id is that long */
    memset(data, 0, sizeof *data);
    delete_args_t args = {tenant_id, purge, now, data};
    return conn_write(conn, tenant_delete_tx, &args);
}

store_status_t store_deleted_tenant_each(store_conn_t *conn,
                                         int (*each)(const char *tenant_id, void *ctx),
                                         void *ctx)
{
    db_stmt_t *stmt;
    store_status_t status = conn_enter(conn);
    if (status == STORE_OK)
        status = conn_prepare(conn, &Q_DELETED_EACH, &stmt);
    if (status != STORE_OK)
        return status;
    int rc;
    char tenant_id[STORE_UUID_LEN];
    while ((rc = db_step(stmt)) == DB_ROW) {
        if (!column_copy(stmt, 0, tenant_id, sizeof tenant_id)) {
            status = store_bad_row(&Q_DELETED_EACH);
            break;
        }
        if (each(tenant_id, ctx) != 0)
            break;
    }
    if (rc != DB_ROW && rc != DB_DONE)
        status = conn_fail(conn, &Q_DELETED_EACH, rc);
    stmt_done(stmt);
    return status;
}
