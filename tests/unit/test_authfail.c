/* Unit tests for src/http/authfail.c: the failed-secret throttle of the
 * token endpoint. Time is passed in, so nothing sleeps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "http/authfail.h"

#define WINDOW 60000

static void fail_n(authfail_t *af, const char *id, const char *addr, int n, int64_t now)
{
    for (int i = 0; i < n; i++)
        authfail_record(af, id, addr, now);
}

static void test_new_checks_its_arguments(void **state)
{
    (void)state;
    assert_null(authfail_new(63, 5, WINDOW));
    assert_null(authfail_new(64, 0, WINDOW));
    assert_null(authfail_new(64, 5, 999));
    authfail_free(authfail_new(64, 5, WINDOW));
}

static void test_limit_then_throttled_until_the_window_ends(void **state)
{
    (void)state;
    authfail_t *af = authfail_new(1024, 5, WINDOW);
    fail_n(af, "cl_a", "10.0.0.1", 4, 1000);
    assert_int_equal(authfail_check(af, "cl_a", "10.0.0.1", 1000), 0);
    authfail_record(af, "cl_a", "10.0.0.1", 2000);
    /* the window runs from the first failure: 60 s after t = 1000 */
    assert_int_equal(authfail_check(af, "cl_a", "10.0.0.1", 2000), 59);
    assert_int_equal(authfail_check(af, "cl_a", "10.0.0.1", 60500), 1); /* rounded up */
    assert_int_equal(authfail_check(af, "cl_a", "10.0.0.1", 61000), 0);
    /* a clock that went back ends the window rather than stretching it */
    fail_n(af, "cl_b", "10.0.0.1", 5, 100000);
    assert_int_equal(authfail_check(af, "cl_b", "10.0.0.1", 50000), 0);
    authfail_free(af);
}

static void test_the_pair_is_the_key(void **state)
{
    (void)state;
    authfail_t *af = authfail_new(1024, 5, WINDOW);
    fail_n(af, "cl_a", "10.0.0.1", 5, 0);
    assert_true(authfail_check(af, "cl_a", "10.0.0.1", 0) > 0);
    assert_int_equal(authfail_check(af, "cl_a", "10.0.0.2", 0), 0);
    assert_int_equal(authfail_check(af, "cl_b", "10.0.0.1", 0), 0);
    /* the separator keeps ("cl_a1", "0.0.0.1") apart from ("cl_a", "10.0.0.1") */
    assert_int_equal(authfail_check(af, "cl_a1", "0.0.0.1", 0), 0);
    authfail_free(af);
}

static void test_forget_starts_again(void **state)
{
    (void)state;
    authfail_t *af = authfail_new(1024, 5, WINDOW);
    fail_n(af, "cl_a", "10.0.0.1", 4, 0);
    authfail_forget(af, "cl_a", "10.0.0.1");
    fail_n(af, "cl_a", "10.0.0.1", 4, 10);
    assert_int_equal(authfail_check(af, "cl_a", "10.0.0.1", 10), 0);
    authfail_free(af);
}

/* An attacker cycling a million client ids and addresses, one failure each,
 * neither grows the table (fixed at creation) nor evicts the throttled
 * pairs: a full set gives up its pairs with the fewest failures first. */
static void attack(authfail_t *af, int from, int to, int64_t now)
{
    char id[32], addr[32];
    for (int i = from; i < to; i++) {
        snprintf(id, sizeof id, "cl_%d", i);
        snprintf(addr, sizeof addr, "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        authfail_record(af, id, addr, now);
    }
}

static void test_cycling_keys_does_not_free_a_throttled_pair(void **state)
{
    (void)state;
    authfail_t *af = authfail_new(1024, 5, WINDOW);
    char id[32];
    attack(af, 0, 4000, 0); /* every set full, one failure a pair */
    for (int k = 0; k < 64; k++) {  /* throttled pairs, the oldest but for those */
        snprintf(id, sizeof id, "cl_victim%d", k);
        fail_n(af, id, "10.0.0.1", 5, 0);
    }
    attack(af, 4000, 1000000, 1000);
    for (int k = 0; k < 64; k++) {
        snprintf(id, sizeof id, "cl_victim%d", k);
        assert_true(authfail_check(af, id, "10.0.0.1", 1000) > 0);
    }
    authfail_free(af);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_checks_its_arguments),
        cmocka_unit_test(test_limit_then_throttled_until_the_window_ends),
        cmocka_unit_test(test_the_pair_is_the_key),
        cmocka_unit_test(test_forget_starts_again),
        cmocka_unit_test(test_cycling_keys_does_not_free_a_throttled_pair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
