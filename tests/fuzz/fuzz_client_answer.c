/* Fuzzes the client's readers of answers (src/client/transactions.c,
 * src/client/error.c). Input: byte 0 picks the batch size n = 1 + b0 % 8,
 * bytes 1-2 an HTTP status (big endian, mod 1000), the rest is the body.
 *
 * Properties (abort on violation):
 *  - tc_tx_scan_answer, the scanner that reads a batch answer without a
 *    JSON tree: whenever it accepts a body that is JSON (jansson parses
 *    it), the reference reading of the same body with jansson (the tree
 *    parser's rules: data is an array of n elements, element i has the
 *    integer index i and a known status; a refused element's http_status
 *    when it is an integer 100-599, else 400, its data's message and its
 *    data's data array as compact JSON) accepts it too and gives the same
 *    outcome, http_status, message and details for every element. On
 *    bodies that are not JSON only ASan's and the leak checker's word
 *    counts (the scanner does not validate JSON: see docs/decisions.md);
 *  - tc_error_from_answer on any body and status: a message for every
 *    status, the status and body kept, details (when set) valid JSON, and
 *    a message with no control character when the body was not JSON. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/internal.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

#define N_MAX 8

static const char *const STATUS[] = {"created", "updated", "unchanged", "error"};
static const taxd_tx_outcome OUTCOME[] = {TAXD_TX_CREATED, TAXD_TX_UPDATED, TAXD_TX_UNCHANGED,
                                          TAXD_TX_REFUSED};

/* The reference reading of element i; false when it is not readable. */
static bool ref_element(json_t *el, size_t i, taxd_tx_result *r)
{
    json_t *idx = json_object_get(el, "index");
    const char *status = json_string_value(json_object_get(el, "status"));
    if (!json_is_integer(idx) || json_integer_value(idx) != (json_int_t)i || status == NULL)
        return false;
    r->outcome = 0;
    for (size_t k = 0; k < 4; k++)
        if (strcmp(status, STATUS[k]) == 0)
            r->outcome = OUTCOME[k];
    if (r->outcome == 0)
        return false;
    if (r->outcome != TAXD_TX_REFUSED) {
        r->http_status = r->outcome == TAXD_TX_CREATED ? 201 : 200;
        return true;
    }
    json_t *hs = json_object_get(el, "http_status");
    json_int_t code = json_is_integer(hs) ? json_integer_value(hs) : 0;
    r->http_status = code >= 100 && code <= 599 ? (int)code : 400;
    json_t *data = json_object_get(el, "data");
    const char *message = json_string_value(json_object_get(data, "message"));
    r->message = message ? strdup(message) : NULL;
    json_t *issues = json_object_get(data, "data");
    if (json_is_array(issues))
        r->details = json_dumps(issues, JSON_COMPACT);
    return true;
}

static bool ref_answer(json_t *doc, size_t n, taxd_tx_result *r)
{
    json_t *data = json_object_get(doc, "data");
    if (!json_is_array(data) || json_array_size(data) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!ref_element(json_array_get(data, i), i, &r[i]))
            return false;
    return true;
}

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void check_scanner(const char *body, size_t len, size_t n)
{
    taxd_tx_result got[N_MAX], want[N_MAX];
    memset(got, 0, sizeof got);
    memset(want, 0, sizeof want);
    bool accepted = tc_tx_scan_answer(body, len, n, got);
    json_t *doc = json_loadb(body, len, 0, NULL);
    if (accepted && doc != NULL) {
        if (!ref_answer(doc, n, want))
            FAIL("the scanner accepts a batch answer the tree parser refuses");
        for (size_t i = 0; i < n; i++) {
            if (got[i].outcome != want[i].outcome)
                FAIL("the scanner's outcome differs from the tree parser's");
            if (got[i].http_status != want[i].http_status)
                FAIL("the scanner's http_status differs from the tree parser's");
            if (!same_text(got[i].message, want[i].message))
                FAIL("the scanner's message differs from the tree parser's");
            if (!same_text(got[i].details, want[i].details))
                FAIL("the scanner's details differ from the tree parser's");
        }
    }
    json_decref(doc);
    for (size_t i = 0; i < n; i++) {
        taxd_tx_result_clear(&got[i]);
        taxd_tx_result_clear(&want[i]);
    }
}

static void check_error(int status, const char *body, size_t len)
{
    taxd_error err = {0};
    json_t *doc = json_loadb(body, len, 0, NULL);
    if (tc_error_from_answer(&err, status, body, len, "req-1", -1) != TAXD_E_HTTP)
        FAIL("tc_error_from_answer does not return TAXD_E_HTTP");
    if (err.code != TAXD_E_HTTP || err.status != status)
        FAIL("the error does not keep its code and status");
    if (err.message == NULL || err.message[0] == '\0')
        FAIL("an error answer without a message");
    if (err.body == NULL || memcmp(err.body, body, len) != 0 || err.body[len] != '\0')
        FAIL("the error does not keep the body");
    if (err.request_id == NULL || strcmp(err.request_id, "req-1") != 0)
        FAIL("the error does not keep the request id");
    if (err.details != NULL) {
        json_t *d = json_loads(err.details, 0, NULL);
        if (!json_is_array(d))
            FAIL("details are not a JSON array");
        json_decref(d);
    }
    if (!json_is_object(doc))
        for (const unsigned char *p = (const unsigned char *)err.message; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                FAIL("a message made from a non-JSON body holds a control character");
    json_decref(doc);
    taxd_error_clear(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    size_t n = 1 + data[0] % N_MAX;
    int status = ((data[1] << 8) | data[2]) % 1000;
    size_t len = size - 3;
    /* An exact-size copy, so that ASan sees any read past the body. */
    char *body = malloc(len ? len : 1);
    memcpy(body, data + 3, len);
    check_scanner(body, len, n);
    check_error(status, body, len);
    free(body);
    return 0;
}
