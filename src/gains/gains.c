/* gains: see gains.h. Every decision about a row is made here once, so the
 * API, the gains report and the 1099-DA cannot disagree about a box or a
 * warning. */
#include "gains/gains.h"

#include <stdio.h>
#include <string.h>

#include "core/domain.h"

#define MS_PER_DAY INT64_C(86400000)

/* ---- calendar (proleptic Gregorian, UTC; Howard Hinnant's algorithms) --- */

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int year_from_days(int64_t z)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    return (int)(yoe + era * 400 + (m <= 2));
}

int gains_year_of(int64_t ms)
{
    int64_t days = ms / MS_PER_DAY - (ms % MS_PER_DAY < 0);
    return year_from_days(days);
}

int64_t gains_date_ms(int year, int month, int day)
{
    return days_from_civil(year, month, day) * MS_PER_DAY;
}

void gains_year_range(int year, int64_t *from_ms, int64_t *to_ms)
{
    *from_ms = gains_date_ms(year, 1, 1);
    *to_ms = gains_date_ms(year + 1, 1, 1);
}

/* ---- names ------------------------------------------------------------ */

const char *gains_term_name(gains_term_t term)
{
    switch (term) {
    case GAINS_TERM_SHORT:
        return "SHORT";
    case GAINS_TERM_LONG:
        return "LONG";
    default:
        return NULL;
    }
}

const char *gains_warning_code(gains_warning_t warning)
{
    switch (warning) {
    case GAINS_WARN_MISSING_PROCEEDS:
        return "missing_proceeds";
    case GAINS_WARN_INSUFFICIENT_HOLDINGS:
        return "insufficient_holdings";
    case GAINS_WARN_MISSING_COST_BASIS:
        return "missing_cost_basis";
    }
    return "";
}

void gains_warning_message(gains_warning_t warning, const gains_row_t *row, char *out, size_t cap)
{
    char quantity[DEC_TEXT_MAX];
    dec_format(row->quantity, quantity);
    switch (warning) {
    case GAINS_WARN_MISSING_PROCEEDS:
        snprintf(out, cap,
                 "No USD value is known for the disposal of %s %s: its proceeds are unknown "
                 "and the row is on no form",
                 quantity, row->asset_code);
        return;
    case GAINS_WARN_INSUFFICIENT_HOLDINGS:
        snprintf(out, cap,
                 "The account held less %s than the transaction disposed of: %s %s were "
                 "relieved without an acquisition, without cost basis and without a term "
                 "(boxed as short term)",
                 row->asset_code, quantity, row->asset_code);
        return;
    case GAINS_WARN_MISSING_COST_BASIS:
        snprintf(out, cap,
                 "The relieved %s lot has no cost basis (acquired without a known USD value, "
                 "for example by a deposit)",
                 row->asset_code);
        return;
    }
    snprintf(out, cap, "%s", "");
}

/* ---- classification --------------------------------------------------- */

/* text (NULL: absent) into *d; false when present and not a decimal. */
static bool parse_opt(const char *text, bool *has, dec_t *d)
{
    *has = text != NULL;
    *d = dec_zero();
    return text == NULL || dec_parse(text, strlen(text), d) == DEC_OK;
}

static bool parse_term(const char *text, gains_term_t *term)
{
    if (text == NULL)
        *term = GAINS_TERM_NONE;
    else if (strcmp(text, "short") == 0)
        *term = GAINS_TERM_SHORT;
    else if (strcmp(text, "long") == 0)
        *term = GAINS_TERM_LONG;
    else
        return false;
    return true;
}

static bool is_digital(const char *asset_type)
{
    return asset_type != NULL &&
           (strcmp(asset_type, "crypto") == 0 || strcmp(asset_type, "nft") == 0);
}

static bool is_security(const char *asset_type)
{
    return asset_type != NULL && strcmp(asset_type, "security") == 0;
}

static bool is_austria(const char *method)
{
    return method != NULL && strcmp(method, domain_method_name(DOMAIN_METHOD_AUSTRIA)) == 0;
}

/* The box letter, short-term form: 'A'..'C' or 'G'..'I'; '\0' for none. */
static char short_box(const gains_row_t *r)
{
    if (r->digital && r->tax_year >= DOMAIN_1099DA_FIRST_YEAR) {
        if (!r->has_proceeds)
            return 'I'; /* never on a 1099-DA: the broker knows no proceeds */
        return r->covered ? 'G' : 'H';
    }
    /* No 1099-B reports fiat or (before 1099-DA) digital assets; taxd has
     * no 1099-B derivation for securities yet, but their boxes follow the
     * same reported / basis-reported split. */
    if (!r->has_proceeds || !is_security(r->asset_type))
        return 'C';
    return r->covered ? 'A' : 'B';
}

static char box_of(const gains_row_t *r)
{
    if (is_austria(r->method))
        return '\0';
    char b = short_box(r);
    return r->term == GAINS_TERM_LONG ? (char)(b + 3) : b; /* A->D, G->J, ... */
}

static unsigned warnings_of(const gains_row_t *r)
{
    unsigned w = 0;
    if (!r->has_proceeds)
        w |= GAINS_WARN_MISSING_PROCEEDS;
    if (r->lot_transaction_id == NULL && !r->has_acquired_at)
        w |= GAINS_WARN_INSUFFICIENT_HOLDINGS;
    else if (!r->has_cost_basis)
        w |= GAINS_WARN_MISSING_COST_BASIS;
    return w;
}

gains_status_t gains_classify(const store_gain_t *in, gains_row_t *out)
{
    gains_row_t r = {
        .seq = in->seq,
        .transaction_id = in->transaction_id,
        .lot_transaction_id = in->lot_transaction_id,
        .asset_code = in->asset_code,
        .asset_type = in->asset_type,
        .method = in->method,
        .has_acquired_at = in->has_acquired_at,
        .acquired_at = in->has_acquired_at ? in->acquired_at : 0,
        .disposed_at = in->datetime,
        .tax_year = gains_year_of(in->datetime),
    };
    bool has_quantity;
    if (!parse_opt(in->quantity, &has_quantity, &r.quantity) || !has_quantity ||
        !parse_opt(in->proceeds, &r.has_proceeds, &r.proceeds) ||
        !parse_opt(in->cost, &r.has_cost_basis, &r.cost_basis) ||
        !parse_opt(in->transaction_costs, &r.has_transaction_costs, &r.transaction_costs) ||
        !parse_term(in->term, &r.term))
        return GAINS_BAD_ROW;
    r.has_gain_loss = r.has_proceeds && r.has_cost_basis;
    if (r.has_gain_loss && dec_sub(r.proceeds, r.cost_basis, &r.gain_loss) != DEC_OK)
        return GAINS_RANGE;
    bool origin_acquired = in->lot_origin != NULL && strcmp(in->lot_origin, "acquired") == 0;
    r.covered = origin_acquired && r.has_acquired_at && r.acquired_at >= DOMAIN_COVERED_FROM_MS;
    r.customer_provided_acquisition =
        in->lot_origin != NULL && strcmp(in->lot_origin, "provided") == 0;
    r.digital = is_digital(r.asset_type);
    r.form_8949_box = box_of(&r);
    r.warnings = warnings_of(&r);
    *out = r;
    return GAINS_OK;
}

/* ---- accumulation ----------------------------------------------------- */

static void totals_init(gains_totals_t *t)
{
    *t = (gains_totals_t){.proceeds = dec_zero(), .cost_basis = dec_zero(),
                          .gain_loss = dec_zero()};
}

void gains_breakdown_init(gains_breakdown_t *b)
{
    memset(b, 0, sizeof *b);
    totals_init(&b->short_term);
    totals_init(&b->long_term);
    totals_init(&b->total);
    for (int i = 0; i < GAINS_BOX_COUNT; i++)
        totals_init(&b->box[i]);
}

static bool totals_add(gains_totals_t *t, const gains_row_t *row)
{
    t->rows++;
    return dec_add(t->proceeds, row->proceeds, &t->proceeds) == DEC_OK &&
           dec_add(t->cost_basis, row->cost_basis, &t->cost_basis) == DEC_OK &&
           dec_add(t->gain_loss, row->gain_loss, &t->gain_loss) == DEC_OK;
}

gains_status_t gains_breakdown_add(gains_breakdown_t *b, const gains_row_t *row)
{
    b->rows++;
    b->rows_without_cost_basis += !row->has_cost_basis;
    b->rows_without_proceeds += !row->has_proceeds;
    b->rows_without_term += row->term == GAINS_TERM_NONE;
    int box = row->form_8949_box != '\0' ? row->form_8949_box - 'A' : -1;
    if (box >= 0 && box < GAINS_BOX_COUNT)
        b->box_seen[box]++;
    if (!row->has_gain_loss)
        return GAINS_OK;
    gains_totals_t *term = row->term == GAINS_TERM_LONG ? &b->long_term : &b->short_term;
    bool ok = totals_add(term, row) && totals_add(&b->total, row);
    if (ok && box >= 0 && box < GAINS_BOX_COUNT)
        ok = totals_add(&b->box[box], row);
    return ok ? GAINS_OK : GAINS_RANGE;
}
