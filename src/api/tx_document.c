/* tx_document: see tx_document.h. The model is Taxbit's transaction version
 * 2 (api/transactions.c describes it); amounts and rates are exact decimals
 * (core/decimal.h): a value that cannot be held exactly is refused with an
 * issue, never rounded. */
#include "api/tx_document.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/validate.h"


static const v_field ASSET_FIELDS[] = {
    {"code", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ASSET_CODE_MAX},
    {"type", V_ENUM, .required = true, .values = DOMAIN_ASSET_TYPES},
    {NULL, V_ANY, .required = false},
};
static const v_schema ASSET = {ASSET_FIELDS};
static const v_field AMOUNT_FIELDS[] = {
    {"amount", V_DECIMAL, .required = true},
    {"asset", V_OBJECT, .required = true, .object = &ASSET},
    {NULL, V_ANY, .required = false},
};
static const v_schema AMOUNT = {AMOUNT_FIELDS};
static const v_field RATE_ITEM = {"rate", V_OBJECT, .required = true, .object = &AMOUNT};
static const v_field LINE_FIELDS[] = {
    {"asset_amount", V_OBJECT, .required = true, .object = &AMOUNT},
    {"rates", V_ARRAY, .max_items = DOMAIN_TX_RATES_MAX, .items = &RATE_ITEM},
    {NULL, V_ANY, .required = false},
};
static const v_schema LINE = {LINE_FIELDS};
static const v_field LINE_ITEM = {"line", V_OBJECT, .required = true, .object = &LINE};
static const v_schema ANY_OBJECT = {(const v_field[]){{NULL, V_ANY, .required = false}}};
static const v_field TX_FIELDS[] = {
    {"id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"account_id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"datetime", V_DATETIME, .required = true},
    {"type", V_ENUM, .required = true, .values = DOMAIN_TX_TYPE_NAMES},
    {"subtype", V_STRING, .nullable = true, .min_len = 1, .max_len = 64},
    {"sent", V_ARRAY, .max_items = DOMAIN_TX_LINES_MAX, .items = &LINE_ITEM},
    {"received", V_ARRAY, .max_items = DOMAIN_TX_LINES_MAX, .items = &LINE_ITEM},
    {"fees", V_ARRAY, .max_items = DOMAIN_TX_LINES_MAX, .items = &LINE_ITEM},
    {"metadata", V_OBJECT, .nullable = true, .object = &ANY_OBJECT},
    {NULL, V_ANY, .required = false},
};
static const v_schema TX = {TX_FIELDS};

const char *const TX_DOCUMENT_ARRAYS[TX_DOCUMENT_ARRAY_COUNT] = {"sent", "received", "fees"};

static void add_issue(json_t *issues, const char *message, json_t *path)
{
    json_array_append_new(issues, v_issue("custom", path, message, NULL));
    json_decref(path);
}


/* ---- the rules a schema cannot state ---------------------------------- */

/* Which arrays a type needs: trade sent and received; deposit and income
 * received; withdraw and expense sent. The array a type does not use must
 * be absent or empty. */
static void check_arrays_for_type(const json_t *body, json_t *issues)
{
    const char *type = json_string_value(json_object_get(body, "type"));
    domain_tx_type_t t = DOMAIN_TX_TRADE;
    domain_tx_type_parse(type, &t); /* the schema admitted only the type names */
    bool trade = t == DOMAIN_TX_TRADE;
    bool in = t == DOMAIN_TX_DEPOSIT || t == DOMAIN_TX_INCOME;
    bool need_sent = trade || !in, need_received = trade || in;
    bool need[2] = {need_sent, need_received};
    for (int i = 0; i < 2; i++) {
        size_t n = json_array_size(json_object_get(body, TX_DOCUMENT_ARRAYS[i]));
        char msg[128];
        const char *article = strchr("aeiou", type[0]) != NULL ? "An" : "A";
        if (need[i] && n == 0) {
            snprintf(msg, sizeof msg, "%s %s transaction needs at least one %s line item",
                     article, type, TX_DOCUMENT_ARRAYS[i]);
            add_issue(issues, msg, json_pack("[s]", TX_DOCUMENT_ARRAYS[i]));
        } else if (!need[i] && n > 0) {
            snprintf(msg, sizeof msg, "%s %s transaction has no %s line items", article, type,
                     TX_DOCUMENT_ARRAYS[i]);
            add_issue(issues, msg, json_pack("[s]", TX_DOCUMENT_ARRAYS[i]));
        }
    }
}

/* An amount: exact, within its integer digits (the domain's limit, which a
 * parse past core/decimal's own range also reports), and positive (a rate
 * may not be negative). */
static bool check_amount(const json_t *amount_obj, json_t *path, bool strictly_positive,
                         const char *range_problem, unsigned int_digits, json_t *issues,
                         dec_t *out)
{
    const char *text = json_string_value(json_object_get(amount_obj, "amount"));
    dec_status_t st = dec_parse(text, strlen(text), out);
    bool in_range = st == DEC_OK ? dec_fits_int_digits(*out, int_digits) : st != DEC_RANGE;
    const char *problem = !in_range ? range_problem
                          : st != DEC_OK ? dec_status_message(st)
                          : dec_is_negative(*out) ? "must not be negative"
                          : strictly_positive && dec_is_zero(*out) ? "must be greater than zero"
                                                                   : NULL;
    if (problem == NULL) {
        json_decref(path);
        return true;
    }
    char msg[160];
    snprintf(msg, sizeof msg, "Invalid amount: %s", problem);
    json_array_append_new(path, json_string("amount"));
    add_issue(issues, msg, path);
    return false;
}

#define AMOUNT_RANGE_PROBLEM                                                                      \
    "outside the supported range (at most " DOMAIN_TEXT(DOMAIN_AMOUNT_INT_DIGITS)                 \
    " integer digits)"
#define RATE_RANGE_PROBLEM                                                                        \
    "outside the supported range (at most " DOMAIN_TEXT(DOMAIN_RATE_INT_DIGITS)                   \
    " integer digits)"

static void check_code(const json_t *amount_obj, json_t *path, json_t *issues)
{
    const char *code = json_string_value(json_object_get(json_object_get(amount_obj, "asset"),
                                                         "code"));
    if (domain_asset_code_valid(code)) {
        json_decref(path);
        return;
    }
    json_array_append_new(path, json_string("asset"));
    json_array_append_new(path, json_string("code"));
    add_issue(issues,
              "Invalid asset code: 1 to " DOMAIN_TEXT(DOMAIN_ASSET_CODE_MAX) " of A-Z a-z 0-9 . _ -",
              path);
}

/* Ids are at most DOMAIN_ID_MAX bytes (docs/decisions.md, Identifiers): the
 * schema counts characters, so a shorter id of multibyte characters is
 * checked here. */
static void check_id_bytes(const json_t *body, json_t *issues)
{
    static const char *const FIELDS[] = {"id", "account_id"};
    for (size_t i = 0; i < 2; i++)
        if (json_string_length(json_object_get(body, FIELDS[i])) > DOMAIN_ID_MAX) {
            char msg[64];
            snprintf(msg, sizeof msg, "Too big: expected %s to have <=%d bytes", FIELDS[i],
                     DOMAIN_ID_MAX);
            add_issue(issues, msg, json_pack("[s]", FIELDS[i]));
        }
}

static void check_lines(const json_t *body, json_t *issues)
{
    for (int a = 0; a < TX_DOCUMENT_ARRAY_COUNT; a++) {
        const json_t *lines = json_object_get(body, TX_DOCUMENT_ARRAYS[a]);
        for (size_t i = 0; i < json_array_size(lines); i++) {
            const json_t *line = json_array_get(lines, i);
            const json_t *amount = json_object_get(line, "asset_amount");
            dec_t d;
            check_amount(amount, json_pack("[s,i,s]", TX_DOCUMENT_ARRAYS[a], (json_int_t)i, "asset_amount"),
                         true, AMOUNT_RANGE_PROBLEM, DOMAIN_AMOUNT_INT_DIGITS, issues, &d);
            check_code(amount, json_pack("[s,i,s]", TX_DOCUMENT_ARRAYS[a], (json_int_t)i, "asset_amount"),
                       issues);
            const json_t *rates = json_object_get(line, "rates");
            for (size_t r = 0; r < json_array_size(rates); r++) {
                const json_t *rate = json_array_get(rates, r);
                check_amount(rate, json_pack("[s,i,s,i]", TX_DOCUMENT_ARRAYS[a], (json_int_t)i, "rates",
                                             (json_int_t)r),
                             false, RATE_RANGE_PROBLEM, DOMAIN_RATE_INT_DIGITS, issues, &d);
                check_code(rate, json_pack("[s,i,s,i]", TX_DOCUMENT_ARRAYS[a], (json_int_t)i, "rates",
                                           (json_int_t)r),
                           issues);
            }
        }
    }
}

/* ---- normalising ------------------------------------------------------ */

static json_t *canonical_decimal(const json_t *amount_obj)
{
    const char *text = json_string_value(json_object_get(amount_obj, "amount"));
    dec_t d;
    char out[DEC_TEXT_MAX];
    dec_parse(text, strlen(text), &d); /* validated */
    dec_format(d, out);
    return json_string(out);
}

static json_t *canonical_amount(const json_t *amount_obj)
{
    const json_t *asset = json_object_get(amount_obj, "asset");
    return json_pack("{s:o, s:{s:O, s:O}}", "amount", canonical_decimal(amount_obj), "asset",
                     "code", json_object_get(asset, "code"), "type",
                     json_object_get(asset, "type"));
}

static json_t *canonical_line(const json_t *line)
{
    json_t *out = json_pack("{s:o}", "asset_amount",
                            canonical_amount(json_object_get(line, "asset_amount")));
    json_t *rates = json_array();
    const json_t *in = json_object_get(line, "rates");
    for (size_t i = 0; i < json_array_size(in); i++)
        json_array_append_new(rates, canonical_amount(json_array_get(in, i)));
    json_object_set_new(out, "rates", rates);
    return out;
}

/* The document stored and answered; resends compare it byte for byte. */
json_t *tx_document_canonical(const json_t *body, int64_t datetime_ms)
{
    char when[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(datetime_ms, when);
    json_t *out = json_pack("{s:O, s:O, s:s, s:O}", "id", json_object_get(body, "id"),
                            "account_id", json_object_get(body, "account_id"), "datetime", when,
                            "type", json_object_get(body, "type"));
    const json_t *subtype = json_object_get(body, "subtype");
    json_object_set_new(out, "subtype", json_is_string(subtype) ? json_copy((json_t *)subtype)
                                                                : json_null());
    for (int a = 0; a < TX_DOCUMENT_ARRAY_COUNT; a++) {
        json_t *lines = json_array();
        const json_t *in = json_object_get(body, TX_DOCUMENT_ARRAYS[a]);
        for (size_t i = 0; i < json_array_size(in); i++)
            json_array_append_new(lines, canonical_line(json_array_get(in, i)));
        json_object_set_new(out, TX_DOCUMENT_ARRAYS[a], lines);
    }
    const json_t *metadata = json_object_get(body, "metadata");
    json_object_set_new(out, "metadata", json_is_object(metadata)
                                             ? json_deep_copy(metadata) : json_null());
    return out;
}

/* Every issue of one transaction, paths relative to it (an empty array when
 * it is valid; then *datetime_ms is set). The caller owns the array. */
json_t *tx_document_check(const json_t *body, int64_t *datetime_ms)
{
    json_t *issues = json_array();
    if (v_check_object(&TX, body, NULL, issues) == 0) {
        check_arrays_for_type(body, issues);
        check_id_bytes(body, issues);
        check_lines(body, issues);
    }
    if (json_array_size(issues) == 0 &&
        clock_parse_rfc3339(json_string_value(json_object_get(body, "datetime")),
                            datetime_ms) != 0) {
        json_t *path = json_pack("[s]", "datetime");
        json_array_append_new(issues, v_issue("invalid_format", path, "Invalid ISO datetime",
                                              NULL));
        json_decref(path);
    }
    return issues;
}
