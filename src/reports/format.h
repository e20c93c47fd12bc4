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
#include <stddef.h>

#include "core/buf.h"

/* A row never needs more: a 256-byte id escaped in JSON (6 bytes per byte
 * at worst), a 32-byte asset code likewise, four decimals, the keys. A gains
 * row holds three ids: REPORT_GAIN_ROW_MAX (its warnings are short, fixed
 * sentences of taxd's own). */
#define REPORT_ROW_MAX 4096
#define REPORT_GAIN_ROW_MAX 16384

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

/* One gains row of a gains report (issue 16): every member of an item of
 * GET /v1/gains, plus the account's caller id. Strings are borrowed; NULL
 * members are null in jsonl and empty cells in CSV. Datetimes are RFC 3339
 * text, decimals canonical. In CSV, warnings is one cell: the warnings'
 * codes joined by ';' (the messages are in jsonl). */
typedef struct report_warning {
    const char *code;
    const char *message;
} report_warning_t;

typedef struct report_gain_row {
    const char *account_id;
    const char *transaction_id;
    const char *lot_transaction_id;  /* NULL: none */
    const char *asset_code;
    const char *asset_type;          /* NULL: the asset is unknown */
    const char *quantity;
    const char *acquired_at;         /* NULL: no lot covered the piece */
    const char *disposed_at;
    const char *proceeds;            /* NULL: unknown */
    const char *transaction_costs;   /* NULL: unknown */
    const char *cost_basis;          /* NULL: unknown */
    const char *gain_loss;           /* NULL: unknown */
    const char *term;                /* "SHORT", "LONG"; NULL: none */
    bool covered;
    const char *form_8949_box;       /* "A".."L"; NULL: none */
    bool customer_provided_acquisition;
    const char *method;              /* NULL: unknown */
    const report_warning_t *warnings;
    size_t warning_count;
} report_gain_row_t;

/* The gains file's CSV header row (nothing for jsonl). */
void report_format_gains_header(report_format_t format, buf_t *out);
/* Appends one gains row; false (and out->overflow) when it did not fit. */
bool report_format_gain_row(report_format_t format, const report_gain_row_t *row, buf_t *out);

/* Appends the CSV header row (nothing for jsonl). */
void report_format_header(report_format_t format, buf_t *out);
/* Appends one row; false (and out->overflow) when it did not fit. */
bool report_format_row(report_format_t format, const report_row_t *row, buf_t *out);

/* True when a spreadsheet would take a text cell starting like this for a
 * formula (= + - @ TAB CR as its first byte). */
bool report_csv_is_formula(const char *text);

#endif
