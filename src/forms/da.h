/* forms/da: the content of a Form 1099-DA (digital asset proceeds from
 * broker transactions), derived from the gains rows of a tax year from
 * DOMAIN_1099DA_FIRST_YEAR (docs/decisions.md, "Tax forms": 1099-DA).
 *
 * One record per (sale, asset, group), the groups the form keeps apart:
 * covered short-term, covered long-term, and noncovered (every noncovered
 * piece of one sale of one asset together). A record holds description
 * (the asset code), quantity, date_acquired (covered: the one date, or
 * "VARIOUS"; noncovered: absent), date_sold, gross_proceeds (box 1f: the
 * proceeds net of the sale's transaction costs, as the gains rows hold
 * them), cost_basis (box 1g, covered only), term (box 6: SHORT or LONG;
 * noncovered: present only when every piece has the same known term),
 * noncovered (box 9) and customer_provided_acquisition (box 8 style: some
 * piece's lot has a customer-provided basis). Rows of assets that are not
 * digital (crypto, nft) are ignored: securities go on a 1099-B. Rows
 * without proceeds are on no record: they are listed under
 * without_proceeds, one entry per (sale, asset). Totals: the record count,
 * and the sums of gross proceeds and of the cost basis reported.
 *
 * Rows are expected in processing order (the pieces of one sale arrive
 * together); pure, no SQL. */
#ifndef TAXD_FORMS_DA_H
#define TAXD_FORMS_DA_H

#include <jansson.h>

#include "gains/gains.h"

typedef struct forms_da forms_da_t;

/* An empty 1099-DA of tax year `year`; NULL when out of memory. */
forms_da_t *forms_da_new(int year);
void forms_da_free(forms_da_t *da);

/* Adds one classified gains row. GAINS_RANGE when a sum leaves the
 * decimals' range or memory ran out (the content is then unusable). */
gains_status_t forms_da_add(forms_da_t *da, const gains_row_t *row);

/* The content (new reference, caller owns); NULL when out of memory. */
json_t *forms_da_render(const forms_da_t *da);

#endif
