/* Unit tests for src/client/retry.c: the retry policy of libtaxdclient as
 * pure functions (Retry-After parsing, full-jitter backoff, the decision
 * table of spec § Errors / Retry safety). Nothing sleeps, nothing connects. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>

#include "client/internal.h"

/* 1994-11-06 08:49:37 UTC, the date of RFC 9110's examples */
#define RFC_EXAMPLE_MS 784111777000LL

/* ---- Retry-After */

static void test_retry_after_delta_seconds(void **state)
{
    (void)state;
    assert_int_equal(tc_retry_after_ms("120", 0), 120000);
    assert_int_equal(tc_retry_after_ms("0", 0), 0);
    assert_int_equal(tc_retry_after_ms(" 3 ", 0), 3000);
    /* a huge value saturates instead of wrapping to a negative wait */
    assert_true(tc_retry_after_ms("99999999999999999999999", 0) > 0);
    /* saturation (fuzz_client_retry): a longer value never waits less, and
     * every value past the most seconds whose milliseconds fit waits that */
    const long most = LONG_MAX / 1000 * 1000;
    assert_true(tc_retry_after_ms("9223372036854770", 0) >= tc_retry_after_ms("9223372036854769", 0));
    assert_int_equal(tc_retry_after_ms("9223372036854775", 0), most);
    assert_int_equal(tc_retry_after_ms("9223372036854776", 0), most);
    assert_int_equal(tc_retry_after_ms("99999999999999999999999", 0), most);
}

static void test_retry_after_unreadable_is_absent(void **state)
{
    (void)state;
    assert_int_equal(tc_retry_after_ms(NULL, 0), -1);
    assert_int_equal(tc_retry_after_ms("", 0), -1);
    assert_int_equal(tc_retry_after_ms("-1", 0), -1);
    assert_int_equal(tc_retry_after_ms("1.5", 0), -1);
    assert_int_equal(tc_retry_after_ms("soon", 0), -1);
    assert_int_equal(tc_retry_after_ms("12 seconds", 0), -1);
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 08:49:37 UTC", 0), -1);
    assert_int_equal(tc_retry_after_ms("Sun, 32 Nov 1994 08:49:37 GMT", 0), -1);
    assert_int_equal(tc_retry_after_ms("Sun, 06 Foo 1994 08:49:37 GMT", 0), -1);
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 25:49:37 GMT", 0), -1);
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT trailing", 0), -1);
}

static void test_retry_after_http_dates_in_all_three_forms(void **state)
{
    (void)state;
    int64_t now = RFC_EXAMPLE_MS - 5000;
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", now), 5000);
    assert_int_equal(tc_retry_after_ms("Sunday, 06-Nov-94 08:49:37 GMT", now), 5000);
    assert_int_equal(tc_retry_after_ms("Sun Nov  6 08:49:37 1994", now), 5000);
    /* month names in any case; a leap day; a date after 2038 */
    assert_int_equal(tc_retry_after_ms("Sun, 06 NOV 1994 08:49:37 GMT", now), 5000);
    assert_int_equal(tc_retry_after_ms("Thu, 29 Feb 2024 00:00:00 GMT", 1709164800000LL - 1000), 1000);
    assert_int_equal(tc_retry_after_ms("Fri, 01 Jan 2100 00:00:00 GMT", 4102444800000LL - 7000), 7000);
}

static void test_retry_after_date_in_the_past_is_zero(void **state)
{
    (void)state;
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE_MS + 1), 0);
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE_MS), 0);
    /* a clock far from the date (fuzz_client_retry): no overflow, no negative wait */
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", INT64_MAX), 0);
    assert_int_equal(tc_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", INT64_MIN), LONG_MAX);
}

/* ---- backoff */

static void test_backoff_is_full_jitter_under_a_growing_ceiling(void **state)
{
    (void)state;
    for (int retry = 1; retry <= 8; retry++) {
        long ceiling = 100L << (retry - 1);
        if (ceiling > 5000)
            ceiling = 5000;
        long lo = LONG_MAX, hi = -1;
        for (int i = 0; i < 2000; i++) {
            long d = tc_backoff_ms(100, 5000, retry);
            assert_true(d >= 0 && d <= ceiling);
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
        }
        /* full jitter: the whole range [0, ceiling] is used, not a narrow band */
        assert_true(lo < ceiling / 4);
        assert_true(hi > ceiling * 3 / 4);
    }
}

static void test_backoff_never_overflows(void **state)
{
    (void)state;
    for (int i = 0; i < 100; i++) {
        long d = tc_backoff_ms(250, 30000, 1000);
        assert_true(d >= 0 && d <= 30000);
    }
    assert_int_equal(tc_backoff_ms(0, 30000, 3), 0);
    assert_true(tc_backoff_ms(LONG_MAX / 2, LONG_MAX, 64) >= 0);
}

/* ---- the decision table */

#define T TAXD_E_TRANSPORT
#define TO TAXD_E_TIMEOUT

static void test_success_and_client_errors_stop(void **state)
{
    (void)state;
    int stops[] = {200, 201, 202, 203, 204, 301, 400, 403, 404, 405, 409, 413, 422};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        /* whatever the flags: 400, 403, 404 and 409 are never retried unchanged */
        assert_int_equal(tc_decide(stops[i], TAXD_OK, false, true, false, false), TC_STOP);
        assert_int_equal(tc_decide(stops[i], TAXD_OK, false, false, true, false), TC_STOP);
        assert_int_equal(tc_decide(stops[i], TAXD_OK, false, false, false, false), TC_STOP);
    }
}

static void test_401_refreshes_once(void **state)
{
    (void)state;
    assert_int_equal(tc_decide(401, TAXD_OK, false, false, false, false), TC_REFRESH_TOKEN);
    assert_int_equal(tc_decide(401, TAXD_OK, false, true, true, false), TC_REFRESH_TOKEN);
    assert_int_equal(tc_decide(401, TAXD_OK, false, true, false, true), TC_STOP);
}

static void test_429_is_retried_for_every_method(void **state)
{
    (void)state;
    assert_int_equal(tc_decide(429, TAXD_OK, false, true, false, false), TC_RETRY);
    assert_int_equal(tc_decide(429, TAXD_OK, false, false, false, false), TC_RETRY);
    assert_int_equal(tc_decide(429, TAXD_OK, false, false, true, true), TC_RETRY);
}

static void test_5xx_retried_when_safe_read_back_when_create(void **state)
{
    (void)state;
    int statuses[] = {500, 502, 503, 504, 507, 599};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        int s = statuses[i];
        assert_int_equal(tc_decide(s, TAXD_OK, false, true, false, false), TC_RETRY);
        assert_int_equal(tc_decide(s, TAXD_OK, false, false, true, false), TC_READBACK);
        assert_int_equal(tc_decide(s, TAXD_OK, false, false, false, false), TC_STOP);
    }
    /* the service does not do this at all: no retry can change it */
    assert_int_equal(tc_decide(501, TAXD_OK, false, true, false, false), TC_STOP);
    assert_int_equal(tc_decide(505, TAXD_OK, false, false, true, false), TC_STOP);
}

static void test_lost_answers(void **state)
{
    (void)state;
    /* reset or timeout after the request left */
    assert_int_equal(tc_decide(0, T, false, true, false, false), TC_RETRY);
    assert_int_equal(tc_decide(0, TO, false, true, false, false), TC_RETRY);
    assert_int_equal(tc_decide(0, T, false, false, true, false), TC_READBACK);
    assert_int_equal(tc_decide(0, TO, false, false, true, false), TC_READBACK);
    assert_int_equal(tc_decide(0, T, false, false, false, false), TC_STOP);
    assert_int_equal(tc_decide(0, TO, false, false, false, false), TC_STOP);
    /* nothing left (connection refused): every method may go again */
    assert_int_equal(tc_decide(0, T, true, false, false, false), TC_RETRY);
    assert_int_equal(tc_decide(0, T, true, false, true, false), TC_RETRY);
    /* other failures (a TLS certificate, no memory) are final */
    assert_int_equal(tc_decide(0, TAXD_E_PROTOCOL, false, true, false, false), TC_STOP);
    assert_int_equal(tc_decide(0, TAXD_E_NOMEM, true, true, false, false), TC_STOP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_after_delta_seconds),
        cmocka_unit_test(test_retry_after_unreadable_is_absent),
        cmocka_unit_test(test_retry_after_http_dates_in_all_three_forms),
        cmocka_unit_test(test_retry_after_date_in_the_past_is_zero),
        cmocka_unit_test(test_backoff_is_full_jitter_under_a_growing_ceiling),
        cmocka_unit_test(test_backoff_never_overflows),
        cmocka_unit_test(test_success_and_client_errors_stop),
        cmocka_unit_test(test_401_refreshes_once),
        cmocka_unit_test(test_429_is_retried_for_every_method),
        cmocka_unit_test(test_5xx_retried_when_safe_read_back_when_create),
        cmocka_unit_test(test_lost_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
