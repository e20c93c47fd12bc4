/* decimal: see decimal.h.
 *
 * Representation. Six 64-bit limbs in two's complement, least significant
 * first. Products and quotients work on magnitudes (mag_t, the same six
 * limbs unsigned) with the sign kept apart, so every rounding is of a
 * non-negative quotient and "half to even" means the same for negative
 * results (symmetric).
 *
 * Speed. Nearly every value taxd meets fits in 128 bits, and the engine adds
 * and multiplies such values millions of times in a recalculation, so each
 * operation first tries the narrow path that the 128-bit implementation had
 * (a product of two 128-bit magnitudes as a 256-bit pair, divided a 64-bit
 * limb at a time or by a 128-bit divisor) and only falls back to the general
 * path (a 768-bit product, divided by a one-limb divisor limb by limb, else
 * bit by bit) when an operand or the quotient is wider. Both paths compute
 * the same exact quotient and round it the same way; tests/unit/test_decimal.c
 * checks them against each other. */
#include "core/decimal.h"

#include <string.h>

typedef unsigned __int128 u128;

typedef struct mag {
    uint64_t w[DEC_LIMBS];
} mag_t;

#define WIDE_LIMBS (2 * DEC_LIMBS)
#define POW10_18 1000000000000000000ULL
#define POW10_19 10000000000000000000ULL

/* 10^114: the first magnitude out of range (|value| < 10^96). */
static const mag_t UNITS_LIMIT = {{0x0ULL, 0xd164000000000000ULL, 0x637a54290fe2a55cULL,
                                   0x1db2332b93f1e94fULL, 0xb7309320c32b3cd3ULL,
                                   0x067f43fbe77a37f8ULL}};

const char *dec_status_message(dec_status_t status)
{
    switch (status) {
    case DEC_OK: return "ok";
    case DEC_SYNTAX: return "expected a plain decimal string such as \"12.50\"";
    case DEC_PRECISION: return "more than 18 fractional digits";
    case DEC_RANGE: return "outside the supported range (at most 96 integer digits)";
    case DEC_DIV_ZERO: return "division by zero";
    }
    return "invalid decimal";
}

/* ---- limbs ------------------------------------------------------------ */

static int limbs_cmp(const uint64_t *a, const uint64_t *b, size_t n)
{
    for (size_t i = n; i-- > 0;)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* a -= b over n limbs (a >= b). */
static void limbs_sub(uint64_t *a, const uint64_t *b, size_t n)
{
    uint64_t borrow = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t bi = b[i] + borrow;
        uint64_t next = (bi < borrow) || (a[i] < bi);
        a[i] -= bi;
        borrow = next;
    }
}

/* a += 1 over n limbs; returns the carry out. */
static uint64_t limbs_inc(uint64_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (++a[i] != 0)
            return 0;
    return 1;
}

static bool limbs_zero_from(const uint64_t *a, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++)
        if (a[i] != 0)
            return false;
    return true;
}

/* a = a x m + add; returns the limb carried out. */
static uint64_t limbs_mul_small(uint64_t *a, size_t n, uint64_t m, uint64_t add)
{
    u128 carry = add;
    for (size_t i = 0; i < n; i++) {
        u128 t = (u128)a[i] * m + carry;
        a[i] = (uint64_t)t;
        carry = t >> 64;
    }
    return (uint64_t)carry;
}

/* a /= d over n limbs; returns the remainder. */
static uint64_t limbs_div_small(uint64_t *a, size_t n, uint64_t d)
{
    u128 r = 0;
    for (size_t i = n; i-- > 0;) {
        u128 cur = (r << 64) | a[i];
        a[i] = (uint64_t)(cur / d);
        r = cur % d;
    }
    return (uint64_t)r;
}

/* ---- signs and magnitudes --------------------------------------------- */

static bool negative(const dec_t *a)
{
    return (a->limb[DEC_LIMBS - 1] >> 63) != 0;
}

static void negate(uint64_t *w)
{
    for (size_t i = 0; i < DEC_LIMBS; i++)
        w[i] = ~w[i];
    limbs_inc(w, DEC_LIMBS);
}

static mag_t magnitude(dec_t a)
{
    mag_t m;
    memcpy(m.w, a.limb, sizeof m.w);
    if (negative(&a))
        negate(m.w);
    return m;
}

static bool mag_in_range(const mag_t *m)
{
    return limbs_cmp(m->w, UNITS_LIMIT.w, DEC_LIMBS) < 0;
}

/* Applies a sign to a magnitude known to be in range. */
static dec_t signed_of(const mag_t *m, bool neg)
{
    dec_t d;
    memcpy(d.limb, m->w, sizeof d.limb);
    if (neg)
        negate(d.limb);
    return d;
}

static mag_t mag_of_u128(u128 v)
{
    mag_t m = {{(uint64_t)v, (uint64_t)(v >> 64), 0, 0, 0, 0}};
    return m;
}

static bool mag_fits_u128(const mag_t *m)
{
    return limbs_zero_from(m->w, 2, DEC_LIMBS);
}

static u128 mag_u128(const mag_t *m)
{
    return ((u128)m->w[1] << 64) | m->w[0];
}

/* ---- the narrow path (operands of 128 bits) ---------------------------- */

typedef struct u256 {
    u128 hi, lo;
} u256_t;

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

/* a x b / c rounded half to even when all three and the quotient fit in 128
 * bits; false when the wide path must decide. */
static bool mul_div_narrow(const mag_t *a, const mag_t *b, const mag_t *c, mag_t *q)
{
    if (!mag_fits_u128(a) || !mag_fits_u128(b) || !mag_fits_u128(c))
        return false;
    u128 d = mag_u128(c);
    u256_t n = mul_128(mag_u128(a), mag_u128(b));
    if (n.hi >= d)
        return false;
    u128 rem;
    u128 quot = div_256(n, d, &rem);
    /* rem > d - rem is 2 * rem > d without overflowing: above half. */
    u128 rest = d - rem;
    if (rem > rest || (rem == rest && (quot & 1) != 0)) {
        if (quot + 1 == 0)
            return false;
        quot++;
    }
    *q = mag_of_u128(quot);
    return true;
}

/* ---- the wide path ----------------------------------------------------- */

static void mul_wide(const mag_t *a, const mag_t *b, uint64_t out[WIDE_LIMBS])
{
    memset(out, 0, WIDE_LIMBS * sizeof out[0]);
    for (size_t i = 0; i < DEC_LIMBS; i++) {
        if (a->w[i] == 0)
            continue;
        u128 carry = 0;
        for (size_t j = 0; j < DEC_LIMBS; j++) {
            u128 t = (u128)a->w[i] * b->w[j] + out[i + j] + carry;
            out[i + j] = (uint64_t)t;
            carry = t >> 64;
        }
        out[i + DEC_LIMBS] = (uint64_t)carry;
    }
}

/* n / d (d != 0): the quotient into n, the remainder into rem. Bit by bit
 * from n's highest set bit: slow, and only reached for operands past 128
 * bits with a divisor past 64. */
static void div_wide_long(uint64_t n[WIDE_LIMBS], const mag_t *d, uint64_t rem[DEC_LIMBS + 1])
{
    uint64_t dd[DEC_LIMBS + 1];
    memcpy(dd, d->w, sizeof d->w);
    dd[DEC_LIMBS] = 0;
    memset(rem, 0, (DEC_LIMBS + 1) * sizeof rem[0]);
    size_t top = WIDE_LIMBS;
    while (top > 0 && n[top - 1] == 0)
        top--;
    uint64_t q[WIDE_LIMBS] = {0};
    for (size_t bit = top * 64; bit-- > 0;) {
        /* rem = rem * 2 + the bit: rem < d < 2^384, so it fits in 385 bits */
        for (size_t i = DEC_LIMBS + 1; i-- > 1;)
            rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
        rem[0] = (rem[0] << 1) | ((n[bit / 64] >> (bit % 64)) & 1);
        if (limbs_cmp(rem, dd, DEC_LIMBS + 1) >= 0) {
            limbs_sub(rem, dd, DEC_LIMBS + 1);
            q[bit / 64] |= (uint64_t)1 << (bit % 64);
        }
    }
    memcpy(n, q, sizeof q);
}

/* a x b / c rounded half to even into q (a magnitude in range). */
static dec_status_t mul_div_wide(const mag_t *a, const mag_t *b, const mag_t *c, mag_t *q)
{
    uint64_t n[WIDE_LIMBS];
    mul_wide(a, b, n);
    uint64_t rem[DEC_LIMBS + 1];
    bool round_up;
    if (limbs_zero_from(c->w, 1, DEC_LIMBS)) {
        uint64_t d = c->w[0];
        uint64_t r = limbs_div_small(n, WIDE_LIMBS, d);
        uint64_t rest = d - r;
        round_up = r > rest || (r == rest && (n[0] & 1) != 0);
    } else {
        div_wide_long(n, c, rem);
        /* rem < c: compare it with c - rem, as above */
        uint64_t rest[DEC_LIMBS + 1];
        memcpy(rest, c->w, sizeof c->w);
        rest[DEC_LIMBS] = 0;
        limbs_sub(rest, rem, DEC_LIMBS + 1);
        int cmp = limbs_cmp(rem, rest, DEC_LIMBS + 1);
        round_up = cmp > 0 || (cmp == 0 && (n[0] & 1) != 0);
    }
    if (round_up && limbs_inc(n, WIDE_LIMBS) != 0)
        return DEC_RANGE;
    if (!limbs_zero_from(n, DEC_LIMBS, WIDE_LIMBS))
        return DEC_RANGE;
    memcpy(q->w, n, sizeof q->w);
    return mag_in_range(q) ? DEC_OK : DEC_RANGE;
}

static dec_status_t mul_div_mag(const mag_t *a, const mag_t *b, const mag_t *c, mag_t *q)
{
    if (mul_div_narrow(a, b, c, q))
        return mag_in_range(q) ? DEC_OK : DEC_RANGE;
    return mul_div_wide(a, b, c, q);
}

static const mag_t SCALE = {{POW10_18, 0, 0, 0, 0, 0}};

/* ---- the operations ---------------------------------------------------- */

dec_t dec_zero(void)
{
    dec_t d = {{0}};
    return d;
}

dec_t dec_from_int(int64_t n)
{
    uint64_t mag = n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n; /* INT64_MIN too */
    mag_t m = mag_of_u128((u128)mag * POW10_18);
    return signed_of(&m, n < 0);
}

bool dec_is_zero(dec_t a)
{
    uint64_t any = 0;
    for (size_t i = 0; i < DEC_LIMBS; i++)
        any |= a.limb[i];
    return any == 0;
}

bool dec_is_negative(dec_t a)
{
    return negative(&a);
}

int dec_cmp(dec_t a, dec_t b)
{
    int64_t ta = (int64_t)a.limb[DEC_LIMBS - 1], tb = (int64_t)b.limb[DEC_LIMBS - 1];
    if (ta != tb)
        return ta < tb ? -1 : 1;
    return limbs_cmp(a.limb, b.limb, DEC_LIMBS - 1);
}

dec_t dec_neg(dec_t a)
{
    negate(a.limb); /* |value| < 10^114 units: never overflows */
    return a;
}

dec_t dec_abs(dec_t a)
{
    return negative(&a) ? dec_neg(a) : a;
}

bool dec_fits_int_digits(dec_t a, unsigned digits)
{
    if (digits >= DEC_MAX_INT_DIGITS)
        return true; /* every dec_t is below 10^96 */
    mag_t bound = {{1, 0, 0, 0, 0, 0}};
    for (unsigned i = 0; i < digits + DEC_SCALE; i++)
        limbs_mul_small(bound.w, DEC_LIMBS, 10, 0);
    mag_t m = magnitude(a);
    return limbs_cmp(m.w, bound.w, DEC_LIMBS) < 0;
}

/* Two in-range values sum to less than 2^380 in magnitude: the 384-bit sum
 * cannot wrap, only leave the range. */
static dec_status_t checked(dec_t sum, dec_t *out)
{
    /* the common case decided from the top limb alone: |value| < 2^320 */
    int64_t top = (int64_t)sum.limb[DEC_LIMBS - 1];
    if (top != 0 && top != -1) {
        mag_t m = magnitude(sum);
        if (!mag_in_range(&m))
            return DEC_RANGE;
    }
    *out = sum;
    return DEC_OK;
}

dec_status_t dec_add(dec_t a, dec_t b, dec_t *out)
{
    dec_t sum;
    uint64_t carry = 0;
    for (size_t i = 0; i < DEC_LIMBS; i++) {
        uint64_t s = a.limb[i] + carry;
        uint64_t c1 = s < carry;
        sum.limb[i] = s + b.limb[i];
        carry = c1 | (sum.limb[i] < s);
    }
    return checked(sum, out);
}

dec_status_t dec_sub(dec_t a, dec_t b, dec_t *out)
{
    return dec_add(a, dec_neg(b), out);
}

dec_status_t dec_mul(dec_t a, dec_t b, dec_t *out)
{
    mag_t ma = magnitude(a), mb = magnitude(b), q;
    dec_status_t st = mul_div_mag(&ma, &mb, &SCALE, &q);
    if (st != DEC_OK)
        return st;
    *out = signed_of(&q, negative(&a) != negative(&b));
    return DEC_OK;
}

dec_status_t dec_div(dec_t a, dec_t b, dec_t *out)
{
    if (dec_is_zero(b))
        return DEC_DIV_ZERO;
    mag_t ma = magnitude(a), mb = magnitude(b), q;
    dec_status_t st = mul_div_mag(&ma, &SCALE, &mb, &q);
    if (st != DEC_OK)
        return st;
    *out = signed_of(&q, negative(&a) != negative(&b));
    return DEC_OK;
}

dec_status_t dec_mul_div(dec_t a, dec_t b, dec_t c, dec_t *out)
{
    if (dec_is_zero(c))
        return DEC_DIV_ZERO;
    mag_t ma = magnitude(a), mb = magnitude(b), mc = magnitude(c), q;
    dec_status_t st = mul_div_mag(&ma, &mb, &mc, &q);
    if (st != DEC_OK)
        return st;
    *out = signed_of(&q, (negative(&a) != negative(&b)) != negative(&c));
    return DEC_OK;
}

/* ---- text -------------------------------------------------------------- */

dec_status_t dec_round_cents(dec_t a, dec_t *out)
{
    const uint64_t cent = 10000000000000000ULL; /* 10^(DEC_SCALE - 2) units: one cent */
    bool neg = negative(&a);
    mag_t m = magnitude(a);
    uint64_t rem = limbs_div_small(m.w, DEC_LIMBS, cent);
    if (rem >= cent / 2)
        limbs_inc(m.w, DEC_LIMBS);
    if (limbs_mul_small(m.w, DEC_LIMBS, cent, 0) != 0 || !mag_in_range(&m))
        return DEC_RANGE;
    *out = signed_of(&m, neg);
    return DEC_OK;
}

dec_status_t dec_parse(const char *text, size_t len, dec_t *out)
{
    size_t i = 0;
    bool neg = len > 0 && text[0] == '-';
    i += neg;
    mag_t units = {{0}};
    uint64_t chunk = 0, chunk_scale = 1; /* up to 19 digits gathered in one limb */
    size_t int_digits = 0, significant = 0;
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++, int_digits++) {
        significant += significant > 0 || text[i] != '0';
        if (significant > DEC_MAX_INT_DIGITS)
            return DEC_RANGE;
        if (significant == 0)
            continue;
        chunk = chunk * 10 + (uint64_t)(text[i] - '0');
        chunk_scale *= 10;
        if (chunk_scale == POW10_19) {
            limbs_mul_small(units.w, DEC_LIMBS, chunk_scale, chunk);
            chunk = 0;
            chunk_scale = 1;
        }
    }
    if (int_digits == 0)
        return DEC_SYNTAX;
    limbs_mul_small(units.w, DEC_LIMBS, chunk_scale, chunk); /* < 10^96: no carry out */
    uint64_t frac = 0;
    if (i < len) {
        if (text[i] != '.' || i + 1 == len)
            return DEC_SYNTAX;
        size_t frac_digits = 0;
        for (i++; i < len; i++, frac_digits++) {
            char c = text[i];
            if (c < '0' || c > '9')
                return DEC_SYNTAX;
            if (frac_digits < DEC_SCALE)
                frac = frac * 10 + (uint64_t)(c - '0');
            else if (c != '0')
                return DEC_PRECISION;
        }
        for (; frac_digits < DEC_SCALE; frac_digits++)
            frac *= 10;
    }
    /* the integer part < 10^96, so units < 10^114: in range by construction */
    limbs_mul_small(units.w, DEC_LIMBS, POW10_18, frac);
    *out = signed_of(&units, neg);
    return DEC_OK;
}

/* Writes v's decimal digits (no leading zeros; "0" for zero); returns the
 * length. */
static size_t format_u64(uint64_t v, char *out)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    for (size_t k = 0; k < n; k++)
        out[k] = digits[n - 1 - k];
    return n;
}

/* The integer part (a magnitude below 10^96) in decimal; returns the length. */
static size_t format_int(mag_t m, char *out)
{
    if (limbs_zero_from(m.w, 1, DEC_LIMBS))
        return format_u64(m.w[0], out);
    uint64_t chunks[6]; /* 19 digits each, lowest first: 6 x 19 >= 96 */
    size_t n = 0;
    while (!limbs_zero_from(m.w, 0, DEC_LIMBS))
        chunks[n++] = limbs_div_small(m.w, DEC_LIMBS, POW10_19);
    size_t len = format_u64(chunks[n - 1], out);
    for (size_t k = n - 1; k-- > 0;) {
        char part[20];
        size_t plen = format_u64(chunks[k], part);
        memset(out + len, '0', 19 - plen);
        memcpy(out + len + 19 - plen, part, plen);
        len += 19;
    }
    return len;
}

size_t dec_format(dec_t value, char *out)
{
    mag_t m = magnitude(value);
    uint64_t frac = limbs_div_small(m.w, DEC_LIMBS, POW10_18);
    size_t len = 0;
    if (negative(&value))
        out[len++] = '-';
    len += format_int(m, out + len);
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
