/* store/activity.c: see activity.h. Both reads walk transactions_ledger
 * (account, datetime, type, id, lines); the list's page starts at the
 * cursor's datetime (the index's range), ties at that datetime are
 * filtered by id. */
#include "store/activity.h"

#include <string.h>

#include "core/ids.h"
#include "store/internal.h"

/* ?1 account uuid, ?2 lower datetime (the period's start or the cursor's,
 * whichever is later), ?3 to_ms, ?4 type or NULL, ?5 cursor datetime or
 * NULL, ?6 cursor id, ?7 window. */
static const store_sql_t Q_PAGE = {
    "activity_page",
    "SELECT datetime, id, uuid, body, created_at, updated_at FROM transactions"
    " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1)"
    " AND datetime >= ?2 AND datetime < ?3 AND (type = ?4 OR ?4 IS NULL)"
    " AND (datetime > ?5 OR ?5 IS NULL OR id > ?6)" /* each parameter typed by its first use */
    " ORDER BY datetime, id LIMIT ?7", NULL};

static const store_sql_t Q_INCOME = {
    "activity_income",
    "SELECT id, subtype, lines FROM transactions"
    " WHERE account = (SELECT seq FROM accounts WHERE uuid = ?1)"
    " AND datetime >= ?2 AND datetime < ?3 AND type = 'income' ORDER BY datetime", NULL};

static const char *col(db_stmt_t *stmt, int i)
{
    return db_column_text(stmt, i);
}

static store_status_t tx_decode(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_activity_tx_t *t = record;
    const void *uuid = db_column_blob(stmt, 2, NULL);
    t->datetime = db_column_int(stmt, 0);
    t->id = col(stmt, 1);
    t->body = col(stmt, 3);
    t->created_at = db_column_int(stmt, 4);
    t->updated_at = db_column_int(stmt, 5);
    if (t->id == NULL || t->body == NULL || uuid == NULL ||
        db_column_bytes(stmt, 2) != IDS_UUID_BYTES)
        return store_bad_row(q);
    ids_uuid_format(uuid, t->uuid);
    return STORE_OK;
}

store_status_t store_activity_tx_page(store_conn_t *conn, const char *account_uuid,
                                      int64_t from_ms, int64_t to_ms, const char *type,
                                      int64_t after_datetime, const char *after_id, size_t limit,
                                      int (*each)(const store_activity_tx_t *tx, void *ctx),
                                      void *ctx, bool *more)
{
    db_stmt_t *stmt = NULL;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_PAGE, account_uuid, &stmt);
    if (st == STORE_OK) {
        bool resume = after_id != NULL;
        int64_t lower = resume && after_datetime > from_ms ? after_datetime : from_ms;
        int64_t window = limit < (size_t)INT64_MAX ? (int64_t)limit + 1 : INT64_MAX;
        bool bound = bind_int(stmt, 2, lower) && bind_int(stmt, 3, to_ms) &&
                     bind_text_or_null(stmt, 4, type) &&
                     (resume ? bind_int(stmt, 5, after_datetime)
                             : bind_null(stmt, 5)) &&
                     bind_text_or_null(stmt, 6, after_id) && bind_int(stmt, 7, window);
        if (!bound)
            st = conn_bind_failed(conn, &Q_PAGE, stmt);
    }
    store_page_t page;
    page_start(&page, conn, &Q_PAGE, stmt, limit, st);
    store_activity_tx_t tx;
    while (page_next(&page, tx_decode, &tx))
        if (each(&tx, ctx) != 0)
            break;
    return page_close(&page, more);
}

/* ---- income ---------------------------------------------------------------
 * The lines column (store/transactions.c): lines joined by ';', each its
 * kind ('s', 'r', 'f'), the asset code, a space, the amount and, with a
 * rate, '@' and the USD rate; no field can hold a separator. */

#define FIELD_MAX 128 /* a code (32) or a canonical decimal (117) */

/* Hands each received line of text to each(); -1 for a malformed line. */
static int each_received(const char *text, store_income_line_t *line,
                         int (*each)(const store_income_line_t *line, void *ctx), void *ctx)
{
    while (*text != '\0') {
        const char *end = strchr(text, ';');
        size_t len = end != NULL ? (size_t)(end - text) : strlen(text);
        const char *space = memchr(text, ' ', len);
        if (len < 3 || space == NULL)
            return -1;
        if (text[0] == 'r') {
            const char *at = memchr(space, '@', len - (size_t)(space - text));
            const char *amount_end = at != NULL ? at : text + len;
            char asset[FIELD_MAX], amount[FIELD_MAX], rate[FIELD_MAX];
            size_t na = (size_t)(space - text - 1), nm = (size_t)(amount_end - space - 1);
            size_t nr = at != NULL ? (size_t)(text + len - at - 1) : 0;
            if (na == 0 || na >= FIELD_MAX || nm == 0 || nm >= FIELD_MAX || nr >= FIELD_MAX)
                return -1;
            memcpy(asset, text + 1, na);
            asset[na] = '\0';
            memcpy(amount, space + 1, nm);
            amount[nm] = '\0';
            if (at != NULL) {
                memcpy(rate, at + 1, nr);
                rate[nr] = '\0';
            }
            line->asset = asset;
            line->amount = amount;
            line->usd_rate = at != NULL ? rate : NULL;
            if (each(line, ctx) != 0)
                return 1;
        }
        text += len + (end != NULL);
    }
    return 0;
}

store_status_t store_activity_income(store_conn_t *conn, const char *account_uuid,
                                     int64_t from_ms, int64_t to_ms,
                                     int (*each)(const store_income_line_t *line, void *ctx),
                                     void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_INCOME, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, from_ms) || !bind_int(stmt, 3, to_ms))
        return conn_bind_failed(conn, &Q_INCOME, stmt);
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW) {
        store_income_line_t line = {.transaction_id = col(stmt, 0), .subtype = col(stmt, 1)};
        const char *lines = col(stmt, 2);
        int r = line.transaction_id != NULL && lines != NULL
                    ? each_received(lines, &line, each, ctx)
                    : -1;
        if (r < 0)
            st = store_bad_row(&Q_INCOME);
        if (r != 0)
            break;
    }
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_INCOME, rc);
    stmt_done(stmt);
    return st;
}
