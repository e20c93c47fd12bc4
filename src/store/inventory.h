/* store/inventory.h: the computed inventory of each account (summaries per
 * asset, its lot ledger, every relief) and the account's dirty watermark.
 *
 * The ledger: every lot ever entered, in entry order per asset (seq), with
 * what it was acquired with and what it still holds ('0' once fully
 * relieved; the reads of held lots leave those out); every relief names the
 * lot it took from. A lot's entered_at is the datetime of the transaction
 * that entered it (a customer-provided lot's acquired_at is earlier: its
 * original acquisition), so the ledger splits on entered_at. A save
 * replaces the summaries and only the tail from a datetime on (reliefs
 * dated and lots entered at or after it, plus the earlier lots whose
 * holding changed), and only when no write happened since
 * the recalculation read its inputs (inventory_version unchanged): a stale
 * computation is refused whole, so the stored rows are always exactly the
 * results of one version of the account's transactions, and the watermark
 * is cleared in the same transaction. The store knows nothing of how the
 * rows are computed. Row strings are borrowed: they must live until the call
 * returns (save) or the callback returns (reads). */
#ifndef TAXD_STORE_INVENTORY_H
#define TAXD_STORE_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct store_inv_account {
    char uuid[STORE_UUID_LEN];
    char id[STORE_ID_MAX];
    char method[DOMAIN_METHOD_SIZE]; /* a name of DOMAIN_METHOD_NAMES */
    int64_t austria_tax_year; /* 0 = none */
    bool dirty;
    int64_t dirty_from;       /* when dirty */
    int64_t version;
} store_inv_account_t;

typedef struct store_inv_summary {
    const char *asset;
    int64_t since;                 /* the datetime the asset was first touched */
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
    const char *orig_quantity;     /* as acquired; NULL in rows from before the ledger */
    const char *orig_cost;         /* as acquired; NULL: no basis (or no ledger) */
    const char *origin;            /* acquired, transfer, provided; NULL in rows from before v13 */
    int64_t entered_at;            /* the entering transaction's datetime (before v13: acquired_at) */
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
    int64_t lot_seq;               /* the lot's seq; -1 for a shortfall (or no ledger) */
    const char *method;            /* FIFO, HIFO, LIFO, LOFO, AUSTRIA; NULL before v13 */
    const char *lot_origin;        /* the lot's origin; NULL for a shortfall (or before v13) */
    const char *transaction_costs; /* a disposal's share of its costs, cents; NULL otherwise */
} store_inv_relief_t;

/* What a recalculation must read in the same snapshot as its inputs. */
typedef struct store_inv_mark {
    bool dirty;
    int64_t dirty_from;       /* when dirty */
    int64_t version;
    char method[DOMAIN_METHOD_SIZE]; /* the account's method now */
    char basis[DOMAIN_METHOD_SIZE];  /* the method of the stored ledger; "" when it has none */
} store_inv_mark_t;

/* An asset the ledger touched before a datetime, with its totals after the
 * last save and the seq its next lot entered at or after that datetime has. */
typedef struct store_inv_asset {
    const char *asset;
    int64_t since;
    const char *total_cost, *quantity_with_basis;
    int64_t next_lot_seq;
} store_inv_asset_t;

/* The account (by caller id within the tenant) with its method and watermark. */
store_status_t store_inv_account(store_conn_t *conn, const char *tenant_id, const char *account_id,
                                 store_inv_account_t *out);

/* Every account of the tenant that is dirty: each(account_uuid, ctx). */
store_status_t store_inv_dirty_accounts(store_conn_t *conn, const char *tenant_id,
                                        int (*each)(const char *account_uuid, void *ctx),
                                        void *ctx);

/* Dirty accounts for a bulk recalculation (`taxd admin inventory recalc`):
 * each(account_uuid, ctx) for at most limit accounts whose watermark is set,
 * in account key order, strictly after `after` ("" or NULL: from the first),
 * of the tenant (NULL: of every tenant). A caller walks every dirty account
 * in pages by passing the last key it was given; pages visit the accounts in
 * the order their inventory rows are keyed, so the rows a bulk run writes are
 * appended rather than scattered (by seq, the inventory's account key; the
 * cursor is still the last account's uuid). The one place this listing's
 * SQL lives. */
store_status_t store_inv_dirty_page(store_conn_t *conn, const char *tenant_id, const char *after,
                                    size_t limit,
                                    int (*each)(const char *account_uuid, void *ctx), void *ctx);

/* The rows a save writes. from_ms: the tail starts there (INT64_MIN: the
 * whole ledger is replaced); basis: the method they were computed with. */
typedef struct store_inv_save {
    const char *account_uuid;
    int64_t version;
    int64_t from_ms;
    const char *basis;
    const store_inv_summary_t *summaries; /* every asset: the summaries are replaced */
    size_t summary_count;
    const store_inv_lot_t *lots;     /* every lot entered at or after from_ms, and earlier */
    size_t lot_count;                /* lots whose holding changed (replaced by seq) */
    const store_inv_relief_t *reliefs; /* every relief dated at or after from_ms */
    size_t relief_count;
} store_inv_save_t;

/* Writes the rows and clears the watermark when the account's
 * inventory_version still equals save->version. When it does not (a write
 * came in since the inputs were read) nothing is written, *stale is set and
 * STORE_CONFLICT returned. */
store_status_t store_inv_save(store_conn_t *conn, const store_inv_save_t *save, bool *stale);
/* The same inside a write transaction the caller runs (store_write). */
store_status_t store_inv_save_in_tx(store_conn_t *conn, const store_inv_save_t *save,
                                    bool *stale);

/* The account's watermark, version, method and ledger basis by uuid. */
store_status_t store_inv_mark(store_conn_t *conn, const char *account_uuid, store_inv_mark_t *out);

/* Every asset with a summary whose since is before from_ms. */
store_status_t store_inv_assets_before(store_conn_t *conn, const char *account_uuid,
                                       int64_t from_ms,
                                       int (*each)(const store_inv_asset_t *row, void *ctx),
                                       void *ctx);
/* Lots entered before from_ms that still hold something, or that a relief
 * dated at or after from_ms took from; by asset, then seq. */
store_status_t store_inv_lots_open_at(store_conn_t *conn, const char *account_uuid,
                                      int64_t from_ms,
                                      int (*each)(const store_inv_lot_t *row, void *ctx),
                                      void *ctx);
/* Lots entered at or after from_ms, held or not; by asset, then seq. */
store_status_t store_inv_lots_from(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                   int (*each)(const store_inv_lot_t *row, void *ctx), void *ctx);
/* The seq the first relief dated at or after from_ms has (the count before). */
store_status_t store_inv_relief_base(store_conn_t *conn, const char *account_uuid,
                                     int64_t from_ms, int64_t *base);

store_status_t store_inv_summaries(store_conn_t *conn, const char *account_uuid,
                                   int (*each)(const store_inv_summary_t *row, void *ctx),
                                   void *ctx);
/* The lots of the asset that still hold something, in entry order (seq). */
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
