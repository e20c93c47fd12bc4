/* Unit tests of taxctl import's own modules (src/taxctl/csv.c, txconv.c,
 * journal.c; linked in by the Makefile's rule for this test):
 *   - the CSV reader follows RFC 4180: quoted commas, doubled quotes and
 *     line breaks in quotes; CRLF; a record's line is where it starts; a
 *     stray quote or an unclosed one is an error naming the line;
 *   - a CSV line becomes the API's TransactionWrite with amounts passed
 *     through as the file's strings; every problem of a line is listed;
 *   - decimals: syntax, 20 integer / 18 significant fractional digits,
 *     line items above zero; datetimes: real dates, seconds and a zone;
 *   - the journal: runs per batch, a torn last record cut off, another
 *     file's journal refused unless restarted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "taxctl/csv.h"
#include "taxctl/journal.h"
#include "taxctl/txconv.h"

/* ---- csv */

static void test_csv_quotes_and_lines(void **state)
{
    (void)state;
    const char *text = "a,b,c\r\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\n\nlast,,\n";
    csv_reader r;
    csv_open(&r, text, strlen(text));
    char msg[128];
    long line = 0;
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 1);
    assert_int_equal(line, 1);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.fields[2], "c");
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 1);
    assert_int_equal(line, 2);
    assert_string_equal(r.fields[0], "x,1");
    assert_string_equal(r.fields[1], "say \"hi\"");
    assert_string_equal(r.fields[2], "two\nlines");
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 1);
    assert_int_equal(line, 5); /* the quoted line break and the blank line count */
    assert_int_equal(r.n, 3);
    assert_string_equal(r.fields[0], "last");
    assert_string_equal(r.fields[2], "");
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 0);
    csv_close(&r);
}

static void test_csv_errors_name_the_line_and_go_on(void **state)
{
    (void)state;
    const char *text = "ok\nab\"c\nfine\n\"x\"y\n\"open\nnever closed";
    csv_reader r;
    csv_open(&r, text, strlen(text));
    char msg[128];
    long line = 0;
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 1);
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), -1);
    assert_int_equal(line, 2);
    assert_non_null(strstr(msg, "quote"));
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 1);
    assert_string_equal(r.fields[0], "fine");
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), -1);
    assert_int_equal(line, 4);
    assert_non_null(strstr(msg, "closing quote"));
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), -1);
    assert_int_equal(line, 5);
    assert_non_null(strstr(msg, "never closed"));
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 0);
    csv_close(&r);
}

static void test_csv_bom_and_no_final_newline(void **state)
{
    (void)state;
    const char *text = "\xEF\xBB\xBFid\nx";
    csv_reader r;
    csv_open(&r, text, strlen(text));
    char msg[128];
    long line = 0;
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 1);
    assert_string_equal(r.fields[0], "id");
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 1);
    assert_string_equal(r.fields[0], "x");
    assert_int_equal(csv_next(&r, &line, msg, sizeof msg), 0);
    csv_close(&r);
}

/* ---- txconv */

static void test_decimals(void **state)
{
    (void)state;
    const char *why;
    assert_true(txconv_decimal_ok("1", true, &why));
    assert_true(txconv_decimal_ok("0.000000000000000001", true, &why));
    assert_true(txconv_decimal_ok("12345678901234567890.5", true, &why));
    assert_true(txconv_decimal_ok("1.5000000000000000000000", true, &why)); /* zeros beyond the 18th */
    assert_true(txconv_decimal_ok("0", false, &why));
    assert_true(txconv_decimal_ok("007.10", true, &why));
    assert_false(txconv_decimal_ok("0", true, &why));
    assert_string_equal(why, "must be greater than zero");
    assert_false(txconv_decimal_ok("0.0000000000000000001", true, &why));
    assert_string_equal(why, "has more than 18 fractional digits");
    assert_false(txconv_decimal_ok("123456789012345678901", true, &why));
    assert_string_equal(why, "has more than 20 integer digits");
    const char *bad[] = {"", "1.", ".5", "1e5", "1,5", " 1", "1 ", "+1", "0x10", "1.2.3", "NaN"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(txconv_decimal_ok(bad[i], false, &why));
    assert_false(txconv_decimal_ok("-1", false, &why));
    assert_string_equal(why, "is negative");
}

static void test_datetimes(void **state)
{
    (void)state;
    assert_true(txconv_datetime_ok("2024-02-29T23:59:59Z"));
    assert_true(txconv_datetime_ok("2024-01-31T12:00:00.123456789+05:30"));
    assert_true(txconv_datetime_ok("0001-01-01T00:00:00-01:00"));
    const char *bad[] = {"2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z",
                         "2024-01-01T00:00Z", "2024-01-01T00:00:00", "2024-01-01 00:00:00Z",
                         "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00.1234567890Z",
                         "2024-01-01T00:00:00+0100", "0000-01-01T00:00:00Z", "yesterday"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(txconv_datetime_ok(bad[i]));
}

static txconv_header header_of(const char *const *cols, size_t n)
{
    txconv_header h;
    char msg[256];
    assert_true(txconv_header_read(&h, cols, n, msg, sizeof msg));
    return h;
}

static void test_a_csv_trade_becomes_the_api_model(void **state)
{
    (void)state;
    const char *cols[] = {"type", "id", "account_id", "datetime", "sent_asset", "sent_amount",
                          "received_asset", "received_amount", "received_usd_rate", "fee_asset",
                          "fee_amount", "subtype"};
    txconv_header h = header_of(cols, 12);
    const char *row[] = {"trade", "t\"1", "a1", "2024-01-01T00:00:00Z", "USD", "100.50",
                         "BTC", "0.0100", "10050.000", "ETH:crypto", "0.001", ""};
    txconv_buf json = {0}, problems = {0};
    const char *id = NULL;
    assert_true(txconv_csv(&h, row, 12, &json, &id, &problems));
    assert_string_equal(id, "t\"1");
    assert_string_equal(json.s,
        "{\"id\":\"t\\\"1\",\"account_id\":\"a1\",\"datetime\":\"2024-01-01T00:00:00Z\",\"type\":\"trade\","
        "\"sent\":[{\"asset_amount\":{\"amount\":\"100.50\",\"asset\":{\"code\":\"USD\",\"type\":\"fiat\"}}}],"
        "\"received\":[{\"asset_amount\":{\"amount\":\"0.0100\",\"asset\":{\"code\":\"BTC\",\"type\":\"crypto\"}},"
        "\"rates\":[{\"amount\":\"10050.000\",\"asset\":{\"code\":\"USD\",\"type\":\"fiat\"}}]}],"
        "\"fees\":[{\"asset_amount\":{\"amount\":\"0.001\",\"asset\":{\"code\":\"ETH\",\"type\":\"crypto\"}}}]}");
    txconv_buf_free(&json);
    txconv_buf_free(&problems);
}

static void test_every_problem_of_a_line_is_listed(void **state)
{
    (void)state;
    const char *cols[] = {"id", "account_id", "datetime", "type", "received_asset", "received_amount",
                          "sent_asset", "sent_amount"};
    txconv_header h = header_of(cols, 8);
    const char *row[] = {"", "a1", "2024-02-30T00:00:00Z", "deposit", "BTC", "1e3", "USD", "5"};
    txconv_buf json = {0}, problems = {0};
    const char *id = NULL;
    assert_false(txconv_csv(&h, row, 8, &json, &id, &problems));
    assert_non_null(strstr(problems.s, "id is missing"));
    assert_non_null(strstr(problems.s, "datetime '2024-02-30T00:00:00Z'"));
    assert_non_null(strstr(problems.s, "received_amount '1e3' is not a decimal number"));
    assert_non_null(strstr(problems.s, "a deposit has no sent line item"));
    const char *row2[] = {"x", "a1", "2024-01-01T00:00:00Z", "gift", "", "", "", ""};
    assert_false(txconv_csv(&h, row2, 8, &json, &id, &problems));
    assert_non_null(strstr(problems.s, "type 'gift' is not"));
    const char *row3[] = {"x", "a1", "2024-01-01T00:00:00Z", "deposit"};
    assert_false(txconv_csv(&h, row3, 4, &json, &id, &problems));
    assert_non_null(strstr(problems.s, "4 fields where the header has 8"));
    txconv_buf_free(&json);
    txconv_buf_free(&problems);
}

static void test_header_rules(void **state)
{
    (void)state;
    txconv_header h;
    char msg[256];
    const char *unknown[] = {"id", "account_id", "datetime", "type", "memo"};
    assert_false(txconv_header_read(&h, unknown, 5, msg, sizeof msg));
    assert_non_null(strstr(msg, "unknown column 'memo'"));
    const char *twice[] = {"id", "account_id", "datetime", "type", "id"};
    assert_false(txconv_header_read(&h, twice, 5, msg, sizeof msg));
    assert_non_null(strstr(msg, "twice"));
    const char *missing[] = {"id", "account_id", "type"};
    assert_false(txconv_header_read(&h, missing, 3, msg, sizeof msg));
    assert_non_null(strstr(msg, "'datetime'"));
}

static void test_jsonl_lines(void **state)
{
    (void)state;
    txconv_buf problems = {0};
    char *id = NULL;
    const char *good = "{\"id\":\"j1\",\"account_id\":\"a1\",\"datetime\":\"2024-01-01T00:00:00Z\","
                       "\"type\":\"deposit\",\"received\":[{\"asset_amount\":{\"amount\":\"2\","
                       "\"asset\":{\"code\":\"BTC\",\"type\":\"crypto\"}}}],\"metadata\":{\"k\":1}}";
    assert_true(txconv_jsonl(good, strlen(good), &id, &problems));
    assert_string_equal(id, "j1");
    free(id);
    const char *bad = "{\"id\":\"j1\",\"account_id\":\"a1\",\"datetime\":\"2024-01-01T00:00:00Z\","
                      "\"type\":\"deposit\",\"received\":[{\"asset_amount\":{\"amount\":1.5,"
                      "\"asset\":{\"code\":\"BTC\",\"type\":\"crypto\"}}}]}";
    assert_false(txconv_jsonl(bad, strlen(bad), &id, &problems));
    assert_non_null(strstr(problems.s, "received[0].asset_amount.amount is missing or not a string"));
    assert_false(txconv_jsonl("{\"id\":1,\"id\":2}", 15, &id, &problems));
    assert_non_null(strstr(problems.s, "not JSON"));
    txconv_buf_free(&problems);
}

/* ---- journal */

static char *temp_path(void)
{
    char *p = strdup("/tmp/test_client_import_XXXXXX");
    int fd = mkstemp(p);
    assert_true(fd >= 0);
    close(fd);
    unlink(p);
    return p;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void test_journal_runs_resume_and_identity(void **state)
{
    (void)state;
    char *path = temp_path();
    journal_identity id, other;
    journal_identity_of("abc", 3, &id);
    journal_identity_of("abd", 3, &other);
    assert_string_not_equal(id.sha256, other.sha256);
    journal_prior prior;
    char msg[512];
    journal *j = journal_open(path, &id, false, &prior, msg, sizeof msg);
    assert_non_null(j);
    assert_null(prior.done);
    for (long l = 2; l <= 5; l++)
        journal_note(j, l, 'c');
    journal_note(j, 7, 'r');
    journal_note(j, 6, 'c');
    journal_note(j, 9, 'n');
    assert_true(journal_commit(j));
    journal_close(j);
    char *text = slurp(path);
    assert_non_null(strstr(text, "\nc2-6 r7 n9\n"));
    /* a torn record (no newline) is cut off at the next open */
    FILE *f = fopen(path, "ab");
    fputs("c10-1", f);
    fclose(f);
    j = journal_open(path, &id, false, &prior, msg, sizeof msg);
    assert_non_null(j);
    assert_true(journal_prior_done(&prior, 2) && journal_prior_done(&prior, 6) &&
                journal_prior_done(&prior, 7) && journal_prior_done(&prior, 9));
    assert_false(journal_prior_done(&prior, 8) || journal_prior_done(&prior, 10) ||
                 journal_prior_done(&prior, 1));
    assert_int_equal(prior.created, 5);
    assert_int_equal(prior.refused, 1);
    assert_int_equal(prior.unchanged, 1);
    journal_note(j, 10, 'u');
    assert_true(journal_commit(j));
    journal_close(j);
    journal_prior_free(&prior);
    assert_null(strstr(slurp(path), "c10-1"));
    assert_non_null(strstr(slurp(path), "n9\nu10\n"));
    /* another file: refused, unless restarted */
    assert_null(journal_open(path, &other, false, &prior, msg, sizeof msg));
    assert_non_null(strstr(msg, "--restart"));
    j = journal_open(path, &other, true, &prior, msg, sizeof msg);
    assert_non_null(j);
    assert_null(prior.done);
    journal_close(j);
    assert_null(strstr(slurp(path), "c2-6"));
    unlink(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_quotes_and_lines),
        cmocka_unit_test(test_csv_errors_name_the_line_and_go_on),
        cmocka_unit_test(test_csv_bom_and_no_final_newline),
        cmocka_unit_test(test_decimals),
        cmocka_unit_test(test_datetimes),
        cmocka_unit_test(test_a_csv_trade_becomes_the_api_model),
        cmocka_unit_test(test_every_problem_of_a_line_is_listed),
        cmocka_unit_test(test_header_rules),
        cmocka_unit_test(test_jsonl_lines),
        cmocka_unit_test(test_journal_runs_resume_and_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
