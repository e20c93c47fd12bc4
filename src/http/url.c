/* url: splitting and percent-decoding of the raw request target.
 *
 * Design. Everything works on the raw bytes libmicrohttpd logged before its own
 * decoding, so "%2F" inside an id never turns into a path separator. One byte
 * decoder (url_decode_byte) is shared by url_decode and the query lookup, so the
 * two can never disagree on what is malformed.
 *
 * Strictness. A '%' must be followed by two hex digits, and a decoded NUL byte
 * (from "%00", or a raw NUL inside the given length) is refused: every decoded
 * string is then a valid C string whose strlen equals the decoded length, and no
 * later strcmp can be fooled by a truncated value. Bytes >= 0x80 pass through
 * unchanged; UTF-8 validity is the validator's business, not the decoder's.
 *
 * Query lookup decodes names on the fly while comparing, so it allocates only
 * the value it returns. It validates the whole query, not just the pairs before
 * the match, so whether a query is "malformed" does not depend on the order of
 * its parameters or on which one a handler asks for. The cost is one pass over
 * the query per lookup, which is small next to everything else a request does.
 */
#include "http/url.h"

#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"

void url_split(const char *target, size_t *path_len, const char **query)
{
    const char *q = strchr(target, '?');
    if (q == NULL) {
        *path_len = strlen(target);
        *query = target + *path_len;
        return;
    }
    *path_len = (size_t)(q - target);
    *query = q + 1;
}

/* Decodes the byte at src[*i] (advancing *i past it and any escape) into *out.
 * Returns 0, or -1 for a malformed escape or a NUL byte. */
static int url_decode_byte(const char *src, size_t len, size_t *i, bool plus_is_space,
                           unsigned char *out)
{
    char c = src[*i];
    if (c == '\0')
        return -1;
    if (c == '+' && plus_is_space) {
        *out = ' ';
        *i += 1;
        return 0;
    }
    if (c != '%') {
        *out = (unsigned char)c;
        *i += 1;
        return 0;
    }
    if (len - *i < 3)
        return -1;
    int hi = crypto_hex_value(src[*i + 1]);
    int lo = crypto_hex_value(src[*i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
        return -1;
    *out = (unsigned char)(hi * 16 + lo);
    *i += 3;
    return 0;
}

long url_decode(const char *src, size_t len, char *dst, bool plus_is_space)
{
    size_t i = 0;
    size_t n = 0;
    while (i < len) {
        unsigned char b;
        if (url_decode_byte(src, len, &i, plus_is_space, &b) != 0)
            return -1;
        dst[n++] = (char)b;
    }
    dst[n] = '\0';
    return (long)n;
}

/* Checks that src[0..len) decodes without error, writing nothing. */
static bool url_is_valid(const char *src, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char b;
        if (url_decode_byte(src, len, &i, true, &b) != 0)
            return false;
    }
    return true;
}

/* Compares the decoded form of src[0..len) with name. Returns 1 when equal,
 * 0 when different, -1 when src is malformed (checked to the end either way). */
static int url_name_equals(const char *src, size_t len, const char *name)
{
    size_t i = 0;
    size_t k = 0;
    bool equal = true;
    while (i < len) {
        unsigned char b;
        if (url_decode_byte(src, len, &i, true, &b) != 0)
            return -1;
        if (equal && (name[k] == '\0' || (unsigned char)name[k] != b))
            equal = false;
        if (equal)
            k++;
    }
    return equal && name[k] == '\0';
}

static int url_decode_value(const char *src, size_t len, char **value)
{
    char *out = malloc(len + 1);
    if (out == NULL)
        return -1;
    if (url_decode(src, len, out, true) < 0) {
        free(out);
        return -1;
    }
    *value = out;
    return 1;
}

int url_query_get(const char *query, const char *name, char **value)
{
    *value = NULL;
    const char *found = NULL;
    size_t found_len = 0;
    const char *p = query;
    while (*p != '\0') {
        size_t pair_len = strcspn(p, "&");
        const char *eq = memchr(p, '=', pair_len);
        size_t name_len = eq != NULL ? (size_t)(eq - p) : pair_len;
        const char *val = eq != NULL ? eq + 1 : p + pair_len;
        size_t val_len = (size_t)(p + pair_len - val);
        int same = url_name_equals(p, name_len, name);
        if (same < 0 || !url_is_valid(val, val_len))
            return -1;
        if (same == 1 && found == NULL) {
            found = val;
            found_len = val_len;
        }
        p += pair_len;
        if (*p == '&')
            p++;
    }
    if (found == NULL)
        return 0;
    return url_decode_value(found, found_len, value);
}
