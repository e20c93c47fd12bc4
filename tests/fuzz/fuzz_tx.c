/* Fuzzes the transaction document (api/tx_document.c) the way
 * POST /v1/transactions/external-id runs it: parse the body, check it, build
 * the canonical document and its compact text (what is stored and answered).
 * Input: a request body (an object, or an array: a batch, each element
 * checked on its own).
 *
 * Properties (abort on violation):
 *  - fixed point: the canonical text, parsed, checked and canonicalized
 *    again, is valid, has the same instant and gives the same bytes;
 *  - the canonical document keeps the values: each amount and rate is the
 *    same decimal as sent, in canonical form (dec_format of itself), and the
 *    codes, types and ids are unchanged;
 *  - the datetime is "YYYY-MM-DDTHH:MM:SS.mmmZ" in years 0001-9999 and is the
 *    instant the check returned;
 *  - the canonical values fit the store's fixed-size line fields (no silent
 *    truncation by store_lines);
 *  - a refused body has at least one issue, and its error body serializes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tx_document.h"
#include "core/clock.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/validate.h"
#include "http/errors.h"
#include "store/transactions.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

static char *dump(const json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    if (text == NULL)
        FAIL("the canonical document does not serialize");
    return text;
}

static void same_decimal(const json_t *sent_obj, const json_t *canon_obj)
{
    const char *sent = json_string_value(json_object_get(sent_obj, "amount"));
    const char *canon = json_string_value(json_object_get(canon_obj, "amount"));
    dec_t a, b;
    char again[DEC_TEXT_MAX];
    if (sent == NULL || canon == NULL || dec_parse(sent, strlen(sent), &a) != DEC_OK ||
        dec_parse(canon, strlen(canon), &b) != DEC_OK)
        FAIL("an amount of a valid document does not parse");
    if (dec_cmp(a, b) != 0)
        FAIL("the canonical amount is another number");
    dec_format(b, again);
    if (strcmp(again, canon) != 0)
        FAIL("the canonical amount is not in canonical form");
    if (strlen(canon) >= STORE_DEC_MAX)
        FAIL("the canonical amount does not fit the store's field");
    const json_t *sa = json_object_get(sent_obj, "asset"), *ca = json_object_get(canon_obj, "asset");
    if (!json_equal(json_object_get(sa, "code"), json_object_get(ca, "code")) ||
        !json_equal(json_object_get(sa, "type"), json_object_get(ca, "type")))
        FAIL("the canonical asset differs from the one sent");
    if (json_string_length(json_object_get(ca, "code")) >= DOMAIN_ASSET_CODE_SIZE ||
        json_string_length(json_object_get(ca, "type")) >= DOMAIN_ASSET_TYPE_SIZE)
        FAIL("the asset does not fit the store's fields");
}

/* Every line of body is in canon, in order, with the same values. */
static void same_lines(const json_t *body, const json_t *canon)
{
    for (int a = 0; a < TX_DOCUMENT_ARRAY_COUNT; a++) {
        const json_t *in = json_object_get(body, TX_DOCUMENT_ARRAYS[a]);
        const json_t *out = json_object_get(canon, TX_DOCUMENT_ARRAYS[a]);
        if (!json_is_array(out) || json_array_size(out) != json_array_size(in))
            FAIL("the canonical document lost or added line items");
        for (size_t i = 0; i < json_array_size(in); i++) {
            const json_t *li = json_array_get(in, i), *lo = json_array_get(out, i);
            same_decimal(json_object_get(li, "asset_amount"), json_object_get(lo, "asset_amount"));
            const json_t *ri = json_object_get(li, "rates"), *ro = json_object_get(lo, "rates");
            if (json_array_size(ri) != json_array_size(ro))
                FAIL("the canonical document lost or added rates");
            for (size_t r = 0; r < json_array_size(ri); r++)
                same_decimal(json_array_get(ri, r), json_array_get(ro, r));
        }
    }
}

static void check_datetime(const json_t *canon, int64_t ms)
{
    const char *when = json_string_value(json_object_get(canon, "datetime"));
    int64_t back = 0;
    int year = 0, mo, d, h, mi, s, frac;
    char z = 0;
    if (when == NULL || strlen(when) != 24 ||
        sscanf(when, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &year, &mo, &d, &h, &mi, &s, &frac, &z) != 8 ||
        z != 'Z')
        FAIL("the canonical datetime is not YYYY-MM-DDTHH:MM:SS.mmmZ");
    if (year < 1 || year > 9999)
        FAIL("the canonical datetime is outside years 0001-9999");
    if (clock_parse_rfc3339(when, &back) != 0 || back != ms)
        FAIL("the canonical datetime is not the instant checked");
}

static void check_valid(const json_t *body, int64_t ms)
{
    json_t *canon = tx_document_canonical(body, ms);
    if (canon == NULL)
        FAIL("no canonical document for a valid body");
    static const char *const KEPT[] = {"id", "account_id", "type"};
    for (size_t i = 0; i < 3; i++)
        if (!json_equal(json_object_get(body, KEPT[i]), json_object_get(canon, KEPT[i])))
            FAIL("the canonical document changed an id or the type");
    if (json_string_length(json_object_get(canon, "id")) > DOMAIN_ID_MAX ||
        json_string_length(json_object_get(canon, "account_id")) > DOMAIN_ID_MAX)
        FAIL("an id longer than DOMAIN_ID_MAX bytes was accepted");
    same_lines(body, canon);
    check_datetime(canon, ms);
    char *text = dump(canon);

    char msg[256];
    json_t *again = v_parse_body_any(text, strlen(text), "application/json", msg, sizeof msg);
    if (again == NULL)
        FAIL("the canonical text does not parse");
    int64_t ms2 = 0;
    json_t *issues = tx_document_check(again, &ms2);
    if (json_array_size(issues) != 0)
        FAIL("the canonical document is refused");
    if (ms2 != ms)
        FAIL("the canonical document is another instant");
    json_t *canon2 = tx_document_canonical(again, ms2);
    char *text2 = dump(canon2);
    if (strcmp(text, text2) != 0)
        FAIL("the canonical form is not a fixed point");
    free(text2);
    json_decref(canon2);
    json_decref(issues);
    json_decref(again);
    free(text);
    json_decref(canon);
}

static void check_one(const json_t *body)
{
    int64_t ms = 0;
    json_t *issues = tx_document_check(body, &ms);
    if (json_array_size(issues) == 0) {
        json_decref(issues);
        check_valid(body, ms);
        return;
    }
    json_t *err = error_body_transactions("Validation failed", "ValidationError", issues);
    char *text = json_dumps(err, JSON_COMPACT);
    if (text == NULL)
        FAIL("a validation error body does not serialize");
    free(text);
    json_decref(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[256];
    json_t *body = v_parse_body_any((const char *)data, size, "application/json", msg, sizeof msg);
    if (body == NULL)
        return 0;
    if (json_is_array(body))
        for (size_t i = 0; i < json_array_size(body) && i < 16; i++)
            check_one(json_array_get(body, i));
    else
        check_one(body);
    json_decref(body);
    return 0;
}
