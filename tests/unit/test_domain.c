/* Unit tests of the domain vocabulary (core/domain.h): the asset-code rule
 * at its length bound, the cost basis methods and transaction types as names
 * and back, and the contract's listing order that the validator's messages
 * quote. Also buf_copy (core/buf.h) and utf8_chars (core/utf8.h), the small
 * helpers that replaced per-file copies. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/buf.h"
#include "core/domain.h"
#include "core/utf8.h"

static void test_asset_code_length_bound(void **state)
{
    (void)state;
    char code[DOMAIN_ASSET_CODE_MAX + 2];
    memset(code, 'A', sizeof code);
    code[DOMAIN_ASSET_CODE_MAX] = '\0';
    assert_true(domain_asset_code_valid(code));
    code[DOMAIN_ASSET_CODE_MAX] = 'A';
    code[DOMAIN_ASSET_CODE_MAX + 1] = '\0';
    assert_false(domain_asset_code_valid(code));
    assert_true(domain_asset_code_valid("BTC.e_1-x"));
    assert_false(domain_asset_code_valid(""));
    assert_false(domain_asset_code_valid("B TC"));
    assert_false(domain_asset_code_valid(NULL));
    assert_string_equal(DOMAIN_TEXT(DOMAIN_ASSET_CODE_MAX), "32");
}

static void test_methods_round_trip(void **state)
{
    (void)state;
    for (int i = 0; DOMAIN_METHOD_NAMES[i] != NULL; i++) {
        domain_method_t m;
        assert_true(domain_method_parse(DOMAIN_METHOD_NAMES[i], &m));
        assert_int_equal(m, i);
        assert_string_equal(domain_method_name(m), DOMAIN_METHOD_NAMES[i]);
        assert_true(strlen(DOMAIN_METHOD_NAMES[i]) < DOMAIN_METHOD_SIZE);
    }
    domain_method_t m = DOMAIN_METHOD_HIFO;
    assert_false(domain_method_parse("fifo", &m)); /* exact, as the contract spells it */
    assert_false(domain_method_parse(NULL, &m));
    assert_int_equal(m, DOMAIN_METHOD_HIFO);
    assert_string_equal(domain_method_name(DOMAIN_METHOD_DEFAULT), "FIFO");
    assert_string_equal(domain_method_name((domain_method_t)42), "");
}

static void test_tx_types_round_trip_and_listing_order(void **state)
{
    (void)state;
    static const char *const listed[] = {"trade", "deposit", "withdraw", "income", "expense"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(DOMAIN_TX_TYPE_NAMES[i], listed[i]);
    assert_null(DOMAIN_TX_TYPE_NAMES[5]);
    for (int t = 0; t < DOMAIN_TX_TYPE_COUNT; t++) {
        domain_tx_type_t back;
        assert_true(domain_tx_type_parse(domain_tx_type_name((domain_tx_type_t)t), &back));
        assert_int_equal(back, t);
    }
    domain_tx_type_t type;
    assert_true(domain_tx_type_parse("deposit", &type));
    assert_int_equal(type, DOMAIN_TX_DEPOSIT); /* what comes in sorts first */
    assert_false(domain_tx_type_parse("transfer", &type));
}

static void test_name_index(void **state)
{
    (void)state;
    static const char *const names[] = {"a", "b", NULL};
    assert_int_equal(domain_name_index(names, "b"), 1);
    assert_int_equal(domain_name_index(names, "c"), -1);
    assert_int_equal(domain_name_index(names, NULL), -1);
}

static void test_buf_copy_cuts_and_says_so(void **state)
{
    (void)state;
    char out[4];
    assert_true(buf_copy(out, sizeof out, "abc"));
    assert_string_equal(out, "abc");
    assert_false(buf_copy(out, sizeof out, "abcd"));
    assert_string_equal(out, "abc");
    assert_true(buf_copy(out, sizeof out, NULL));
    assert_string_equal(out, "");
}

static void test_utf8_chars(void **state)
{
    (void)state;
    const char *s = "a\xc3\xa9\xe2\x82\xac"; /* a, e-acute, euro sign */
    assert_int_equal(utf8_chars(s, strlen(s)), 3);
    assert_int_equal(utf8_chars(s, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_asset_code_length_bound),
        cmocka_unit_test(test_methods_round_trip),
        cmocka_unit_test(test_tx_types_round_trip_and_listing_order),
        cmocka_unit_test(test_name_index),
        cmocka_unit_test(test_buf_copy_cuts_and_says_so),
        cmocka_unit_test(test_utf8_chars),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
