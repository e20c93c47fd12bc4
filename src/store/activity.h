/* store/activity.h: an account's own transactions as a list (by datetime,
 * then the caller's id; keyset-paged) and the received lines of its income
 * transactions over a period (the income aggregate's input). Reads only;
 * strings handed to a callback are borrowed until it returns. */
#ifndef TAXD_STORE_ACTIVITY_H
#define TAXD_STORE_ACTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct store_activity_tx {
    int64_t datetime;
    const char *id;             /* the caller's id */
    char uuid[STORE_UUID_LEN];
    const char *body;           /* the stored canonical document (store_tx_get's body) */
    int64_t created_at, updated_at;
} store_activity_tx_t;

/* A page of the account's transactions dated in [from_ms, to_ms), of one
 * type (NULL: all), ordered by datetime then id, strictly after the key
 * (after_datetime, after_id) (after_id NULL: from the first): each(tx, ctx)
 * for at most limit rows; *more whether a row follows. The page starts at
 * the key through transactions_ledger (account, datetime, ...), so a late
 * page costs what an early one does. */
store_status_t store_activity_tx_page(store_conn_t *conn, const char *account_uuid,
                                      int64_t from_ms, int64_t to_ms, const char *type,
                                      int64_t after_datetime, const char *after_id, size_t limit,
                                      int (*each)(const store_activity_tx_t *tx, void *ctx),
                                      void *ctx, bool *more);

/* One received line of an income transaction. */
typedef struct store_income_line {
    const char *transaction_id;
    const char *subtype;  /* NULL: none */
    const char *asset;
    const char *amount;   /* canonical decimal */
    const char *usd_rate; /* USD per unit; NULL: no USD value given */
} store_income_line_t;

/* Every received line of the account's transactions of type income dated
 * in [from_ms, to_ms), in datetime order. */
store_status_t store_activity_income(store_conn_t *conn, const char *account_uuid,
                                     int64_t from_ms, int64_t to_ms,
                                     int (*each)(const store_income_line_t *line, void *ctx),
                                     void *ctx);

#endif
