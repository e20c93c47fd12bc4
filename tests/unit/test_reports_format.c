/* Unit tests for src/reports/format.c: RFC 4180 quoting, formula
 * neutralisation of text cells (never of decimals), the CSV header, and
 * JSON lines whose bytes equal Python's json.dumps(separators=(",", ":"),
 * ensure_ascii=False) of the same object (lowercase \u escapes). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/domain.h"
#include "reports/format.h"

static report_row_t row_of(const char *account, const char *asset, const char *avg)
{
    return (report_row_t){.account_id = account, .asset_code = asset, .asset_type = "crypto",
                          .total_quantity = "1.5", .total_cost = "30000",
                          .average_unit_cost = avg, .total_quantity_with_cost_basis = "1.5",
                          .fiat_currency = DOMAIN_REPORTING_CURRENCY};
}

/* The row as the format writes it (into a static buffer). */
static const char *encode(report_format_t format, report_row_t row)
{
    static char line[REPORT_ROW_MAX];
    buf_t b = buf_over(line, sizeof line);
    assert_true(report_format_row(format, &row, &b));
    return b.data;
}

static void test_csv_header(void **state)
{
    (void)state;
    char text[256];
    buf_t b = buf_over(text, sizeof text);
    report_format_header(REPORT_FORMAT_CSV, &b);
    assert_string_equal(text, "account_id,asset_code,asset_type,total_quantity,total_cost,"
                              "average_unit_cost,total_quantity_with_cost_basis,fiat_currency\r\n");
    b = buf_over(text, sizeof text);
    report_format_header(REPORT_FORMAT_JSONL, &b);
    assert_string_equal(text, "");
}

static void test_csv_plain_row(void **state)
{
    (void)state;
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("a1", "BTC", "20000")),
                        "a1,BTC,crypto,1.5,30000,20000,1.5,USD\r\n");
    /* no average: an empty cell */
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("a1", "BTC", NULL)),
                        "a1,BTC,crypto,1.5,30000,,1.5,USD\r\n");
}

static void test_csv_quoting_rfc4180(void **state)
{
    (void)state;
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("a,b", "X", NULL)),
                        "\"a,b\",X,crypto,1.5,30000,,1.5,USD\r\n");
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("say \"hi\"", "X", NULL)),
                        "\"say \"\"hi\"\"\",X,crypto,1.5,30000,,1.5,USD\r\n");
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("two\nlines", "X", NULL)),
                        "\"two\nlines\",X,crypto,1.5,30000,,1.5,USD\r\n");
    /* a quote that is not at the start needs no neutralising, only quoting */
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("it's", "X", NULL)),
                        "it's,X,crypto,1.5,30000,,1.5,USD\r\n");
}

static void test_csv_formula_neutralised(void **state)
{
    (void)state;
    const char *cases[][2] = {
        {"=1+1", "'=1+1"}, {"+1", "'+1"}, {"-1", "'-1"}, {"@SUM(A1)", "'@SUM(A1)"},
        {"\tx", "'\tx"}, {"a=1", "a=1"}, {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "%s,X,crypto,1.5,30000,,1.5,USD\r\n", cases[i][1]);
        assert_string_equal(encode(REPORT_FORMAT_CSV, row_of(cases[i][0], "X", NULL)), want);
    }
    /* CR at the start: neutralised, and the cell is quoted for the CR */
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("\rx", "X", NULL)),
                        "\"'\rx\",X,crypto,1.5,30000,,1.5,USD\r\n");
    /* formula and quoting together: the prefix goes inside the quotes */
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("=HYPERLINK(\"u\",\"x\")", "X", NULL)),
                        "\"'=HYPERLINK(\"\"u\"\",\"\"x\"\")\",X,crypto,1.5,30000,,1.5,USD\r\n");
    /* the asset code is a text cell too */
    assert_string_equal(encode(REPORT_FORMAT_CSV, row_of("a", "-X", NULL)),
                        "a,'-X,crypto,1.5,30000,,1.5,USD\r\n");
}

static void test_csv_decimals_never_neutralised(void **state)
{
    (void)state;
    report_row_t row = row_of("a", "X", "-0.5");
    row.total_cost = "-2";
    assert_string_equal(encode(REPORT_FORMAT_CSV, row), "a,X,crypto,1.5,-2,-0.5,1.5,USD\r\n");
    assert_true(report_csv_is_formula("-2")); /* it would be, as a text cell */
}

static void test_jsonl_row(void **state)
{
    (void)state;
    assert_string_equal(
        encode(REPORT_FORMAT_JSONL, row_of("a1", "BTC", "20000")),
        "{\"account_id\":\"a1\",\"asset_code\":\"BTC\",\"asset_type\":\"crypto\","
        "\"total_quantity\":\"1.5\",\"total_cost\":\"30000\",\"average_unit_cost\":\"20000\","
        "\"total_quantity_with_cost_basis\":\"1.5\",\"fiat_currency\":\"USD\"}\n");
    const char *null_avg = encode(REPORT_FORMAT_JSONL, row_of("a1", "BTC", NULL));
    assert_non_null(strstr(null_avg, "\"average_unit_cost\":null,"));
}

static void test_jsonl_escapes_like_python(void **state)
{
    (void)state;
    /* json.dumps('q"b\\s\x01\x1f\n\t\u00e9=', ensure_ascii=False) */
    const char *line = encode(REPORT_FORMAT_JSONL,
                              row_of("q\"b\\s\x01\x1f\n\t\xc3\xa9=", "BTC", NULL));
    assert_non_null(strstr(line, "{\"account_id\":\"q\\\"b\\\\s\\u0001\\u001f\\n\\t\xc3\xa9=\","));
    /* no neutralising in JSON */
    line = encode(REPORT_FORMAT_JSONL, row_of("=1", "BTC", NULL));
    assert_non_null(strstr(line, "{\"account_id\":\"=1\","));
}

static void test_longest_row_fits(void **state)
{
    (void)state;
    char id[257], code[33], dec[42];
    memset(id, '\x01', 256); /* every byte escaped as \u0001 */
    id[256] = '\0';
    memset(code, '"', 32);
    code[32] = '\0';
    memset(dec, '9', 41);
    dec[20] = '.';
    dec[41] = '\0';
    report_row_t row = {id, code, "security", dec, dec, dec, dec, "USD"};
    char line[REPORT_ROW_MAX];
    buf_t b = buf_over(line, sizeof line);
    assert_true(report_format_row(REPORT_FORMAT_JSONL, &row, &b));
    b = buf_over(line, sizeof line);
    assert_true(report_format_row(REPORT_FORMAT_CSV, &row, &b));
    /* and a buffer too small says so */
    char small[64];
    b = buf_over(small, sizeof small);
    assert_false(report_format_row(REPORT_FORMAT_CSV, &row, &b));
}

static void test_format_names(void **state)
{
    (void)state;
    report_format_t f;
    assert_true(report_format_parse("csv", &f));
    assert_int_equal(f, REPORT_FORMAT_CSV);
    assert_true(report_format_parse("jsonl", &f));
    assert_int_equal(f, REPORT_FORMAT_JSONL);
    assert_false(report_format_parse("CSV", &f));
    assert_false(report_format_parse("", &f));
    assert_string_equal(report_format_content_type(REPORT_FORMAT_CSV), "text/csv; charset=utf-8");
    assert_string_equal(report_format_content_type(REPORT_FORMAT_JSONL), "application/x-ndjson");
    assert_string_equal(report_format_extension(REPORT_FORMAT_JSONL), "jsonl");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_header),
        cmocka_unit_test(test_csv_plain_row),
        cmocka_unit_test(test_csv_quoting_rfc4180),
        cmocka_unit_test(test_csv_formula_neutralised),
        cmocka_unit_test(test_csv_decimals_never_neutralised),
        cmocka_unit_test(test_jsonl_row),
        cmocka_unit_test(test_jsonl_escapes_like_python),
        cmocka_unit_test(test_longest_row_fits),
        cmocka_unit_test(test_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
