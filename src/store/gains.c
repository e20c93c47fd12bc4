/* store/gains.c: see gains.h. Two statements: the seq range of a period
 * (two probes of inventory_reliefs_datetime: the first relief dated at or
 * after each end; seq follows datetime), then the walk of the primary key
 * over that range. Splitting them keeps the walk's bounds plain parameters,
 * so SQLite's planner always uses them as the primary key's range instead of
 * choosing between a cursor bound and a subquery bound. */
#include "store/gains.h"

#include "store/internal.h"

#define ACCOUNT_SEQ "(SELECT seq FROM accounts WHERE uuid = ?1)"
#define FIRST_AT(param)                                                                        \
    "(SELECT seq FROM inventory_reliefs WHERE account = " ACCOUNT_SEQ                          \
    " AND datetime >= " param " ORDER BY datetime, seq LIMIT 1)"

/* ?1 account uuid, ?2 from_ms, ?3 to_ms: [lo, hi) of seq; both the
 * largest int64 when nothing is dated at or after the end in question. */
static const store_sql_t Q_BOUNDS = {
    "gains_bounds", "SELECT coalesce(" FIRST_AT("?2") ", 9223372036854775807),"
                    " coalesce(" FIRST_AT("?3") ", 9223372036854775807)", NULL};

/* ?1 account uuid, ?2 first seq, ?3 seq past the last, ?4 asset or NULL,
 * ?5 the window (-1: no limit). The asset's type by the tenant's unique
 * (tenant_id, code) index. */
static const store_sql_t Q_ROWS = {
    "gains_rows",
    "SELECT r.seq, r.transaction_id, r.asset_code,"
    " (SELECT s.type FROM assets s WHERE s.tenant_id = a.tenant_id AND s.code = r.asset_code),"
    " r.datetime, r.quantity, r.proceeds, r.cost, r.transaction_costs, r.term,"
    " r.acquired_at, r.lot_transaction_id, r.lot_origin, r.method"
    " FROM accounts a JOIN inventory_reliefs r ON r.account = a.seq"
    " WHERE a.uuid = ?1 AND r.seq >= ?2 AND r.seq < ?3 AND r.kind = 'disposal'"
    " AND (r.asset_code = ?4 OR ?4 IS NULL)" /* typed by its first use on PostgreSQL */
    " ORDER BY r.seq LIMIT ?5", NULL};

static const char *col(db_stmt_t *stmt, int i)
{
    return db_column_text(stmt, i);
}

static store_status_t gain_decode(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_gain_t *g = record;
    *g = (store_gain_t){
        .seq = db_column_int(stmt, 0),
        .transaction_id = col(stmt, 1),
        .asset_code = col(stmt, 2),
        .asset_type = col(stmt, 3),
        .datetime = db_column_int(stmt, 4),
        .quantity = col(stmt, 5),
        .proceeds = col(stmt, 6),
        .cost = col(stmt, 7),
        .transaction_costs = col(stmt, 8),
        .term = col(stmt, 9),
        .has_acquired_at = !db_column_is_null(stmt, 10),
        .acquired_at = db_column_int(stmt, 10),
        .lot_transaction_id = col(stmt, 11),
        .lot_origin = col(stmt, 12),
        .method = col(stmt, 13),
    };
    if (g->transaction_id == NULL || g->asset_code == NULL || g->quantity == NULL)
        return store_bad_row(q);
    return STORE_OK;
}

/* The seq range [*lo, *hi) of the reliefs dated in [from_ms, to_ms). */
static store_status_t seq_range(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                int64_t to_ms, int64_t *lo, int64_t *hi)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_BOUNDS, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, from_ms) || !bind_int(stmt, 3, to_ms))
        return conn_bind_failed(conn, &Q_BOUNDS, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        *lo = db_column_int(stmt, 0);
        *hi = db_column_int(stmt, 1);
    }
    stmt_done(stmt);
    return rc == DB_ROW ? STORE_OK : conn_fail(conn, &Q_BOUNDS, rc);
}

/* Enters, finds the range and prepares the walk from max(lo, after_seq + 1). */
static store_status_t open_rows(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                int64_t to_ms, const char *asset_code, int64_t after_seq,
                                int64_t window, db_stmt_t **stmt)
{
    int64_t lo = 0, hi = 0;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = seq_range(conn, account_uuid, from_ms, to_ms, &lo, &hi);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_ROWS, account_uuid, stmt);
    if (st != STORE_OK)
        return st;
    if (after_seq != INT64_MAX && after_seq + 1 > lo)
        lo = after_seq + 1;
    if (!bind_int(*stmt, 2, lo) || !bind_int(*stmt, 3, hi) ||
        !bind_text_or_null(*stmt, 4, asset_code) || !bind_int(*stmt, 5, window))
        return conn_bind_failed(conn, &Q_ROWS, *stmt);
    return STORE_OK;
}

static store_status_t walk_rows(store_conn_t *conn, db_stmt_t *stmt, store_status_t st,
                                size_t limit, store_gain_fn each, void *ctx, bool *more)
{
    store_page_t page;
    page_start(&page, conn, &Q_ROWS, stmt, limit, st);
    store_gain_t row;
    while (page_next(&page, gain_decode, &row))
        if (each(&row, ctx) != 0)
            break;
    return page_close(&page, more);
}

store_status_t store_gains_page(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                int64_t to_ms, const char *asset_code, int64_t after_seq,
                                size_t limit, store_gain_fn each, void *ctx, bool *more)
{
    db_stmt_t *stmt = NULL;
    int64_t window = limit < (size_t)INT64_MAX ? (int64_t)limit + 1 : INT64_MAX;
    store_status_t st = open_rows(conn, account_uuid, from_ms, to_ms, asset_code, after_seq,
                                  window, &stmt);
    return walk_rows(conn, stmt, st, limit, each, ctx, more);
}

store_status_t store_gains_each(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                int64_t to_ms, const char *asset_code, store_gain_fn each,
                                void *ctx)
{
    db_stmt_t *stmt = NULL;
    store_status_t st = open_rows(conn, account_uuid, from_ms, to_ms, asset_code,
                                  STORE_GAINS_START, -1, &stmt);
    return walk_rows(conn, stmt, st, SIZE_MAX, each, ctx, NULL);
}
