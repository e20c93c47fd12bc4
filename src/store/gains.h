/* store/gains.h: the realized gains rows of an account, as the inventory
 * engine stored them: its reliefs of kind 'disposal' (one row per relieved
 * piece of a disposal), each with the type of its asset. Read-only; the
 * rules that turn a row into what the API and the forms answer (covered,
 * 8949 box, warnings, gain_loss) live in gains/gains.h, not here.
 *
 * Order and paging. Reliefs are numbered (seq) in the engine's processing
 * order, which is datetime order, so a period is one range of seq: both
 * readers find the range's ends through inventory_reliefs_datetime (one
 * probe each) and then walk the primary key (account, seq) from the page's
 * start. A page therefore costs the rows it returns (plus the non-disposal
 * reliefs and, with an asset filter, the other assets' rows it passes), the
 * same on the last page of 100,000 disposals as on the first.
 *
 * Strings in a row are borrowed: valid only until the callback returns. */
#ifndef TAXD_STORE_GAINS_H
#define TAXD_STORE_GAINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* after_seq of a first page. */
#define STORE_GAINS_START INT64_C(-1)

typedef struct store_gain {
    int64_t seq;                    /* the relief's processing order (the page key) */
    const char *transaction_id;     /* the caller's id of the disposal */
    const char *asset_code;
    const char *asset_type;         /* "crypto", "fiat", "nft", "security"; NULL: the
                                       asset is no longer known */
    int64_t datetime;               /* of the disposal, ms since the epoch */
    const char *quantity;           /* canonical decimal */
    const char *proceeds;           /* USD, cents; NULL: unknown (no USD value) */
    const char *cost;               /* USD, cents; NULL: unknown (no basis, shortfall) */
    const char *transaction_costs;  /* USD, cents, the piece's share; NULL in rows of
                                       ledgers computed before schema v13 */
    const char *term;               /* "short", "long"; NULL for a shortfall */
    bool has_acquired_at;           /* false for a shortfall */
    int64_t acquired_at;            /* the lot's original acquisition (with has_acquired_at) */
    const char *lot_transaction_id; /* the acquisition's caller id; NULL for a shortfall */
    const char *lot_origin;         /* "acquired", "transfer", "provided"; NULL for a
                                       shortfall (or a ledger from before v13) */
    const char *method;             /* "FIFO", "HIFO", "LIFO", "LOFO", "AUSTRIA"; NULL in
                                       ledgers from before v13 */
} store_gain_t;

/* A row: 0 to go on, non-zero to stop the walk (no failure). */
typedef int (*store_gain_fn)(const store_gain_t *row, void *ctx);

/* One page of the account's gains rows dated in [from_ms, to_ms), of one
 * asset (asset_code NULL: every asset), with seq > after_seq
 * (STORE_GAINS_START for the first page), in seq order: each(row, ctx) for
 * at most limit rows. *more (may be NULL) tells whether a row follows the
 * last one handed over. An unknown account or asset is an empty page. */
store_status_t store_gains_page(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                int64_t to_ms, const char *asset_code, int64_t after_seq,
                                size_t limit, store_gain_fn each, void *ctx, bool *more);

/* Every gains row of the account dated in [from_ms, to_ms), of one asset
 * (NULL: all), in seq order: one read (one statement) over the whole
 * period, for totals, the gains report and the 1099-DA. */
store_status_t store_gains_each(store_conn_t *conn, const char *account_uuid, int64_t from_ms,
                                int64_t to_ms, const char *asset_code, store_gain_fn each,
                                void *ctx);

#endif
