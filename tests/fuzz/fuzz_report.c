/* Fuzzes the report writers (reports/format.c). Input: the eight fields of a
 * row separated by NUL bytes, in the order of the CSV header: account_id,
 * asset_code, asset_type, total_quantity, total_cost, average_unit_cost
 * (empty: none), total_quantity_with_cost_basis, fiat_currency. Text fields
 * are cut to the service's limits (an id of 256 bytes, a code of 32); a
 * decimal field that does not parse becomes "0", one that does is written in
 * canonical form, as the runner passes them.
 *
 * Properties (abort on violation):
 *  - a row within those limits always fits REPORT_ROW_MAX;
 *  - CSV: the row is one RFC 4180 record (parsed strictly here) ending in
 *    CRLF, whose cells give back the values: decimals verbatim, and text
 *    cells verbatim or, when a spreadsheet would run them as a formula
 *    (= + - @ TAB CR first), with one leading single quote, so that no text
 *    cell reaches a spreadsheet starting with a formula character;
 *  - JSON lines: the line is one JSON object and a newline, with the eight
 *    keys in order and the same values (average_unit_cost null when none),
 *    written byte for byte as the canonical serializer (payload_dump, itself
 *    checked against Python's json.dumps by fuzz_payload) writes it. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/decimal.h"
#include "core/utf8.h"
#include "reports/format.h"
#include "webhooks/payload.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

#define FIELDS 8
static const char *const NAMES[FIELDS] = {
    "account_id", "asset_code", "asset_type", "total_quantity", "total_cost",
    "average_unit_cost", "total_quantity_with_cost_basis", "fiat_currency"};
/* Text fields and their limits (bytes); 0: a decimal. */
static const size_t LIMIT[FIELDS] = {256, 32, 16, 0, 0, 0, 0, 8};

/* A strict RFC 4180 record from s; false when it is not exactly one record
 * of FIELDS cells ending in CRLF. Cells are malloc'd. */
static bool csv_parse(const char *s, size_t n, char *cells[FIELDS])
{
    size_t i = 0;
    for (int c = 0; c < FIELDS; c++) {
        char *cell = malloc(n + 1);
        size_t k = 0;
        cells[c] = cell;
        if (i < n && s[i] == '"') {
            for (i++;; i++) {
                if (i >= n)
                    return false;
                if (s[i] == '"') {
                    if (i + 1 < n && s[i + 1] == '"') {
                        cell[k++] = '"';
                        i++;
                        continue;
                    }
                    i++;
                    break;
                }
                cell[k++] = s[i];
            }
        } else {
            for (; i < n && s[i] != ',' && s[i] != '\r'; i++) {
                if (s[i] == '"' || s[i] == '\n')
                    return false;
                cell[k++] = s[i];
            }
        }
        cell[k] = '\0';
        const char *sep = c + 1 < FIELDS ? "," : "\r\n";
        if (n - i < strlen(sep) || memcmp(s + i, sep, strlen(sep)) != 0)
            return false;
        i += strlen(sep);
    }
    return i == n;
}

static void check_csv(const char *value[FIELDS], const report_row_t *row)
{
    char storage[REPORT_ROW_MAX];
    buf_t out = buf_over(storage, sizeof storage);
    if (!report_format_row(REPORT_FORMAT_CSV, row, &out))
        FAIL("a CSV row within the limits does not fit REPORT_ROW_MAX");
    char *cells[FIELDS] = {0};
    if (!csv_parse(out.data, out.len, cells))
        FAIL("the CSV row is not one RFC 4180 record of 8 cells");
    for (int c = 0; c < FIELDS; c++) {
        const char *want = value[c] != NULL ? value[c] : "";
        bool text = LIMIT[c] != 0;
        if (text && report_csv_is_formula(want)) {
            if (cells[c][0] != '\'' || strcmp(cells[c] + 1, want) != 0)
                FAIL("a formula-like text cell is not neutralised by one leading quote");
        } else if (strcmp(cells[c], want) != 0) {
            FAIL("a CSV cell does not give back its value");
        }
        if (text && cells[c][0] != '\0' && strchr("=+-@\t\r", cells[c][0]) != NULL)
            FAIL("a text cell starts with a formula character");
        free(cells[c]);
    }
}

static void check_jsonl(const char *value[FIELDS], const report_row_t *row)
{
    char storage[REPORT_ROW_MAX];
    buf_t out = buf_over(storage, sizeof storage);
    if (!report_format_row(REPORT_FORMAT_JSONL, row, &out))
        FAIL("a JSON line within the limits does not fit REPORT_ROW_MAX");
    if (out.len == 0 || out.data[out.len - 1] != '\n' || memchr(out.data, '\n', out.len - 1) != NULL)
        FAIL("a JSON line is not one line");
    for (int c = 0; c < FIELDS; c++)
        if (value[c] != NULL && !utf8_valid(value[c], strlen(value[c])))
            return; /* the service's values are UTF-8 (ids come from JSON) */
    json_error_t err;
    json_t *obj = json_loadb(out.data, out.len - 1, JSON_REJECT_DUPLICATES, &err);
    if (!json_is_object(obj) || json_object_size(obj) != FIELDS)
        FAIL("a JSON line is not an object of 8 members");
    int c = 0;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (strcmp(key, NAMES[c]) != 0)
            FAIL("JSON line keys are not in the header's order");
        if (value[c] == NULL ? !json_is_null(v) : !json_is_string(v) || strcmp(json_string_value(v), value[c]) != 0)
            FAIL("a JSON line member does not give back its value");
        c++;
    }
    size_t len = 0;
    char *canon = payload_dump(obj, &len);
    if (canon == NULL || len + 1 != out.len || memcmp(canon, out.data, len) != 0)
        FAIL("a JSON line differs from the canonical serialization");
    free(canon);
    json_decref(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *value[FIELDS];
    char decimals[FIELDS][DEC_TEXT_MAX];
    size_t at = 0;
    for (int c = 0; c < FIELDS; c++) {
        char *f = copy + (at < size ? at : size);
        size_t n = strlen(f);
        at += n + 1;
        if (LIMIT[c] != 0) {
            if (n > LIMIT[c])
                f[LIMIT[c]] = '\0';
            value[c] = f;
            continue;
        }
        dec_t d;
        if (c == 5 && n == 0) {
            value[c] = NULL;
            continue;
        }
        if (dec_parse(f, n, &d) != DEC_OK)
            d = dec_zero();
        dec_format(d, decimals[c]);
        value[c] = decimals[c];
    }
    report_row_t row = {value[0], value[1], value[2], value[3], value[4], value[5], value[6],
                        value[7]};
    check_csv(value, &row);
    check_jsonl(value, &row);
    free(copy);
    return 0;
}
