/* store/tinchecks: see tinchecks.h. */
#include "store/tinchecks.h"

#include "store/internal.h"

static const char *const KIND_NAMES[] = {"rttm", "account_owner", "tax_documentation"};

static const store_sql_t Q_CHECK_ENQUEUE = {
    "tin_check_enqueue",
    "INSERT INTO tin_checks (id, tenant_id, kind, subject_id, owner_uuid, name, tin_sealed,"
    " tin_type, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'PENDING', ?9)"};

store_status_t store_tin_check_enqueue_in_tx(store_conn_t *conn, const store_tin_check_new_t *c)
{
    if ((unsigned)c->kind > STORE_TIN_CHECK_TAX_DOCUMENTATION)
        return store_bad_argument("tin_check_enqueue");
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHECK_ENQUEUE, c->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, c->tenant_id) && bind_text(stmt, 3, KIND_NAMES[c->kind]) &&
                 bind_text_or_null(stmt, 4, c->subject_id) &&
                 bind_text_or_null(stmt, 5, c->owner_uuid) && bind_text(stmt, 6, c->name) &&
                 sqlite3_bind_blob(stmt, 7, c->tin_sealed, (int)c->tin_sealed_len,
                                   SQLITE_STATIC) == SQLITE_OK &&
                 bind_text(stmt, 8, c->tin_type) && bind_int(stmt, 9, c->now);
    return run_bound(conn, &Q_CHECK_ENQUEUE, stmt, bound);
}
