/* store/provided_lots.h: the customer-provided lots of a deposit (transfer
 * lots): per asset the deposit received, lots with a quantity, a cost basis
 * and their original acquisition datetime, which the inventory relieves like
 * any lot (origin 'provided'). A write replaces the lots of the assets it
 * names, or clears them all, and lowers the account's dirty watermark to the
 * deposit's datetime in the same write transaction. An edit or delete of the
 * deposit drops its lots (store/transactions.c). The rules that need the
 * stored deposit are decided by the caller's check inside that transaction,
 * so an edit racing the write cannot leave lots that no longer fit it. The
 * recalculation reads them with store_provided_lots_of_account. */
#ifndef TAXD_STORE_PROVIDED_LOTS_H
#define TAXD_STORE_PROVIDED_LOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/decimal.h"
#include "store/store.h"

typedef struct store_provided_lot {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    char quantity[DEC_TEXT_MAX];   /* canonical decimal, > 0 */
    char cost_basis[DEC_TEXT_MAX]; /* canonical decimal, >= 0, USD */
    int64_t acquired_at;
} store_provided_lot_t;

/* What a received line of the deposit holds: the asset and its amount. */
typedef struct store_deposit_line {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    char amount[DEC_TEXT_MAX];
} store_deposit_line_t;

/* The stored transaction a write is about, as its check sees it. lines are
 * its received lines only, borrowed for the check's call. */
typedef struct store_deposit {
    char type[DOMAIN_TX_TYPE_SIZE];
    char account_id[STORE_ID_MAX];
    int64_t datetime_ms;
    const store_deposit_line_t *received;
    size_t received_count;
} store_deposit_t;

/* Decides, inside the write transaction, whether the write may proceed;
 * false refuses it (nothing is written: STORE_CONFLICT). Must be quick and
 * must not touch the database. */
typedef bool (*store_deposit_check_fn)(const store_deposit_t *deposit, void *ctx);

/* Replaces, for each asset named in lots[0..n), the provided lots of the
 * transaction with caller id transaction_id (lots of one asset keep the
 * order given). n == 0 clears every lot of the transaction. STORE_NOT_FOUND
 * for an unknown transaction; STORE_CONFLICT when check refused. */
store_status_t store_provided_lots_set(store_conn_t *conn, const char *tenant_id,
                                       const char *transaction_id,
                                       const store_provided_lot_t *lots, size_t n,
                                       store_deposit_check_fn check, void *ctx);

/* The deposit (type, account, datetime, received lines) and its provided
 * lots: deposit(..) once, then lot(lot, ctx) per lot in (asset, idx) order;
 * both borrowed for the call; a non-zero return of lot stops. STORE_NOT_FOUND
 * for an unknown transaction. */
store_status_t store_provided_lots_get(store_conn_t *conn, const char *tenant_id,
                                       const char *transaction_id,
                                       void (*deposit)(const store_deposit_t *dep, void *ctx),
                                       int (*lot)(const store_provided_lot_t *lot, void *ctx),
                                       void *ctx);

/* For the recalculation: the provided lots of the account's (service uuid)
 * deposits dated at or after from_ms, in (transaction, asset, idx) order:
 * each(transaction_id (the caller's), asset, quantity, cost_basis,
 * acquired_at, ctx), strings borrowed for the call; a non-zero return stops
 * the walk. */
typedef int (*store_provided_lot_each_fn)(const char *transaction_id, const char *asset,
                                          const char *quantity, const char *cost_basis,
                                          int64_t acquired_at, void *ctx);
store_status_t store_provided_lots_of_account(store_conn_t *conn, const char *account_uuid,
                                              int64_t from_ms, store_provided_lot_each_fn each,
                                              void *ctx);

#endif
