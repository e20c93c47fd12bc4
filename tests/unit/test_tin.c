/* Unit tests of TIN sealing and masking: a round trip, refusal under another
 * record, tenant or key, tampering, and the masking rule. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/tin.h"

#define T1 "00000000-0000-4000-8000-000000000001"
#define R1 "10000000-0000-4000-8000-000000000001"
#define R2 "10000000-0000-4000-8000-000000000002"

static void test_round_trip_and_binding(void **state)
{
    (void)state;
    uint8_t key[32], other_key[32];
    memset(key, 1, sizeof key);
    memset(other_key, 2, sizeof other_key);
    uint8_t sealed[TIN_SEALED_MAX];
    size_t len = 0;
    assert_int_equal(tin_seal(key, T1, R1, "123-45-6789", sealed, &len), 0);
    assert_int_equal(len, strlen("123-45-6789") + CRYPTO_AEAD_OVERHEAD);
    assert_null(memmem(sealed, len, "6789", 4)); /* not stored in the clear */
    char tin[TIN_MAX];
    assert_int_equal(tin_open(key, T1, R1, sealed, len, tin), 0);
    assert_string_equal(tin, "123-45-6789");
    assert_int_equal(tin_open(key, T1, R2, sealed, len, tin), -1);   /* another record */
    assert_int_equal(tin_open(key, R2, R1, sealed, len, tin), -1);   /* another tenant */
    assert_int_equal(tin_open(other_key, T1, R1, sealed, len, tin), -1);
    sealed[len - 1] ^= 1;
    assert_int_equal(tin_open(key, T1, R1, sealed, len, tin), -1);   /* altered */
    assert_int_equal(tin_open(key, T1, R1, sealed, CRYPTO_AEAD_OVERHEAD, tin), -1);
}

static void test_seal_refuses_bad_input(void **state)
{
    (void)state;
    uint8_t key[32] = {0};
    uint8_t sealed[TIN_SEALED_MAX];
    size_t len;
    char long_tin[TIN_MAX + 1];
    memset(long_tin, '9', TIN_MAX);
    long_tin[TIN_MAX] = '\0';
    assert_int_equal(tin_seal(key, T1, R1, "", sealed, &len), -1);
    assert_int_equal(tin_seal(key, T1, R1, long_tin, sealed, &len), -1);
}

static void test_mask(void **state)
{
    (void)state;
    char out[TIN_MAX];
    tin_mask("123456789", out);
    assert_string_equal(out, "*****6789");
    tin_mask("12-3456789", out);
    assert_string_equal(out, "******6789");
    tin_mask("6789", out);
    assert_string_equal(out, "6789");
    tin_mask("89", out);
    assert_string_equal(out, "89");
    tin_mask("\xc3\xa9" "ab1234", out); /* é is one character */
    assert_string_equal(out, "***1234");
    char long_tin[200]; /* longer than TIN_MAX: cut, never written past out */
    memset(long_tin, '7', sizeof long_tin - 1);
    long_tin[sizeof long_tin - 1] = '\0';
    tin_mask(long_tin, out);
    assert_int_equal(strlen(out), TIN_MAX - 1);
    assert_true(out[0] == '*' && out[TIN_MAX - 2] == '*');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_binding),
        cmocka_unit_test(test_seal_refuses_bad_input),
        cmocka_unit_test(test_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
