/* store/transactions.h: transactions by the caller's id, their normalized
 * line items, and what a write must do with them in the same database
 * transaction: mark the account's inventory dirty from the earliest affected
 * datetime, and record (or widen) the account's INVENTORY_UPDATE event in the
 * outbox. */
#ifndef TAXD_STORE_TRANSACTIONS_H
#define TAXD_STORE_TRANSACTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/decimal.h"
#include "store/store.h"

#define STORE_DEC_MAX DEC_TEXT_MAX /* a canonical decimal string */

typedef enum store_line_kind { STORE_LINE_SENT = 0, STORE_LINE_RECEIVED, STORE_LINE_FEE } store_line_kind_t;

typedef struct store_tx_line {
    store_line_kind_t kind;
    char asset[DOMAIN_ASSET_CODE_SIZE];
    char asset_type[DOMAIN_ASSET_TYPE_SIZE]; /* used when the asset is created on first use */
    char new_asset_uuid[STORE_UUID_LEN]; /* the id it gets if it is created */
    char amount[STORE_DEC_MAX];    /* canonical decimal */
    bool has_rate;
    char usd_rate[STORE_DEC_MAX];
} store_tx_line_t;

/* A transaction to write. body is the canonical JSON of the transaction as
 * the API answers it (without uuid and times); resending a transaction whose
 * body is byte-identical changes nothing. */
typedef struct store_tx_write {
    const char *tenant_id;
    const char *id;
    const char *account_id;        /* the caller's account id */
    int64_t datetime_ms;
    const char *type;
    const char *subtype;           /* NULL: none */
    const char *body;
    const store_tx_line_t *lines;
    size_t line_count;
    const char *new_uuid;          /* used when the transaction is created */
    const char *event_uuid;        /* used when a new event is recorded */
    int64_t now;
} store_tx_write_t;

typedef enum store_tx_outcome {
    STORE_TX_CREATED,
    STORE_TX_UPDATED,
    STORE_TX_UNCHANGED,      /* same body: nothing written, no event */
    STORE_TX_NO_ACCOUNT,     /* with STORE_NOT_FOUND */
    STORE_TX_MOVED,          /* with STORE_CONFLICT: the id belongs to another account */
} store_tx_outcome_t;

/* What a write did. */
typedef struct store_tx_result {
    store_tx_outcome_t outcome;    /* CREATED, UPDATED, UNCHANGED, NO_ACCOUNT, MOVED */
    char current_account[STORE_ID_MAX]; /* with MOVED: the account the id belongs to */
    /* With CREATED, UPDATED and UNCHANGED: the stored record's uuid and
     * times as of the commit (its body is the write's). */
    char uuid[STORE_UUID_LEN];
    int64_t created_at, updated_at;
    /* The write opened an event that has deliveries to make: the caller
     * wakes the webhook dispatcher. Widening an open event adds none. */
    bool new_deliveries;
} store_tx_result_t;

/* Creates or updates (last write wins) in one write transaction. NO_ACCOUNT
 * comes with STORE_NOT_FOUND, MOVED with STORE_CONFLICT. Test hook: when
 * pause_ms > 0 the write transaction is held that long before it commits
 * (serialisation tests). */
store_status_t store_tx_upsert(store_conn_t *conn, const store_tx_write_t *w, int pause_ms,
                               store_tx_result_t *result);

/* n writes (an id repeated is applied again, as one by one) in one write
 * transaction, in order, each with every rule of store_tx_upsert. Element
 * outcomes NO_ACCOUNT / MOVED write nothing for that element and do not fail
 * the batch; any storage failure rolls the whole batch back and is returned
 * (results are then meaningless). results has n entries, owned by the
 * caller. */
store_status_t store_tx_upsert_batch(store_conn_t *conn, const store_tx_write_t *writes,
                                     size_t n, store_tx_result_t *results);

/* A stored transaction as the API answers it. body is malloc'd (caller frees). */
typedef struct store_tx {
    char uuid[STORE_UUID_LEN];
    char *body;
    int64_t created_at;
    int64_t updated_at;
} store_tx_t;

store_status_t store_tx_get(store_conn_t *conn, const char *tenant_id, const char *id,
                            store_tx_t *out);

/* Deletes the transaction, marks the inventory dirty and records an
 * INVENTORY_UPDATE without transaction ids. STORE_NOT_FOUND when unknown. */
store_status_t store_tx_delete(store_conn_t *conn, const char *tenant_id, const char *id,
                               const char *event_uuid, int64_t now);

/* The transactions of one account for a recalculation: each(id, datetime,
 * type, lines, count, ctx) per transaction, in datetime order (ties in a
 * stable order of the store's choosing; the engine orders ties by type and
 * id, and checks the order in one pass). A non-zero return stops the walk. */
typedef int (*store_tx_each_fn)(const char *id, int64_t datetime_ms, const char *type,
                                const store_tx_line_t *lines, size_t line_count, void *ctx);
store_status_t store_tx_each_of_account(store_conn_t *conn, const char *account_uuid,
                                        store_tx_each_fn each, void *ctx);
/* The same for the transactions dated at or after from_ms only. */
store_status_t store_tx_each_of_account_from(store_conn_t *conn, const char *account_uuid,
                                             int64_t from_ms, store_tx_each_fn each, void *ctx);

#endif
