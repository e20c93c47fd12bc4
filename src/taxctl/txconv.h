/* taxctl/txconv: one line of an import file checked locally and turned into
 * the API's transaction JSON (TransactionWrite), so that a bad line is
 * reported with its number before anything is sent, and the service refuses
 * only what it alone can judge (an unknown account, a moved id).
 *
 * Amounts stay the decimal strings of the file: their syntax and range are
 * checked (digits, at most 20 integer and 18 significant fractional digits,
 * a line item's amount above zero), never converted to a number.
 *
 * CSV columns (any order, header row first): id, account_id, datetime,
 * type, subtype and, for each of sent / received / fee, <g>_asset,
 * <g>_amount, <g>_usd_rate. An asset is "CODE" or "CODE:TYPE"; without a
 * type, a common ISO 4217 currency code is fiat and any other code crypto. */
#ifndef TAXCTL_TXCONV_H
#define TAXCTL_TXCONV_H

#include <stdbool.h>
#include <stddef.h>

/* A growable string; s is NUL-terminated (or NULL while empty). */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} txconv_buf;

void txconv_buf_reset(txconv_buf *b);
void txconv_buf_free(txconv_buf *b);

enum {
    TXC_ID, TXC_ACCOUNT, TXC_DATETIME, TXC_TYPE, TXC_SUBTYPE,
    TXC_SENT_ASSET, TXC_SENT_AMOUNT, TXC_SENT_RATE,
    TXC_RECEIVED_ASSET, TXC_RECEIVED_AMOUNT, TXC_RECEIVED_RATE,
    TXC_FEE_ASSET, TXC_FEE_AMOUNT, TXC_FEE_RATE,
    TXC_N_COLUMNS
};

/* Where each known column is in a record (-1: absent), and how many fields
 * a record has. */
typedef struct {
    int at[TXC_N_COLUMNS];
    size_t n_fields;
} txconv_header;

/* Reads the header row. False with msg when a column is unknown or
 * repeated, or id, account_id, datetime or type is missing. */
bool txconv_header_read(txconv_header *h, const char *const *fields, size_t n, char *msg,
                        size_t msg_len);

/* One CSV record: true with the transaction's JSON in json (reset first)
 * and *id pointing into fields; false with every problem of the line in
 * problems ("; "-separated). */
bool txconv_csv(const txconv_header *h, const char *const *fields, size_t n, txconv_buf *json,
                const char **id, txconv_buf *problems);

/* One JSONL line (a TransactionWrite): true with *id malloc'd (the caller
 * frees it); false with every problem in problems. The line is sent as it
 * is. */
bool txconv_jsonl(const char *line, size_t len, char **id, txconv_buf *problems);

/* The checks, exposed for their tests. */
bool txconv_decimal_ok(const char *s, bool above_zero, const char **why);
bool txconv_datetime_ok(const char *s);
bool txconv_asset_code_ok(const char *s, size_t len);

#endif
