/* Unit tests of the 1099-DA content (forms/da.h) from classified gains rows,
 * worked by hand (tax year 2026, every amount in USD):
 *
 *   sale S1 2026-09-01, BTC, five pieces:
 *     p1 0.1 from a lot bought here 2026-01-05  proceeds 100  cost 80   covered short
 *     p2 0.2 from a lot bought here 2026-02-07  proceeds 200  cost 150  covered short
 *     p3 0.3 from a lot bought here 2025-03-01  proceeds 300  cost 210  noncovered (before
 *                                                                       2026), long
 *     p4 0.4 from a transfer lot (no basis)     proceeds 400  no cost   noncovered, short
 *     p5 0.5 from a provided lot 2024-05-01     proceeds 500  cost 100  noncovered, long,
 *                                                                       customer-provided
 *   records: covered short {0.3, acquired VARIOUS, proceeds 300, basis 230, SHORT};
 *   noncovered {1.2, proceeds 1200, no basis, no date_acquired, no common term,
 *   box 8 flag true}.
 *   sale S2 2026-10-01, ETH 1 from a lot bought 2026-03-03: proceeds 50, cost 40:
 *     covered short, date_acquired 2026-03-03.
 *   sale S3 2026-11-01, ETH 2, no USD value: on no record, listed without_proceeds.
 *   sale S4 2026-12-01, a security: not a digital asset, not on this form.
 * Totals: 3 records, gross proceeds 300 + 1200 + 50 = 1550, cost basis
 * reported 230 + 40 = 270. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "forms/da.h"

static int64_t AT(const char *rfc3339)
{
    int64_t ms;
    assert_int_equal(clock_parse_rfc3339(rfc3339, &ms), 0);
    return ms;
}

/* Classifies a stored row built from the arguments and adds it. */
static void add(forms_da_t *da, const char *tx, const char *asset, const char *type,
                const char *sold, const char *qty, const char *proceeds, const char *cost,
                const char *acquired, const char *origin, const char *term)
{
    store_gain_t row = {.transaction_id = tx, .asset_code = asset, .asset_type = type,
                        .datetime = AT(sold), .quantity = qty, .proceeds = proceeds,
                        .cost = cost, .transaction_costs = "0", .term = term,
                        .has_acquired_at = acquired != NULL,
                        .acquired_at = acquired ? AT(acquired) : 0,
                        .lot_transaction_id = acquired ? "lot" : NULL, .lot_origin = origin,
                        .method = "FIFO"};
    gains_row_t g;
    assert_int_equal(gains_classify(&row, &g), GAINS_OK);
    assert_int_equal(forms_da_add(da, &g), GAINS_OK);
}

static char *dump(json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
}

static void expect(json_t *doc, const char *key, const char *json)
{
    char *text = dump(json_object_get(doc, key));
    assert_string_equal(text, json);
    free(text);
}

static void test_records_by_sale_asset_and_group(void **state)
{
    (void)state;
    forms_da_t *da = forms_da_new(2026);
    const char *s1 = "2026-09-01T12:00:00Z";
    add(da, "S1", "BTC", "crypto", s1, "0.1", "100", "80", "2026-01-05T10:00:00Z", "acquired", "short");
    add(da, "S1", "BTC", "crypto", s1, "0.2", "200", "150", "2026-02-07T10:00:00Z", "acquired", "short");
    add(da, "S1", "BTC", "crypto", s1, "0.3", "300", "210", "2025-03-01T10:00:00Z", "acquired", "long");
    add(da, "S1", "BTC", "crypto", s1, "0.4", "400", NULL, "2026-04-01T10:00:00Z", "transfer", "short");
    add(da, "S1", "BTC", "crypto", s1, "0.5", "500", "100", "2024-05-01T10:00:00Z", "provided", "long");
    add(da, "S2", "ETH", "crypto", "2026-10-01T00:00:00Z", "1", "50", "40", "2026-03-03T23:59:59Z",
        "acquired", "short");
    add(da, "S3", "ETH", "crypto", "2026-11-01T00:00:00Z", "2", NULL, "10", "2026-03-03T23:59:59Z",
        "acquired", "short");
    add(da, "S4", "AAPL", "security", "2026-12-01T00:00:00Z", "1", "10", "5", "2026-03-03T00:00:00Z",
        "acquired", "short");
    json_t *doc = forms_da_render(da);
    assert_non_null(doc);
    expect(doc, "records",
           "[{\"transaction_id\":\"S1\",\"description\":\"BTC\",\"quantity\":\"0.3\","
           "\"date_acquired\":\"VARIOUS\",\"date_sold\":\"2026-09-01\",\"gross_proceeds\":\"300\","
           "\"cost_basis\":\"230\",\"term\":\"SHORT\",\"noncovered\":false,"
           "\"customer_provided_acquisition\":false},"
           "{\"transaction_id\":\"S1\",\"description\":\"BTC\",\"quantity\":\"1.2\","
           "\"date_sold\":\"2026-09-01\",\"gross_proceeds\":\"1200\",\"noncovered\":true,"
           "\"customer_provided_acquisition\":true},"
           "{\"transaction_id\":\"S2\",\"description\":\"ETH\",\"quantity\":\"1\","
           "\"date_acquired\":\"2026-03-03\",\"date_sold\":\"2026-10-01\","
           "\"gross_proceeds\":\"50\",\"cost_basis\":\"40\",\"term\":\"SHORT\","
           "\"noncovered\":false,\"customer_provided_acquisition\":false}]");
    expect(doc, "totals", "{\"records\":3,\"gross_proceeds\":\"1550\",\"cost_basis\":\"270\"}");
    expect(doc, "without_proceeds",
           "[{\"transaction_id\":\"S3\",\"asset_code\":\"ETH\",\"quantity\":\"2\","
           "\"date_sold\":\"2026-11-01\"}]");
    expect(doc, "tax_year", "2026");
    json_decref(doc);
    forms_da_free(da);
}

/* Covered long term is its own record; a noncovered record whose pieces
 * share one term shows it. */
static void test_covered_long_and_a_common_noncovered_term(void **state)
{
    (void)state;
    forms_da_t *da = forms_da_new(2027);
    const char *sold = "2027-06-01T00:00:00Z";
    add(da, "L", "SOL", "crypto", sold, "1", "30", "10", "2026-01-02T00:00:00Z", "acquired", "long");
    add(da, "L", "SOL", "crypto", sold, "2", "60", "50", "2027-01-02T00:00:00Z", "acquired", "short");
    add(da, "L", "SOL", "nft", sold, "3", "90", NULL, "2025-01-02T00:00:00Z", "transfer", "long");
    json_t *doc = forms_da_render(da);
    json_t *records = json_object_get(doc, "records");
    assert_int_equal(json_array_size(records), 3);
    char *first = dump(json_array_get(records, 0));
    assert_non_null(strstr(first, "\"date_acquired\":\"2026-01-02\""));
    assert_non_null(strstr(first, "\"term\":\"LONG\""));
    free(first);
    char *third = dump(json_array_get(records, 2));
    assert_non_null(strstr(third, "\"term\":\"LONG\",\"noncovered\":true"));
    assert_null(strstr(third, "cost_basis"));
    free(third);
    json_decref(doc);
    forms_da_free(da);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_by_sale_asset_and_group),
        cmocka_unit_test(test_covered_long_and_a_common_noncovered_term),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
