/* Fuzzes taxctl's CSV import path (src/taxctl/csv.c, src/taxctl/txconv.c)
 * the way `taxctl import` drives it (import.c's each_csv): the input is a
 * whole CSV file, header row first.
 *
 * Properties (abort on violation), besides no crash and no leak:
 *  - every record the reader gives has at least one field, each a
 *    NUL-terminated string inside the reader's buffer, and a line number
 *    that never goes back;
 *  - when a line converts, its JSON parses with jansson (duplicates
 *    rejected) as an object whose id, account_id, datetime and type are
 *    the line's fields byte for byte (subtype too, when not empty), the
 *    returned id is the line's id; and for each of sent / received / fees
 *    present, the single line item's amount (and its USD rate's amount) is
 *    the line's decimal string exactly, and absent groups are absent. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "taxctl/csv.h"
#include "taxctl/txconv.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

static const char *col(const txconv_header *h, const char *const *f, int c)
{
    return h->at[c] >= 0 ? f[h->at[c]] : "";
}

static void expect_string(json_t *obj, const char *key, const char *want)
{
    const char *got = json_string_value(json_object_get(obj, key));
    if (got == NULL || strcmp(got, want) != 0)
        FAIL("a converted line's text field differs from the CSV's");
}

/* The group g of the line against the JSON's key. */
static void check_group(json_t *tx, const char *key, const txconv_header *h, const char *const *f,
                        int g)
{
    const char *asset = col(h, f, TXC_SENT_ASSET + 3 * g);
    const char *amount = col(h, f, TXC_SENT_AMOUNT + 3 * g);
    const char *rate = col(h, f, TXC_SENT_RATE + 3 * g);
    json_t *list = json_object_get(tx, key);
    if (!*asset && !*amount && !*rate) {
        if (list != NULL)
            FAIL("a converted line has a line item the CSV does not");
        return;
    }
    if (!json_is_array(list) || json_array_size(list) != 1)
        FAIL("a converted line lacks the CSV's line item");
    json_t *item = json_array_get(list, 0);
    expect_string(json_object_get(item, "asset_amount"), "amount", amount);
    json_t *rates = json_object_get(item, "rates");
    if (!*rate) {
        if (rates != NULL)
            FAIL("a converted line has a rate the CSV does not");
        return;
    }
    if (!json_is_array(rates) || json_array_size(rates) != 1)
        FAIL("a converted line lacks the CSV's rate");
    expect_string(json_array_get(rates, 0), "amount", rate);
}

static void check_converted(const txconv_header *h, const char *const *f, const char *json,
                            const char *id)
{
    json_error_t je;
    json_t *tx = json_loads(json, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(tx))
        FAIL("a converted line's JSON does not parse");
    if (id != col(h, f, TXC_ID))
        FAIL("the returned id is not the line's id");
    expect_string(tx, "id", col(h, f, TXC_ID));
    expect_string(tx, "account_id", col(h, f, TXC_ACCOUNT));
    expect_string(tx, "datetime", col(h, f, TXC_DATETIME));
    expect_string(tx, "type", col(h, f, TXC_TYPE));
    if (*col(h, f, TXC_SUBTYPE))
        expect_string(tx, "subtype", col(h, f, TXC_SUBTYPE));
    else if (json_object_get(tx, "subtype") != NULL)
        FAIL("a converted line has a subtype the CSV does not");
    check_group(tx, "sent", h, f, 0);
    check_group(tx, "received", h, f, 1);
    check_group(tx, "fees", h, f, 2);
    json_decref(tx);
}

static void check_record(const csv_reader *r)
{
    if (r->n == 0)
        FAIL("a record without fields");
    for (size_t i = 0; i < r->n; i++) {
        const char *s = r->fields[i];
        if (s < r->buf || s >= r->buf + r->len || memchr(s, '\0', (size_t)(r->buf + r->len - s)) == NULL)
            FAIL("a field outside the reader's buffer");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *file = malloc(size ? size : 1); /* exact size: ASan sees a read past it */
    memcpy(file, data, size);
    csv_reader r;
    csv_open(&r, file, size);
    char msg[256];
    long line = 0, last = 0;
    txconv_header h;
    int rc = csv_next(&r, &line, msg, sizeof msg);
    if (rc == 1)
        check_record(&r);
    if (rc == 1 && txconv_header_read(&h, r.fields, r.n, msg, sizeof msg)) {
        txconv_buf json = {0}, problems = {0};
        while ((rc = csv_next(&r, &line, msg, sizeof msg)) != 0) {
            if (line < last)
                FAIL("a record's line number goes back");
            last = line;
            if (rc != 1)
                continue;
            check_record(&r);
            const char *id = NULL;
            if (txconv_csv(&h, r.fields, r.n, &json, &id, &problems))
                check_converted(&h, r.fields, json.s, id);
            else if (problems.s == NULL || problems.s[0] == '\0')
                FAIL("a refused line without a problem");
        }
        txconv_buf_free(&json);
        txconv_buf_free(&problems);
    }
    csv_close(&r);
    free(file);
    return 0;
}
