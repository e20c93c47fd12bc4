/* dbuf: see dbuf.h. */
#include "core/dbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

void dbuf_init(dbuf_t *b, size_t cap)
{
    *b = (dbuf_t){0};
    if (cap == 0)
        return;
    b->data = malloc(cap + 1);
    if (b->data == NULL) {
        b->failed = true;
        return;
    }
    b->cap = cap + 1;
    b->data[0] = '\0';
}

/* Room for `extra` more bytes and the NUL; false once anything failed. */
static bool reserve(dbuf_t *b, size_t extra)
{
    if (b->failed)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    if (extra > ((size_t)-1) / 2 - b->len) { /* doubling below would overflow */
        b->failed = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *grown = realloc(b->data, cap);
    if (grown == NULL) {
        b->failed = true;
        return false;
    }
    b->data = grown;
    b->cap = cap;
    return true;
}

void dbuf_put(dbuf_t *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void dbuf_puts(dbuf_t *b, const char *s)
{
    dbuf_put(b, s, strlen(s));
}

void dbuf_printf(dbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void dbuf_put_json_string(dbuf_t *b, const char *s, size_t n)
{
    dbuf_put(b, "\"", 1);
    size_t run = 0; /* where the plain run since the last escape starts */
    for (size_t i = 0; i < n; i++) {
        char esc[6];
        size_t len = buf_json_escape((unsigned char)s[i], esc);
        if (len == 0)
            continue;
        dbuf_put(b, s + run, i - run);
        dbuf_put(b, esc, len);
        run = i + 1;
    }
    dbuf_put(b, s + run, n - run);
    dbuf_put(b, "\"", 1);
}

char *dbuf_finish(dbuf_t *b, size_t *len)
{
    if (!b->failed && b->data == NULL)
        reserve(b, 0); /* nothing appended: still a string */
    if (b->failed) {
        dbuf_free(b);
        return NULL;
    }
    if (b->len == 0)
        b->data[0] = '\0';
    char *text = b->data;
    if (len != NULL)
        *len = b->len;
    *b = (dbuf_t){0};
    return text;
}

void dbuf_free(dbuf_t *b)
{
    free(b->data);
    *b = (dbuf_t){0};
}
