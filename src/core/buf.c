/* buf: see buf.h. */
#include "core/buf.h"

#include <string.h>

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
