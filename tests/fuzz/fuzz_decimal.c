/* Fuzzes core/decimal against slow references written here. Input: up to
 * three decimal strings separated by single spaces ("1.5 -2 3"); each is
 * parsed, and the arithmetic runs on those that parse.
 *
 * Properties (abort on violation):
 *  - parsing: a string parses exactly when it is -?digits(.digits)? with at
 *    most 20 significant integer digits and no non-zero fractional digit
 *    past the 18th; a well-formed string is refused with the right reason
 *    (DEC_RANGE, DEC_PRECISION); dec_format of the value is the string's
 *    canonical form computed with string operations (leading and trailing
 *    zeros dropped, "-0" is "0"), and parsing that gives the value again;
 *  - add, sub: the exact sum or difference (a 1024-bit reference),
 *    DEC_RANGE exactly when it is 10^DEC_MAX_INT_DIGITS or more in magnitude;
 *  - mul, div, mul_div: the result q is the exact quotient N / D rounded
 *    half to even (checked as |N - q*D| <= D/2, ties to an even q, on
 *    1024-bit integers), with the right sign, and DEC_RANGE exactly when that
 *    rounded quotient reaches the range's limit; DEC_DIV_ZERO for a zero
 *    divisor. Only the public API is used: values reach the reference through
 *    dec_format's text, so the target holds whatever the width of dec_t;
 *  - dec_cmp agrees with the reference difference's sign. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/decimal.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

typedef unsigned __int128 u128;

/* ---- a slow unsigned 1024-bit integer ---------------------------------- *
 * Values reach the reference through their text (dec_format), never through
 * dec_t's representation, so the target holds for any width of dec_t: a
 * product of two values below 10^(DEC_MAX_INT_DIGITS + 18) units needs
 * 2 x log2(10) x (DEC_MAX_INT_DIGITS + 18) bits (758 for 96 integer digits). */

#define LIMBS 32
_Static_assert((DEC_MAX_INT_DIGITS + DEC_SCALE) * 2 * 332 / 100 + 8 < LIMBS * 32,
               "the reference is wide enough for a product");
typedef struct big {
    uint32_t w[LIMBS]; /* little-endian base 2^32 */
} big_t;

static big_t big_u128(u128 v)
{
    big_t b = {{0}};
    for (int i = 0; i < 4; i++, v >>= 32)
        b.w[i] = (uint32_t)v;
    return b;
}

/* a * 10 + digit */
static big_t big_push_digit(const big_t *a, unsigned digit)
{
    big_t r;
    uint64_t carry = digit;
    for (int i = 0; i < LIMBS; i++) {
        carry += (uint64_t)a->w[i] * 10;
        r.w[i] = (uint32_t)carry;
        carry >>= 32;
    }
    if (carry)
        FAIL("reference overflow");
    return r;
}

static int big_cmp(const big_t *a, const big_t *b)
{
    for (int i = LIMBS - 1; i >= 0; i--)
        if (a->w[i] != b->w[i])
            return a->w[i] < b->w[i] ? -1 : 1;
    return 0;
}

static big_t big_add(const big_t *a, const big_t *b)
{
    big_t r;
    uint64_t carry = 0;
    for (int i = 0; i < LIMBS; i++) {
        carry += (uint64_t)a->w[i] + b->w[i];
        r.w[i] = (uint32_t)carry;
        carry >>= 32;
    }
    if (carry)
        FAIL("reference overflow");
    return r;
}

/* a - b, a >= b */
static big_t big_sub(const big_t *a, const big_t *b)
{
    big_t r;
    int64_t borrow = 0;
    for (int i = 0; i < LIMBS; i++) {
        int64_t d = (int64_t)a->w[i] - b->w[i] - borrow;
        borrow = d < 0;
        r.w[i] = (uint32_t)(d + (borrow ? ((int64_t)1 << 32) : 0));
    }
    return r;
}

static big_t big_mul(const big_t *a, const big_t *b)
{
    big_t r = {{0}};
    for (int i = 0; i < LIMBS; i++) {
        uint64_t carry = 0;
        for (int j = 0; i + j < LIMBS; j++) {
            uint64_t t = (uint64_t)a->w[i] * b->w[j] + r.w[i + j] + carry;
            r.w[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
    }
    return r;
}

static bool big_is_zero(const big_t *a)
{
    for (int i = 0; i < LIMBS; i++)
        if (a->w[i])
            return false;
    return true;
}

static const u128 POW18 = (u128)1000000000000000000ULL;

/* 10^(DEC_MAX_INT_DIGITS + DEC_SCALE): the first magnitude, in units of
 * 10^-18, out of range. */
static big_t units_limit(void)
{
    static big_t limit;
    if (big_is_zero(&limit)) {
        limit = big_u128(1);
        for (int i = 0; i < DEC_MAX_INT_DIGITS + DEC_SCALE; i++)
            limit = big_push_digit(&limit, 0);
    }
    return limit;
}

/* ---- parsing ----------------------------------------------------------- */

/* The expected status of dec_parse, and the canonical text when DEC_OK. */
static dec_status_t reference_parse(const char *s, size_t n, char *canon)
{
    size_t i = 0;
    bool neg = n > 0 && s[0] == '-';
    i += neg;
    size_t int_start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    size_t int_end = i, frac_start = i, frac_end = i;
    if (int_end == int_start)
        return DEC_SYNTAX;
    if (i < n) {
        if (s[i] != '.')
            return DEC_SYNTAX;
        frac_start = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        frac_end = i;
        if (i < n || frac_end == frac_start)
            return DEC_SYNTAX;
    }
    while (int_start + 1 < int_end && s[int_start] == '0')
        int_start++;
    while (frac_end > frac_start && s[frac_end - 1] == '0')
        frac_end--;
    if (int_end - int_start > DEC_MAX_INT_DIGITS)
        return DEC_RANGE;
    if (frac_end - frac_start > DEC_SCALE)
        return DEC_PRECISION;
    bool zero = int_end - int_start == 1 && s[int_start] == '0' && frac_end == frac_start;
    size_t k = 0;
    if (neg && !zero)
        canon[k++] = '-';
    memcpy(canon + k, s + int_start, int_end - int_start);
    k += int_end - int_start;
    if (frac_end > frac_start) {
        canon[k++] = '.';
        memcpy(canon + k, s + frac_start, frac_end - frac_start);
        k += frac_end - frac_start;
    }
    canon[k] = '\0';
    return DEC_OK;
}

static bool check_parse(const char *s, size_t n, dec_t *out)
{
    char canon[DEC_TEXT_MAX + 8], text[DEC_TEXT_MAX];
    dec_status_t want = reference_parse(s, n, canon);
    dec_status_t got = dec_parse(s, n, out);
    /* A malformed string may be refused for its length first ("1234...x"):
     * only "refused" is required of it. */
    if (want == DEC_SYNTAX ? got == DEC_OK : got != want)
        FAIL("dec_parse's status disagrees with the reference");
    if (got != DEC_OK)
        return false;
    size_t len = dec_format(*out, text);
    if (len != strlen(text) || strcmp(text, canon) != 0)
        FAIL("dec_format(dec_parse(s)) is not the canonical form of s");
    dec_t again;
    if (dec_parse(text, len, &again) != DEC_OK || dec_cmp(again, *out) != 0)
        FAIL("the canonical form does not parse to the same value");
    return true;
}

/* ---- arithmetic -------------------------------------------------------- */

/* Signed reference value: magnitude and sign. */
typedef struct sbig {
    big_t m;
    bool neg;
} sbig_t;

/* The value's units, read from its canonical text by the reference's own
 * digit loop. */
static sbig_t sbig_of(dec_t d)
{
    char text[DEC_TEXT_MAX];
    size_t n = dec_format(d, text), i = 0;
    sbig_t r = {big_u128(0), n > 0 && text[0] == '-'};
    i += r.neg;
    for (; i < n && text[i] != '.'; i++)
        r.m = big_push_digit(&r.m, (unsigned)(text[i] - '0'));
    size_t frac = 0;
    for (i += i < n; i < n; i++, frac++)
        r.m = big_push_digit(&r.m, (unsigned)(text[i] - '0'));
    for (; frac < DEC_SCALE; frac++)
        r.m = big_push_digit(&r.m, 0);
    if (r.neg && big_is_zero(&r.m))
        FAIL("dec_format wrote a negative zero");
    return r;
}

static sbig_t sbig_add(sbig_t a, sbig_t b)
{
    sbig_t r;
    if (a.neg == b.neg) {
        r.m = big_add(&a.m, &b.m);
        r.neg = a.neg;
    } else if (big_cmp(&a.m, &b.m) >= 0) {
        r.m = big_sub(&a.m, &b.m);
        r.neg = a.neg;
    } else {
        r.m = big_sub(&b.m, &a.m);
        r.neg = b.neg;
    }
    if (big_is_zero(&r.m))
        r.neg = false;
    return r;
}

static void check_exact(dec_status_t st, dec_t out, sbig_t want, const char *what)
{
    big_t limit = units_limit();
    bool in_range = big_cmp(&want.m, &limit) < 0;
    if (!in_range) {
        if (st != DEC_RANGE)
            FAIL(what);
        return;
    }
    sbig_t got = sbig_of(out);
    if (st != DEC_OK || big_cmp(&got.m, &want.m) != 0 || got.neg != want.neg)
        FAIL(what);
}

/* st/out is N/D (D > 0) rounded half to even, negative when neg. */
static void check_rounded(dec_status_t st, dec_t out, const big_t *n, const big_t *d, bool neg,
                          const char *what)
{
    big_t two = big_u128(2), one = big_u128(1), limit = units_limit();
    big_t limit2 = big_mul(&limit, &two);
    limit2 = big_sub(&limit2, &one);
    big_t n2 = big_mul(n, &two), bound = big_mul(&limit2, d);
    bool too_big = big_cmp(&n2, &bound) >= 0; /* round(N/D) reaches the limit */
    if (too_big) {
        if (st != DEC_RANGE)
            FAIL(what);
        return;
    }
    if (st != DEC_OK)
        FAIL(what);
    sbig_t q = sbig_of(out);
    big_t qd = big_mul(&q.m, d);
    big_t r = big_cmp(&qd, n) <= 0 ? big_sub(n, &qd) : big_sub(&qd, n);
    big_t r2 = big_mul(&r, &two);
    int c = big_cmp(&r2, d);
    if (c > 0 || (c == 0 && (q.m.w[0] & 1) != 0))
        FAIL(what);
    if (!big_is_zero(&q.m) && q.neg != neg)
        FAIL(what);
}

static void check_arithmetic(dec_t a, dec_t b)
{
    dec_t out = dec_zero();
    sbig_t sa = sbig_of(a), sb = sbig_of(b), nb = sb;
    nb.neg = !nb.neg && !big_is_zero(&nb.m);
    check_exact(dec_add(a, b, &out), out, sbig_add(sa, sb), "dec_add is not the exact sum");
    out = dec_zero();
    sbig_t diff = sbig_add(sa, nb);
    check_exact(dec_sub(a, b, &out), out, diff, "dec_sub is not the exact difference");
    int want_cmp = big_is_zero(&diff.m) ? 0 : diff.neg ? -1 : 1;
    if (dec_cmp(a, b) != want_cmp)
        FAIL("dec_cmp disagrees with the difference");

    big_t scale = big_u128(POW18);
    big_t n = big_mul(&sa.m, &sb.m);
    out = dec_zero();
    check_rounded(dec_mul(a, b, &out), out, &n, &scale, sa.neg != sb.neg, "dec_mul is not the rounded product");
    out = dec_zero();
    dec_status_t st = dec_div(a, b, &out);
    if (dec_is_zero(b)) {
        if (st != DEC_DIV_ZERO)
            FAIL("dec_div by zero is not DEC_DIV_ZERO");
    } else {
        big_t nd = big_mul(&sa.m, &scale);
        check_rounded(st, out, &nd, &sb.m, sa.neg != sb.neg, "dec_div is not the rounded quotient");
    }
}

static void check_mul_div(dec_t a, dec_t b, dec_t c)
{
    dec_t out = dec_zero();
    dec_status_t st = dec_mul_div(a, b, c, &out);
    if (dec_is_zero(c)) {
        if (st != DEC_DIV_ZERO)
            FAIL("dec_mul_div by zero is not DEC_DIV_ZERO");
        return;
    }
    sbig_t sa = sbig_of(a), sb = sbig_of(b), sc = sbig_of(c);
    big_t n = big_mul(&sa.m, &sb.m);
    check_rounded(st, out, &n, &sc.m, (sa.neg != sb.neg) != sc.neg,
                  "dec_mul_div is not the rounded a*b/c");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    dec_t v[3];
    bool ok[3] = {false, false, false};
    size_t start = 0, k = 0;
    for (size_t i = 0; i <= size && k < 3; i++) {
        if (i < size && s[i] != ' ')
            continue;
        ok[k] = check_parse(s + start, i - start, &v[k]);
        k++;
        start = i + 1;
    }
    if (ok[0])
        check_arithmetic(v[0], v[0]);
    if (ok[0] && ok[1]) {
        check_arithmetic(v[0], v[1]);
        check_arithmetic(v[1], v[0]);
    }
    if (ok[0] && ok[1] && ok[2])
        check_mul_div(v[0], v[1], v[2]);
    return 0;
}
