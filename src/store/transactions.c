/* store/transactions.c: see transactions.h.
 *
 * An upsert is one write transaction: resolve the account, find the current
 * row, refuse a move to another account, skip a byte-identical resend, write
 * the row and its lines, make sure every asset it names exists (created on
 * first use by store/assets.c, named after its code), lower the account's dirty watermark, and
 * record or widen the account's open INVENTORY_UPDATE event. SQLite's single
 * writer serialises concurrent upserts of the same id: the later one waits
 * for the write lock (within its deadline) and then wins, so nothing is
 * duplicated or lost.
 *
 * Widening: an event not yet claimed for delivery covers the union of the
 * ranges of the writes it stands for. Its update_from is the earliest
 * datetime any of them affected and its latest the latest; the transaction
 * ids at those datetimes are kept only while no deletion is in the range. */
#include "store/transactions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/grow.h"
#include "store/assets.h"
#include "store/internal.h"
#include "store/webhooks.h"

static const store_sql_t Q_ACCOUNT_OF = {
    "tx_account_of", "SELECT uuid FROM accounts WHERE tenant_id = ?1 AND id = ?2"};
static const store_sql_t Q_TX_FIND = {
    "tx_find", "SELECT t.uuid, a.id, t.datetime, t.body FROM transactions t"
               " JOIN accounts a ON a.uuid = t.account_uuid"
               " WHERE t.tenant_id = ?1 AND t.id = ?2"};
static const store_sql_t Q_TX_INSERT = {
    "tx_insert", "INSERT INTO transactions (uuid, tenant_id, id, account_uuid, datetime, type,"
                 " subtype, body, created_at, updated_at)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)"};
static const store_sql_t Q_TX_UPDATE = {
    "tx_update", "UPDATE transactions SET datetime = ?2, type = ?3, subtype = ?4, body = ?5,"
                 " updated_at = ?6 WHERE uuid = ?1"};
static const store_sql_t Q_TX_DELETE = {"tx_delete", "DELETE FROM transactions WHERE uuid = ?1"};
static const store_sql_t Q_LINES_DELETE = {
    "tx_lines_delete", "DELETE FROM transaction_lines WHERE transaction_uuid = ?1"};
static const store_sql_t Q_LINE_INSERT = {
    "tx_line_insert", "INSERT INTO transaction_lines (transaction_uuid, kind, idx, asset_code,"
                      " amount, usd_rate) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"};
static const store_sql_t Q_TX_ASSETS_DELETE = {
    "tx_assets_delete", "DELETE FROM transaction_assets WHERE transaction_uuid = ?1"};
static const store_sql_t Q_TX_ASSET_LINK = {
    "tx_asset_link", "INSERT OR IGNORE INTO transaction_assets (transaction_uuid, asset_uuid)"
                     " VALUES (?1, ?2)"};
static const store_sql_t Q_MARK_DIRTY = {
    "tx_mark_dirty", "UPDATE accounts SET dirty_from = min(coalesce(dirty_from, ?2), ?2),"
                     " inventory_version = inventory_version + 1 WHERE uuid = ?1"};
/* An account has at most one open (unclaimed) INVENTORY_UPDATE event, and
 * it is the account's newest: a new one is opened only once the newest is
 * claimed. So the newest is read, not an index of open events that every
 * claim would have to update. */
static const store_sql_t Q_EVENT_OPEN = {
    "tx_event_open",
    "SELECT id, from_ms, from_tx, latest_ms, latest_tx, has_ids FROM"
    " (SELECT id, from_ms, from_tx, latest_ms, latest_tx, has_ids, claimed_at FROM events"
    "  WHERE account_uuid = ?1 AND type = 'INVENTORY_UPDATE' ORDER BY rowid DESC LIMIT 1)"
    " WHERE claimed_at IS NULL"};
static const store_sql_t Q_EVENT_INSERT = {
    "tx_event_insert",
    "INSERT INTO events (id, tenant_id, type, created_at, account_uuid, account_id, from_ms,"
    " from_tx, latest_ms, latest_tx, has_ids)"
    " VALUES (?1, ?2, 'INVENTORY_UPDATE', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"};
static const store_sql_t Q_EVENT_WIDEN = {
    "tx_event_widen", "UPDATE events SET from_ms = ?2, from_tx = ?3, latest_ms = ?4,"
                      " latest_tx = ?5, has_ids = ?6 WHERE id = ?1"};
static const store_sql_t Q_TX_GET = {
    "tx_get", "SELECT uuid, body, created_at, updated_at FROM transactions"
              " WHERE tenant_id = ?1 AND id = ?2"};
static const store_sql_t Q_TX_OF_ACCOUNT = {
    "tx_of_account",
    "SELECT t.uuid, t.id, t.datetime, t.type, l.kind, l.asset_code, l.amount, l.usd_rate"
    " FROM transactions t JOIN transaction_lines l ON l.transaction_uuid = t.uuid"
    " WHERE t.account_uuid = ?1 AND t.datetime >= ?2 ORDER BY t.datetime, t.uuid, l.kind, l.idx"};

/* ---- small helpers ---------------------------------------------------- */

/* ---- the event range -------------------------------------------------- */

typedef struct range {
    int64_t from_ms, latest_ms;
    char from_tx[STORE_ID_MAX], latest_tx[STORE_ID_MAX];
    bool has_ids;
} range_t;

static void range_widen(range_t *r, const range_t *more)
{
    if (more->from_ms < r->from_ms) {
        r->from_ms = more->from_ms;
        memcpy(r->from_tx, more->from_tx, sizeof r->from_tx);
    }
    if (more->latest_ms > r->latest_ms) {
        r->latest_ms = more->latest_ms;
        memcpy(r->latest_tx, more->latest_tx, sizeof r->latest_tx);
    }
    r->has_ids = r->has_ids && more->has_ids;
}

static store_status_t event_open(store_conn_t *conn, const char *account_uuid, char *event_id,
                                 range_t *r, bool *found)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_EVENT_OPEN, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = sqlite3_step(stmt);
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW) {
        bool ids = sqlite3_column_int(stmt, 5) != 0;
        r->from_ms = sqlite3_column_int64(stmt, 1);
        r->latest_ms = sqlite3_column_int64(stmt, 3);
        r->has_ids = ids;
        r->from_tx[0] = r->latest_tx[0] = '\0';
        bool ok = column_copy(stmt, 0, event_id, STORE_UUID_LEN) &&
                  (!ids || (column_copy(stmt, 2, r->from_tx, sizeof r->from_tx) &&
                            column_copy(stmt, 4, r->latest_tx, sizeof r->latest_tx)));
        if (!ok)
            st = store_bad_row(&Q_EVENT_OPEN);
    } else if (rc != SQLITE_DONE) {
        st = conn_fail(conn, &Q_EVENT_OPEN, rc);
    }
    stmt_done(stmt);
    return st;
}

/* Records the change range on the account's open event, or opens one. */
static store_status_t event_record(store_conn_t *conn, const char *tenant_id,
                                   const char *account_uuid, const char *account_id,
                                   const range_t *change, const char *new_event_id, int64_t now)
{
    char event_id[STORE_UUID_LEN];
    range_t r;
    bool found = false;
    store_status_t st = event_open(conn, account_uuid, event_id, &r, &found);
    if (st != STORE_OK)
        return st;
    if (found)
        range_widen(&r, change);
    else
        r = *change;
    const store_sql_t *q = found ? &Q_EVENT_WIDEN : &Q_EVENT_INSERT;
    sqlite3_stmt *stmt;
    st = conn_prepare(conn, q, &stmt);
    if (st != STORE_OK)
        return st;
    const char *from_tx = r.has_ids ? r.from_tx : NULL;
    const char *latest_tx = r.has_ids ? r.latest_tx : NULL;
    bool bound;
    if (found)
        bound = bind_text(stmt, 1, event_id) && bind_int(stmt, 2, r.from_ms) &&
                bind_text_or_null(stmt, 3, from_tx) && bind_int(stmt, 4, r.latest_ms) &&
                bind_text_or_null(stmt, 5, latest_tx) && bind_int(stmt, 6, r.has_ids);
    else
        bound = bind_text(stmt, 1, new_event_id) && bind_text(stmt, 2, tenant_id) &&
                bind_int(stmt, 3, now) && bind_text(stmt, 4, account_uuid) &&
                bind_text(stmt, 5, account_id) && bind_int(stmt, 6, r.from_ms) &&
                bind_text_or_null(stmt, 7, from_tx) && bind_int(stmt, 8, r.latest_ms) &&
                bind_text_or_null(stmt, 9, latest_tx) && bind_int(stmt, 10, r.has_ids);
    st = run_bound(conn, q, stmt, bound);
    if (st != STORE_OK || found)
        return st;
    /* A new event: its deliveries are written in the same transaction. */
    return store_deliveries_fan_out_in_tx(conn, tenant_id, new_event_id, "INVENTORY_UPDATE", now);
}

static store_status_t mark_dirty(store_conn_t *conn, const char *account_uuid, int64_t from_ms)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_MARK_DIRTY, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_MARK_DIRTY, stmt, bind_int(stmt, 2, from_ms));
}

/* ---- upsert ----------------------------------------------------------- */

typedef struct upsert_args {
    const store_tx_write_t *w;
    int pause_ms;
    store_tx_outcome_t *outcome;
    char *current_account;
} upsert_args_t;

typedef struct existing {
    bool found;
    char uuid[STORE_UUID_LEN];
    char account_id[STORE_ID_MAX];
    int64_t datetime_ms;
    bool same_body;
} existing_t;

static store_status_t lookup_one_text(store_conn_t *conn, const store_sql_t *q, const char *a,
                                      const char *b, char *out, size_t cap)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, q, a, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, b))
        return conn_bind_failed(conn, q, stmt);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        st = column_copy(stmt, 0, out, cap) ? STORE_OK : store_bad_row(q);
    else
        st = rc == SQLITE_DONE ? STORE_NOT_FOUND : conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t find_existing(store_conn_t *conn, const store_tx_write_t *w, existing_t *ex)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TX_FIND, w->tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, w->id))
        return conn_bind_failed(conn, &Q_TX_FIND, stmt);
    int rc = sqlite3_step(stmt);
    ex->found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW) {
        const unsigned char *body = sqlite3_column_text(stmt, 3);
        ex->datetime_ms = sqlite3_column_int64(stmt, 2);
        ex->same_body = body != NULL && strcmp((const char *)body, w->body) == 0;
        if (!column_copy(stmt, 0, ex->uuid, sizeof ex->uuid) ||
            !column_copy(stmt, 1, ex->account_id, sizeof ex->account_id))
            st = store_bad_row(&Q_TX_FIND);
    } else if (rc != SQLITE_DONE) {
        st = conn_fail(conn, &Q_TX_FIND, rc);
    }
    stmt_done(stmt);
    return st;
}

static store_status_t write_row(store_conn_t *conn, const store_tx_write_t *w,
                                const char *account_uuid, const existing_t *ex)
{
    sqlite3_stmt *stmt;
    const store_sql_t *q = ex->found ? &Q_TX_UPDATE : &Q_TX_INSERT;
    store_status_t st = conn_prepare(conn, q, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound;
    if (ex->found)
        bound = bind_text(stmt, 1, ex->uuid) && bind_int(stmt, 2, w->datetime_ms) &&
                bind_text(stmt, 3, w->type) && bind_text_or_null(stmt, 4, w->subtype) &&
                bind_text(stmt, 5, w->body) && bind_int(stmt, 6, w->now);
    else
        bound = bind_text(stmt, 1, w->new_uuid) && bind_text(stmt, 2, w->tenant_id) &&
                bind_text(stmt, 3, w->id) && bind_text(stmt, 4, account_uuid) &&
                bind_int(stmt, 5, w->datetime_ms) && bind_text(stmt, 6, w->type) &&
                bind_text_or_null(stmt, 7, w->subtype) && bind_text(stmt, 8, w->body) &&
                bind_int(stmt, 9, w->now);
    return run_bound(conn, q, stmt, bound);
}

static store_status_t delete_children(store_conn_t *conn, const char *tx_uuid)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_LINES_DELETE, tx_uuid, &stmt);
    if (st == STORE_OK)
        st = conn_run(conn, &Q_LINES_DELETE, stmt);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_ASSETS_DELETE, tx_uuid, &stmt);
    if (st == STORE_OK)
        st = conn_run(conn, &Q_TX_ASSETS_DELETE, stmt);
    return st;
}

/* The asset exists afterwards (created on first use) and is linked to tx. */
static store_status_t ensure_asset(store_conn_t *conn, const store_tx_write_t *w,
                                   const char *tx_uuid, const store_tx_line_t *line)
{
    char asset_uuid[STORE_UUID_LEN];
    store_status_t st = store_asset_ensure_in_tx(conn, w->tenant_id, line->asset, line->asset_type,
                                                 asset_uuid, w->now, line->new_asset_uuid);
    sqlite3_stmt *stmt;
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_ASSET_LINK, tx_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_TX_ASSET_LINK, stmt, bind_text(stmt, 2, asset_uuid));
}

static store_status_t write_lines(store_conn_t *conn, const store_tx_write_t *w,
                                  const char *tx_uuid)
{
    int index[3] = {0, 0, 0};
    for (size_t i = 0; i < w->line_count; i++) {
        const store_tx_line_t *line = &w->lines[i];
        sqlite3_stmt *stmt;
        store_status_t st = conn_prepare_key(conn, &Q_LINE_INSERT, tx_uuid, &stmt);
        if (st != STORE_OK)
            return st;
        bool bound = bind_int(stmt, 2, line->kind) && bind_int(stmt, 3, index[line->kind]++) &&
                     bind_text(stmt, 4, line->asset) && bind_text(stmt, 5, line->amount) &&
                     bind_text_or_null(stmt, 6, line->has_rate ? line->usd_rate : NULL);
        st = run_bound(conn, &Q_LINE_INSERT, stmt, bound);
        if (st == STORE_OK)
            st = ensure_asset(conn, w, tx_uuid, line);
        if (st != STORE_OK)
            return st;
    }
    return STORE_OK;
}

static void pause_for(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static store_status_t upsert_tx(store_conn_t *conn, const void *arg)
{
    const upsert_args_t *a = arg;
    const store_tx_write_t *w = a->w;
    char account_uuid[STORE_UUID_LEN];
    store_status_t st = lookup_one_text(conn, &Q_ACCOUNT_OF, w->tenant_id, w->account_id,
                                        account_uuid, sizeof account_uuid);
    if (st == STORE_NOT_FOUND)
        *a->outcome = STORE_TX_NO_ACCOUNT;
    if (st != STORE_OK)
        return st;
    existing_t ex;
    st = find_existing(conn, w, &ex);
    if (st != STORE_OK)
        return st;
    if (ex.found && strcmp(ex.account_id, w->account_id) != 0) {
        *a->outcome = STORE_TX_MOVED;
        memcpy(a->current_account, ex.account_id, STORE_ID_MAX);
        return STORE_CONFLICT;
    }
    if (ex.found && ex.same_body) {
        *a->outcome = STORE_TX_UNCHANGED;
        return STORE_OK; /* committing an empty transaction writes nothing */
    }
    const char *tx_uuid = ex.found ? ex.uuid : w->new_uuid;
    if ((st = write_row(conn, w, account_uuid, &ex)) != STORE_OK ||
        (ex.found && (st = delete_children(conn, tx_uuid)) != STORE_OK) ||
        (st = write_lines(conn, w, tx_uuid)) != STORE_OK)
        return st;

    range_t change = {.from_ms = w->datetime_ms, .latest_ms = w->datetime_ms, .has_ids = true};
    if (ex.found && ex.datetime_ms < change.from_ms)
        change.from_ms = ex.datetime_ms; /* moved later: the old place is affected too */
    if (ex.found && ex.datetime_ms > change.latest_ms)
        change.latest_ms = ex.datetime_ms;
    snprintf(change.from_tx, sizeof change.from_tx, "%s", w->id);
    snprintf(change.latest_tx, sizeof change.latest_tx, "%s", w->id);
    if ((st = mark_dirty(conn, account_uuid, change.from_ms)) != STORE_OK ||
        (st = event_record(conn, w->tenant_id, account_uuid, w->account_id, &change,
                           w->event_uuid, w->now)) != STORE_OK)
        return st;
    *a->outcome = ex.found ? STORE_TX_UPDATED : STORE_TX_CREATED;
    if (a->pause_ms > 0)
        pause_for(a->pause_ms);
    return STORE_OK;
}

store_status_t store_tx_upsert(store_conn_t *conn, const store_tx_write_t *w, int pause_ms,
                               store_tx_outcome_t *outcome,
                               char current_account[STORE_ID_MAX])
{
    upsert_args_t args = {w, pause_ms, outcome, current_account};
    *outcome = STORE_TX_UNCHANGED;
    current_account[0] = '\0';
    return conn_write(conn, upsert_tx, &args);
}

/* ---- get and delete --------------------------------------------------- */

store_status_t store_tx_get(store_conn_t *conn, const char *tenant_id, const char *id,
                            store_tx_t *out)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_GET, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_TX_GET, stmt);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        const char *body = (const char *)sqlite3_column_text(stmt, 1);
        out->body = body ? strdup(body) : NULL;
        out->created_at = sqlite3_column_int64(stmt, 2);
        out->updated_at = sqlite3_column_int64(stmt, 3);
        if (out->body == NULL || !column_copy(stmt, 0, out->uuid, sizeof out->uuid)) {
            free(out->body);
            out->body = NULL;
            st = STORE_ERROR;
        }
    } else {
        st = rc == SQLITE_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_TX_GET, rc);
    }
    stmt_done(stmt);
    return st;
}

typedef struct delete_args {
    const char *tenant_id, *id, *event_uuid;
    int64_t now;
} delete_args_t;

static store_status_t delete_tx(store_conn_t *conn, const void *arg)
{
    const delete_args_t *a = arg;
    store_tx_write_t probe = {.tenant_id = a->tenant_id, .id = a->id, .body = ""};
    existing_t ex;
    store_status_t st = find_existing(conn, &probe, &ex);
    if (st != STORE_OK)
        return st;
    if (!ex.found)
        return STORE_NOT_FOUND;
    char account_uuid[STORE_UUID_LEN];
    st = lookup_one_text(conn, &Q_ACCOUNT_OF, a->tenant_id, ex.account_id, account_uuid,
                         sizeof account_uuid);
    sqlite3_stmt *stmt;
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_DELETE, ex.uuid, &stmt);
    if (st == STORE_OK)
        st = conn_run(conn, &Q_TX_DELETE, stmt);
    if (st != STORE_OK)
        return st;
    range_t change = {.from_ms = ex.datetime_ms, .latest_ms = ex.datetime_ms, .has_ids = false};
    st = mark_dirty(conn, account_uuid, ex.datetime_ms);
    if (st != STORE_OK)
        return st;
    return event_record(conn, a->tenant_id, account_uuid, ex.account_id, &change, a->event_uuid,
                        a->now);
}

store_status_t store_tx_delete(store_conn_t *conn, const char *tenant_id, const char *id,
                               const char *event_uuid, int64_t now)
{
    delete_args_t args = {tenant_id, id, event_uuid, now};
    return conn_write(conn, delete_tx, &args);
}

/* ---- the transactions of an account ----------------------------------- */

typedef struct group {
    char uuid[STORE_UUID_LEN];
    char id[STORE_ID_MAX];
    char type[STORE_TX_TYPE_MAX];
    int64_t datetime_ms;
    store_tx_line_t *lines;
    size_t count, cap;
} group_t;

static int group_flush(group_t *g, store_tx_each_fn each, void *ctx)
{
    if (g->uuid[0] == '\0')
        return 0;
    int stop = each(g->id, g->datetime_ms, g->type, g->lines, g->count, ctx);
    g->count = 0;
    g->uuid[0] = '\0';
    return stop;
}

static bool group_add_line(group_t *g, sqlite3_stmt *stmt)
{
    store_tx_line_t *grown = grow_array(g->lines, &g->cap, g->count + 1, sizeof *grown, 8);
    if (grown == NULL)
        return false;
    g->lines = grown;
    store_tx_line_t *l = &g->lines[g->count++];
    memset(l, 0, sizeof *l);
    l->kind = (store_line_kind_t)sqlite3_column_int(stmt, 4);
    l->has_rate = sqlite3_column_type(stmt, 7) != SQLITE_NULL;
    return column_copy(stmt, 5, l->asset, sizeof l->asset) &&
           column_copy(stmt, 6, l->amount, sizeof l->amount) &&
           (!l->has_rate || column_copy(stmt, 7, l->usd_rate, sizeof l->usd_rate));
}

store_status_t store_tx_each_of_account(store_conn_t *conn, const char *account_uuid,
                                        store_tx_each_fn each, void *ctx)
{
    return store_tx_each_of_account_from(conn, account_uuid, INT64_MIN, each, ctx);
}

store_status_t store_tx_each_of_account_from(store_conn_t *conn, const char *account_uuid,
                                             int64_t from_ms, store_tx_each_fn each, void *ctx)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_OF_ACCOUNT, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, from_ms))
        return conn_bind_failed(conn, &Q_TX_OF_ACCOUNT, stmt);
    group_t g = {0};
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *uuid = (const char *)sqlite3_column_text(stmt, 0);
        if (uuid == NULL) {
            st = store_bad_row(&Q_TX_OF_ACCOUNT);
            break;
        }
        if (strcmp(uuid, g.uuid) != 0) {
            if ((stop = group_flush(&g, each, ctx)) != 0)
                break;
            g.datetime_ms = sqlite3_column_int64(stmt, 2);
            if (!column_copy(stmt, 0, g.uuid, sizeof g.uuid) ||
                !column_copy(stmt, 1, g.id, sizeof g.id) ||
                !column_copy(stmt, 3, g.type, sizeof g.type)) {
                st = store_bad_row(&Q_TX_OF_ACCOUNT);
                break;
            }
        }
        if (!group_add_line(&g, stmt)) {
            st = store_bad_row(&Q_TX_OF_ACCOUNT);
            break;
        }
    }
    if (st == STORE_OK && !stop && rc != SQLITE_DONE)
        st = conn_fail(conn, &Q_TX_OF_ACCOUNT, rc);
    if (st == STORE_OK && !stop)
        group_flush(&g, each, ctx);
    stmt_done(stmt);
    free(g.lines);
    return st;
}
