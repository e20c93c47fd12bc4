/* utf8: see utf8.h. */
#include "core/utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t utf8_sequence(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = (s[0] & 0xE0) == 0xC0   ? 2
                 : (s[0] & 0xF0) == 0xE0 ? 3
                 : (s[0] & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (len == 0 || n < len)
        return 0;
    uint32_t cp = s[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t MIN[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < MIN[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

size_t utf8_chars(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += ((unsigned char)s[i] & 0xC0) != 0x80;
    return count;
}

/* The sanitized length of in[0..n): each invalid byte counts 3 (U+FFFD). */
static size_t sanitized_length(const char *in, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_sequence((const unsigned char *)in + i, n - i);
        total += len > 0 ? len : 3;
        i += len > 0 ? len : 1;
    }
    return total;
}

bool utf8_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = utf8_sequence((const unsigned char *)s + i, n - i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

size_t utf8_sanitize(const char *in, char *out, size_t cap)
{
    static const char REPLACEMENT[] = "\xEF\xBF\xBD";
    static const char ELLIPSIS[] = "...";
    size_t n = strlen(in);
    bool whole = sanitized_length(in, n) < cap;
    /* Without room for all of it, stop early enough to add "..." */
    size_t limit = whole ? cap - 1 : (cap > sizeof ELLIPSIS ? cap - sizeof ELLIPSIS : 0);
    size_t used = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_sequence((const unsigned char *)in + i, n - i);
        const char *piece = len > 0 ? in + i : REPLACEMENT;
        size_t piece_len = len > 0 ? len : sizeof REPLACEMENT - 1;
        if (used + piece_len > limit)
            break;
        memcpy(out + used, piece, piece_len);
        used += piece_len;
        i += len > 0 ? len : 1;
    }
    if (!whole && cap >= sizeof ELLIPSIS) {
        memcpy(out + used, ELLIPSIS, sizeof ELLIPSIS - 1);
        used += sizeof ELLIPSIS - 1;
    }
    out[used] = '\0';
    return used;
}
