/* store/provided_lots.c: see provided_lots.h.
 *
 * Lots are keyed by the transaction's seq (an update of the transaction keeps
 * it), then asset and position, and carry the account's seq so that the
 * recalculation reads an account's lots through one index. A write reads the
 * deposit (its type, datetime and received lines) inside its own write
 * transaction and hands it to the caller's check before it writes anything:
 * the rules (a deposit, the assets it received, the quantities adding up,
 * no lot dated after it) are the caller's, the moment is the store's. */
#include "store/provided_lots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "store/transactions.h"

/* ?1 tenant, ?2 the caller's transaction id. */
static const store_sql_t Q_DEPOSIT = {
    "provided_deposit", "SELECT t.seq, t.account, a.uuid, a.id, t.type, t.datetime, t.lines"
                        " FROM transactions t JOIN accounts a ON a.seq = t.account"
                        " WHERE t.tenant = (SELECT rowid FROM tenants WHERE id = ?1)"
                        " AND t.id = ?2", NULL};
static const store_sql_t Q_DROP_ASSET = {
    "provided_drop_asset",
    "DELETE FROM provided_lots WHERE transaction_seq = ?1 AND asset_code = ?2", NULL};
static const store_sql_t Q_INSERT = {
    "provided_insert", "INSERT INTO provided_lots (transaction_seq, account, asset_code, idx,"
                       " quantity, cost_basis, acquired_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", NULL};
static const store_sql_t Q_LOTS = {
    "provided_lots", "SELECT asset_code, quantity, cost_basis, acquired_at FROM provided_lots"
                     " WHERE transaction_seq = ?1 ORDER BY asset_code, idx", NULL};

/* ---- the deposit ------------------------------------------------------ */

typedef struct deposit_row {
    int64_t seq, account_seq;
    char account_uuid[STORE_UUID_LEN];
    store_deposit_t view;
    store_deposit_line_t *received; /* malloc'd: deposit_free */
} deposit_row_t;

static void deposit_free(deposit_row_t *d)
{
    free(d->received);
    d->received = NULL;
}

/* The received lines of the encoded lines column into d (malloc'd). */
static bool deposit_lines(deposit_row_t *d, const char *text)
{
    store_tx_line_t *lines = NULL;
    size_t count = 0, cap = 0;
    bool ok = store_tx_lines_decode(text, &lines, &count, &cap);
    d->received = ok ? calloc(count > 0 ? count : 1, sizeof *d->received) : NULL;
    ok = ok && d->received != NULL;
    size_t n = 0;
    for (size_t i = 0; ok && i < count; i++) {
        if (lines[i].kind != STORE_LINE_RECEIVED)
            continue;
        memcpy(d->received[n].asset, lines[i].asset, sizeof d->received[n].asset);
        memcpy(d->received[n].amount, lines[i].amount, sizeof d->received[n].amount);
        n++;
    }
    free(lines);
    d->view.received = d->received;
    d->view.received_count = n;
    return ok;
}

static store_status_t deposit_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    deposit_row_t *d = record;
    d->seq = db_column_int(stmt, 0);
    d->account_seq = db_column_int(stmt, 1);
    d->view.datetime_ms = db_column_int(stmt, 5);
    if (!column_copy(stmt, 2, d->account_uuid, sizeof d->account_uuid) ||
        !column_copy(stmt, 3, d->view.account_id, sizeof d->view.account_id) ||
        !column_copy(stmt, 4, d->view.type, sizeof d->view.type) ||
        !deposit_lines(d, db_column_text(stmt, 6)))
        return store_bad_row(q);
    return STORE_OK;
}

static store_status_t deposit_read(store_conn_t *conn, const char *tenant_id,
                                   const char *transaction_id, deposit_row_t *out)
{
    memset(out, 0, sizeof *out);
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_DEPOSIT, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, transaction_id))
        return conn_bind_failed(conn, &Q_DEPOSIT, stmt);
    return conn_read_row(conn, &Q_DEPOSIT, stmt, deposit_from_row, out);
}

/* ---- the recalculation's reader ----------------------------------------- */

static const store_sql_t Q_PROVIDED_OF_ACCOUNT = {
    "provided_of_account",
    "SELECT t.id, p.asset_code, p.quantity, p.cost_basis, p.acquired_at FROM provided_lots p"
    " JOIN transactions t ON t.seq = p.transaction_seq"
    " WHERE p.account = (SELECT seq FROM accounts WHERE uuid = ?1) AND t.datetime >= ?2"
    " ORDER BY t.datetime, t.seq, p.asset_code, p.idx", NULL};

store_status_t store_provided_lots_of_account(store_conn_t *conn, const char *account_uuid,
                                              int64_t from_ms, store_provided_lot_each_fn each,
                                              void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_PROVIDED_OF_ACCOUNT, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, from_ms))
        return conn_bind_failed(conn, &Q_PROVIDED_OF_ACCOUNT, stmt);
    int rc = DB_DONE, stop = 0;
    while (!stop && (rc = db_step(stmt)) == DB_ROW) {
        const char *text[4];
        for (int i = 0; i < 4; i++)
            text[i] = db_column_text(stmt, i);
        if (text[0] == NULL || text[1] == NULL || text[2] == NULL || text[3] == NULL) {
            st = store_bad_row(&Q_PROVIDED_OF_ACCOUNT);
            break;
        }
        stop = each(text[0], text[1], text[2], text[3], db_column_int(stmt, 4), ctx);
    }
    if (st == STORE_OK && !stop && rc != DB_DONE)
        st = conn_fail(conn, &Q_PROVIDED_OF_ACCOUNT, rc);
    stmt_done(stmt);
    return st;
}

/* ---- writes ----------------------------------------------------------- */

typedef struct set_args {
    const char *tenant_id, *transaction_id;
    const store_provided_lot_t *lots;
    size_t n;
    store_deposit_check_fn check;
    void *ctx;
} set_args_t;

/* True when lots[0..i) already names lots[i]'s asset. */
static bool asset_seen(const store_provided_lot_t *lots, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcmp(lots[j].asset, lots[i].asset) == 0)
            return true;
    return false;
}

/* Position of lots[i] among the lots of its asset. */
static int64_t asset_index(const store_provided_lot_t *lots, size_t i)
{
    int64_t idx = 0;
    for (size_t j = 0; j < i; j++)
        idx += strcmp(lots[j].asset, lots[i].asset) == 0;
    return idx;
}

static store_status_t drop_asset(store_conn_t *conn, int64_t tx_seq, const char *asset)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_DROP_ASSET, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_DROP_ASSET, stmt,
                     bind_int(stmt, 1, tx_seq) && bind_text(stmt, 2, asset));
}

static store_status_t insert_lot(store_conn_t *conn, const deposit_row_t *d,
                                 const store_provided_lot_t *lot, int64_t idx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_INSERT, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_int(stmt, 1, d->seq) && bind_int(stmt, 2, d->account_seq) &&
                 bind_text(stmt, 3, lot->asset) && bind_int(stmt, 4, idx) &&
                 bind_text(stmt, 5, lot->quantity) && bind_text(stmt, 6, lot->cost_basis) &&
                 bind_int(stmt, 7, lot->acquired_at);
    return run_bound(conn, &Q_INSERT, stmt, bound);
}

/* The replacement: each named asset's old lots out, the body's lots in. */
static store_status_t write_lots(store_conn_t *conn, const set_args_t *a, const deposit_row_t *d)
{
    store_status_t st = STORE_OK;
    if (a->n == 0)
        return store_provided_lots_drop_in_tx(conn, d->seq);
    for (size_t i = 0; st == STORE_OK && i < a->n; i++)
        if (!asset_seen(a->lots, i))
            st = drop_asset(conn, d->seq, a->lots[i].asset);
    for (size_t i = 0; st == STORE_OK && i < a->n; i++)
        st = insert_lot(conn, d, &a->lots[i], asset_index(a->lots, i));
    return st;
}

static store_status_t set_tx(store_conn_t *conn, const void *arg)
{
    const set_args_t *a = arg;
    deposit_row_t d;
    store_status_t st = deposit_read(conn, a->tenant_id, a->transaction_id, &d);
    if (st == STORE_OK && !a->check(&d.view, a->ctx))
        st = STORE_CONFLICT;
    if (st == STORE_OK)
        st = write_lots(conn, a, &d);
    /* The lots' acquired_at precede the deposit, but they enter the ledger
     * at the deposit: everything from its datetime on is recomputed. */
    if (st == STORE_OK)
        st = store_mark_dirty_in_tx(conn, d.account_uuid, d.view.datetime_ms);
    deposit_free(&d);
    return st;
}

store_status_t store_provided_lots_set(store_conn_t *conn, const char *tenant_id,
                                       const char *transaction_id,
                                       const store_provided_lot_t *lots, size_t n,
                                       store_deposit_check_fn check, void *ctx)
{
    for (size_t i = 0; i < n; i++)
        if (!text_fits(lots[i].asset, sizeof lots[i].asset) ||
            !text_fits(lots[i].quantity, sizeof lots[i].quantity) ||
            !text_fits(lots[i].cost_basis, sizeof lots[i].cost_basis))
            return store_bad_argument("provided_lots_set");
    set_args_t args = {tenant_id, transaction_id, lots, n, check, ctx};
    return conn_write(conn, set_tx, &args);
}

/* ---- read ------------------------------------------------------------- */

static store_status_t lot_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_provided_lot_t *lot = record;
    if (!column_copy(stmt, 0, lot->asset, sizeof lot->asset) ||
        !column_copy(stmt, 1, lot->quantity, sizeof lot->quantity) ||
        !column_copy(stmt, 2, lot->cost_basis, sizeof lot->cost_basis))
        return store_bad_row(q);
    lot->acquired_at = db_column_int(stmt, 3);
    return STORE_OK;
}

static store_status_t lots_walk(store_conn_t *conn, int64_t tx_seq,
                                int (*lot)(const store_provided_lot_t *lot, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_LOTS, &stmt);
    if (st == STORE_OK && !bind_int(stmt, 1, tx_seq))
        st = conn_bind_failed(conn, &Q_LOTS, stmt);
    store_page_t page;
    page_start(&page, conn, &Q_LOTS, stmt, SIZE_MAX - 1, st);
    store_provided_lot_t row;
    while (page_next(&page, lot_from_row, &row))
        if (lot(&row, ctx) != 0)
            break;
    return page_close(&page, NULL);
}

store_status_t store_provided_lots_get(store_conn_t *conn, const char *tenant_id,
                                       const char *transaction_id,
                                       void (*deposit)(const store_deposit_t *dep, void *ctx),
                                       int (*lot)(const store_provided_lot_t *lot, void *ctx),
                                       void *ctx)
{
    deposit_row_t d;
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    st = deposit_read(conn, tenant_id, transaction_id, &d);
    if (st == STORE_OK) {
        deposit(&d.view, ctx);
        st = lots_walk(conn, d.seq, lot, ctx);
    }
    deposit_free(&d);
    return st;
}
