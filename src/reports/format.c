/* reports/format: see format.h.
 *
 * Trade-offs. JSON strings are escaped here rather than with jansson, which
 * writes control characters as uppercase \u001F: a line written here is
 * byte-identical to what Python's json.dumps(separators=(",", ":"),
 * ensure_ascii=False) makes of the parsed object, so a consumer can compare
 * bytes. Formula neutralisation follows OWASP's CSV-injection advice (a
 * leading single quote), applied to text cells only: the decimals are
 * produced by taxd itself and a decimal such as "-5" is a number to a
 * spreadsheet, never a formula. */
#include "reports/format.h"

#include <string.h>

#define CSV_HEADER                                                                             \
    "account_id,asset_code,asset_type,total_quantity,total_cost,average_unit_cost,"            \
    "total_quantity_with_cost_basis,fiat_currency\r\n"

bool report_format_parse(const char *name, report_format_t *out)
{
    if (strcmp(name, "csv") == 0)
        *out = REPORT_FORMAT_CSV;
    else if (strcmp(name, "jsonl") == 0)
        *out = REPORT_FORMAT_JSONL;
    else
        return false;
    return true;
}

const char *report_format_name(report_format_t format)
{
    return format == REPORT_FORMAT_JSONL ? "jsonl" : "csv";
}

const char *report_format_content_type(report_format_t format)
{
    return format == REPORT_FORMAT_JSONL ? "application/x-ndjson" : "text/csv; charset=utf-8";
}

const char *report_format_extension(report_format_t format)
{
    return report_format_name(format);
}

void report_format_header(report_format_t format, buf_t *out)
{
    if (format == REPORT_FORMAT_CSV)
        buf_put(out, CSV_HEADER, sizeof CSV_HEADER - 1);
}

/* ---- CSV -------------------------------------------------------------- */

bool report_csv_is_formula(const char *text)
{
    return text[0] != '\0' && strchr("=+-@\t\r", text[0]) != NULL;
}

/* A cell: quoted when it holds a separator, a quote or a line break. */
static void csv_cell(buf_t *out, const char *text, bool neutralise)
{
    bool formula = neutralise && report_csv_is_formula(text);
    bool quote = strpbrk(text, ",\"\r\n") != NULL;
    if (quote)
        buf_putc(out, '"');
    if (formula)
        buf_putc(out, '\'');
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"')
            buf_putc(out, '"');
        buf_putc(out, *p);
    }
    if (quote)
        buf_putc(out, '"');
}

static void csv_row(const report_row_t *row, buf_t *out)
{
    csv_cell(out, row->account_id, true);
    buf_putc(out, ',');
    csv_cell(out, row->asset_code, true);
    buf_putc(out, ',');
    csv_cell(out, row->asset_type, true);
    buf_putc(out, ',');
    buf_puts(out, row->total_quantity);
    buf_putc(out, ',');
    buf_puts(out, row->total_cost);
    buf_putc(out, ',');
    if (row->average_unit_cost != NULL)
        buf_puts(out, row->average_unit_cost);
    buf_putc(out, ',');
    buf_puts(out, row->total_quantity_with_cost_basis);
    buf_putc(out, ',');
    csv_cell(out, row->fiat_currency, true);
    buf_put(out, "\r\n", 2);
}

/* ---- JSON lines ------------------------------------------------------- */

static void json_member(buf_t *out, const char *key, const char *value, bool first)
{
    if (!first)
        buf_putc(out, ',');
    buf_put_json_string(out, key);
    buf_putc(out, ':');
    if (value == NULL)
        buf_puts(out, "null");
    else
        buf_put_json_string(out, value);
}

static void jsonl_row(const report_row_t *row, buf_t *out)
{
    buf_putc(out, '{');
    json_member(out, "account_id", row->account_id, true);
    json_member(out, "asset_code", row->asset_code, false);
    json_member(out, "asset_type", row->asset_type, false);
    json_member(out, "total_quantity", row->total_quantity, false);
    json_member(out, "total_cost", row->total_cost, false);
    json_member(out, "average_unit_cost", row->average_unit_cost, false);
    json_member(out, "total_quantity_with_cost_basis", row->total_quantity_with_cost_basis,
                false);
    json_member(out, "fiat_currency", row->fiat_currency, false);
    buf_put(out, "}\n", 2);
}

bool report_format_row(report_format_t format, const report_row_t *row, buf_t *out)
{
    if (format == REPORT_FORMAT_JSONL)
        jsonl_row(row, out);
    else
        csv_row(row, out);
    return !out->overflow;
}

/* ---- gains rows --------------------------------------------------------- */

#define GAINS_CSV_HEADER                                                                       \
    "account_id,transaction_id,lot_transaction_id,asset_code,asset_type,quantity,acquired_at," \
    "disposed_at,proceeds,transaction_costs,cost_basis,gain_loss,term,covered,form_8949_box,"  \
    "customer_provided_acquisition,method,warnings\r\n"

void report_format_gains_header(report_format_t format, buf_t *out)
{
    if (format == REPORT_FORMAT_CSV)
        buf_put(out, GAINS_CSV_HEADER, sizeof GAINS_CSV_HEADER - 1);
}

/* A nullable cell followed by a comma; text cells are neutralised. */
static void csv_opt(buf_t *out, const char *text, bool neutralise)
{
    if (text != NULL)
        csv_cell(out, text, neutralise);
    buf_putc(out, ',');
}

static void csv_gain_row(const report_gain_row_t *r, buf_t *out)
{
    csv_opt(out, r->account_id, true);
    csv_opt(out, r->transaction_id, true);
    csv_opt(out, r->lot_transaction_id, true);
    csv_opt(out, r->asset_code, true);
    csv_opt(out, r->asset_type, true);
    csv_opt(out, r->quantity, false);
    csv_opt(out, r->acquired_at, false);
    csv_opt(out, r->disposed_at, false);
    csv_opt(out, r->proceeds, false);
    csv_opt(out, r->transaction_costs, false);
    csv_opt(out, r->cost_basis, false);
    csv_opt(out, r->gain_loss, false);
    csv_opt(out, r->term, false);
    csv_opt(out, r->covered ? "true" : "false", false);
    csv_opt(out, r->form_8949_box, false);
    csv_opt(out, r->customer_provided_acquisition ? "true" : "false", false);
    csv_opt(out, r->method, false);
    for (size_t i = 0; i < r->warning_count; i++) {
        if (i > 0)
            buf_putc(out, ';');
        buf_puts(out, r->warnings[i].code); /* taxd's own codes: [a-z_] */
    }
    buf_put(out, "\r\n", 2);
}

static void json_bool_member(buf_t *out, const char *key, bool value)
{
    buf_putc(out, ',');
    buf_put_json_string(out, key);
    buf_puts(out, value ? ":true" : ":false");
}

static void jsonl_gain_row(const report_gain_row_t *r, buf_t *out)
{
    buf_putc(out, '{');
    json_member(out, "account_id", r->account_id, true);
    json_member(out, "transaction_id", r->transaction_id, false);
    json_member(out, "lot_transaction_id", r->lot_transaction_id, false);
    json_member(out, "asset_code", r->asset_code, false);
    json_member(out, "asset_type", r->asset_type, false);
    json_member(out, "quantity", r->quantity, false);
    json_member(out, "acquired_at", r->acquired_at, false);
    json_member(out, "disposed_at", r->disposed_at, false);
    json_member(out, "proceeds", r->proceeds, false);
    json_member(out, "transaction_costs", r->transaction_costs, false);
    json_member(out, "cost_basis", r->cost_basis, false);
    json_member(out, "gain_loss", r->gain_loss, false);
    json_member(out, "term", r->term, false);
    json_bool_member(out, "covered", r->covered);
    json_member(out, "form_8949_box", r->form_8949_box, false);
    json_bool_member(out, "customer_provided_acquisition", r->customer_provided_acquisition);
    json_member(out, "method", r->method, false);
    buf_puts(out, ",\"warnings\":[");
    for (size_t i = 0; i < r->warning_count; i++) {
        if (i > 0)
            buf_putc(out, ',');
        buf_putc(out, '{');
        json_member(out, "code", r->warnings[i].code, true);
        json_member(out, "message", r->warnings[i].message, false);
        buf_putc(out, '}');
    }
    buf_put(out, "]}\n", 3);
}

bool report_format_gain_row(report_format_t format, const report_gain_row_t *row, buf_t *out)
{
    if (format == REPORT_FORMAT_JSONL)
        jsonl_gain_row(row, out);
    else
        csv_gain_row(row, out);
    return !out->overflow;
}
