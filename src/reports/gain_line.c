/* reports/gain_line: see gain_line.h. */
#include "reports/gain_line.h"

#include "core/clock.h"
#include "core/decimal.h"

#define WARNING_TEXT_MAX 256

typedef struct texts {
    char quantity[DEC_TEXT_MAX], proceeds[DEC_TEXT_MAX], costs[DEC_TEXT_MAX];
    char cost[DEC_TEXT_MAX], gain[DEC_TEXT_MAX];
    char acquired[CLOCK_RFC3339_LEN], disposed[CLOCK_RFC3339_LEN];
    char box[2];
    char messages[GAINS_WARNING_COUNT][WARNING_TEXT_MAX];
    report_warning_t warnings[GAINS_WARNING_COUNT];
} texts_t;

/* The decimal's text into out when has, else NULL. */
static const char *opt_dec(bool has, dec_t value, char out[DEC_TEXT_MAX])
{
    if (!has)
        return NULL;
    dec_format(value, out);
    return out;
}

static size_t warnings_of(const gains_row_t *g, texts_t *t)
{
    size_t n = 0;
    for (unsigned i = 0; i < GAINS_WARNING_COUNT; i++) {
        gains_warning_t bit = (gains_warning_t)(1u << i);
        if ((g->warnings & bit) == 0)
            continue;
        gains_warning_message(bit, g, t->messages[n], sizeof t->messages[n]);
        t->warnings[n] = (report_warning_t){gains_warning_code(bit), t->messages[n]};
        n++;
    }
    return n;
}

gains_status_t report_gain_line(report_format_t format, const char *account_id,
                                const store_gain_t *row, buf_t *out, bool *fits)
{
    gains_row_t g;
    *fits = true;
    gains_status_t st = gains_classify(row, &g);
    if (st != GAINS_OK)
        return st;
    texts_t t;
    dec_format(g.quantity, t.quantity);
    clock_format_rfc3339(g.disposed_at, t.disposed);
    if (g.has_acquired_at)
        clock_format_rfc3339(g.acquired_at, t.acquired);
    t.box[0] = g.form_8949_box;
    t.box[1] = '\0';
    report_gain_row_t r = {
        .account_id = account_id, .transaction_id = g.transaction_id,
        .lot_transaction_id = g.lot_transaction_id, .asset_code = g.asset_code,
        .asset_type = g.asset_type, .quantity = t.quantity,
        .acquired_at = g.has_acquired_at ? t.acquired : NULL, .disposed_at = t.disposed,
        .proceeds = opt_dec(g.has_proceeds, g.proceeds, t.proceeds),
        .transaction_costs = opt_dec(g.has_transaction_costs, g.transaction_costs, t.costs),
        .cost_basis = opt_dec(g.has_cost_basis, g.cost_basis, t.cost),
        .gain_loss = opt_dec(g.has_gain_loss, g.gain_loss, t.gain),
        .term = gains_term_name(g.term), .covered = g.covered,
        .form_8949_box = g.form_8949_box != '\0' ? t.box : NULL,
        .customer_provided_acquisition = g.customer_provided_acquisition, .method = g.method,
        .warnings = t.warnings};
    r.warning_count = warnings_of(&g, &t);
    size_t before = out->len;
    *fits = report_format_gain_row(format, &r, out);
    if (!*fits)
        out->len = before;
    return GAINS_OK;
}
