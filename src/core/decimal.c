/* decimal: see decimal.h.
 *
 * Products and quotients of two 10^-18 counts need up to 256 bits before
 * they are scaled back. They are formed exactly as a 256-bit magnitude (two
 * unsigned 128-bit halves) and divided by a 128-bit divisor with binary long
 * division, then rounded once. When both operands fit in 64 bits, which is
 * common for quantities, the product fits in 128 bits and the slow division
 * is skipped. Signs are handled apart from magnitudes, so every rounding is
 * of a non-negative quotient and "half to even" means the same for negative
 * results (symmetric). */
#include "core/decimal.h"

#include <string.h>

typedef unsigned __int128 u128;

typedef struct u256 {
    u128 hi, lo;
} u256_t;

#define POW10_18 ((u128)1000000000000000000ULL)
/* 10^38: the first magnitude out of range (|value| < 10^20). */
#define UNITS_LIMIT (POW10_18 * POW10_18 * 100)

const char *dec_status_message(dec_status_t status)
{
    switch (status) {
    case DEC_OK: return "ok";
    case DEC_SYNTAX: return "expected a plain decimal string such as \"12.50\"";
    case DEC_PRECISION: return "more than 18 fractional digits";
    case DEC_RANGE: return "outside the supported range (at most 20 integer digits)";
    case DEC_DIV_ZERO: return "division by zero";
    }
    return "invalid decimal";
}

static u128 magnitude(__int128 v)
{
    return v < 0 ? (u128)0 - (u128)v : (u128)v;
}

/* Applies a sign to a magnitude known to be below UNITS_LIMIT. */
static dec_t signed_of(u128 mag, bool negative)
{
    dec_t d = {negative ? -(__int128)mag : (__int128)mag};
    return d;
}

static u256_t mul_128(u128 a, u128 b)
{
    const u128 mask = ((u128)1 << 64) - 1;
    u128 a0 = a & mask, a1 = a >> 64, b0 = b & mask, b1 = b >> 64;
    u128 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    u128 middle = (p00 >> 64) + (p01 & mask) + (p10 & mask); /* < 3 * 2^64 */
    u256_t r;
    r.lo = (middle << 64) | (p00 & mask);
    r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (middle >> 64);
    return r;
}

/* n / d with the remainder; the caller guarantees n.hi < d, so the quotient
 * fits in 128 bits. */
static u128 div_256(u256_t n, u128 d, u128 *rem)
{
    if (n.hi == 0) {
        *rem = n.lo % d;
        return n.lo / d;
    }
    if ((d >> 64) == 0) {
        /* a divisor of one 64-bit limb (10^18, the scale, is one): schoolbook
         * division, a limb at a time, each step a 128-by-64 division whose
         * remainder (< d) keeps the next dividend below d * 2^64 */
        const u128 mask = ((u128)1 << 64) - 1;
        u128 r = n.hi % d, q = 0;
        for (int shift = 64; shift >= 0; shift -= 64) {
            u128 cur = (r << 64) | ((n.lo >> shift) & mask);
            q = (q << 64) | (cur / d);
            r = cur % d;
        }
        *rem = r;
        return q;
    }
    u128 r = n.hi, q = 0;
    for (int i = 127; i >= 0; i--) {
        bool carry = (r >> 127) != 0;
        r = (r << 1) | ((n.lo >> i) & 1);
        q <<= 1;
        if (carry || r >= d) {
            r -= d;
            q |= 1;
        }
    }
    *rem = r;
    return q;
}

/* n / d rounded half to even, when it is below UNITS_LIMIT. */
static dec_status_t divide_rounded(u256_t n, u128 d, u128 *out)
{
    if (n.hi >= d)
        return DEC_RANGE;
    u128 rem;
    u128 q = div_256(n, d, &rem);
    /* rem > d - rem is 2 * rem > d without overflowing: above half. */
    u128 rest = d - rem;
    if (rem > rest || (rem == rest && (q & 1) != 0))
        q++;
    if (q >= UNITS_LIMIT)
        return DEC_RANGE;
    *out = q;
    return DEC_OK;
}

dec_t dec_zero(void)
{
    dec_t d = {0};
    return d;
}

dec_t dec_from_int(int64_t n)
{
    dec_t d = {(__int128)n * (__int128)POW10_18};
    return d;
}

bool dec_is_zero(dec_t a)
{
    return a.units == 0;
}

bool dec_is_negative(dec_t a)
{
    return a.units < 0;
}

int dec_cmp(dec_t a, dec_t b)
{
    return a.units < b.units ? -1 : a.units > b.units;
}

dec_t dec_neg(dec_t a)
{
    a.units = -a.units; /* |units| < 10^38: never overflows */
    return a;
}

dec_t dec_abs(dec_t a)
{
    return a.units < 0 ? dec_neg(a) : a;
}

static dec_status_t in_range(__int128 v, dec_t *out)
{
    if (magnitude(v) >= UNITS_LIMIT)
        return DEC_RANGE;
    out->units = v;
    return DEC_OK;
}

/* Two in-range values can sum to nearly 2 x 10^38, past 2^127: checked. */
dec_status_t dec_add(dec_t a, dec_t b, dec_t *out)
{
    __int128 sum;
    if (__builtin_add_overflow(a.units, b.units, &sum))
        return DEC_RANGE;
    return in_range(sum, out);
}

dec_status_t dec_sub(dec_t a, dec_t b, dec_t *out)
{
    __int128 diff;
    if (__builtin_sub_overflow(a.units, b.units, &diff))
        return DEC_RANGE;
    return in_range(diff, out);
}

dec_status_t dec_mul(dec_t a, dec_t b, dec_t *out)
{
    u128 q;
    dec_status_t st = divide_rounded(mul_128(magnitude(a.units), magnitude(b.units)), POW10_18, &q);
    if (st != DEC_OK)
        return st;
    *out = signed_of(q, (a.units < 0) != (b.units < 0));
    return DEC_OK;
}

dec_status_t dec_div(dec_t a, dec_t b, dec_t *out)
{
    if (b.units == 0)
        return DEC_DIV_ZERO;
    u128 q;
    dec_status_t st =
        divide_rounded(mul_128(magnitude(a.units), POW10_18), magnitude(b.units), &q);
    if (st != DEC_OK)
        return st;
    *out = signed_of(q, (a.units < 0) != (b.units < 0));
    return DEC_OK;
}

dec_status_t dec_mul_div(dec_t a, dec_t b, dec_t c, dec_t *out)
{
    if (c.units == 0)
        return DEC_DIV_ZERO;
    u128 q;
    dec_status_t st = divide_rounded(mul_128(magnitude(a.units), magnitude(b.units)),
                                     magnitude(c.units), &q);
    if (st != DEC_OK)
        return st;
    *out = signed_of(q, ((a.units < 0) != (b.units < 0)) != (c.units < 0));
    return DEC_OK;
}

dec_status_t dec_parse(const char *text, size_t len, dec_t *out)
{
    size_t i = 0;
    bool negative = len > 0 && text[0] == '-';
    i += negative;
    u128 int_part = 0;
    size_t int_digits = 0, significant = 0;
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++, int_digits++) {
        significant += significant > 0 || text[i] != '0';
        if (significant > DEC_MAX_INT_DIGITS)
            return DEC_RANGE;
        int_part = int_part * 10 + (u128)(text[i] - '0');
    }
    if (int_digits == 0)
        return DEC_SYNTAX;
    u128 frac = 0;
    if (i < len) {
        if (text[i] != '.' || i + 1 == len)
            return DEC_SYNTAX;
        size_t frac_digits = 0;
        for (i++; i < len; i++, frac_digits++) {
            char c = text[i];
            if (c < '0' || c > '9')
                return DEC_SYNTAX;
            if (frac_digits < DEC_SCALE)
                frac = frac * 10 + (u128)(c - '0');
            else if (c != '0')
                return DEC_PRECISION;
        }
        for (; frac_digits < DEC_SCALE; frac_digits++)
            frac *= 10;
    }
    u128 units = int_part * POW10_18 + frac; /* int_part < 10^20: no overflow */
    if (units >= UNITS_LIMIT)
        return DEC_RANGE;
    *out = signed_of(units, negative);
    return DEC_OK;
}

size_t dec_format(dec_t value, char *out)
{
    u128 mag = magnitude(value.units);
    u128 int_part = mag / POW10_18;
    uint64_t frac = (uint64_t)(mag % POW10_18);
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + (int)(int_part % 10));
        int_part /= 10;
    } while (int_part != 0);
    size_t len = 0;
    if (value.units < 0)
        out[len++] = '-';
    while (n > 0)
        out[len++] = digits[--n];
    if (frac != 0) {
        out[len++] = '.';
        char f[DEC_SCALE];
        for (int k = DEC_SCALE - 1; k >= 0; k--) {
            f[k] = (char)('0' + (int)(frac % 10));
            frac /= 10;
        }
        size_t used = DEC_SCALE;
        while (used > 0 && f[used - 1] == '0')
            used--;
        memcpy(out + len, f, used);
        len += used;
    }
    out[len] = '\0';
    return len;
}
