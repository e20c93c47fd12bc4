/* store/inventory.h: the computed inventory of each account (summaries per
 * asset, the lots still held, every relief) and the account's dirty
 * watermark. Results are replaced whole per account by a recalculation; the
 * watermark is cleared only when no write happened since the recalculation
 * read the transactions (inventory_version unchanged), so an acknowledged
 * write is never hidden by a stale result. Row strings are borrowed: they
 * must live until the call returns (save) or the callback returns (reads). */
#ifndef TAXD_STORE_INVENTORY_H
#define TAXD_STORE_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct store_inv_account {
    char uuid[STORE_UUID_LEN];
    char id[STORE_ID_MAX];
    char method[16];          /* FIFO, HIFO, AUSTRIA */
    int64_t austria_tax_year; /* 0 = none */
    bool dirty;
    int64_t dirty_from;       /* when dirty */
    int64_t version;
} store_inv_account_t;

typedef struct store_inv_summary {
    const char *asset;
    const char *total_quantity, *total_cost, *quantity_with_basis;
    const char *average_unit_cost; /* NULL: none */
} store_inv_summary_t;

typedef struct store_inv_lot {
    const char *asset;
    int64_t seq;
    const char *transaction_id;
    int64_t acquired_at;
    const char *quantity;
    const char *cost;              /* NULL: no basis */
} store_inv_lot_t;

typedef struct store_inv_relief {
    int64_t seq;
    const char *transaction_id;
    const char *asset;
    const char *kind;              /* disposal, transfer, carry */
    int64_t datetime;
    const char *lot_transaction_id;/* NULL: a shortfall */
    int64_t acquired_at;
    const char *quantity;
    const char *cost;              /* NULL: no basis */
    const char *proceeds;          /* NULL: none */
    const char *term;              /* short, long; NULL for a shortfall */
} store_inv_relief_t;

/* The account (by caller id within the tenant) with its method and watermark. */
store_status_t store_inv_account(store_conn_t *conn, const char *tenant_id, const char *account_id,
                                 store_inv_account_t *out);

/* Every account of the tenant that is dirty: each(account_uuid, ctx). */
store_status_t store_inv_dirty_accounts(store_conn_t *conn, const char *tenant_id,
                                        int (*each)(const char *account_uuid, void *ctx),
                                        void *ctx);

/* Replaces the account's results; clears the watermark when the account's
 * inventory_version still equals version. */
store_status_t store_inv_save(store_conn_t *conn, const char *account_uuid, int64_t version,
                              const store_inv_summary_t *summaries, size_t summary_count,
                              const store_inv_lot_t *lots, size_t lot_count,
                              const store_inv_relief_t *reliefs, size_t relief_count);

store_status_t store_inv_summaries(store_conn_t *conn, const char *account_uuid,
                                   int (*each)(const store_inv_summary_t *row, void *ctx),
                                   void *ctx);
store_status_t store_inv_lots(store_conn_t *conn, const char *account_uuid, const char *asset,
                              int (*each)(const store_inv_lot_t *row, void *ctx), void *ctx);
/* The reliefs a transaction caused, in order. */
store_status_t store_inv_reliefs_of(store_conn_t *conn, const char *account_uuid,
                                    const char *transaction_id,
                                    int (*each)(const store_inv_relief_t *row, void *ctx),
                                    void *ctx);
/* The reliefs dated in [from_ms, to_ms), in order. */
store_status_t store_inv_reliefs_between(store_conn_t *conn, const char *account_uuid,
                                         int64_t from_ms, int64_t to_ms,
                                         int (*each)(const store_inv_relief_t *row, void *ctx),
                                         void *ctx);

#endif
