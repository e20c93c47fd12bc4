/* store/inventory.c: see inventory.h. A save checks the account's version,
 * deletes the tail of the previous results and writes the new rows in one
 * write transaction, so a reader sees either the old inventory or the new
 * one, never a mix, and a stale computation writes nothing. */
#include "store/inventory.h"

#include <string.h>

#include "store/internal.h"

static const store_sql_t Q_ACCOUNT = {
    "inv_account", "SELECT uuid, id, cost_basis_method, coalesce(austria_tax_year, 0),"
                   " dirty_from IS NOT NULL, coalesce(dirty_from, 0), inventory_version"
                   " FROM accounts WHERE tenant_id = ?1 AND id = ?2", NULL};
static const store_sql_t Q_DIRTY = {
    "inv_dirty", "SELECT uuid FROM accounts WHERE tenant_id = ?1 AND dirty_from IS NOT NULL", NULL};
/* In seq order (the inventory's key) after the account ?1 (a uuid; '' for
 * the start): the rows a walk saves are appended to the inventory tables. A
 * page costs what it returns plus the clean accounts it passes, so a walk of
 * every page reads accounts_seq once. */
static const store_sql_t Q_DIRTY_PAGE = {
    "inv_dirty_page", "SELECT uuid FROM accounts"
                      " WHERE seq > coalesce((SELECT seq FROM accounts WHERE uuid = ?1), 0)"
                      " AND dirty_from IS NOT NULL AND (tenant_id = ?2 OR ?2 IS NULL)"
                      " ORDER BY seq LIMIT ?3", NULL};
static const store_sql_t Q_MARK = {
    "inv_mark", "SELECT dirty_from IS NOT NULL, coalesce(dirty_from, 0), inventory_version,"
                " cost_basis_method, coalesce(inventory_basis, '') FROM accounts WHERE uuid = ?1", NULL};
static const store_sql_t Q_VERSION = {
    "inv_version", "SELECT inventory_version, seq FROM accounts WHERE uuid = ?1", NULL};
static const store_sql_t Q_DEL_SUMMARIES = {
    "inv_del_summaries", "DELETE FROM inventory_summaries WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1)", NULL};
/* By entered_at (v13); a full save deletes every lot, rows from before v13
 * (entered_at NULL) included. */
static const store_sql_t Q_DEL_LOTS = {
    "inv_del_lots", "DELETE FROM inventory_lots WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND entered_at >= ?2", NULL};
static const store_sql_t Q_DEL_LOTS_ALL = {
    "inv_del_lots_all", "DELETE FROM inventory_lots WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1)"
                        " AND ?2 IS NOT NULL",
    /* PostgreSQL cannot infer a type for a parameter only tested for NULL */
    "DELETE FROM inventory_lots WHERE account = (SELECT seq FROM accounts WHERE uuid = $1)"
    " AND $2::bigint IS NOT NULL"};
static const store_sql_t Q_DEL_RELIEFS = {
    "inv_del_reliefs", "DELETE FROM inventory_reliefs WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND datetime >= ?2", NULL};
/* The inserts of a save come in three widths, 16, 4 and 1 rows per
 * statement (a save writes dozens to hundreds of rows: one statement per row
 * spent most of its time opening and closing cursors). ?1 is the account's
 * seq in every row; the anonymous parameters after it number on from ?2. */
#define R4(row) row "," row "," row "," row
#define R16(row) R4(row) "," R4(row) "," R4(row) "," R4(row)
#define SUMMARY_INSERT                                                                          \
    "INSERT INTO inventory_summaries (account, asset_code, total_quantity, total_cost,"    \
    " quantity_with_basis, average_unit_cost, since) VALUES "
#define SUMMARY_ROW "(?1, ?, ?, ?, ?, ?, ?)"
#define SUMMARY_PARAMS 6
/* REPLACE: an earlier lot whose holding changed is rewritten in place. */
#define LOT_INSERT                                                                              \
    "INSERT OR REPLACE INTO inventory_lots (account, asset_code, seq, transaction_id,"    \
    " acquired_at, quantity, cost, orig_quantity, orig_cost, origin, entered_at) VALUES "
#define LOT_ROW "(?1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define LOT_PARAMS 10
#define RELIEF_INSERT                                                                           \
    "INSERT INTO inventory_reliefs (account, seq, transaction_id, asset_code, kind,"      \
    " datetime, lot_transaction_id, acquired_at, quantity, cost, proceeds, term, lot_seq,"     \
    " method, lot_origin, transaction_costs) VALUES "
#define RELIEF_ROW "(?1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define RELIEF_PARAMS 15
static const store_sql_t Q_INS_SUMMARY[3] = {
    {"inv_ins_summary", SUMMARY_INSERT SUMMARY_ROW, NULL},
    {"inv_ins_summary_4", SUMMARY_INSERT R4(SUMMARY_ROW), NULL},
    {"inv_ins_summary_16", SUMMARY_INSERT R16(SUMMARY_ROW), NULL}};
/* PostgreSQL has no INSERT OR REPLACE: the same rows, replacing on the key */
#define PG_LOT_INSERT                                                                           \
    "INSERT INTO inventory_lots (account, asset_code, seq, transaction_id,"                    \
    " acquired_at, quantity, cost, orig_quantity, orig_cost, origin, entered_at) VALUES "
#define PG_LOT_REPLACE                                                                          \
    " ON CONFLICT (account, asset_code, seq) DO UPDATE SET"                                     \
    " transaction_id = excluded.transaction_id, acquired_at = excluded.acquired_at,"            \
    " quantity = excluded.quantity, cost = excluded.cost, orig_quantity = excluded.orig_quantity," \
    " orig_cost = excluded.orig_cost, origin = excluded.origin, entered_at = excluded.entered_at"
static const store_sql_t Q_INS_LOT[3] = {
    {"inv_ins_lot", LOT_INSERT LOT_ROW, PG_LOT_INSERT LOT_ROW PG_LOT_REPLACE},
    {"inv_ins_lot_4", LOT_INSERT R4(LOT_ROW), PG_LOT_INSERT R4(LOT_ROW) PG_LOT_REPLACE},
    {"inv_ins_lot_16", LOT_INSERT R16(LOT_ROW), PG_LOT_INSERT R16(LOT_ROW) PG_LOT_REPLACE}};
static const store_sql_t Q_INS_RELIEF[3] = {
    {"inv_ins_relief", RELIEF_INSERT RELIEF_ROW, NULL},
    {"inv_ins_relief_4", RELIEF_INSERT R4(RELIEF_ROW), NULL},
    {"inv_ins_relief_16", RELIEF_INSERT R16(RELIEF_ROW), NULL}};
static const store_sql_t Q_CLEAN = {
    "inv_clean", "UPDATE accounts SET dirty_from = NULL, inventory_basis = ?2 WHERE uuid = ?1", NULL};
static const store_sql_t Q_ASSETS_BEFORE = {
    "inv_assets_before",
    "SELECT s.asset_code, s.since, s.total_cost, s.quantity_with_basis,"
    /* by entered_at: only the lots from ?2 on are visited, not the asset's history */
    " coalesce((SELECT min(l.seq) FROM inventory_lots l INDEXED BY inventory_lots_entered"
    "           WHERE l.account = (SELECT seq FROM accounts WHERE uuid = ?1)"
    "           AND l.asset_code = s.asset_code AND l.entered_at >= ?2),"
    "          (SELECT max(l.seq) + 1 FROM inventory_lots l WHERE l.account = (SELECT seq FROM accounts WHERE uuid = ?1)"
    "           AND l.asset_code = s.asset_code), 0)"
    " FROM inventory_summaries s WHERE s.account = (SELECT seq FROM accounts WHERE uuid = ?1) AND s.since < ?2"
    " ORDER BY s.asset_code",
    /* PostgreSQL: no INDEXED BY (its planner picks the index by itself) */
    "SELECT s.asset_code, s.since, s.total_cost, s.quantity_with_basis,"
    " coalesce((SELECT min(l.seq) FROM inventory_lots l"
    "           WHERE l.account = (SELECT seq FROM accounts WHERE uuid = $1)"
    "           AND l.asset_code = s.asset_code AND l.entered_at >= $2),"
    "          (SELECT max(l.seq) + 1 FROM inventory_lots l WHERE l.account = (SELECT seq FROM accounts WHERE uuid = $1)"
    "           AND l.asset_code = s.asset_code), 0)"
    " FROM inventory_summaries s WHERE s.account = (SELECT seq FROM accounts WHERE uuid = $1) AND s.since < $2"
    " ORDER BY s.asset_code"};
#define LOT_COLUMNS                                                                            \
    "SELECT asset_code, seq, transaction_id, acquired_at, quantity, cost, orig_quantity,"      \
    " orig_cost, origin, coalesce(entered_at, acquired_at) FROM inventory_lots"
static const store_sql_t Q_LOTS_OPEN_AT = {
    "inv_lots_open_at",
    LOT_COLUMNS " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND quantity <> '0' AND entered_at < ?2"
    /* +entered_at: found through the few reliefs from ?2 on, by primary key,
     * not by walking every lot entered before ?2 */
    " UNION ALL " LOT_COLUMNS " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND quantity = '0'"
    " AND +entered_at < ?2 AND (asset_code, seq) IN (SELECT asset_code, lot_seq"
    "  FROM inventory_reliefs WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND datetime >= ?2"
    "  AND lot_seq IS NOT NULL)"
    " ORDER BY 1, 2", NULL};
static const store_sql_t Q_LOTS_FROM = {
    "inv_lots_from", LOT_COLUMNS " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND entered_at >= ?2 ORDER BY 1, 2", NULL};
static const store_sql_t Q_RELIEF_BASE = {
    "inv_relief_base",
    "SELECT coalesce((SELECT min(seq) FROM inventory_reliefs WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1)"
    "                 AND datetime >= ?2),"
    "                (SELECT max(seq) + 1 FROM inventory_reliefs WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1)), 0)", NULL};
static const store_sql_t Q_SUMMARIES = {
    "inv_summaries", "SELECT asset_code, total_quantity, total_cost, quantity_with_basis,"
                     " average_unit_cost, coalesce(since, 0) FROM inventory_summaries"
                     " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) ORDER BY asset_code", NULL};
static const store_sql_t Q_LOTS = {
    "inv_lots", LOT_COLUMNS " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND asset_code = ?2 AND quantity <> '0'"
                " ORDER BY seq", NULL};
#define RELIEF_COLUMNS                                                                         \
    "SELECT seq, transaction_id, asset_code, kind, datetime, lot_transaction_id,"              \
    " coalesce(acquired_at, 0), quantity, cost, proceeds, term, coalesce(lot_seq, -1),"        \
    " method, lot_origin, transaction_costs FROM inventory_reliefs"
static const store_sql_t Q_RELIEFS_OF = {
    "inv_reliefs_of", RELIEF_COLUMNS " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND transaction_id = ?2"
                                     " ORDER BY seq", NULL};
static const store_sql_t Q_RELIEFS_BETWEEN = {
    "inv_reliefs_between", RELIEF_COLUMNS " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND datetime >= ?2"
                                          " AND datetime < ?3 ORDER BY seq", NULL};

static const char *col(db_stmt_t *stmt, int i)
{
    return db_column_text(stmt, i);
}

store_status_t store_inv_account(store_conn_t *conn, const char *tenant_id, const char *account_id,
                                 store_inv_account_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_ACCOUNT, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, account_id))
        return conn_bind_failed(conn, &Q_ACCOUNT, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        out->austria_tax_year = db_column_int(stmt, 3);
        out->dirty = (int)db_column_int(stmt, 4) != 0;
        out->dirty_from = db_column_int(stmt, 5);
        out->version = db_column_int(stmt, 6);
        if (!column_copy(stmt, 0, out->uuid, sizeof out->uuid) ||
            !column_copy(stmt, 1, out->id, sizeof out->id) ||
            !column_copy(stmt, 2, out->method, sizeof out->method))
            st = store_bad_row(&Q_ACCOUNT);
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_ACCOUNT, rc);
    }
    stmt_done(stmt);
    return st;
}

store_status_t store_inv_dirty_accounts(store_conn_t *conn, const char *tenant_id,
                                        int (*each)(const char *account_uuid, void *ctx),
                                        void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_DIRTY, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW)
        if (col(stmt, 0) == NULL || each(col(stmt, 0), ctx) != 0)
            break;
    if (rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_DIRTY, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_inv_dirty_page(store_conn_t *conn, const char *tenant_id, const char *after,
                                    size_t limit,
                                    int (*each)(const char *account_uuid, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_DIRTY_PAGE, after ? after : "", &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text_or_null(stmt, 2, tenant_id) || !bind_int(stmt, 3, (int64_t)limit))
        return conn_bind_failed(conn, &Q_DIRTY_PAGE, stmt);
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW)
        if (col(stmt, 0) == NULL || each(col(stmt, 0), ctx) != 0)
            break;
    if (rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_DIRTY_PAGE, rc);
    stmt_done(stmt);
    return st;
}

/* ---- save ------------------------------------------------------------- */

static store_status_t delete_tail(store_conn_t *conn, const char *account_uuid, int64_t from_ms)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_DEL_SUMMARIES, account_uuid, &stmt);
    if (st == STORE_OK)
        st = conn_run(conn, &Q_DEL_SUMMARIES, stmt);
    const store_sql_t *qs[] = {from_ms == INT64_MIN ? &Q_DEL_LOTS_ALL : &Q_DEL_LOTS,
                               &Q_DEL_RELIEFS};
    for (size_t i = 0; st == STORE_OK && i < 2; i++) {
        st = conn_prepare_key(conn, qs[i], account_uuid, &stmt);
        if (st == STORE_OK)
            st = run_bound(conn, qs[i], stmt, bind_int(stmt, 2, from_ms));
    }
    return st;
}

/* Binds one row's parameters after ?1, from parameter p on. */
static bool bind_summary(db_stmt_t *stmt, int p, const void *row)
{
    const store_inv_summary_t *r = row;
    return bind_text(stmt, p, r->asset) && bind_text(stmt, p + 1, r->total_quantity) &&
           bind_text(stmt, p + 2, r->total_cost) && bind_text(stmt, p + 3, r->quantity_with_basis) &&
           bind_text_or_null(stmt, p + 4, r->average_unit_cost) && bind_int(stmt, p + 5, r->since);
}

static bool bind_lot(db_stmt_t *stmt, int p, const void *row)
{
    const store_inv_lot_t *r = row;
    return bind_text(stmt, p, r->asset) && bind_int(stmt, p + 1, r->seq) &&
           bind_text(stmt, p + 2, r->transaction_id) && bind_int(stmt, p + 3, r->acquired_at) &&
           bind_text(stmt, p + 4, r->quantity) && bind_text_or_null(stmt, p + 5, r->cost) &&
           bind_text_or_null(stmt, p + 6, r->orig_quantity) &&
           bind_text_or_null(stmt, p + 7, r->orig_cost) && bind_text_or_null(stmt, p + 8, r->origin) &&
           bind_int(stmt, p + 9, r->entered_at);
}

static bool bind_relief(db_stmt_t *stmt, int p, const void *row)
{
    const store_inv_relief_t *r = row;
    bool shortfall = r->lot_transaction_id == NULL;
    return bind_int(stmt, p, r->seq) && bind_text(stmt, p + 1, r->transaction_id) &&
           bind_text(stmt, p + 2, r->asset) && bind_text(stmt, p + 3, r->kind) &&
           bind_int(stmt, p + 4, r->datetime) &&
           bind_text_or_null(stmt, p + 5, r->lot_transaction_id) &&
           (shortfall ? bind_null(stmt, p + 6)
                      : bind_int(stmt, p + 6, r->acquired_at)) &&
           bind_text(stmt, p + 7, r->quantity) && bind_text_or_null(stmt, p + 8, r->cost) &&
           bind_text_or_null(stmt, p + 9, r->proceeds) && bind_text_or_null(stmt, p + 10, r->term) &&
           (r->lot_seq < 0 ? bind_null(stmt, p + 11)
                           : bind_int(stmt, p + 11, r->lot_seq)) &&
           bind_text_or_null(stmt, p + 12, r->method) &&
           bind_text_or_null(stmt, p + 13, shortfall ? NULL : r->lot_origin) &&
           bind_text_or_null(stmt, p + 14, r->transaction_costs);
}

/* Inserts count rows of `size` bytes for the account: 16 rows per statement
 * while they last, then 4, then 1 (q[2], q[1], q[0]). */
static store_status_t insert_rows(store_conn_t *conn, int64_t account, const store_sql_t q[3],
                                  int params, bool (*bind)(db_stmt_t *, int, const void *),
                                  const void *rows, size_t size, size_t count)
{
    const char *row = rows;
    store_status_t st = STORE_OK;
    while (st == STORE_OK && count > 0) {
        size_t width = count >= 16 ? 16 : count >= 4 ? 4 : 1;
        const store_sql_t *sql = &q[width == 16 ? 2 : width == 4 ? 1 : 0];
        db_stmt_t *stmt;
        if ((st = conn_prepare(conn, sql, &stmt)) != STORE_OK)
            break;
        if (!bind_int(stmt, 1, account))
            return conn_bind_failed(conn, sql, stmt);
        for (size_t i = 0; i < width; i++, row += size)
            if (!bind(stmt, 2 + (int)i * params, row))
                return conn_bind_failed(conn, sql, stmt);
        st = conn_run(conn, sql, stmt);
        count -= width;
    }
    return st;
}

/* STORE_CONFLICT unless the account's inventory_version is still version;
 * *seq receives the account's key, what the inventory rows are keyed by. */
static store_status_t check_version(store_conn_t *conn, const char *account_uuid, int64_t version,
                                    int64_t *seq)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_VERSION, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        st = db_column_int(stmt, 0) == version ? STORE_OK : STORE_CONFLICT;
    if (rc == DB_ROW)
        *seq = db_column_int(stmt, 1);
    else
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_VERSION, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_inv_save_in_tx(store_conn_t *conn, const store_inv_save_t *a, bool *stale)
{
    int64_t seq = 0;
    store_status_t st = check_version(conn, a->account_uuid, a->version, &seq);
    *stale = st == STORE_CONFLICT;
    if (st == STORE_OK)
        st = delete_tail(conn, a->account_uuid, a->from_ms);
    if (st == STORE_OK)
        st = insert_rows(conn, seq, Q_INS_SUMMARY, SUMMARY_PARAMS, bind_summary,
                         a->summaries, sizeof *a->summaries, a->summary_count);
    if (st == STORE_OK)
        st = insert_rows(conn, seq, Q_INS_LOT, LOT_PARAMS, bind_lot, a->lots,
                         sizeof *a->lots, a->lot_count);
    if (st == STORE_OK)
        st = insert_rows(conn, seq, Q_INS_RELIEF, RELIEF_PARAMS, bind_relief,
                         a->reliefs, sizeof *a->reliefs, a->relief_count);
    if (st != STORE_OK)
        return st;
    db_stmt_t *stmt;
    st = conn_prepare_key(conn, &Q_CLEAN, a->account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_CLEAN, stmt, bind_text(stmt, 2, a->basis));
}

typedef struct save_call {
    const store_inv_save_t *save;
    bool *stale;
} save_call_t;

static store_status_t save_tx(store_conn_t *conn, const void *arg)
{
    const save_call_t *c = arg;
    return store_inv_save_in_tx(conn, c->save, c->stale);
}

store_status_t store_inv_save(store_conn_t *conn, const store_inv_save_t *save, bool *stale)
{
    save_call_t call = {save, stale};
    *stale = false;
    return conn_write(conn, save_tx, &call);
}

/* ---- what a recalculation resumes from ---------------------------------- */

store_status_t store_inv_mark(store_conn_t *conn, const char *account_uuid, store_inv_mark_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_MARK, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        out->dirty = (int)db_column_int(stmt, 0) != 0;
        out->dirty_from = db_column_int(stmt, 1);
        out->version = db_column_int(stmt, 2);
        if (!column_copy(stmt, 3, out->method, sizeof out->method) ||
            !column_copy(stmt, 4, out->basis, sizeof out->basis))
            st = store_bad_row(&Q_MARK);
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_MARK, rc);
    }
    stmt_done(stmt);
    return st;
}

store_status_t store_inv_relief_base(store_conn_t *conn, const char *account_uuid,
                                     int64_t from_ms, int64_t *base)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_RELIEF_BASE, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, from_ms))
        return conn_bind_failed(conn, &Q_RELIEF_BASE, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        *base = db_column_int(stmt, 0);
    else
        st = conn_fail(conn, &Q_RELIEF_BASE, rc);
    stmt_done(stmt);
    return st;
}

/* ---- reads ------------------------------------------------------------ */

/* The caller's callback for one kind of row. */
typedef struct sink {
    int (*summary)(const store_inv_summary_t *row, void *ctx);
    int (*lot)(const store_inv_lot_t *row, void *ctx);
    int (*relief)(const store_inv_relief_t *row, void *ctx);
    int (*asset)(const store_inv_asset_t *row, void *ctx);
    void *ctx;
} sink_t;

/* Steps stmt, handing each row to row(); a negative return is a bad row. */
static store_status_t walk(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                           int (*row)(db_stmt_t *stmt, const sink_t *sink), const sink_t *sink)
{
    int rc;
    store_status_t st = STORE_OK;
    while ((rc = db_step(stmt)) == DB_ROW) {
        int r = row(stmt, sink);
        if (r < 0)
            st = store_bad_row(q);
        if (r != 0)
            break;
    }
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

static int summary_row(db_stmt_t *stmt, const sink_t *sink)
{
    store_inv_summary_t r = {.asset = col(stmt, 0), .total_quantity = col(stmt, 1),
                             .total_cost = col(stmt, 2), .quantity_with_basis = col(stmt, 3),
                             .average_unit_cost = col(stmt, 4),
                             .since = db_column_int(stmt, 5)};
    if (!r.asset || !r.total_quantity || !r.total_cost || !r.quantity_with_basis)
        return -1;
    return sink->summary(&r, sink->ctx) != 0;
}

static int lot_row(db_stmt_t *stmt, const sink_t *sink)
{
    store_inv_lot_t r = {.asset = col(stmt, 0), .seq = db_column_int(stmt, 1),
                         .transaction_id = col(stmt, 2), .acquired_at = db_column_int(stmt, 3),
                         .quantity = col(stmt, 4), .cost = col(stmt, 5),
                         .orig_quantity = col(stmt, 6), .orig_cost = col(stmt, 7),
                         .origin = col(stmt, 8), .entered_at = db_column_int(stmt, 9)};
    if (!r.asset || !r.transaction_id || !r.quantity)
        return -1;
    return sink->lot(&r, sink->ctx) != 0;
}

static int relief_row(db_stmt_t *stmt, const sink_t *sink)
{
    store_inv_relief_t r = {db_column_int(stmt, 0), col(stmt, 1), col(stmt, 2),
                            col(stmt, 3), db_column_int(stmt, 4), col(stmt, 5),
                            db_column_int(stmt, 6), col(stmt, 7), col(stmt, 8),
                            col(stmt, 9), col(stmt, 10), db_column_int(stmt, 11),
                            col(stmt, 12), col(stmt, 13), col(stmt, 14)};
    if (!r.transaction_id || !r.asset || !r.kind || !r.quantity)
        return -1;
    return sink->relief(&r, sink->ctx) != 0;
}

static int asset_row(db_stmt_t *stmt, const sink_t *sink)
{
    store_inv_asset_t r = {col(stmt, 0), db_column_int(stmt, 1), col(stmt, 2),
                           col(stmt, 3), db_column_int(stmt, 4)};
    if (!r.asset || !r.total_cost || !r.quantity_with_basis)
        return -1;
    return sink->asset(&r, sink->ctx) != 0;
}

/* Prepares q keyed by the account with from_ms as ?2. */
static store_status_t prepare_from(store_conn_t *conn, const store_sql_t *q,
                                   const char *account_uuid, int64_t from_ms, db_stmt_t **stmt)
{
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, q, account_uuid, stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(*stmt, 2, from_ms))
        return conn_bind_failed(conn, q, *stmt);
    return STORE_OK;
}

store_status_t store_inv_assets_before(store_conn_t *conn, const char *account_uuid,
                                       int64_t from_ms,
                                       int (*each)(const store_inv_asset_t *row, void *ctx),
                                       void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = prepare_from(conn, &Q_ASSETS_BEFORE, account_uuid, from_ms, &stmt);
    if (st != STORE_OK)
        return st;
    sink_t sink = {.asset = each, .ctx = ctx};
    return walk(conn, &Q_ASSETS_BEFORE, stmt, asset_row, &sink);
}

store_status_t store_inv_lots_open_at(store_conn_t *conn, const char *account_uuid,
                                      int64_t from_ms,
                                      int (*each)(const store_inv_lot_t *row, void *ctx),
                                      void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = prepare_from(conn, &Q_LOTS_OPEN_AT, account_uuid, from_ms, &stmt);
    if (st != STORE_OK)
        return st;
    sink_t sink = {.lot = each, .ctx = ctx};
    return walk(conn, &Q_LOTS_OPEN_AT, stmt, lot_row, &sink);
}

store_status_t store_inv_lots_from(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                   int (*each)(const store_inv_lot_t *row, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = prepare_from(conn, &Q_LOTS_FROM, account_uuid, from_ms, &stmt);
    if (st != STORE_OK)
        return st;
    sink_t sink = {.lot = each, .ctx = ctx};
    return walk(conn, &Q_LOTS_FROM, stmt, lot_row, &sink);
}

store_status_t store_inv_summaries(store_conn_t *conn, const char *account_uuid,
                                   int (*each)(const store_inv_summary_t *row, void *ctx),
                                   void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_SUMMARIES, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    sink_t sink = {.summary = each, .ctx = ctx};
    return walk(conn, &Q_SUMMARIES, stmt, summary_row, &sink);
}

store_status_t store_inv_lots(store_conn_t *conn, const char *account_uuid, const char *asset,
                              int (*each)(const store_inv_lot_t *row, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_LOTS, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, asset))
        return conn_bind_failed(conn, &Q_LOTS, stmt);
    sink_t sink = {.lot = each, .ctx = ctx};
    return walk(conn, &Q_LOTS, stmt, lot_row, &sink);
}

store_status_t store_inv_reliefs_of(store_conn_t *conn, const char *account_uuid,
                                    const char *transaction_id,
                                    int (*each)(const store_inv_relief_t *row, void *ctx),
                                    void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_RELIEFS_OF, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, transaction_id))
        return conn_bind_failed(conn, &Q_RELIEFS_OF, stmt);
    sink_t sink = {.relief = each, .ctx = ctx};
    return walk(conn, &Q_RELIEFS_OF, stmt, relief_row, &sink);
}

store_status_t store_inv_reliefs_between(store_conn_t *conn, const char *account_uuid,
                                         int64_t from_ms, int64_t to_ms,
                                         int (*each)(const store_inv_relief_t *row, void *ctx),
                                         void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_RELIEFS_BETWEEN, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, from_ms) || !bind_int(stmt, 3, to_ms))
        return conn_bind_failed(conn, &Q_RELIEFS_BETWEEN, stmt);
    sink_t sink = {.relief = each, .ctx = ctx};
    return walk(conn, &Q_RELIEFS_BETWEEN, stmt, relief_row, &sink);
}
