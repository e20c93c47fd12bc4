/* buf: see buf.h. */
#include "core/buf.h"

#include <string.h>

bool buf_copy(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strnlen(src, cap) : 0;
    bool whole = n < cap;
    if (!whole)
        n = cap - 1;
    memcpy(dst, src != NULL ? src : "", n);
    dst[n] = '\0';
    return whole;
}

buf_t buf_over(char *storage, size_t cap)
{
    buf_t b = {storage, 0, cap, false};
    storage[0] = '\0';
    return b;
}

void buf_put(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->overflow = true;
        return;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_puts(buf_t *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

void buf_putc(buf_t *b, char c)
{
    buf_put(b, &c, 1);
}

void buf_put_dec(buf_t *b, uint64_t v, unsigned width)
{
    char digits[20];
    unsigned n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n < width && n < sizeof digits)
        digits[sizeof digits - 1 - n++] = '0';
    buf_put(b, digits + sizeof digits - n, n);
}

void buf_put_u64(buf_t *b, uint64_t v)
{
    buf_put_dec(b, v, 1);
}

void buf_put_i64(buf_t *b, int64_t v)
{
    if (v < 0) {
        buf_putc(b, '-');
        buf_put_u64(b, (uint64_t)0 - (uint64_t)v); /* INT64_MIN too */
        return;
    }
    buf_put_u64(b, (uint64_t)v);
}

void buf_put_hex(buf_t *b, uint64_t v, unsigned width)
{
    static const char HEX[] = "0123456789abcdef";
    char out[16];
    if (width > sizeof out)
        width = sizeof out;
    for (unsigned i = 0; i < width; i++)
        out[width - 1 - i] = HEX[(v >> (4 * i)) & 0xf];
    buf_put(b, out, width);
}

size_t buf_json_escape(unsigned char c, char out[6])
{
    static const char HEX[] = "0123456789abcdef";
    char named = 0;
    switch (c) {
    case '"': named = '"'; break;
    case '\\': named = '\\'; break;
    case '\b': named = 'b'; break;
    case '\f': named = 'f'; break;
    case '\n': named = 'n'; break;
    case '\r': named = 'r'; break;
    case '\t': named = 't'; break;
    default:
        if (c >= 0x20)
            return 0;
        memcpy(out, "\\u00", 4);
        out[4] = HEX[c >> 4];
        out[5] = HEX[c & 0xf];
        return 6;
    }
    out[0] = '\\';
    out[1] = named;
    return 2;
}

void buf_put_json_string(buf_t *b, const char *s)
{
    if (s == NULL) {
        buf_put(b, "null", 4);
        return;
    }
    buf_putc(b, '"');
    const unsigned char *p = (const unsigned char *)s, *run = p;
    for (; *p != '\0'; p++) {
        char esc[6];
        size_t n = buf_json_escape(*p, esc);
        if (n == 0)
            continue;
        buf_put(b, (const char *)run, (size_t)(p - run)); /* the plain run before it */
        buf_put(b, esc, n);
        run = p + 1;
    }
    buf_put(b, (const char *)run, (size_t)(p - run));
    buf_putc(b, '"');
}
