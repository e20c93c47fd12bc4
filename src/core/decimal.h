/* decimal: exact decimal numbers for quantities and money. A dec_t is an
 * integer count of 10^-18 (18 fractional digits) in a signed 384-bit integer
 * (six 64-bit limbs, two's complement), limited to |value| < 10^96: up to 96
 * integer digits. Addition and subtraction are exact; a product or quotient
 * is computed exactly (a 768-bit intermediate) and rounded once, half to
 * even, to 18 fractional digits (the one rounding rule of taxd's derived
 * values: unit costs, average costs, the cost of part of a lot). Every
 * operation reports overflow instead of wrapping, and parsing refuses what it
 * cannot represent exactly (more than 18 fractional digits, 97 or more
 * integer digits) instead of rounding it silently. No binary floating point
 * is involved anywhere.
 *
 * Why so wide: the range is what the inventory's totals need, not what a
 * client may send. What a client may send is narrower (core/domain.h,
 * DOMAIN_AMOUNT_INT_DIGITS, checked with dec_fits_int_digits), and
 * docs/decisions.md (Amounts and the range of totals) proves that no
 * history of fewer than 2^48 transactions within those limits can take a
 * total, product or quotient of the inventory engine past 10^96. */
#ifndef TAXD_CORE_DECIMAL_H
#define TAXD_CORE_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEC_SCALE 18
#define DEC_MAX_INT_DIGITS 96
#define DEC_LIMBS 6
/* "-" + 96 digits + "." + 18 digits + NUL */
#define DEC_TEXT_MAX 117

typedef struct dec {
    uint64_t limb[DEC_LIMBS]; /* value x 10^18, two's complement, limb[0] lowest */
} dec_t;

typedef enum dec_status {
    DEC_OK = 0,
    DEC_SYNTAX,    /* not -?digits(.digits)? */
    DEC_PRECISION, /* more than 18 fractional digits that are not zero */
    DEC_RANGE,     /* |value| >= 10^96, or a result that would be */
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

/* True when |a| < 10^digits: at most `digits` integer digits (digits <=
 * DEC_MAX_INT_DIGITS). The check of the domain's input limits. */
bool dec_fits_int_digits(dec_t a, unsigned digits);

dec_status_t dec_add(dec_t a, dec_t b, dec_t *out);
dec_status_t dec_sub(dec_t a, dec_t b, dec_t *out);
/* a x b, rounded half to even to 18 fractional digits. */
dec_status_t dec_mul(dec_t a, dec_t b, dec_t *out);
/* a / b, rounded half to even to 18 fractional digits. */
dec_status_t dec_div(dec_t a, dec_t b, dec_t *out);
/* a x b / c computed with one rounding (the cost of part of a lot:
 * cost x part / quantity), half to even. */
dec_status_t dec_mul_div(dec_t a, dec_t b, dec_t c, dec_t *out);

/* a rounded to cents (2 fractional digits), half up: a half cent goes away
 * from zero (1.005 -> 1.01, -1.005 -> -1.01). Money's one rounding (the
 * engine rounds each disposal's proceeds and costs and each lot's cost with
 * it: inventory/engine.h). DEC_RANGE when the rounded value is out of
 * range (*out untouched). */
dec_status_t dec_round_cents(dec_t a, dec_t *out);

#endif
