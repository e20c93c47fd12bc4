/* decimal: exact decimal numbers for quantities and money. A dec_t is an
 * integer count of 10^-18: 18 fractional digits and up to 20 integer digits
 * (|value| < 10^20), in a signed 128-bit integer. Addition and subtraction are
 * exact; a product or quotient is computed exactly and rounded once, half to
 * even, to 18 fractional digits (the one rounding rule of taxd's derived
 * values: unit costs, average costs, the cost of part of a lot). Every
 * operation reports overflow instead of wrapping, and parsing refuses what it
 * cannot represent exactly (more than 18 fractional digits, 21 or more
 * integer digits) instead of rounding it silently. No binary floating point
 * is involved anywhere. */
#ifndef TAXD_CORE_DECIMAL_H
#define TAXD_CORE_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEC_SCALE 18
#define DEC_MAX_INT_DIGITS 20
/* "-" + 20 digits + "." + 18 digits + NUL */
#define DEC_TEXT_MAX 42

typedef struct dec {
    __int128 units; /* value x 10^18 */
} dec_t;

typedef enum dec_status {
    DEC_OK = 0,
    DEC_SYNTAX,    /* not -?digits(.digits)? */
    DEC_PRECISION, /* more than 18 fractional digits that are not zero */
    DEC_RANGE,     /* |value| >= 10^20, or a result that would be */
    DEC_DIV_ZERO,
} dec_status_t;

const char *dec_status_message(dec_status_t status);

/* Parses a plain decimal string of len bytes ("12", "-0.5", "1.50"):
 * no exponent, no '+', no leading or trailing '.', no spaces. Trailing
 * fractional zeros beyond 18 digits are accepted ("1.0000000000000000000"). */
dec_status_t dec_parse(const char *text, size_t len, dec_t *out);

/* Writes the canonical form: no exponent, no trailing fractional zeros, no
 * '.' for integers, "0" for zero ("20005", "0.5", "-1.25"). out needs
 * DEC_TEXT_MAX bytes. Returns the length. */
size_t dec_format(dec_t value, char *out);

dec_t dec_zero(void);
dec_t dec_from_int(int64_t n);
bool dec_is_zero(dec_t a);
bool dec_is_negative(dec_t a);
int dec_cmp(dec_t a, dec_t b);
dec_t dec_neg(dec_t a);
dec_t dec_abs(dec_t a);

dec_status_t dec_add(dec_t a, dec_t b, dec_t *out);
dec_status_t dec_sub(dec_t a, dec_t b, dec_t *out);
/* a x b, rounded half to even to 18 fractional digits. */
dec_status_t dec_mul(dec_t a, dec_t b, dec_t *out);
/* a / b, rounded half to even to 18 fractional digits. */
dec_status_t dec_div(dec_t a, dec_t b, dec_t *out);
/* a x b / c computed with one rounding (the cost of part of a lot:
 * cost x part / quantity), half to even. */
dec_status_t dec_mul_div(dec_t a, dec_t b, dec_t c, dec_t *out);

#endif
