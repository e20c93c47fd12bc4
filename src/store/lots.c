/* store/lots.c: see lots.h. One read, keyed by the tenant so that another
 * tenant's transaction with the same caller id is never found; the account's
 * caller id comes from the join, so the handler continues with the same
 * lookup (store_inv_account) every inventory read uses. */
#include "store/lots.h"

#include "store/internal.h"

static const store_sql_t Q_TX_ACCOUNT = {
    "lots_tx_account", "SELECT t.type, a.id FROM transactions t"
                       " JOIN accounts a ON a.seq = t.account"
                       " WHERE t.tenant = (SELECT rowid FROM tenants WHERE id = ?1)"
                       " AND t.id = ?2", NULL};

store_status_t store_lots_tx_account(store_conn_t *conn, const char *tenant_id,
                                     const char *transaction_id, store_lots_tx_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_ACCOUNT, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, transaction_id))
        return conn_bind_failed(conn, &Q_TX_ACCOUNT, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        if (!column_copy(stmt, 0, out->type, sizeof out->type) ||
            !column_copy(stmt, 1, out->account_id, sizeof out->account_id))
            st = store_bad_row(&Q_TX_ACCOUNT);
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_TX_ACCOUNT, rc);
    }
    stmt_done(stmt);
    return st;
}
