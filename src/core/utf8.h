/* utf8: making arbitrary bytes safe to put in a JSON string. Ids arrive
 * percent-decoded from paths and may hold any byte; a message quoting one
 * must still be valid UTF-8 or it cannot be serialized at all. */
#ifndef TAXD_CORE_UTF8_H
#define TAXD_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 when it
 * is invalid (bad lead byte, truncated, overlong, surrogate, > U+10FFFF). */
size_t utf8_sequence(const unsigned char *s, size_t n);

/* The characters (code points) of the n bytes at s, counted by their lead
 * bytes: exact for valid UTF-8, which is all it is meant for. */
size_t utf8_chars(const char *s, size_t n);

/* Whether the n bytes at s are valid UTF-8 throughout. */
bool utf8_valid(const char *s, size_t n);

/* Copies in to out (cap bytes, NUL-terminated) replacing each invalid byte by
 * U+FFFD and never cutting a character in two; when it does not fit, the end
 * is replaced by "...". Returns the length written. */
size_t utf8_sanitize(const char *in, char *out, size_t cap);

#endif
