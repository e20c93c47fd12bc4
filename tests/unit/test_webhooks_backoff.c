/* Unit tests of the retry schedule (webhooks/backoff.h): "a delivery is sent
 * at most 1 + retry-attempts times, all inside the retry window counted from
 * the first attempt, with backoff and jitter scaled to the window so that
 * every configured attempt fits inside it, even for a window of a few
 * seconds", and a 429's Retry-After honoured within the window. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "webhooks/backoff.h"

#define FIRST 1700000000000LL

/* Runs a delivery that fails every time, each attempt taking `duration` ms,
 * with the jitter source `rnd`; returns the number of attempts and checks
 * that every one began inside the window, later than the one before. */
static unsigned run(int64_t window, unsigned retries, int64_t duration, uint64_t rnd)
{
    int64_t begun = FIRST;
    unsigned made = 1;
    for (;;) {
        int64_t ended = begun + duration;
        int64_t next = webhook_backoff_next(FIRST, window, retries, made, ended, 0, rnd);
        if (next < 0)
            return made;
        assert_true(next >= ended);           /* never before the last one ended */
        assert_true(next >= begun); /* equal: a gap under 1 ms (many retries, short window) */
        assert_true(next < FIRST + window);   /* inside the window */
        begun = next;
        made++;
        assert_true(made <= retries + 1);
    }
}

static void test_every_attempt_fits_short_and_long_windows(void **state)
{
    (void)state;
    const int64_t windows[] = {1000, 3000, 5000, 3600000, 86400000};
    const uint64_t jitters[] = {0, 1, 12345, UINT64_MAX, 0x9e3779b97f4a7c15ULL};
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
        for (unsigned n = 0; n <= WEBHOOK_RETRIES_MAX; n++)
            for (size_t j = 0; j < sizeof jitters / sizeof jitters[0]; j++)
                assert_int_equal(run(windows[w], n, 0, jitters[j]), n + 1);
}

static void test_schedule_spreads_over_the_window(void **state)
{
    (void)state;
    /* Default settings: 2 retries over an hour, no jitter: at 15 and 45 min. */
    assert_int_equal(webhook_backoff_next(FIRST, 3600000, 2, 1, FIRST, 0, 0), FIRST + 900000);
    assert_int_equal(webhook_backoff_next(FIRST, 3600000, 2, 2, FIRST + 900000, 0, 0),
                     FIRST + 2700000);
    assert_int_equal(webhook_backoff_next(FIRST, 3600000, 2, 3, FIRST + 2700000, 0, 0), -1);
    /* Jitter only moves an attempt earlier, by at most half its gap. */
    int64_t jittered = webhook_backoff_next(FIRST, 3600000, 2, 1, FIRST, 0, 449999);
    assert_true(jittered >= FIRST + 450000 && jittered <= FIRST + 900000);
    /* A few seconds: 3 retries in 4 s begin by 3.5 s. */
    assert_int_equal(webhook_backoff_next(FIRST, 4000, 3, 3, FIRST, 0, 0), FIRST + 3500);
}

static void test_slow_attempts_never_begin_after_the_window(void **state)
{
    (void)state;
    /* Attempts that time out after 2 s in a 3 s window: no attempt starts
     * once the window has closed, even with retries left. */
    unsigned made = run(3000, 5, 2000, 7);
    assert_true(made >= 1 && made <= 2);
    assert_int_equal(webhook_backoff_next(FIRST, 3000, 5, 1, FIRST + 3000, 0, 0), -1);
}

static void test_retry_after_is_honoured_within_the_window(void **state)
{
    (void)state;
    /* Retry-After pushes the next attempt later ... */
    assert_int_equal(webhook_backoff_next(FIRST, 60000, 2, 1, FIRST + 100, 20000, 0),
                     FIRST + 20100);
    /* ... and a Retry-After past the window leaves no attempt. */
    assert_int_equal(webhook_backoff_next(FIRST, 60000, 2, 1, FIRST + 100, 60000, 0), -1);
}

static void test_no_attempt_beyond_the_count(void **state)
{
    (void)state;
    assert_int_equal(webhook_backoff_next(FIRST, 3600000, 0, 1, FIRST, 0, 0), -1);
    assert_int_equal(webhook_backoff_next(FIRST, 3600000, 2, 0, FIRST, 0, 0), -1);
    assert_int_equal(webhook_backoff_next(FIRST, 0, 2, 1, FIRST, 0, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_attempt_fits_short_and_long_windows),
        cmocka_unit_test(test_schedule_spreads_over_the_window),
        cmocka_unit_test(test_slow_attempts_never_begin_after_the_window),
        cmocka_unit_test(test_retry_after_is_honoured_within_the_window),
        cmocka_unit_test(test_no_attempt_beyond_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
