/* forms/content: what a tax form holds, computed without SQL: the gains
 * rows of the tax year, classified by gains/gains.h, for GAIN_LOSS_SUMMARY
 * (the gains breakdown, by term, asset and Form 8949 box) and 1099_DA
 * (forms/da.h: one record per sale, asset and group); the year's
 * transactions (inventory/engine.h) for TRANSACTION_SUMMARY. The caller
 * feeds rows (any order) and renders once; every amount is an exact dec_t,
 * rendered as a canonical decimal string.
 *
 * The tax year is [Jan 1 00:00:00.000 UTC, next Jan 1 00:00:00.000 UTC): a
 * row or transaction belongs to the year of its own datetime in UTC. The
 * term is the gains row's (the engine's rule, gains/gains.h).
 *
 * Other form types (1099_B, ..., the *_PDF types) are records whose
 * document body is produced outside taxd: their content states that. */
#ifndef TAXD_FORMS_CONTENT_H
#define TAXD_FORMS_CONTENT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "forms/da.h"
#include "gains/gains.h"
#include "inventory/engine.h"

typedef enum forms_type {
    FORMS_1099_DA = 0,
    FORMS_1099_B,
    FORMS_1099_DIV,
    FORMS_1099_INT,
    FORMS_1099_K,
    FORMS_1099_MISC,
    FORMS_1099_NEC,
    FORMS_1099_R,
    FORMS_1042_S,
    FORMS_5498,
    FORMS_DAC7,
    FORMS_RMD_STATEMENT,
    FORMS_GAIN_LOSS_SUMMARY,
    FORMS_GAIN_LOSS_SUMMARY_PDF,
    FORMS_TRANSACTION_SUMMARY,
    FORMS_TRANSACTION_SUMMARY_PDF,
    FORMS_TYPE_COUNT,
} forms_type_t;

/* The spec's spelling ("1099_DA"); NULL out of range. */
const char *forms_type_name(forms_type_t type);
bool forms_type_parse(const char *name, forms_type_t *out);
/* Every name, comma-separated (for error messages). Static. */
const char *forms_type_list(void);

/* [*from_ms, *to_ms) of the tax year in UTC. */
void forms_year_bounds(int year, int64_t *from_ms, int64_t *to_ms);

typedef struct forms_content forms_content_t;

/* An empty accumulator for a form of `type` and `year`; NULL when out of
 * memory. Free with forms_content_free. */
forms_content_t *forms_content_new(forms_type_t type, int year);
void forms_content_free(forms_content_t *content);

/* Feeds one classified gains row (GAIN_LOSS_SUMMARY, 1099_DA; ignored by
 * other types): only rows disposed in the year count. The row's strings are
 * copied. Returns DEC_OK, or DEC_RANGE for a sum beyond the decimals' range
 * or when out of memory (kept: every later add and render fail). */
dec_status_t forms_content_add_gain(forms_content_t *content, const gains_row_t *row);

/* Feeds one transaction (TRANSACTION_SUMMARY): only those dated in the year
 * count. Its USD value is that of its principal side, when every line of
 * that side has one (USD itself, or amount x USD rate): received lines for
 * deposit and income, sent lines for withdraw and expense, and for a trade
 * the sent lines, else the received lines. Fees are not part of it. */
dec_status_t forms_content_add_tx(forms_content_t *content, const inv_tx_t *tx);

/* The content as a JSON object (new reference, caller owns), or NULL when
 * out of memory. */
json_t *forms_content_render(const forms_content_t *content);

#endif
