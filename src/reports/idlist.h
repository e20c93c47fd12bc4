/* reports/idlist: a report's skipped account ids without a copy of them.
 *
 * A scoped report stores its requested ids once, as the compact JSON array
 * of strings it was given (store/reports.h). The ids it skipped are a bitmap
 * over the positions of that array (bit i is byte i / 8, 1 << (i % 8)), set
 * at the first appearance of each id that is no account. The status GET
 * lists them by walking the array and copying, verbatim, the elements whose
 * bit is set: the JSON text of an element is already the JSON of the id, so
 * nothing is decoded or re-encoded and no second list is ever built.
 *
 * Everything here is pure (no allocation, no I/O) and borrows its inputs. */
#ifndef TAXD_REPORTS_IDLIST_H
#define TAXD_REPORTS_IDLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the bitmap */

/* Bytes of the bitmap for `requested` positions. */
size_t report_skipped_size(int64_t requested);
/* Sets bit pos (0 <= pos, pos / 8 < len; ignored otherwise). */
void report_skipped_set(uint8_t *bits, size_t len, int64_t pos);
/* Bit pos; false beyond the bitmap. */
bool report_skipped_has(const uint8_t *bits, size_t len, int64_t pos);

/* ---- the stored array */

typedef struct report_idlist {
    const char *text;      /* the JSON array text, borrowed */
    size_t len;
    size_t pos;            /* next byte to look at */
    int64_t index;         /* position of the next element */
    bool started;          /* the '[' was read */
} report_idlist_t;

void report_idlist_begin(report_idlist_t *it, const char *text, size_t len);

/* The next element of the array: its JSON text (the quotes included) in
 * *elem, *elem_len bytes, and its position in *index. Returns 1, 0 after the
 * last element, or -1 when the text is not an array of JSON strings. */
int report_idlist_next(report_idlist_t *it, const char **elem, size_t *elem_len,
                       int64_t *index);

/* ---- the skipped elements, joined */

/* The skipped ids as the inside of a JSON array: the marked elements
 * separated by commas, without brackets, produced piece by piece. */
typedef struct report_skipped_reader {
    report_idlist_t list;
    const uint8_t *bits;
    size_t bits_len;
    const char *elem;      /* the element being copied */
    size_t elem_len, elem_done;
    bool need_comma;       /* an element was produced: the next starts with ',' */
    bool comma_pending;    /* the comma before `elem` is still to be written */
    bool done;
} report_skipped_reader_t;

void report_skipped_reader_begin(report_skipped_reader_t *r, const char *text, size_t len,
                                 const uint8_t *bits, size_t bits_len);

/* Writes up to max bytes into out; returns how many (0 once everything was
 * written), or -1 when the stored text is malformed. */
long report_skipped_read(report_skipped_reader_t *r, char *out, size_t max);

/* What report_skipped_read will produce in all: *bytes and *count (marked
 * elements). Returns 0, or -1 when the text is malformed. */
int report_skipped_measure(const char *text, size_t len, const uint8_t *bits, size_t bits_len,
                           uint64_t *bytes, int64_t *count);

/* ---- the trigger's body */

/* In a JSON object text that already parsed (the trigger's body), the value
 * of the top-level member "account_ids": *start and *span_len. False when
 * there is none, or when a key is written with escapes (the caller then
 * serializes the parsed array instead). */
bool report_body_ids_span(const char *body, size_t len, size_t *start, size_t *span_len);

/* Removes the whitespace outside strings of a JSON text, in place; returns
 * the new length. Escapes inside strings are kept as they are. */
size_t report_json_compact(char *text, size_t len);

#endif
