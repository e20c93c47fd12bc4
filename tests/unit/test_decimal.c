/* Unit tests of exact decimals: parsing limits, canonical output, exact sums,
 * products and quotients with one half-to-even rounding, overflow reported,
 * and a cross-check of products against an independent long multiplication
 * on digit strings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/decimal.h"

static dec_t D(const char *s)
{
    dec_t d;
    assert_int_equal(dec_parse(s, strlen(s), &d), DEC_OK);
    return d;
}

static const char *F(dec_t d)
{
    static char out[4][DEC_TEXT_MAX];
    static int i;
    i = (i + 1) % 4;
    dec_format(d, out[i]);
    return out[i];
}

static dec_status_t P(const char *s)
{
    dec_t d;
    return dec_parse(s, strlen(s), &d);
}

static void test_parse_and_format(void **state)
{
    (void)state;
    assert_string_equal(F(D("20005")), "20005");
    assert_string_equal(F(D("20005.000")), "20005");
    assert_string_equal(F(D("0.50")), "0.5");
    assert_string_equal(F(D("-1.25")), "-1.25");
    assert_string_equal(F(D("-0")), "0");
    assert_string_equal(F(D("007.10")), "7.1");
    assert_string_equal(F(D("0.000000000000000001")), "0.000000000000000001");
    assert_string_equal(F(D("99999999999999999999.999999999999999999")),
                        "99999999999999999999.999999999999999999");
    assert_string_equal(F(D("-99999999999999999999.999999999999999999")),
                        "-99999999999999999999.999999999999999999");
    assert_string_equal(F(D("1.0000000000000000000000")), "1"); /* zeros past 18: exact */
    /* the widest value: 96 integer digits */
    const char *widest = "999999999999999999999999999999999999999999999999"
                         "999999999999999999999999999999999999999999999999.999999999999999999";
    assert_string_equal(F(D(widest)), widest);
    char neg_widest[DEC_TEXT_MAX];
    snprintf(neg_widest, sizeof neg_widest, "-%s", widest);
    assert_string_equal(F(D(neg_widest)), neg_widest);
    assert_int_equal(strlen(neg_widest) + 1, DEC_TEXT_MAX);
    assert_string_equal(F(D("1000000000000000000000000000000000000000")), /* 2^128 and beyond */
                        "1000000000000000000000000000000000000000");
    assert_string_equal(F(D("0001234567890123456789012345678901234567890.5")),
                        "1234567890123456789012345678901234567890.5");
    assert_int_equal(P("1000000000000000000000000000000000000000000000000"
                       "000000000000000000000000000000000000000000000000"), DEC_RANGE); /* 97 */
    assert_int_equal(P("0000000000000000000000000000000000000000000000000000000000"
                       "0000000000000000000000000000000000000000000000000001"), DEC_OK);
    assert_int_equal(P("0.0000000000000000001"), DEC_PRECISION);  /* never rounded */
    const char *bad[] = {"", "-", ".5", "5.", "1e5", "+1", " 1", "1 ", "1.2.3", "--1", "0x10",
                         "1,5", "١"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(P(bad[i]), DEC_SYNTAX);
}

static void test_add_sub_exact(void **state)
{
    (void)state;
    dec_t r;
    assert_int_equal(dec_add(D("0.1"), D("0.2"), &r), DEC_OK);
    assert_string_equal(F(r), "0.3"); /* what binary floating point gets wrong */
    assert_int_equal(dec_add(D("20000"), D("5"), &r), DEC_OK);
    assert_string_equal(F(r), "20005");
    assert_int_equal(dec_sub(D("1"), D("1.000000000000000001"), &r), DEC_OK);
    assert_string_equal(F(r), "-0.000000000000000001");
    /* the two deposits: past 20 integer digits, exact */
    assert_int_equal(dec_add(D("99999999999999999999"), D("99999999999999999999"), &r), DEC_OK);
    assert_string_equal(F(r), "199999999999999999998");
    /* carries and borrows across every limb */
    assert_int_equal(dec_add(D("340282366920938463463.374607431768211455"), /* 2^128 - 1 units */
                             D("0.000000000000000001"), &r), DEC_OK);
    assert_string_equal(F(r), "340282366920938463463.374607431768211456");
    assert_int_equal(dec_sub(D("0"), D("340282366920938463463.374607431768211456"), &r), DEC_OK);
    assert_string_equal(F(r), "-340282366920938463463.374607431768211456");
    assert_int_equal(dec_cmp(r, D("-1")), -1);
    assert_int_equal(dec_cmp(D("-1"), r), 1);
    assert_int_equal(dec_cmp(D("-0.5"), D("-0.25")), -1);
    const char *widest = "999999999999999999999999999999999999999999999999"
                         "999999999999999999999999999999999999999999999999.999999999999999999";
    char neg_widest[DEC_TEXT_MAX];
    snprintf(neg_widest, sizeof neg_widest, "-%s", widest);
    assert_int_equal(dec_add(D(widest), D("0.000000000000000001"), &r), DEC_RANGE);
    assert_int_equal(dec_sub(D(neg_widest), D("0.000000000000000001"), &r), DEC_RANGE);
    /* the largest sum of two in-range values does not wrap 384 bits */
    assert_int_equal(dec_add(D(widest), D(widest), &r), DEC_RANGE);
    assert_int_equal(dec_sub(D(neg_widest), D(widest), &r), DEC_RANGE);
    assert_int_equal(dec_add(D(widest), D(neg_widest), &r), DEC_OK);
    assert_true(dec_is_zero(r));
    assert_string_equal(F(dec_from_int(INT64_MIN)), "-9223372036854775808");
    assert_string_equal(F(dec_from_int(INT64_MAX)), "9223372036854775807");
}

static void test_mul_div_rounding(void **state)
{
    (void)state;
    dec_t r;
    assert_int_equal(dec_mul(D("1.5"), D("20000.00"), &r), DEC_OK);
    assert_string_equal(F(r), "30000");
    assert_int_equal(dec_mul(D("-2"), D("0.25"), &r), DEC_OK);
    assert_string_equal(F(r), "-0.5");
    /* 0.000000000000000005 x 0.1 = 5e-19: a tie, rounds to even (0). */
    assert_int_equal(dec_mul(D("0.000000000000000005"), D("0.1"), &r), DEC_OK);
    assert_string_equal(F(r), "0");
    /* 0.000000000000000015 x 0.1 = 1.5e-18: a tie, rounds to even (2e-18). */
    assert_int_equal(dec_mul(D("0.000000000000000015"), D("0.1"), &r), DEC_OK);
    assert_string_equal(F(r), "0.000000000000000002");
    assert_int_equal(dec_mul(D("-0.000000000000000015"), D("0.1"), &r), DEC_OK);
    assert_string_equal(F(r), "-0.000000000000000002"); /* symmetric */
    assert_int_equal(dec_div(D("1"), D("3"), &r), DEC_OK);
    assert_string_equal(F(r), "0.333333333333333333");
    assert_int_equal(dec_div(D("2"), D("3"), &r), DEC_OK);
    assert_string_equal(F(r), "0.666666666666666667");
    assert_int_equal(dec_div(D("20005"), D("1"), &r), DEC_OK);
    assert_string_equal(F(r), "20005");
    assert_int_equal(dec_div(D("1"), D("0"), &r), DEC_DIV_ZERO);
    assert_int_equal(dec_mul(D("10000000000"), D("10000000000"), &r), DEC_OK);
    assert_string_equal(F(r), "100000000000000000000");
    /* the amount x rate: 40 integer digits, exact */
    assert_int_equal(dec_mul(D("99999999999999999999"), D("99999999999999999999"), &r), DEC_OK);
    assert_string_equal(F(r), "9999999999999999999800000000000000000001");
    assert_int_equal(dec_mul(D("1000000000000000000000000000000000000000000000000"),
                             D("1000000000000000000000000000000000000000000000000"), &r),
                     DEC_RANGE); /* 10^96 */
    assert_int_equal(dec_mul(D("99999999999999999999"), D("0.5"), &r), DEC_OK);
    assert_string_equal(F(r), "49999999999999999999.5");
    assert_int_equal(dec_div(D("99999999999999999999"), D("0.000000000000000001"), &r), DEC_OK);
    assert_string_equal(F(r), "99999999999999999999000000000000000000");
    assert_int_equal(dec_div(D("1000000000000000000000000000000000000000000000000000000000000000000000000000000"),
                             D("0.000000000000000001"), &r), DEC_RANGE); /* 10^96 */
    /* The cost of part of a lot: 20005 x 0.3 / 1, and 100 x 1 / 3 (one rounding). */
    assert_int_equal(dec_mul_div(D("20005"), D("0.3"), D("1"), &r), DEC_OK);
    assert_string_equal(F(r), "6001.5");
    assert_int_equal(dec_mul_div(D("100"), D("1"), D("3"), &r), DEC_OK);
    assert_string_equal(F(r), "33.333333333333333333");
    /* Large operands that need the 256-bit path. */
    assert_int_equal(dec_mul_div(D("99999999999999999999.999999999999999999"),
                                 D("12345678901234567890.123456789012345678"),
                                 D("12345678901234567890.123456789012345678"), &r), DEC_OK);
    assert_string_equal(F(r), "99999999999999999999.999999999999999999");
}

/* The wide path against products and quotients worked out with exact
 * integers (tests/unit/decimal_wide_cases.py): operands past 128 bits,
 * divisors of one limb and of many, quotients past 128 bits from narrow
 * operands, ties, and results out of range. */
#include "decimal_wide_cases.h"

/* Money's rounding: to cents, half up (away from zero), unlike the derived
 * values' half to even. */
static void test_round_cents(void **state)
{
    (void)state;
    static const char *const CASES[][2] = {
        {"1.005", "1.01"},   {"-1.005", "-1.01"}, {"2.225", "2.23"}, {"2.2249999", "2.22"},
        {"0.004999", "0"},   {"-0.004", "0"},     {"1.994", "1.99"}, {"7", "7"},
        {"0.995", "1"},      {"123456789.125", "123456789.13"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        dec_t in, out;
        char text[DEC_TEXT_MAX];
        assert_int_equal(dec_parse(CASES[i][0], strlen(CASES[i][0]), &in), DEC_OK);
        assert_int_equal(dec_round_cents(in, &out), DEC_OK);
        dec_format(out, text);
        assert_string_equal(text, CASES[i][1]);
    }
}

static void test_mul_div_wide_against_exact_integers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof WIDE_CASES / sizeof WIDE_CASES[0]; i++) {
        dec_t r;
        dec_status_t st = dec_mul_div(D(WIDE_CASES[i][0]), D(WIDE_CASES[i][1]),
                                      D(WIDE_CASES[i][2]), &r);
        if (strcmp(WIDE_CASES[i][3], "RANGE") == 0) {
            if (st != DEC_RANGE)
                fail_msg("case %zu: expected DEC_RANGE, got %d (%s)", i, st, F(r));
        } else if (st != DEC_OK || strcmp(F(r), WIDE_CASES[i][3]) != 0) {
            fail_msg("case %zu: %s x %s / %s: got %d %s, expected %s", i, WIDE_CASES[i][0],
                     WIDE_CASES[i][1], WIDE_CASES[i][2], st, st == DEC_OK ? F(r) : "",
                     WIDE_CASES[i][3]);
        }
    }
}

static void test_fits_int_digits(void **state)
{
    (void)state;
    assert_true(dec_fits_int_digits(D("99999999999999999999.999999999999999999"), 20));
    assert_true(dec_fits_int_digits(D("-99999999999999999999.999999999999999999"), 20));
    assert_false(dec_fits_int_digits(D("100000000000000000000"), 20));
    assert_false(dec_fits_int_digits(D("-100000000000000000000"), 20));
    assert_true(dec_fits_int_digits(D("0.5"), 0));
    assert_false(dec_fits_int_digits(D("1"), 0));
    assert_true(dec_fits_int_digits(D("100000000000000000000"), DEC_MAX_INT_DIGITS));
}

/* Independent check: long multiplication of the digit strings, then rounding
 * half to even at 18 fractional digits, compared with dec_mul. */
static void digits_mul(const char *a, const char *b, char *out)
{
    int da[128], db[128], n = 0, m = 0, res[256] = {0};
    for (const char *p = a; *p; p++)
        if (*p != '.')
            da[n++] = *p - '0';
    for (const char *p = b; *p; p++)
        if (*p != '.')
            db[m++] = *p - '0';
    for (int i = n - 1; i >= 0; i--)
        for (int j = m - 1; j >= 0; j--)
            res[i + j + 1] += da[i] * db[j];
    for (int k = n + m - 1; k > 0; k--) {
        res[k - 1] += res[k] / 10;
        res[k] %= 10;
    }
    /* each operand has exactly 18 fractional digits: the product has 36 */
    int total = n + m, keep = total - 18;
    int round_up = 0;
    int first_dropped = res[keep];
    int rest_nonzero = 0;
    for (int k = keep + 1; k < total; k++)
        rest_nonzero |= res[k] != 0;
    if (first_dropped > 5 || (first_dropped == 5 && rest_nonzero) ||
        (first_dropped == 5 && !rest_nonzero && res[keep - 1] % 2 == 1))
        round_up = 1;
    for (int k = keep - 1; k >= 0 && round_up; k--) {
        res[k] += 1;
        round_up = res[k] == 10;
        if (round_up)
            res[k] = 0;
    }
    int o = 0, started = 0;
    for (int k = 0; k < keep - 18; k++) {
        if (res[k] != 0)
            started = 1;
        if (started)
            out[o++] = (char)('0' + res[k]);
    }
    if (!started)
        out[o++] = '0';
    out[o++] = '.';
    for (int k = keep - 18; k < keep; k++)
        out[o++] = (char)('0' + res[k]);
    while (out[o - 1] == '0')
        o--;
    if (out[o - 1] == '.')
        o--;
    out[o] = '\0';
}

static void random_operand(char *out, unsigned *seed, int int_digits)
{
    int o = 0;
    for (int i = 0; i < int_digits; i++)
        out[o++] = (char)('0' + rand_r(seed) % 10);
    if (int_digits == 0)
        out[o++] = '0';
    out[o++] = '.';
    for (int i = 0; i < 18; i++)
        out[o++] = (char)('0' + rand_r(seed) % 10);
    out[o] = '\0';
}

static void test_mul_matches_long_multiplication(void **state)
{
    (void)state;
    unsigned seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        char a[128], b[128], expected[260];
        /* up to 48 integer digits each: products up to 96, the range */
        int da = rand_r(&seed) % 49, db = rand_r(&seed) % 49;
        random_operand(a, &seed, da);
        random_operand(b, &seed, db);
        digits_mul(a, b, expected);
        dec_t r;
        if (dec_mul(D(a), D(b), &r) == DEC_RANGE)
            continue;
        if (strcmp(F(r), expected) != 0)
            fail_msg("%s x %s: got %s, expected %s", a, b, F(r), expected);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_format),
        cmocka_unit_test(test_add_sub_exact),
        cmocka_unit_test(test_mul_div_rounding),
        cmocka_unit_test(test_round_cents),
        cmocka_unit_test(test_mul_matches_long_multiplication),
        cmocka_unit_test(test_mul_div_wide_against_exact_integers),
        cmocka_unit_test(test_fits_int_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
