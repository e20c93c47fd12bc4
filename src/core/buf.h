/* buf: appending to a caller-provided fixed buffer without printf. The hot
 * request path (ids, bucket keys, header values, the access-log line) runs
 * for every request, and vfprintf was its largest user-space cost. Appends
 * past the capacity are dropped and remembered in `overflow`; the content is
 * always NUL-terminated. */
#ifndef TAXD_CORE_BUF_H
#define TAXD_CORE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct buf {
    char *data;
    size_t len;
    size_t cap;     /* including room for the NUL */
    bool overflow;
} buf_t;

/* Copies src into the plain array dst[cap] (cap >= 1), cut to fit and always
 * NUL-terminated; NULL copies as "". False when src was cut. */
bool buf_copy(char *dst, size_t cap, const char *src);

/* A buffer over storage[0..cap), cap >= 1, starting empty. */
buf_t buf_over(char *storage, size_t cap);
void buf_put(buf_t *b, const char *s, size_t n);
void buf_puts(buf_t *b, const char *s);
void buf_putc(buf_t *b, char c);
void buf_put_u64(buf_t *b, uint64_t v);
void buf_put_i64(buf_t *b, int64_t v);
/* v in decimal, zero-padded to at least `width` digits. */
void buf_put_dec(buf_t *b, uint64_t v, unsigned width);
/* s as a JSON string (NULL as null): quotes, backslashes and control
 * characters escaped as JavaScript's JSON.stringify does, anything else,
 * UTF-8 included, as it is. */
void buf_put_json_string(buf_t *b, const char *s);
/* The escape buf_put_json_string writes for byte c, in out; its length, or
 * 0 when c is written as it is. The one escape table of taxd's JSON strings
 * (core/dbuf and the webhook body use it too). */
size_t buf_json_escape(unsigned char c, char out[6]);
/* v as exactly `width` lowercase hex digits (the low 4*width bits). */
void buf_put_hex(buf_t *b, uint64_t v, unsigned width);

#endif
