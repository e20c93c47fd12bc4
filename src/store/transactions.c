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
 * PostgreSQL has no single writer: there the writes run at READ COMMITTED
 * (conn_write_locking) and take row locks for what SQLite's lock gave them.
 *  - The account's row, FOR UPDATE, before anything of the account is read
 *    (account_of's twin; a batch locks all its accounts first, in key order,
 *    so two batches never wait on each other in a cycle). It serialises
 *    every write of the account: the stored row of an id found and then
 *    updated or deleted, the same-body check, the dirty mark, and the
 *    account's open event (at most one unclaimed INVENTORY_UPDATE: only a
 *    holder of the lock opens one). A deleted account is not found.
 *  - An id is one account's (a move is refused), so the account lock covers
 *    it, but for two writers of one new id under two accounts: the insert
 *    is ON CONFLICT DO NOTHING, waits for the other's commit, and the
 *    loser finds the row and answers MOVED, as it would after it.
 *  - The event is claimed by the dispatcher without the account's lock:
 *    widening re-checks claimed_at IS NULL, and an event claimed meanwhile
 *    is left alone and a new one opened, so no change is lost.
 *  - Asset rows (reference counts) are updated, never read-then-written; a
 *    new asset two accounts create at once loses the unique race in one,
 *    which runs again and finds it (assets.c).
 * Statement for statement SQLite runs what it ran before (the lock's twin
 * is prepared on PostgreSQL only).
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

#include <jansson.h>

#include "core/clock.h"
#include "core/grow.h"
#include "core/ids.h"
#include "store/assets.h"
#include "store/internal.h"
#include "store/webhooks.h"

/* ?1 tenant, ?2 the caller's account id: the account's internal key, its
 * uuid (what events and the inventory name it by) and the tenant's key. */
static const store_sql_t Q_ACCOUNT_OF = {
    "tx_account_of", "SELECT a.seq, a.uuid, n.rowid FROM accounts a"
                     " JOIN tenants n ON n.id = a.tenant_id"
                     " WHERE a.tenant_id = ?1 AND a.id = ?2",
    /* PostgreSQL: the account's lock, held to the commit (see the top) */
    "SELECT a.seq, a.uuid, n.rowid FROM accounts a"
    " JOIN tenants n ON n.id = a.tenant_id"
    " WHERE a.tenant_id = $1 AND a.id = $2 FOR UPDATE OF a"};
/* ?1 tenant, ?2 a JSON array of account ids: a batch's accounts locked in
 * key order before its first element (PostgreSQL only: see the top). */
static const store_sql_t Q_ACCOUNTS_LOCK = {
    "tx_accounts_lock", "SELECT seq FROM accounts WHERE tenant_id = ?1"
                        " AND id IN (SELECT value FROM json_each(?2)) ORDER BY seq",
    "SELECT seq FROM accounts WHERE tenant_id = $1"
    " AND id IN (SELECT json_array_elements_text($2::json)) ORDER BY seq FOR UPDATE"};
#define TENANT_KEY "(SELECT rowid FROM tenants WHERE id = ?1)"
static const store_sql_t Q_TX_FIND = {
    "tx_find", "SELECT t.seq, a.id, t.datetime, t.body, t.lines, t.uuid, t.created_at,"
               " t.updated_at FROM transactions t"
               " JOIN accounts a ON a.seq = t.account"
               " WHERE t.tenant = " TENANT_KEY " AND t.id = ?2", NULL};
static const store_sql_t Q_TX_INSERT = {
    "tx_insert", "INSERT INTO transactions (tenant, account, datetime, type, id, lines, subtype,"
                 " created_at, updated_at, uuid, body)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10)"
                 " ON CONFLICT (tenant, id) DO NOTHING", NULL}; /* a race under another account */
static const store_sql_t Q_TX_UPDATE = {
    "tx_update", "UPDATE transactions SET datetime = ?2, type = ?3, lines = ?4, subtype = ?5,"
                 " body = ?6, updated_at = ?7 WHERE seq = ?1", NULL};
static const store_sql_t Q_TX_DELETE = {"tx_delete", "DELETE FROM transactions WHERE seq = ?1", NULL};
static const store_sql_t Q_MARK_DIRTY = {
    "tx_mark_dirty", "UPDATE accounts SET dirty_from = min(coalesce(dirty_from, ?2), ?2),"
                     " inventory_version = inventory_version + 1 WHERE uuid = ?1",
    /* PostgreSQL: min() is only an aggregate; LEAST is the two-value form */
    "UPDATE accounts SET dirty_from = LEAST(coalesce(dirty_from, $2), $2),"
    " inventory_version = inventory_version + 1 WHERE uuid = $1"};
/* An account has at most one open (unclaimed) INVENTORY_UPDATE event, and
 * it is the account's newest: a new one is opened only once the newest is
 * claimed. So the newest is read, not an index of open events that every
 * claim would have to update. */
static const store_sql_t Q_EVENT_OPEN = {
    "tx_event_open",
    "SELECT id, from_ms, from_tx, latest_ms, latest_tx, has_ids FROM"
    " (SELECT id, from_ms, from_tx, latest_ms, latest_tx, has_ids, claimed_at FROM events"
    "  WHERE account_uuid = ?1 AND type = 'INVENTORY_UPDATE' ORDER BY rowid DESC LIMIT 1)"
    " AS newest WHERE claimed_at IS NULL", NULL}; /* the alias: PostgreSQL requires one */
static const store_sql_t Q_EVENT_INSERT = {
    "tx_event_insert",
    "INSERT INTO events (id, tenant_id, type, created_at, account_uuid, account_id, from_ms,"
    " from_tx, latest_ms, latest_tx, has_ids)"
    " VALUES (?1, ?2, 'INVENTORY_UPDATE', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", NULL};
static const store_sql_t Q_EVENT_WIDEN = {
    "tx_event_widen", "UPDATE events SET from_ms = ?2, from_tx = ?3, latest_ms = ?4,"
                      " latest_tx = ?5, has_ids = ?6 WHERE id = ?1"
                      " AND claimed_at IS NULL", NULL}; /* not if claimed since it was read */
static const store_sql_t Q_TX_GET = {
    "tx_get", "SELECT uuid, body, created_at, updated_at FROM transactions"
              " WHERE tenant = " TENANT_KEY " AND id = ?2", NULL};
/* Covered by transactions_ledger: the table itself is never read. */
static const store_sql_t Q_TX_OF_ACCOUNT = {
    "tx_of_account",
    "SELECT id, datetime, type, lines FROM transactions"
    " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1) AND datetime >= ?2"
    " ORDER BY datetime", NULL};

/* ---- the lines column -------------------------------------------------
 * A transaction's line items as one text, what the recalculation reads
 * instead of a table of lines: each line is its kind ('s' sent,
 * 'r' received, 'f' fee), the asset code, a space, the amount and, when it
 * has one, '@' and the USD rate; lines are joined by ';', sent first, then
 * received, then fees, each kind in the order the caller gave. Codes are
 * A-Z a-z 0-9 . _ - (domain_asset_code_valid) and decimals digits, '-' and
 * '.', so no separator can occur inside a field. Example:
 * "sUSD 5308.70;rBTC 0.12345678@43000.12;fUSD 1.25". */

static const char LINE_KINDS[] = "srf"; /* indexed by store_line_kind_t */

/* The encoded lines, malloc'd (the caller frees); NULL when out of memory. */
static char *lines_encode(const store_tx_line_t *lines, size_t count)
{
    size_t cap = 1;
    for (size_t i = 0; i < count; i++)
        cap += strlen(lines[i].asset) + strlen(lines[i].amount) + strlen(lines[i].usd_rate) + 4;
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    size_t len = 0;
    for (int kind = STORE_LINE_SENT; kind <= STORE_LINE_FEE; kind++)
        for (size_t i = 0; i < count; i++) {
            const store_tx_line_t *l = &lines[i];
            if ((int)l->kind != kind)
                continue;
            len += (size_t)snprintf(out + len, cap - len, "%s%c%s %s%s%s", len ? ";" : "",
                                    LINE_KINDS[kind], l->asset, l->amount,
                                    l->has_rate ? "@" : "", l->has_rate ? l->usd_rate : "");
        }
    out[len] = '\0';
    return out;
}

/* Copies the n bytes at text into a fixed field; false when they do not fit. */
static bool field_copy(const char *text, size_t n, char *out, size_t cap)
{
    if (n == 0 || n >= cap)
        return false;
    memcpy(out, text, n);
    out[n] = '\0';
    return true;
}

/* One encoded line (len bytes, no ';') into *l. */
static bool line_decode(const char *text, size_t len, store_tx_line_t *l)
{
    memset(l, 0, sizeof *l);
    const char *kind = len > 0 ? memchr(LINE_KINDS, text[0], 3) : NULL;
    const char *end = text + len;
    const char *space = memchr(text, ' ', len);
    if (kind == NULL || space == NULL)
        return false;
    const char *at = memchr(space, '@', (size_t)(end - space));
    const char *amount_end = at != NULL ? at : end;
    l->kind = (store_line_kind_t)(kind - LINE_KINDS);
    l->has_rate = at != NULL;
    return field_copy(text + 1, (size_t)(space - text - 1), l->asset, sizeof l->asset) &&
           field_copy(space + 1, (size_t)(amount_end - space - 1), l->amount, sizeof l->amount) &&
           (at == NULL || field_copy(at + 1, (size_t)(end - at - 1), l->usd_rate,
                                     sizeof l->usd_rate));
}

/* The lines of text into *lines (grown as needed, *cap its capacity);
 * false for text that does not decode or when memory ran out. */
bool store_tx_lines_decode(const char *text, store_tx_line_t **lines, size_t *count, size_t *cap)
{
    *count = 0;
    if (text == NULL)
        return false;
    while (*text != '\0') {
        const char *semi = strchr(text, ';');
        size_t len = semi != NULL ? (size_t)(semi - text) : strlen(text);
        store_tx_line_t *grown = grow_array(*lines, cap, *count + 1, sizeof *grown, 8);
        if (grown == NULL)
            return false;
        *lines = grown;
        if (!line_decode(text, len, &(*lines)[(*count)++]))
            return false;
        text += len + (semi != NULL);
    }
    return true;
}

/* ---- asset references ------------------------------------------------- */

/* True when one of lines[0..count) names code. */
static bool lines_name(const store_tx_line_t *lines, size_t count, const char *code)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(lines[i].asset, code) == 0)
            return true;
    return false;
}

/* One asset's reference count to move, by +1 or -1. */
typedef struct ref_change {
    const store_tx_line_t *line; /* names the asset (and its type, should it be created) */
    int delta;
} ref_change_t;

static int ref_change_compare(const void *a, const void *b)
{
    return strcmp(((const ref_change_t *)a)->line->asset, ((const ref_change_t *)b)->line->asset);
}

/* Adds the changes of the assets named in `lines` and not in `other` (once
 * per asset) to out[*n]. */
static void refs_collect(const store_tx_line_t *lines, size_t count, const store_tx_line_t *other,
                         size_t other_count, int delta, ref_change_t *out, size_t *n)
{
    for (size_t i = 0; i < count; i++)
        if (!lines_name(lines, i, lines[i].asset) &&
            !lines_name(other, other_count, lines[i].asset))
            out[(*n)++] = (ref_change_t){&lines[i], delta};
}

/* Moves one asset's count; a +1 to an asset the tenant lacks creates it
 * first (named after its code, store_asset_ensure_in_tx). */
static store_status_t ref_apply(store_conn_t *conn, const store_tx_write_t *w,
                                const ref_change_t *c)
{
    bool found = false;
    const store_tx_line_t *l = c->line;
    store_status_t st = store_asset_refs_add_in_tx(conn, w->tenant_id, l->asset, c->delta, &found);
    if (st == STORE_OK && !found && c->delta > 0) {
        char uuid[STORE_UUID_LEN];
        st = store_asset_ensure_in_tx(conn, w->tenant_id, l->asset, l->asset_type, uuid, w->now,
                                      l->new_asset_uuid);
        if (st == STORE_OK)
            st = store_asset_refs_add_in_tx(conn, w->tenant_id, l->asset, c->delta, &found);
    }
    return st;
}

/* A write that replaces old_lines by new_lines: +1 to each asset only the new
 * lines name, -1 to each only the old ones name, in the order of the assets'
 * codes. The order is the point: on PostgreSQL each update locks the asset's
 * row until the commit, and two writers that locked the same assets in
 * different orders (a buy: USD then BTC; a sale: BTC then USD) deadlocked. */
static store_status_t refs_move(store_conn_t *conn, const store_tx_write_t *w,
                                const store_tx_line_t *new_lines, size_t new_count,
                                const store_tx_line_t *old_lines, size_t old_count)
{
    size_t total = new_count + old_count, n = 0;
    if (total == 0)
        return STORE_OK;
    ref_change_t *changes = malloc(total * sizeof *changes);
    if (changes == NULL)
        return store_bad_argument("asset references (out of memory)");
    refs_collect(new_lines, new_count, old_lines, old_count, +1, changes, &n);
    refs_collect(old_lines, old_count, new_lines, new_count, -1, changes, &n);
    qsort(changes, n, sizeof *changes, ref_change_compare);
    store_status_t st = STORE_OK;
    for (size_t i = 0; i < n && st == STORE_OK; i++)
        st = ref_apply(conn, w, &changes[i]);
    free(changes);
    return st;
}

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
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_EVENT_OPEN, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    *found = rc == DB_ROW;
    if (rc == DB_ROW) {
        bool ids = (int)db_column_int(stmt, 5) != 0;
        r->from_ms = db_column_int(stmt, 1);
        r->latest_ms = db_column_int(stmt, 3);
        r->has_ids = ids;
        r->from_tx[0] = r->latest_tx[0] = '\0';
        bool ok = column_copy(stmt, 0, event_id, STORE_UUID_LEN) &&
                  (!ids || (column_copy(stmt, 2, r->from_tx, sizeof r->from_tx) &&
                            column_copy(stmt, 4, r->latest_tx, sizeof r->latest_tx)));
        if (!ok)
            st = store_bad_row(&Q_EVENT_OPEN);
    } else if (rc != DB_DONE) {
        st = conn_fail(conn, &Q_EVENT_OPEN, rc);
    }
    stmt_done(stmt);
    return st;
}

/* Widens the open event event_id to r; *widened false when it was claimed
 * since it was read (PostgreSQL: the dispatcher claims without the
 * account's lock), and then it is left as its deliveries saw it. */
static store_status_t event_widen(store_conn_t *conn, const char *event_id, const range_t *r,
                                  bool *widened)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_EVENT_WIDEN, &stmt);
    if (st != STORE_OK)
        return st;
    const char *from_tx = r->has_ids ? r->from_tx : NULL;
    const char *latest_tx = r->has_ids ? r->latest_tx : NULL;
    bool bound = bind_text(stmt, 1, event_id) && bind_int(stmt, 2, r->from_ms) &&
                 bind_text_or_null(stmt, 3, from_tx) && bind_int(stmt, 4, r->latest_ms) &&
                 bind_text_or_null(stmt, 5, latest_tx) && bind_int(stmt, 6, r->has_ids);
    st = run_bound(conn, &Q_EVENT_WIDEN, stmt, bound);
    *widened = st == STORE_OK && conn_changes(conn) == 1;
    return st;
}

/* Opens the account's event for the range r, with its deliveries. */
static store_status_t event_insert(store_conn_t *conn, const char *tenant_id,
                                   const char *account_uuid, const char *account_id,
                                   const range_t *r, const char *new_event_id, int64_t now,
                                   bool *new_deliveries)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_EVENT_INSERT, &stmt);
    if (st != STORE_OK)
        return st;
    const char *from_tx = r->has_ids ? r->from_tx : NULL;
    const char *latest_tx = r->has_ids ? r->latest_tx : NULL;
    bool bound = bind_text(stmt, 1, new_event_id) && bind_text(stmt, 2, tenant_id) &&
                 bind_int(stmt, 3, now) && bind_text(stmt, 4, account_uuid) &&
                 bind_text(stmt, 5, account_id) && bind_int(stmt, 6, r->from_ms) &&
                 bind_text_or_null(stmt, 7, from_tx) && bind_int(stmt, 8, r->latest_ms) &&
                 bind_text_or_null(stmt, 9, latest_tx) && bind_int(stmt, 10, r->has_ids);
    st = run_bound(conn, &Q_EVENT_INSERT, stmt, bound);
    if (st != STORE_OK)
        return st;
    /* A new event: its deliveries are written in the same transaction. */
    st = store_deliveries_fan_out_in_tx(conn, tenant_id, new_event_id, "INVENTORY_UPDATE", now);
    if (st == STORE_OK && conn_changes(conn) > 0)
        *new_deliveries = true; /* the fan-out's INSERT ... SELECT wrote them */
    return st;
}

/* Records the change range on the account's open event, or opens one. The
 * caller holds the account's lock (PostgreSQL), so no other writer opens
 * or widens the account's event between the read and the write. */
static store_status_t event_record(store_conn_t *conn, const char *tenant_id,
                                   const char *account_uuid, const char *account_id,
                                   const range_t *change, const char *new_event_id, int64_t now,
                                   bool *new_deliveries)
{
    char event_id[STORE_UUID_LEN];
    range_t r;
    bool found = false;
    store_status_t st = event_open(conn, account_uuid, event_id, &r, &found);
    if (st != STORE_OK || !found)
        return st != STORE_OK ? st
                              : event_insert(conn, tenant_id, account_uuid, account_id, change,
                                             new_event_id, now, new_deliveries);
    range_widen(&r, change);
    bool widened = false;
    st = event_widen(conn, event_id, &r, &widened);
    if (st != STORE_OK || widened)
        return st;
    return event_insert(conn, tenant_id, account_uuid, account_id, change, new_event_id, now,
                        new_deliveries);
}

store_status_t store_mark_dirty_in_tx(store_conn_t *conn, const char *account_uuid,
                                      int64_t from_ms)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_MARK_DIRTY, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_MARK_DIRTY, stmt, bind_int(stmt, 2, from_ms));
}

/* ---- upsert ----------------------------------------------------------- */

typedef struct upsert_args {
    const store_tx_write_t *w;
    int pause_ms;
    store_tx_result_t *result;
} upsert_args_t;

typedef struct account_keys {
    int64_t seq;                 /* the account's internal key */
    int64_t tenant;              /* the tenant's */
    char uuid[STORE_UUID_LEN];
} account_keys_t;

/* The stored transaction an upsert or delete finds by the caller's id; its
 * lines (decoded) are what its asset references were counted from. */
typedef struct existing {
    bool found;
    int64_t seq;
    char uuid[STORE_UUID_LEN];
    char account_id[STORE_ID_MAX];
    int64_t datetime_ms;
    int64_t created_at, updated_at; /* for the write's result */
    bool same_body;
    store_tx_line_t *lines;      /* malloc'd: existing_free */
    size_t line_count, line_cap;
} existing_t;

static void existing_free(existing_t *ex)
{
    free(ex->lines);
    ex->lines = NULL;
}

static store_status_t account_of(store_conn_t *conn, const char *tenant_id,
                                 const char *account_id, account_keys_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_ACCOUNT_OF, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, account_id))
        return conn_bind_failed(conn, &Q_ACCOUNT_OF, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        out->seq = db_column_int(stmt, 0);
        out->tenant = db_column_int(stmt, 2);
        st = column_copy(stmt, 1, out->uuid, sizeof out->uuid) ? STORE_OK
                                                               : store_bad_row(&Q_ACCOUNT_OF);
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_ACCOUNT_OF, rc);
    }
    stmt_done(stmt);
    return st;
}

/* body NULL: the caller does not compare bodies (a delete). */
static store_status_t find_existing(store_conn_t *conn, const char *tenant_id, const char *id,
                                    const char *body, existing_t *ex)
{
    memset(ex, 0, sizeof *ex);
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TX_FIND, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_TX_FIND, stmt);
    int rc = db_step(stmt);
    ex->found = rc == DB_ROW;
    if (rc == DB_ROW) {
        const char *stored = db_column_text(stmt, 3);
        ex->seq = db_column_int(stmt, 0);
        ex->datetime_ms = db_column_int(stmt, 2);
        ex->same_body = body != NULL && stored != NULL && strcmp(stored, body) == 0;
        ex->created_at = db_column_int(stmt, 6);
        ex->updated_at = db_column_int(stmt, 7);
        const void *uuid = db_column_blob(stmt, 5, NULL);
        bool uuid_ok = uuid != NULL && db_column_bytes(stmt, 5) == IDS_UUID_BYTES;
        if (uuid_ok)
            ids_uuid_format(uuid, ex->uuid);
        if (!uuid_ok || !column_copy(stmt, 1, ex->account_id, sizeof ex->account_id) ||
            !store_tx_lines_decode(db_column_text(stmt, 4), &ex->lines,
                          &ex->line_count, &ex->line_cap))
            st = store_bad_row(&Q_TX_FIND);
    } else if (rc != DB_DONE) {
        st = conn_fail(conn, &Q_TX_FIND, rc);
    }
    stmt_done(stmt);
    return st;
}

/* *raced: the new row was not inserted, for another account's writer of
 * the same id committed it first (PostgreSQL; see the top). */
static store_status_t write_row(store_conn_t *conn, const store_tx_write_t *w,
                                const account_keys_t *account, const existing_t *ex,
                                const char *lines, bool *raced)
{
    uint8_t uuid[IDS_UUID_BYTES];
    if (!ex->found && !ids_uuid_parse(w->new_uuid, uuid))
        return store_bad_argument("tx_upsert (new_uuid)");
    db_stmt_t *stmt;
    const store_sql_t *q = ex->found ? &Q_TX_UPDATE : &Q_TX_INSERT;
    store_status_t st = conn_prepare(conn, q, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound;
    if (ex->found)
        bound = bind_int(stmt, 1, ex->seq) && bind_int(stmt, 2, w->datetime_ms) &&
                bind_text(stmt, 3, w->type) && bind_text(stmt, 4, lines) &&
                bind_text_or_null(stmt, 5, w->subtype) && bind_text(stmt, 6, w->body) &&
                bind_int(stmt, 7, w->now);
    else
        bound = bind_int(stmt, 1, account->tenant) && bind_int(stmt, 2, account->seq) &&
                bind_int(stmt, 3, w->datetime_ms) && bind_text(stmt, 4, w->type) &&
                bind_text(stmt, 5, w->id) && bind_text(stmt, 6, lines) &&
                bind_text_or_null(stmt, 7, w->subtype) && bind_int(stmt, 8, w->now) &&
                bind_blob(stmt, 9, uuid, sizeof uuid) &&
                bind_text(stmt, 10, w->body);
    st = run_bound(conn, q, stmt, bound);
    *raced = st == STORE_OK && !ex->found && conn_changes(conn) == 0;
    return st;
}

/* The row and the asset counts: assets the new lines name and the old did
 * not gain a reference, assets only the old lines named lose one. */
static store_status_t write_tx(store_conn_t *conn, const store_tx_write_t *w,
                               const account_keys_t *account, const existing_t *ex, bool *raced)
{
    char *lines = lines_encode(w->lines, w->line_count);
    if (lines == NULL)
        return store_bad_argument("tx_upsert (out of memory)");
    store_status_t st = write_row(conn, w, account, ex, lines, raced);
    free(lines);
    if (st != STORE_OK || *raced)
        return st; /* nothing of this write is written */
    return refs_move(conn, w, w->lines, w->line_count, ex->lines, ex->line_count);
}

/* The outcome of a write whose account and stored row are known, and its
 * writes. MOVED and UNCHANGED write nothing. */
/* A transaction's customer-provided lots (provided_lots.c writes them) are
 * part of it: an edit of a deposit, or its deletion, drops them in the same
 * write. Here, not in provided_lots.c, so that the dependency between the
 * two files runs one way (provided_lots.c reads deposits through this
 * file). */
static const store_sql_t Q_PROVIDED_DROP = {
    "provided_drop_all", "DELETE FROM provided_lots WHERE transaction_seq = ?1", NULL};

store_status_t store_provided_lots_drop_in_tx(store_conn_t *conn, int64_t tx_seq)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_PROVIDED_DROP, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_PROVIDED_DROP, stmt, bind_int(stmt, 1, tx_seq));
}

/* *raced: nothing written, for the id was inserted meanwhile (write_row). */
static store_status_t upsert_found(store_conn_t *conn, const store_tx_write_t *w,
                                   const account_keys_t *account, const existing_t *ex,
                                   store_tx_result_t *r, bool *raced)
{
    if (ex->found && strcmp(ex->account_id, w->account_id) != 0) {
        r->outcome = STORE_TX_MOVED;
        memcpy(r->current_account, ex->account_id, STORE_ID_MAX);
        return STORE_OK;
    }
    if (ex->found && ex->same_body) {
        r->outcome = STORE_TX_UNCHANGED;
        return STORE_OK; /* committing an empty transaction writes nothing */
    }
    store_status_t st = write_tx(conn, w, account, ex, raced);
    if (st != STORE_OK || *raced)
        return st;
    /* The customer-provided lots described the deposit as it was: an edit
     * drops them in the same write (the caller provides them again). */
    if (st == STORE_OK && ex->found)
        st = store_provided_lots_drop_in_tx(conn, ex->seq);
    if (st != STORE_OK)
        return st;

    range_t change = {.from_ms = w->datetime_ms, .latest_ms = w->datetime_ms, .has_ids = true};
    if (ex->found && ex->datetime_ms < change.from_ms)
        change.from_ms = ex->datetime_ms; /* moved later: the old place is affected too */
    if (ex->found && ex->datetime_ms > change.latest_ms)
        change.latest_ms = ex->datetime_ms;
    snprintf(change.from_tx, sizeof change.from_tx, "%s", w->id);
    snprintf(change.latest_tx, sizeof change.latest_tx, "%s", w->id);
    if ((st = store_mark_dirty_in_tx(conn, account->uuid, change.from_ms)) != STORE_OK ||
        (st = event_record(conn, w->tenant_id, account->uuid, w->account_id, &change,
                           w->event_uuid, w->now, &r->new_deliveries)) != STORE_OK)
        return st;
    r->outcome = ex->found ? STORE_TX_UPDATED : STORE_TX_CREATED;
    return STORE_OK;
}

/* One upsert's checks and writes inside the caller's write transaction.
 * NO_ACCOUNT and MOVED are outcomes, not failures: they are decided before
 * anything of this write is written, so they return STORE_OK having written
 * nothing, and a batch goes on with its next element. On STORE_OK, r also
 * holds the stored record's uuid and times as of the commit (its body is
 * the write's), known without reading it back. */
static store_status_t upsert_one(store_conn_t *conn, const store_tx_write_t *w,
                                 store_tx_result_t *r)
{
    memset(r, 0, sizeof *r);
    account_keys_t account;
    store_status_t st = account_of(conn, w->tenant_id, w->account_id, &account);
    if (st == STORE_NOT_FOUND) {
        r->outcome = STORE_TX_NO_ACCOUNT;
        return STORE_OK;
    }
    if (st != STORE_OK)
        return st;
    existing_t ex;
    bool raced = false;
    st = find_existing(conn, w->tenant_id, w->id, w->body, &ex);
    if (st == STORE_OK)
        st = upsert_found(conn, w, &account, &ex, r, &raced);
    if (st == STORE_OK && raced) { /* the row found now is the winner's */
        existing_free(&ex);
        st = find_existing(conn, w->tenant_id, w->id, w->body, &ex);
        if (st == STORE_OK)
            st = upsert_found(conn, w, &account, &ex, r, &raced);
        if (st == STORE_OK && raced) /* and deleted again at once: start afresh */
            st = conn_retry(conn, Q_TX_INSERT.name);
    }
    bool stored = r->outcome == STORE_TX_CREATED || r->outcome == STORE_TX_UPDATED ||
                  r->outcome == STORE_TX_UNCHANGED;
    if (st == STORE_OK && stored) {
        bool created = r->outcome == STORE_TX_CREATED;
        snprintf(r->uuid, sizeof r->uuid, "%s", created ? w->new_uuid : ex.uuid);
        r->created_at = created ? w->now : ex.created_at;
        r->updated_at = r->outcome == STORE_TX_UNCHANGED ? ex.updated_at : w->now;
    }
    existing_free(&ex);
    return st;
}

static store_status_t upsert_tx(store_conn_t *conn, const void *arg)
{
    const upsert_args_t *a = arg;
    store_status_t st = upsert_one(conn, a->w, a->result);
    if (st != STORE_OK)
        return st;
    if (a->result->outcome == STORE_TX_NO_ACCOUNT)
        return STORE_NOT_FOUND;
    if (a->result->outcome == STORE_TX_MOVED)
        return STORE_CONFLICT;
    if (a->result->outcome != STORE_TX_UNCHANGED && a->pause_ms > 0)
        clock_sleep_ms(a->pause_ms);
    return STORE_OK;
}

store_status_t store_tx_upsert(store_conn_t *conn, const store_tx_write_t *w, int pause_ms,
                               store_tx_result_t *result)
{
    upsert_args_t args = {w, pause_ms, result};
    memset(result, 0, sizeof *result);
    result->outcome = STORE_TX_UNCHANGED;
    return conn_write_locking(conn, upsert_tx, &args);
}

/* ---- get and delete --------------------------------------------------- */

store_status_t store_tx_get(store_conn_t *conn, const char *tenant_id, const char *id,
                            store_tx_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_GET, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_TX_GET, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        const char *body = db_column_text(stmt, 1);
        const void *uuid = db_column_blob(stmt, 0, NULL);
        out->body = body ? strdup(body) : NULL;
        out->created_at = db_column_int(stmt, 2);
        out->updated_at = db_column_int(stmt, 3);
        if (uuid != NULL && db_column_bytes(stmt, 0) == IDS_UUID_BYTES)
            ids_uuid_format(uuid, out->uuid);
        if (out->body == NULL || uuid == NULL ||
            db_column_bytes(stmt, 0) != IDS_UUID_BYTES) {
            free(out->body);
            out->body = NULL;
            st = store_bad_row(&Q_TX_GET);
        }
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_TX_GET, rc);
    }
    stmt_done(stmt);
    return st;
}

typedef struct delete_args {
    const char *tenant_id, *id, *event_uuid;
    int64_t now;
} delete_args_t;

static store_status_t delete_found(store_conn_t *conn, const delete_args_t *a,
                                   const existing_t *ex, const account_keys_t *locked)
{
    account_keys_t account = *locked;
    store_status_t st = STORE_OK;
    db_stmt_t *stmt;
    if (st == STORE_OK) /* the foreign key cascades too; said here for the reader */
        st = store_provided_lots_drop_in_tx(conn, ex->seq);
    if (st == STORE_OK)
        st = conn_prepare(conn, &Q_TX_DELETE, &stmt);
    if (st == STORE_OK)
        st = run_bound(conn, &Q_TX_DELETE, stmt, bind_int(stmt, 1, ex->seq));
    store_tx_write_t refs = {.tenant_id = a->tenant_id, .now = a->now};
    if (st == STORE_OK)
        st = refs_move(conn, &refs, NULL, 0, ex->lines, ex->line_count);
    if (st == STORE_OK)
        st = store_mark_dirty_in_tx(conn, account.uuid, ex->datetime_ms);
    if (st != STORE_OK)
        return st;
    range_t change = {.from_ms = ex->datetime_ms, .latest_ms = ex->datetime_ms, .has_ids = false};
    bool new_deliveries = false; /* the caller wakes the dispatcher after any delete */
    return event_record(conn, a->tenant_id, account.uuid, ex->account_id, &change, a->event_uuid,
                        a->now, &new_deliveries);
}

static store_status_t delete_tx(store_conn_t *conn, const void *arg)
{
    const delete_args_t *a = arg;
    existing_t ex;
    account_keys_t account;
    store_status_t st = find_existing(conn, a->tenant_id, a->id, NULL, &ex);
    if (st == STORE_OK && !ex.found)
        st = STORE_NOT_FOUND;
    if (st == STORE_OK) /* PostgreSQL: locks the account, see the top */
        st = account_of(conn, a->tenant_id, ex.account_id, &account);
    if (st == STORE_OK && conn_is_pg(conn)) {
        /* The row as of the lock: a writer that held it may have changed
         * or deleted it since it was read. */
        char was[STORE_ID_MAX];
        memcpy(was, ex.account_id, sizeof was);
        existing_free(&ex);
        st = find_existing(conn, a->tenant_id, a->id, NULL, &ex);
        if (st == STORE_OK && !ex.found)
            st = STORE_NOT_FOUND;
        if (st == STORE_OK && strcmp(was, ex.account_id) != 0) /* deleted, then made anew */
            st = conn_retry(conn, Q_TX_FIND.name);
    }
    if (st == STORE_OK)
        st = delete_found(conn, a, &ex, &account);
    existing_free(&ex);
    return st;
}

store_status_t store_tx_delete(store_conn_t *conn, const char *tenant_id, const char *id,
                               const char *event_uuid, int64_t now)
{
    delete_args_t args = {tenant_id, id, event_uuid, now};
    return conn_write_locking(conn, delete_tx, &args);
}

/* ---- the transactions of an account ----------------------------------- */

store_status_t store_tx_each_of_account(store_conn_t *conn, const char *account_uuid,
                                        store_tx_each_fn each, void *ctx)
{
    return store_tx_each_of_account_from(conn, account_uuid, INT64_MIN, each, ctx);
}

store_status_t store_tx_each_of_account_from(store_conn_t *conn, const char *account_uuid,
                                             int64_t from_ms, store_tx_each_fn each, void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_TX_OF_ACCOUNT, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, from_ms))
        return conn_bind_failed(conn, &Q_TX_OF_ACCOUNT, stmt);
    store_tx_line_t *lines = NULL;
    size_t count = 0, cap = 0;
    char id[STORE_ID_MAX], type[DOMAIN_TX_TYPE_SIZE];
    int rc, stop = 0;
    while (!stop && (rc = db_step(stmt)) == DB_ROW) {
        if (!column_copy(stmt, 0, id, sizeof id) || !column_copy(stmt, 2, type, sizeof type) ||
            !store_tx_lines_decode(db_column_text(stmt, 3), &lines, &count, &cap)) {
            st = store_bad_row(&Q_TX_OF_ACCOUNT);
            break;
        }
        stop = each(id, db_column_int(stmt, 1), type, lines, count, ctx);
    }
    if (st == STORE_OK && !stop && rc != DB_DONE)
        st = conn_fail(conn, &Q_TX_OF_ACCOUNT, rc);
    stmt_done(stmt);
    free(lines);
    return st;
}

/* ---- batch upsert ----------------------------------------------------- */

/* A batch is the elements' upserts, in index order, inside one write
 * transaction: each element is exactly what upsert_one does for a single
 * upsert, so its outcome and its events (the account's open INVENTORY_UPDATE
 * widened, else one opened) are those of the same writes made one by one.
 *
 * It goes through conn_write, i.e. the group commit, not conn_write_alone:
 * the batch is one job of the queue, run in its own savepoint inside the
 * group's single BEGIN ... COMMIT, so it is still all or nothing and durable
 * in one commit. Writers that queue while it runs are taken in the next
 * group, as they would be behind any write; a batch committing alone on a
 * pooled connection would instead contend with the queue's writer for
 * SQLite's lock (busy-handler sleeps for everyone) and run on a cold page
 * cache. The request's deadline bounds the batch as it bounds a single
 * write. */

typedef struct batch_args {
    const store_tx_write_t *writes;
    size_t n;
    store_tx_result_t *results;
} batch_args_t;

/* PostgreSQL: the batch's accounts locked in key order before its first
 * element, so that two batches (or a batch and a single write) never hold
 * one account each and wait for the other's: each element's account_of
 * then finds its lock held. A batch is one tenant's (the handler's). */
static store_status_t lock_accounts(store_conn_t *conn, const batch_args_t *a)
{
    json_t *ids = json_array();
    for (size_t i = 0; ids != NULL && i < a->n; i++)
        if (json_array_append_new(ids, json_string(a->writes[i].account_id)) != 0) {
            json_decref(ids);
            ids = NULL;
        }
    char *text = ids != NULL ? json_dumps(ids, JSON_COMPACT) : NULL;
    json_decref(ids);
    if (text == NULL)
        return store_bad_argument("tx_accounts_lock (out of memory)");
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_ACCOUNTS_LOCK, a->writes[0].tenant_id, &stmt);
    if (st != STORE_OK) {
        free(text);
        return st;
    }
    if (!bind_text(stmt, 2, text)) {
        free(text);
        return conn_bind_failed(conn, &Q_ACCOUNTS_LOCK, stmt);
    }
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW)
        ; /* each row returned is locked */
    if (rc != DB_DONE)
        st = conn_fail(conn, &Q_ACCOUNTS_LOCK, rc);
    stmt_done(stmt);
    free(text);
    return st;
}

static store_status_t upsert_batch_tx(store_conn_t *conn, const void *arg)
{
    const batch_args_t *a = arg;
    if (conn_is_pg(conn)) {
        store_status_t st = lock_accounts(conn, a);
        if (st != STORE_OK)
            return st;
    }
    for (size_t i = 0; i < a->n; i++) {
        store_status_t st = upsert_one(conn, &a->writes[i], &a->results[i]);
        if (st != STORE_OK)
            return st; /* the whole batch rolls back */
    }
    return STORE_OK;
}

store_status_t store_tx_upsert_batch(store_conn_t *conn, const store_tx_write_t *writes,
                                     size_t n, store_tx_result_t *results)
{
    if (n == 0)
        return STORE_OK;
    batch_args_t args = {writes, n, results};
    return conn_write_locking(conn, upsert_batch_tx, &args);
}
