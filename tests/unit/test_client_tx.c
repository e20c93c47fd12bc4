/* Unit tests of libtaxdclient's batch answer scanner (transactions.c): it
 * reads what the tree parser would, whatever the key order, spacing or
 * escapes in the records, reads a refused element's message and issues, and
 * says false (so the caller falls back to the tree parser) on anything that
 * is not {"data": [n elements with index 0..n-1]}. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

static bool scan(const char *body, size_t n, taxd_tx_result *r)
{
    memset(r, 0, n * sizeof *r);
    return tc_tx_scan_answer(body, strlen(body), n, r);
}

static void clear(taxd_tx_result *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        taxd_tx_result_clear(&r[i]);
}

static void test_each_status_in_order(void **state)
{
    (void)state;
    const char *body =
        "{\"data\":[{\"index\":0,\"status\":\"created\",\"data\":{\"id\":\"a]}\\\"{\",\"sent\":[{\"x\":[1,2]}]}},"
        " {\"status\":\"updated\", \"data\":{\"id\":\"b\"}, \"index\":1},\n"
        "{\"index\":2,\"status\":\"unchanged\",\"data\":{\"metadata\":{\"k\":\"\\\\\"}}},"
        "{\"index\":3,\"status\":\"error\",\"http_status\":404,\"data\":{\"status\":\"error\","
        "\"message\":\"Account 'zz' not found\",\"data\":[]}},"
        "{\"index\":4,\"status\":\"error\",\"http_status\":400,\"data\":{\"message\":\"Validation failed\","
        "\"data\":[{\"code\":\"custom\",\"path\":[\"id\"],\"message\":\"Duplicate id\"}]}}],"
        "\"meta\":{\"x\":[{}]}}";
    taxd_tx_result r[5];
    assert_true(scan(body, 5, r));
    assert_int_equal(r[0].outcome, TAXD_TX_CREATED);
    assert_int_equal(r[0].http_status, 201);
    assert_int_equal(r[1].outcome, TAXD_TX_UPDATED);
    assert_int_equal(r[2].outcome, TAXD_TX_UNCHANGED);
    assert_int_equal(r[3].outcome, TAXD_TX_REFUSED);
    assert_int_equal(r[3].http_status, 404);
    assert_string_equal(r[3].message, "Account 'zz' not found");
    assert_string_equal(r[3].details, "[]");
    assert_int_equal(r[4].http_status, 400);
    assert_string_equal(r[4].details, "[{\"code\":\"custom\",\"path\":[\"id\"],\"message\":\"Duplicate id\"}]");
    assert_null(r[0].message);
    clear(r, 5);
}

static void test_anything_else_is_refused_for_the_tree_parser(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "[]",
        "{\"data\":[]}",                                                   /* fewer than n */
        "{\"data\":[{\"index\":1,\"status\":\"created\",\"data\":{}}]}",  /* wrong index */
        "{\"data\":[{\"index\":0,\"status\":\"made\",\"data\":{}}]}",     /* unknown status */
        "{\"data\":[{\"index\":0,\"status\":\"created\"}]}",              /* no data */
        "{\"data\":[{\"index\":0,\"status\":\"created\",\"data\":{}}]",   /* truncated */
        "{\"data\":[{\"index\":0,\"status\":\"created\",\"data\":{\"a\":\"}]}",
        "{\"d\\u0061ta\":[{\"index\":0,\"status\":\"created\",\"data\":{}}]}", /* an escaped key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        taxd_tx_result r[1];
        assert_false(scan(bad[i], 1, r));
        clear(r, 1);
    }
    taxd_tx_result two[2] = {{0}};
    assert_false(scan("{\"data\":[{\"index\":0,\"status\":\"created\",\"data\":{}},"
                      "{\"index\":1,\"status\":\"created\",\"data\":{}}]}", 1, two)); /* more than n */
    clear(two, 2);
}

/* What fuzz_client_answer found: the scanner must read as jansson's tree
 * reads (the last of repeated keys; one rule for http_status) or leave the
 * body to the tree parser, and never read past a cut body. */
static void test_the_scanner_agrees_with_the_tree(void **state)
{
    (void)state;
    const char *bad[] = {
        /* the tree keeps the last status: not one the scanner may report */
        "{\"data\":[{\"index\":0,\"status\":\"created\",\"status\":\"made\",\"data\":{}}]}",
        "{\"data\":[{\"index\":0,\"status\":\"created\",\"status\":1,\"data\":{}}]}",
        /* the tree keeps the last "data" */
        "{\"data\":[{\"index\":0,\"status\":\"created\",\"data\":{}}],\"data\":{}}",
        "{\"data\":{},\"data\":[{\"index\":0,\"status\":\"created\",\"data\":{}}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        taxd_tx_result r[1];
        assert_false(scan(bad[i], 1, r));
        clear(r, 1);
    }
    taxd_tx_result r[2];
    assert_true(scan("{\"data\":[{\"index\":0,\"status\":\"made\",\"status\":\"unchanged\",\"data\":{}},"
                     "{\"index\":1,\"status\":\"error\",\"http_status\":999,\"data\":{\"message\":\"m\"}}]}",
                     2, r));
    assert_int_equal(r[0].outcome, TAXD_TX_UNCHANGED);
    assert_int_equal(r[1].http_status, 400); /* not an HTTP status: 400, as the tree gives */
    clear(r, 2);
    /* cut right after "data": (ASan sees a read past the exact-size copy) */
    const char *cut = "{\"data\": ";
    char *exact = malloc(strlen(cut));
    memcpy(exact, cut, strlen(cut));
    memset(r, 0, sizeof r);
    assert_false(tc_tx_scan_answer(exact, strlen(cut), 1, r));
    clear(r, 1);
    free(exact);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_status_in_order),
        cmocka_unit_test(test_anything_else_is_refused_for_the_tree_parser),
        cmocka_unit_test(test_the_scanner_agrees_with_the_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
