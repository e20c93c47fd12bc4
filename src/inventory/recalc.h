/* recalc: keeps an account's stored inventory in step with its transactions.
 * Writes only lower the account's dirty watermark (store/transactions.c);
 * the recalculation is lazy and runs before any read of that account's
 * inventory, so every read reflects every acknowledged write, and a bulk load
 * with no reads in between costs one recalculation, O(N log N).
 *
 * This is the one place where the engine (which knows neither HTTP nor SQL)
 * meets the store: transactions in, results out. The engine recomputes the
 * account from its first transaction; the watermark says the results are
 * stale and where the affected range starts (the INVENTORY_UPDATE event
 * reports it), it does not yet let the run start there. */
#ifndef TAXD_INVENTORY_RECALC_H
#define TAXD_INVENTORY_RECALC_H

#include "core/decimal.h"
#include "inventory/engine.h"
#include "store/inventory.h"
#include "store/transactions.h"

typedef struct recalc_result {
    store_status_t store;      /* STORE_OK unless the database failed */
    dec_status_t arithmetic;   /* DEC_OK unless a total left the supported range */
    char failed_tx[STORE_ID_MAX]; /* with arithmetic != DEC_OK */
} recalc_result_t;

/* Recalculates the account when it is dirty (a clean account costs nothing).
 * On success the stored summaries, lots and reliefs are current. */
recalc_result_t inventory_refresh(store_conn_t *conn, const store_inv_account_t *account);

/* One stored transaction (store_tx_each_of_account's row) as the engine's
 * inv_tx_t: the count lines are converted into buf (caller-owned, at least
 * count entries), grouped sent, received, fees; *out points into buf and
 * borrows id. False for a type, id or line that does not convert. Shared by
 * the recalculation and the tax forms, so both read transactions alike. */
bool inventory_tx_from_store(const char *id, int64_t datetime_ms, const char *type,
                             const store_tx_line_t *lines, size_t count, inv_line_t *buf,
                             inv_tx_t *out);

#endif
