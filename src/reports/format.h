/* reports/format: the bytes of a report file, row by row. Two formats:
 *
 *  - csv (the default): RFC 4180, a header row, CRLF line ends, a cell
 *    quoted when it holds a comma, a quote, CR or LF (quotes doubled). Text
 *    cells a spreadsheet would run as a formula (starting with = + - @ TAB
 *    or CR) are prefixed with a single quote; decimal cells never need it.
 *  - jsonl: one compact JSON object per line with the same keys, in the same
 *    order; average_unit_cost is null when there is none (empty in CSV).
 *
 * Pure functions over caller-owned buffers: no allocation, no I/O. */
#ifndef TAXD_REPORTS_FORMAT_H
#define TAXD_REPORTS_FORMAT_H

#include <stdbool.h>

#include "core/buf.h"

/* A row never needs more: a 256-byte id escaped in JSON (6 bytes per byte
 * at worst), a 32-byte asset code likewise, four decimals, the keys. */
#define REPORT_ROW_MAX 4096

typedef enum report_format {
    REPORT_FORMAT_CSV = 0,
    REPORT_FORMAT_JSONL,
} report_format_t;

/* "csv" / "jsonl"; false for anything else. */
bool report_format_parse(const char *name, report_format_t *out);
const char *report_format_name(report_format_t format);
/* "text/csv; charset=utf-8" / "application/x-ndjson". */
const char *report_format_content_type(report_format_t format);
/* "csv" / "jsonl" (the download's file name extension). */
const char *report_format_extension(report_format_t format);

/* One (account, asset) held. Decimals are canonical decimal strings. */
typedef struct report_row {
    const char *account_id;          /* the caller's id */
    const char *asset_code;
    const char *asset_type;
    const char *total_quantity;
    const char *total_cost;
    const char *average_unit_cost;   /* NULL: none */
    const char *total_quantity_with_cost_basis;
    const char *fiat_currency;
} report_row_t;

/* Appends the CSV header row (nothing for jsonl). */
void report_format_header(report_format_t format, buf_t *out);
/* Appends one row; false (and out->overflow) when it did not fit. */
bool report_format_row(report_format_t format, const report_row_t *row, buf_t *out);

/* True when a spreadsheet would take a text cell starting like this for a
 * formula (= + - @ TAB CR as its first byte). */
bool report_csv_is_formula(const char *text);

#endif
