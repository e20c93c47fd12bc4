/* store/lots.h: the lookups the transfer-lots endpoint needs beyond
 * store/inventory.h. A transfer lot is addressed by the caller's transaction
 * id alone, so the handler must first learn which account (and which type)
 * that transaction has before it can refresh and read the account's
 * inventory. Results are copied into caller-owned structs. */
#ifndef TAXD_STORE_LOTS_H
#define TAXD_STORE_LOTS_H

#include "store/store.h"


typedef struct store_lots_tx {
    char type[DOMAIN_TX_TYPE_SIZE];
    char account_id[STORE_ID_MAX]; /* the caller id of the account it belongs to */
} store_lots_tx_t;

/* The type and account of the transaction with the caller id transaction_id
 * in the tenant. STORE_NOT_FOUND when the tenant has no such transaction. */
store_status_t store_lots_tx_account(store_conn_t *conn, const char *tenant_id,
                                     const char *transaction_id, store_lots_tx_t *out);

#endif
