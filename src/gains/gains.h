/* gains: the read-side rules of realized gains, pure (no SQL, no HTTP, no
 * allocation). gains_classify turns one stored gains row (store/gains.h: a
 * relieved piece of a disposal, as the inventory engine wrote it) into what
 * the Gains API, the gains report and the 1099-DA answer: typed decimals,
 * gain_loss = proceeds - cost_basis exactly, the term, covered, the Form
 * 8949 box and the warnings. A breakdown accumulates rows into the
 * short-term / long-term / total lines and one line per 8949 box, each the
 * exact sum of its rows. docs/decisions.md ("Gains (issue 16)") gives the
 * sources of every rule.
 *
 * The rules:
 *  - covered: the lot was acquired in the account (lot_origin 'acquired')
 *    on or after DOMAIN_COVERED_FROM_MS; transfer and provided lots, earlier
 *    lots and shortfalls are noncovered;
 *  - customer_provided_acquisition: the lot is a deposit's lot with a basis
 *    the customer provided (lot_origin 'provided');
 *  - the 8949 box: none under AUSTRIA (never on a US form). A digital asset
 *    (crypto, nft) disposed in a tax year from DOMAIN_1099DA_FIRST_YEAR:
 *    G/J on a 1099-DA with basis reported (covered, proceeds known), H/K on a
 *    1099-DA without basis (noncovered, proceeds known), I/L not on a 1099-DA
 *    (no proceeds known). Any other asset, and a digital asset disposed
 *    before then: A/D (covered, proceeds known), B/E (noncovered, proceeds
 *    known, a security), C/F otherwise (no 1099-B or 1099-DA reports it:
 *    fiat, digital assets before DOMAIN_1099DA_FIRST_YEAR, unknown proceeds).
 *    The first letter of each pair is short term; a row without a term (a
 *    shortfall) is boxed as short term and carries a warning;
 *  - warnings: missing_proceeds (no USD value), insufficient_holdings (a
 *    shortfall: no lot, no basis, no term), missing_cost_basis (a lot
 *    without basis). */
#ifndef TAXD_GAINS_GAINS_H
#define TAXD_GAINS_GAINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/decimal.h"
#include "store/gains.h"

typedef enum gains_status {
    GAINS_OK = 0,
    GAINS_BAD_ROW, /* a stored value is not what the engine writes (not a decimal, ...) */
    GAINS_RANGE,   /* a difference or sum left the decimals' range */
} gains_status_t;

typedef enum gains_term {
    GAINS_TERM_NONE = 0, /* a shortfall: no acquisition */
    GAINS_TERM_SHORT,
    GAINS_TERM_LONG,
} gains_term_t;

/* Warning bits of gains_row_t.warnings, in the order they are answered. */
typedef enum gains_warning {
    GAINS_WARN_MISSING_PROCEEDS = 1u << 0,
    GAINS_WARN_INSUFFICIENT_HOLDINGS = 1u << 1,
    GAINS_WARN_MISSING_COST_BASIS = 1u << 2,
} gains_warning_t;
#define GAINS_WARNING_COUNT 3

/* The 8949 boxes 'A'..'L' as indexes 0..11. */
#define GAINS_BOX_COUNT 12

typedef struct gains_row {
    int64_t seq;
    /* borrowed from the stored row: valid as long as it is */
    const char *transaction_id;
    const char *lot_transaction_id; /* NULL: no lot */
    const char *asset_code;
    const char *asset_type;         /* NULL: unknown */
    const char *method;             /* NULL: not recorded (a ledger from before v13) */
    dec_t quantity;
    bool has_acquired_at;
    int64_t acquired_at;
    int64_t disposed_at;
    int tax_year;                   /* the UTC year of disposed_at */
    bool has_proceeds;
    dec_t proceeds;
    bool has_transaction_costs;
    dec_t transaction_costs;
    bool has_cost_basis;
    dec_t cost_basis;
    bool has_gain_loss;             /* has_proceeds && has_cost_basis */
    dec_t gain_loss;
    gains_term_t term;
    bool covered;
    bool digital;                   /* asset type crypto or nft */
    char form_8949_box;             /* 'A'..'L'; '\0': none (AUSTRIA) */
    bool customer_provided_acquisition;
    unsigned warnings;              /* gains_warning_t bits */
} gains_row_t;

/* Classifies one stored row. GAINS_BAD_ROW when a stored decimal does not
 * parse or the term is not one the engine writes; GAINS_RANGE when
 * proceeds - cost does not fit (beyond the input limits). out is filled on
 * GAINS_OK only. */
gains_status_t gains_classify(const store_gain_t *in, gains_row_t *out);

/* "SHORT", "LONG"; NULL for GAINS_TERM_NONE. */
const char *gains_term_name(gains_term_t term);
/* A warning bit's code ("missing_proceeds") and a message about row (into
 * out, cap bytes; quotes the asset and quantity, never a TIN or secret). */
const char *gains_warning_code(gains_warning_t warning);
void gains_warning_message(gains_warning_t warning, const gains_row_t *row, char *out,
                           size_t cap);

/* The UTC calendar year of an instant (ms since the epoch). */
int gains_year_of(int64_t ms);
/* [Jan 1 of year, Jan 1 of year + 1) in ms, UTC. */
void gains_year_range(int year, int64_t *from_ms, int64_t *to_ms);
/* The instant 00:00:00Z of a date (proleptic Gregorian, any year 1..9999). */
int64_t gains_date_ms(int year, int month, int day);

/* ---- accumulation ---- */

/* One line of totals: the sums over rows whose proceeds and cost basis are
 * both known. */
typedef struct gains_totals {
    dec_t proceeds, cost_basis, gain_loss;
    uint64_t rows; /* rows summed */
} gains_totals_t;

typedef struct gains_breakdown {
    gains_totals_t short_term, long_term, total;
    gains_totals_t box[GAINS_BOX_COUNT]; /* by form_8949_box - 'A' */
    uint64_t box_seen[GAINS_BOX_COUNT];  /* rows boxed there, summed or not */
    uint64_t rows;                       /* every row added */
    uint64_t rows_without_cost_basis, rows_without_proceeds, rows_without_term;
} gains_breakdown_t;

/* An empty breakdown (every sum zero). */
void gains_breakdown_init(gains_breakdown_t *b);
/* Adds a classified row: the counts always; its proceeds, cost basis and
 * gain_loss to short_term or long_term (a row without a term counts as
 * short term, as its box does), to total and to its box when both are known.
 * GAINS_RANGE (b then partly updated: discard it) when a sum leaves the
 * decimals' range. */
gains_status_t gains_breakdown_add(gains_breakdown_t *b, const gains_row_t *row);

#endif
