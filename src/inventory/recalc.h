/* recalc: keeps an account's stored inventory in step with its transactions.
 * Writes only lower the account's dirty watermark (store/transactions.c);
 * the recalculation is lazy and runs before any read of that account's
 * inventory, so every read reflects every acknowledged write, and a bulk load
 * with no reads in between costs one recalculation, O(N log N).
 *
 * This is the one place where the engine (which knows neither HTTP nor SQL)
 * meets the store: transactions in, results out.
 *
 * From the watermark W. Nothing dated before W changed since the stored
 * results were saved (every write lowers W to the earliest datetime it
 * touched, old or new), so the engine's run up to the first transaction AT
 * W (inclusive: ties at W are recomputed) is what was saved. The stored rows
 * are a ledger from which the engine's state there is rebuilt exactly:
 *  - each lot acquired before W that holds something at W: its stored
 *    holding plus what every relief dated at or after W took from it (each
 *    relief names its lot by seq); sums and differences of exact decimals
 *    undo exactly what the run did;
 *  - under AUSTRIA each pool: the stored totals, minus the lots acquired from
 *    W on, plus the reliefs with basis from W on;
 *  - per asset touched before W, the seq of its next lot; the seq of the
 *    first relief from W on.
 * The engine is seeded with that state and given only the transactions from
 * W on; the save deletes the reliefs and lots from W on and writes the
 * recomputed ones, the summaries, and the earlier lots whose holding
 * changed; rows before W are not rewritten. The property test
 * (tests/unit/test_recalc.c) checks the result against a run from the first
 * transaction, row for row. The run starts from the first transaction
 * instead whenever the rows cannot be trusted: a ledger written before
 * migration v7 or under another method (accounts.inventory_basis), a row
 * that does not parse or does not fit (a relief naming a lot that is not
 * there, a lot that would hold nothing), or a resumed save that fails.
 *
 * Concurrency. An attempt reads the mark, the ledger and the transactions in
 * one snapshot (store_read), computes outside it, and saves only if the
 * account's inventory_version is still the one it read (else the store
 * writes nothing). A refused attempt is retried; the last attempt reads,
 * computes and saves inside one write transaction, so a busy account still
 * gets a fresh answer. The stored rows are therefore always exactly the
 * results of one version of the account's transactions. */
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

/* Why the account's inventory cannot be computed (r->arithmetic != DEC_OK),
 * in the words the inventory routes answer after "Inventory cannot be
 * computed: " (409) and the reports log: "a total at transaction '<id>'
 * exceeds the supported range". Within the input limits of core/domain.h
 * this cannot happen (docs/decisions.md, Amounts and the range of totals);
 * only rows written past them (a damaged or hand-edited database) can. */
void recalc_describe_failure(const recalc_result_t *r, char *out, size_t cap);

/* Recalculates the account when it is dirty (a clean account costs nothing).
 * On success the stored summaries, lots and reliefs are current. */
recalc_result_t inventory_refresh(store_conn_t *conn, const store_inv_account_t *account);

/* The bulk recalculation (`taxd admin inventory recalc`, after an import or
 * a backfill): every dirty account of the tenant (NULL: of every tenant),
 * in account key order, `batch` accounts per write transaction on conn (0:
 * a default). A reader thread on its own connection of store reads each
 * account in one snapshot and computes it while the caller's thread saves
 * the accounts before it (and a third thread, on a connection of its own,
 * checkpoints the WAL after each commit); a save is refused, as the lazy path's optimistic
 * save is, when the account was written since it was read (inventory_version),
 * and the account is then read, computed and saved again inside the batch's
 * write transaction. So an account's watermark is cleared only with results
 * of the version they were computed from; a write that lands after its
 * account was saved leaves it dirty for the lazy path. A few accounts'
 * transactions are in memory at a time, whatever the number of accounts.
 * An account whose arithmetic fails stays dirty and is counted in `failed`;
 * a batch whose write fails is rolled back and its accounts are
 * recalculated one by one through inventory_refresh (which may start over
 * from the first transaction).
 *
 * between (may be NULL) is called on the caller's thread after each
 * committed batch with the accounts done so far (tests write in the middle
 * of a run with it). */
typedef struct recalc_all_result {
    store_status_t store;   /* STORE_OK unless the database failed */
    size_t accounts;        /* accounts recalculated */
    size_t transactions;    /* transactions those runs read */
    size_t failed;          /* accounts left dirty by an arithmetic failure */
    /* where the time went, per thread: the reader's reads (inputs in their
     * snapshot) and computations, the writer's saves (with the redone
     * accounts, excluding commits), in microseconds of the monotonic clock */
    int64_t read_us, compute_us, save_us;
} recalc_all_result_t;

recalc_all_result_t inventory_recalc_all(store_t *store, store_conn_t *conn, const char *tenant_id,
                                         size_t batch, void (*between)(size_t done, void *ctx),
                                         void *ctx);

/* One stored transaction (store_tx_each_of_account's row) as the engine's
 * inv_tx_t: the count lines are converted into buf (caller-owned, at least
 * count entries), grouped sent, received, fees; *out points into buf and
 * borrows id. False for a type, id or line that does not convert. Shared by
 * the recalculation and the tax forms, so both read transactions alike. */
bool inventory_tx_from_store(const char *id, int64_t datetime_ms, const char *type,
                             const store_tx_line_t *lines, size_t count, inv_line_t *buf,
                             inv_tx_t *out);

#endif
