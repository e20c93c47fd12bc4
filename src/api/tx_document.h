/* tx_document: the transaction document of POST /v1/transactions/external-id
 * without HTTP: the rules a body must meet and the canonical form that is
 * stored and answered. Pure functions over jansson values (no request, no
 * store), so the handler (api/transactions.c) and the fuzzer
 * (tests/fuzz/fuzz_tx.c) run the very same code.
 *
 * The canonical form is a fixed point: its compact text, parsed, checked and
 * canonicalized again, gives the same bytes (tests/fuzz/fuzz_tx.c asserts it),
 * which is what lets a resend be compared byte for byte. */
#ifndef TAXD_API_TX_DOCUMENT_H
#define TAXD_API_TX_DOCUMENT_H

#include <stdint.h>

#include <jansson.h>

/* The three line arrays, in the order of store_line_kind_t. */
#define TX_DOCUMENT_ARRAY_COUNT 3
extern const char *const TX_DOCUMENT_ARRAYS[TX_DOCUMENT_ARRAY_COUNT];

/* Every issue of one transaction (v_issue objects, paths relative to it): an
 * empty array when it is valid, and then *datetime_ms is its instant. The
 * caller owns the array. */
json_t *tx_document_check(const json_t *body, int64_t *datetime_ms);

/* The canonical document of a body tx_document_check found valid: fixed key
 * order, canonical decimals, the datetime in UTC with milliseconds, absent
 * optional parts as null or []. A new reference the caller owns; NULL when
 * memory ran out. */
json_t *tx_document_canonical(const json_t *body, int64_t datetime_ms);

#endif
