/* framing: how a request says where its body ends (RFC 9112 § 6), judged
 * strictly so that taxd and any proxy in front of it can never disagree on
 * where one request ends and the next begins (request smuggling):
 *  - Content-Length and Transfer-Encoding together: 400, and the connection
 *    is closed (§ 6.1 lets a server go on only if it closes afterwards);
 *  - several Content-Length values that differ, or one that is not a plain
 *    decimal that fits in 63 bits: 400 (§ 6.3 items 4-5);
 *  - a Transfer-Encoding other than exactly "chunked": 501 (§ 6.1: a server
 *    that does not understand a coding answers 501).
 * A verdict other than FRAMING_OK always closes the connection: after it,
 * the rest of the byte stream cannot be read as requests. */
#ifndef TAXD_HTTP_FRAMING_H
#define TAXD_HTTP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum framing_verdict {
    FRAMING_OK = 0,
    FRAMING_BAD_REQUEST,     /* 400 */
    FRAMING_NOT_IMPLEMENTED, /* 501 */
} framing_verdict_t;

typedef struct framing {
    framing_verdict_t verdict;
    const char *reason;       /* static text for the error body when not OK */
    bool has_length;
    uint64_t content_length;  /* when has_length */
    bool chunked;
} framing_t;

/* Feeds one header field (name and value as received, value without its
 * surrounding whitespace); call for every field of the request, then read
 * the verdict. Start from framing_t f = {0}. */
void framing_add(framing_t *f, const char *name, size_t name_len, const char *value,
                 size_t value_len);

/* Judges a raw header block: everything after the request line up to, not
 * including, the empty line that ends it (fields separated by CRLF or LF).
 * Obsolete line folding and a field line without a colon are 400. */
framing_t framing_judge_block(const char *block, size_t len);

/* The status code of a verdict (200 for FRAMING_OK). */
int framing_status(framing_verdict_t verdict);

#endif
