/* dbuf: a growable byte string for text built piece by piece: a canonical
 * JSON body (webhooks/payload), a metrics page (http/metrics, the webhook
 * engine's). core/buf is its fixed-size sibling for the request path.
 * After an allocation fails, appends are dropped and `failed` says so, so a
 * writer checks once, at the end. The content is NUL-terminated once
 * anything was appended. The buffer owns `data` until dbuf_finish hands it
 * to the caller; dbuf_free drops it. */
#ifndef TAXD_CORE_DBUF_H
#define TAXD_CORE_DBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct dbuf {
    char *data;
    size_t len, cap;
    bool failed;
} dbuf_t;

/* An empty buffer with room for cap bytes before it first grows (a writer
 * that knows its size allocates once). A zeroed dbuf_t is also valid. */
void dbuf_init(dbuf_t *b, size_t cap);
void dbuf_put(dbuf_t *b, const char *s, size_t n);
void dbuf_puts(dbuf_t *b, const char *s);
void dbuf_printf(dbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The n bytes at s as a JSON string, escaped as core/buf's
 * buf_put_json_string escapes (the bytes are not checked for UTF-8). */
void dbuf_put_json_string(dbuf_t *b, const char *s, size_t n);

/* The text, malloc'd (the caller frees), and its length in *len (len may be
 * NULL); NULL when an append failed, the buffer freed either way. */
char *dbuf_finish(dbuf_t *b, size_t *len);
void dbuf_free(dbuf_t *b);

#endif
