/* reports/gain_line: one line of a gains report file from one stored gains
 * row. The row is classified by gains/gains.h (the same rules as GET
 * /v1/gains: covered, the 8949 box, term, warnings, gain_loss), so the file
 * and the API can never disagree, then written by reports/format.h.
 * Pure: no allocation, no I/O; the caller owns every buffer. */
#ifndef TAXD_REPORTS_GAIN_LINE_H
#define TAXD_REPORTS_GAIN_LINE_H

#include <stdbool.h>

#include "core/buf.h"
#include "gains/gains.h"
#include "reports/format.h"
#include "store/gains.h"

/* Appends the line of `row` of account account_id (the caller's id) to out.
 * GAINS_OK, or the classification's failure (nothing is appended then: a
 * stored value the engine never writes, or a difference beyond the
 * decimals' range). *fits is false when out was too small. */
gains_status_t report_gain_line(report_format_t format, const char *account_id,
                                const store_gain_t *row, buf_t *out, bool *fits);

#endif
