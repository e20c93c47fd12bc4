/* Unit tests of the country tables (core/countries.h): the ISO list is
 * exactly the 249 codes of Taxbit's client (counted over all 676 two-letter
 * pairs, so a code added or lost fails), the codes that look like countries
 * but are not (EL, XI, XK, EU, UK), the EU 27 with Greece's VAT prefix EL,
 * the 60 US state codes, the 13 Canadian ones and the US territories. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/countries.h"

typedef bool (*member_fn)(const char *);

/* How many of the 676 pairs AA..ZZ fn accepts. */
static int count_members(member_fn fn)
{
    int n = 0;
    char code[3] = {0};
    for (char a = 'A'; a <= 'Z'; a++)
        for (char b = 'A'; b <= 'Z'; b++) {
            code[0] = a;
            code[1] = b;
            n += fn(code) ? 1 : 0;
        }
    return n;
}

static void test_iso_has_the_249_codes(void **state)
{
    (void)state;
    assert_int_equal(count_members(country_is_iso), 249);
    static const char *const IN[] = {"AD", "DE", "GR", "GB", "US", "ZW", "AX", "BQ", "SS",
                                     "UM", "PS", "TW", NULL};
    for (int i = 0; IN[i] != NULL; i++)
        assert_true(country_is_iso(IN[i]));
    /* VAT prefixes and user-assigned codes are not countries */
    static const char *const OUT[] = {"EL", "XI", "XK", "EU", "UK", "ZZ", "XX", "AN", NULL};
    for (int i = 0; OUT[i] != NULL; i++)
        assert_false(country_is_iso(OUT[i]));
}

static void test_iso_is_exact(void **state)
{
    (void)state;
    assert_false(country_is_iso("de"));
    assert_false(country_is_iso("DEU"));
    assert_false(country_is_iso("D"));
    assert_false(country_is_iso(""));
    assert_false(country_is_iso(NULL));
    assert_false(country_is_iso("D\xc3\xa9"));
}

static void test_eu_and_vat_prefixes(void **state)
{
    (void)state;
    assert_int_equal(count_members(country_is_eu), 27);
    assert_true(country_is_eu("GR"));
    assert_false(country_is_eu("EL"));
    assert_false(country_is_eu("GB"));
    assert_false(country_is_eu("CH"));
    assert_string_equal(country_vat_prefix("GR"), "EL");
    assert_string_equal(country_vat_prefix("DE"), "DE");
    assert_string_equal(country_vat_prefix("SK"), "SK");
    assert_string_equal(country_vat_prefix("AT"), "AT");
    assert_null(country_vat_prefix("GB"));
    assert_null(country_vat_prefix("EL"));
    assert_null(country_vat_prefix(NULL));
    /* every EU member has a prefix, and it is its code but for Greece */
    char code[3] = {0};
    for (char a = 'A'; a <= 'Z'; a++)
        for (char b = 'A'; b <= 'Z'; b++) {
            code[0] = a;
            code[1] = b;
            const char *p = country_vat_prefix(code);
            assert_true((p != NULL) == country_is_eu(code));
            if (p != NULL && strcmp(code, "GR") != 0)
                assert_string_equal(p, code);
        }
}

static void test_us_states(void **state)
{
    (void)state;
    assert_int_equal(count_members(country_us_state_valid), 60);
    assert_true(country_us_state_valid("WA"));
    assert_true(country_us_state_valid("DC"));
    assert_true(country_us_state_valid("PR"));
    assert_true(country_us_state_valid("FM"));
    assert_false(country_us_state_valid("AA")); /* military: not in the client's list */
    assert_false(country_us_state_valid("ON"));
    assert_false(country_us_state_valid("wa"));
}

static void test_ca_provinces(void **state)
{
    (void)state;
    assert_int_equal(count_members(country_ca_province_valid), 13);
    assert_true(country_ca_province_valid("QC"));
    assert_true(country_ca_province_valid("NU"));
    assert_false(country_ca_province_valid("PQ"));
    assert_false(country_ca_province_valid("WA"));
}

static void test_us_territories(void **state)
{
    (void)state;
    assert_int_equal(count_members(country_is_us_territory), 9);
    static const char *const T[] = {"AS", "GU", "MP", "PR", "VI", "FM", "MH", "PW", "UM", NULL};
    for (int i = 0; T[i] != NULL; i++) {
        assert_true(country_is_us_territory(T[i]));
        assert_true(country_is_iso(T[i]));
        assert_true(country_us_state_valid(T[i]));
    }
    assert_false(country_is_us_territory("US"));
    assert_false(country_is_us_territory("CA"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iso_has_the_249_codes),
        cmocka_unit_test(test_iso_is_exact),
        cmocka_unit_test(test_eu_and_vat_prefixes),
        cmocka_unit_test(test_us_states),
        cmocka_unit_test(test_ca_provinces),
        cmocka_unit_test(test_us_territories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
