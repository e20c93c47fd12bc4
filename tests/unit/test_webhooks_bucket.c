/* Unit tests of the per-subscription token bucket (webhooks/bucket.h): "in
 * any interval, at most burst + rate x length + 1 requests", under a
 * backlog that starts a request whenever a token is there, over simulated
 * time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "webhooks/bucket.h"

#define START_US 1000000000LL

/* Starts as many requests as the bucket allows, checking every step_us
 * for duration_us; returns the start times (malloc'd) and their count. */
static int64_t *saturate(uint32_t rate, uint32_t burst, int64_t step_us, int64_t duration_us,
                         size_t *count)
{
    webhook_bucket_t b;
    webhook_bucket_init(&b, rate, burst, START_US);
    size_t cap = (size_t)(burst + (double)rate * (double)duration_us / 1e6 + 16);
    int64_t *starts = malloc(cap * sizeof *starts);
    assert_non_null(starts);
    *count = 0;
    for (int64_t t = START_US; t < START_US + duration_us; t += step_us) {
        while (webhook_bucket_take(&b, t)) {
            assert_true(*count < cap);
            starts[(*count)++] = t;
        }
        int64_t wait = webhook_bucket_wait_us(&b, t);
        assert_true(wait > 0 && wait <= 1000000 / rate + 1);
    }
    return starts;
}

/* Every interval [starts[i], starts[j]] holds at most burst + rate x t. */
static void check_bound(const int64_t *starts, size_t n, uint32_t rate, uint32_t burst)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) {
            double t = (double)(starts[j] - starts[i]) / 1e6;
            double allowed = burst + rate * t;
            assert_true((double)(j - i + 1) <= allowed + 1e-9);
        }
}

static void test_bound_holds_under_backlog(void **state)
{
    (void)state;
    const uint32_t rates[] = {1, 5, 10, 300, 1000};
    const int64_t steps[] = {1, 997, 10000};
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            uint32_t rate = rates[r], burst = webhook_burst_of(rate);
            int64_t duration = rate >= 300 ? 2000000 : 5000000;
            if (steps[s] == 1 && rate < 300)
                duration = 3000000;
            size_t n;
            int64_t *starts = saturate(rate, burst, steps[s], duration, &n);
            /* The long-run rate is reached: no starvation. */
            assert_true((double)n >= burst + rate * (duration / 1e6) * 0.95 - 1);
            check_bound(starts, n < 4000 ? n : 4000, rate, burst);
            free(starts);
        }
}

static void test_burst_is_a_tenth_of_the_rate(void **state)
{
    (void)state;
    assert_int_equal(webhook_burst_of(1), 1);
    assert_int_equal(webhook_burst_of(9), 1);
    assert_int_equal(webhook_burst_of(300), 30);
    webhook_bucket_t b;
    webhook_bucket_init(&b, 300, 30, START_US);
    assert_int_equal(webhook_bucket_available(&b, START_US), 30);
    /* A long idle time refills to the burst, never past it, without overflow. */
    for (int i = 0; i < 30; i++)
        assert_true(webhook_bucket_take(&b, START_US));
    assert_false(webhook_bucket_take(&b, START_US));
    assert_int_equal(webhook_bucket_available(&b, INT64_MAX / 2), 30);
}

static void test_rule_change_keeps_tokens_clamped(void **state)
{
    (void)state;
    webhook_bucket_t b;
    webhook_bucket_init(&b, 1000, 100, START_US);
    webhook_bucket_set_rule(&b, 10, 1, START_US);
    assert_int_equal(webhook_bucket_available(&b, START_US), 1);
    assert_true(webhook_bucket_take(&b, START_US));
    assert_false(webhook_bucket_take(&b, START_US + 99999));
    assert_true(webhook_bucket_take(&b, START_US + 100000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_holds_under_backlog),
        cmocka_unit_test(test_burst_is_a_tenth_of_the_rate),
        cmocka_unit_test(test_rule_change_keeps_tokens_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
