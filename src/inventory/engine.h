/* inventory engine: lots, cost basis and realised gains for one account,
 * computed from its transactions. It speaks neither HTTP nor SQL: the caller
 * adds transactions (in any order), runs the engine once, and reads the
 * results. Every quantity and amount is an exact dec_t.
 *
 * Order. Transactions are processed in one total order: datetime, then type
 * (deposit, income, trade, withdraw, expense: acquisitions before disposals
 * at the same instant), then id (bytewise). Arrival order never matters, so
 * any permutation of the same transactions gives the same inventory.
 *
 * Values. A line's USD value is its amount when the asset is the reporting
 * currency (USD), else amount x its USD rate when it has one, else unknown.
 * The reporting currency itself is never held as lots.
 *
 * Per type (issue 16; docs/decisions.md "Realized gains: the engine's rules"):
 *  - deposit: received lines become lots without cost basis (origin
 *    transfer), except what the deposit's customer-provided lots cover:
 *    those enter with their basis and their own acquisition date (origin
 *    provided; entered_ms is the deposit's);
 *  - income: received lines become lots whose cost is their USD value (fair
 *    value when received), or without basis when it is unknown;
 *  - trade: sent lines are disposed of, received lines acquired (origin
 *    acquired). Acquisition for cash: cost = the USD given (else received)
 *    plus the fees. Sale for cash: proceeds = the USD received (else the
 *    sent lines' values) minus the fees. Exchange of digital assets (US
 *    methods): proceeds = the value received (else given) minus ALL fees,
 *    transaction_costs = the fees, and the received lot's cost is its value
 *    received (else given) WITHOUT the fees. Fee lines in an asset the trade
 *    receives are disposed of after the acquisition, from the lots this trade
 *    just entered; other fee lines in a tracked asset before the trade's
 *    disposal, by the method. Under AUSTRIA (as before issue 16) a trade of
 *    one tracked asset for another carries the relieved cost plus fees over
 *    and realises nothing, and fees reduce only a sale's proceeds;
 *  - withdraw: sent lines relieve lots without realising anything (a
 *    transfer out); the relieved pieces are recorded as transfer lots;
 *  - expense: sent lines are disposed of at their USD value.
 * Holding period: inv_holding_term (UTC calendar dates).
 *
 * Methods (inv_lot_compare). FIFO: (acquired_ms, seq) ascending; LIFO:
 * descending; HIFO / LOFO: highest / lowest unit cost first, ties by
 * (acquired_ms, seq), lots without basis after every lot with basis in FIFO
 * order. A schedule (inv_engine_set_schedule) picks the method per relief.
 * AUSTRIA keeps one moving-average pool per asset: an acquisition adds its
 * quantity and cost, a disposal relieves quantity x average cost;
 * quantities leave in FIFO order so holding periods and transfer lots stay
 * meaningful.
 *
 * Rounding. Money is rounded to cents, half up (dec_round_cents), exactly
 * here and nowhere else: a lot's cost when it enters (acquisition cost,
 * income value, provided basis, carried cost); a disposal's whole proceeds
 * (after the fee deduction) and whole transaction costs; a line's share of a
 * trade's value split across several sent or received lines; a piece's
 * share of its disposal's proceeds and costs; the cost a partial relief
 * takes from a lot (round(held cost x q / held quantity); AUSTRIA: of the
 * pool). Every split gives its last part the remainder and an emptying
 * relief takes all that is held, so parts add up exactly to their whole.
 * Unit and average costs are derived values at 18 digits, half to even
 * (core/decimal.h); sums are exact.
 *
 * Shortfalls. Relieving more than is held relieves everything held and
 * records the missing quantity as relieved without basis, with a warning.
 *
 * Resuming. A run need not start from the first transaction: an engine may
 * be seeded (inv_engine_seed_*) with the state just before an instant
 * from_ms (every asset touched so far, with its next lot seq and AUSTRIA
 * pool; every lot that still holds something, with what it was acquired
 * with) and then given only the transactions dated at or after from_ms.
 * Processing depends on nothing else (relieved-out lots are skipped, lot
 * order is seq order), so such a run computes, for every transaction from
 * from_ms on, exactly what the whole run computes. Where that state comes
 * from is the caller's business (recalc.c rebuilds it from the stored
 * ledger); its results are the same numbers as a whole run's: reliefs from
 * from_ms on, every asset's summary, and each asset's ledger of the lots the
 * engine holds (the seeded and the new ones). */
#ifndef TAXD_INVENTORY_ENGINE_H
#define TAXD_INVENTORY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/decimal.h"
#include "core/domain.h"

typedef struct inv_line {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    dec_t amount;     /* > 0 */
    bool has_rate;
    dec_t usd_rate;   /* USD per unit, when has_rate */
} inv_line_t;

/* A line's value in the reporting currency (DOMAIN_REPORTING_CURRENCY): its
 * amount when that is its asset, else amount x usd_rate when it has a rate.
 * false when the value is unknown (no rate); otherwise *st is the product's
 * status (DEC_OK, or the overflow that makes *value unusable). */
bool inv_line_value(const inv_line_t *line, dec_t *value, dec_status_t *st);

/* A customer-provided lot of a deposit: part of a received line of asset,
 * acquired elsewhere at acquired_ms for cost (USD). */
typedef struct inv_provided_lot {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    dec_t quantity;   /* > 0 */
    dec_t cost;       /* >= 0 */
    int64_t acquired_ms;
} inv_provided_lot_t;

typedef struct inv_tx {
    char id[DOMAIN_ID_SIZE];
    int64_t datetime_ms;
    domain_tx_type_t type;
    const inv_line_t *sent, *received, *fees; /* copied by inv_engine_add */
    size_t sent_count, received_count, fee_count;
    const inv_provided_lot_t *provided;       /* deposits only; copied by inv_engine_add */
    size_t provided_count;
} inv_tx_t;

typedef enum inv_term { INV_SHORT_TERM, INV_LONG_TERM } inv_term_t;

/* Where a lot came from: acquired in the account (a trade or income),
 * transferred in without basis (a deposit), or a deposit's
 * customer-provided lot (with basis and its original acquisition date). */
typedef enum inv_lot_origin {
    INV_LOT_ACQUIRED,
    INV_LOT_TRANSFER,
    INV_LOT_PROVIDED,
} inv_lot_origin_t;

/* The names the store keeps ("acquired", "transfer", "provided"); "" for a
 * value outside the enum. A parse answers false (out untouched) for any
 * other name or NULL. */
const char *inv_lot_origin_name(inv_lot_origin_t origin);
bool inv_lot_origin_parse(const char *name, inv_lot_origin_t *out);

/* A lot: what it still holds, and what it was acquired with. */
typedef struct inv_lot {
    const char *tx_id;     /* the acquiring transaction (owned by the engine) */
    int64_t acquired_ms;   /* the original acquisition (a provided lot: its own date) */
    int64_t entered_ms;    /* the datetime of the transaction that entered it */
    inv_lot_origin_t origin;
    size_t seq;            /* entry index within the asset, from 0 over the whole history */
    dec_t quantity;        /* held (zero once relieved out) */
    bool has_basis;
    dec_t cost;            /* held cost, when has_basis (AUSTRIA: its share of the pool) */
    dec_t orig_quantity;   /* as acquired */
    dec_t orig_cost;       /* as acquired, when has_basis */
} inv_lot_t;

/* < 0 when method relieves lot a before lot b, > 0 after, 0 for the same
 * lot (equal acquired_ms and seq). FIFO: (acquired_ms, seq) ascending; LIFO:
 * descending; HIFO: lots with basis first, highest unit cost
 * (orig_cost / orig_quantity, 18 digits) first; LOFO: lots with basis first,
 * lowest unit cost first; under HIFO and LOFO equal unit costs and the lots
 * without basis go by (acquired_ms, seq) ascending. AUSTRIA: as FIFO. */
int inv_lot_compare(domain_method_t method, const inv_lot_t *a, const inv_lot_t *b);

/* Per asset, after the run. average_unit_cost = total_cost /
 * total_quantity_with_basis, absent when that quantity is zero. */
typedef struct inv_summary {
    const char *asset;
    dec_t total_quantity;
    dec_t total_cost;
    dec_t quantity_with_basis;
    bool has_average;
    dec_t average_unit_cost;
    size_t lot_count;
    const inv_lot_t *lots; /* the lots held, acquisition order */
    int64_t since_ms;      /* the datetime the asset was first touched */
    size_t ledger_count;
    const inv_lot_t *ledger; /* every lot this run held, relieved out or not, in seq order */
} inv_summary_t;

typedef enum inv_relief_kind {
    INV_RELIEF_DISPOSAL, /* realised: proceeds and gain */
    INV_RELIEF_TRANSFER, /* withdraw: nothing realised, recorded as transfer lots */
    INV_RELIEF_CARRY,    /* AUSTRIA crypto-to-crypto: cost carried over, nothing realised */
} inv_relief_kind_t;

/* The names the store keeps for relief kinds ("disposal", "transfer",
 * "carry") and terms ("short", "long"). A parse answers false (out
 * untouched) for any other name. */
const char *inv_relief_kind_name(inv_relief_kind_t kind);
bool inv_relief_kind_parse(const char *name, inv_relief_kind_t *out);
const char *inv_term_name(inv_term_t term);
/* The holding period by UTC calendar dates (IRC 1222; Rev. Rul. 66-7): long
 * term when the disposal's date is after the acquisition's date one year
 * later (Feb 29's is Feb 28 of the next year), else short term. */
inv_term_t inv_holding_term(int64_t acquired_ms, int64_t disposed_ms);
bool inv_term_parse(const char *name, inv_term_t *out);

/* One piece of a relief: a part of one lot (or of the shortfall). */
typedef struct inv_relief {
    inv_relief_kind_t kind;
    const char *tx_id;          /* the disposing or withdrawing transaction */
    const char *asset;
    int64_t datetime_ms;        /* of the relief */
    const char *lot_tx_id;      /* the acquiring transaction; NULL for a shortfall */
    int64_t acquired_ms;        /* 0 for a shortfall */
    size_t lot_seq;             /* the lot's seq; 0 for a shortfall */
    dec_t quantity;
    bool has_basis;
    dec_t cost;
    /* INV_RELIEF_DISPOSAL only */
    bool has_proceeds;
    dec_t proceeds;             /* this piece's share of the proceeds */
    inv_term_t term;
    domain_method_t method;     /* the method in force at datetime_ms (AUSTRIA: AUSTRIA) */
    inv_lot_origin_t lot_origin;/* the lot's origin; meaningless for a shortfall (lot_tx_id NULL) */
    bool has_costs;             /* INV_RELIEF_DISPOSAL: always */
    dec_t transaction_costs;    /* this piece's share of the disposal's costs (cents) */
} inv_relief_t;

typedef struct inv_engine inv_engine_t;

/* NULL on allocation failure. */
inv_engine_t *inv_engine_new(domain_method_t method);
void inv_engine_free(inv_engine_t *engine);

/* A disposition method change: method applies to reliefs dated at or after
 * effective_ms (until the next change). */
typedef struct inv_method_change {
    int64_t effective_ms;
    domain_method_t method; /* FIFO, HIFO, LIFO or LOFO */
} inv_method_change_t;

/* The method schedule, before any seeding or inv_engine_add: changes (copied) sorted by
 * strictly increasing effective_ms; the engine's own method (inv_engine_new)
 * applies before the first. A relief uses the change with the greatest
 * effective_ms <= its transaction's datetime. An AUSTRIA engine keeps
 * AUSTRIA for the whole history (its pool is one rule) and refuses a
 * schedule. Returns -1 on allocation failure, unsorted changes, AUSTRIA in
 * a change or on the engine, or transactions already added. */
int inv_engine_set_schedule(inv_engine_t *engine, const inv_method_change_t *changes, size_t n);

/* Copies tx and its lines. Returns 0, or -1 on allocation failure, a line
 * with a non-positive amount, or a transaction dated before the start
 * (inv_engine_start_at). */
int inv_engine_add(inv_engine_t *engine, const inv_tx_t *tx);

/* Seeding, before any inv_engine_add (see Resuming above). */
typedef struct inv_seed_asset {
    const char *asset;      /* copied */
    int64_t since_ms;
    size_t next_seq;        /* the seq the asset's next acquisition gets */
    dec_t pool_quantity;    /* AUSTRIA: the pool just before from_ms */
    dec_t pool_cost;
} inv_seed_asset_t;

/* Only transactions dated at or after from_ms may be added. Returns -1 when
 * transactions were already added. */
int inv_engine_start_at(inv_engine_t *engine, int64_t from_ms);
/* Returns -1 on allocation failure or an asset seeded twice. */
int inv_engine_seed_asset(inv_engine_t *engine, const inv_seed_asset_t *seed);
/* A lot of a seeded asset holding quantity (> 0) and, under FIFO and HIFO,
 * cost just before from_ms (under AUSTRIA cost is ignored: the pool holds
 * it). Lots of an asset come in increasing seq below its next_seq; tx_id is
 * copied. Returns -1 otherwise or on allocation failure. */
int inv_engine_seed_lot(inv_engine_t *engine, const char *asset, const inv_lot_t *lot);

/* Sorts and processes everything added. Returns DEC_OK, or the status of an
 * arithmetic failure (a total beyond 20 integer digits) with *failed_tx set
 * to the id of the transaction it happened in. Runs once per engine. */
dec_status_t inv_engine_run(inv_engine_t *engine, const char **failed_tx);

size_t inv_summary_count(const inv_engine_t *engine);
/* Summaries in asset-code order. */
const inv_summary_t *inv_summary(const inv_engine_t *engine, size_t index);
const inv_summary_t *inv_summary_of(const inv_engine_t *engine, const char *asset);

/* Every relief in processing order (disposals, fee disposals, transfers). */
size_t inv_relief_count(const inv_engine_t *engine);
const inv_relief_t *inv_relief(const inv_engine_t *engine, size_t index);

/* True when some relief of this run had a shortfall (relieved more than was
 * held); a resumed run knows only its own reliefs. */
bool inv_engine_had_shortfall(const inv_engine_t *engine);

#endif
